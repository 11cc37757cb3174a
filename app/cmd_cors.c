/*
 * cmd_cors.c - `bindery cors ORIGIN...`: let the page's origins upload
 * straight to storage (direct uploads, doc/design.md "Direct uploads").  A
 * browser sends a cross-origin Put Blob only after a preflight the Blob
 * service answers from its CORS rules; this sets the one rule direct
 * uploads need (Set Blob Service Properties, signed with the account key).
 */
#include <getopt.h>
#include <stdio.h>

#include "cli.h"

int
cmd_cors(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const char synopsis[] = "usage: bindery cors ORIGIN...";
	struct blob_result r;
	int c, rc;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'h') {
			printf("%s\n\n"
			       "Sets the Blob service's CORS rules to one rule: the ORIGINs (e.g.\n"
			       "https://docs.example.org, scheme, host and port as the browser sends\n"
			       "them) may PUT with x-ms-blob-type, x-ms-tags, If-None-Match and\n"
			       "Content-Type, and read the answer's ETag: what a direct upload\n"
			       "([upload] direct = true) needs.  Replaces the account's CORS rules;\n"
			       "the other service properties stay.  Exit 0 when set.\n", synopsis);
			return 0;
		}
		return cli_usage_error(synopsis, NULL);
	}
	if (optind >= argc)
		return cli_usage_error(synopsis, "bindery cors: name at least one ORIGIN");
	if ((rc = cli_services(cli)) != 0)
		return rc;
	if (blob_service_cors_set(cli->svc->blob, (const char *const *)argv + optind,
				  (size_t)(argc - optind), &r) != BLOB_OK) {
		rc = cli_storage_failed("bindery cors", "Set Blob Service Properties", &r, EXIT_PROBLEMS);
		return r.status == BLOB_BAD_INPUT ? EXIT_USAGE : rc;
	}
	return 0;
}
