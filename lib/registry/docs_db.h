/*
 * docs_db.h - the documents table, and the transactions that move a
 * document together with the rows that hang on it: its blob's registry row
 * (blobs_db), the Idempotency-Key that started it (idem_db), a resumable
 * upload's rows (uploads_db).  Those modules hold what moves their table
 * alone; this one builds on them, never the other way round.  Each function
 * is one short transaction that moves rows with conditional statements
 * which must touch exactly one row; a zero-row update means another actor
 * (the sweeper) owns the next step and comes back as DB_CONFLICT.  No
 * function here touches storage: the protocol module calls these between
 * storage calls, never holding a transaction across one.  Every transition
 * of a pending row is fenced by its holder (blobs_db.h, "Fencing").
 */
#ifndef BINDERY_DOCS_DB_H
#define BINDERY_DOCS_DB_H

#include <stddef.h>
#include <stdint.h>

#include "base/compat.h"
#include "base/state.h"
#include "registry/blobs_db.h"
#include "registry/db.h"
#include "registry/doc_row.h"
#include "registry/uploads_db.h"

/*
 * Step 1 of create: one transaction inserting the pending document and its
 * pending registry row held by holder (and, with an idempotency key, the
 * key's row, which keeps the request's name and content_type as its
 * fingerprint).  DB_DUPLICATE when the name (or the key) is taken.  *doc_id
 * is the new id, created_at (DOC_TIME_MAX bytes) its creation time as the
 * database recorded it (what the blob's stamp names).
 */
BINDERY_NODISCARD enum db_err docs_create_intent(struct db *db, struct span name, const char *owner,
						 const char *content_type, const char *blob_name,
						 const struct lease *l, const char *idem_key,
						 uint64_t *doc_id, char *created_at);

/* docs_create_intent's statements, inside a transaction the caller holds
 * (an upload's intent adds its own row in the same one); l->holder may be
 * NULL: no request holds the row yet; created_at may be NULL. */
BINDERY_NODISCARD enum db_err docs_create_intent_tx(struct db *db, struct span name, const char *owner,
						    const char *content_type, const char *blob_name,
						    const struct lease *l, const char *idem_key,
						    uint64_t *doc_id, char *created_at);
/* After a create intent's COMMIT: DB_OK when its row (blob_name of doc_id)
 * is there, else db_set_lost_commit (for DB_IN_TX_CHECKED). */
BINDERY_NODISCARD enum db_err docs_create_intent_check(struct db *db, const char *blob_name, uint64_t doc_id);

/*
 * What may hang on an intent besides its two rows, for docs_mark_ready to
 * finish in the same transaction.  Each is one more statement in a
 * transaction every create waits on (measured: skipping both for a plain
 * create took P2 from 259 to 310 creates/s), so an attempt that knows it
 * made neither says so; one that cannot know passes READY_ALL.
 */
enum ready_extras {
	READY_KEY = 1 << 0,	/* an Idempotency-Key answers for it (idem_record_ready) */
	READY_UPLOAD = 1 << 1,	/* a tus upload's block rows (uploads_record_ready) */
	READY_ALL = READY_KEY | READY_UPLOAD,
};

/*
 * Admission recorded the type it read from the bytes of a create intent
 * that has not become ready (doc/design.md, "Admission"): the pending
 * document on blob_name takes content_type, before anything lets it become
 * ready.  The type must differ from the row's (the server counts changed
 * rows): DB_CONFLICT when no pending row of that blob changed.
 */
BINDERY_NODISCARD enum db_err docs_set_pending_type(struct db *db, uint64_t doc_id, const char *blob_name,
						    const char *content_type);

/*
 * Step 4 of create: document pending -> ready (with the committed blob's
 * storage ETag, which reads are pinned to) and its blob pending ->
 * committed (only while holder holds it), both or neither, and in the same
 * transaction what extras names: the answer of the Idempotency-Key that
 * started the intent, the upload's block rows.  DB_CONFLICT when either
 * touched no row (a resume or the sweeper took it): the caller re-reads and
 * decides.  row, when not NULL, receives the document as the transaction
 * commits it (read inside it: no read after the commit is needed for the
 * answer).
 */
