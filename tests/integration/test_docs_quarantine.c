/*
 * test_docs_quarantine.c - the quarantine column (sql/018) against the real
 * MariaDB: docs_walk_ready (every ready document, quarantined ones too, by
 * id, under a blob prefix, page by page), docs_quarantine only on the bytes
 * scanned, docs_release, and every reader's function leaving a quarantined
 * document out (by name, the list both ways, its count) while docs_get
 * says it is quarantined and the replace intent is refused.  No storage is
 * touched: the rows alone, removed at the end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry/blobs_db.h"
#include "registry/docs_db.h"
#include "tools/sweep_plant.h"
#include "tap.h"

#define NDOCS 5

static struct services *S;
static struct bindery_config *CFG;
static char P[160];		/* this run's blob-name prefix */
static char RUN[64];		/* the same without the configured prefix */
static uint64_t ID[NDOCS];
static char BLOB[NDOCS][256];

#define LEASE(h) (&(struct lease){ (h), 60, 0 })
#define SHA_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

static void
name_of(int i, char *out, size_t outlen)
{
	snprintf(out, outlen, "quar-%s%d", RUN, i);
}

/* Document i, ready on blob P + i. */
static void
make_ready(int i)
{
	char name[256], created[DOC_TIME_MAX];

	name_of(i, name, sizeof name);
	snprintf(BLOB[i], sizeof BLOB[i], "%s%d", P, i);
	if (docs_create_intent(S->db, span_from_cstr(name), "quartest", "text/plain", BLOB[i], LEASE("H0"), NULL,
			       &ID[i], created) != DB_OK ||
	    docs_mark_ready(S->db, ID[i], BLOB[i], "H0", 3, SHA_A, "\"0xA\"", READY_ALL, NULL) != DB_OK)
		tap_bail("document %d: %s", i, db_last_error(S->db));
}

/* Ids collected from a walk or a list, in order. */
struct ids {
	uint64_t id[4 * NDOCS];
	char quarantined[4 * NDOCS];
	size_t n;
};

static int
collect(void *ctx, const struct doc *d)
{
	struct ids *ids = ctx;

	if (ids->n < ARRAY_LEN(ids->id)) {
		ids->quarantined[ids->n] = d->quarantined_at[0] != '\0';
		ids->id[ids->n++] = d->id;
	}
	return 0;
}

/* The whole walk under prefix, limit at a time: its ids in *out. */
static enum db_err
walk(const char *prefix, unsigned limit, struct ids *out)
{
	uint64_t after = 0;
	size_t before;
	enum db_err e;

	memset(out, 0, sizeof *out);
	do {
		before = out->n;
		if ((e = docs_walk_ready(S->db, after, prefix, limit, collect, out)) != DB_OK)
			return e;
		if (out->n > before)
			after = out->id[out->n - 1];
	} while (out->n - before == limit);
	return DB_OK;
}

/* "i,j,k" of the documents in ids, by their index here ('q' after a
 * quarantined one). */
static const char *
which(const struct ids *ids, char *out, size_t outlen)
{
	size_t k, used = 0;
	int i;

	out[0] = '\0';
	for (k = 0; k < ids->n; k++)
		for (i = 0; i < NDOCS; i++)
			if (ids->id[k] == ID[i])
				used += (size_t)snprintf(out + used, outlen - used, "%s%d%s", k ? "," : "", i,
							 ids->quarantined[k] ? "q" : "");
	return out;
}

static uint64_t
count(void)
{
	char prefix[128];
	uint64_t n = 0;

	snprintf(prefix, sizeof prefix, "quar-%s", RUN);
	if (docs_count_ready(S->db, span_from_cstr(prefix), &n) != DB_OK)
		tap_bail("count: %s", db_last_error(S->db));
	return n;
}

static const char *
listed(enum doc_order order, char *out, size_t outlen)
{
	char prefix[128];
	struct ids ids;

	memset(&ids, 0, sizeof ids);
	snprintf(prefix, sizeof prefix, "quar-%s", RUN);
	if (docs_list_ready(S->db, order, 0, span_from_cstr(prefix), 100, collect, &ids) != DB_OK)
		tap_bail("list: %s", db_last_error(S->db));
	return which(&ids, out, outlen);
}

static int
found_by_name(int i)
{
	char name[256];
	struct doc d;

	name_of(i, name, sizeof name);
	return docs_find_ready_by_name(S->db, span_from_cstr(name), &d) == DB_OK && d.id == ID[i];
}

