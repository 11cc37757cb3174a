/*
 * Integration test for registry/status_db.c and the sweep run history of
 * registry/sweep_db.c against the test MariaDB.  The figures
 * are counts over whole tables, so the test works in a database of its
 * own (bindery_test_status, migrated here from sql/), where every row is
 * one it planted and every figure has one right value.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry/db.h"
#include "registry/migrate.h"
#include "registry/status_db.h"
#include "registry/sweep_db.h"
#include "tap.h"

#define TEST_DB "bindery_test_status"

static const char sql_drop[] = "DROP DATABASE IF EXISTS " TEST_DB;
static const char sql_create[] = "CREATE DATABASE " TEST_DB;
/* Intents: a pending create 100 s old, a claimed one, a pending direct
 * one; the outbox: one due, one being deleted and not due; one committed
 * blob, which counts nowhere. */
static const char sql_blobs[] =
	"INSERT INTO blobs (name, document_id, purpose, route, state, created_at, retire_after) VALUES"
	" ('p1', 1, 'create', 'server', 'pending', NOW(6) - INTERVAL 100 SECOND, NULL),"
	" ('p2', 2, 'create', 'server', 'sweeping', NOW(6) - INTERVAL 10 SECOND, NULL),"
	" ('p3', 3, 'create', 'direct', 'pending', NOW(6) - INTERVAL 5 SECOND, NULL),"
	" ('r1', 4, 'replace', 'server', 'retired', NOW(6), NOW(6) - INTERVAL 1 SECOND),"
	" ('r2', 5, 'replace', 'server', 'deleting', NOW(6), NOW(6) + INTERVAL 1 HOUR),"
	" ('c1', 6, 'create', 'server', 'committed', NOW(6) - INTERVAL 1 DAY, NULL)";
/* A tus upload in progress (p1) and one whose document is ready (c1). */
static const char sql_uploads[] =
	"INSERT INTO uploads (id, blob_name, document_id, owner, upload_length, content_type, hash_state)"
	" VALUES ('00000000000000000000000000000001', 'p1', 1, 'demo', 10, 'text/plain', 'x'),"
	" ('00000000000000000000000000000002', 'c1', 6, 'demo', 10, 'text/plain', 'x')";
static const char sql_keys[] =
	"INSERT INTO idempotency_keys (owner, idem_key, doc_name, status_code) VALUES"
	" ('demo', 'k1', 'a', 201), ('demo', 'k2', 'b', NULL), ('demo', 'k3', 'c', NULL)";
static const char sql_age_run[] =
	"UPDATE sweep_runs SET started_at = started_at - INTERVAL ? SECOND,"
	" finished_at = finished_at - INTERVAL ? SECOND WHERE id = ?";
static const char sql_old_run[] =
	"INSERT INTO sweep_runs (started_at, finished_at, result, host, pid) VALUES"
	" (NOW(6) - INTERVAL 40 DAY, NOW(6) - INTERVAL 40 DAY, ?, 'old', 1)";
static const char sql_count_runs[] = "SELECT COUNT(*) FROM sweep_runs";
static const char sql_run_row[] =
	"SELECT COALESCE(result, ''), host, pid, COALESCE(lock_name, ''), COALESCE(holder, ''),"
	" dropped, problems, deferred, lease_expired, finished_at IS NOT NULL FROM sweep_runs WHERE id = ?";

static struct db *
connect_as_root(const char *sock, const char *name)
{
	struct db_settings set = { .socket = sock, .user = "root", .name = name, .tls = DB_TLS_OFF };
	struct db *db = NULL;

	if (db_new(&set, &db) != DB_OK || db_ensure(db) != DB_OK)
		tap_bail("cannot connect as root over %s to %s", sock, name);
	return db;
}

static void
run_exec(struct db *db, const char *sql, const struct db_param *p, size_t n, const char *what)
{
	if (db_exec(db, sql, p, n, NULL) != DB_OK)
		tap_bail("%s: %s", what, db_last_error(db));
}

