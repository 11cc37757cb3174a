/*
 * cli.c - what the `bindery` subcommands share (cli.h): loading the
 * configuration and the services once, usage errors, number arguments.
 * The commands call these; main (bindery_cli.c) calls the commands, so the
 * calls run one way.
 */
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "cli.h"
#include "parse/http_parse.h"

enum cli_exit
cli_usage_error(const char *synopsis, const char *why)
{
	if (why != NULL)
		fprintf(stderr, "%s\n", why);
	fprintf(stderr, "%s\n", synopsis);
	return EXIT_USAGE;
}

int
cli_parse_unsigned(const char *s, unsigned *out)
{
	uint64_t v;

	if (http_parse_uint(span_from_cstr(s), 0x7fffffff, &v) != HTTP_UINT_OK)
		return -1;
	*out = (unsigned)v;
	return 0;
}

void
cli_db_cause(const struct cli *cli, enum db_err e, char *out, size_t outlen)
{
	const char *why = cli->svc && cli->svc->db ? db_last_error(cli->svc->db) : "";

	if (e == DB_NOMEM || why[0] == '\0')
		snprintf(out, outlen, "database %s", db_err_name(e));
	else
		snprintf(out, outlen, "database %s: %s", db_err_name(e), why);
}

void
cli_storage_cause(const char *what, const struct blob_result *r, char *out, size_t outlen)
{
	if (r->status == BLOB_CREDENTIAL)
		snprintf(out, outlen, "%s: no Entra ID token (%s%s): %s", what, blob_status_name(r->status),
			 r->code[0] ? ", refused" : ", no answer", r->message[0] ? r->message : "no message");
	else if (r->http_status == 0)
		snprintf(out, outlen, "%s: %s (no answer): %s", what, blob_status_name(r->status),
			 r->message[0] ? r->message : "no message");
	else
		snprintf(out, outlen, "%s: %s (HTTP %ld%s%s)%s%s", what, blob_status_name(r->status),
			 r->http_status, r->code[0] ? " " : "", r->code, r->message[0] ? ": " : "",
			 r->message);
}

int
cli_db_exit(const struct cli *cli, enum db_err e, int other)
{
	/* Only an error the server or the client library reported has a number
	 * to read; any other is a verdict of ours on a good answer. */
	if ((e == DB_UNAVAILABLE || e == DB_FAILED) && cli->svc && cli->svc->db &&
	    db_last_refused(cli->svc->db))
		return EXIT_NOPERM;
	if (e == DB_UNAVAILABLE)
		return EXIT_UNAVAILABLE;
	return e == DB_NOMEM ? EXIT_SOFTWARE : other;
}

int
cli_storage_exit(const struct blob_result *r, int other)
{
	switch (r->status) {
	case BLOB_AUTH_FAILED:
		return EXIT_NOPERM;
	case BLOB_CREDENTIAL:
		/* The authority's refusal carries its error code; no answer
		 * (or its failure) is the authority out of reach. */
		return r->code[0] ? EXIT_NOPERM : EXIT_UNAVAILABLE;
	case BLOB_TRANSIENT:
	case BLOB_DEADLINE:
		return EXIT_UNAVAILABLE;
	case BLOB_NOMEM:
		return EXIT_SOFTWARE;
	case BLOB_FAILED:
		/* No answer at all (a refused certificate, a name that does not
		 * resolve): the service is out of reach. */
		return r->http_status == 0 ? EXIT_UNAVAILABLE : other;
	default:
		return other;
	}
}

int
cli_db_failed(const struct cli *cli, const char *cmd, enum db_err e, int other)
{
	char cause[768];

	cli_db_cause(cli, e, cause, sizeof cause);
	fprintf(stderr, "%s: %s\n", cmd, cause);
	return cli_db_exit(cli, e, other);
}

int
cli_storage_failed(const char *cmd, const char *what, const struct blob_result *r, int other)
{
	char cause[512];

	cli_storage_cause(what, r, cause, sizeof cause);
	fprintf(stderr, "%s: %s\n", cmd, cause);
	return cli_storage_exit(r, other);
}

int
cli_config(struct cli *cli)
{
	char err[CONFIG_ERRORS_MAX], warn[512];
	const char *line, *end;

	if (cli->cfg)
		return 0;
	if (config_load(cli->config_path, &cli->cfg, err, sizeof err, warn, sizeof warn) != 0) {
		/* One problem a line, each with its FILE:LINE. */
		for (line = err; *line; line = *end ? end + 1 : end) {
			end = strchr(line, '\n');
			if (end == NULL)
				end = line + strlen(line);
			if (line == err)
				snprintf(cli->why, sizeof cli->why, "%.*s", (int)(end - line), line);
			fprintf(stderr, "bindery: %.*s\n", (int)(end - line), line);
		}
		return EXIT_CONFIG;
	}
	if (warn[0])
		log_warn("%s", warn);
	if (!cli->verbose)
		log_set_level(cli->cfg->log_level < LOG_LEVEL_INFO ? cli->cfg->log_level : LOG_LEVEL_WARN);
	else
		log_set_level(cli->cfg->log_level);
	return 0;
}

int
cli_services(struct cli *cli)
{
	char err[512];
	int rc = cli_config(cli);

	if (rc || cli->svc)
		return rc;
	if (services_open(cli->cfg, &cli->svc, err, sizeof err) != 0) {
		snprintf(cli->why, sizeof cli->why, "%s", err);
		fprintf(stderr, "bindery: %s\n", err);
		return EXIT_CONFIG;
	}
	return 0;
}
