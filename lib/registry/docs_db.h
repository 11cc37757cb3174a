/*
 * docs_db.h - the documents table and the blob registry, as the responder
 * uses them.  Each function is one short transaction that moves rows with
 * conditional statements which must touch exactly one row; a zero-row update
 * means another actor (the sweeper) owns the next step and comes back as
 * DB_CONFLICT.  No function here touches storage: the protocol module calls
 * these between storage calls, never holding a transaction across one.
 */
#ifndef BINDERY_DOCS_DB_H
#define BINDERY_DOCS_DB_H

#include <stddef.h>
#include <stdint.h>

#include "base/compat.h"
#include "base/state.h"
#include "registry/db.h"

#define DOC_NAME_MAX 1024	/* 255 characters of utf8mb4, plus NUL */
#define DOC_BLOB_NAME_MAX 201
#define DOC_OWNER_MAX 513
#define DOC_CTYPE_MAX 256
#define DOC_TIME_MAX 40
#define DOC_SHA256_HEX 65

struct doc {
	uint64_t id;
	char name[DOC_NAME_MAX];
	enum doc_status status;
	char blob_name[DOC_BLOB_NAME_MAX];
	uint64_t size;
	char content_type[DOC_CTYPE_MAX];
	char sha256[DOC_SHA256_HEX];	/* lower-case hex; "" while pending */
	char owner[DOC_OWNER_MAX];
	uint64_t version;		/* moves on every replace (the API's ETag shows it) */
	char created_at[DOC_TIME_MAX];	/* RFC 3339 UTC */
	char updated_at[DOC_TIME_MAX];
};

struct blob_row {
	char name[DOC_BLOB_NAME_MAX];
	uint64_t document_id;
	enum intent_purpose purpose;
	enum registry_state state;
	uint64_t size;			/* 0 and has_hash 0 until known */
	char sha256[DOC_SHA256_HEX];
	int64_t touched_age;		/* seconds since touched_at (the owner's heartbeat) */
};

/*
 * Step 1 of create: one transaction inserting the pending document and its
 * pending registry row (and, with an idempotency key, the key's row, which
 * keeps the request's name and content_type as its fingerprint).
 * DB_DUPLICATE when the name (or the key) is taken.  *doc_id is the new id.
 */
BINDERY_NODISCARD enum db_err docs_create_intent(struct db *db, struct span name, const char *owner,
						 const char *content_type, const char *blob_name,
						 const char *idem_key, uint64_t *doc_id);

/*
 * Step 4 of create: document pending -> ready and its blob pending ->
 * committed, both or neither, and in the same transaction the answer of the
 * Idempotency-Key that started the intent, if one did (idem_record_ready).
 * DB_CONFLICT when either touched no row (the sweeper claimed it): the
 * caller re-reads and decides.
 */
BINDERY_NODISCARD enum db_err docs_mark_ready(struct db *db, uint64_t doc_id, const char *blob_name,
					      uint64_t size, const char *sha256_hex);

/*
 * Failure path before the tag flip, after the blob (if any) is gone: drop the
 * pending document and its pending registry row, only if they are still
 * pending (the sweeper may have claimed them; then it finishes the job).
 */
BINDERY_NODISCARD enum db_err docs_abandon_intent(struct db *db, uint64_t doc_id, const char *blob_name);

/* A document by id, any status (the caller decides what it may see). */
BINDERY_NODISCARD enum db_err docs_get(struct db *db, uint64_t id, struct doc *out);

/* Ready documents with id > after, in id order, at most limit; on_doc per row. */
BINDERY_NODISCARD enum db_err docs_list_ready(struct db *db, uint64_t after, unsigned limit,
					      int (*on_doc)(void *ctx, const struct doc *d), void *ctx);

/* A registry row by blob name. */
BINDERY_NODISCARD enum db_err blobs_get(struct db *db, const char *name, struct blob_row *out);

/* Replace step 1: a pending registry row for the new blob of document doc_id. */
BINDERY_NODISCARD enum db_err docs_replace_intent(struct db *db, uint64_t doc_id, const char *blob_name);

/*
 * Replace commit: the document (ready, owned by owner) points at new_blob,
 * new_blob pending -> committed, the old blob committed -> retired with
 * retire_after = now + grace.  expected_version 0 means last writer wins.
 * DB_NOT_FOUND: no such ready document.  DB_CONFLICT with *stale set: the
 * version did not match (412).  DB_CONFLICT without it: the sweeper took
 * the new blob's row.  *out receives the document as committed.
 */
