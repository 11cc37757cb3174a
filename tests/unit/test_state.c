/*
 * test_state.c - the state module against the schema: every ENUM(...) in
 * the files of sql/ (CREATE TABLE and any later ALTER TABLE; a later
 * definition of a column may only add names at its end, and the latest
 * counts) must list exactly the
 * names of the C enum that maps it, in the same order (the C values number
 * them as MariaDB does), and the x-ms-if-tags guards must be exactly
 * `"state" = 'X'`.  Names and parsing round-trip; anything else parses to
 * the unknown value.
 */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/state.h"
#include "tap.h"

#ifndef BINDERY_SRC_SQL_DIR
#define BINDERY_SRC_SQL_DIR "sql"
#endif

typedef const char *(*name_fn)(int);

static const char *doc_name(int v) { return doc_status_name((enum doc_status)v); }
static const char *reg_name(int v) { return registry_state_name((enum registry_state)v); }
static const char *purpose_name(int v) { return intent_purpose_name((enum intent_purpose)v); }
static const char *route_name(int v) { return upload_route_name((enum upload_route)v); }
static const char *result_name(int v) { return sweep_result_name((enum sweep_result)v); }
static const char *delivery_name(int v) { return delivery_state_name((enum delivery_state)v); }

/* The schema's ENUM columns and the C enum each one maps to. */
static struct column {
	const char *table, *column;
	name_fn name;
	int count;	/* values 1..count-1 are the listed names */
	int seen;
	char last[512];	/* the latest definition's names, comma-separated */
	char where[64];	/* ... and the file it is in */
} columns[] = {
	{ "documents", "status", doc_name, DOC_STATUS_COUNT, 0, "", "" },
	{ "blobs", "state", reg_name, REGISTRY_STATE_COUNT, 0, "", "" },
	{ "blobs", "purpose", purpose_name, PURPOSE_COUNT, 0, "", "" },
	{ "blobs", "route", route_name, UPLOAD_ROUTE_COUNT, 0, "", "" },
	{ "idempotency_keys", "route", route_name, UPLOAD_ROUTE_COUNT, 0, "", "" },
	{ "sweep_runs", "result", result_name, SWEEP_RESULT_COUNT, 0, "", "" },
	{ "event_deliveries", "state", delivery_name, DELIVERY_STATE_COUNT, 0, "", "" },
};

/* The identifier after `kw` (case-insensitive) in line, if any, into out. */
static int
word_after(const char *line, const char *kw, char *out, size_t outlen)
{
	size_t n = strlen(kw), k = 0;
	const char *p;

	for (p = line; *p; p++)
		if (strncasecmp(p, kw, n) == 0)
			break;
	if (*p == '\0')
		return 0;
	for (p += n; *p == ' ' || *p == '\t' || *p == '`'; p++)
		;
	while ((isalnum((unsigned char)*p) || *p == '_') && k + 1 < outlen)
		out[k++] = *p++;
	out[k] = '\0';
	return k > 0;
}

/* The quoted names of "ENUM('a', 'b')" at list, kept as the column's
 * latest definition: a later migration may only add names at the end (an
 * ENUM value is stored as its index), so each definition must begin with
 * the one before.  check_latest compares the last with the C enum. */
static void
check_enum(const char *file, const char *table, const char *col, const char *list)
{
	char got[512] = "", item[64];
	const char *p = list;
	size_t i, k;
	int v, listed = 0;

	for (i = 0; i < ARRAY_LEN(columns); i++)
		if (strcmp(columns[i].table, table) == 0 && strcmp(columns[i].column, col) == 0)
			break;
	if (!tap_ok(i < ARRAY_LEN(columns), "%s: %s.%s is an ENUM the state module maps", file,
		    table, col))
		return;
	columns[i].seen++;
	while ((p = strchr(p, '\'')) != NULL) {
		const char *end = strchr(p + 1, '\'');

		if (end == NULL || (size_t)(end - p - 1) >= sizeof item)
			break;
		k = (size_t)(end - p - 1);
		memcpy(item, p + 1, k);
		item[k] = '\0';
		snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", listed++ ? "," : "", item);
		p = end + 1;
		if (*p != ',' && strncmp(p, ", ", 2) != 0)
			break;
	}
	if (columns[i].last[0] &&
	    !tap_ok(strncmp(got, columns[i].last, strlen(columns[i].last)) == 0 &&
			    (got[strlen(columns[i].last)] == '\0' || got[strlen(columns[i].last)] == ','),
		    "%s: %s.%s keeps %s's names and order (only adds at the end)", file, table, col,
		    columns[i].where))
		tap_diag("before: %s; now: %s", columns[i].last, got);
	snprintf(columns[i].last, sizeof columns[i].last, "%s", got);
	snprintf(columns[i].where, sizeof columns[i].where, "%s", file);
}