int
main(void)
{
	char got[256], other[256], fresh[256];
	struct ids ids;
	struct doc d;
	struct blob_row br;
	int changed = -1, i;

	S = plant_open(&CFG);
	if (S == NULL)
		tap_skip_all("no test stack (BINDERY_CONFIG, BINDERY_TEST_BIN)");
	if (plant_run_prefix("qua", RUN, sizeof RUN) != 0)
		tap_bail("urandom");
	snprintf(P, sizeof P, "%s%s", CFG->storage_prefix, RUN);
	for (i = 0; i < NDOCS; i++)
		make_ready(i);

	tap_ok(walk(P, 2, &ids) == DB_OK && strcmp(which(&ids, got, sizeof got), "0,1,2,3,4") == 0,
	       "docs_walk_ready, 2 at a time: every ready document under the prefix, by id (%s)", got);
	snprintf(other, sizeof other, "%sx", P);
	tap_ok(walk(other, 2, &ids) == DB_OK && ids.n == 0, "... none under another prefix");

	tap_ok(docs_quarantine(S->db, ID[1], BLOB[1], &changed) == DB_OK && changed == 1,
	       "docs_quarantine on its blob: quarantined now");
	tap_ok(docs_quarantine(S->db, ID[1], BLOB[1], &changed) == DB_OK && changed == 0,
	       "... again: it was already");
	tap_ok(docs_quarantine(S->db, ID[2], BLOB[3], &changed) == DB_NOT_FOUND,
	       "on bytes it does not hold (a replace since): DB_NOT_FOUND, nothing changes");
	tap_ok(docs_quarantine(S->db, ID[NDOCS - 1] + 1000000, BLOB[0], &changed) == DB_NOT_FOUND,
	       "an id no document has: DB_NOT_FOUND");
	tap_ok(docs_get(S->db, ID[1], &d) == DB_OK && d.status == DOC_STATUS_READY && d.quarantined_at[0] != '\0' &&
	       strcmp(d.blob_name, BLOB[1]) == 0,
	       "docs_get: still ready on its blob, quarantined since %s", d.quarantined_at);
	tap_ok(docs_get(S->db, ID[2], &d) == DB_OK && d.quarantined_at[0] == '\0', "... another is not");

	tap_ok(!found_by_name(1) && found_by_name(0), "docs_find_ready_by_name: not the quarantined one");
	tap_ok(strcmp(listed(DOC_ORDER_OLDEST, got, sizeof got), "0,2,3,4") == 0,
	       "docs_list_ready, oldest first: without it (%s)", got);
	tap_ok(strcmp(listed(DOC_ORDER_NEWEST, got, sizeof got), "4,3,2,0") == 0,
	       "... newest first: without it (%s)", got);
	tap_ok(count() == NDOCS - 1, "docs_count_ready: %d, not %d", NDOCS - 1, NDOCS);
	tap_ok(walk(P, 2, &ids) == DB_OK && strcmp(which(&ids, got, sizeof got), "0,1q,2,3,4") == 0,
	       "docs_walk_ready still walks it, saying it is quarantined (%s)", got);

	snprintf(fresh, sizeof fresh, "%snew1", P);
	tap_ok(docs_replace_intent(S->db, ID[1], fresh, LEASE("HR")) == DB_NOT_FOUND &&
	       blobs_get(S->db, fresh, &br) == DB_NOT_FOUND,
	       "docs_replace_intent of it: DB_NOT_FOUND, no registry row");
	snprintf(fresh, sizeof fresh, "%snew2", P);
	tap_ok(docs_replace_intent(S->db, ID[2], fresh, LEASE("HR")) == DB_OK &&
	       blobs_get(S->db, fresh, &br) == DB_OK && br.state == REGISTRY_PENDING,
	       "... of another: its pending row");
	snprintf(fresh, sizeof fresh, "%snew9", P);
	tap_ok(docs_replace_intent(S->db, ID[NDOCS - 1] + 1000000, fresh, LEASE("HR")) == DB_NOT_FOUND,
	       "... of an id no document has: DB_NOT_FOUND");

	tap_ok(docs_release(S->db, ID[3], &changed) == DB_OK && changed == 0,
	       "docs_release of one not quarantined: DB_OK, nothing changed");
	tap_ok(docs_release(S->db, ID[NDOCS - 1] + 1000000, &changed) == DB_NOT_FOUND,
	       "... of an id no document has: DB_NOT_FOUND");
	tap_ok(docs_release(S->db, ID[1], &changed) == DB_OK && changed == 1, "docs_release of it: released");
	tap_ok(found_by_name(1) && count() == NDOCS &&
	       strcmp(listed(DOC_ORDER_OLDEST, got, sizeof got), "0,1,2,3,4") == 0,
	       "... found by name, counted, listed in its old place (%s)", got);
	tap_ok(docs_get(S->db, ID[1], &d) == DB_OK && d.quarantined_at[0] == '\0', "... docs_get: not quarantined");

	if (plant_remove_prefix(S, P) != 0)
		tap_diag("clean-up: %s", db_last_error(S->db));
	services_free(S);
	config_free(CFG);
	return tap_done();
}