static uint64_t
count_runs(struct db *db)
{
	uint64_t n = 0;
	struct db_col c = DBC_U64(&n);

	if (db_query(db, sql_count_runs, NULL, 0, &c, 1, NULL, NULL) != DB_OK)
		tap_bail("count sweep_runs: %s", db_last_error(db));
	return n;
}

static void
test_empty(struct db *db, unsigned latest)
{
	struct status_figures f;

	tap_ok(status_db_read(db, &f) == DB_OK, "the figures of an empty database read");
	tap_ok(f.pending_intents == 0 && f.oldest_pending_age == -1, "no intents, no oldest age (%lld)",
	       (long long)f.oldest_pending_age);
	tap_ok(f.outbox == 0 && f.outbox_due == 0 && f.uploads_tus == 0 && f.uploads_direct == 0 &&
	       f.idempotency_keys == 0 && f.idempotency_unfinished == 0, "every count is 0");
	tap_ok(f.migrated && f.schema_applied == latest && f.sweep_runs_known, "schema %u applied of %u shipped",
	       f.schema_applied, latest);
	tap_ok(!f.last.present && !f.last_ok.present, "no sweep recorded");
	tap_ok(status_db_sweeper_late(&f.last_ok, 3600), "never having swept is late");
}

static void
test_planted(struct db *db)
{
	struct status_figures f;

	run_exec(db, sql_blobs, NULL, 0, "plant blobs");
	run_exec(db, sql_uploads, NULL, 0, "plant uploads");
	run_exec(db, sql_keys, NULL, 0, "plant keys");
	tap_ok(status_db_read(db, &f) == DB_OK, "the planted figures read");
	tap_ok(f.pending_intents == 3, "pending and sweeping intents count: %llu",
	       (unsigned long long)f.pending_intents);
	tap_ok(f.oldest_pending_age >= 100 && f.oldest_pending_age < 130,
	       "the oldest intent's age is the database's: %llds", (long long)f.oldest_pending_age);
	tap_ok(f.outbox == 2 && f.outbox_due == 1, "outbox 2, due 1 (%llu, %llu)",
	       (unsigned long long)f.outbox, (unsigned long long)f.outbox_due);
	tap_ok(f.uploads_tus == 1, "one unfinished tus upload; a finished one's row is not counted (%llu)",
	       (unsigned long long)f.uploads_tus);
	tap_ok(f.uploads_direct == 1, "one unfinished direct upload (%llu)",
	       (unsigned long long)f.uploads_direct);
	tap_ok(f.idempotency_keys == 3 && f.idempotency_unfinished == 2, "keys 3, unfinished 2 (%llu, %llu)",
	       (unsigned long long)f.idempotency_keys, (unsigned long long)f.idempotency_unfinished);
}

/* One run's row as the history holds it. */
static void
check_row(struct db *db, uint64_t id, const char *want_result, const char *want_lock, uint64_t want_problems)
{
	char result[16], host[256], lock[80], holder[40];
	uint64_t pid = 0, dropped = 0, problems = 0, deferred = 0, lease_expired = 0, finished = 0;
	struct db_param p = DBP_U64(id);
	struct db_col c[] = {
		DBC_STR(result), DBC_STR(host), DBC_U64(&pid), DBC_STR(lock), DBC_STR(holder),
		DBC_U64(&dropped), DBC_U64(&problems), DBC_U64(&deferred), DBC_U64(&lease_expired),
		DBC_U64(&finished),
	};

	if (!tap_ok(db_query(db, sql_run_row, &p, 1, c, ARRAY_LEN(c), NULL, NULL) == DB_OK,
		    "run %llu is recorded", (unsigned long long)id))
		return;
	tap_ok(strcmp(result, want_result) == 0, "run %llu: result '%s' (want '%s')", (unsigned long long)id,
	       result, want_result);
	tap_ok(strcmp(host, "host-a") == 0 && pid == 4242, "run %llu: host and pid", (unsigned long long)id);
	tap_ok(strcmp(lock, want_lock) == 0 && (want_lock[0] == '\0' ? holder[0] == '\0' :
						strcmp(holder, "0123456789abcdef0123456789abcdef") == 0),
	       "run %llu: lock '%s' and its holder", (unsigned long long)id, lock);
	tap_ok(problems == want_problems && (want_result[0] == '\0') == (finished == 0),
	       "run %llu: counts and finished_at as written", (unsigned long long)id);
}

