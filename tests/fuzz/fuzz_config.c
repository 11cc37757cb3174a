/*
 * libFuzzer harness for config.c (and the inih it drives).
 *
 * Input: the text of a bindery.conf, loaded from memory with
 * config_load_stream().  A load that succeeds must give a configuration
 * that keeps the promises config_check() makes (database and storage set,
 * block_size > 0 and within the service's limits, sweep_cutoff at least
 * config_sweep_cutoff_min(), well-formed tokens).  A load that fails must say
 * so in a message that echoes no value: when every "SECRETMARKER" in the
 * input sits in a value position (after '=' or ':' on a line that is not a
 * [section]), neither the error nor the warning may contain it.  The
 * marker comes from the seeds and the dictionary.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse/config.h"

#define MARKER "SECRETMARKER"

static void
check(int cond)
{
	if (!cond)
		abort();
}

/* Nonzero when every occurrence of MARKER is in a value: after the line's
 * first '=' or ':', on a line whose first non-blank byte is not '['. */
static int
marker_only_in_values(const char *in, size_t size)
{
	const char *p = in, *end = in + size, *m, *line, *c;

	while ((m = memmem(p, (size_t)(end - p), MARKER, sizeof MARKER - 1)) != NULL) {
		line = m;
		while (line > in && line[-1] != '\n')
			line--;
		for (c = line; c < m && (*c == ' ' || *c == '\t'); c++)
			continue;
		if (c < m && *c == '[')
			return 0;
		for (; c < m && *c != '=' && *c != ':'; c++)
			continue;
		if (c == m)
			return 0;
		p = m + 1;
	}
	return 1;
}

static void
check_loaded(const struct bindery_config *cfg)
{
	size_t i;

	check(cfg->path != NULL && strcmp(cfg->path, "fuzz.conf") == 0);
	check(cfg->db_name != NULL && cfg->db_user != NULL);
	check(cfg->db_socket != NULL || cfg->db_host != NULL);
	check(cfg->db_port >= 1 && cfg->db_port <= 65535);
	check(cfg->storage_account != NULL && cfg->storage_endpoint != NULL);
	check(cfg->storage_key != NULL || cfg->storage_sas != NULL);
	check(cfg->storage_container != NULL && cfg->storage_prefix != NULL);
	check(cfg->block_size > 0 && cfg->block_size <= (4000ULL << 20));
	check(cfg->single_put_max > 0 && cfg->single_put_max <= (5000ULL << 20));
	check(cfg->max_upload > 0 && cfg->max_upload / cfg->block_size < 50000);
	check(cfg->blocks_in_flight >= 1 && cfg->request_deadline >= 1);
	check(cfg->sweep_cutoff >= config_sweep_cutoff_min(cfg));
	check(cfg->body_idle_timeout >= 1 && cfg->body_min_rate_grace >= 1);
	check(cfg->retire_grace > 0);
	check(cfg->sas_lifetime >= 1 && cfg->sweep_batch >= 1 &&
	    cfg->sweep_parallel >= 1 && cfg->sweep_lease >= 1);
	check(cfg->download_mode == DOWNLOAD_PROXY || cfg->download_mode == DOWNLOAD_REDIRECT);
	check(cfg->log_level >= LOG_LEVEL_ERROR && cfg->log_level <= LOG_LEVEL_DEBUG);
	check(cfg->reads_need_auth == 0 || cfg->reads_need_auth == 1);
	check(cfg->ntokens <= CONFIG_MAX_TOKENS);
	for (i = 0; i < cfg->ntokens; i++) {
		check(cfg->tokens[i].owner[0] != '\0');
		check(strchr(cfg->tokens[i].owner, ':') == NULL);
		check(strlen(cfg->tokens[i].token) >= 16);
		/* The lookup finds some owner for every configured token. */
		check(config_token_owner(cfg, cfg->tokens[i].token,
		    strlen(cfg->tokens[i].token)) != NULL);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bindery_config *cfg = NULL;
	char err[1024], warn[512];
	FILE *fp;
	int rc;

	if (size == 0 || size > 64 * 1024)
		return 0;	/* fmemopen refuses 0 bytes; real files are small */
	fp = fmemopen((void *)(uintptr_t)data, size, "r");
	check(fp != NULL);
	memset(err, 'x', sizeof err);
	rc = config_load_stream(fp, "fuzz.conf", &cfg, err, sizeof err, warn, sizeof warn);
	fclose(fp);
	check(rc == 0 || rc == -1);
	check(warn[0] == '\0');		/* not a real file: no mode to warn about */
	if (rc == 0) {
		check(cfg != NULL);
		check_loaded(cfg);
		config_free(cfg);
		return 0;
	}
	check(cfg == NULL);
	check(memchr(err, '\0', sizeof err) != NULL);
	check(strncmp(err, "fuzz.conf", 9) == 0);
	if (marker_only_in_values((const char *)data, size))
		check(strstr(err, MARKER) == NULL);
	return 0;
}
