/*
 * cmd_scan.c - `bindery scan`: every ready document's committed bytes
 * through clamd again, after a signature update (lib/protocol/rescan), and
 * with --quarantine the infected ones taken out of every read until
 * `--release ID` puts one back.  Exit 0 all clean, 1 some not judged, 2
 * infected documents found; 69 when clamd or storage stopped the run.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <jansson.h>

#include "cli.h"
#include "parse/http_parse.h"
#include "protocol/rescan.h"

/* Documents read from the database at a time: each is scanned before the
 * next batch is read, so the walk holds no result set open for long. */
#define SCAN_BATCH 100

static const char scan_synopsis[] =
	"usage: bindery scan [--prefix P] [--quarantine] [--json]\n"
	"       bindery scan --release ID";

static void
scan_usage(FILE *fp)
{
	fprintf(fp, "%s\n\n"
		"Reads every ready document's bytes from storage, pinned to the ETag its row\n"
		"recorded, and has clamd ([scan] clamd) scan them again: after a signature\n"
		"update, what got in before may be known now.  One line per document that is\n"
		"infected, not scanned (a clamd limit, or no answer), changed behind bindery's\n"
		"back, missing or unreadable, or quarantined, then a summary.\n"
		"--quarantine takes infected documents out of every read (lists, counts, by\n"
		"id, by name, downloads: 404 as if deleted), keeping their rows and bytes;\n"
		"their owner may still delete one.  --release ID puts document ID back.\n"
		"--prefix P scans only blob names starting with the configured prefix + P.\n"
		"--json prints one JSON document instead.\n"
		"Exit 0 all clean, 1 some documents could not be judged, 2 infected documents\n"
		"found, 69 clamd, storage or the database unavailable (the run stopped; what\n"
		"it found is printed), 78 no [scan] clamd.  --release: 0 released, 1 not\n"
		"quarantined or no such ready document.  See bindery(8).\n", scan_synopsis);
}

/* Where an infected document stands, in the report's words. */
static const char *
hold_name(enum rescan_hold h)
{
	switch (h) {
	case RESCAN_HOLD_BEFORE: return "quarantined";
	case RESCAN_HOLD_NOW: return "quarantined now";
	case RESCAN_HOLD_MOVED: return "replaced or deleted since it was read: not quarantined";
	case RESCAN_HOLD_NONE: break;
	}
	return "";
}

struct scan_out {
	int as_json;
	json_t *findings;	/* --json: every finding */
};

static int
print_finding(void *ctx, const struct rescan_finding *f)
{
	static const char *const holds[] = { "none", "before", "now", "moved" };
	struct scan_out *so = ctx;
	const struct doc *d = f->doc;
	const char *what = f->outcome == RESCAN_INFECTED ? f->signature : f->detail;
	const char *label = rescan_outcome_name(f->outcome);

	if (so->as_json) {
		json_t *j = json_pack("{s:I, s:s, s:s, s:s, s:s, s:s, s:s, s:s?}", "id", (json_int_t)d->id,
				      "name", d->name, "owner", d->owner, "blob", d->blob_name, "result",
				      rescan_outcome_name(f->outcome), "signature", f->signature, "detail",
				      f->detail, "quarantined_at",
				      d->quarantined_at[0] ? d->quarantined_at : NULL);

		if (j == NULL || json_object_set_new(j, "quarantine", json_string(holds[f->hold])) != 0 ||
		    json_array_append_new(so->findings, j) != 0)
			return 1;
		return 0;
	}
	/* The text says in words what JSON says in a token. */
	if (f->outcome == RESCAN_LIMIT || f->outcome == RESCAN_NO_VERDICT)
		label = "not scanned";
	if (f->outcome == RESCAN_CLEAN)
		printf("%-11s document %llu \"%s\" owner %s: quarantined since %s; `bindery scan --release %llu`"
		       " puts it back\n", label, (unsigned long long)d->id, d->name, d->owner, d->quarantined_at,
		       (unsigned long long)d->id);
	else
		printf("%-11s document %llu \"%s\" owner %s: %s%s%s%s\n", label, (unsigned long long)d->id,
		       d->name, d->owner, what, f->hold != RESCAN_HOLD_NONE ? " [" : "", hold_name(f->hold),
		       f->hold != RESCAN_HOLD_NONE ? "]" : "");
	return ferror(stdout) ? 1 : 0;
}