static void
test_runs(struct db *db)
{
	struct sweep_run_counts ok_counts = { .dropped = 2, .problems = 1, .lease_expired = 3 };
	struct sweep_run_counts partial = { .deferred = 4 };
	struct status_figures f;
	struct status_sweep_run last_ok;
	uint64_t id_ok = 0, id_partial = 0, id_running = 0, pruned = 0;
	struct db_param age[3];

	tap_ok(sweep_db_run_begin(db, "host-a", 4242, NULL, NULL, &id_ok) == DB_OK && id_ok > 0,
	       "a run begins (id %llu)", (unsigned long long)id_ok);
	check_row(db, id_ok, "", "", 0);
	tap_ok(sweep_db_run_finish(db, id_ok, SWEEP_RESULT_OK, &ok_counts) == DB_OK, "... and ends ok");
	check_row(db, id_ok, "ok", "", 1);
	tap_ok(sweep_db_run_finish(db, id_ok, SWEEP_RESULT_FAILED, &ok_counts) == DB_CONFLICT,
	       "a finished run cannot be finished again");
	tap_ok(sweep_db_run_begin(db, "host-a", 4242, "nightly", "0123456789abcdef0123456789abcdef",
				  &id_partial) == DB_OK &&
	       sweep_db_run_finish(db, id_partial, SWEEP_RESULT_PARTIAL, &partial) == DB_OK,
	       "a run under --lock ends partial");
	check_row(db, id_partial, "partial", "nightly", 0);
	tap_ok(sweep_db_run_begin(db, "host-a", 4242, NULL, NULL, &id_running) == DB_OK,
	       "a third run is under way");

	tap_ok(status_db_read(db, &f) == DB_OK, "the figures read with three runs");
	tap_ok(f.last.present && f.last.id == id_running && f.last.result == SWEEP_RESULT_NONE &&
	       f.last.finished_at == 0, "the last run is the one under way");
	tap_ok(f.last_ok.present && f.last_ok.id == id_ok && f.last_ok.result == SWEEP_RESULT_OK &&
	       f.last_ok.problems == 1 && strcmp(f.last_ok.host, "host-a") == 0,
	       "the last ok run is the first (partial is no success)");
	tap_ok(f.last_ok.age >= 0 && f.last_ok.age < 30 && f.last_ok.finished_at >= f.last_ok.started_at &&
	       f.last_ok.started_at > 1700000000, "its times are now-ish (age %llds)", (long long)f.last_ok.age);
	tap_ok(!status_db_sweeper_late(&f.last_ok, 3600), "the sweeper is not late");

	/* Cron stopped two hours ago: the ok run is that old. */
	age[0] = DBP_U64(7200);
	age[1] = DBP_U64(7200);
	age[2] = DBP_U64(id_ok);
	run_exec(db, sql_age_run, age, 3, "age the ok run");
	tap_ok(status_db_last_ok(db, &last_ok) == DB_OK && last_ok.present && last_ok.age >= 7200 &&
	       last_ok.age < 7230, "the last ok run is 2 h old (%llds)", (long long)last_ok.age);
	tap_ok(status_db_sweeper_late(&last_ok, 3600), "late after 3600 s");
	tap_ok(!status_db_sweeper_late(&last_ok, 86400), "not late after a day");

	/* Pruning: runs older than the history go, but never the newest ok one. */
	{
		struct db_param failed = DBP_STR("failed"), ok = DBP_STR("ok");

		run_exec(db, sql_old_run, &failed, 1, "an old failed run");
		tap_ok(count_runs(db) == 4, "four runs recorded");
		tap_ok(sweep_db_run_prune(db, 30, &pruned) == DB_OK && pruned == 1 && count_runs(db) == 3,
		       "prune takes the 40-day-old run (%llu)", (unsigned long long)pruned);
		tap_ok(sweep_db_run_prune(db, 30, &pruned) == DB_OK && pruned == 0, "a second prune takes none");
		/* Now the only ok run is the oldest. */
		run_exec(db, sql_old_run, &ok, 1, "an old ok run");
		age[0] = DBP_U64(50 * 86400);
		age[1] = DBP_U64(50 * 86400);
		age[2] = DBP_U64(id_ok);
		run_exec(db, sql_age_run, age, 3, "age the first ok run by 50 days");
		tap_ok(sweep_db_run_prune(db, 30, &pruned) == DB_OK && pruned == 1,
		       "prune keeps the newest ok run, however old (%llu gone)", (unsigned long long)pruned);
		tap_ok(status_db_last_ok(db, &last_ok) == DB_OK && last_ok.present && last_ok.age >= 40 * 86400,
		       "... so the last success still has a date");
	}
}

