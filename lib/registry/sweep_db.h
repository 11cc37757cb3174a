/*
 * sweep_db.h - the registry statements only the sweeper uses.
 *
 * Claims are conditional UPDATEs with a lease (claim-by-update): a row moves
 * pending -> sweeping (or an expired sweeping lease changes hands) under a
 * claimer id unique to one round of one run, and the claimer then reads back
 * exactly the rows it won.  Two sweepers on two hosts never win one row.
 * A claim also writes the claimer into the row's holder (blobs_db.h,
 * fencing): the responder that held the row is fenced out for good, even
 * after the claim is released back to pending.
 * Every function is one short statement or transaction; none touches storage.
 */
#ifndef BINDERY_SWEEP_DB_H
#define BINDERY_SWEEP_DB_H

#include <stdint.h>

#include "base/compat.h"
#include "registry/db.h"
#include "registry/doc_row.h"

/* A claimed intent, with the document (if any) that points at its name. */
struct sweep_item {
	char name[DOC_BLOB_NAME_MAX];
	uint64_t document_id;
	enum intent_purpose purpose;
	uint64_t size;
	int has_size;
	char sha256[DOC_SHA256_HEX];	/* "" when unknown */
	uint64_t ref_doc_id;		/* 0: no document has blob_name = name */
	enum doc_status ref_doc_status;	/* DOC_STATUS_UNKNOWN without one */
	int64_t age;			/* seconds since touched_at */
	enum registry_state state;
	enum upload_route route;	/* direct: the client uploaded; finalize verifies */
	char etag[DOC_ETAG_MAX];	/* a direct intent's ETag finalize verified with
					 * size and sha256; "" until then */
};

/*
 * Every statement below that selects work takes a blob-name prefix: only
 * names starting with it are touched ("" = all).
 */

/*
 * pending with an expired lease (expires_at passed) -> sweeping, at most
 * limit rows.  idle_cutoff >= 0 (`--older-than`) also takes rows not
 * renewed for that many seconds; < 0: expired leases only.
 */
BINDERY_NODISCARD enum db_err sweep_db_claim_stale(struct db *db, const char *claimer, const char *prefix,
						   unsigned lease, int64_t idle_cutoff, unsigned limit,
						   uint64_t *claimed);
/* sweeping with an expired lease -> claimer's, at most limit rows. */
BINDERY_NODISCARD enum db_err sweep_db_take_over(struct db *db, const char *claimer, const char *prefix,
						 unsigned lease, unsigned limit, uint64_t *taken);
/* deleting with an expired lease -> retired (the outbox drains it again). */
BINDERY_NODISCARD enum db_err sweep_db_release_expired_deleting(struct db *db, const char *prefix,
								unsigned limit, uint64_t *released);
/* The rows claimer holds in state sweeping; on_item per row. */
BINDERY_NODISCARD enum db_err sweep_db_list_claimed(struct db *db, const char *claimer,
						    int (*on_item)(void *, const struct sweep_item *),
						    void *ctx);

/*
 * Dry run: what a claim would take.  Stale pending rows and expired
 * sweeping/deleting leases, in name order after `after` (keyset).
 */
BINDERY_NODISCARD enum db_err sweep_db_list_candidates(struct db *db, const char *prefix, int64_t idle_cutoff,
						       const char *after,
						       unsigned limit,
						       int (*on_item)(void *, const struct sweep_item *),
						       void *ctx);

/*
 * Due outbox rows (retired, retire_after passed) after the keyset position
 * (after_time "" = from the start), at most limit; on_name per row with the
 * row's retire_after text for the next call.
 */
BINDERY_NODISCARD enum db_err sweep_db_list_due_retired(struct db *db, const char *prefix,
							const char *after_time,
							const char *after_name, unsigned limit,
							int (*on_name)(void *, const char *name,
								       const char *retire_after),
							void *ctx);

/*
 * A claimed intent with nothing left in storage: drop its registry row, its
 * pending document (if it is the intent's) and the unfinished idempotency
 * keys that point at it, in one transaction, run whole again on a deadlock
 * or a lost certification (db_txn_retry).  DB_CONFLICT: the claim was lost.
 */
