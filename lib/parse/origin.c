/* origin.c - see origin.h. */
#include <arpa/inet.h>
#include <string.h>
#include <sys/socket.h>

#include "parse/origin.h"

static int
is_space(char c)
{
	return c == ' ' || c == '\t';
}

static struct span
trim(struct span s)
{
	while (s.len && is_space(s.ptr[0])) {
		s.ptr++;
		s.len--;
	}
	while (s.len && is_space(s.ptr[s.len - 1]))
		s.len--;
	return s;
}

/* A host as it may appear in an authority: a registered name or IPv4
 * (letters, digits, '-', '.') or an IPv6 literal in brackets.  Anything else
 * (percent-encoding, '_', spaces, controls) is not an origin we serve. */
static int
host_chars_ok(struct span h)
{
	size_t i;

	if (h.len == 0 || h.len > ORIGIN_HOST_MAX)
		return 0;
	if (h.ptr[0] == '[') {
		if (h.len < 3 || h.ptr[h.len - 1] != ']')
			return 0;
		for (i = 1; i + 1 < h.len; i++)
			if (!((h.ptr[i] >= '0' && h.ptr[i] <= '9') || (h.ptr[i] >= 'a' && h.ptr[i] <= 'f') ||
			      (h.ptr[i] >= 'A' && h.ptr[i] <= 'F') || h.ptr[i] == ':' || h.ptr[i] == '.'))
				return 0;
		return 1;
	}
	for (i = 0; i < h.len; i++)
		if (!((h.ptr[i] >= '0' && h.ptr[i] <= '9') || (h.ptr[i] >= 'a' && h.ptr[i] <= 'z') ||
		      (h.ptr[i] >= 'A' && h.ptr[i] <= 'Z') || h.ptr[i] == '-' || h.ptr[i] == '.'))
			return 0;
	return 1;
}

/* host[:port] into out (scheme already set). */
static enum origin_parse_err
parse_authority(struct span a, struct origin *out)
{
	struct span host = a, port = SPAN_NULL;
	const char *colon = NULL;
	unsigned long v = 0;
	size_t i;

	if (a.len == 0)
		return ORIGIN_PARSE_BAD;	/* (and memchr never sees a NULL span) */
	if (a.ptr[0] == '[') {
		const char *close = memchr(a.ptr, ']', a.len);

		if (close == NULL)
			return ORIGIN_PARSE_BAD;
		if ((size_t)(close - a.ptr) + 1 < a.len) {
			if (close[1] != ':')
				return ORIGIN_PARSE_BAD;
			colon = close + 1;
		}
	} else {
		colon = memchr(a.ptr, ':', a.len);
	}
	if (colon) {
		host.len = (size_t)(colon - a.ptr);
		port = (struct span){ colon + 1, a.len - host.len - 1 };
		if (port.len == 0 || port.len > 5)
			return ORIGIN_PARSE_BAD;
		for (i = 0; i < port.len; i++) {
			if (port.ptr[i] < '0' || port.ptr[i] > '9')
				return ORIGIN_PARSE_BAD;
			v = v * 10 + (unsigned long)(port.ptr[i] - '0');
		}
		if (v == 0 || v > 65535)
			return ORIGIN_PARSE_BAD;
	}
	if (!host_chars_ok(host))
		return ORIGIN_PARSE_BAD;
	for (i = 0; i < host.len; i++)
		out->host[i] = (host.ptr[i] >= 'A' && host.ptr[i] <= 'Z') ? (char)(host.ptr[i] + 32)
									  : host.ptr[i];
	out->host[host.len] = '\0';
	out->host_len = host.len;
	out->port = (v == (out->https ? 443UL : 80UL)) ? 0 : (unsigned)v;
	return ORIGIN_PARSE_OK;
}

enum origin_parse_err
origin_parse(struct span s, int allow_path, struct origin *out)
{
	struct span rest;
	const char *slash;

	memset(out, 0, sizeof *out);
	s = trim(s);
	if (s.len > 8 && span_eq_nocase_cstr((struct span){ s.ptr, 8 }, "https://")) {
		out->https = 1;
		rest = (struct span){ s.ptr + 8, s.len - 8 };
	} else if (s.len > 7 && span_eq_nocase_cstr((struct span){ s.ptr, 7 }, "http://")) {
		rest = (struct span){ s.ptr + 7, s.len - 7 };
	} else {
		return ORIGIN_PARSE_BAD;
	}
	/* The authority ends at the first '/', '?' or '#' (RFC 3986 3.2). */
	for (slash = rest.ptr; slash < rest.ptr + rest.len; slash++)
		if (*slash == '/' || *slash == '?' || *slash == '#')
			break;
	if (slash < rest.ptr + rest.len) {
		if (!allow_path)
			return ORIGIN_PARSE_BAD;
		rest.len = (size_t)(slash - rest.ptr);
	}
	if (memchr(rest.ptr, '@', rest.len))
		return ORIGIN_PARSE_BAD;
	return parse_authority(rest, out);
}

