/*
 * cli.c - what the `bindery` subcommands share (cli.h): loading the
 * configuration and the services once, usage errors, number arguments.
 * The commands call these; main (bindery_cli.c) calls the commands, so the
 * calls run one way.
 */
#include <stdio.h>

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

int
cli_config(struct cli *cli)
{
	char err[1024], warn[512];

	if (cli->cfg)
		return 0;
	if (config_load(cli->config_path, &cli->cfg, err, sizeof err, warn, sizeof warn) != 0) {
		fprintf(stderr, "bindery: %s\n", err);
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
		fprintf(stderr, "bindery: %s\n", err);
		return EXIT_CONFIG;
	}
	return 0;
}