BINDERY_NODISCARD enum db_err docs_mark_ready(struct db *db, uint64_t doc_id, const char *blob_name,
					      const char *holder, uint64_t size,
					      const char *sha256_hex, const char *etag,
					      unsigned extras, struct doc *row);

/*
 * Compensation's last step, after the blob (if any) is gone: drop the
 * pending document, the registry row holder claimed with blobs_claim_held
 * and the unfinished idempotency key that started it, in one transaction.
 * DB_CONFLICT: the claim was lost (its lease ended and a sweeper took it).
 */
BINDERY_NODISCARD enum db_err docs_abandon_intent(struct db *db, uint64_t doc_id, const char *blob_name,
						  const char *holder);

/* A document by id, any status, quarantined or not (out->quarantined_at
 * says): the caller decides what it may see. */
BINDERY_NODISCARD enum db_err docs_get(struct db *db, uint64_t id, struct doc *out);

/*
 * Inside a ready transaction, as its last statement: the document's place
 * in the list (ready_seq), the next value of the one counter row, whose
 * lock makes the order that of the commits (sql/009).
 */
BINDERY_NODISCARD enum db_err docs_assign_ready_seq(struct db *db, uint64_t doc_id);

#define DOCS_PREFIX_MAX 255	/* a name prefix is at most a whole name */

/* Ready documents that are not quarantined (sql/018), past the cursor
 * after (a ready_seq; 0: from the start) in order: DOC_ORDER_OLDEST takes ready_seq > after ascending, the order
 * they became ready; DOC_ORDER_NEWEST ready_seq < after descending.  At
 * most limit; on_doc per row.  A non-empty prefix (at most
 * DOCS_PREFIX_MAX bytes) keeps the names that begin with it, compared as
 * names are (exactly, bytewise): '%', '_' and '\\' in it are plain
 * characters, never wildcards. */
BINDERY_NODISCARD enum db_err docs_list_ready(struct db *db, enum doc_order order, uint64_t after,
					      struct span prefix, unsigned limit,
					      int (*on_doc)(void *ctx, const struct doc *d), void *ctx);

/* How many ready documents there are that are not quarantined and whose
 * names begin with prefix (the same filter as docs_list_ready's; empty:
 * all) into *out. */
BINDERY_NODISCARD enum db_err docs_count_ready(struct db *db, struct span prefix, uint64_t *out);

/*
 * The ready document called name, compared exactly (the column's
 * utf8mb4_nopad_bin: case and trailing spaces count), by one lookup on the
 * documents_name index.  DB_NOT_FOUND when no document has the name or its
 * document is still pending or quarantined (readers see ready documents
 * only, and no quarantined one).
 */
BINDERY_NODISCARD enum db_err docs_find_ready_by_name(struct db *db, struct span name, struct doc *out);

/*
 * Quarantine (sql/018, `bindery scan`): a ready document taken out of every
 * read while its rows and its blob stay as they are, so that the sweeper,
 * the audit and the outbox see the ready document they always saw.
 *
 * docs_walk_ready: at most limit ready documents, quarantined ones too,
 * with ids above after, ascending, whose blob names begin with blob_prefix
 * ("": every one); on_doc per row (nonzero stops).  A keyset walk: call it
 * again with the last id seen.  on_doc runs while the result is being
 * read, so it must not use db: it copies what it needs.
 */
BINDERY_NODISCARD enum db_err docs_walk_ready(struct db *db, uint64_t after, const char *blob_prefix,
					      unsigned limit,
					      int (*on_doc)(void *ctx, const struct doc *d), void *ctx);

