/*
 * test_fencing.c - every fenced transition of a registry row (doc/design.md,
 * "The claim and the fence") against the real MariaDB.  A row is created
 * by one attempt (holder H0), taken over by a resume (H1) or claimed by a
 * sweeper, and then the stale holder tries each transition it has: it must
 * get zero rows (DB_CONFLICT) and change nothing, while the live holder's
 * same transition succeeds.  Also: a resume cannot take a fresh row, a
 * sweeper's claim cannot take a row whose holder is live, and replace and
 * delete commit only on the version they read.  No storage is touched:
 * these are the registry's statements alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry/blobs_db.h"
#include "registry/docs_db.h"
#include "registry/sweep_db.h"
#include "tools/sweep_plant.h"
#include "tap.h"

static struct services *S;
static struct bindery_config *CFG;
static char P[160];		/* this run's blob-name prefix */
static char RUN[64];		/* the same without the configured prefix */

#define SHA_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define SHA_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

static void
nm(char *out, size_t outlen, const char *tag)
{
	snprintf(out, outlen, "%s%s", P, tag);
}

/* A registry row as the test sees it: "STATE HOLDER", "none" without a row. */
static const char *
row(const char *name, char *out, size_t outlen)
{
	struct blob_row b;
	enum db_err e = blobs_get(S->db, name, &b);

	if (e == DB_NOT_FOUND)
		snprintf(out, outlen, "none");
	else if (e != DB_OK)
		snprintf(out, outlen, "error %s", db_err_name(e));
	else
		snprintf(out, outlen, "%s %s", registry_state_name(b.state), b.holder);
	return out;
}

static int
row_is(const char *name, const char *state, const char *holder)
{
	char got[256], want[256];

	snprintf(want, sizeof want, "%s %s", state, holder);
	if (strcmp(row(name, got, sizeof got), want) == 0)
		return 1;
	tap_diag("row %s: got '%s', want '%s'", name, got, want);
	return 0;
}

/* "STATUS VERSION BLOB" of a document, "none" without one. */
static const char *
doc_line(uint64_t id, char *out, size_t outlen)
{
	struct doc d;
	enum db_err e = docs_get(S->db, id, &d);

	if (e != DB_OK)
		snprintf(out, outlen, "%s", e == DB_NOT_FOUND ? "none" : db_err_name(e));
	else
		snprintf(out, outlen, "%s %llu %s", doc_status_name(d.status),
			 (unsigned long long)d.version, d.blob_name);
	return out;
}

static int
doc_is(uint64_t id, const char *status, unsigned version, const char *blob)
{
	char got[512], want[512];

	snprintf(want, sizeof want, "%s %u %s", status, version, blob);
	if (strcmp(doc_line(id, got, sizeof got), want) == 0)
		return 1;
	tap_diag("document %llu: got '%s', want '%s'", (unsigned long long)id, got, want);
	return 0;
}

/* A lease of a minute for holder h. */
#define LEASE(h) (&(struct lease){ (h), 60, 0 })

static const char sql_age[] =
	"UPDATE blobs SET touched_at = NOW(6) - INTERVAL 1 DAY, expires_at = NOW(6) - INTERVAL 1 SECOND"
	" WHERE name = ?";

static void
age(const char *name)
{
	struct db_param p[] = { DBP_STR(name) };

	if (db_exec_one(S->db, sql_age, p, 1) != DB_OK)
		tap_bail("age %s: %s", name, db_last_error(S->db));
}

static uint64_t
new_intent(const char *tag, const char *blob, const char *holder)
{
	char doc_name[256];
	char created[DOC_TIME_MAX];
	uint64_t id = 0;
	enum db_err e;

	snprintf(doc_name, sizeof doc_name, "fence-%s%s", RUN, tag);
	e = docs_create_intent(S->db, span_from_cstr(doc_name), "fencetest", "text/plain", blob,
			       LEASE(holder), NULL, &id, created);
	if (e != DB_OK)
		tap_bail("create intent %s: %s", blob, db_err_name(e));
	return id;
}

