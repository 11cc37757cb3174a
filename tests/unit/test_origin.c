/*
 * Unit tests for origin.c: parsing origins, Host headers and proxy networks,
 * and the same-origin decision over every combination of the three request
 * headers (each absent, ours, another site's).
 */
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "parse/origin.h"
#include "tap.h"

struct parse_case {
	const char *in;
	int allow_path;
	int ok;
	int https;
	const char *host;
	unsigned port;
};

static const struct parse_case parse_cases[] = {
	{ "http://127.0.0.1:8080", 0, 1, 0, "127.0.0.1", 8080 },
	{ "https://Docs.Example.COM", 0, 1, 1, "docs.example.com", 0 },
	{ "HTTPS://docs.example.com:443", 0, 1, 1, "docs.example.com", 0 },
	{ "http://docs.example.com:80", 0, 1, 0, "docs.example.com", 0 },
	{ "https://docs.example.com:80", 0, 1, 1, "docs.example.com", 80 },
	{ "http://[::1]:8081", 0, 1, 0, "[::1]", 8081 },
	{ "http://[::1]", 0, 1, 0, "[::1]", 0 },
	{ "http://evil.example/page?x=1", 1, 1, 0, "evil.example", 0 },
	{ "http://evil.example?x=/", 1, 1, 0, "evil.example", 0 },
	{ "http://evil.example/page", 0, 0, 0, NULL, 0 },
	{ "null", 0, 0, 0, NULL, 0 },
	{ "", 0, 0, 0, NULL, 0 },
	{ "ftp://a.example", 0, 0, 0, NULL, 0 },
	{ "http://", 0, 0, 0, NULL, 0 },
	{ "http://user@a.example", 0, 0, 0, NULL, 0 },
	{ "http://a.example:0", 0, 0, 0, NULL, 0 },
	{ "http://a.example:65536", 0, 0, 0, NULL, 0 },
	{ "http://a.example:", 0, 0, 0, NULL, 0 },
	{ "http://a.exa mple", 0, 0, 0, NULL, 0 },
	{ "http://a_b.example", 0, 0, 0, NULL, 0 },
	{ "http://[::1", 0, 0, 0, NULL, 0 },
	{ "http://[::1]x", 0, 0, 0, NULL, 0 },
};

static void
test_parse(void)
{
	struct origin o;
	size_t i;

	for (i = 0; i < ARRAY_LEN(parse_cases); i++) {
		const struct parse_case *c = &parse_cases[i];
		int ok = origin_parse(span_from_cstr(c->in), c->allow_path, &o) == ORIGIN_PARSE_OK;

		if (c->ok)
			tap_ok(ok && o.https == c->https && strcmp(o.host, c->host) == 0 &&
			       o.port == c->port, "origin_parse '%s' -> %s %s %u", c->in,
			       c->https ? "https" : "http", c->host, c->port);
		else
			tap_ok(!ok, "origin_parse refuses '%s'", c->in);
	}
	tap_ok(origin_from_host(SPAN_LIT("LocalHost:8080"), 0, &o) == ORIGIN_PARSE_OK &&
	       strcmp(o.host, "localhost") == 0 && o.port == 8080 && !o.https, "Host localhost:8080");
	tap_ok(origin_from_host(SPAN_LIT("docs.example.com:443"), 1, &o) == ORIGIN_PARSE_OK &&
	       o.port == 0 && o.https, "Host with the scheme's default port");
	tap_ok(origin_from_host(SPAN_LIT("a.example/x"), 0, &o) == ORIGIN_PARSE_BAD, "Host with a path");
	tap_ok(origin_from_host(SPAN_NULL, 0, &o) == ORIGIN_PARSE_BAD, "no Host");
	tap_ok(origin_parse(SPAN_NULL, 1, &o) == ORIGIN_PARSE_BAD, "no origin");
}

/* The three headers, each absent (NULL), ours or another site's. */
struct check_case {
	const char *site, *origin, *referer;
	enum origin_verdict want;
};

#define OURS "http://127.0.0.1:8080"
#define EVIL "http://evil.example"
static const struct check_case check_cases[] = {
	{ NULL, NULL, NULL, ORIGIN_NO_BROWSER },
	{ "same-origin", NULL, NULL, ORIGIN_SAME },
	{ "none", NULL, NULL, ORIGIN_SAME },
	{ "same-site", NULL, NULL, ORIGIN_CROSS },
	{ "cross-site", NULL, NULL, ORIGIN_CROSS },
	{ "Cross-Site", OURS, OURS "/", ORIGIN_CROSS },	/* the browser's word wins */
	{ "same-origin", EVIL, EVIL "/", ORIGIN_SAME },
	{ "bogus", NULL, NULL, ORIGIN_CROSS },
	{ NULL, OURS, NULL, ORIGIN_SAME },
	{ NULL, "http://127.0.0.1:8080/", NULL, ORIGIN_CROSS },	/* an Origin has no path */
	{ NULL, EVIL, NULL, ORIGIN_CROSS },
	{ NULL, "http://127.0.0.1:8081", NULL, ORIGIN_CROSS },	/* another port */
	{ NULL, "https://127.0.0.1:8080", NULL, ORIGIN_CROSS },	/* another scheme */
	{ NULL, "null", NULL, ORIGIN_CROSS },
	{ NULL, OURS, EVIL "/", ORIGIN_SAME },			/* Origin before Referer */
	{ NULL, EVIL, OURS "/", ORIGIN_CROSS },
	{ NULL, NULL, OURS "/documents?x", ORIGIN_SAME },
	{ NULL, NULL, EVIL "/attack.html", ORIGIN_CROSS },
	{ NULL, NULL, "http://127.0.0.1:8080.evil.example/", ORIGIN_CROSS },
};

