/*
 * docs_db.h - the documents table and the blob registry, as the responder
 * uses them.  Each function is one short transaction that moves rows with
 * conditional statements which must touch exactly one row; a zero-row update
 * means another actor (the sweeper) owns the next step and comes back as
 * DB_CONFLICT.  No function here touches storage: the protocol module calls
 * these between storage calls, never holding a transaction across one.
 *
 * Fencing (doc/design.md, "The claim and the fence"): a pending registry
 * row carries a holder, the attempt id of whoever created, resumed or
 * claimed it.  Every later transition of the row by a responder is
 * conditional on its holder; DB_CONFLICT from one of them means "this
 * attempt lost the row" (to a resume or a sweeper) and the caller must
 * touch nothing in storage for it.
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
#define DOC_HOLDER_MAX 97
#define DOC_ETAG_MAX 129	/* a storage ETag as sent (quotes included), plus NUL */	/* an attempt id (32 hex) or a sweeper's claimer id, plus NUL */

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
	uint64_t ready_seq;		/* its place in the list: assigned when it became ready */
	char blob_etag[DOC_ETAG_MAX];	/* the committed blob's storage ETag; "" when not
					 * recorded (ready before 008): reads are pinned to it */
};

struct blob_row {
	char name[DOC_BLOB_NAME_MAX];
	uint64_t document_id;
	enum intent_purpose purpose;
	enum registry_state state;
	uint64_t size;			/* 0 and has_hash 0 until known */
	char sha256[DOC_SHA256_HEX];
	int64_t touched_age;		/* seconds since touched_at (the owner's heartbeat) */
	char holder[DOC_HOLDER_MAX];	/* "" when the row has none (written before 004) */
};

/*
 * A lease on a pending row: its holder's attempt id and how long the row
 * stays its holder's after each write (expires_at = now + seconds).  The
 * sweeper and an idempotent resume take the row only once it has expired.
 */
struct lease {
	const char *holder;
	unsigned seconds;
};

/*
 * Step 1 of create: one transaction inserting the pending document and its
 * pending registry row held by holder (and, with an idempotency key, the
 * key's row, which keeps the request's name and content_type as its
 * fingerprint).  DB_DUPLICATE when the name (or the key) is taken.  *doc_id
 * is the new id.
 */
BINDERY_NODISCARD enum db_err docs_create_intent(struct db *db, struct span name, const char *owner,
						 const char *content_type, const char *blob_name,
						 const struct lease *l, const char *idem_key,
						 uint64_t *doc_id);

/* docs_create_intent's statements, inside a transaction the caller holds
 * (an upload's intent adds its own row in the same one); l->holder may be
 * NULL: no request holds the row yet. */
BINDERY_NODISCARD enum db_err docs_create_intent_tx(struct db *db, struct span name, const char *owner,
						    const char *content_type, const char *blob_name,
						    const struct lease *l, const char *idem_key,
						    uint64_t *doc_id);
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
 * Step 4 of create: document pending -> ready (with the committed blob's
 * storage ETag, which reads are pinned to) and its blob pending ->
 * committed (only while holder holds it), both or neither, and in the same
 * transaction what extras names: the answer of the Idempotency-Key that
 * started the intent, the upload's block rows.  DB_CONFLICT when either
 * touched no row (a resume or the sweeper took it): the caller re-reads and
 * decides.
 */
BINDERY_NODISCARD enum db_err docs_mark_ready(struct db *db, uint64_t doc_id, const char *blob_name,
					      const char *holder, uint64_t size,
					      const char *sha256_hex, const char *etag,
					      unsigned extras);

/*
 * The holder's heartbeat: touched_at = now and a fresh lease (expires_at =
 * now + l->seconds) on a pending row l->holder still holds.  Run while the
 * body streams, right before the commit and right before the tag flip, so
 * an attempt that lost its row learns so before it commits anything.
 * DB_CONFLICT: lost.
 */
BINDERY_NODISCARD enum db_err blobs_renew_held(struct db *db, const char *blob_name,
					       const struct lease *l);

