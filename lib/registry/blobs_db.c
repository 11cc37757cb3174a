/* blobs_db.c - see blobs_db.h.  All SQL is literal text with bound parameters. */
#include <string.h>

#include "registry/blobs_db.h"
#include "registry/quota_db.h"

static const char sql_renew_held[] =
	"UPDATE blobs SET touched_at = NOW(6), expires_at = NOW(6) + INTERVAL ? SECOND"
	" WHERE name = ? AND state = 'pending' AND holder = ?";

enum db_err
blobs_renew_held(struct db *db, const char *blob_name, const struct lease *l)
{
	struct db_param p[] = { DBP_U64(l->seconds), DBP_STR(blob_name), DBP_STR(l->holder) };

	return db_exec_one(db, sql_renew_held, p, ARRAY_LEN(p));
}

/* Compensation's claim looks like a sweeper's (sweeping, claimed_by, a
 * lease), so a responder that dies half-way leaves a claim the sweeper
 * takes over once the lease ends. */
static const char sql_claim_held[] =
	"UPDATE blobs SET state = 'sweeping', claimed_by = holder,"
	" lease_until = NOW(6) + INTERVAL ? SECOND"
	" WHERE name = ? AND state = 'pending' AND holder = ?";

enum db_err
blobs_claim_held(struct db *db, const char *blob_name, const char *holder, unsigned lease)
{
	struct db_param p[] = { DBP_U64(lease), DBP_STR(blob_name), DBP_STR(holder) };

	return db_exec_one(db, sql_claim_held, p, ARRAY_LEN(p));
}

static const char sql_get_blob[] =
	"SELECT name, document_id, purpose, state, COALESCE(size, 0), COALESCE(sha256, ''),"
	" TIMESTAMPDIFF(SECOND, touched_at, NOW(6)), COALESCE(holder, '') FROM blobs WHERE name = ?";

enum db_err
blobs_get(struct db *db, const char *name, struct blob_row *out)
{
	/* The enum columns' text, read before they become enums. */
	char purpose[16], state[16];
	struct db_col c[] = { DBC_STR(out->name), DBC_U64(&out->document_id), DBC_STR(purpose),
			      DBC_STR(state), DBC_U64(&out->size), DBC_STR(out->sha256),
			      DBC_I64(&out->touched_age), DBC_STR(out->holder) };
	struct db_param p[] = { DBP_STR(name) };
	enum db_err e;

	memset(out, 0, sizeof *out);
	e = db_query(db, sql_get_blob, p, 1, c, ARRAY_LEN(c), NULL, NULL);
	if (e == DB_OK) {
		out->purpose = intent_purpose_from_name(purpose);
		out->state = registry_state_from_name(state);
	}
	return e;
}

static const char sql_retire_pending_now[] =
	"UPDATE blobs SET state = 'retired', retire_after = GREATEST(NOW(6), "
	BLOBS_RETIRE_NOT_BEFORE_SAS_SQL ")"
	" WHERE name = ? AND state = 'pending' AND holder = ?";

/* An intent's end settles its [quota] reservation in the same transaction;
 * without [quota] the one statement needs none. */
static enum db_err
retire_unreferenced_tx(struct db *db, const char *blob_name, const char *holder)
{
	struct db_param p[] = { DBP_STR(blob_name), DBP_STR(holder) };
	enum db_err e = db_exec_one(db, sql_retire_pending_now, p, ARRAY_LEN(p));

	return e == DB_OK ? quota_db_settle(db, blob_name) : e;
}

enum db_err
blobs_retire_unreferenced(struct db *db, const char *blob_name, const char *holder)
{
	if (!quota_db_enabled())
		return retire_unreferenced_tx(db, blob_name, holder);
	DB_IN_TX(db, retire_unreferenced_tx(db, blob_name, holder));
}

static const char sql_claim_retired[] =
	"UPDATE blobs SET state = 'deleting', claimed_by = ?, lease_until = NOW(6) + INTERVAL ? SECOND"
	" WHERE name = ? AND state = 'retired' AND retire_after <= NOW(6)";

