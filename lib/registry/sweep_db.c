/* sweep_db.c - see sweep_db.h.  All SQL is literal text with bound parameters. */
#include <assert.h>
#include <string.h>

#include "base/failpoint.h"
#include "base/log.h"
#include "registry/blobs_db.h"
#include "registry/docs_db.h"
#include "registry/events_db.h"
#include "registry/idem_db.h"
#include "registry/quota_db.h"
#include "registry/sweep_db.h"
#include "registry/uploads_db.h"

/* The claim statements below are single autocommit statements: a Galera
 * node re-runs one that lost certification itself (wsrep_retry_autocommit)
 * and a deadlock victim comes back as DB_RETRY for the sweeper to claim
 * again.  The two transactions (drop an intent, roll one forward) run
 * whole again on a certification failure (DB_IN_TX). */

/* A claim also makes the claimer the row's holder: the responder whose
 * row it was is fenced out (its renew, mark-ready and compensation claim
 * are conditional on its own holder), even after the claim is released
 * back to pending.  A pending row is taken once its lease has expired;
 * with an idle cutoff (`bindery sweep --older-than N`) also once it has
 * not been renewed for N seconds, unless it is a direct intent: its SAS
 * may still create the blob until just before its lease ends, so no idle
 * cutoff takes it earlier (doc/design.md "Leases"). */
#define CLAIM_SET "UPDATE blobs SET state = 'sweeping', claimed_by = ?, holder = ?," \
	" lease_until = NOW(6) + INTERVAL ? SECOND WHERE state = 'pending' AND "
static const char sql_claim_expired[] =
	CLAIM_SET "expires_at < NOW(6)"
	" AND LEFT(name, CHAR_LENGTH(?)) = ? ORDER BY expires_at LIMIT ?";
static const char sql_claim_idle[] =
	CLAIM_SET "(expires_at < NOW(6) OR (touched_at < NOW(6) - INTERVAL ? SECOND AND route <> 'direct'))"
	" AND LEFT(name, CHAR_LENGTH(?)) = ? ORDER BY touched_at LIMIT ?";

enum db_err
sweep_db_claim_stale(struct db *db, const char *claimer, const char *prefix, unsigned lease,
		     int64_t idle_cutoff, unsigned limit, uint64_t *claimed)
{
	struct db_param idle[] = { DBP_STR(claimer), DBP_STR(claimer), DBP_U64(lease),
				   DBP_U64((uint64_t)idle_cutoff), DBP_STR(prefix), DBP_STR(prefix),
				   DBP_U64(limit) };
	struct db_param expired[] = { DBP_STR(claimer), DBP_STR(claimer), DBP_U64(lease),
				      DBP_STR(prefix), DBP_STR(prefix), DBP_U64(limit) };

	*claimed = 0;
	if (idle_cutoff < 0)
		return db_exec(db, sql_claim_expired, expired, ARRAY_LEN(expired), claimed);
	return db_exec(db, sql_claim_idle, idle, ARRAY_LEN(idle), claimed);
}

static const char sql_take_over[] =
	"UPDATE blobs SET claimed_by = ?, holder = ?, lease_until = NOW(6) + INTERVAL ? SECOND"
	" WHERE state = 'sweeping' AND lease_until < NOW(6) AND LEFT(name, CHAR_LENGTH(?)) = ?"
	" ORDER BY lease_until LIMIT ?";

enum db_err
sweep_db_take_over(struct db *db, const char *claimer, const char *prefix, unsigned lease,
		   unsigned limit, uint64_t *taken)
{
	struct db_param p[] = { DBP_STR(claimer), DBP_STR(claimer), DBP_U64(lease), DBP_STR(prefix),
				DBP_STR(prefix), DBP_U64(limit) };

	*taken = 0;
	return db_exec(db, sql_take_over, p, ARRAY_LEN(p), taken);
}

static const char sql_release_deleting[] =
	"UPDATE blobs SET state = 'retired', claimed_by = NULL, lease_until = NULL"
	" WHERE state = 'deleting' AND lease_until < NOW(6) AND LEFT(name, CHAR_LENGTH(?)) = ?"
	" ORDER BY lease_until LIMIT ?";