/* Each column's latest definition against the C enum's names. */
static void
check_latest(void)
{
	char want[512];
	size_t i;
	int v;

	for (i = 0; i < ARRAY_LEN(columns); i++) {
		if (columns[i].seen == 0)
			continue;
		want[0] = '\0';
		for (v = 1; v < columns[i].count; v++)
			snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", v > 1 ? "," : "",
				 columns[i].name(v));
		if (!tap_ok(strcmp(columns[i].last, want) == 0, "%s: %s.%s lists the C enum's names in order",
			    columns[i].where, columns[i].table, columns[i].column))
			tap_diag("sql: %s; C: %s", columns[i].last, want);
	}
}

static void
scan_file(const char *dir, const char *file)
{
	char path[4096], line[1024], table[64] = "", col[64];
	FILE *fp;

	if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, file) >= sizeof path)
		tap_bail("path too long");
	if ((fp = fopen(path, "r")) == NULL)
		tap_bail("cannot open %s", path);
	while (fgets(line, sizeof line, fp)) {
		const char *e;
		size_t k = 0;
		const char *p = line;

		if (strncmp(line, "--", 2) == 0)
			continue;
		if (word_after(line, "CREATE TABLE", table, sizeof table) ||
		    word_after(line, "ALTER TABLE", table, sizeof table)) {
			/* CREATE TABLE IF NOT EXISTS name (sql/012 on) */
			if (strcasecmp(table, "IF") == 0 &&
			    !word_after(line, "IF NOT EXISTS", table, sizeof table))
				tap_bail("%s: no table name after IF NOT EXISTS", file);
			continue;
		}
		if ((e = strstr(line, "ENUM(")) == NULL && (e = strstr(line, "enum(")) == NULL)
			continue;
		/* The column: the last identifier before ENUM (after ADD/MODIFY/CHANGE too). */
		while (*p == ' ' || *p == '\t')
			p++;
		if (word_after(line, "ADD COLUMN", col, sizeof col) ||
		    word_after(line, "MODIFY COLUMN", col, sizeof col) ||
		    word_after(line, "MODIFY", col, sizeof col)) {
			;
		} else {
			while ((isalnum((unsigned char)*p) || *p == '_' || *p == '`') && k + 1 < sizeof col)
				if (*p++ != '`')
					col[k++] = p[-1];
			col[k] = '\0';
		}
		check_enum(file, table, col, e + 5);
	}
	fclose(fp);
}

static int
by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int
is_sql(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return n > 4 && strcmp(d->d_name + n - 4, ".sql") == 0;
}

static void
test_schema(void)
{
	const char *top = getenv("top_srcdir");
	struct dirent **files = NULL;
	char dir[4096];
	size_t i;
	int n, j;

	if (top != NULL && *top != '\0') {
		if ((size_t)snprintf(dir, sizeof dir, "%s/sql", top) >= sizeof dir)
			tap_bail("top_srcdir too long");
	} else if ((size_t)snprintf(dir, sizeof dir, "%s", BINDERY_SRC_SQL_DIR) >= sizeof dir) {
		tap_bail("sql dir too long");
	}
	n = scandir(dir, &files, is_sql, by_name);
	if (n <= 0)
		tap_bail("no sql/*.sql under %s", dir);
	for (j = 0; j < n; j++) {
		scan_file(dir, files[j]->d_name);
		free(files[j]);
	}
	free(files);
	check_latest();
	for (i = 0; i < ARRAY_LEN(columns); i++)
		tap_ok(columns[i].seen > 0, "the schema defines %s.%s", columns[i].table,
		       columns[i].column);
}

