/*
 * cli.h - what every `bindery` subcommand shares: global options, the
 * configuration and services (loaded on first use), and exit codes from
 * sysexits(3) so cron and scripts can tell "problems left" from "try later".
 */
#ifndef BINDERY_CLI_H
#define BINDERY_CLI_H

#include "parse/config.h"
#include "protocol/services.h"

enum cli_exit {
	EXIT_OK_ = 0,
	EXIT_PROBLEMS = 1,	/* ran, but found or left problems */
	EXIT_DANGLING = 2,	/* audit: a dangling document (breaks readers) */
	EXIT_INFECTED = 2,	/* scan: infected documents found */
	EXIT_USAGE = 64,	/* EX_USAGE */
	EXIT_UNAVAILABLE = 69,	/* EX_UNAVAILABLE: a dependency is down */
	EXIT_SOFTWARE = 70,	/* EX_SOFTWARE */
	EXIT_TEMPFAIL = 75,	/* EX_TEMPFAIL: try again later (e.g. lock held) */
	EXIT_NOPERM = 77,	/* EX_NOPERM: the database or storage refused our
				 * credentials or a privilege */
	EXIT_CONFIG = 78,	/* EX_CONFIG */
};

struct cli {
	const char *config_path;	/* -c, or NULL for $BINDERY_CONFIG / default */
	int verbose;			/* -v */
	int quiet_logs;			/* logging to syslog (not a terminal) */
	struct bindery_config *cfg;	/* owned, loaded by cli_config() */
	struct services *svc;		/* owned, opened by cli_services() */
	char why[512];			/* why cli_config() or cli_services() failed (the
					 * first problem), for a command that must say it
					 * in its own format (status --json) */
};

/*
 * Load the configuration once.  Returns 0, or EXIT_CONFIG after printing
 * every problem of the file to stderr, one "bindery: FILE:LINE: problem"
 * line each.
 */
int cli_config(struct cli *cli);
/* Configuration plus the database and storage handles (connect lazily). */
int cli_services(struct cli *cli);

/*
 * A command's failure says why on stderr, always: under cron the log goes
 * to syslog, and cron mails only what the command prints, so "database:
 * unavailable" alone would hide an "Access denied".  The cause is the
 * server's or the service's own words, which never hold a secret.
 */

/* "database unavailable: 1045: Access denied for user ..." for e, the
 * error of a call on cli->svc->db. */
void cli_db_cause(const struct cli *cli, enum db_err e, char *out, size_t outlen);
/* "WHAT: BLOB_AUTH_FAILED (HTTP 403 AuthenticationFailed): message" */
void cli_storage_cause(const char *what, const struct blob_result *r, char *out, size_t outlen);
/* The exit status for a database error e: EXIT_NOPERM when the server
 * refused the account, EXIT_UNAVAILABLE when it is down, other otherwise. */
int cli_db_exit(const struct cli *cli, enum db_err e, int other);
/* The same for storage: EXIT_NOPERM for 401/403, EXIT_UNAVAILABLE when it
 * did not answer or kept failing, EXIT_SOFTWARE out of memory, other
 * otherwise (a refusal of what was asked, such as a bad CORS origin). */
int cli_storage_exit(const struct blob_result *r, int other);
/* "CMD: CAUSE" on stderr (CMD such as "bindery status") and cli_db_exit(). */
BINDERY_NODISCARD int cli_db_failed(const struct cli *cli, const char *cmd, enum db_err e, int other);
/* "CMD: CAUSE" on stderr and cli_storage_exit(). */
BINDERY_NODISCARD int cli_storage_failed(const char *cmd, const char *what, const struct blob_result *r,
					 int other);

/*
 * A usage error of a subcommand: WHY (NULL when getopt has already printed
 * what was wrong) and then SYNOPSIS ("usage: bindery CMD ...") on stderr.
 * Returns EXIT_USAGE, for the command to return.
 */
BINDERY_NODISCARD enum cli_exit cli_usage_error(const char *synopsis, const char *why);

/* A command-line count or number of seconds: strict decimal, 0..2^31-1.
 * 0, or -1 for anything else. */
int cli_parse_unsigned(const char *s, unsigned *out);

/* Subcommands: argv[0] is the subcommand's name; they return an exit code. */
int cmd_migrate(struct cli *cli, int argc, char **argv);
int cmd_sweep(struct cli *cli, int argc, char **argv);
int cmd_audit(struct cli *cli, int argc, char **argv);
int cmd_lifecycle_policy(struct cli *cli, int argc, char **argv);
int cmd_check_account(struct cli *cli, int argc, char **argv);
int cmd_cors(struct cli *cli, int argc, char **argv);
int cmd_status(struct cli *cli, int argc, char **argv);
int cmd_events(struct cli *cli, int argc, char **argv);
int cmd_quota(struct cli *cli, int argc, char **argv);
int cmd_scan(struct cli *cli, int argc, char **argv);

#endif