static struct span
opt(const char *s)
{
	return s ? span_from_cstr(s) : SPAN_NULL;
}

static void
test_check(void)
{
	struct origin ours;
	struct origin_headers h;
	size_t i;

	if (origin_parse(SPAN_LIT(OURS), 0, &ours) != ORIGIN_PARSE_OK)
		tap_bail("cannot parse %s", OURS);
	for (i = 0; i < ARRAY_LEN(check_cases); i++) {
		const struct check_case *c = &check_cases[i];

		h.sec_fetch_site = opt(c->site);
		h.origin = opt(c->origin);
		h.referer = opt(c->referer);
		tap_ok(origin_check(&h, &ours) == c->want, "case %zu: Sec-Fetch-Site %s, Origin %s, "
		       "Referer %s -> %d", i, c->site ? c->site : "-", c->origin ? c->origin : "-",
		       c->referer ? c->referer : "-", (int)c->want);
	}
	/* Without a known origin only a request with no browser headers passes. */
	h = (struct origin_headers){ SPAN_NULL, SPAN_LIT(OURS), SPAN_NULL };
	tap_ok(origin_check(&h, NULL) == ORIGIN_CROSS, "an Origin cannot match an unknown origin");
	h = (struct origin_headers){ SPAN_NULL, SPAN_NULL, SPAN_NULL };
	tap_ok(origin_check(&h, NULL) == ORIGIN_NO_BROWSER, "curl passes without a Host");
	h = (struct origin_headers){ SPAN_LIT("same-origin"), SPAN_NULL, SPAN_NULL };
	tap_ok(origin_check(&h, NULL) == ORIGIN_SAME, "Sec-Fetch-Site needs no Host");
}

static void
test_nets(void)
{
	struct origin_net nets[3];

	tap_ok(origin_net_parse(SPAN_LIT("10.0.0.0/8"), &nets[0]) == 0, "parse 10.0.0.0/8");
	tap_ok(origin_net_parse(SPAN_LIT("192.0.2.7"), &nets[1]) == 0, "parse 192.0.2.7");
	tap_ok(origin_net_parse(SPAN_LIT("fd00::/12"), &nets[2]) == 0, "parse fd00::/12");
	tap_ok(origin_net_parse(SPAN_LIT("10.0.0.0/33"), &nets[0]) == -1 &&
	       origin_net_parse(SPAN_LIT("10.0.0/8"), &nets[0]) == -1 &&
	       origin_net_parse(SPAN_LIT("example.com"), &nets[0]) == -1 &&
	       origin_net_parse(SPAN_LIT("::1/"), &nets[0]) == -1 &&
	       origin_net_parse(SPAN_NULL, &nets[0]) == -1, "bad networks refused");
	if (origin_net_parse(SPAN_LIT("10.0.0.0/8"), &nets[0]) != 0)
		tap_bail("cannot parse 10.0.0.0/8");
	tap_ok(origin_addr_in(SPAN_LIT("10.200.3.4"), nets, 3), "10.200.3.4 in 10/8");
	tap_ok(!origin_addr_in(SPAN_LIT("11.0.0.1"), nets, 3), "11.0.0.1 is not");
	tap_ok(origin_addr_in(SPAN_LIT("192.0.2.7"), nets, 3), "a single address");
	tap_ok(!origin_addr_in(SPAN_LIT("192.0.2.8"), nets, 3), "its neighbour is not");
	tap_ok(origin_addr_in(SPAN_LIT("fd0f::1"), nets, 3), "fd0f::1 in fd00::/12");
	tap_ok(!origin_addr_in(SPAN_LIT("fd10::1"), nets, 3), "fd10::1 is not");
	tap_ok(!origin_addr_in(SPAN_LIT("10.0.0.1"), nets, 0), "no proxies: nobody is trusted");
	tap_ok(!origin_addr_in(SPAN_LIT("10.0.0.1/8"), nets, 3) && !origin_addr_in(SPAN_NULL, nets, 3),
	       "a peer is an address, not a network");
	tap_ok(span_eq_cstr(origin_last_element(SPAN_LIT("evil.example, docs.example.com ")),
			    "docs.example.com"), "the last X-Forwarded-Host element");
	tap_ok(span_eq_cstr(origin_last_element(SPAN_LIT("docs.example.com")), "docs.example.com"),
	       "a single element");
}

int
main(void)
{
	test_parse();
	test_check();
	test_nets();
	return tap_done();
}
