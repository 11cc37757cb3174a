/*
 * origin.h - is a state-changing request same-origin?  The CSRF defence for
 * callers the web server authenticates (REMOTE_USER): a browser attaches
 * their credentials (Basic auth, a session cookie, a client certificate) to
 * a request any other site makes it send, so such a request must show that
 * it came from our own pages (doc/design.md "Smaller decisions").
 *
 * The browser's own word wins: Sec-Fetch-Site (Fetch Metadata), which page
 * script cannot set.  Without it, Origin, and without that, Referer, is
 * compared with the origin the client addressed: [auth] public_origin when
 * configured, else the scheme and Host of the request, or of
 * X-Forwarded-Proto/-Host when the peer is one of [auth] trusted_proxies.  A
 * request with none of the three is no browser's (curl, scripts) and passes:
 * browsers send Origin on every cross-origin POST, PUT and DELETE.
 *
 * Pure functions over spans: the caller gathers the headers.
 */
#ifndef BINDERY_ORIGIN_H
#define BINDERY_ORIGIN_H

#include <stddef.h>

#include "base/buf.h"
#include "base/compat.h"

#define ORIGIN_HOST_MAX 255	/* a DNS name (RFC 1035) or a bracketed IPv6 literal */

/* scheme://host[:port], normalised: scheme and host lower-case, the
 * scheme's default port dropped. */
struct origin {
	int https;
	char host[ORIGIN_HOST_MAX + 1];
	size_t host_len;
	unsigned port;		/* 0: the scheme's default */
};

enum origin_parse_err {
	ORIGIN_PARSE_OK = 0,
	ORIGIN_PARSE_BAD,	/* not http(s)://authority, or a bad host or port */
};

/*
 * Parse an origin as browsers send it (RFC 6454 7: "https://host:8443").
 * With allow_path, anything from the first '/' after the authority on is
 * ignored (a Referer, or a configured origin with a trailing '/').
 * Userinfo ("user@") is refused: no browser sends it in an origin.
 */
BINDERY_NODISCARD enum origin_parse_err origin_parse(struct span s, int allow_path,
						     struct origin *out);
/* A Host header value (RFC 9110 7.2: host[:port]) under the given scheme. */
BINDERY_NODISCARD enum origin_parse_err origin_from_host(struct span host, int https,
							 struct origin *out);
/* Whether a and b are the same origin (RFC 6454 5). */
int origin_equal(const struct origin *a, const struct origin *b);

enum origin_verdict {
	ORIGIN_SAME = 0,	/* shown to come from our own origin */
	ORIGIN_NO_BROWSER,	/* none of the three headers: curl, a script */
	ORIGIN_CROSS,		/* another site's, or unreadable: answer 403 */
};

/* What the request says about where it came from (empty spans when absent). */
struct origin_headers {
	struct span sec_fetch_site;
	struct span origin;
	struct span referer;
};

/*
 * Decide for a state-changing request whether it comes from expected (the
 * origin the client addressed).  Sec-Fetch-Site "same-origin" and "none" (the
 * user's own action: a bookmark, the address bar) pass; "same-site" and
 * "cross-site" do not.  Without it, Origin ("null" included) or else Referer
 * must be expected.  expected NULL (it could not be worked out) passes only
 * a request without any of the headers.
 */
enum origin_verdict origin_check(const struct origin_headers *h, const struct origin *expected);

/* An address or a network ("10.0.0.0/8", "::1"), for [auth] trusted_proxies. */
struct origin_net {
	int family;			/* AF_INET or AF_INET6 */
	unsigned char addr[16];
	unsigned prefix;		/* bits that must match */
};

/* Parse "ADDR" or "ADDR/BITS" (IPv4 or IPv6). 0 on success, -1 otherwise. */
BINDERY_NODISCARD int origin_net_parse(struct span s, struct origin_net *out);
/* Whether the textual address addr (REMOTE_ADDR) lies in one of nets. */
int origin_addr_in(struct span addr, const struct origin_net *nets, size_t n);

/* The last element of a comma-separated header (X-Forwarded-Host), trimmed:
 * the one our own proxy appended, whatever the client put before it. */
struct span origin_last_element(struct span header);

#endif