/*
 * Quarantine document doc_id while it is ready on blob_name (the bytes the
 * caller judged): *changed is 1 when this call did it, 0 when it was
 * quarantined already on those bytes.  DB_NOT_FOUND when it is no longer a
 * ready document on blob_name (deleted, or replaced since it was read): not
 * the bytes judged, so nothing changes.  Read back after the COMMIT
 * (DB_IN_TX_CHECKED).
 */
BINDERY_NODISCARD enum db_err docs_quarantine(struct db *db, uint64_t doc_id, const char *blob_name,
					      int *changed);

/*
 * Put a quarantined document back: *changed 1 when this call released it,
 * 0 when the ready document was not quarantined.  DB_NOT_FOUND when no
 * ready document has the id.
 */
BINDERY_NODISCARD enum db_err docs_release(struct db *db, uint64_t doc_id, int *changed);

/* Replace step 1: a pending registry row, under lease l, for the new blob of
 * document doc_id.  DB_NOT_FOUND, and no row, unless the document is ready
 * and not quarantined: a quarantined document's bytes wait for an
 * administrator (`bindery scan --release`), and a replace would retire
 * them. */
BINDERY_NODISCARD enum db_err docs_replace_intent(struct db *db, uint64_t doc_id, const char *blob_name,
						  const struct lease *l);

/* The new blob a replace commits: uploaded, tagged committed, its row held by holder. */
struct replace_blob {
	const char *name;
	const char *holder;
	uint64_t size;
	const char *sha256_hex;
	const char *etag;		/* its storage ETag, pinned for reads */
	const char *content_type;
	char *retired;			/* out (DOC_BLOB_NAME_MAX bytes), or NULL: the blob
					 * the commit retired, "" until it commits */
};

/*
 * Replace commit, one transaction: the ready document points at nb->name
 * (conditional on the version it was read at, one row), the new blob's row
 * pending -> committed (held by nb->holder, one row), the old blob committed
 * -> retired with retire_after = now + grace (or the SAS's end, later).  expected_version 0 means last
 * writer wins.  A concurrent replace or delete that commits between the read
 * and the change makes the transaction run again (bounded).  DB_NOT_FOUND:
 * no such ready document.  DB_CONFLICT with *stale set: the version did not
 * match (412).  DB_CONFLICT without it: the new blob's row was lost (a
 * sweeper took it) or the document kept changing.  *out receives the
 * document as committed.
 */
BINDERY_NODISCARD enum db_err docs_replace_commit(struct db *db, uint64_t doc_id,
						  const struct replace_blob *nb,
						  uint64_t expected_version, unsigned grace, int *stale,
						  struct doc *out);

/*
 * Delete: remove the ready document (conditional on the version it was read
 * at; a concurrent change makes it run again, bounded) and retire its blob
 * (retire_after = now + grace) in one transaction.  expected_version 0
 * deletes whatever version is current; otherwise another version is
 * DB_CONFLICT with *stale set (412).  DB_NOT_FOUND if there is no such
 * ready doc.
 */
BINDERY_NODISCARD enum db_err docs_delete(struct db *db, uint64_t doc_id, uint64_t expected_version,
					  unsigned grace, int *stale);

/*
 * Point a key at a fresh intent after the sweeper took its old one, in one
 * transaction: the rows docs_create_intent_tx writes (under lease l, no key
 * row of their own), and the key, while unfinished, pointed at them (one
 * row, else DB_CONFLICT).
 */
BINDERY_NODISCARD enum db_err docs_restart_intent(struct db *db, const char *owner, const char *key,
						  struct span name, const char *content_type,
						  const char *blob_name, const struct lease *l,
						  uint64_t *doc_id);

/*
 * A resumable upload's intent, one transaction: for a create, the pending
 * document and its registry row (docs_create_intent_tx); for a replace,
 * the registry row of the new blob (docs_replace_intent); then the
 * upload's row.  No holder yet.  DB_DUPLICATE when the name is taken.
 * *doc_id is the document's id (the new one, or u->replaces).
 */
BINDERY_NODISCARD enum db_err docs_upload_intent(struct db *db, const struct upload_new *u, uint64_t *doc_id);

#endif