/* A create intent taken over by a resume: H0's transitions all lose. */
static uint64_t
test_resume_fences_out(char *a, size_t alen)
{
	uint64_t doc;

	nm(a, alen, "a");
	doc = new_intent("a", a, "H0");
	tap_ok(row_is(a, "pending", "H0"), "create: the intent's row is pending, held by its creator");
	tap_ok(blobs_take_over_stale(S->db, a, LEASE("H1")) == DB_CONFLICT && row_is(a, "pending", "H0"),
	       "resume: a fresh row (its holder is live) cannot be taken over");
	age(a);
	tap_ok(blobs_take_over_stale(S->db, a, LEASE("H1")) == DB_OK && row_is(a, "pending", "H1"),
	       "resume: an expired row is taken over, with the resumer as its holder");
	tap_ok(blobs_take_over_stale(S->db, a, LEASE("H2")) == DB_CONFLICT && row_is(a, "pending", "H1"),
	       "resume: a second resumer finds the row renewed and gets zero rows");

	tap_ok(blobs_renew_held(S->db, a, LEASE("H0")) == DB_CONFLICT,
	       "stale holder: renew (heartbeat) touches zero rows -> DB_CONFLICT");
	tap_ok(docs_mark_ready(S->db, doc, a, "H0", 3, SHA_A, "\"0xA\"", READY_ALL, NULL) == DB_CONFLICT &&
	       doc_is(doc, "pending", 1, a) && row_is(a, "pending", "H1"),
	       "stale holder: mark ready -> DB_CONFLICT, document still pending, row untouched");
	tap_ok(blobs_claim_held(S->db, a, "H0", 60) == DB_CONFLICT && row_is(a, "pending", "H1"),
	       "stale holder: compensation's claim -> DB_CONFLICT, row untouched");
	tap_ok(docs_abandon_intent(S->db, doc, a, "H0") == DB_CONFLICT && doc_is(doc, "pending", 1, a) &&
	       row_is(a, "pending", "H1"),
	       "stale holder: dropping the intent -> DB_CONFLICT, document and row still there");

	tap_ok(blobs_renew_held(S->db, a, LEASE("H1")) == DB_OK, "live holder: renew succeeds");
	tap_ok(docs_mark_ready(S->db, doc, a, "H1", 3, SHA_A, "\"0xA\"", READY_ALL, NULL) == DB_OK && doc_is(doc, "ready", 1, a) &&
	       row_is(a, "committed", "H1"),
	       "live holder: mark ready -> document ready, row committed");
	return doc;
}

/* Compensation by the live holder: claim, then drop; nobody else can drop it. */
static void
test_compensation(void)
{
	char e[256], got[256];
	uint64_t doc;

	nm(e, sizeof e, "e");
	doc = new_intent("e", e, "HE");
	tap_ok(blobs_claim_held(S->db, e, "HE", 60) == DB_OK && row_is(e, "sweeping", "HE"),
	       "compensation: the holder claims its row (pending -> sweeping)");
	tap_ok(blobs_claim_held(S->db, e, "HE", 60) == DB_CONFLICT,
	       "compensation: a claimed row cannot be claimed again");
	tap_ok(docs_abandon_intent(S->db, doc, e, "HX") == DB_CONFLICT && row_is(e, "sweeping", "HE"),
	       "compensation: another holder cannot drop the claimed row");
	tap_ok(docs_abandon_intent(S->db, doc, e, "HE") == DB_OK &&
	       strcmp(row(e, got, sizeof got), "none") == 0 &&
	       strcmp(doc_line(doc, got, sizeof got), "none") == 0,
	       "compensation: the claimer drops the row and its pending document");
}

/* A sweeper's claim makes the claimer the holder: the responder is fenced
 * out, even after the claim is released; a live row is not claimed. */
static void
test_sweeper_fences_out(uint64_t doc, const char *a, char *b, size_t blen, char *c, size_t clen)
{
	char claimer[128];
	uint64_t n = 0;

	nm(b, blen, "b");
	nm(c, clen, "c");
	snprintf(claimer, sizeof claimer, "fence-sweeper-%s", RUN);
	if (docs_replace_intent(S->db, doc, b, LEASE("HB")) != DB_OK ||
	    docs_replace_intent(S->db, doc, c, LEASE("HC")) != DB_OK)
		tap_bail("replace intents: %s", db_last_error(S->db));
	tap_ok(sweep_db_claim_stale(S->db, claimer, P, 60, -1, 100, &n) == DB_OK && n == 0 &&
	       row_is(b, "pending", "HB") && row_is(c, "pending", "HC"),
	       "sweeper: claims no pending row whose lease has not expired");
	age(b);
	tap_ok(sweep_db_claim_stale(S->db, claimer, P, 60, -1, 100, &n) == DB_OK && n == 1 &&
	       row_is(b, "sweeping", claimer) && row_is(c, "pending", "HC"),
	       "sweeper: claims the expired row (holder = claimer), not the live one");
	tap_ok(sweep_db_release(S->db, claimer, b) == DB_OK && row_is(b, "pending", claimer),
	       "sweeper: a released claim stays fenced (pending, the claimer still its holder)");
	{
		struct replace_blob nb = { b, "HB", 5, SHA_B, "\"0xB\"", "text/plain", NULL };
		struct doc out;
		int stale = 0;

		tap_ok(docs_replace_commit(S->db, doc, &nb, 0, 60, &stale, &out) == DB_CONFLICT &&
		       !stale && doc_is(doc, "ready", 1, a) && row_is(b, "pending", claimer) &&
		       row_is(a, "committed", "H1"),
		       "stale holder (replace): commit -> DB_CONFLICT (not stale), document and rows untouched");
	}
	tap_ok(blobs_renew_held(S->db, b, LEASE("HB")) == DB_CONFLICT,
	       "stale holder (replace): renew -> DB_CONFLICT");
	tap_ok(blobs_retire_unreferenced(S->db, b, "HB") == DB_CONFLICT && row_is(b, "pending", claimer),
	       "stale holder (replace): rollback (pending -> retired) -> DB_CONFLICT, row untouched");
	tap_ok(blobs_claim_held(S->db, b, "HB", 60) == DB_CONFLICT,
	       "stale holder (replace): compensation's claim -> DB_CONFLICT");
}

