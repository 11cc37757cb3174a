/*
 * quota_db.h - per-owner quotas (sql/017_quota.sql; doc/design.md,
 * "Quotas"): an owner's stored bytes and documents, and what its intents
 * have reserved.
 *
 * The limits this process enforces are set once (quota_db_configure, from
 * [quota]); with none every call here is a no-op and nothing is written, so
 * an installation without [quota] pays nothing.  Every call is made inside
 * the caller's transaction, after its other statements (the usage row is
 * locked last in every transaction that takes it, so none waits on another
 * in a cycle):
 *   - an intent's transaction reserves (quota_db_reserve): one conditional
 *     UPDATE of the owner's row, so no two uploads both pass a limit, on one
 *     server or on Galera;
 *   - the transaction that wins an intent's end (ready, abandoned, dropped,
 *     rolled back) settles its reservation (quota_db_settle): the
 *     reservation's row is deleted in the same statement sequence, so a
 *     second settle of the same intent finds nothing;
 *   - the transactions that make a document ready, replace it or delete it
 *     move its owner's stored figures (quota_db_account).
 */
#ifndef BINDERY_QUOTA_DB_H
#define BINDERY_QUOTA_DB_H

#include <stdint.h>

#include "base/compat.h"
#include "registry/db.h"

struct quota_limits {
	uint64_t bytes;		/* per owner, ready + reserved; 0: no limit */
	unsigned documents;	/* ready + intents that create one; 0: no limit */
	unsigned pending;	/* intents at once; 0: no limit */
};

/* The limits of this process (copied); all zero: quotas off. */
void quota_db_configure(const struct quota_limits *l);
/* Whether this process keeps usage (some limit is set). */
int quota_db_enabled(void);

/*
 * Reserve bytes for the intent blob_name on document doc_id (its owner's;
 * is_create: the intent would add a document), taking the owner's row
 * (made from the owner's ready rows the first time).  DB_QUOTA: a limit
 * would be passed (the caller rolls back and answers 413 quota_exceeded).
 */
BINDERY_NODISCARD enum db_err quota_db_reserve(struct db *db, uint64_t doc_id, const char *blob_name,
					       uint64_t bytes, int is_create);

/* The same for an intent of owner's with no document (a tus partial
 * upload, sql/019): it adds no document. */
BINDERY_NODISCARD enum db_err quota_db_reserve_owner(struct db *db, const char *owner, const char *blob_name,
						     uint64_t bytes);

/* Release blob_name's reservation, if it has one (exactly once: the
 * reservation's row goes with it). */
BINDERY_NODISCARD enum db_err quota_db_settle(struct db *db, const char *blob_name);

/* Move the stored figures of document doc_id's owner by bytes and
 * documents (negative: less), read before a delete removes the row. */
BINDERY_NODISCARD enum db_err quota_db_account(struct db *db, uint64_t doc_id, int64_t bytes,
					       int64_t documents);

/*
 * Rebuild every owner's row from the documents and the open reservations
 * (after a restore, or after [quota] was first set), in one transaction:
 * a reservation taken meanwhile is counted, not lost.  *owners: rows
 * written.
 */
BINDERY_NODISCARD enum db_err quota_db_recount(struct db *db, uint64_t *owners);

struct quota_usage {
	char owner[129 * 4];
	uint64_t bytes, documents, reserved, pending;
};

/* Each owner's row, largest bytes first (at most limit rows); on_row
 * returns nonzero to stop. */
BINDERY_NODISCARD enum db_err quota_db_list(struct db *db, unsigned limit,
					    int (*on_row)(void *ctx, const struct quota_usage *u), void *ctx);

#endif
