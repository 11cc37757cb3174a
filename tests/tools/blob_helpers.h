/*
 * blob_helpers.h - small pieces the storage tests, blobtool and the
 * benchmark share: a FILE read callback, sizes and client settings from the
 * environment, and
 * Delete Container (only tests remove a container, so the library does not
 * offer it; it is one simple call on the client's engine).
 */
#ifndef BINDERY_TESTS_BLOB_HELPERS_H
#define BINDERY_TESTS_BLOB_HELPERS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/blob.h"
#include "storage/blob_internal.h"

/* A blob_read_fn over a FILE *. */
static inline long
file_read(void *ctx, char *buf, size_t len)
{
	FILE *f = ctx;
	size_t n = fread(buf, 1, len, f);

	return n == 0 && ferror(f) ? -1 : (long)n;
}

/* $name as a positive decimal size, or dflt when unset or not one. */
static inline size_t
env_size(const char *name, size_t dflt)
{
	const char *v = getenv(name);
	char *end;
	unsigned long long n;

	if (v == NULL || *v == '\0')
		return dflt;
	n = strtoull(v, &end, 10);
	return *end == '\0' && n > 0 ? (size_t)n : dflt;
}

/*
 * Client settings from the environment ./dev test hands over
 * (BINDERY_TEST_BLOB_*, BLOBTOOL_CONTAINER, BLOBTOOL_BLOCK_SIZE,
 * BLOBTOOL_IN_FLIGHT, BLOBTOOL_SINGLE_PUT_MAX).  1 when every required
 * one is set, else 0.
 */
static inline int
settings_from_env(struct blob_settings *s)
{
	memset(s, 0, sizeof *s);
	s->endpoint = getenv("BINDERY_TEST_BLOB_ENDPOINT");
	s->account = getenv("BINDERY_TEST_BLOB_ACCOUNT");
	s->key_b64 = getenv("BINDERY_TEST_BLOB_KEY");
	s->container = getenv("BLOBTOOL_CONTAINER");
	s->block_size = env_size("BLOBTOOL_BLOCK_SIZE", 8 * 1024 * 1024);
	s->blocks_in_flight = (unsigned)env_size("BLOBTOOL_IN_FLIGHT", 4);
	s->single_put_max = env_size("BLOBTOOL_SINGLE_PUT_MAX", 4 * 1024 * 1024);
	s->max_retries = 3;
	/* https: a CA of the stack's own; empty or unset: the system's store */
	s->ca_file = getenv("BINDERY_TEST_BLOB_CA_FILE");
	if (s->ca_file != NULL && s->ca_file[0] == '\0')
		s->ca_file = NULL;
	return s->endpoint && s->account && s->key_b64 && s->container;
}

/* Delete the client's container and every blob in it. */
static inline int
container_delete(struct blob_client *c, struct blob_result *res)
{
	static const struct blob_call call = {
		.method = "DELETE", .target = BLOB_CALL_CONTAINER,
		.query = { { "restype", "container" } },
	};
	struct blob_call_args a = { .name = NULL };

	return blob_call(c, &call, &a, res);
}

#endif
