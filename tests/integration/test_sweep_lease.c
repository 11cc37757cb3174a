/*
 * test_sweep_lease.c - a sweeper never processes a claimed item after its
 * lease ran out.
 *
 * A batch is claimed with one lease; if working through it takes longer,
 * the items at its tail are past their lease while still waiting, and
 * another sweeper may already have taken them over.  Here the lease is one
 * second and the failpoint sweep.before_item holds the sweeper between its
 * claim and the item's first storage call for longer than that:
 *   - a rival takes the item over meanwhile: the sweeper must not touch it
 *     (its pending blob stays, the rival keeps the row);
 *   - nobody takes it: the sweeper skips it, takes it back in its next round
 *     and sweeps it then.
 * sweep_run runs in this process (so the lease can be one second); the
 * rival is a thread with connections of its own.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "protocol/sweep.h"
#include "registry/sweep_db.h"
#include "tools/sweep_plant.h"
#include "tap.h"

static struct services *S;
static struct bindery_config *CFG;
static char P[160];		/* this run's blob-name prefix */
static char FP_PATH[] = "/tmp/bindery-sweep-lease-XXXXXX";

/* Arm the failpoints file with one line (it disarms itself once fired). */
static void
arm(const char *line)
{
	FILE *f = fopen(FP_PATH, "w");

	if (f == NULL || fputs(line, f) < 0 || fclose(f) != 0)
		tap_bail("write %s", FP_PATH);
}

/* Whether the armed line is gone, i.e. the failpoint fired. */
static int
fired(void)
{
	char line[256];
	FILE *f = fopen(FP_PATH, "r");
	int gone;

	if (f == NULL)
		return 0;
	gone = fgets(line, sizeof line, f) == NULL;
	fclose(f);
	return gone;
}

static const char sql_age[] =
	"UPDATE blobs SET touched_at = NOW(6) - INTERVAL 7200 SECOND WHERE name = ?";

/* A stale create intent whose blob is tagged pending: crash point 2. */
static void
plant_stale_pending(const char *name)
{
	struct db_param p[] = { DBP_STR(name) };
	char doc_name[300];
	uint64_t id = 0;

	snprintf(doc_name, sizeof doc_name, "doc-%s", name);
	if (plant_doc(S->db, doc_name, "pending", name, 0, NULL, &id) != DB_OK ||
	    plant_row(S->db, name, id, "create", "pending", 0, NULL) != DB_OK ||
	    plant_blob(S->blob, name, "abandoned bytes", "pending", NULL) != 0 ||
	    db_exec_one(S->db, sql_age, p, 1) != DB_OK)
		tap_bail("plant %s: %s", name, db_last_error(S->db));
}

static const char sql_claimed_by[] = "SELECT COALESCE(claimed_by, '') FROM blobs WHERE name = ?";

/* The row's claimer, "" without one, "(no row)" without a row. */
static const char *
claimed_by(const char *name, char *out, size_t outlen)
{
	struct db_col c[] = { { DBT_STR, out, outlen, NULL, NULL, 0 } };
	struct db_param p[] = { DBP_STR(name) };

	enum db_err e = db_query(S->db, sql_claimed_by, p, 1, c, 1, NULL, NULL);

	if (e != DB_OK)
		snprintf(out, outlen, "%s", e == DB_NOT_FOUND ? "(no row)" : "(query failed)");
	return out;
}

static enum sweep_err
sweep_prefix(const char *prefix, struct sweep_report *rep)
{
	struct sweep_opts o;

	memset(&o, 0, sizeof o);
	o.cutoff = 3600;
	o.batch = 10;
	o.parallel = 1;
	o.prefix = prefix;
	return sweep_run(S, &o, rep);
}

/* The other sweeper: takes over whatever under its prefix has an expired
 * lease, as soon as there is something, with a long lease of its own. */
struct rival {
	struct services *svc;	/* opened by the main thread, used by the rival's */
	const char *prefix;
	uint64_t taken;
	pthread_t tid;
};

static void *
rival_main(void *arg)
{
	struct rival *rv = arg;
	int i;

	for (i = 0; i < 150 && rv->taken == 0; i++) {
		struct timespec ts = { 0, 100 * 1000 * 1000 };

		if (sweep_db_take_over(rv->svc->db, "rival-sweeper", rv->prefix, 600, 10,
				       &rv->taken) != DB_OK)
			rv->taken = 0;
		if (rv->taken == 0)
			nanosleep(&ts, NULL);
	}
	return NULL;
}

static const char sql_drop_blobs[] = "DELETE FROM blobs WHERE LEFT(name, CHAR_LENGTH(?)) = ?";
static const char sql_drop_docs[] = "DELETE FROM documents WHERE LEFT(blob_name, CHAR_LENGTH(?)) = ?";