static void
print_summary(const struct rescan_report *rep, double secs)
{
	printf("scan: %llu documents, %llu bytes read; %llu clean, %llu infected, %llu not scanned,"
	       " %llu changed, %llu missing, %llu unreadable; %llu quarantined now, %llu before in %.3fs\n",
	       (unsigned long long)rep->documents, (unsigned long long)rep->bytes, (unsigned long long)rep->clean,
	       (unsigned long long)rep->infected, (unsigned long long)rep->not_scanned,
	       (unsigned long long)rep->changed, (unsigned long long)rep->missing,
	       (unsigned long long)rep->unreadable, (unsigned long long)rep->quarantined,
	       (unsigned long long)rep->held, secs);
}

/* The whole report as one JSON document; stopped is the cause of an
 * incomplete run, or NULL. */
static int
print_json(const struct rescan_report *rep, json_t *findings, const char *stopped, double secs)
{
	json_t *j = json_pack("{s:b, s:b, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}, s:O, s:f}",
			      "complete", stopped == NULL, "clean",
			      stopped == NULL && rep->clean == rep->documents, "counts",
			      "documents", (json_int_t)rep->documents, "bytes", (json_int_t)rep->bytes,
			      "clean", (json_int_t)rep->clean, "infected", (json_int_t)rep->infected,
			      "not_scanned", (json_int_t)rep->not_scanned, "changed", (json_int_t)rep->changed,
			      "missing", (json_int_t)rep->missing, "unreadable", (json_int_t)rep->unreadable,
			      "quarantined", (json_int_t)rep->quarantined, "quarantined_before",
			      (json_int_t)rep->held, "findings", findings, "seconds", secs);
	int rc = -1;

	if (j == NULL)
		return -1;
	if (stopped != NULL && json_object_set_new(j, "stopped", json_string(stopped)) != 0)
		goto out;
	if (json_dumpf(j, stdout, JSON_INDENT(2)) == 0) {
		putchar('\n');
		rc = 0;
	}
out:
	json_decref(j);
	return rc;
}

/* --release ID. */
static int
scan_release(struct cli *cli, const char *arg)
{
	uint64_t id = 0;
	enum proto_result pr;
	enum db_err e;
	int rc, changed = 0;

	if (http_parse_uint(span_from_cstr(arg), UINT64_MAX, &id) != HTTP_UINT_OK || id == 0)
		return cli_usage_error(scan_synopsis, "bindery scan: --release wants a document id");
	if ((rc = cli_services(cli)) != 0)
		return rc;
	pr = rescan_release(cli->svc, id, &changed, &e);
	if (pr == PROTO_NOT_FOUND) {
		fprintf(stderr, "bindery scan: no ready document %llu\n", (unsigned long long)id);
		return EXIT_PROBLEMS;
	}
	if (pr != PROTO_OK)
		return cli_db_failed(cli, "bindery scan", e, EXIT_SOFTWARE);
	printf("document %llu %s\n", (unsigned long long)id,
	       changed ? "released: every read sees it again" : "was not quarantined");
	return changed ? 0 : EXIT_PROBLEMS;
}

