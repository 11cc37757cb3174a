/*
 * test_clamd.c - the pure parts of lib/protocol/clamd.c: clamd's answers to
 * INSTREAM as verdicts, and the address forms bindery accepts.  The rules:
 *   - only "stream: OK" after the whole stream is clean;
 *   - "stream: NAME FOUND" is infected with NAME, unless NAME starts with
 *     Heuristics.Limits.Exceeded (AlertExceedsMax): a limit;
 *   - an ERROR naming a size limit (StreamMaxLength) is a limit;
 *   - everything else is unavailable, never clean.
 * The answers are clamd 1.4's own words (tests/integration/clamd.sh gets
 * them from a running clamd).
 */
#include <string.h>

#include "protocol/clamd.h"
#include "tap.h"

struct reply_case {
	const char *reply;
	int whole;
	enum clamd_result want;
	const char *signature;	/* NULL: "" */
	const char *message;	/* a substring of the message */
};

static const struct reply_case replies[] = {
	{ "stream: OK", 1, CLAMD_CLEAN, NULL, "clamd answered \"stream: OK\"" },
	{ "stream: OK", 0, CLAMD_UNAVAILABLE, NULL, "before the end of the stream" },
	{ "stream: Eicar-Signature FOUND", 1, CLAMD_INFECTED, "Eicar-Signature", "Eicar-Signature FOUND" },
	{ "stream: Eicar-Signature FOUND", 0, CLAMD_INFECTED, "Eicar-Signature", "FOUND" },
	{ "stream: Bindery.Test.EICAR.UNOFFICIAL FOUND", 1, CLAMD_INFECTED, "Bindery.Test.EICAR.UNOFFICIAL",
	  NULL },
	/* ExtendedDetectionInfo's "(hash:size)" is not part of the name. */
	{ "stream: Win.Test.EICAR_HDB-1(44d88612fea8a8f36de82e1278abb02f:68) FOUND", 1, CLAMD_INFECTED,
	  "Win.Test.EICAR_HDB-1", "44d88612fea8a8f36de82e1278abb02f:68" },
	{ "stream: Odd(name) FOUND", 1, CLAMD_INFECTED, "Odd(name)", NULL },
	{ "stream: Odd(:68) FOUND", 1, CLAMD_INFECTED, "Odd(:68)", NULL },
	{ "stream: Heuristics.Limits.Exceeded.MaxFileSize FOUND", 1, CLAMD_LIMIT,
	  "Heuristics.Limits.Exceeded.MaxFileSize", "not scanned" },
	{ "stream: Heuristics.Limits.Exceeded.MaxScanSize FOUND", 1, CLAMD_LIMIT,
	  "Heuristics.Limits.Exceeded.MaxScanSize", NULL },
	{ "stream: Heuristics.Limits.Exceeded FOUND", 1, CLAMD_LIMIT, "Heuristics.Limits.Exceeded", NULL },
	{ "stream: Heuristics.Limits.Exceeded.MaxRecursion(0123abcd:9) FOUND", 1, CLAMD_LIMIT,
	  "Heuristics.Limits.Exceeded.MaxRecursion", NULL },
	/* Another heuristic is a detection like any other. */
	{ "stream: Heuristics.Encrypted.Zip FOUND", 1, CLAMD_INFECTED, "Heuristics.Encrypted.Zip", NULL },
	{ "stream: Heuristics.Limits FOUND", 1, CLAMD_INFECTED, "Heuristics.Limits", NULL },
	{ "INSTREAM size limit exceeded. ERROR", 0, CLAMD_LIMIT, NULL, "StreamMaxLength" },
	{ "INSTREAM size limit exceeded. ERROR", 1, CLAMD_LIMIT, NULL, "size limit exceeded" },
	{ "INSTREAM SIZE LIMIT EXCEEDED. ERROR", 1, CLAMD_LIMIT, NULL, NULL },
	{ "stream: Can't allocate memory ERROR", 1, CLAMD_UNAVAILABLE, NULL, "Can't allocate memory ERROR" },
	{ "stream: lstat() failed: No such file or directory. ERROR", 1, CLAMD_UNAVAILABLE, NULL, NULL },
	{ "UNKNOWN COMMAND", 1, CLAMD_UNAVAILABLE, NULL, "not understood" },
	{ "COMMAND READ TIMED OUT", 1, CLAMD_UNAVAILABLE, NULL, "not understood" },
	{ "", 1, CLAMD_UNAVAILABLE, NULL, "not understood" },
	{ "stream: FOUND", 1, CLAMD_UNAVAILABLE, NULL, NULL },
	{ "stream:  FOUND", 1, CLAMD_UNAVAILABLE, NULL, NULL },
	/* A blank name is still clamd saying FOUND: refused, not passed. */
	{ "stream:   FOUND", 1, CLAMD_INFECTED, " ", NULL },
	{ "stream: OK ", 1, CLAMD_UNAVAILABLE, NULL, NULL },
	{ "stream: ok", 1, CLAMD_UNAVAILABLE, NULL, NULL },
	{ " stream: OK", 1, CLAMD_UNAVAILABLE, NULL, NULL },
	{ "stream: OKAY", 1, CLAMD_UNAVAILABLE, NULL, NULL },
	{ "PONG", 1, CLAMD_UNAVAILABLE, NULL, NULL },
	{ "size limit exceeded", 1, CLAMD_UNAVAILABLE, NULL, NULL },
	{ "1: stream: OK", 1, CLAMD_UNAVAILABLE, NULL, NULL },
};