static void
test_latest(unsigned known)
{
	unsigned latest = 0;
	char err[256];

	tap_ok(migrate_latest(BINDERY_SRC_SQL_DIR, &latest, err, sizeof err) == MIGRATE_OK &&
	       latest == known && latest >= STATUS_DB_SWEEP_RUNS_VERSION,
	       "migrate_latest names the version migrate brought the database to (%u)", latest);
	tap_ok(migrate_latest("/nonexistent-bindery-sql", &latest, err, sizeof err) == MIGRATE_NO_FILES &&
	       latest == 0, "a missing directory is no version: %s", err);
}

/* A database bindery migrate never touched: no table to count from. */
static void
test_never_migrated(struct db *admin, const char *sock)
{
	struct status_figures f;
	struct db *db;

	run_exec(admin, sql_drop, NULL, 0, "drop the scratch database");
	run_exec(admin, sql_create, NULL, 0, "create the scratch database");
	db = connect_as_root(sock, TEST_DB);
	tap_ok(status_db_read(db, &f) == DB_OK, "a database never migrated reads");
	tap_ok(!f.migrated && f.schema_applied == 0 && f.pending_intents == 0 && !f.sweep_runs_known,
	       "... as never migrated, schema 0, nothing counted");
	db_free(db);
}

int
main(void)
{
	const char *sock = getenv("BINDERY_TEST_DB_SOCKET");
	const char *name = getenv("BINDERY_TEST_DB_NAME");
	struct migrate_report rep;
	struct db *admin, *db;
	char err[1024];

	if (sock == NULL || name == NULL)
		tap_missing("no test database (BINDERY_TEST_DB_SOCKET, BINDERY_TEST_DB_NAME)");
	admin = connect_as_root(sock, name);
	run_exec(admin, sql_drop, NULL, 0, "drop the scratch database");
	run_exec(admin, sql_create, NULL, 0, "create the scratch database");
	db = connect_as_root(sock, TEST_DB);
	if (migrate_run(db, BINDERY_SRC_SQL_DIR, 0, &rep, err, sizeof err) != MIGRATE_OK)
		tap_bail("migrate: %s", err);
	tap_ok(rep.current == rep.known, "the scratch database is migrated to %u", rep.current);
	test_empty(db, rep.known);
	test_latest(rep.known);
	test_planted(db);
	test_runs(db);
	db_free(db);
	test_never_migrated(admin, sock);
	run_exec(admin, sql_drop, NULL, 0, "drop the scratch database");
	db_free(admin);
	return tap_done();
}