/*
 * Compensation's claim, before any storage call: a pending row held by
 * holder -> sweeping, claimed_by = holder, with a lease of lease seconds (a
 * responder that dies here leaves a claim the sweeper takes over when the
 * lease ends).  DB_CONFLICT: lost; the caller must not touch the blob.
 * A compensation that cannot finish in storage gives the claim back
 * (sweep_db_release with holder as the claimer: pending again, still held).
 */
BINDERY_NODISCARD enum db_err blobs_claim_held(struct db *db, const char *blob_name, const char *holder,
					       unsigned lease);

/*
 * Compensation's last step, after the blob (if any) is gone: drop the
 * pending document, the registry row holder claimed with blobs_claim_held
 * and the unfinished idempotency key that started it, in one transaction.
 * DB_CONFLICT: the claim was lost (its lease ended and a sweeper took it).
 */
BINDERY_NODISCARD enum db_err docs_abandon_intent(struct db *db, uint64_t doc_id, const char *blob_name,
						  const char *holder);

/* A document by id, any status (the caller decides what it may see). */
BINDERY_NODISCARD enum db_err docs_get(struct db *db, uint64_t id, struct doc *out);

/*
 * Inside a ready transaction, as its last statement: the document's place
 * in the list (ready_seq), the next value of the one counter row, whose
 * lock makes the order that of the commits (sql/009).
 */
BINDERY_NODISCARD enum db_err docs_assign_ready_seq(struct db *db, uint64_t doc_id);

#define DOCS_PREFIX_MAX 255	/* a name prefix is at most a whole name */

/* Ready documents with ready_seq > after, in the order they became ready,
 * at most limit; on_doc per row.  A non-empty prefix (at most
 * DOCS_PREFIX_MAX bytes) keeps the names that begin with it, compared as
 * names are (exactly, bytewise): '%', '_' and '\\' in it are plain
 * characters, never wildcards. */
BINDERY_NODISCARD enum db_err docs_list_ready(struct db *db, uint64_t after, struct span prefix,
					      unsigned limit,
					      int (*on_doc)(void *ctx, const struct doc *d), void *ctx);

/*
 * The ready document called name, compared exactly (the column's
 * utf8mb4_nopad_bin: case and trailing spaces count), by one lookup on the
 * documents_name index.  DB_NOT_FOUND when no document has the name or its
 * document is still pending (readers see ready documents only).
 */
BINDERY_NODISCARD enum db_err docs_find_ready_by_name(struct db *db, struct span name, struct doc *out);

/* A registry row by blob name. */
BINDERY_NODISCARD enum db_err blobs_get(struct db *db, const char *name, struct blob_row *out);

/* Replace step 1: a pending registry row, under lease l, for the new blob of document doc_id. */
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
};

/*
 * The storage clock skew a SAS's expiry is given (README.md, "Direct uploads"):
 * a grant counts as valid until its expiry plus this.  Every retirement
 * waits for the latest create SAS of the blob (blobs.sas_expires) plus
 * this, whatever grace it was given.
 */
#define DOCS_SAS_SKEW_S 300
#define DOCS_SAS_SKEW_SQL "300"

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
 * A new blob that will never be referenced (a failed or refused replace):
 * pending (held by holder) -> retired, due now, so the outbox drain deletes
 * it.  DB_CONFLICT: the row was lost to the sweeper, which rolls it back.
 */
BINDERY_NODISCARD enum db_err blobs_retire_unreferenced(struct db *db, const char *blob_name,
							const char *holder);

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
	enum upload_route route;	/* the route of the request that wrote it */
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
 * Resume: take a pending intent over for l->holder (a new holder, a fresh
 * lease) only once its lease has expired (expires_at passed: its owner is
 * gone).  DB_CONFLICT: its lease is live (another request is working on
 * it), it is no longer pending (the sweeper has it), or it is a direct
 * intent (never resumed by a server create).
 */
BINDERY_NODISCARD enum db_err blobs_take_over_stale(struct db *db, const char *blob_name,
						    const struct lease *l);
/* Point a key at a fresh intent, under lease l, after the sweeper took its old one. */
BINDERY_NODISCARD enum db_err idem_restart(struct db *db, const char *owner, const char *key,
					   struct span name, const char *content_type,
					   const char *blob_name, const struct lease *l,
					   uint64_t *doc_id);

#endif