static void
test_replies(void)
{
	size_t i;

	for (i = 0; i < sizeof replies / sizeof replies[0]; i++) {
		const struct reply_case *t = &replies[i];
		struct clamd_verdict v;
		enum clamd_result r;

		memset(&v, 0x5a, sizeof v);
		r = clamd_reply_parse(t->reply, strlen(t->reply), t->whole, &v);
		tap_ok(r == t->want && v.result == r, "\"%s\"%s: %s (got %s)", tap_escape(t->reply),
		       t->whole ? "" : " before the end", clamd_result_str(t->want), clamd_result_str(r));
		TAP_EQ_STR(v.signature, t->signature ? t->signature : "", "... its signature");
		tap_ok(strstr(v.message, t->message ? t->message : "clamd") != NULL, "... its message says %s: %s",
		       tap_escape(t->message ? t->message : "clamd"), tap_escape(v.message));
	}
}

/* No answer clamd could give is clean unless it is exactly "stream: OK"
 * after the end: every prefix, and every one-byte change, of the clean
 * answer is not clean. */
static void
test_only_ok_is_clean(void)
{
	static const char ok[] = "stream: OK";
	char buf[sizeof ok];
	size_t i, n, bad = 0;
	struct clamd_verdict v;
	int ch;

	for (n = 0; n < sizeof ok - 1; n++)
		bad += clamd_reply_parse(ok, n, 1, &v) == CLAMD_CLEAN;
	for (i = 0; i < sizeof ok - 1; i++) {
		for (ch = 0; ch < 256; ch++) {
			if (ch == (unsigned char)ok[i])
				continue;
			memcpy(buf, ok, sizeof ok);
			buf[i] = (char)ch;
			bad += clamd_reply_parse(buf, sizeof ok - 1, 1, &v) == CLAMD_CLEAN;
		}
	}
	tap_ok(bad == 0, "no prefix and no one-byte change of \"stream: OK\" is clean (%zu were)", bad);
	tap_ok(clamd_reply_parse(ok, sizeof ok - 1, 1, &v) == CLAMD_CLEAN, "... while the answer itself is");
}

/* clamd's words reach the log: control bytes, quotes and backslashes are
 * escaped, long names cut with "...". */
static void
test_escaping(void)
{
	static const char evil[] = "stream: Bad\"Name\\\n\x01\xff FOUND";
	char longname[400], reply[512];
	struct clamd_verdict v;
	size_t n;

	tap_ok(clamd_reply_parse(evil, sizeof evil - 1, 1, &v) == CLAMD_INFECTED,
	       "a name with quotes, control and high bytes is still a detection");
	TAP_EQ_STR(v.signature, "Bad\\x22Name\\x5c\\x0a\\x01\\xff", "... its bytes are escaped as \\xNN");
	tap_ok(strchr(v.message, '\n') == NULL && strstr(v.message, "Bad\\x22Name") != NULL,
	       "... and the message has no raw newline: %s", tap_escape(v.message));
	memset(longname, 'A', sizeof longname - 1);
	longname[sizeof longname - 1] = '\0';
	n = (size_t)snprintf(reply, sizeof reply, "stream: %s FOUND", longname);
	tap_ok(clamd_reply_parse(reply, n, 1, &v) == CLAMD_INFECTED, "a name of 399 bytes: infected");
	TAP_EQ_INT(strlen(v.signature), CLAMD_SIGNATURE_MAX - 1, "... its signature cut to the buffer");
	tap_ok(strcmp(v.signature + CLAMD_SIGNATURE_MAX - 4, "...") == 0 &&
	       strspn(v.signature, "A") == CLAMD_SIGNATURE_MAX - 4, "... ending \"...\" after A's only");
	tap_ok(strlen(v.message) < CLAMD_MESSAGE_MAX && strstr(v.message, "...") != NULL,
	       "... and the message quotes it cut too");
	memset(longname, 'B', CLAMD_SIGNATURE_MAX - 1);
	longname[CLAMD_SIGNATURE_MAX - 1] = '\0';
	n = (size_t)snprintf(reply, sizeof reply, "stream: %s FOUND", longname);
	tap_ok(clamd_reply_parse(reply, n, 1, &v) == CLAMD_INFECTED && strcmp(v.signature, longname) == 0,
	       "a name of exactly %d bytes is kept whole", CLAMD_SIGNATURE_MAX - 1);
}

