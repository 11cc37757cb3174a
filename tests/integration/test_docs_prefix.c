/*
 * test_docs_prefix.c - docs_list_ready with a name prefix against the real
 * MariaDB (the page's filter: GET /documents?prefix=).  The
 * prefix is a LIKE pattern's start, so its own '%', '_' and '\' must be
 * escaped: "50%" lists "50%off" and not "50xoff", "a_" lists "a_b" and not
 * "axb".  Names compare as stored (case counts), pending documents are not
 * listed, and paging by the cursor with the prefix walks the same list,
 * oldest or newest first: a document that becomes ready between two pages
 * is neither skipped nor repeated (newest first it goes above the cursor,
 * not into the next page).  The count is of ready documents under the same
 * filter.
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
/* got equals want; the description shows what came (escaped for TAP). */
#define IS_STR(got, want, what) do {                                              \
		const char *got_ = (got);                                         \
		tap_ok(strcmp(got_, (want)) == 0, "%s (got \"%s\")", (what), tap_escape(got_)); \
	} while (0)
#define SHA_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

/* A document called "pfx-RUN" + tail on blob P + tag, made ready unless pending. */
static void
plant(const char *tail, const char *tag, int pending)
{
	char name[256], blob[256];
	char created[DOC_TIME_MAX];
	uint64_t id = 0;

	snprintf(name, sizeof name, "pfx-%s%s", RUN, tail);
	snprintf(blob, sizeof blob, "%s%s", P, tag);
	if (docs_create_intent(S->db, span_from_cstr(name), "prefixtest", "text/plain", blob,
			       LEASE("H0"), NULL, &id, created) != DB_OK)
		tap_bail("create intent %s: %s", name, db_last_error(S->db));
	if (!pending && docs_mark_ready(S->db, id, blob, "H0", 3, SHA_A, "\"0xA\"", READY_ALL, NULL) != DB_OK)
		tap_bail("mark ready %s: %s", blob, db_last_error(S->db));
}

struct names {
	char list[1024];	/* the tails listed, comma-separated */
	uint64_t last_seq;
	unsigned n;
};

static int
collect(void *ctx, const struct doc *d)
{
	struct names *nm = ctx;
	size_t skip = strlen("pfx-") + strlen(RUN), used = strlen(nm->list);

	if (strlen(d->name) < skip || d->status != DOC_STATUS_READY) {
		snprintf(nm->list + used, sizeof nm->list - used, "%s?", nm->n ? "," : "");
	} else {
		snprintf(nm->list + used, sizeof nm->list - used, "%s%s", nm->n ? "," : "",
			 d->name + skip);
	}
	nm->last_seq = d->ready_seq;
	nm->n++;
	return 0;
}

/* The tails of the names listed for "pfx-RUN" + tail, in list order. */
static const char *
list_in(enum doc_order order, const char *tail, uint64_t after, unsigned limit, struct names *nm)
{
	char prefix[256];

	memset(nm, 0, sizeof *nm);
	snprintf(prefix, sizeof prefix, "pfx-%s%s", RUN, tail);
	if (docs_list_ready(S->db, order, after, span_from_cstr(prefix), limit, collect, nm) != DB_OK)
		tap_bail("list %s: %s", prefix, db_last_error(S->db));
	return nm->list;
}

static const char *
list(const char *tail, uint64_t after, unsigned limit, struct names *nm)
{
	return list_in(DOC_ORDER_OLDEST, tail, after, limit, nm);
}

/* Ready documents whose names begin with "pfx-RUN" + tail. */
static uint64_t
count(const char *tail)
{
	char prefix[256];
	uint64_t n = 0;

	snprintf(prefix, sizeof prefix, "pfx-%s%s", RUN, tail);
	if (docs_count_ready(S->db, span_from_cstr(prefix), &n) != DB_OK)
		tap_bail("count %s: %s", prefix, db_last_error(S->db));
	return n;
}

/* Page through the run's documents two at a time with the cursor; before
 * the second page, plant makes tail ready (when not NULL). */
