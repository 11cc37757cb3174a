/*
 * bindery - the admin CLI: migrate, sweep, status, audit, lifecycle-policy,
 * check-account, events, quota, scan, cors.  Cron runs `bindery sweep`; it
 * is silent when all is well.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "autoconfig.h"
#include "cli.h"
#include "base/log.h"

struct command {
	const char *name;
	int (*run)(struct cli *, int, char **);
	const char *summary;
};

static const struct command commands[] = {
	{ "migrate", cmd_migrate, "apply the SQL migrations and create the storage container" },
	{ "sweep", cmd_sweep, "resolve stale intents and drain the deletion outbox (cron)" },
	{ "status", cmd_status, "backlogs, the last sweep, the schema version (monitoring)" },
	{ "audit", cmd_audit, "compare the container with the database and report differences" },
	{ "lifecycle-policy", cmd_lifecycle_policy, "print the lifecycle-management backstop policy" },
	{ "check-account", cmd_check_account, "report soft delete, versioning and tag permissions" },
	{ "events", cmd_events, "the webhook deliveries of [events]: counts, dead ones, requeue, resume" },
	{ "quota", cmd_quota, "each owner's usage against [quota]; --recount rebuilds it from the rows" },
	{ "scan", cmd_scan, "rescan ready documents with clamd; quarantine or release the infected" },
	{ "cors", cmd_cors, "let these web origins upload straight to storage (direct uploads)" },
};

static void
usage(FILE *fp)
{
	size_t i;

	fprintf(fp, "usage: bindery [-c CONFIG] [-v] COMMAND [OPTIONS]\n\n"
		    "Keeps MariaDB rows and Azure Blob Storage objects consistent.\n\n"
		    "Commands:\n");
	for (i = 0; i < ARRAY_LEN(commands); i++)
		fprintf(fp, "  %-18s %s\n", commands[i].name, commands[i].summary);
	fprintf(fp, "\nOptions:\n"
		    "  -c, --config PATH  configuration file (default $BINDERY_CONFIG, then\n"
		    "                     %s)\n"
		    "  -v, --verbose      print a summary even when all is well\n"
		    "  -h, --help         this help; `bindery COMMAND --help` for a command\n"
		    "      --version      print the version and exit\n\n"
		    "Exit status: 0 ok, 1 problems left, 2 a dangling document (audit) or an\n"
		    "infected one (scan), 64 usage, 69 dependency unavailable, 70 internal error,\n"
		    "75 try again later, 77 the database or storage refused the account or a\n"
		    "privilege, 78 configuration.\n"
		    "See bindery(8).\n", CONFIG_DEFAULT_PATH);
}

/*
 * Levenshtein distance between a and b, both at most EDIT_MAX bytes; a
 * longer one counts as too far (EDIT_MAX + 1).  For "did you mean" only.
 */
#define EDIT_MAX 32
static size_t
edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j, prev[EDIT_MAX + 1], cur[EDIT_MAX + 1];

	if (la > EDIT_MAX || lb > EDIT_MAX)
		return EDIT_MAX + 1;
	for (j = 0; j <= lb; j++)
		prev[j] = j;
	for (i = 1; i <= la; i++) {
		cur[0] = i;
		for (j = 1; j <= lb; j++) {
			size_t del = prev[j] + 1, ins = cur[j - 1] + 1,
			       sub = prev[j - 1] + (a[i - 1] != b[j - 1]);

			cur[j] = del < ins ? del : ins;
			if (sub < cur[j])
				cur[j] = sub;
		}
		memcpy(prev, cur, sizeof prev);
	}
	return prev[lb];
}

/*
 * An unknown command: what was wrong, the nearest command within two edits
 * when there is one, and a short usage -- a cron mail or a terminal shows
 * the mistake, not a page of help.
 */
static void
unknown_command(const char *name)
{
	size_t i, d, best = 3, at = 0;

	for (i = 0; i < ARRAY_LEN(commands); i++) {
		d = edit_distance(name, commands[i].name);
		if (d < best) {
			best = d;
			at = i;
		}
	}
	if (best <= 2)
		fprintf(stderr, "bindery: unknown command '%s'; did you mean '%s'?\n", name,
			commands[at].name);
	else
		fprintf(stderr, "bindery: unknown command '%s'\n", name);
	fprintf(stderr, "usage: bindery [-c CONFIG] [-v] COMMAND [OPTIONS]\ncommands:");
	for (i = 0; i < ARRAY_LEN(commands); i++)
		fprintf(stderr, " %s", commands[i].name);
	fprintf(stderr, "\n`bindery --help` describes them; see bindery(8).\n");
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	char prog[64];
	struct cli cli;
	size_t i;
	int c, rc = EXIT_USAGE;

	memset(&cli, 0, sizeof cli);
	/* '+' stops at the subcommand so its options are its own. */
	while ((c = getopt_long(argc, argv, "+c:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'c': cli.config_path = optarg; break;
		case 'v': cli.verbose = 1; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("%s\n", PACKAGE_STRING); return 0;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "bindery: no command given\n");
		usage(stderr);
		return EXIT_USAGE;
	}
	/* Under cron there is no terminal: log to syslog, keep stdout for the summary. */
	cli.quiet_logs = !isatty(STDERR_FILENO) && getenv("BINDERY_LOG_STDERR") == NULL;
	log_init("bindery", LOG_LEVEL_WARN, cli.quiet_logs ? LOG_SINK_SYSLOG : LOG_SINK_STDERR);
	for (i = 0; i < ARRAY_LEN(commands); i++) {
		if (strcmp(argv[optind], commands[i].name) == 0) {
			argc -= optind;
			argv += optind;
			optind = 1;
			/* getopt names argv[0] in its messages: "bindery sweep: ...". */
			snprintf(prog, sizeof prog, "bindery %s", commands[i].name);
			argv[0] = prog;
			rc = commands[i].run(&cli, argc, argv);
			goto out;
		}
	}
	unknown_command(argv[optind]);
out:
	services_free(cli.svc);
	config_free(cli.cfg);
	return rc;
}