static void
clean(const char *prefix, const char *name)
{
	struct db_param p[] = { DBP_STR(prefix), DBP_STR(prefix) };
	struct blob_result r;

	if (db_exec(S->db, sql_drop_blobs, p, 2, NULL) != DB_OK ||
	    db_exec(S->db, sql_drop_docs, p, 2, NULL) != DB_OK ||
	    (blob_delete(S->blob, name, NULL, NULL, &r) != 0 && r.status != BLOB_NOT_FOUND))
		tap_diag("clean-up of %s incomplete", prefix);
}

/* The lease runs out while the item waits, and a rival takes it over. */
static void
test_taken_over_meanwhile(void)
{
	char prefix[200], name[260], by[128], st[32], err[256] = "";
	struct sweep_report rep;
	struct rival rv;
	enum sweep_err e;

	snprintf(prefix, sizeof prefix, "%srival-", P);
	snprintf(name, sizeof name, "%sitem", prefix);
	plant_stale_pending(name);
	arm("sweep.before_item sleep:5000 once\n");
	memset(&rv, 0, sizeof rv);
	rv.prefix = prefix;
	/* Connections are made in this thread: the client libraries' first
	 * use is not thread-safe. */
	if (services_open(CFG, &rv.svc, err, sizeof err) != 0 || db_ensure(rv.svc->db) != DB_OK)
		tap_bail("the rival's connections: %s", err);
	if (pthread_create(&rv.tid, NULL, rival_main, &rv) != 0)
		tap_bail("pthread_create");
	e = sweep_prefix(prefix, &rep);
	pthread_join(rv.tid, NULL);
	services_free(rv.svc);

	TAP_EQ_INT(e, SWEEP_OK, "the sweep ran");
	tap_ok(fired(), "the failpoint held the sweeper past its 1 s lease");
	TAP_EQ_INT(rv.taken, 1, "meanwhile the rival took the expired item over");
	TAP_EQ_INT(rep.lease_expired, 1, "the sweeper saw its lease had run out");
	TAP_EQ_INT(rep.deleted + rep.dropped + rep.purged, 0, "and resolved nothing");
	tap_ok(blob_exists(S->blob, name) == 1 &&
	       strcmp(blob_state(S->blob, name, st, sizeof st), "pending") == 0,
	       "the item's pending blob was not touched (the rival's to delete now)");
	tap_ok(strcmp(claimed_by(name, by, sizeof by), "rival-sweeper") == 0,
	       "the row is still the rival's (%s)", by);
	clean(prefix, name);
}

/* The lease runs out while the item waits and nobody takes it: skipped,
 * then taken back in the next round and swept. */
static void
test_taken_back_next_round(void)
{
	char prefix[200], name[260], by[128];
	struct sweep_report rep;
	enum sweep_err e;

	snprintf(prefix, sizeof prefix, "%salone-", P);
	snprintf(name, sizeof name, "%sitem", prefix);
	plant_stale_pending(name);
	arm("sweep.before_item sleep:2500 once\n");
	e = sweep_prefix(prefix, &rep);

	TAP_EQ_INT(e, SWEEP_OK, "the sweep ran");
	tap_ok(fired(), "the failpoint held the sweeper past its 1 s lease");
	TAP_EQ_INT(rep.lease_expired, 1, "the first round skipped the item whose lease ran out");
	TAP_EQ_INT(rep.taken_over, 1, "the next round took it back");
	TAP_EQ_INT(rep.deleted, 1, "and deleted its pending blob then");
	TAP_EQ_INT(blob_exists(S->blob, name), 0, "the blob is gone");
	tap_ok(strcmp(claimed_by(name, by, sizeof by), "(no row)") == 0, "and so is its row (%s)", by);
	clean(prefix, name);
}

int main(void);

int
main(void)
{
	char narrow[64];
	int fd;

	S = plant_open(&CFG);
	if (S == NULL)
		tap_skip_all("no test stack (BINDERY_CONFIG, BINDERY_TEST_BIN)");
	if (plant_run_prefix("swl", narrow, sizeof narrow) != 0)
		tap_bail("urandom");
	snprintf(P, sizeof P, "%s%s", CFG->storage_prefix, narrow);
	if ((fd = mkstemp(FP_PATH)) < 0)
		tap_bail("mkstemp");
	close(fd);
	/* The failpoints of this process, and only these. */
	unsetenv("BINDERY_FAILPOINTS");
	if (setenv("BINDERY_FAILPOINTS_FILE", FP_PATH, 1) != 0)
		tap_bail("setenv");
	CFG->sweep_lease = 1;

	test_taken_over_meanwhile();
	test_taken_back_next_round();

	plant_remove_failpoints(FP_PATH);
	services_free(S);
	config_free(CFG);
	return tap_done();
}