enum db_err
sweep_db_release_expired_deleting(struct db *db, const char *prefix, unsigned limit,
				  uint64_t *released)
{
	struct db_param p[] = { DBP_STR(prefix), DBP_STR(prefix), DBP_U64(limit) };

	*released = 0;
	return db_exec(db, sql_release_deleting, p, ARRAY_LEN(p), released);
}

#define ITEM_COLUMNS                                                                  \
	"b.name, b.document_id, b.purpose, COALESCE(b.size, 0), b.size IS NOT NULL,"  \
	" COALESCE(b.sha256, ''), COALESCE(d.id, 0), COALESCE(d.status, ''),"         \
	" TIMESTAMPDIFF(SECOND, b.touched_at, NOW(6)), b.state, b.route, COALESCE(b.etag, '')"

/* The text of a row's enum columns, read before they become enums. */
struct row_text {
	char purpose[16];
	char state[16];
	char doc_status[16];
	char route[16];
};

struct item_ctx {
	struct sweep_item row;
	struct row_text text;
	uint64_t has_size;
	int (*on_item)(void *, const struct sweep_item *);
	void *ctx;
};

static int
item_row(void *arg)
{
	struct item_ctx *ic = arg;

	ic->row.has_size = ic->has_size != 0;
	ic->row.purpose = intent_purpose_from_name(ic->text.purpose);
	ic->row.ref_doc_status = doc_status_from_name(ic->text.doc_status);
	ic->row.state = registry_state_from_name(ic->text.state);
	ic->row.route = upload_route_from_name(ic->text.route);
	return ic->on_item(ic->ctx, &ic->row);
}

static void
item_cols(struct item_ctx *ic, struct db_col *c)
{
	c[0] = DBC_STR(ic->row.name);
	c[1] = DBC_U64(&ic->row.document_id);
	c[2] = DBC_STR(ic->text.purpose);
	c[3] = DBC_U64(&ic->row.size);
	c[4] = DBC_U64(&ic->has_size);
	c[5] = DBC_STR(ic->row.sha256);
	c[6] = DBC_U64(&ic->row.ref_doc_id);
	c[7] = DBC_STR(ic->text.doc_status);
	c[8] = DBC_I64(&ic->row.age);
	c[9] = DBC_STR(ic->text.state);
	c[10] = DBC_STR(ic->text.route);
	c[11] = DBC_STR(ic->row.etag);
}
#define ITEM_NCOLS 12

/* claimed_by has no index of its own: the scan is limited to the few
 * sweeping rows by blobs_state_lease's leading column. */
static const char sql_list_claimed[] =
	"SELECT " ITEM_COLUMNS " FROM blobs b LEFT JOIN documents d ON d.blob_name = b.name"
	" WHERE b.state = 'sweeping' AND b.claimed_by = ?";

enum db_err
sweep_db_list_claimed(struct db *db, const char *claimer,
		      int (*on_item)(void *, const struct sweep_item *), void *ctx)
{
	struct item_ctx ic;
	struct db_col c[ITEM_NCOLS];
	struct db_param p[] = { DBP_STR(claimer) };

	memset(&ic, 0, sizeof ic);
	ic.on_item = on_item;
	ic.ctx = ctx;
	item_cols(&ic, c);
	return db_query(db, sql_list_claimed, p, 1, c, ITEM_NCOLS, item_row, &ic);
}

#define CANDIDATES_FROM "SELECT " ITEM_COLUMNS " FROM blobs b LEFT JOIN documents d ON d.blob_name = b.name" \
	" WHERE b.name > ? AND LEFT(b.name, CHAR_LENGTH(?)) = ? AND ((b.state = 'pending' AND "
static const char sql_list_expired[] =
	CANDIDATES_FROM "b.expires_at < NOW(6))"
	" OR (b.state IN ('sweeping', 'deleting') AND b.lease_until < NOW(6)))"
	" ORDER BY b.name LIMIT ?";
static const char sql_list_idle[] =
	CANDIDATES_FROM "(b.expires_at < NOW(6) OR (b.touched_at < NOW(6) - INTERVAL ? SECOND"
	" AND b.route <> 'direct')))"
	" OR (b.state IN ('sweeping', 'deleting') AND b.lease_until < NOW(6)))"
	" ORDER BY b.name LIMIT ?";

