/*
 * cmd_migrate.c - `bindery migrate`: apply the SQL migrations not yet
 * applied and create the storage container; safe to run again.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "registry/migrate.h"

int
cmd_migrate(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dry-run", no_argument, NULL, 'n' },
		{ "sql-dir", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const char synopsis[] = "usage: bindery migrate [--dry-run] [--sql-dir DIR]";
	const char *dir = NULL;
	struct migrate_report rep;
	struct blob_result br;
	char err[1024];
	int dry_run = 0, c, rc;
	enum migrate_err me;

	while ((c = getopt_long(argc, argv, "nd:h", opts, NULL)) != -1) {
		switch (c) {
		case 'n': dry_run = 1; break;
		case 'd': dir = optarg; break;
		case 'h':
			printf("%s\n\n"
			       "Applies sql/NNN_*.sql files not yet applied, in order, and creates the\n"
			       "storage container if it does not exist.  Safe to run again.  Refuses a\n"
			       "database whose schema is newer than this bindery.  Exit 77 when the\n"
			       "database or storage refuses the account or a privilege (the runtime\n"
			       "account's file).\n", synopsis);
			return 0;
		default:
			return cli_usage_error(synopsis, NULL);
		}
	}
	if (optind != argc)
		return cli_usage_error(synopsis, "bindery migrate: takes no arguments");
	if ((rc = cli_services(cli)) != 0)
		return rc;
	if (dir == NULL)
		dir = migrate_default_dir();
	me = migrate_run(cli->svc->db, dir, dry_run, &rep, err, sizeof err);
	if (me != MIGRATE_OK) {
		fprintf(stderr, "bindery migrate: %s\n", err);
		/* A refused account or privilege (the runtime account's file) is
		 * EX_NOPERM: retrying with the same file cannot help. */
		switch (me) {
		case MIGRATE_DENIED: return EXIT_NOPERM;
		case MIGRATE_DB: return cli_db_exit(cli, DB_UNAVAILABLE, EXIT_UNAVAILABLE);
		case MIGRATE_TOO_NEW: return EXIT_PROBLEMS;
		default: return EXIT_CONFIG;
		}
	}
	if (!dry_run && blob_container_create(cli->svc->blob, &br) != 0) {
		snprintf(err, sizeof err, "cannot create container %s", cli->cfg->storage_container);
		return cli_storage_failed("bindery migrate", err, &br, EXIT_UNAVAILABLE);
	}
	if (cli->verbose || rep.applied)
		printf("%s %u migration(s); schema version %u of %u\n",
		       dry_run ? "would apply" : "applied", rep.applied, rep.current, rep.known);
	return 0;
}