/* Replace and delete commit only on the version they read. */
static void
test_version_guard(uint64_t doc, const char *a, const char *c)
{
	char d[256], f[256];
	struct doc out;
	int stale = 0;

	nm(d, sizeof d, "d");
	nm(f, sizeof f, "f");
	{
		struct replace_blob nb = { c, "HC", 5, SHA_B, "\"0xB\"", "text/plain", NULL };

		tap_ok(docs_replace_commit(S->db, doc, &nb, 1, 60, &stale, &out) == DB_OK && !stale &&
		       out.version == 2 && doc_is(doc, "ready", 2, c) && row_is(c, "committed", "HC") &&
		       row_is(a, "retired", "H1"),
		       "replace with If-Match version 1: committed (version 2), the old blob retired");
	}
	if (docs_replace_intent(S->db, doc, d, LEASE("HD")) != DB_OK)
		tap_bail("replace intent %s: %s", d, db_last_error(S->db));
	{
		struct replace_blob nb = { d, "HD", 5, SHA_B, "\"0xB\"", "text/plain", NULL };

		tap_ok(docs_replace_commit(S->db, doc, &nb, 1, 60, &stale, &out) == DB_CONFLICT && stale &&
		       doc_is(doc, "ready", 2, c) && row_is(d, "pending", "HD"),
		       "replace with a stale If-Match (version 1): stale, nothing changed");
	}
	tap_ok(blobs_retire_unreferenced(S->db, d, "HD") == DB_OK && row_is(d, "retired", "HD"),
	       "the refused replace's holder rolls its new blob back into the outbox");
	if (docs_replace_intent(S->db, doc, f, LEASE("HF")) != DB_OK)
		tap_bail("replace intent %s: %s", f, db_last_error(S->db));
	{
		struct replace_blob nb = { f, "HF", 5, SHA_B, "\"0xB\"", "text/plain", NULL };

		tap_ok(docs_replace_commit(S->db, doc, &nb, 0, 60, &stale, &out) == DB_OK &&
		       doc_is(doc, "ready", 3, f) && row_is(c, "retired", "HC"),
		       "replace without If-Match: last writer wins on the current version");
	}
	tap_ok(docs_delete(S->db, doc, 2, 60, &stale) == DB_CONFLICT && stale &&
	       doc_is(doc, "ready", 3, f) && row_is(f, "committed", "HF"),
	       "delete with a stale If-Match (version 2): stale, nothing changed");
	tap_ok(docs_delete(S->db, doc, 3, 60, &stale) == DB_OK && row_is(f, "retired", "HF"),
	       "delete with If-Match on the current version: the document goes, its blob is retired");
	{
		char got[64];

		tap_ok(strcmp(doc_line(doc, got, sizeof got), "none") == 0 &&
		       docs_delete(S->db, doc, 0, 60, &stale) == DB_NOT_FOUND,
		       "a second delete of the same document: DB_NOT_FOUND (404)");
	}
}

/* Nothing of this run stays for a sweep to find. */
static void
clean_up(void)
{
	if (plant_remove_prefix(S, P) != 0)
		tap_diag("clean-up: %s", db_last_error(S->db));
}

int
main(void)
{
	char a[256], b[256], c[256];
	uint64_t doc;

	S = plant_open(&CFG);
	if (S == NULL)
		tap_skip_all("no test stack (BINDERY_CONFIG, BINDERY_TEST_BIN)");
	if (plant_run_prefix("fnc", RUN, sizeof RUN) != 0)
		tap_bail("urandom");
	snprintf(P, sizeof P, "%s%s", CFG->storage_prefix, RUN);
	doc = test_resume_fences_out(a, sizeof a);
	test_compensation();
	test_sweeper_fences_out(doc, a, b, sizeof b, c, sizeof c);
	test_version_guard(doc, a, c);
	clean_up();
	services_free(S);
	config_free(CFG);
	return tap_done();
}
