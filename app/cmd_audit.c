/*
 * cmd_audit.c - `bindery audit`: diff the container against the database.
 * Exit 0 clean, 1 problems, 2 a dangling document (readers would break).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "protocol/adopt.h"
#include "protocol/audit.h"
#include "cli.h"
#include "registry/quota_db.h"

static void
audit_usage(FILE *fp)
{
	fprintf(fp,
		"usage: bindery audit [--json] [--prefix P] [--deep]\n"
		"                     [--repair [--min-age SECONDS] [--adopt [--dry-run]]]\n\n"
		"Lists the container (with tags) and walks the database, and reports orphan\n"
		"blobs, dangling documents, tag mismatches, stale intents and staged blocks.\n"
		"--repair deletes orphans older than --min-age (default [limits] sweep_cutoff),\n"
		"guarded by ETag and tag, and tags a ready document's blob committed; it never\n"
		"deletes a committed blob whose metadata names a document (adoptable).\n"
		"--adopt, after a restore from an older backup, first rebuilds the rows from\n"
		"the blobs' metadata (documents created or replaced since come back, those\n"
		"deleted since go); --dry-run prints every decision and changes nothing.\n"
		"--prefix P audits only blob names starting with the configured prefix + P.\n"
		"--deep re-reads every ready document's bytes and checks their SHA-256.\n"
		"Exit 0 clean, 1 problems, 2 a dangling document.  See bindery(8).\n");
}

static void
print_text(const struct audit_report *rep, int repair, double secs)
{
	size_t i;
	json_t *f;

	json_array_foreach(rep->findings, i, f) {
		const char *repair_note = json_string_value(json_object_get(f, "repair"));

		printf("%-22s %s: %s%s%s%s\n", json_string_value(json_object_get(f, "kind")),
		       json_string_value(json_object_get(f, "name")),
		       json_string_value(json_object_get(f, "detail")),
		       repair_note ? " [" : "", repair_note ? repair_note : "", repair_note ? "]" : "");
	}
	printf("audit: %llu blobs, %llu rows; %llu orphans, %llu adoptable, %llu dangling,"
	       " %llu tag mismatches, %llu committed unreferenced, %llu unregistered,"
	       " %llu stale intents, %llu with staged blocks, %llu in flight",
	       (unsigned long long)rep->listed, (unsigned long long)rep->rows,
	       (unsigned long long)rep->orphans, (unsigned long long)rep->adoptable,
	       (unsigned long long)rep->dangling,
	       (unsigned long long)rep->tag_mismatches, (unsigned long long)rep->committed_unreferenced,
	       (unsigned long long)rep->unregistered, (unsigned long long)rep->stale_pending,
	       (unsigned long long)rep->uncommitted, (unsigned long long)rep->in_flight);
	if (rep->deep_checked || rep->unreadable)
		printf("; deep: %llu re-hashed, %llu unreadable", (unsigned long long)rep->deep_checked,
		       (unsigned long long)rep->unreadable);
	if (repair)
		printf("; repaired: %llu orphans deleted, %llu re-tagged, %llu refused",
		       (unsigned long long)rep->orphans_deleted, (unsigned long long)rep->retagged,
		       (unsigned long long)rep->repair_failed);
	printf(" in %.3fs\n", secs);
}

static int
print_json(const struct audit_report *rep, int repair, double secs)
{
	json_t *j = json_pack("{s:b, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}, s:O, s:f}",
			      "clean", audit_problems_left(rep) == 0, "counts",
			      "blobs_listed", (json_int_t)rep->listed, "rows", (json_int_t)rep->rows,
			      "orphans", (json_int_t)rep->orphans, "adoptable", (json_int_t)rep->adoptable,
			      "dangling", (json_int_t)rep->dangling,
			      "tag_mismatches", (json_int_t)rep->tag_mismatches,
			      "committed_unreferenced", (json_int_t)rep->committed_unreferenced,
			      "unregistered", (json_int_t)rep->unregistered,
			      "stale_pending", (json_int_t)rep->stale_pending,
			      "uncommitted_blocks", (json_int_t)rep->uncommitted,
			      "in_flight", (json_int_t)rep->in_flight,
			      "findings", rep->findings, "seconds", secs);
	int rc = -1;

	if (j == NULL)
		return -1;
	if (rep->deep_checked || rep->unreadable)
		json_object_set_new(j, "deep", json_pack("{s:I, s:I}", "rehashed", (json_int_t)rep->deep_checked,
							 "unreadable", (json_int_t)rep->unreadable));
	if (repair)
		json_object_set_new(j, "repaired",
				    json_pack("{s:I, s:I, s:I}", "orphans_deleted",
					      (json_int_t)rep->orphans_deleted, "retagged",
					      (json_int_t)rep->retagged, "refused",
					      (json_int_t)rep->repair_failed));
	if (json_dumpf(j, stdout, JSON_INDENT(2)) == 0) {
		putchar('\n');
		rc = 0;
	}
	json_decref(j);
	return rc;
}

int
cmd_audit(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "repair", no_argument, NULL, 'r' },
		{ "min-age", required_argument, NULL, 'm' },
		{ "prefix", required_argument, NULL, 'p' },
		{ "deep", no_argument, NULL, 'd' },
		{ "adopt", no_argument, NULL, 'a' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct audit_opts ao;
	struct audit_report rep;
	struct timespec t0, t1;
	const char *narrow = "";
	char prefix[512];
	unsigned min_age = 0;
	int json = 0, have_min_age = 0, adopt = 0, dry_run = 0, adopt_left = 0, c, rc;
	enum audit_err ae;
	double secs;

	memset(&ao, 0, sizeof ao);
	while ((c = getopt_long(argc, argv, "jrm:p:dvhan", opts, NULL)) != -1) {
		switch (c) {
		case 'a': adopt = 1; break;
		case 'n': dry_run = 1; break;
		case 'j': json = 1; break;
		case 'r': ao.repair = 1; break;
		case 'd': ao.deep = 1; break;
		case 'm':
			if (cli_parse_unsigned(optarg, &min_age) != 0) {
				fprintf(stderr, "bindery audit: --min-age wants seconds, not '%s'\n", optarg);
				return EXIT_USAGE;
			}
			have_min_age = 1;
			break;
		case 'p': narrow = optarg; break;
		case 'v': cli->verbose = 1; break;
		case 'h': audit_usage(stdout); return 0;
		default: audit_usage(stderr); return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "bindery audit: unexpected argument '%s'\n", argv[optind]);
		audit_usage(stderr);
		return EXIT_USAGE;
	}
	if ((adopt && !ao.repair) || (dry_run && !adopt)) {
		fprintf(stderr, "bindery audit: --adopt goes with --repair, --dry-run with --adopt\n");
		audit_usage(stderr);
		return EXIT_USAGE;
	}
	if ((rc = cli_services(cli)) != 0)
		return rc;
	/* --prefix narrows the audit inside the configured prefix, never outside it. */
	if ((size_t)snprintf(prefix, sizeof prefix, "%s%s", cli->cfg->storage_prefix, narrow) >=
	    sizeof prefix) {
		fprintf(stderr, "bindery audit: --prefix too long\n");
		return EXIT_USAGE;
	}
	ao.prefix = prefix;
	ao.stale_cutoff = cli->cfg->sweep_cutoff;
	ao.min_age = have_min_age ? min_age : cli->cfg->sweep_cutoff;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (adopt) {
		struct adopt_opts ado = { prefix, dry_run };
		struct adopt_report ar;

		/* Its decisions on stdout, or beside the JSON on stderr. */
		if (adopt_run(cli->svc, &ado, json ? stderr : stdout, &ar) != 0) {
			fprintf(stderr, "bindery audit: --adopt could not read the container or the"
					" database (the log says why); nothing more was done\n");
			return EXIT_UNAVAILABLE;
		}
		fprintf(json ? stderr : stdout, "adopt: %s%llu made again, %llu moved to a newer version,"
			" %llu deleted, %llu into the outbox; %llu left for a human, %llu failed\n",
			dry_run ? "(dry run) " : "", (unsigned long long)ar.created,
			(unsigned long long)ar.replaced, (unsigned long long)ar.deleted,
			(unsigned long long)ar.retired, (unsigned long long)ar.conflicts,
			(unsigned long long)ar.failed);
		adopt_left = ar.conflicts || ar.failed;
		/* A dry run repairs nothing: the audit after it only reports. */
		if (dry_run)
			ao.repair = 0;
		/* The restore rewound every owner's [quota] figures with the
		 * rows; the adopted rows are counted again from scratch. */
		if (!dry_run && quota_db_enabled()) {
			uint64_t owners = 0;
			enum db_err qe = quota_db_recount(cli->svc->db, &owners);

			if (qe != DB_OK)
				fprintf(stderr, "bindery audit: quota figures not recounted (%s): run bindery quota"
						" --recount\n", db_err_name(qe));
			else
				fprintf(json ? stderr : stdout, "quota: %llu owners recounted\n",
					(unsigned long long)owners);
		}
	}
	ae = audit_run(cli->svc, &ao, &rep);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	if (ae != AUDIT_OK) {
		if (ae == AUDIT_DB_UNAVAILABLE)
			rc = cli_db_failed(cli, "bindery audit", DB_UNAVAILABLE, EXIT_UNAVAILABLE);
		else if (ae == AUDIT_STORAGE_UNAVAILABLE)
			rc = cli_storage_failed("bindery audit", "listing the container", &rep.listing,
						EXIT_UNAVAILABLE);
		else {
			fprintf(stderr, "bindery audit: failed (out of memory, or a database error the"
					" log names)\n");
			rc = EXIT_SOFTWARE;
		}
		audit_report_clear(&rep);
		return rc;
	}
	if (json)
		rc = print_json(&rep, ao.repair, secs) == 0 ? 0 : EXIT_SOFTWARE;
	else if (cli->verbose || json_array_size(rep.findings) > 0)
		print_text(&rep, ao.repair, secs);
	if (rc == 0)
		rc = rep.dangling ? EXIT_DANGLING : audit_problems_left(&rep) || adopt_left ? EXIT_PROBLEMS : 0;
	audit_report_clear(&rep);
	return rc;
}
