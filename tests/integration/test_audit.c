/*
 * test_audit.c - `bindery audit` against the real stack: planted orphans
 * (tagged and untagged), dangling documents (missing blob, wrong size), tag
 * mismatches, a committed blob no document uses and a stale intent with
 * staged blocks are each found; `audit --repair` deletes the orphans only
 * once they are older than --min-age, re-tags the mismatch toward the
 * database, and touches no blob a ready document references.  Every name
 * carries this run's prefix and the audit is narrowed to it (--prefix), so
 * other tests' blobs in the shared container are never looked at.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "tools/audit_json.h"
#include "tools/sweep_plant.h"
#include "tap.h"

static struct services *S;
static struct bindery_config *CFG;
static char P[96];	/* full blob-name prefix of this run */
static char NARROW[64];	/* the same without the configured prefix */

static int
run_audit(const char *args, json_t **out)
{
	char cmd[1024], buf[1 << 16];
	json_error_t err;
	FILE *fp;
	size_t n;
	int st;

	snprintf(cmd, sizeof cmd, "BINDERY_LOG_STDERR=1 %s/bindery -c %s audit --prefix %s %s",
		 getenv("BINDERY_TEST_BIN"), getenv("BINDERY_CONFIG"), NARROW, args);
	fp = popen(cmd, "r");
	if (fp == NULL)
		return -1;
	n = fread(buf, 1, sizeof buf - 1, fp);
	buf[n] = '\0';
	st = pclose(fp);
	if (out) {
		*out = json_loads(buf, 0, &err);
		if (*out == NULL)
			tap_diag("not JSON: %s", buf);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void
plant_ready(const char *blob_name, const char *bytes, const char *tag, int doc_size_off)
{
	struct blob_upload_info info;
	char doc_name[300];
	uint64_t id;

	snprintf(doc_name, sizeof doc_name, "doc-%s", blob_name);
	if (plant_blob(S->blob, blob_name, bytes, tag, &info) != 0 ||
	    plant_doc(S->db, doc_name, "ready", blob_name, info.size + (uint64_t)doc_size_off,
		      info.sha256_hex, &id) != DB_OK ||
	    plant_row(S->db, blob_name, id, "create", "committed", 0, info.sha256_hex) != DB_OK)
		tap_bail("plant ready %s", blob_name);
}

int main(void);

int
main(void)
{
	char orphan_p[256], orphan_f[256], orphan_n[256], ok[256], gone[256], sized[256], mism[256], unref[256],
	    stale[256], resting[256], st[32];
	json_t *j = NULL;
	uint64_t id;
	int rc;

	S = plant_open(&CFG);
	if (S == NULL)
		tap_missing("no test stack (BINDERY_CONFIG, BINDERY_TEST_BIN)");
	if (plant_run_prefix("aud", NARROW, sizeof NARROW) != 0)
		tap_bail("urandom");
	snprintf(P, sizeof P, "%s%s", CFG->storage_prefix, NARROW);
#define NM(v, tag) snprintf(v, sizeof v, "%s%s", P, tag)
	NM(orphan_p, "orphan-retired");
	NM(orphan_f, "orphan-pending");
	NM(orphan_n, "orphan-untagged");
	NM(ok, "ready-ok");
	NM(gone, "ready-missing");
	NM(sized, "ready-wrong-size");
	NM(mism, "ready-tagged-pending");
	NM(unref, "committed-unreferenced");
	NM(stale, "stale-staged");
	NM(resting, "resting-upload");

	/* A pending blob no row names, written just now: in flight (its
	 * writer, or the sweep after sweep_cutoff, removes it). */
	if (plant_blob(S->blob, orphan_p, "orphan", "retired", NULL) != 0 ||
	    plant_blob(S->blob, orphan_f, "orphan in flight", "pending", NULL) != 0 ||
	    plant_blob(S->blob, orphan_n, "orphan without tags", NULL, NULL) != 0)
		tap_bail("plant orphans");
	plant_ready(ok, "fine bytes", "committed", 0);
	plant_ready(sized, "sized bytes", "committed", 5);
	plant_ready(mism, "mismatched tag", "pending", 0);
	if (plant_doc(S->db, "doc-missing", "ready", gone, 3, "00", &id) != DB_OK ||
	    plant_row(S->db, gone, id, "create", "committed", 0, NULL) != DB_OK)
		tap_bail("plant dangling");
	if (plant_blob(S->blob, unref, "nobody's", "committed", NULL) != 0 ||
	    plant_row(S->db, unref, 999999997, "create", "committed", 0, NULL) != DB_OK)
		tap_bail("plant unreferenced");
	if (plant_doc(S->db, "doc-stale", "pending", stale, 0, NULL, &id) != DB_OK ||
	    plant_row(S->db, stale, id, "create", "pending", 0, NULL) != DB_OK ||
	    plant_staged(S->blob, stale) != 0)
		tap_bail("plant stale");
	/* Stale only now that its blocks are staged: a sweeper elsewhere in
	 * the stack must not catch it half-planted. */
	{
		static const char sql[] = "UPDATE blobs SET touched_at = NOW(6) - INTERVAL 7200 SECOND,"
					  " expires_at = NOW(6) - INTERVAL 6300 SECOND WHERE name = ?";
		struct db_param p[] = { DBP_STR(stale) };

		if (db_exec_one(S->db, sql, p, 1) != DB_OK)
			tap_bail("age %s", stale);
	}

	/* A resumable upload idle past sweep_cutoff whose lease (a day) holds. */
	if (plant_doc(S->db, "doc-resting", "pending", resting, 0, NULL, &id) != DB_OK ||
	    plant_row(S->db, resting, id, "create", "pending", 7200, NULL) != DB_OK)
		tap_bail("plant resting");
	{
		static const char sql[] = "UPDATE blobs SET expires_at = NOW(6) + INTERVAL 1 DAY WHERE name = ?";
		struct db_param p[] = { DBP_STR(resting) };

		if (db_exec_one(S->db, sql, p, 1) != DB_OK)
			tap_bail("lease %s", resting);
	}

	rc = run_audit("--json", &j);
	TAP_EQ_INT(rc, 2, "a dangling document: exit 2");
	tap_ok(j && json_is_false(json_object_get(j, "clean")), "--json: clean is false");
	TAP_EQ_INT(audit_count(j, "blobs_listed"), 7, "seven blobs listed under the prefix");
	tap_ok(audit_find(j, "orphan", orphan_p) != NULL, "orphan tagged retired found");
	tap_ok(audit_find(j, "in_flight", orphan_f) != NULL && audit_find(j, "orphan", orphan_f) == NULL,
	       "a pending blob no row names, younger than sweep_cutoff: in flight, not an orphan");
	TAP_EQ_INT(audit_count(j, "in_flight"), 1, "one in flight");
	tap_ok(audit_find(j, "orphan", orphan_n) != NULL, "orphan without tags found");
	TAP_EQ_INT(audit_count(j, "orphans"), 2, "two orphans");
	tap_ok(audit_find(j, "dangling", gone) != NULL, "dangling: ready document, blob missing");
	tap_ok(audit_find(j, "dangling", sized) != NULL, "dangling: size mismatch");
	TAP_EQ_INT(audit_count(j, "dangling"), 2, "two dangling documents");
	tap_ok(audit_find(j, "tag_mismatch", mism) != NULL, "tag mismatch: ready document's blob pending");
	tap_ok(audit_find(j, "committed_unreferenced", unref) != NULL,
	       "committed blob with no ready document");
	tap_ok(audit_find(j, "stale_pending", stale) != NULL, "stale pending intent");
	tap_ok(audit_find(j, "stale_pending", resting) == NULL,
	       "an intent idle past sweep_cutoff under a live lease (a resting upload) is not stale");
	tap_ok(audit_find(j, "uncommitted_blocks", stale) != NULL, "its staged uncommitted blocks");
	tap_ok(json_object_size(json_object_get(j, "counts")) >= 9, "counts for machines");
	{
		size_t i;
		json_t *f;
		int clean_named = 0;

		json_array_foreach(json_object_get(j, "findings"), i, f)
			clean_named |= strcmp(json_string_value(json_object_get(f, "name")), ok) == 0;
		tap_ok(!clean_named, "the consistent document is not reported");
	}
	json_decref(j);

	rc = run_audit("--json --repair --min-age 3600", &j);
	TAP_EQ_INT(audit_count(j, "orphans"), 2, "--min-age 3600: orphans still reported");
	tap_ok(blob_exists(S->blob, orphan_p) == 1 && blob_exists(S->blob, orphan_n) == 1,
	       "--min-age 3600: fresh orphans are not deleted");
	tap_ok(strcmp(blob_state(S->blob, mism, st, sizeof st), "committed") == 0,
	       "--repair: the ready document's blob is re-tagged committed");
	json_decref(j);

	sleep(2);
	rc = run_audit("--json --repair --min-age 1", &j);
	TAP_EQ_INT(rc, 2, "the dangling documents remain (repair never invents bytes)");
	tap_ok(blob_exists(S->blob, orphan_p) == 0, "--repair: tagged orphan deleted (tag + ETag guard)");
	tap_ok(blob_exists(S->blob, orphan_n) == 0, "--repair: untagged orphan deleted (ETag guard)");
	tap_ok(blob_exists(S->blob, orphan_f) == 1, "--repair: a blob in flight is left");
	tap_ok(blob_exists(S->blob, ok) == 1 && blob_exists(S->blob, sized) == 1 &&
	       blob_exists(S->blob, mism) == 1, "--repair: no blob a ready document references was touched");
	tap_ok(blob_exists(S->blob, unref) == 1 &&
	       strcmp(blob_state(S->blob, unref, st, sizeof st), "committed") == 0,
	       "--repair: a committed blob is never re-tagged or deleted");
	json_decref(j);

	rc = run_audit("--json", &j);
	TAP_EQ_INT(audit_count(j, "orphans") + audit_count(j, "tag_mismatches"), 0,
		   "after repair: no orphans and no tag mismatches");
	json_decref(j);

	/* Clean up: the staged blocks, then rows, then whatever blobs remain. */
	{
		struct blob_result r;

		if (blob_purge_uncommitted(S->blob, stale, &r) != 0 || plant_remove_prefix(S, P) != 0)
			tap_diag("clean-up incomplete");
	}
	rc = run_audit("", NULL);
	TAP_EQ_INT(rc, 0, "an empty prefix audits clean: exit 0, silent");
	services_free(S);
	config_free(CFG);
	return tap_done();
}