/* The exit status of a run that ended with re. */
static int
scan_exit(struct cli *cli, enum rescan_err re, const struct rescan_report *rep)
{
	switch (re) {
	case RESCAN_OK:
		if (rep->infected)
			return EXIT_INFECTED;
		return rep->not_scanned || rep->changed || rep->missing || rep->unreadable ? EXIT_PROBLEMS : 0;
	case RESCAN_ERR_DB:
		return cli_db_failed(cli, "bindery scan", rep->db, EXIT_SOFTWARE);
	case RESCAN_ERR_SCANNER:
	case RESCAN_ERR_STORAGE:
		fprintf(stderr, "bindery scan: stopped: %s\n", rep->cause);
		return EXIT_UNAVAILABLE;
	case RESCAN_ERR_NO_SCANNER:
		fprintf(stderr, "bindery scan: %s\n", rep->cause);
		return EXIT_CONFIG;
	case RESCAN_ERR_FAILED:
		break;
	}
	fprintf(stderr, "bindery scan: failed: %s\n", rep->cause);
	return EXIT_SOFTWARE;
}

int
cmd_scan(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "prefix", required_argument, NULL, 'p' },
		{ "quarantine", no_argument, NULL, 'q' },
		{ "release", required_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct scan_out so = { 0, NULL };
	struct rescan_opts ro;
	struct rescan_report rep;
	struct timespec t0, t1;
	const char *narrow = NULL, *release = NULL;
	char prefix[512];
	int quarantine = 0, c, rc;
	enum rescan_err re;
	double secs;

	while ((c = getopt_long(argc, argv, "p:qr:jvh", opts, NULL)) != -1) {
		switch (c) {
		case 'p': narrow = optarg; break;
		case 'q': quarantine = 1; break;
		case 'r': release = optarg; break;
		case 'j': so.as_json = 1; break;
		case 'v': cli->verbose = 1; break;
		case 'h': scan_usage(stdout); return 0;
		default: return cli_usage_error(scan_synopsis, NULL);
		}
	}
	if (optind != argc)
		return cli_usage_error(scan_synopsis, "bindery scan: unexpected argument");
	if (release != NULL) {
		if (narrow != NULL || quarantine || so.as_json)
			return cli_usage_error(scan_synopsis, "bindery scan: --release goes alone");
		return scan_release(cli, release);
	}
	if ((rc = cli_config(cli)) != 0)
		return rc;
	/* Before any connection: without a scanner there is nothing to do. */
	if (cli->cfg->scan_clamd.kind == CONFIG_CLAMD_NONE) {
		fprintf(stderr, "bindery scan: [scan] clamd is not set: there is no scanner to ask"
				" (see bindery.conf(5))\n");
		return EXIT_CONFIG;
	}
	if ((rc = cli_services(cli)) != 0)
		return rc;
	/* Without --prefix every document, even one stored under an earlier
	 * configured prefix; --prefix narrows inside the current one (as sweep). */
	if (narrow == NULL)
		narrow = "";
	if ((size_t)snprintf(prefix, sizeof prefix, "%s%s", narrow[0] ? cli->cfg->storage_prefix : "", narrow) >=
	    sizeof prefix)
		return cli_usage_error(scan_synopsis, "bindery scan: --prefix too long");
	if (so.as_json && (so.findings = json_array()) == NULL)
		return EXIT_SOFTWARE;
	memset(&ro, 0, sizeof ro);
	ro.prefix = prefix;
	ro.quarantine = quarantine;
	ro.batch = SCAN_BATCH;
	ro.on_finding = print_finding;
	ro.ctx = &so;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	re = rescan_run(cli->svc, &ro, &rep);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	/* What was found before a stop is reported all the same. */
	if (re == RESCAN_OK || rep.documents > 0) {
		if (!so.as_json)
			print_summary(&rep, secs);
		else if (print_json(&rep, so.findings, re == RESCAN_OK ? NULL : rep.cause, secs) != 0) {
			snprintf(rep.cause, sizeof rep.cause, "the JSON report could not be written");
			re = RESCAN_ERR_FAILED;
		}
	}
	rc = scan_exit(cli, re, &rep);
	json_decref(so.findings);
	return rc;
}
