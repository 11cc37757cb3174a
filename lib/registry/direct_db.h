/*
 * direct_db.h - the registry rows of a direct upload (doc/design.md "Direct
 * uploads"; sql/010).  A direct intent is a create intent whose blobs row
 * says route = 'direct' and keeps what the client declared; finalize
 * records the (storage ETag, size, SHA-256) it verified in the same row,
 * fenced by the intent's holder like every transition of a pending row.
 * No storage here.
 */
#ifndef BINDERY_DIRECT_DB_H
#define BINDERY_DIRECT_DB_H

#include <stdint.h>

#include "base/compat.h"
#include "base/state.h"
#include "registry/blobs_db.h"
#include "registry/db.h"
#include "registry/doc_row.h"

/*
 * One create-only SAS for a blob name, recorded before it is handed out
 * (sql/013): signed at `signed_at` (Unix seconds), valid until `expires`.
 * No direct blob is retired before its latest grant has expired (+ the
 * skew, BLOBS_SAS_SKEW_S), and a replay answers with the URL signed at
 * exactly the recorded time.
 */
struct direct_sas_grant {
	int64_t signed_at;
	int64_t expires;
};

/* What a direct create declares. */
struct direct_new {
	struct span name;
	const char *owner;
	const char *content_type;
	const char *blob_name;
	uint64_t size;
	const char *sha256;		/* lower-case hex, or NULL: not declared */
	const char *idem_key;		/* or NULL */
	struct lease lease;		/* holder and SAS expiry + skew + sweep_cutoff */
	struct direct_sas_grant grant;	/* the SAS about to be handed out */
};

/*
 * One transaction: the pending document and its registry row (as
 * docs_create_intent_tx writes them) marked direct with the declared size
 * and hash.  DB_DUPLICATE when the name (or the key) is taken.  created_at
 * (DOC_TIME_MAX bytes) receives the document's creation time.
 */
BINDERY_NODISCARD enum db_err direct_db_create_intent(struct db *db, const struct direct_new *n,
						      uint64_t *doc_id, char *created_at);

/* A registry row as finalize and the idempotent retry need it. */
struct direct_row {
	char blob_name[DOC_BLOB_NAME_MAX];
	uint64_t document_id;
	enum registry_state state;
	enum upload_route route;
	uint64_t declared_size;
	char declared_sha256[DOC_SHA256_HEX];	/* "" when not declared */
	char holder[DOC_HOLDER_MAX];
	char etag[DOC_ETAG_MAX];		/* "" until finalize recorded the triple */
	uint64_t size;				/* the recorded triple's (0 before) */
	char sha256[DOC_SHA256_HEX];		/* ... "" before */
	int64_t expires_unix;			/* the lease's end; 0 when not pending */
	struct direct_sas_grant grant;		/* the latest SAS granted; 0s: none */
};

/* The registry row of blob_name.  DB_NOT_FOUND when there is none. */
BINDERY_NODISCARD enum db_err direct_db_get(struct db *db, const char *blob_name, struct direct_row *out);

/*
 * A pending intent's fresh SAS (an Idempotency-Key retry): the lease
 * renewed to outlive it and the grant recorded, in one statement on the
 * row holder still holds, before the SAS is handed out.  DB_CONFLICT: the
 * row is no longer this intent's.
 */
BINDERY_NODISCARD enum db_err direct_db_renew_grant(struct db *db, const char *blob_name, const struct lease *l,
						    const struct direct_sas_grant *g);

/*
 * Record what finalize verified: etag, size and sha256 of the bytes at the
 * name, on the pending direct row holder still holds, in place of what the
 * row recorded when finalize read it (was_etag, "" for nothing).  Recording
 * the same triple again is DB_OK (a retried or concurrent finalize).
 * DB_CONFLICT: the row is no longer this intent's (the sweeper claimed it)
 * or another triple was recorded since it was read.
 */
BINDERY_NODISCARD enum db_err direct_db_record(struct db *db, const char *blob_name, const char *holder,
					       const char *was_etag, const char *etag, uint64_t size,
					       const char *sha256_hex);

/* The owner's pending direct intent of document name: *doc_id, 0 when none. */
BINDERY_NODISCARD enum db_err direct_db_find_pending(struct db *db, struct span name, const char *owner,
						     uint64_t *doc_id);

#endif
