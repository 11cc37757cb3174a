/*
 * tap.h - a tiny Test Anything Protocol emitter for bindery's C tests.
 *
 * Each check prints "ok N - what" or "not ok N - what"; tap_skip() one that
 * cannot be made ("ok N # SKIP why"); tap_done() prints the plan and returns
 * the exit status.  tap_skip_all() prints "1..0 # SKIP" so
 * automake's TAP driver counts a skip apart from passes, never as one;
 * tap_missing() is that skip by hand and a failure under ./dev test.
 * Header-only on purpose: every test program includes it once.
 */
#ifndef BINDERY_TAP_H
#define BINDERY_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

static int tap_count, tap_failed;



__attribute__((format(printf, 2, 3), unused)) static int
tap_ok(int cond, const char *fmt, ...)
{
	va_list ap;


	tap_count++;
	if (!cond)
		tap_failed++;
	printf("%sok %d - ", cond ? "" : "not ", tap_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	return cond;
}

/* One check that cannot be made here: "ok N # SKIP why", which automake's
 * TAP driver counts as a skip, never as a pass. */
__attribute__((format(printf, 1, 2), unused)) static void
tap_skip(const char *fmt, ...)
{
	va_list ap;

	tap_count++;
	printf("ok %d # SKIP ", tap_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

__attribute__((format(printf, 1, 2), unused)) static void
tap_diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

__attribute__((format(printf, 1, 2), noreturn, unused)) static void
tap_skip_all(const char *fmt, ...)
{
	va_list ap;

	printf("1..0 # SKIP ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(0);
}

__attribute__((format(printf, 1, 2), noreturn, unused)) static void
tap_bail(const char *fmt, ...)
{
	va_list ap;

	printf("Bail out! ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(1);
}

/* A dependency this test needs is absent.  By hand (make check) that is a
 * skip of the whole program; under ./dev test, which always exports
 * BINDERY_TEST_VAR and always starts every service and builds every tool
 * the tests use, it is a broken set-up: Bail out, never a quiet skip. */
__attribute__((format(printf, 1, 2), noreturn, unused)) static void
tap_missing(const char *fmt, ...)
{
	const char *var = getenv("BINDERY_TEST_VAR");
	va_list ap;

	printf(var != NULL && *var != '\0' ? "Bail out! " : "1..0 # SKIP ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	if (var != NULL && *var != '\0') {
		printf(" (./dev test provides it: a broken set-up, not a skip)\n");
		exit(1);
	}
	printf("\n");
	exit(0);
}

__attribute__((unused)) static int
tap_done(void)
{
	printf("1..%d\n", tap_count);
	return tap_failed ? 1 : 0;
}

/* s with bytes outside printable ASCII (and '\\') as \xNN, for a test's
 * description: a raw newline would break the TAP line.  The result lives in
 * one of four static buffers, so up to four fit in one tap_ok call. */
__attribute__((unused)) static const char *
tap_escape(const char *s)
{
	static char ring[4][256];
	static int next;
	char *out = ring[next++ % 4];
	size_t n = 0;

	for (; *s != '\0' && n + 5 < sizeof ring[0]; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch >= ' ' && ch < 0x7f && ch != '\\')
			out[n++] = (char)ch;
		else
			n += (size_t)snprintf(out + n, 5, "\\x%02x", ch);
	}
	out[n] = '\0';
	return out;
}

#define TAP_EQ_INT(a, b, what) \
	tap_ok((long long)(a) == (long long)(b), "%s (got %lld, want %lld)", (what), \
	       (long long)(a), (long long)(b))

#define TAP_EQ_STR(a, b, what) \
	do { \
		const char *tap_a_ = (a), *tap_b_ = (b); \
		tap_ok(strcmp(tap_a_, tap_b_) == 0, "%s (got \"%s\", want \"%s\")", (what), \
		       tap_escape(tap_a_), tap_escape(tap_b_)); \
	} while (0)

#endif