static const char *
list_paged(enum doc_order order, const char *tail, char *out, size_t outlen)
{
	struct names nm;
	uint64_t after = 0;
	size_t used = 0;
	int pages = 0;

	out[0] = '\0';
	do {
		list_in(order, "", after, 2, &nm);
		if (nm.n)
			used += (size_t)snprintf(out + used, outlen - used, "%s%s", used ? "," : "", nm.list);
		after = nm.last_seq;
		if (pages == 0 && tail)
			plant(tail, tail, 0);
	} while (nm.n == 2 && ++pages < 10 && used < outlen);
	return out;
}

int
main(void)
{
	struct names nm;
	char paged[1024];

	S = plant_open(&CFG);
	if (S == NULL)
		tap_skip_all("no test stack (BINDERY_CONFIG, BINDERY_TEST_BIN)");
	if (plant_run_prefix("pfx", RUN, sizeof RUN) != 0)
		tap_bail("urandom");
	snprintf(P, sizeof P, "%s%s", CFG->storage_prefix, RUN);

	plant("50%off", "a", 0);
	plant("50xoff", "b", 0);
	plant("a_b", "c", 0);
	plant("axb", "d", 0);
	plant("A_b", "e", 0);
	plant("c\\d", "f", 0);
	plant("cxd", "g", 0);
	plant("50%pending", "h", 1);

	IS_STR(list("", 0, 100, &nm), "50%off,50xoff,a_b,axb,A_b,c\\d,cxd",
		   "the run's prefix lists its ready documents in ready order, not the pending one");
	IS_STR(list("50%", 0, 100, &nm), "50%off", "\"50%\": '%' is a character, not a wildcard");
	IS_STR(list("a_", 0, 100, &nm), "a_b", "\"a_\": '_' is a character (not \"axb\"), case counts (not \"A_b\")");
	IS_STR(list("c\\", 0, 100, &nm), "c\\d", "\"c\\\": '\\' is a character, not an escape");
	IS_STR(list("50%off", 0, 100, &nm), "50%off", "a whole name is its own prefix");
	IS_STR(list("50%off ", 0, 100, &nm), "", "a trailing space is part of the prefix");
	IS_STR(list_paged(DOC_ORDER_OLDEST, NULL, paged, sizeof paged), "50%off,50xoff,a_b,axb,A_b,c\\d,cxd",
		   "two at a time with the cursor: the same list, nothing skipped or repeated");
	IS_STR(list_in(DOC_ORDER_NEWEST, "", 0, 100, &nm), "cxd,c\\d,A_b,axb,a_b,50xoff,50%off",
		   "newest first: the same documents the other way round");
	IS_STR(list_in(DOC_ORDER_NEWEST, "a", 0, 100, &nm), "axb,a_b", "newest first with a prefix");
	tap_ok(count("") == 7 && count("50") == 2 && count("50%") == 1 && count("zz") == 0,
	       "the count is of ready documents under the filter (%llu, %llu, %llu, %llu)",
	       (unsigned long long)count(""), (unsigned long long)count("50"),
	       (unsigned long long)count("50%"), (unsigned long long)count("zz"));
	IS_STR(list_paged(DOC_ORDER_NEWEST, "new1", paged, sizeof paged), "cxd,c\\d,A_b,axb,a_b,50xoff,50%off",
	       "newest first, two at a time, one made ready after the first page: the pages go on"
	       " below the cursor, nothing skipped or repeated");
	IS_STR(list_in(DOC_ORDER_NEWEST, "", 0, 2, &nm), "new1,cxd", "... and the new one heads page 1");
	IS_STR(list_paged(DOC_ORDER_OLDEST, "new2", paged, sizeof paged),
	       "50%off,50xoff,a_b,axb,A_b,c\\d,cxd,new1,new2",
	       "oldest first, one made ready after the first page: it comes last, once");
	tap_ok(count("") == 9, "the count follows (%llu)", (unsigned long long)count(""));
	memset(&nm, 0, sizeof nm);
	if (docs_list_ready(S->db, DOC_ORDER_OLDEST, 0, SPAN_NULL, 1000, collect, &nm) != DB_OK)
		tap_bail("list: %s", db_last_error(S->db));
	tap_ok(nm.n >= 7, "no prefix lists everything (%u documents)", nm.n);
	if (plant_remove_prefix(S, P) != 0)
		tap_diag("clean-up: %s", db_last_error(S->db));
	services_free(S);
	config_free(CFG);
	return tap_done();
}