BINDERY_NODISCARD enum db_err docs_replace_commit(struct db *db, uint64_t doc_id, const char *new_blob,
						  uint64_t size, const char *sha256_hex,
						  const char *content_type, uint64_t expected_version,
						  unsigned grace, int *stale, struct doc *out);

/*
 * A new blob that will never be referenced (a failed or refused replace):
 * pending -> retired, due now, so the outbox drain deletes it.
 */
BINDERY_NODISCARD enum db_err blobs_retire_unreferenced(struct db *db, const char *blob_name);

/*
 * Delete: remove the ready document and retire its blob (retire_after = now
 * + grace) in one transaction.  DB_NOT_FOUND if there is no such ready doc.
 */
BINDERY_NODISCARD enum db_err docs_delete(struct db *db, uint64_t doc_id, unsigned grace);

/*
 * Outbox claim for one named blob (retired and due -> deleting, with a
 * lease), used by the responder to drain what it just retired and by the
 * sweeper.  DB_CONFLICT: someone else has it or it is not due.
 */
BINDERY_NODISCARD enum db_err blobs_claim_retired(struct db *db, const char *blob_name,
						  const char *claimer, unsigned lease);
/* Does any document (any status) reference this blob?  *referenced set. */
BINDERY_NODISCARD enum db_err blobs_is_referenced(struct db *db, const char *blob_name, int *referenced);
/* Drop a registry row we hold a claim on (state deleting/sweeping, claimed_by). */
BINDERY_NODISCARD enum db_err blobs_drop_claimed(struct db *db, const char *blob_name, const char *claimer);
/* Give a claim back (e.g. storage was unreachable): deleting -> retired. */
BINDERY_NODISCARD enum db_err blobs_release_retired(struct db *db, const char *blob_name, const char *claimer);

/* Idempotency keys. */

/* The status a create answers, recorded with its key (the registry knows no HTTP otherwise). */
#define IDEM_STATUS_CREATED 201

struct idem_row {
	uint64_t document_id;
	char blob_name[DOC_BLOB_NAME_MAX];
	char doc_name[DOC_NAME_MAX];
	char content_type[DOC_CTYPE_MAX];	/* the request's; "" when unknown (older rows) */
	uint64_t status_code;		/* 0 while unfinished */
	char sha256[DOC_SHA256_HEX];	/* the body's, once finished */
	int expired;			/* finished and older than the TTL: as if absent */
	int has_answer;			/* answer holds the recorded document */
	struct doc answer;		/* as answered (ready), when has_answer */
};
/*
 * The key's record.  A finished key created more than ttl seconds ago
 * comes back with expired set (the database's clock decides); an unfinished
 * key never expires.
 */
BINDERY_NODISCARD enum db_err idem_get(struct db *db, const char *owner, const char *key, unsigned ttl,
				       struct idem_row *out);
/*
 * Record the answer of the key whose intent is blob_name, as the fields of
 * the document that is ready on that blob now (status IDEM_STATUS_CREATED).
 * docs_mark_ready and the sweeper's roll forward run it inside their ready
 * transaction, so a document never becomes ready with its key unanswered;
 * alone it finishes a key an older bindery left unanswered.  No key, or no
 * document ready on the blob: nothing changes, DB_OK.
 */
BINDERY_NODISCARD enum db_err idem_record_ready(struct db *db, const char *blob_name);
/*
 * Forget the key if it is finished and older than ttl seconds, so a new
 * request may use it again.  DB_OK whether or not a row went.
 */
BINDERY_NODISCARD enum db_err idem_drop_expired(struct db *db, const char *owner, const char *key,
						unsigned ttl);
/*
 * Resume: renew the pending intent's heartbeat if it is older than
 * stale_after seconds (its owner is gone).  DB_CONFLICT: it is fresh (another
 * request is working on it) or no longer pending (the sweeper has it).
 */
BINDERY_NODISCARD enum db_err blobs_renew_stale_pending(struct db *db, const char *blob_name,
							unsigned stale_after);
/* Point a key at a fresh intent after the sweeper took its old one. */
BINDERY_NODISCARD enum db_err idem_restart(struct db *db, const char *owner, const char *key,
					   struct span name, const char *content_type,
					   const char *blob_name, uint64_t *doc_id);

#endif
