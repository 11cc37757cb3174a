/*
 * blob_helpers.h - small pieces the storage tests, blobtool and the
 * benchmark share: a FILE read callback, a size from the environment, and
 * Delete Container (only tests remove a container, so the library does not
 * offer it; it is one simple call on the client's engine).
 */
#ifndef BINDERY_TESTS_BLOB_HELPERS_H
#define BINDERY_TESTS_BLOB_HELPERS_H

#include <stdio.h>
#include <stdlib.h>

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