static void
test_round_trip(void)
{
	int v, bad = 0;

	for (v = 1; v < DOC_STATUS_COUNT; v++)
		bad += doc_status_from_name(doc_status_name((enum doc_status)v)) != (enum doc_status)v;
	for (v = 1; v < REGISTRY_STATE_COUNT; v++)
		bad += registry_state_from_name(registry_state_name((enum registry_state)v)) !=
		       (enum registry_state)v;
	for (v = 1; v < UPLOAD_ROUTE_COUNT; v++)
		bad += upload_route_from_name(upload_route_name((enum upload_route)v)) !=
		       (enum upload_route)v;
	for (v = 1; v < PURPOSE_COUNT; v++)
		bad += intent_purpose_from_name(intent_purpose_name((enum intent_purpose)v)) !=
		       (enum intent_purpose)v;
	for (v = 1; v < SWEEP_RESULT_COUNT; v++)
		bad += sweep_result_from_name(sweep_result_name((enum sweep_result)v)) !=
		       (enum sweep_result)v;
	for (v = 1; v < DELIVERY_STATE_COUNT; v++)
		bad += delivery_state_from_name(delivery_state_name((enum delivery_state)v)) !=
		       (enum delivery_state)v;
	for (v = TAG_STATE_PENDING; v <= TAG_STATE_RETIRED; v++)
		bad += tag_state_from_name(tag_state_name((enum tag_state)v)) != (enum tag_state)v;
	tap_ok(bad == 0, "every name parses back to its value (%d wrong)", bad);

	tap_ok(doc_status_from_name("Ready") == DOC_STATUS_UNKNOWN, "names are case-sensitive");
	tap_ok(doc_status_from_name("") == DOC_STATUS_UNKNOWN, "'' (MariaDB's error value) is unknown");
	tap_ok(doc_status_from_name(NULL) == DOC_STATUS_UNKNOWN, "NULL is unknown");
	tap_ok(registry_state_from_name("ready") == REGISTRY_STATE_UNKNOWN,
	       "a document status is no registry state");
	tap_ok(registry_state_from_name("pending ") == REGISTRY_STATE_UNKNOWN, "no padding");
	tap_ok(intent_purpose_from_name("delete") == PURPOSE_UNKNOWN, "unknown purpose");
	tap_ok(tag_state_from_name(NULL) == TAG_STATE_NONE, "no state tag");
	tap_ok(tag_state_from_name("sweeping") == TAG_STATE_UNKNOWN,
	       "a claim state is never a tag value");
	tap_ok(tag_state_from_name("") == TAG_STATE_UNKNOWN, "an empty tag value is unknown");
	tap_ok(tag_state_from_name("Committed") == TAG_STATE_UNKNOWN, "tag values are case-sensitive");
	tap_ok(strcmp(doc_status_name((enum doc_status)99), "") == 0 &&
	       strcmp(registry_state_name(REGISTRY_STATE_UNKNOWN), "") == 0 &&
	       strcmp(tag_state_name(TAG_STATE_NONE), "") == 0, "unknown values name nothing");
	/* The registry's states that a tag also takes are spelled alike. */
	tap_ok(strcmp(tag_state_name(TAG_STATE_PENDING), registry_state_name(REGISTRY_PENDING)) == 0 &&
	       strcmp(tag_state_name(TAG_STATE_COMMITTED), registry_state_name(REGISTRY_COMMITTED)) == 0 &&
	       strcmp(tag_state_name(TAG_STATE_RETIRED), registry_state_name(REGISTRY_RETIRED)) == 0,
	       "tag and registry spell pending/committed/retired alike");
}

static void
test_guards(void)
{
	char want[64], got[64];
	int v;

	for (v = TAG_STATE_PENDING; v <= TAG_STATE_RETIRED; v++) {
		snprintf(want, sizeof want, "\"state\" = '%s'", tag_state_name((enum tag_state)v));
		tap_ok(strcmp(tag_state_guard((enum tag_state)v), want) == 0, "guard %s", want);
		tap_ok(tag_guard_for_value(tag_state_name((enum tag_state)v), got, sizeof got) == 0 &&
		       strcmp(got, want) == 0, "guard for the value read back: %s", want);
	}
	tap_ok(strcmp(tag_state_guard(TAG_STATE_PENDING), "\"state\" = 'pending'") == 0,
	       "the pending guard, spelled out");
	tap_ok(tag_guard_for_value("it's", got, sizeof got) == -1, "a quote cannot be guarded");
	tap_ok(tag_guard_for_value("odd", got, 8) == -1, "a guard that does not fit is refused");
	tap_ok(tag_guard_for_value("odd", got, sizeof got) == 0 && strcmp(got, "\"state\" = 'odd'") == 0,
	       "any other value is guarded as it is");
}

int main(void);

int
main(void)
{
	test_schema();
	test_round_trip();
	test_guards();
	return tap_done();
}