struct address_case {
	const char *addr;
	enum clamd_err want;
	enum clamd_address_kind kind;
	const char *a, *b;	/* path, or host and port */
	const char *why;	/* a substring of the reason for a bad one */
};

static const struct address_case addresses[] = {
	{ "unix:/run/clamav/clamd.ctl", CLAMD_OK, CLAMD_ADDRESS_UNIX, "/run/clamav/clamd.ctl", NULL, NULL },
	{ "unix:/", CLAMD_OK, CLAMD_ADDRESS_UNIX, "/", NULL, NULL },
	{ "127.0.0.1:3310", CLAMD_OK, CLAMD_ADDRESS_TCP, "127.0.0.1", "3310", NULL },
	{ "localhost:1", CLAMD_OK, CLAMD_ADDRESS_TCP, "localhost", "1", NULL },
	{ "clamav.internal.example:65535", CLAMD_OK, CLAMD_ADDRESS_TCP, "clamav.internal.example", "65535", NULL },
	{ "project_clamav_1:3310", CLAMD_OK, CLAMD_ADDRESS_TCP, "project_clamav_1", "3310", NULL },
	{ "[::1]:3310", CLAMD_OK, CLAMD_ADDRESS_TCP, "::1", "3310", NULL },
	{ "[::ffff:127.0.0.1]:3310", CLAMD_OK, CLAMD_ADDRESS_TCP, "::ffff:127.0.0.1", "3310", NULL },
	{ "", CLAMD_ERR_ADDRESS, 0, NULL, NULL, "empty" },
	{ "unix:", CLAMD_ERR_ADDRESS, 0, NULL, NULL, "absolute" },
	{ "unix:clamd.ctl", CLAMD_ERR_ADDRESS, 0, NULL, NULL, "absolute" },
	{ "clamd", CLAMD_ERR_ADDRESS, 0, NULL, NULL, "neither" },
	{ "/run/clamav/clamd.ctl", CLAMD_ERR_ADDRESS, 0, NULL, NULL, "neither" },
	{ ":3310", CLAMD_ERR_ADDRESS, 0, NULL, NULL, "without a host" },
	{ "[]:3310", CLAMD_ERR_ADDRESS, 0, NULL, NULL, "without a host" },
	{ "localhost:", CLAMD_ERR_ADDRESS, 0, NULL, NULL, "port" },
	{ "localhost:0", CLAMD_ERR_ADDRESS, 0, NULL, NULL, "port" },
	{ "localhost:65536", CLAMD_ERR_ADDRESS, 0, NULL, NULL, "port" },
	{ "localhost:123456", CLAMD_ERR_ADDRESS, 0, NULL, NULL, "port" },
	{ "localhost:-1", CLAMD_ERR_ADDRESS, 0, NULL, NULL, "port" },
	{ "localhost:33 10", CLAMD_ERR_ADDRESS, 0, NULL, NULL, "port" },
	{ "localhost:+3310", CLAMD_ERR_ADDRESS, 0, NULL, NULL, "port" },
	{ "::1:3310", CLAMD_ERR_ADDRESS, 0, NULL, NULL, "brackets" },
	{ "[localhost]:3310", CLAMD_ERR_ADDRESS, 0, NULL, NULL, "IPv6" },
	{ "local host:3310", CLAMD_ERR_ADDRESS, 0, NULL, NULL, "character" },
	{ "tcp://localhost:3310", CLAMD_ERR_ADDRESS, 0, NULL, NULL, "URL" },
	{ "unix:///run/clamav/clamd.ctl", CLAMD_ERR_ADDRESS, 0, NULL, NULL, "URL" },
};

