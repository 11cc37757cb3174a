/*
 * cmd_quota.c - `bindery quota`: what each owner stores and has reserved
 * against [quota], and the recount that rebuilds it from the rows (after
 * [quota] is first set, or a restore).
 */
#include <getopt.h>
#include <stdio.h>
#include <jansson.h>

#include "cli.h"
#include "registry/quota_db.h"

struct listing {
	int as_json;
	int failed;
};

static int
print_usage(void *ctx, const struct quota_usage *u)
{
	struct listing *l = ctx;

	if (l->as_json) {
		json_t *j = json_pack("{s:s, s:I, s:I, s:I, s:I}", "owner", u->owner, "bytes", (json_int_t)u->bytes,
				      "documents", (json_int_t)u->documents, "reserved", (json_int_t)u->reserved,
				      "pending", (json_int_t)u->pending);

		if (j == NULL || json_dumpf(j, stdout, JSON_COMPACT) != 0) {
			json_decref(j);
			l->failed = 1;
			return 1;
		}
		json_decref(j);
		putchar('\n');
	} else {
		printf("%-24s %14llu bytes %8llu documents %14llu reserved %6llu pending\n", u->owner,
		       (unsigned long long)u->bytes, (unsigned long long)u->documents,
		       (unsigned long long)u->reserved, (unsigned long long)u->pending);
	}
	return 0;
}

int
cmd_quota(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "recount", no_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const char synopsis[] = "usage: bindery quota [--json] [--recount]";
	struct listing l = { 0, 0 };
	uint64_t owners = 0;
	int recount = 0, c, rc;
	enum db_err e;

	while ((c = getopt_long(argc, argv, "jrh", opts, NULL)) != -1) {
		switch (c) {
		case 'j': l.as_json = 1; break;
		case 'r': recount = 1; break;
		case 'h':
			printf("%s\n\n"
			       "Each owner's stored bytes and documents and what its uploads in flight\n"
			       "reserve, largest first, against [quota].  --recount rebuilds every owner's\n"
			       "figures from the documents and the open reservations (run it after [quota]\n"
			       "is first set, and after a database restore; uploads may go on meanwhile).\n"
			       "Exit 0, 69 the database is unavailable, 78 no [quota] is configured.\n"
			       "See bindery(8).\n",
			       synopsis);
			return 0;
		default:
			return cli_usage_error(synopsis, NULL);
		}
	}
	if (optind != argc)
		return cli_usage_error(synopsis, NULL);
	if ((rc = cli_services(cli)) != 0)
		return rc;
	if (!quota_db_enabled()) {
		fprintf(stderr, "bindery quota: no [quota] limit is configured in %s\n", cli->cfg->path);
		return EXIT_CONFIG;
	}
	if (recount) {
		if ((e = quota_db_recount(cli->svc->db, &owners)) != DB_OK)
			return cli_db_failed(cli, "bindery quota", e, EXIT_SOFTWARE);
		if (!l.as_json)
			printf("recounted: %llu owners\n", (unsigned long long)owners);
	}
	if ((e = quota_db_list(cli->svc->db, 1000, print_usage, &l)) != DB_OK)
		return cli_db_failed(cli, "bindery quota", e, EXIT_SOFTWARE);
	return l.failed ? EXIT_SOFTWARE : 0;
}
