/*
 * alloc.h - the allocation hook the parsers allocate through.
 *
 * alloc_malloc() and friends are the libc functions unless a test has armed a
 * failure with alloc_fail_after(): then exactly the n-th allocation from that
 * moment returns NULL (errno ENOMEM), once, and the hook disarms itself.  A
 * test can so fail every allocation of an operation in turn, as curl's
 * "torture" mode does, and check that each failure comes back as a clean
 * error without a crash or a leak.  Not thread-safe: the responder is one
 * thread per process and the hook is meant for tests.
 */
#ifndef BINDERY_ALLOC_H
#define BINDERY_ALLOC_H

#include <stddef.h>

void *alloc_malloc(size_t n);
void *alloc_calloc(size_t nmemb, size_t size);
/* Like realloc(3); on failure p is left untouched.  alloc_realloc(NULL, n) is
 * alloc_malloc(n).  Both count as one allocation. */
void *alloc_realloc(void *p, size_t n);
void alloc_free(void *p);

/* Make the n-th allocation from now fail (n >= 1); -1 (or 0) disarms. */
void alloc_fail_after(long n);
/* Allocations attempted through alloc_* since the program started, failed ones
 * included. */
long alloc_count(void);
/* Allocations the hook has made fail since the program started. */
long alloc_failures(void);

#endif