static void
test_addresses(void)
{
	char longpath[200], longhost[300];
	struct clamd_address a;
	const char *why;
	size_t i;

	for (i = 0; i < sizeof addresses / sizeof addresses[0]; i++) {
		const struct address_case *t = &addresses[i];
		enum clamd_err e;

		why = NULL;
		e = clamd_address_parse(t->addr, &a, &why);
		if (t->want == CLAMD_OK) {
			tap_ok(e == CLAMD_OK && a.kind == t->kind &&
			       strcmp(t->kind == CLAMD_ADDRESS_UNIX ? a.path : a.host, t->a) == 0 &&
			       (t->b == NULL || strcmp(a.port, t->b) == 0),
			       "\"%s\": %s %s%s%s", t->addr, t->kind == CLAMD_ADDRESS_UNIX ? "unix" : "tcp", t->a,
			       t->b ? " port " : "", t->b ? t->b : "");
		} else {
			tap_ok(e == CLAMD_ERR_ADDRESS && why != NULL && strstr(why, t->why) != NULL,
			       "\"%s\" is refused, saying \"%s\" (%s)", t->addr, t->why, why ? why : "no reason");
		}
	}
	/* sun_path holds 108 bytes, its NUL included. */
	memcpy(longpath, "unix:/", 6);
	memset(longpath + 6, 'p', 106);
	longpath[112] = '\0';
	tap_ok(clamd_address_parse(longpath, &a, NULL) == CLAMD_OK && strlen(a.path) == 107,
	       "a socket path of 107 bytes fits");
	longpath[112] = 'p';
	longpath[113] = '\0';
	why = NULL;
	tap_ok(clamd_address_parse(longpath, &a, &why) == CLAMD_ERR_ADDRESS && why && strstr(why, "107"),
	       "one of 108 does not, and the reason says so");
	memset(longhost, 'h', 253);
	memcpy(longhost + 253, ":3310", 6);
	tap_ok(clamd_address_parse(longhost, &a, NULL) == CLAMD_OK && strlen(a.host) == 253,
	       "a host of 253 bytes fits");
	memset(longhost, 'h', 254);
	memcpy(longhost + 254, ":3310", 6);
	tap_ok(clamd_address_parse(longhost, &a, NULL) == CLAMD_ERR_ADDRESS, "one of 254 does not");
	tap_ok(clamd_address_parse(NULL, &a, NULL) == CLAMD_ERR_ADDRESS, "no address at all is refused");
}

/* What a caller sees of a bad address or an unreachable clamd, without a
 * clamd: the open refuses the first and settles the second. */
static void
test_open_without_clamd(void)
{
	static char sentinel;
	struct clamd *c = (struct clamd *)(void *)&sentinel;
	struct clamd_verdict v;
	char msg[CLAMD_MESSAGE_MAX];

	tap_ok(clamd_open("nonsense", 1000, &c) == CLAMD_ERR_ADDRESS && c == NULL,
	       "clamd_open refuses a bad address and hands nothing over");
	TAP_EQ_STR(clamd_err_str(CLAMD_ERR_ADDRESS), "not an address of clamd (unix:/PATH or HOST:PORT)",
		   "... which clamd_err_str names");
	if (clamd_open("unix:/nonexistent/bindery-test/clamd.ctl", 1000, &c) != CLAMD_OK || c == NULL) {
		tap_ok(0, "clamd_open hands over a stream for a socket that does not exist");
		return;
	}
	tap_ok(clamd_settled(c), "a socket that does not exist: the stream is settled at once");
	clamd_feed(c, "abc", 3);
	clamd_feed(c, NULL, 0);
	TAP_EQ_INT(clamd_fed(c), 3, "... feeds are counted all the same");
	tap_ok(clamd_finish(c, &v) == CLAMD_UNAVAILABLE && v.result == CLAMD_UNAVAILABLE,
	       "... its verdict is unavailable");
	tap_ok(strstr(v.message, "unix:/nonexistent/bindery-test/clamd.ctl") != NULL &&
	       strstr(v.message, "No such file or directory") != NULL, "... saying where and why: %s", v.message);
	tap_ok(clamd_finish(c, &v) == CLAMD_UNAVAILABLE, "... and again on a second finish");
	clamd_free(c);
	clamd_free(NULL);
	tap_ok(clamd_ping("unix:/nonexistent/bindery-test/clamd.ctl", 1000, msg, sizeof msg) ==
	       CLAMD_ERR_UNAVAILABLE && strstr(msg, "No such file") != NULL, "clamd_ping: unavailable, %s", msg);
	tap_ok(clamd_ping("bad address\n", 1000, msg, sizeof msg) == CLAMD_ERR_ADDRESS &&
	       strstr(msg, "bad address\\x0a") != NULL, "clamd_ping of a bad address: %s", tap_escape(msg));
}

int
main(void)
{
	test_replies();
	test_only_ok_is_clean();
	test_escaping();
	test_addresses();
	test_open_without_clamd();
	return tap_done();
}