enum db_err
sweep_db_list_candidates(struct db *db, const char *prefix, int64_t idle_cutoff, const char *after,
			 unsigned limit, int (*on_item)(void *, const struct sweep_item *), void *ctx)
{
	struct item_ctx ic;
	struct db_col c[ITEM_NCOLS];
	struct db_param idle[] = { DBP_STR(after), DBP_STR(prefix), DBP_STR(prefix),
				   DBP_U64((uint64_t)idle_cutoff), DBP_U64(limit) };
	struct db_param expired[] = { DBP_STR(after), DBP_STR(prefix), DBP_STR(prefix), DBP_U64(limit) };

	memset(&ic, 0, sizeof ic);
	ic.on_item = on_item;
	ic.ctx = ctx;
	item_cols(&ic, c);
	if (idle_cutoff < 0)
		return db_query(db, sql_list_expired, expired, ARRAY_LEN(expired), c, ITEM_NCOLS,
				item_row, &ic);
	return db_query(db, sql_list_idle, idle, ARRAY_LEN(idle), c, ITEM_NCOLS, item_row, &ic);
}

struct due_ctx {
	char name[DOC_BLOB_NAME_MAX];
	char retire_after[DOC_TIME_MAX];
	int (*on_name)(void *, const char *, const char *);
	void *ctx;
};

static int
due_row(void *arg)
{
	struct due_ctx *dc = arg;

	return dc->on_name(dc->ctx, dc->name, dc->retire_after);
}

/* Keyset on (retire_after, name) so a run visits each due row at most once,
 * even the ones that fail and go back to retired. */
static const char sql_due_first[] =
	"SELECT name, DATE_FORMAT(retire_after, '%Y-%m-%d %H:%i:%s.%f') FROM blobs"
	" WHERE state = 'retired' AND retire_after <= NOW(6) AND LEFT(name, CHAR_LENGTH(?)) = ?"
	" ORDER BY retire_after, name LIMIT ?";
static const char sql_due_next[] =
	"SELECT name, DATE_FORMAT(retire_after, '%Y-%m-%d %H:%i:%s.%f') FROM blobs"
	" WHERE state = 'retired' AND retire_after <= NOW(6) AND LEFT(name, CHAR_LENGTH(?)) = ?"
	" AND (retire_after > ? OR (retire_after = ? AND name > ?))"
	" ORDER BY retire_after, name LIMIT ?";

enum db_err
sweep_db_list_due_retired(struct db *db, const char *prefix, const char *after_time,
			  const char *after_name, unsigned limit, int (*on_name)(void *, const char *, const char *),
			  void *ctx)
{
	struct due_ctx dc;
	struct db_col c[2];

	memset(&dc, 0, sizeof dc);
	dc.on_name = on_name;
	dc.ctx = ctx;
	c[0] = DBC_STR(dc.name);
	c[1] = DBC_STR(dc.retire_after);
	if (after_time[0] == '\0') {
		struct db_param p[] = { DBP_STR(prefix), DBP_STR(prefix), DBP_U64(limit) };

		return db_query(db, sql_due_first, p, ARRAY_LEN(p), c, 2, due_row, &dc);
	} else {
		struct db_param p[] = { DBP_STR(prefix), DBP_STR(prefix), DBP_STR(after_time),
					DBP_STR(after_time), DBP_STR(after_name), DBP_U64(limit) };

		return db_query(db, sql_due_next, p, ARRAY_LEN(p), c, 2, due_row, &dc);
	}
}

static const char sql_drop_claimed_intent[] =
	"DELETE FROM blobs WHERE name = ? AND state = 'sweeping' AND claimed_by = ?";
/* Only the intent's own pending document: a replace intent's document is
 * the ready one, which points at another blob and is left alone. */
static const char sql_drop_intent_doc[] =
	"DELETE FROM documents WHERE id = ? AND blob_name = ? AND status = 'pending'";
static const char sql_drop_intent_keys[] =
	"DELETE FROM idempotency_keys WHERE document_id = ? AND blob_name = ?"
	" AND status_code IS NULL";

