/*
 * clamd_scan.c - streams a file to clamd through lib/protocol/clamd.c and
 * prints the verdict; tests/integration/clamd.sh drives it against a clamd
 * of its own (tests/lib/clamd.sh).  Not a test itself.
 *
 *   clamd_scan [-t TIMEOUT_MS] [-f FEED_BYTES] ADDRESS FILE
 *   clamd_scan [-t TIMEOUT_MS] -p ADDRESS
 *
 * The file is read whole first, then fed in pieces of FEED_BYTES (default
 * 65536), so the pieces' sizes, not the disk's, decide where the client's
 * chunks end.  Prints, one "key=value" a line:
 *   result=clean|infected|limit|unavailable   (-p: pong|unavailable)
 *   signature=NAME                            (may be empty)
 *   message=TEXT
 *   fed=BYTES                                 what clamd_fed counted
 *   settled_early=0|1                         the verdict came before finish
 *   elapsed_ms=N                              open to verdict, monotonic
 * Exit 0 with any verdict; 2 for a usage or address error (the reason on
 * stderr); 1 when the file cannot be read.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/clock.h"
#include "protocol/clamd.h"

static void
usage(void)
{
	fprintf(stderr, "usage: clamd_scan [-t TIMEOUT_MS] [-f FEED_BYTES] ADDRESS FILE\n"
			"       clamd_scan [-t TIMEOUT_MS] -p ADDRESS\n");
	exit(2);
}

/* A positive decimal number no larger than max, or usage(). */
static unsigned long
number(const char *s, unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || s[0] == '-' || v == 0 || v > max)
		usage();
	return v;
}

/* The whole file into *b (capped at 1 GiB); -1 with errno's message printed. */
static int
read_file(const char *path, struct buf *b)
{
	char piece[65536];
	FILE *f = fopen(path, "rb");
	size_t n;
	int rc = -1;

	if (f == NULL) {
		fprintf(stderr, "clamd_scan: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while ((n = fread(piece, 1, sizeof piece, f)) > 0) {
		if (buf_append(b, piece, n) != BUF_OK) {
			fprintf(stderr, "clamd_scan: %s: too large or out of memory\n", path);
			goto out;
		}
	}
	if (ferror(f)) {
		fprintf(stderr, "clamd_scan: %s: read error\n", path);
		goto out;
	}
	rc = 0;
out:
	fclose(f);
	return rc;
}

static int
ping(const char *addr, int timeout_ms)
{
	char msg[CLAMD_MESSAGE_MAX];
	int64_t t0 = clock_now_ms();
	enum clamd_err e;
	const char *why = "";
	struct clamd_address a;

	e = clamd_ping(addr, timeout_ms, msg, sizeof msg);
	if (e == CLAMD_ERR_ADDRESS) {
		if (clamd_address_parse(addr, &a, &why) == CLAMD_OK)
			why = "(parsed after all)";
		fprintf(stderr, "clamd_scan: %s: %s: %s\n", addr, clamd_err_str(e), why);
		return 2;
	}
	printf("result=%s\nmessage=%s\nelapsed_ms=%lld\n", e == CLAMD_OK ? "pong" : "unavailable", msg,
	       (long long)(clock_now_ms() - t0));
	return 0;
}

int
main(int argc, char **argv)
{
	struct buf data = BUF_INIT((size_t)1 << 30);
	struct clamd *c = NULL;
	struct clamd_verdict v;
	struct clamd_address a;
	const char *why = "";
	unsigned long timeout_ms = 5000, feed = 65536;
	size_t off;
	int64_t t0;
	int i, do_ping = 0, early, rc = 1;
	enum clamd_err e;
	enum clamd_result result;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "-p") == 0)
			do_ping = 1;
		else if (strcmp(argv[i], "-t") == 0 && i + 1 < argc)
			timeout_ms = number(argv[++i], 3600000);
		else if (strcmp(argv[i], "-f") == 0 && i + 1 < argc)
			feed = number(argv[++i], (unsigned long)1 << 30);
		else
			usage();
	}
	if (argc - i != (do_ping ? 1 : 2))
		usage();
	if (do_ping)
		return ping(argv[i], (int)timeout_ms);
	if (read_file(argv[i + 1], &data) != 0)
		goto out;
	t0 = clock_now_ms();
	e = clamd_open(argv[i], (int)timeout_ms, &c);
	if (e != CLAMD_OK) {
		if (e == CLAMD_ERR_ADDRESS && clamd_address_parse(argv[i], &a, &why) == CLAMD_OK)
			why = "(parsed after all)";
		fprintf(stderr, "clamd_scan: %s: %s%s%s\n", argv[i], clamd_err_str(e), *why ? ": " : "", why);
		rc = 2;
		goto out;
	}
	for (off = 0; off < data.len; off += feed)
		clamd_feed(c, data.ptr + off, data.len - off < feed ? data.len - off : feed);
	early = clamd_settled(c);
	result = clamd_finish(c, &v);
	printf("result=%s\nsignature=%s\nmessage=%s\nfed=%llu\nsettled_early=%d\nelapsed_ms=%lld\n",
	       clamd_result_str(result), v.signature, v.message, (unsigned long long)clamd_fed(c), early,
	       (long long)(clock_now_ms() - t0));
	rc = 0;
out:
	clamd_free(c);
	buf_free(&data);
	return rc;
}
