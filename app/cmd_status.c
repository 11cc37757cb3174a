/*
 * cmd_status.c - `bindery status`: what waits in the registry, when the
 * sweeper last ran and how, and whether the schema is current.
 * Its exit status is for cron and monitoring: 0 when nothing needs a
 * human, 1 when the sweeper is late or the schema is not the one this
 * bindery ships, and sysexits(3) when it cannot tell (cli.h).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cli.h"
#include "registry/quota_db.h"
#include "registry/migrate.h"
#include "status_render.h"

/*
 * --json when there are no figures to print: still one JSON object, so a
 * monitor that parses the output learns why, {"ok": false, "error": CAUSE,
 * "database": what failed}.  The cause is on stderr too.  Returns rc, or
 * EXIT_SOFTWARE when the object cannot be written.
 */
static int
print_json_failure(const char *error, const char *database, int rc)
{
	json_t *j = json_pack("{s:b, s:s, s:s?}", "ok", 0, "error", error, "database", database);
	int wrote;

	if (j == NULL)
		return EXIT_SOFTWARE;
	wrote = json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) == 0;
	json_decref(j);
	if (!wrote)
		return EXIT_SOFTWARE;
	putchar('\n');
	return rc;
}

/* ISO 8601 UTC, or JSON null for 0. */
static json_t *
json_time(int64_t t)
{
	char when[32];
	time_t tt = (time_t)t;
	struct tm tm;

	if (t == 0 || gmtime_r(&tt, &tm) == NULL ||
	    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		return json_null();
	return json_string(when);
}

/*
 * How storage requests authenticate.  With Entra, the token and the user
 * delegation key are made ready (from this user's cache when it holds
 * them, else fetched): their expiry is what a monitor wants, and a
 * credential that stopped working shows here as "error".
 */
static json_t *
auth_status(struct cli *cli, int as_json)
{
	struct blob_auth_info ai;
	struct blob_result r;
	const char *err = NULL;
	json_t *j;

	blob_auth_info(cli->svc->blob, &ai);
	if (ai.mode == BLOB_AUTH_ENTRA) {
		if (blob_entra_ready(cli->svc->blob, 0, &r) != 0)
			err = r.message;
		blob_auth_info(cli->svc->blob, &ai);
	}
	if (!as_json) {
		printf("storage auth: %s%s%s%s\n", blob_auth_mode_name(ai.mode), ai.credential[0] ? " (" : "",
		       ai.credential, ai.credential[0] ? ")" : "");
		if (ai.mode == BLOB_AUTH_ENTRA && err != NULL)
			printf("  error: %s\n", err);
		return NULL;
	}
	j = json_pack("{s:s}", "mode", blob_auth_mode_name(ai.mode));
	if (j == NULL || ai.mode != BLOB_AUTH_ENTRA)
		return j;
	json_object_set_new(j, "credential", json_string(ai.credential));
	json_object_set_new(j, "token_expires", json_time(ai.token_expires));
	json_object_set_new(j, "delegation_key_expires", json_time(ai.delegation_key_expires));
	json_object_set_new(j, "token_cache", ai.token_cache ? json_string(ai.token_cache) : json_null());
	json_object_set_new(j, "error", err ? json_string(err) : json_null());
	return j;
}

struct quota_walk {
	json_t *list;		/* --json: the owners' objects; else NULL */
	const struct bindery_config *cfg;
};

static int
quota_row(void *ctx, const struct quota_usage *u)
{
	struct quota_walk *w = ctx;

	if (w->list != NULL)
		return json_array_append_new(w->list, json_pack("{s:s, s:I, s:I, s:I, s:I}", "owner", u->owner,
								 "bytes", (json_int_t)u->bytes, "documents",
								 (json_int_t)u->documents, "reserved",
								 (json_int_t)u->reserved, "pending",
								 (json_int_t)u->pending)) != 0;
	printf("  %-24s %llu bytes (+%llu reserved) of %llu, %llu documents, %llu in flight\n", u->owner,
	       (unsigned long long)u->bytes, (unsigned long long)u->reserved,
	       (unsigned long long)w->cfg->quota_bytes_per_owner, (unsigned long long)u->documents,
	       (unsigned long long)u->pending);
	return 0;
}

/* With [quota]: the owners' usage, the largest ten (bindery quota lists all). */
static json_t *
quota_status(struct cli *cli, int as_json)
{
	struct quota_walk w = { as_json ? json_array() : NULL, cli->cfg };

	if (!quota_db_enabled())
		return as_json ? json_null() : NULL;
	if (!as_json)
		printf("quota usage (largest first; 0 is no limit):\n");
	if (quota_db_list(cli->svc->db, 10, quota_row, &w) != DB_OK && !as_json)
		printf("  (not readable now)\n");
	return w.list;
}

int
cmd_status(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "sql-dir", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const char synopsis[] = "usage: bindery status [--json] [--sql-dir DIR]";
	const char *dir = NULL;
	char cause[768];
	struct status_view v;
	enum db_err e;
	json_t *j;
	int as_json = 0, c, rc;

	while ((c = getopt_long(argc, argv, "jd:h", opts, NULL)) != -1) {
		switch (c) {
		case 'j': as_json = 1; break;
		case 'd': dir = optarg; break;
		case 'h':
			printf("%s\n\n"
			       "Prints the oldest pending intent's age, the deletion outbox, unfinished\n"
			       "uploads (tus and direct), idempotency keys, the last sweep and the last\n"
			       "ok one, and the schema version applied against the one shipped.\n"
			       "Exit status: 0 all is well; 1 the sweeper is late (no ok sweep within\n"
			       "[sweep] late_after seconds, or none ever) or the schema is behind or\n"
			       "ahead; 69 the database is unavailable; 77 it refused the account;\n"
			       "78 the configuration.  --json prints {\"ok\": false, \"error\": ...} when\n"
			       "there are no figures.  See bindery(8).\n", synopsis);
			return 0;
		default:
			return cli_usage_error(synopsis, NULL);
		}
	}
	if (optind != argc)
		return cli_usage_error(synopsis, "bindery status: takes no arguments");
	if ((rc = cli_services(cli)) != 0)
		return as_json ? print_json_failure(cli->why, NULL, rc) : rc;
	if (dir == NULL)
		dir = migrate_default_dir();
	if ((e = status_view_fill(cli->svc, dir, &v)) != DB_OK) {
		rc = cli_db_failed(cli, "bindery status", e, EXIT_SOFTWARE);
		if (!as_json)
			return rc;
		cli_db_cause(cli, e, cause, sizeof cause);
		return print_json_failure(cause, rc == EXIT_NOPERM ? "refused"
					  : rc == EXIT_UNAVAILABLE ? "unavailable" : "failed", rc);
	}
	if (as_json) {
		if ((j = status_render_json(&v)) == NULL) {
			fprintf(stderr, "bindery status: out of memory\n");
			return EXIT_SOFTWARE;
		}
		json_object_set_new(j, "storage_auth", auth_status(cli, 1));
		json_object_set_new(j, "quota", quota_status(cli, 1));
		rc = json_dumpf(j, stdout, JSON_INDENT(2));
		json_decref(j);
		if (rc != 0)
			return EXIT_SOFTWARE;
		putchar('\n');
	} else {
		status_render_text(stdout, &v);
		(void)auth_status(cli, 0);
		(void)quota_status(cli, 0);
	}
	return status_view_fine(&v) ? 0 : EXIT_PROBLEMS;
}