static enum db_err
drop_intent_tx(struct db *db, const char *claimer, const struct sweep_item *it)
{
	struct db_param b[] = { DBP_STR(it->name), DBP_STR(claimer) };
	struct db_param d[] = { DBP_U64(it->document_id), DBP_STR(it->name) };
	enum db_err e;

	/* Documents, then blobs, then keys, as every transaction locks them
	 * (a blob-first order here deadlocked against a create's roll forward).
	 * Our claim on the blob row must hold (one row), else all rolls back. */
	e = db_exec(db, sql_drop_intent_doc, d, ARRAY_LEN(d), NULL);
	if (e == DB_OK)
		e = db_exec_one(db, sql_drop_claimed_intent, b, ARRAY_LEN(b));
	if (e == DB_OK)
		e = db_exec(db, sql_drop_intent_keys, d, ARRAY_LEN(d), NULL);
	if (e == DB_OK)
		e = quota_db_settle(db, it->name);
	/* Tests make this run lose certification, as on a Galera node
	 * (tests/integration/sweep.sh). */
	if (e == DB_OK && FAILPOINT("sweep.drop_certification"))
		e = db_set_lost_commit(db);
	return e;
}

static const char sql_claim_still_held[] =
	"SELECT COUNT(*) FROM blobs WHERE name = ? AND state = 'sweeping' AND claimed_by = ?";

/* After a sweeper's COMMIT (drop an intent, roll one forward): does the row
 * still carry our claim?  Both transactions end it (the row is gone, or
 * committed and unclaimed), so a claim still there is a commit that did
 * not take effect: without this check the sweep would count the item
 * handled and, for a drop, delete the blob of a row that still names it. */
static enum db_err
claim_gone_check(struct db *db, const char *claimer, const char *name)
{
	struct db_param p[] = { DBP_STR(name), DBP_STR(claimer) };
	uint64_t n = 0;
	struct db_col c[] = { DBC_U64(&n) };
	enum db_err e = db_query(db, sql_claim_still_held, p, ARRAY_LEN(p), c, 1, NULL, NULL);

	if (e == DB_OK && n > 0) {
		log_error("sweep of %s: COMMIT succeeded but our claim is still there;"
			  " taken as a certification failure", name);
		return db_set_lost_commit(db);
	}
	return e;
}

enum db_err
sweep_db_drop_intent(struct db *db, const char *claimer, const struct sweep_item *it)
{
	DB_IN_TX_CHECKED(db, "sweep.drop_commit_lost", drop_intent_tx(db, claimer, it),
			 claim_gone_check(db, claimer, it->name));
}

static const char sql_forward_doc[] =
	"UPDATE documents SET status = 'ready', size = ?, sha256 = ?, blob_etag = ?, updated_at = NOW(6)"
	" WHERE id = ? AND blob_name = ? AND status = 'pending'";
static const char sql_forward_blob[] =
	"UPDATE blobs SET state = 'committed', size = ?, sha256 = ?, claimed_by = NULL,"
	" lease_until = NULL WHERE name = ? AND state = 'sweeping' AND claimed_by = ?";

static enum db_err
roll_forward_tx(struct db *db, const char *claimer, const struct sweep_item *it, uint64_t size,
		const char *sha256_hex, const char *etag)
{
	struct db_param d[] = { DBP_U64(size), DBP_STR(sha256_hex), DBP_STR(etag),
				DBP_U64(it->document_id), DBP_STR(it->name) };
	struct db_param b[] = { DBP_U64(size), DBP_STR(sha256_hex), DBP_STR(it->name),
				DBP_STR(claimer) };
	enum db_err e;

	e = db_exec_one(db, sql_forward_doc, d, ARRAY_LEN(d));
	if (e == DB_OK)
		e = db_exec_one(db, sql_forward_blob, b, ARRAY_LEN(b));
	if (e == DB_OK)
		e = uploads_record_ready(db, it->name);
	if (e == DB_OK)
		e = idem_record_ready(db, it->name);
	if (e == DB_OK)
		e = docs_assign_ready_seq(db, it->document_id);
	if (e == DB_OK)
		e = events_db_record_ready(db, it->document_id);
	if (e == DB_OK)
		e = quota_db_settle(db, it->name);
	if (e == DB_OK)
		e = quota_db_account(db, it->document_id, (int64_t)size, 1);
	if (e == DB_OK && FAILPOINT("sweep.roll_forward_certification"))
		e = db_set_lost_commit(db);
	return e;
}

