/*
 * cmd_lifecycle_policy.c - `bindery lifecycle-policy`: print the storage
 * account's lifecycle-management rule that deletes abandoned uploads (blobs
 * still tagged state=pending) when no sweeper runs.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "cli.h"
#include "parse/lifecycle.h"

int
cmd_lifecycle_policy(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "days", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const char synopsis[] = "usage: bindery lifecycle-policy [--days N]";
	unsigned long long days = 1;
	json_t *policy;
	char *end;
	int c, rc;

	while ((c = getopt_long(argc, argv, "d:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			errno = 0;
			days = strtoull(optarg, &end, 10);
			if (errno || *end != '\0' || optarg[0] < '0' || optarg[0] > '9' || days < 1 ||
			    days > 36500) {
				fprintf(stderr, "bindery lifecycle-policy: --days wants a whole number"
						" of days, at least 1, not '%s'\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'h':
			printf("%s\n\n"
			       "Prints the lifecycle-management policy (JSON) that makes the storage\n"
			       "service delete base block blobs under the configured container and prefix\n"
			       "still tagged state=pending N days (default 1) after creation: the backstop\n"
			       "for when no sweeper runs.  Apply it with e.g.\n"
			       "  az storage account management-policy create --account-name ACCOUNT \\\n"
			       "     --resource-group GROUP --policy @policy.json\n", synopsis);
			return 0;
		default:
			return cli_usage_error(synopsis, NULL);
		}
	}
	if (optind != argc)
		return cli_usage_error(synopsis, "bindery lifecycle-policy: takes no arguments");
	if ((rc = cli_config(cli)) != 0)
		return rc;
	if (days * 86400ULL < cli->cfg->sweep_cutoff)
		fprintf(stderr, "bindery lifecycle-policy: note: %llu day(s) is less than [limits]"
				" sweep_cutoff; the service may delete abandoned uploads before the sweeper"
				" gets to them (harmless: the sweeper then drops their rows)\n", days);
	policy = lifecycle_policy_new(cli->cfg->storage_container, cli->cfg->storage_prefix,
				      (unsigned)days);
	if (policy == NULL)
		return EXIT_SOFTWARE;
	rc = json_dumpf(policy, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) == 0 ? 0 : EXIT_SOFTWARE;
	putchar('\n');
	json_decref(policy);
	return rc;
}

