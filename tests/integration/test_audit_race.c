/*
 * test_audit_race.c - `bindery audit` reports a finding only if it still
 * holds when it is reported.
 *
 * The audit lists the container first and walks the database after; the
 * protocol moves on in between.  The failpoint audit.after_listing holds the
 * audit between its two reads while this test moves two names on, as live
 * requests would:
 *   - an in-flight create at step 2 (pending row, blob tagged pending): its
 *     tag flips to committed and its document becomes ready.  The listing
 *     saw `pending`, the walk sees a ready document: without a re-check that
 *     is a tag_mismatch, and it must not be reported;
 *   - an abandoned intent a sweep resolves (blob deleted, then rows
 *     dropped): listed, but no rows in the walk: without a re-check an
 *     orphan, and it must not be reported.
 * A real tag mismatch planted beside them must still be reported.  Then the
 * same race with the re-read made to fail (failpoint audit.before_recheck):
 * the first reads' findings come out, which shows the race is real.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "tools/audit_json.h"
#include "tools/sweep_plant.h"
#include "tap.h"

static struct services *S;
static struct bindery_config *CFG;
static char P[160];		/* full blob-name prefix of this run */
static char NARROW[64];		/* the same without the configured prefix */
static char FP_PATH[] = "/tmp/bindery-audit-race-XXXXXX";

static void
arm(const char *lines)
{
	FILE *f = fopen(FP_PATH, "w");

	if (f == NULL || fputs(lines, f) < 0 || fclose(f) != 0)
		tap_bail("write %s", FP_PATH);
}

/* Whether failpoint `name`'s line is gone from the file (a "once" line that fired). */
static int
fired(const char *name)
{
	char line[256];
	size_t n = strlen(name);
	FILE *f = fopen(FP_PATH, "r");
	int there = 0;

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof line, f))
		there |= strncmp(line, name, n) == 0 && line[n] == ' ';
	fclose(f);
	return !there;
}

/* A create between its steps 2 and 3: pending rows, blob tagged pending. */
static void
plant_in_flight(const char *name, struct blob_upload_info *info)
{
	char doc_name[300];
	uint64_t id = 0;

	snprintf(doc_name, sizeof doc_name, "doc-%s", name);
	if (plant_doc(S->db, doc_name, "pending", name, 0, NULL, &id) != DB_OK ||
	    plant_row(S->db, name, id, "create", "pending", 0, NULL) != DB_OK ||
	    plant_blob(S->blob, name, "bytes on their way", "pending", info) != 0)
		tap_bail("plant in-flight %s: %s", name, db_last_error(S->db));
}

/* A finished create whose blob is still tagged pending: a real mismatch. */
static void
plant_real_mismatch(const char *name)
{
	struct blob_upload_info info;
	char doc_name[300];
	uint64_t id = 0;

	snprintf(doc_name, sizeof doc_name, "doc-%s", name);
	if (plant_blob(S->blob, name, "mismatched for real", "pending", &info) != 0 ||
	    plant_doc(S->db, doc_name, "ready", name, info.size, info.sha256_hex, &id) != DB_OK ||
	    plant_row(S->db, name, id, "create", "committed", 0, info.sha256_hex) != DB_OK)
		tap_bail("plant mismatch %s", name);
}

static const char sql_ready_doc[] =
	"UPDATE documents SET status = 'ready', size = ?, sha256 = ? WHERE blob_name = ?"
	" AND status = 'pending'";
static const char sql_commit_row[] =
	"UPDATE blobs SET state = 'committed', size = ?, sha256 = ? WHERE name = ? AND state = 'pending'";
static const char sql_drop_row[] = "DELETE FROM blobs WHERE name = ?";
static const char sql_drop_doc[] = "DELETE FROM documents WHERE blob_name = ?";

/* Steps 3 and 4 of the create, as the request that owns it does them. */
static void
finish_create(const char *name, const struct blob_upload_info *info)
{
	struct db_param p[] = { DBP_U64(info->size), DBP_STR(info->sha256_hex), DBP_STR(name) };

	if (plant_tag(S->blob, name, "committed") != 0 || db_begin(S->db) != DB_OK ||
	    db_exec_one(S->db, sql_ready_doc, p, 3) != DB_OK ||
	    db_exec_one(S->db, sql_commit_row, p, 3) != DB_OK || db_commit(S->db) != DB_OK)
		tap_bail("finish create %s: %s", name, db_last_error(S->db));
}

/* What a sweep does to an abandoned intent: the blob, then the rows. */
static void
sweep_away(const char *name)
{
	struct db_param p[] = { DBP_STR(name) };
	struct blob_result r;

	if (blob_delete(S->blob, name, "\"state\" = 'pending'", NULL, &r) != 0 ||
	    db_exec_one(S->db, sql_drop_row, p, 1) != DB_OK ||
	    db_exec_one(S->db, sql_drop_doc, p, 1) != DB_OK)
		tap_bail("sweep away %s", name);
}