/* Two sweepers on two Galera nodes drain the same outbox names in the same
 * order: one's claim loses certification to the other's (a deadlock error
 * once the node's own autocommit retry is spent).  Run again, the
 * statement finds the row taken: DB_CONFLICT, the name is the other's
 * (tests/cluster/two_sweepers.sh). */
enum db_err
blobs_claim_retired(struct db *db, const char *blob_name, const char *claimer, unsigned lease)
{
	struct db_param p[] = { DBP_STR(claimer), DBP_U64(lease), DBP_STR(blob_name) };
	unsigned tries = 0;
	enum db_err e;

	do
		e = db_exec_one(db, sql_claim_retired, p, ARRAY_LEN(p));
	while (db_txn_retry(db, e, ++tries));
	return e;
}

static const char sql_referenced[] = "SELECT COUNT(*) FROM documents WHERE blob_name = ?";

enum db_err
blobs_is_referenced(struct db *db, const char *blob_name, int *referenced)
{
	uint64_t n = 0;
	struct db_col c[] = { DBC_U64(&n) };
	struct db_param p[] = { DBP_STR(blob_name) };
	enum db_err e = db_query(db, sql_referenced, p, 1, c, 1, NULL, NULL);

	*referenced = n > 0;
	return e;
}

static const char sql_drop_claimed[] =
	"DELETE FROM blobs WHERE name = ? AND state IN ('deleting', 'sweeping') AND claimed_by = ?";

static enum db_err
drop_claimed_tx(struct db *db, const char *blob_name, const char *claimer)
{
	struct db_param p[] = { DBP_STR(blob_name), DBP_STR(claimer) };
	enum db_err e = db_exec_one(db, sql_drop_claimed, p, ARRAY_LEN(p));

	return e == DB_OK ? quota_db_settle(db, blob_name) : e;
}

enum db_err
blobs_drop_claimed(struct db *db, const char *blob_name, const char *claimer)
{
	if (!quota_db_enabled())
		return drop_claimed_tx(db, blob_name, claimer);
	DB_IN_TX(db, drop_claimed_tx(db, blob_name, claimer));
}

static const char sql_release_retired[] =
	"UPDATE blobs SET state = 'retired', claimed_by = NULL, lease_until = NULL"
	" WHERE name = ? AND state = 'deleting' AND claimed_by = ?";

enum db_err
blobs_release_retired(struct db *db, const char *blob_name, const char *claimer)
{
	struct db_param p[] = { DBP_STR(blob_name), DBP_STR(claimer) };

	return db_exec_one(db, sql_release_retired, p, ARRAY_LEN(p));
}

/* The expiry condition is the compare-and-set: the winner writes a lease
 * of its own, so a second resumer (or the sweeper) finds the row live.
 * Only a server upload's row: a direct intent's blob is the client's, and
 * a resume would trust its metadata. */
static const char sql_let_go[] =
	"UPDATE blobs SET expires_at = NOW(6) - INTERVAL 1 MICROSECOND"
	" WHERE name = ? AND state = 'pending' AND holder = ?";

enum db_err
blobs_let_go(struct db *db, const char *blob_name, const char *holder)
{
	struct db_param p[] = { DBP_STR(blob_name), DBP_STR(holder) };

	return db_exec_one(db, sql_let_go, p, ARRAY_LEN(p));
}

static const char sql_take_over_stale[] =
	"UPDATE blobs SET holder = ?, touched_at = NOW(6), expires_at = NOW(6) + INTERVAL ? SECOND"
	" WHERE name = ? AND state = 'pending' AND expires_at < NOW(6) AND route = 'server'";

enum db_err
blobs_take_over_stale(struct db *db, const char *blob_name, const struct lease *l)
{
	struct db_param p[] = { DBP_STR(l->holder), DBP_U64(l->seconds), DBP_STR(blob_name) };

	return db_exec_one(db, sql_take_over_stale, p, ARRAY_LEN(p));
}