enum origin_parse_err
origin_from_host(struct span host, int https, struct origin *out)
{
	memset(out, 0, sizeof *out);
	out->https = https ? 1 : 0;
	return parse_authority(trim(host), out);
}

int
origin_equal(const struct origin *a, const struct origin *b)
{
	return a->https == b->https && a->port == b->port && a->host_len == b->host_len &&
	       memcmp(a->host, b->host, a->host_len) == 0;
}

/* Whether header (an Origin or a Referer) names expected. */
static int
header_names(struct span header, int allow_path, const struct origin *expected)
{
	struct origin o;

	if (expected == NULL || origin_parse(header, allow_path, &o) != ORIGIN_PARSE_OK)
		return 0;
	return origin_equal(&o, expected);
}

enum origin_verdict
origin_check(const struct origin_headers *h, const struct origin *expected)
{
	struct span site = trim(h->sec_fetch_site);

	/* Fetch Metadata (W3C): the browser's own statement of the relation
	 * between the requesting page and us. */
	if (site.len) {
		if (span_eq_nocase_cstr(site, "same-origin") || span_eq_nocase_cstr(site, "none"))
			return ORIGIN_SAME;
		return ORIGIN_CROSS;
	}
	/* An opaque origin ("null": a sandboxed frame, a data: URL) is never ours. */
	if (trim(h->origin).len)
		return header_names(h->origin, 0, expected) ? ORIGIN_SAME : ORIGIN_CROSS;
	/* Older browsers sent no Origin on a form POST, but a Referer unless
	 * the page suppressed it. */
	if (trim(h->referer).len)
		return header_names(h->referer, 1, expected) ? ORIGIN_SAME : ORIGIN_CROSS;
	return ORIGIN_NO_BROWSER;
}

int
origin_net_parse(struct span s, struct origin_net *out)
{
	char text[INET6_ADDRSTRLEN + 1];
	const char *slash;
	struct span addr, bits = SPAN_NULL;
	unsigned long v = 0;
	size_t i;

	memset(out, 0, sizeof *out);
	s = trim(s);
	if (s.len == 0)
		return -1;
	slash = memchr(s.ptr, '/', s.len);
	addr = (struct span){ s.ptr, slash ? (size_t)(slash - s.ptr) : s.len };
	if (slash)
		bits = (struct span){ slash + 1, s.len - addr.len - 1 };
	if (addr.len == 0 || addr.len >= sizeof text)
		return -1;
	memcpy(text, addr.ptr, addr.len);
	text[addr.len] = '\0';
	if (inet_pton(AF_INET, text, out->addr) == 1)
		out->family = AF_INET;
	else if (inet_pton(AF_INET6, text, out->addr) == 1)
		out->family = AF_INET6;
	else
		return -1;
	out->prefix = out->family == AF_INET ? 32 : 128;
	if (slash) {
		if (bits.len == 0 || bits.len > 3)
			return -1;
		for (i = 0; i < bits.len; i++) {
			if (bits.ptr[i] < '0' || bits.ptr[i] > '9')
				return -1;
			v = v * 10 + (unsigned long)(bits.ptr[i] - '0');
		}
		if (v > out->prefix)
			return -1;
		out->prefix = (unsigned)v;
	}
	return 0;
}

static int
net_contains(const struct origin_net *net, int family, const unsigned char *a)
{
	unsigned full = net->prefix / 8, rest = net->prefix % 8;
	unsigned char mask;

	if (net->family != family || memcmp(net->addr, a, full) != 0)
		return 0;
	if (rest == 0)
		return 1;
	mask = (unsigned char)(0xff << (8 - rest));
	return (net->addr[full] & mask) == (a[full] & mask);
}

int
origin_addr_in(struct span addr, const struct origin_net *nets, size_t n)
{
	struct origin_net peer;
	size_t i;

	if (n == 0 || addr.len == 0 || memchr(addr.ptr, '/', addr.len) ||
	    origin_net_parse(addr, &peer) != 0)
		return 0;
	for (i = 0; i < n; i++)
		if (net_contains(&nets[i], peer.family, peer.addr))
			return 1;
	return 0;
}

struct span
origin_last_element(struct span header)
{
	size_t i = header.len;

	while (i > 0 && header.ptr[i - 1] != ',')
		i--;
	return trim((struct span){ header.ptr + i, header.len - i });
}
