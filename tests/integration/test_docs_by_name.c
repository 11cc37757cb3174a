/*
 * test_docs_by_name.c - docs_find_ready_by_name against the real MariaDB
 * (GET /documents?name=).  Names compare exactly under
 * the column's utf8mb4_nopad_bin, whatever the connection's collation: case,
 * a trailing or leading space and a composed versus decomposed accent each
 * make another name.  A pending document is not found until it is ready.
 * No storage is touched: the rows alone, removed at the end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry/docs_db.h"
#include "tools/sweep_plant.h"
#include "tap.h"

static struct services *S;
static struct bindery_config *CFG;
static char P[160];		/* this run's blob-name prefix */
static char RUN[64];		/* the same without the configured prefix */

#define LEASE(h) (&(struct lease){ (h), 60, 0 })
#define SHA_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

/* A pending document called "byname-RUN" + tail on blob P + tag. */
static uint64_t
new_intent(const char *tail, const char *tag, char *blob, size_t bloblen)
{
	char name[256];
	char created[DOC_TIME_MAX];
	uint64_t id = 0;
	enum db_err e;

	snprintf(name, sizeof name, "byname-%s%s", RUN, tail);
	snprintf(blob, bloblen, "%s%s", P, tag);
	e = docs_create_intent(S->db, span_from_cstr(name), "bynametest", "text/plain", blob,
			       LEASE("H0"), NULL, &id, created);
	if (e != DB_OK)
		tap_bail("create intent %s: %s", name, db_err_name(e));
	return id;
}

/* Look "byname-RUN" + tail up; *id is the document found (0 for none). */
static enum db_err
find(const char *tail, uint64_t *id)
{
	char name[256];
	struct doc d;
	enum db_err e;

	snprintf(name, sizeof name, "byname-%s%s", RUN, tail);
	*id = 0;
	e = docs_find_ready_by_name(S->db, span_from_cstr(name), &d);
	if (e != DB_OK)
		return e;
	*id = d.id;
	if (strcmp(d.name, name) != 0 || d.status != DOC_STATUS_READY) {
		tap_diag("found '%s' (%s) for '%s'", d.name, doc_status_name(d.status), name);
		return DB_FAILED;
	}
	return e;
}

static void
ready(uint64_t id, const char *blob)
{
	if (docs_mark_ready(S->db, id, blob, "H0", 3, SHA_A, "\"0xA\"", READY_ALL, NULL) != DB_OK)
		tap_bail("mark ready %s: %s", blob, db_last_error(S->db));
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
	uint64_t lower, upper, accent, id;

	S = plant_open(&CFG);
	if (S == NULL)
		tap_skip_all("no test stack (BINDERY_CONFIG, BINDERY_TEST_BIN)");
	if (plant_run_prefix("bnm", RUN, sizeof RUN) != 0)
		tap_bail("urandom");
	snprintf(P, sizeof P, "%s%s", CFG->storage_prefix, RUN);

	lower = new_intent("a.txt", "a", a, sizeof a);
	tap_ok(find("a.txt", &id) == DB_NOT_FOUND, "a pending document is not found");
	ready(lower, a);
	tap_ok(find("a.txt", &id) == DB_OK && id == lower, "once ready it is found by its exact name");

	upper = new_intent("A.txt", "b", b, sizeof b);
	ready(upper, b);
	/* U+00E9 composed; a lookup below spells it e + U+0301. */
	accent = new_intent("caf\xc3\xa9", "c", c, sizeof c);
	ready(accent, c);
	tap_ok(find("A.txt", &id) == DB_OK && id == upper && upper != lower,
	       "\"A.txt\" finds its own document, not \"a.txt\"'s");
	tap_ok(find("a.TXT", &id) == DB_NOT_FOUND, "\"a.TXT\": none");
	tap_ok(find("a.txt ", &id) == DB_NOT_FOUND,
	       "\"a.txt \" (a trailing space, which PAD SPACE collations ignore): none");
	tap_ok(find(" a.txt", &id) == DB_NOT_FOUND, "\" a.txt\" (a leading space): none");
	tap_ok(find("a.txt\t", &id) == DB_NOT_FOUND, "\"a.txt\" and a tab: none");
	tap_ok(find("caf\xc3\xa9", &id) == DB_OK && id == accent, "a composed accent finds its document");
	tap_ok(find("cafe\xcc\x81", &id) == DB_NOT_FOUND, "the same word decomposed is another name: none");
	tap_ok(find("", &id) == DB_NOT_FOUND, "the run's prefix alone: none");
	clean_up();
	tap_ok(find("a.txt", &id) == DB_NOT_FOUND, "after clean-up: none");
	services_free(S);
	config_free(CFG);
	return tap_done();
}