enum db_err
sweep_db_roll_forward(struct db *db, const char *claimer, const struct sweep_item *it,
		      uint64_t size, const char *sha256_hex, const char *etag)
{
	DB_IN_TX_CHECKED(db, "sweep.roll_forward_commit_lost",
			 roll_forward_tx(db, claimer, it, size, sha256_hex, etag),
			 claim_gone_check(db, claimer, it->name));
}

/*
 * Finished keys past the TTL, oldest first, through idempotency_created
 * (created_at is the range; the other conditions filter it).  Unfinished
 * keys stay: they go with their intent.
 */
static const char sql_prune_keys[] =
	"DELETE FROM idempotency_keys WHERE created_at < NOW(6) - INTERVAL ? SECOND"
	" AND status_code IS NOT NULL AND LEFT(blob_name, CHAR_LENGTH(?)) = ?"
	" ORDER BY created_at LIMIT ?";
static const char sql_count_expired_keys[] =
	"SELECT COUNT(*) FROM idempotency_keys WHERE created_at < NOW(6) - INTERVAL ? SECOND"
	" AND status_code IS NOT NULL AND LEFT(blob_name, CHAR_LENGTH(?)) = ?";

enum db_err
sweep_db_prune_keys(struct db *db, const char *prefix, unsigned ttl, unsigned limit, uint64_t *pruned)
{
	struct db_param p[] = { DBP_U64(ttl), DBP_STR(prefix), DBP_STR(prefix), DBP_U64(limit) };

	*pruned = 0;
	return db_exec(db, sql_prune_keys, p, ARRAY_LEN(p), pruned);
}

enum db_err
sweep_db_count_expired_keys(struct db *db, const char *prefix, unsigned ttl, uint64_t *n)
{
	struct db_col c[] = { DBC_U64(n) };
	struct db_param p[] = { DBP_U64(ttl), DBP_STR(prefix), DBP_STR(prefix) };

	*n = 0;
	return db_query(db, sql_count_expired_keys, p, ARRAY_LEN(p), c, 1, NULL, NULL);
}

static const char sql_retire_claimed[] =
	"UPDATE blobs SET state = 'retired',"
	" retire_after = GREATEST(NOW(6), " BLOBS_RETIRE_NOT_BEFORE_SAS_SQL "), claimed_by = NULL,"
	" lease_until = NULL WHERE name = ? AND state = 'sweeping' AND claimed_by = ?";

static enum db_err
retire_claimed_tx(struct db *db, const char *claimer, const char *name)
{
	struct db_param p[] = { DBP_STR(name), DBP_STR(claimer) };
	enum db_err e = db_exec_one(db, sql_retire_claimed, p, ARRAY_LEN(p));

	return e == DB_OK ? quota_db_settle(db, name) : e;
}

/* The intent ends here: its [quota] reservation is settled in the same
 * transaction (one statement without [quota]). */
enum db_err
sweep_db_retire_claimed(struct db *db, const char *claimer, const char *name)
{
	if (!quota_db_enabled())
		return retire_claimed_tx(db, claimer, name);
	DB_IN_TX(db, retire_claimed_tx(db, claimer, name));
}

static const char sql_renew_claim[] =
	"UPDATE blobs SET lease_until = NOW(6) + INTERVAL ? SECOND"
	" WHERE name = ? AND state = 'sweeping' AND claimed_by = ? AND lease_until > NOW(6)";

enum db_err
sweep_db_renew_claim(struct db *db, const char *claimer, const char *name, unsigned lease)
{
	struct db_param p[] = { DBP_U64(lease), DBP_STR(name), DBP_STR(claimer) };

	return db_exec_one(db, sql_renew_claim, p, ARRAY_LEN(p));
}

static const char sql_release[] =
	"UPDATE blobs SET state = 'pending', claimed_by = NULL, lease_until = NULL"
	" WHERE name = ? AND state = 'sweeping' AND claimed_by = ?";

enum db_err
sweep_db_release(struct db *db, const char *claimer, const char *name)
{
	struct db_param p[] = { DBP_STR(name), DBP_STR(claimer) };

	return db_exec_one(db, sql_release, p, ARRAY_LEN(p));
}

static const char sql_lock_row[] = "INSERT IGNORE INTO sweep_locks (name) VALUES (?)";
static const char sql_lock_take[] =
	"UPDATE sweep_locks SET holder = ?, lease_until = NOW(6) + INTERVAL ? SECOND, taken_at = NOW(6)"
	" WHERE name = ? AND (holder IS NULL OR lease_until < NOW(6))";
