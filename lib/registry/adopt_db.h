/*
 * adopt_db.h - the rows `bindery audit --repair --adopt` writes after a
 * restore from an older backup (doc/operating.md, "Restoring the
 * database"): a document rebuilt from its blob's stamp, a document pointed
 * at its newer blob, a document deleted since, a blob no row names put in
 * the outbox, and the id sequence moved past the ids blobs name.  Each is
 * one transaction, conditional on what the repair read, so a repair that
 * crashed half-way and runs again finds the rows it wrote and moves on.
 * No storage.
 */
#ifndef BINDERY_ADOPT_DB_H
#define BINDERY_ADOPT_DB_H

#include <stdint.h>

#include "base/compat.h"
#include "registry/db.h"
#include "registry/doc_row.h"

/* A committed blob and the document its stamp names. */
struct adopt_blob {
	const char *blob_name;
	const char *etag;		/* as storage reports it: reads are pinned to it */
	uint64_t size;
	const char *sha256;		/* lower-case hex */
	uint64_t doc_id, version;
	const char *owner, *name, *content_type;
	const char *created_at;		/* RFC 3339 UTC, as DOC_TIME_SQL writes it */
};

/* The id of the document called name (any status) into *id; DB_NOT_FOUND: none. */
BINDERY_NODISCARD enum db_err adopt_db_name_holder(struct db *db, const char *name, uint64_t *id);

/* A ready document b->doc_id on b's blob (with a committed registry row
 * and its place in the list), in one transaction.  DB_DUPLICATE when the
 * id, the name or the blob is held. */
BINDERY_NODISCARD enum db_err adopt_db_create(struct db *db, const struct adopt_blob *b);

/* The ready document b->doc_id, still on old_blob at an older version,
 * moves to b's blob and version; old_blob's registry row is retired
 * (retire_after = now + grace), b's is written committed.  DB_CONFLICT:
 * the document is no longer on old_blob. */
BINDERY_NODISCARD enum db_err adopt_db_replace(struct db *db, const char *old_blob,
					       const struct adopt_blob *b, unsigned grace);

/* The ready document doc_id on blob goes; blob's registry row (if any) is
 * retired.  DB_CONFLICT: the document is no longer on blob. */
BINDERY_NODISCARD enum db_err adopt_db_delete(struct db *db, uint64_t doc_id, const char *blob,
					      unsigned grace);

/* A blob no row names enters the outbox: a registry row retired (due after
 * grace) for document doc_id.  One that already has a row is left. */
BINDERY_NODISCARD enum db_err adopt_db_retire(struct db *db, const char *blob, uint64_t doc_id,
					      unsigned grace);

/* The documents' id sequence (AUTO_INCREMENT) past id: a row inserted with
 * that id (when none has it) and deleted in one transaction; InnoDB keeps
 * the counter it moved. */
BINDERY_NODISCARD enum db_err adopt_db_id_floor(struct db *db, uint64_t id);

#endif
