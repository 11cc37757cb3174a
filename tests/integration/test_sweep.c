/*
 * test_sweep.c - `bindery sweep` against the real stack.  Every state of
 * doc/design.md's table "What a crash leaves" is planted (rows into MariaDB, blobs through the
 * storage client, tagged as the protocol would leave them), then the CLI is
 * run and the rows and blobs are checked.  Also: the guard holding for a
 * corrupted intent, --dry-run changing nothing, the named lock, and two
 * sweepers at once over an 800-item backlog (2,000 under --long), each item
 * handled once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "registry/docs_db.h"
#include "registry/sweep_db.h"
#include "tools/sweep_plant.h"
#include "tap.h"

static struct services *S;
static struct bindery_config *CFG;
static char P[160];	/* this run's blob-name prefix */
static char NARROW[64];	/* the same without the configured prefix (for --prefix) */

static void
nm(char *out, size_t outlen, const char *tag)
{
	snprintf(out, outlen, "%s%s", P, tag);
}

/*
 * Run `bindery -v ARGS --prefix NARROW`: every sweep of this test is narrowed
 * to its own names, so tests sharing the stack never sweep each other's
 * planted states.  The output goes to out.  Returns the exit status.
 */
static int
run_cli(const char *args, char *out, size_t outlen)
{
	char cmd[1024];
	FILE *fp;
	size_t n = 0;
	int st;

	snprintf(cmd, sizeof cmd, "BINDERY_LOG_STDERR=1 %s/bindery -c %s -v %s --prefix %s 2>&1",
		 getenv("BINDERY_TEST_BIN"), getenv("BINDERY_CONFIG"), args, NARROW);
	fp = popen(cmd, "r");
	if (fp == NULL)
		return -1;
	if (out) {
		n = fread(out, 1, outlen - 1, fp);
		out[n] = '\0';
	} else {
		char sink[4096];

		while (fread(sink, 1, sizeof sink, fp) > 0)
			;
	}
	st = pclose(fp);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char sql_row_state[] = "SELECT state FROM blobs WHERE name = ?";
static const char sql_doc_status[] = "SELECT status FROM documents WHERE blob_name = ?";

/* The registry row's state, or "" without a row. */
static const char *
row_state(const char *name, char *out, size_t outlen)
{
	struct db_col c[] = { { DBT_STR, out, outlen, NULL, NULL, 0 } };
	struct db_param p[] = { DBP_STR(name) };

	out[0] = '\0';
	if (db_query(S->db, sql_row_state, p, 1, c, 1, NULL, NULL) != DB_OK)
		out[0] = '\0';
	return out;
}

static const char *
doc_status(const char *blob_name, char *out, size_t outlen)
{
	struct db_col c[] = { { DBT_STR, out, outlen, NULL, NULL, 0 } };
	struct db_param p[] = { DBP_STR(blob_name) };

	out[0] = '\0';
	if (db_query(S->db, sql_doc_status, p, 1, c, 1, NULL, NULL) != DB_OK)
		out[0] = '\0';
	return out;
}

static uint64_t
block_count(const char *name)
{
	struct blob_block_counts bc;
	struct blob_result r;

	if (blob_get_block_list(S->blob, name, &bc, &r) != 0)
		return 0;
	return bc.uncommitted + bc.committed;
}

/* A pending intent, fresh: age_all() makes it stale once its storage state
 * is in place, so no sweeper sees a half-planted state. */
static uint64_t
intent(const char *blob_name, const char *purpose, uint64_t doc_id, const char *sha)
{
	char doc_name[256];
	uint64_t id = doc_id;

	if (strcmp(purpose, "create") == 0) {
		snprintf(doc_name, sizeof doc_name, "doc-%s", blob_name);
		if (plant_doc(S->db, doc_name, "pending", blob_name, 0, NULL, &id) != DB_OK)
			tap_bail("plant document %s: %s", doc_name, db_last_error(S->db));
	}
	if (plant_row(S->db, blob_name, id, purpose, "pending", 0, sha) != DB_OK)
		tap_bail("plant row %s: %s", blob_name, db_last_error(S->db));
	return id;
}

/* A ready document on a committed blob, as a finished create leaves it. */
static uint64_t
ready_doc(const char *blob_name)
{
	struct blob_upload_info info;
	char doc_name[256];
	uint64_t id = 0;

	snprintf(doc_name, sizeof doc_name, "doc-%s", blob_name);
	if (plant_blob(S->blob, blob_name, "ready bytes", "committed", &info) != 0 ||
	    plant_doc(S->db, doc_name, "ready", blob_name, info.size, info.sha256_hex, &id) != DB_OK ||
	    plant_row(S->db, blob_name, id, "create", "committed", 0, info.sha256_hex) != DB_OK)
		tap_bail("plant ready document %s", blob_name);
	return id;
}

static const char sql_expire_lease[] =
	"UPDATE blobs SET state = ?, claimed_by = 'crashed-sweeper',"
	" lease_until = NOW(6) - INTERVAL 5 SECOND WHERE name = ?";
static const char sql_idem[] =
	"INSERT INTO idempotency_keys (owner, idem_key, document_id, blob_name, doc_name)"
	" VALUES ('sweeptest', ?, ?, ?, 'x')";
static const char sql_idem_count[] = "SELECT COUNT(*) FROM idempotency_keys WHERE idem_key = ?";
static const char sql_drop_rows_blobs[] = "DELETE FROM blobs WHERE LEFT(name, CHAR_LENGTH(?)) = ?";
static const char sql_drop_rows_docs[] =
	"DELETE FROM documents WHERE LEFT(blob_name, CHAR_LENGTH(?)) = ?";

static const char sql_age[] =
	"UPDATE blobs SET touched_at = NOW(6) - INTERVAL 7200 SECOND"
	" WHERE state = 'pending' AND LEFT(name, CHAR_LENGTH(?)) = ?";

/* Two hours idle: every pending intent under prefix is now abandoned. */
static void
age_all(const char *prefix)
{
	struct db_param p[] = { DBP_STR(prefix), DBP_STR(prefix) };

	if (db_exec(S->db, sql_age, p, 2, NULL) != DB_OK)
		tap_bail("age rows: %s", db_last_error(S->db));
}

static int
collect_name(void *ctx, const struct blob_list_item *it)
{
	struct blob_result r;

	(void)ctx;
	/* Test clean-up only: the test's own names, no guard needed. */
	if (blob_delete(S->blob, it->name, NULL, NULL, &r) != 0 && r.status != BLOB_NOT_FOUND)
		tap_diag("clean-up of %s: %s", it->name, blob_status_name(r.status));
	return 0;
}

static void
clean_prefix(const char *prefix)
{
	struct db_param p[] = { DBP_STR(prefix), DBP_STR(prefix) };
	struct blob_result r;

	if (db_exec(S->db, sql_drop_rows_blobs, p, 2, NULL) != DB_OK ||
	    db_exec(S->db, sql_drop_rows_docs, p, 2, NULL) != DB_OK)
		tap_diag("clean-up of rows under %s failed", prefix);
	if (blob_list(S->blob, prefix, 0, collect_name, NULL, &r) != 0)
		tap_diag("clean-up listing under %s failed", prefix);
}

static void
test_crash_table(void)
{
	char a[256], b[256], c[256], d[256], e[256], f0[256], f1[256], g[256], h[256], i[256], j[256];
	char st[64], out[8192], sha_wrong[65], key[300];
	struct blob_upload_info dinfo, tmp;
	struct doc doc;
	uint64_t did, fid, hid, n = 1;
	int rc;

	nm(a, sizeof a, "a-no-blob");
	nm(b, sizeof b, "b-staged");
	nm(c, sizeof c, "c-pending");
	nm(d, sizeof d, "d-committed");
	nm(e, sizeof e, "e-committed-mismatch");
	nm(f0, sizeof f0, "f0-replace-old");
	nm(f1, sizeof f1, "f1-replace-new");
	nm(g, sizeof g, "g-outbox");
	nm(h, sizeof h, "h-corrupted");
	nm(i, sizeof i, "i-expired-sweeping");
	nm(j, sizeof j, "j-expired-deleting");

	/* crash after 1, with an unfinished idempotency key pointing at it */
	did = intent(a, "create", 0, NULL);
	snprintf(key, sizeof key, "key-%s", a);
	{
		struct db_param p[] = { DBP_STR(key), DBP_U64(did), DBP_STR(a) };
		uint64_t nk = 0;
		struct db_col cc[] = { DBC_U64(&nk) };

		if (db_exec(S->db, sql_idem, p, 3, NULL) != DB_OK ||
		    db_query(S->db, sql_idem_count, p, 1, cc, 1, NULL, NULL) != DB_OK || nk != 1)
			tap_bail("plant key: %s", db_last_error(S->db));
	}
	/* mid-2: three staged blocks, nothing committed */
	intent(b, "create", 0, NULL);
	if (plant_staged(S->blob, b) != 0)
		tap_bail("stage blocks");
	TAP_EQ_INT(block_count(b), 3, "experiment K: three uncommitted blocks before the sweep");
	/* crash after 2: blob tagged pending */
	intent(c, "create", 0, NULL);
	if (plant_blob(S->blob, c, "pending bytes", "pending", NULL) != 0)
		tap_bail("upload %s", c);
	/* crash after 3 (create): tag flipped, row never marked ready */
	did = intent(d, "create", 0, NULL);
	if (plant_blob(S->blob, d, "committed bytes", "pending", &dinfo) != 0 ||
	    plant_tag(S->blob, d, "committed") != 0)
		tap_bail("upload %s", d);
	/* the same, but the intent recorded another hash: must not roll forward */
	memset(sha_wrong, '0', 64);
	sha_wrong[64] = '\0';
	intent(e, "create", 0, sha_wrong);
	if (plant_blob(S->blob, e, "other bytes", "pending", &tmp) != 0 ||
	    plant_tag(S->blob, e, "committed") != 0)
		tap_bail("upload %s", e);
	/* crash after 3 (replace): new blob committed-tagged, document still on the old */
	fid = ready_doc(f0);
	intent(f1, "replace", fid, NULL);
	if (plant_blob(S->blob, f1, "replacement bytes", "pending", NULL) != 0 ||
	    plant_tag(S->blob, f1, "committed") != 0)
		tap_bail("upload %s", f1);
	/* the outbox: a deleted document's blob, retired and due, tag still committed */
	if (plant_blob(S->blob, g, "deleted bytes", "committed", NULL) != 0 ||
	    plant_row(S->db, g, 999999999, "create", "retired", 0, NULL) != DB_OK)
		tap_bail("plant outbox %s", g);
	/* a corrupted intent: the registry says pending, a ready document uses the name */
	hid = ready_doc(h);
	{
		static const char sql[] = "UPDATE blobs SET state = 'pending',"
					  " touched_at = NOW(6) - INTERVAL 7200 SECOND WHERE name = ?";
		struct db_param p[] = { DBP_STR(h) };

		if (db_exec_one(S->db, sql, p, 1) != DB_OK)
			tap_bail("corrupt %s", h);
	}
	/* a sweeper that died holding claims: one intent, one outbox row */
	intent(i, "create", 0, NULL);
	if (plant_blob(S->blob, i, "claimed bytes", "pending", NULL) != 0)
		tap_bail("upload %s", i);
	{
		struct db_param p[] = { DBP_STR("sweeping"), DBP_STR(i) };

		if (db_exec_one(S->db, sql_expire_lease, p, 2) != DB_OK)
			tap_bail("expire %s", i);
	}
	if (plant_blob(S->blob, j, "half-deleted bytes", "retired", NULL) != 0 ||
	    plant_row(S->db, j, 999999998, "create", "retired", 0, NULL) != DB_OK)
		tap_bail("plant %s", j);
	{
		struct db_param p[] = { DBP_STR("deleting"), DBP_STR(j) };

		if (db_exec_one(S->db, sql_expire_lease, p, 2) != DB_OK)
			tap_bail("expire %s", j);
	}

	age_all(P);
	rc = run_cli("sweep --older-than 3600", out, sizeof out);
	TAP_EQ_INT(rc, 1, "sweep exits 1: two intents are left for a human");
	tap_ok(strstr(out, "sweep: ") != NULL, "-v prints the summary line");
	tap_diag("%s", out);

	tap_ok(!*row_state(a, st, sizeof st) && !*doc_status(a, st, sizeof st),
	       "after 1: rows dropped");
	{
		struct db_col cc[] = { DBC_U64(&n) };
		struct db_param p[] = { DBP_STR(key) };

		if (db_query(S->db, sql_idem_count, p, 1, cc, 1, NULL, NULL) != DB_OK)
			n = 99;
		TAP_EQ_INT(n, 0, "after 1: the unfinished idempotency key went with the intent");
	}
	tap_ok(!*row_state(b, st, sizeof st), "mid-2: rows dropped");
	TAP_EQ_INT(block_count(b), 0, "mid-2: experiment K goes from 3 staged blocks to 0");
	TAP_EQ_INT(blob_exists(S->blob, b), 0, "mid-2: no blob left by the purge");
	tap_ok(!*row_state(c, st, sizeof st), "after 2: rows dropped");
	TAP_EQ_INT(blob_exists(S->blob, c), 0, "after 2: pending blob deleted");

	tap_ok(strcmp(row_state(d, st, sizeof st), "committed") == 0, "after 3 (create): registry committed");
	memset(&doc, 0, sizeof doc);
	tap_ok(docs_get(S->db, did, &doc) == DB_OK && doc.status == DOC_STATUS_READY,
	       "after 3 (create): document rolled forward to ready");
	tap_ok(strcmp(doc.sha256, dinfo.sha256_hex) == 0 && doc.size == dinfo.size,
	       "after 3 (create): size and SHA-256 from the blob's metadata");
	TAP_EQ_INT(blob_exists(S->blob, d), 1, "after 3 (create): blob kept");

	tap_ok(strcmp(row_state(e, st, sizeof st), "sweeping") == 0,
	       "mismatched metadata: intent left, still claimed");
	tap_ok(strcmp(doc_status(e, st, sizeof st), "pending") == 0, "mismatched metadata: not ready");
	tap_ok(blob_exists(S->blob, e) == 1 &&
	       strcmp(blob_state(S->blob, e, st, sizeof st), "committed") == 0,
	       "guard: the committed blob survived a sweep pointed at it (412)");

	tap_ok(!*row_state(f1, st, sizeof st), "after 3 (replace): new blob's row dropped");
	TAP_EQ_INT(blob_exists(S->blob, f1), 0, "after 3 (replace): rolled back, new blob deleted");
	tap_ok(docs_get(S->db, fid, &doc) == DB_OK && doc.status == DOC_STATUS_READY &&
	       strcmp(doc.blob_name, f0) == 0, "after 3 (replace): document still on its old blob");
	TAP_EQ_INT(blob_exists(S->blob, f0), 1, "after 3 (replace): old blob kept");

	tap_ok(!*row_state(g, st, sizeof st), "outbox: row dropped");
	TAP_EQ_INT(blob_exists(S->blob, g), 0, "outbox: blob deleted");

	tap_ok(docs_get(S->db, hid, &doc) == DB_OK && doc.status == DOC_STATUS_READY,
	       "corrupted intent: document still ready");
	tap_ok(blob_exists(S->blob, h) == 1 &&
	       strcmp(blob_state(S->blob, h, st, sizeof st), "committed") == 0,
	       "corrupted intent: the referenced blob survived");

	tap_ok(!*row_state(i, st, sizeof st) && blob_exists(S->blob, i) == 0,
	       "expired sweeping lease: taken over and swept");
	tap_ok(!*row_state(j, st, sizeof st) && blob_exists(S->blob, j) == 0,
	       "expired deleting lease: back to the outbox and drained");

	/* Hand the two problems back so later runs (and other tests) stay clean. */
	clean_prefix(P);
	rc = run_cli("sweep --older-than 3600", out, sizeof out);
	TAP_EQ_INT(rc, 0, "a sweep with nothing to do exits 0");
	rc = run_cli("sweep --older-than 1", out, sizeof out);
	tap_ok(rc == 78 && strstr(out, "--force") != NULL,
	       "a cutoff below twice the request deadline is refused with a clear error");
}

static void
test_dry_run(void)
{
	char a[300], c[300], d[300], prefix[200], out[8192];
	uint64_t rows0, blobs0;
	int rc;

	snprintf(prefix, sizeof prefix, "%sdry-", P);
	snprintf(a, sizeof a, "%sa", prefix);
	snprintf(c, sizeof c, "%sc", prefix);
	snprintf(d, sizeof d, "%sd", prefix);
	intent(a, "create", 0, NULL);
	intent(c, "create", 0, NULL);
	intent(d, "create", 0, NULL);
	if (plant_blob(S->blob, c, "c", "pending", NULL) != 0 ||
	    plant_blob(S->blob, d, "d", "pending", NULL) != 0 || plant_tag(S->blob, d, "committed") != 0)
		tap_bail("dry-run plant");
	age_all(prefix);
	rows0 = count_rows(S->db, prefix);
	blobs0 = count_blobs(S->blob, prefix);
	rc = run_cli("sweep --older-than 3600 --dry-run", out, sizeof out);
	TAP_EQ_INT(rc, 0, "--dry-run exits 0");
	TAP_EQ_INT(count_rows(S->db, prefix), rows0, "--dry-run: row count unchanged");
	TAP_EQ_INT(count_blobs(S->blob, prefix), blobs0, "--dry-run: blob count unchanged");
	tap_ok(strstr(out, "would drop") && strstr(out, "would delete-pending-then-drop") &&
	       strstr(out, "would roll-forward"), "--dry-run prints what it would do");
	rc = run_cli("sweep --older-than 3600", out, sizeof out);
	TAP_EQ_INT(rc, 0, "the real sweep after it exits 0");
	TAP_EQ_INT(count_rows(S->db, prefix), 2, "only the rolled-forward document and its row remain");
	clean_prefix(prefix);
}

/* Is the lock row held by holder now ("" for: by nobody)? */
static int
lock_held_by(const char *lock, const char *holder)
{
	char now[40] = "";
	struct db_param p[] = { DBP_STR(lock) };
	struct db_col c[] = { DBC_STR(now) };

	if (db_query(S->db, "SELECT COALESCE(holder, '') FROM sweep_locks WHERE name = ?", p, 1, c, 1,
		     NULL, NULL) != DB_OK)
		tap_bail("read the lock row");
	return strcmp(now, holder) == 0;
}

static void
lock_age(const char *lock)
{
	struct db_param p[] = { DBP_STR(lock) };

	if (db_exec(S->db, "UPDATE sweep_locks SET lease_until = NOW(6) - INTERVAL 1 SECOND WHERE name = ?",
		    p, 1, NULL) != DB_OK)
		tap_bail("age the lock");
}

static void
test_lock(void)
{
	char lock[96], args[256], out[4096];
	int got = 0, rc;

	snprintf(lock, sizeof lock, "swt-lock-%ld", (long)getpid());
	snprintf(args, sizeof args, "sweep --older-than 3600 --lock %s", lock);
	if (sweep_db_lock(S->db, lock, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 600, &got) != DB_OK || !got)
		tap_bail("take the lock");
	if (sweep_db_lock(S->db, lock, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", 600, &got) != DB_OK)
		tap_bail("try the lock again");
	TAP_EQ_INT(got, 0, "a held lock row is not taken by a second holder");
	rc = run_cli(args, out, sizeof out);
	TAP_EQ_INT(rc, 75, "--lock held by another run: exit 75");
	tap_ok(strstr(out, "held") != NULL, "and -v says why");
	tap_ok(lock_held_by(lock, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"), "... and the holder keeps it");
	lock_age(lock);
	rc = run_cli(args, out, sizeof out);
	TAP_EQ_INT(rc, 0, "a holder whose lease ran out (a dead sweeper): the next run takes over and sweeps");
	tap_ok(lock_held_by(lock, ""), "the run lets go of the lock when it ends");
	TAP_EQ_INT(sweep_db_unlock(S->db, lock, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"), DB_CONFLICT,
		   "the old holder's late release touches nothing");
	rc = run_cli(args, out, sizeof out);
	TAP_EQ_INT(rc, 0, "--lock free: the sweep runs");
}

/* "N deleted" etc. from the summary line. */
static uint64_t
field(const char *out, const char *what)
{
	const char *p = strstr(out, what);
	uint64_t v = 0;

	if (p == NULL)
		return (uint64_t)-1;
	while (p > out && p[-1] == ' ')
		p--;
	while (p > out && p[-1] >= '0' && p[-1] <= '9')
		p--;
	while (*p >= '0' && *p <= '9')
		v = v * 10 + (uint64_t)(*p++ - '0');
	return v;
}

static void
test_two_sweepers(void)
{
	/* 800 items in batches of 50 still interleave the two runs' claims
	 * dozens of times; --long plants the 2,000 of the cluster test. */
	const int N = getenv("BINDERY_TEST_LONG") != NULL ? 2000 : 800;
	char prefix[sizeof P + 8], name[sizeof P + 32], out1[8192], out2[8192], cmd[1024];
	struct timespec t0, t1;
	FILE *p1, *p2;
	size_t n1, n2;
	int s1, s2, k;

	snprintf(prefix, sizeof prefix, "%srace-", P);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (db_begin(S->db) != DB_OK)
		tap_bail("begin");
	for (k = 0; k < N; k++) {
		snprintf(name, sizeof name, "%s%05d", prefix, k);
		intent(name, "create", 0, NULL);
	}
	if (db_commit(S->db) != DB_OK)
		tap_bail("commit");
	for (k = 0; k < N; k++) {
		snprintf(name, sizeof name, "%s%05d", prefix, k);
		if (plant_blob(S->blob, name, "race", "pending", NULL) != 0)
			tap_bail("upload %s", name);
	}
	age_all(prefix);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	tap_diag("planted %d intents with blobs in %.1fs", N,
		 (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	TAP_EQ_INT(count_blobs(S->blob, prefix), N, "backlog planted");

	/* Small batches so the two runs interleave their claims many times. */
	snprintf(cmd, sizeof cmd, "BINDERY_LOG_STDERR=1 %s/bindery -c %s -v sweep --older-than 3600"
		 " --batch 50 --parallel 4 --prefix %srace- 2>&1", getenv("BINDERY_TEST_BIN"),
		 getenv("BINDERY_CONFIG"), NARROW);
	p1 = popen(cmd, "r");
	p2 = popen(cmd, "r");
	if (p1 == NULL || p2 == NULL)
		tap_bail("popen");
	n1 = fread(out1, 1, sizeof out1 - 1, p1);
	n2 = fread(out2, 1, sizeof out2 - 1, p2);
	out1[n1] = out2[n2] = '\0';
	s1 = pclose(p1);
	s2 = pclose(p2);
	tap_ok(WIFEXITED(s1) && WEXITSTATUS(s1) == 0 && WIFEXITED(s2) && WEXITSTATUS(s2) == 0,
	       "both sweepers exit 0");
	tap_diag("sweeper 1: %s", out1);
	tap_diag("sweeper 2: %s", out2);
	tap_ok(field(out1, " deleted") > 0 && field(out2, " deleted") > 0,
	       "both sweepers did part of the work (%llu + %llu)",
	       (unsigned long long)field(out1, " deleted"), (unsigned long long)field(out2, " deleted"));
	TAP_EQ_INT(field(out1, " deleted") + field(out2, " deleted"), N,
		   "every item deleted exactly once between them");
	TAP_EQ_INT(field(out1, " dropped") + field(out2, " dropped") + field(out1, " deferred") +
		   field(out2, " deferred") + field(out1, " problems") + field(out2, " problems"), 0,
		   "no item found already gone, deferred or in trouble");
	TAP_EQ_INT(count_rows(S->db, prefix), 0, "no rows of the backlog left");
	TAP_EQ_INT(count_blobs(S->blob, prefix), 0, "no blobs of the backlog left");
}

int main(void);

int
main(void)
{
	S = plant_open(&CFG);
	if (S == NULL)
		tap_missing("no test stack (BINDERY_CONFIG, BINDERY_TEST_BIN)");
	if (plant_run_prefix("swt", NARROW, sizeof NARROW) != 0)
		tap_bail("urandom");
	snprintf(P, sizeof P, "%s%s", CFG->storage_prefix, NARROW);
	test_crash_table();
	test_dry_run();
	test_lock();
	if (getenv("BINDERY_SWEEP_SKIP_RACE") == NULL)
		test_two_sweepers();
	services_free(S);
	config_free(CFG);
	return tap_done();
}
