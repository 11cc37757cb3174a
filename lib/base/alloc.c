/* alloc.c - see alloc.h. */
#include <errno.h>
#include <stdlib.h>

#include "base/alloc.h"

static long alloc_calls;	/* alloc_* allocation attempts so far */
static long alloc_fail_at;	/* value of alloc_calls that fails; 0: none */
static long alloc_failed;

/*
 * Count one allocation attempt; nonzero when this one must fail.  The
 * counter is atomic because buf.c allocates from several threads (one blob
 * client per thread); failure injection itself is for single-threaded tests.
 */
static int
alloc_should_fail(void)
{
	long n = __atomic_add_fetch(&alloc_calls, 1, __ATOMIC_RELAXED);

	if (__atomic_load_n(&alloc_fail_at, __ATOMIC_RELAXED) != 0 && n == alloc_fail_at) {
		alloc_fail_at = 0;
		alloc_failed++;
		errno = ENOMEM;
		return 1;
	}
	return 0;
}

void *
alloc_malloc(size_t n)
{
	return alloc_should_fail() ? NULL : malloc(n);
}

void *
alloc_calloc(size_t nmemb, size_t size)
{
	return alloc_should_fail() ? NULL : calloc(nmemb, size);
}

void *
alloc_realloc(void *p, size_t n)
{
	return alloc_should_fail() ? NULL : realloc(p, n);
}

void
alloc_free(void *p)
{
	free(p);
}

void
alloc_fail_after(long n)
{
	alloc_fail_at = n > 0 ? alloc_calls + n : 0;
}

long
alloc_count(void)
{
	return __atomic_load_n(&alloc_calls, __ATOMIC_RELAXED);
}

long
alloc_failures(void)
{
	return alloc_failed;
}
