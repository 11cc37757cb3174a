/* Placeholders for subcommands not written yet; each says so and fails. */
#include <stdio.h>

#include "cli.h"

#define NOT_YET(fn, name)                                                          \
	int fn(struct cli *cli, int argc, char **argv)                             \
	{                                                                          \
		(void)cli; (void)argc; (void)argv;                                 \
		fprintf(stderr, "bindery %s: not implemented in this build\n", name); \
		return EXIT_SOFTWARE;                                              \
	}

NOT_YET(cmd_lifecycle_policy, "lifecycle-policy")
NOT_YET(cmd_check_account, "check-account")