/*
 * Plant an in-flight create and an abandoned intent under prefix, start
 * `bindery audit --json` held after its listing (failpoints `lines`), move
 * both on while it waits, and return its JSON (NULL if it was not JSON).
 */
static json_t *
audit_across_a_race(const char *prefix, const char *lines, char *flip, char *gone, size_t len)
{
	char cmd[1024], out[1 << 16];
	struct blob_upload_info finfo, ginfo;
	json_error_t err;
	json_t *j;
	FILE *fp;
	size_t n;
	int i;

	snprintf(flip, len, "%sin-flight", prefix);
	snprintf(gone, len, "%sswept", prefix);
	plant_in_flight(flip, &finfo);
	plant_in_flight(gone, &ginfo);
	arm(lines);
	snprintf(cmd, sizeof cmd, "BINDERY_LOG_STDERR=1 BINDERY_FAILPOINTS_FILE=%s %s/bindery -c %s"
		 " audit --json --prefix %s%s 2>/dev/null", FP_PATH, getenv("BINDERY_TEST_BIN"),
		 getenv("BINDERY_CONFIG"), NARROW, prefix + strlen(P));
	if ((fp = popen(cmd, "r")) == NULL)
		tap_bail("popen");
	for (i = 0; i < 300 && !fired("audit.after_listing"); i++) {
		struct timespec ts = { 0, 50 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
	tap_ok(fired("audit.after_listing"), "the audit was held between its listing and its walk");
	finish_create(flip, &finfo);
	sweep_away(gone);
	n = fread(out, 1, sizeof out - 1, fp);
	out[n] = '\0';
	(void)pclose(fp);
	j = json_loads(out, 0, &err);
	if (j == NULL)
		tap_diag("not JSON: %s", out);
	return j;
}

static void
test_recheck(void)
{
	char prefix[200], flip[260], gone[260], real[260];
	json_t *j;

	snprintf(prefix, sizeof prefix, "%sone-", P);
	snprintf(real, sizeof real, "%sreal-mismatch", prefix);
	plant_real_mismatch(real);
	j = audit_across_a_race(prefix, "audit.after_listing sleep:8000 once\n", flip, gone, sizeof flip);
	tap_ok(j != NULL, "the audit answered JSON");
	tap_ok(audit_find(j, "tag_mismatch", flip) == NULL,
	       "a create whose tag flipped between the audit's reads is no tag_mismatch");
	tap_ok(audit_find(j, "orphan", gone) == NULL && audit_find(j, "in_flight", gone) == NULL,
	       "an intent swept between the audit's reads is no orphan (nor in flight)");
	tap_ok(audit_find(j, "tag_mismatch", real) != NULL, "a real tag mismatch is still reported");
	TAP_EQ_INT(audit_count(j, "tag_mismatches"), 1, "one tag mismatch, the real one");
	TAP_EQ_INT(audit_count(j, "orphans"), 0, "no orphans");
	json_decref(j);
}

/* The re-read made to fail: what the first reads alone conclude. */
static void
test_without_recheck(void)
{
	char prefix[200], flip[260], gone[260];
	json_t *j;

	snprintf(prefix, sizeof prefix, "%stwo-", P);
	j = audit_across_a_race(prefix, "audit.after_listing sleep:8000 once\n"
				"audit.before_recheck error\n", flip, gone, sizeof flip);
	tap_ok(audit_find(j, "tag_mismatch", flip) != NULL,
	       "without the re-read, the flipped create is reported as a tag_mismatch (the race is real)");
	/* Pending and written just now, a blob no row names is in flight. */
	tap_ok(audit_find(j, "in_flight", gone) != NULL,
	       "without the re-read, the swept intent is reported as a blob no row names (in flight)");
	json_decref(j);
}

int main(void);

int
main(void)
{
	int fd;

	S = plant_open(&CFG);
	if (S == NULL)
		tap_skip_all("no test stack (BINDERY_CONFIG, BINDERY_TEST_BIN)");
	if (plant_run_prefix("aur", NARROW, sizeof NARROW) != 0)
		tap_bail("urandom");
	snprintf(P, sizeof P, "%s%s", CFG->storage_prefix, NARROW);
	if ((fd = mkstemp(FP_PATH)) < 0)
		tap_bail("mkstemp");
	close(fd);

	test_recheck();
	test_without_recheck();

	if (plant_remove_prefix(S, P) != 0)
		tap_diag("clean-up incomplete");
	plant_remove_failpoints(FP_PATH);
	services_free(S);
	config_free(CFG);
	return tap_done();
}