BINDERY_NODISCARD enum db_err sweep_db_drop_intent(struct db *db, const char *claimer,
						   const struct sweep_item *it);
/*
 * Roll a claimed create forward: the pending document -> ready with size,
 * sha256 and the blob's storage ETag (reads are pinned to it), the registry row sweeping -> committed, and the answer of the
 * Idempotency-Key that started the intent (idem_record_ready), all or none;
 * run whole again on a deadlock or a lost certification (db_txn_retry).
 */
BINDERY_NODISCARD enum db_err sweep_db_roll_forward(struct db *db, const char *claimer,
						    const struct sweep_item *it, uint64_t size,
						    const char *sha256_hex, const char *etag);
/*
 * Delete at most limit finished idempotency keys created more than ttl
 * seconds ago whose blob name starts with prefix; *pruned says how many.
 * Unfinished keys are never deleted here: they go with their intent.
 */
BINDERY_NODISCARD enum db_err sweep_db_prune_keys(struct db *db, const char *prefix, unsigned ttl,
						  unsigned limit, uint64_t *pruned);
/* Dry run: how many keys sweep_db_prune_keys would delete in all. */
BINDERY_NODISCARD enum db_err sweep_db_count_expired_keys(struct db *db, const char *prefix,
							  unsigned ttl, uint64_t *n);
/* A claimed replace intent that never committed -> retired, due now. */
BINDERY_NODISCARD enum db_err sweep_db_retire_claimed(struct db *db, const char *claimer,
						      const char *name);
/*
 * Right before a claimed intent's storage steps: push its lease to now +
 * lease seconds, but only while claimer still holds it and it has not run
 * out.  DB_CONFLICT: it ran out (another sweeper may have taken it over, or
 * a later round will): the caller must not touch storage for it.
 */
BINDERY_NODISCARD enum db_err sweep_db_renew_claim(struct db *db, const char *claimer, const char *name,
						   unsigned lease);
/* Give a claim back untouched (sweeping -> pending) for a later run. */
BINDERY_NODISCARD enum db_err sweep_db_release(struct db *db, const char *claimer, const char *name);

/*
 * The lease-row lock of `sweep --lock NAME` (sql/011): *got 1 when holder
 * took the row for lease seconds, 0 when another holder's lease is still
 * running.  One conditional UPDATE decides, so it holds across hosts and on
 * Galera, where GET_LOCK is per node.  A holder that dies lets go when its
 * lease ends; a run that outlasts its lease may find the next one beside
 * it, which is safe (every item is claimed on its own) and only shares the
 * work.
 */
BINDERY_NODISCARD enum db_err sweep_db_lock(struct db *db, const char *name, const char *holder,
					    unsigned lease, int *got);
/* Let go of name if holder still has it; DB_CONFLICT when it did not. */
BINDERY_NODISCARD enum db_err sweep_db_unlock(struct db *db, const char *name, const char *holder);


/* ---- the run history (sql/012) ---- */

/* What one run did, as `bindery sweep` counts it (protocol/sweep.h's report). */
struct sweep_run_counts {
	uint64_t dropped, deleted, purged, rolled_forward, rolled_back, outbox;
	uint64_t taken_over, keys_expired, problems, deferred, lease_expired;
};

/*
 * A run starts: a sweep_runs row with no result yet; *id names it for
 * sweep_db_run_finish.  lock and holder may be NULL (no --lock).
 */
BINDERY_NODISCARD enum db_err sweep_db_run_begin(struct db *db, const char *host, unsigned pid,
						 const char *lock, const char *holder, uint64_t *id);
/* The run id ends with result (not SWEEP_RESULT_NONE) and counts. */
BINDERY_NODISCARD enum db_err sweep_db_run_finish(struct db *db, uint64_t id, enum sweep_result result,
						  const struct sweep_run_counts *c);
/*
 * Keep the history bounded: delete runs started more than days days ago,
 * except the newest ok one (status and /healthz date the last success by
 * it).  *pruned says how many went.
 */
BINDERY_NODISCARD enum db_err sweep_db_run_prune(struct db *db, unsigned days, uint64_t *pruned);

#endif