static const char sql_lock_release[] =
	"UPDATE sweep_locks SET holder = NULL, lease_until = NULL WHERE name = ? AND holder = ?";

enum db_err
sweep_db_lock(struct db *db, const char *name, const char *holder, unsigned lease, int *got)
{
	struct db_param row[] = { DBP_STR(name) };
	struct db_param take[] = { DBP_STR(holder), DBP_U64(lease), DBP_STR(name) };
	enum db_err e;

	*got = 0;
	/* The row exists from the first run on; the take is the one
	 * statement that decides, so two runs racing here cannot both win. */
	if ((e = db_exec(db, sql_lock_row, row, ARRAY_LEN(row), NULL)) != DB_OK)
		return e;
	e = db_exec_one(db, sql_lock_take, take, ARRAY_LEN(take));
	if (e == DB_CONFLICT)
		return DB_OK;	/* a live holder has it */
	*got = e == DB_OK;
	return e;
}

enum db_err
sweep_db_unlock(struct db *db, const char *name, const char *holder)
{
	struct db_param p[] = { DBP_STR(name), DBP_STR(holder) };

	return db_exec_one(db, sql_lock_release, p, ARRAY_LEN(p));
}

/* ---- the run history ---- */

static const char sql_run_begin[] =
	"INSERT INTO sweep_runs (host, pid, lock_name, holder) VALUES (?, ?, ?, ?)";
static const char sql_run_finish[] =
	"UPDATE sweep_runs SET finished_at = NOW(6), result = ?, dropped = ?, deleted = ?, purged = ?,"
	" rolled_forward = ?, rolled_back = ?, outbox = ?, taken_over = ?, keys_expired = ?,"
	" problems = ?, deferred = ?, lease_expired = ? WHERE id = ? AND finished_at IS NULL";
static const char sql_run_newest_ok[] =
	"SELECT COALESCE(MAX(id), 0) FROM sweep_runs WHERE result = 'ok'";
/* LIMIT: a first prune after a long while stays one short statement;
 * ORDER BY makes which rows go deterministic (statement-based binlogs). */
static const char sql_run_prune[] =
	"DELETE FROM sweep_runs WHERE started_at < NOW(6) - INTERVAL ? DAY AND id <> ? ORDER BY id LIMIT 10000";

enum db_err
sweep_db_run_begin(struct db *db, const char *host, unsigned pid, const char *lock, const char *holder,
		   uint64_t *id)
{
	struct db_param p[] = { DBP_STR(host), DBP_U64(pid), DBP_STR_OR_NULL(lock), DBP_STR_OR_NULL(holder) };
	enum db_err e;

	*id = 0;
	if ((e = db_exec(db, sql_run_begin, p, ARRAY_LEN(p), NULL)) != DB_OK)
		return e;
	*id = db_last_insert_id(db);
	return DB_OK;
}

enum db_err
sweep_db_run_finish(struct db *db, uint64_t id, enum sweep_result result,
		    const struct sweep_run_counts *c)
{
	struct db_param p[] = {
		DBP_STR(sweep_result_name(result)), DBP_U64(c->dropped), DBP_U64(c->deleted),
		DBP_U64(c->purged), DBP_U64(c->rolled_forward), DBP_U64(c->rolled_back),
		DBP_U64(c->outbox), DBP_U64(c->taken_over), DBP_U64(c->keys_expired),
		DBP_U64(c->problems), DBP_U64(c->deferred), DBP_U64(c->lease_expired), DBP_U64(id),
	};

	assert(result != SWEEP_RESULT_NONE);
	return db_exec_one(db, sql_run_finish, p, ARRAY_LEN(p));
}

enum db_err
sweep_db_run_prune(struct db *db, unsigned days, uint64_t *pruned)
{
	uint64_t keep = 0;
	struct db_col col = DBC_U64(&keep);
	struct db_param p[2];
	enum db_err e;

	*pruned = 0;
	if ((e = db_query(db, sql_run_newest_ok, NULL, 0, &col, 1, NULL, NULL)) != DB_OK)
		return e;
	p[0] = DBP_U64(days);
	p[1] = DBP_U64(keep);
	return db_exec(db, sql_run_prune, p, ARRAY_LEN(p), pruned);
}
