/*
 * libFuzzer harness for http_parse.c, the route table on it (app/routes.c),
 * the mount prefix taken from SCRIPT_NAME (its first line, in fuzz_route),
 * the Content-Disposition a name becomes (disposition.c) and the CSRF
 * check's origins (origin.c).
 *
 * The first byte picks the function (modulo 11); the rest is its input.
 * Beyond "no crash, no UB", each result is checked against the promise its
 * header makes (ranges inside the representation, decoded output no longer
 * than its input, names that passed really are clean, ...).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "app/routes.h"
#include "parse/disposition.h"
#include "parse/http_parse.h"
#include "parse/origin.h"

static void
check(int cond)
{
	if (!cond)
		abort();
}

/* Split s at the first LF: the part before goes to *a, the rest stays. */
static struct span
take_line(struct span *s)
{
	const char *nl = memchr(s->ptr, '\n', s->len);
	struct span a = *s;

	if (nl == NULL) {
		s->ptr += s->len;
		s->len = 0;
		return a;
	}
	a.len = (size_t)(nl - s->ptr);
	s->ptr = nl + 1;
	s->len -= a.len + 1;
	return a;
}

/*
 * The mount prefix: the route's first line doubles as a SCRIPT_NAME (so
 * the corpus keeps its shape).  A prefix taken is a safe path the path
 * starts with; otherwise nothing is stripped.
 */
static void
fuzz_mount(struct span script, struct span path)
{
	struct span prefix, rest;
	enum http_mount_result res = http_mount_split(script, path, &prefix, &rest);
	size_t i;

	check(rest.len > 0);
	if (res != HTTP_MOUNT_PREFIX) {
		check(prefix.len == 0);
		check(path.len == 0 ? span_eq_cstr(rest, "/") : (rest.ptr == path.ptr && rest.len == path.len));
		return;
	}
	check(prefix.ptr == script.ptr && prefix.len == script.len && prefix.len >= 2 &&
	    prefix.len <= HTTP_MOUNT_MAX && prefix.ptr[0] == '/' && prefix.ptr[prefix.len - 1] != '/');
	check(path.len >= prefix.len && memcmp(path.ptr, prefix.ptr, prefix.len) == 0);
	for (i = 0; i < prefix.len; i++)
		check(strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._~-/",
		    prefix.ptr[i]) != NULL && prefix.ptr[i] != '\0' &&
		    !(prefix.ptr[i] == '/' && i + 1 < prefix.len && prefix.ptr[i + 1] == '/'));
	check(rest.ptr[0] == '/');
}

/* The path splitter (lib/parse) and the route table on it (app/routes.c). */
static void
fuzz_route(struct span in)
{
	struct span method = take_line(&in);
	struct http_path path;
	struct route_match m;
	enum route_id r = route_request(method, in, &m);
	char want[64];
	size_t i;

	fuzz_mount(method, in);

	if (http_path_split(in, &path) == 0) {
		check(path.nseg <= HTTP_PATH_MAX_SEGMENTS);
		for (i = 0; i < path.nseg; i++)
			check(path.seg[i].len > 0 && path.seg[i].ptr > in.ptr &&
			    path.seg[i].ptr + path.seg[i].len <= in.ptr + in.len &&
			    memchr(path.seg[i].ptr, '/', path.seg[i].len) == NULL);
	} else {
		check(r == ROUTE_NOT_FOUND);
	}
	check(r == m.id);
	check((r == ROUTE_NOT_FOUND) == (m.allow == NULL));
	if (r == ROUTE_NOT_FOUND)
		return;
	check(in.len > 0 && in.ptr[0] == '/');
	for (i = 0; i + 1 < in.len; i++)
		check(in.ptr[i] != '\0' && !(in.ptr[i] == '/' && in.ptr[i + 1] == '/'));
	if (m.doc_id != 0) {
		/* The id is canonical: printing it back gives the path's prefix. */
		snprintf(want, sizeof want, "/documents/%" PRIu64, m.doc_id);
		check(in.len >= strlen(want) && memcmp(in.ptr, want, strlen(want)) == 0);
	}
	check(r >= ROUTE_METHOD_NOT_ALLOWED && r <= ROUTE_CONTENT_PUT);
}

static void
fuzz_query(struct span in)
{
	struct span key = take_line(&in);
	struct buf out = BUF_INIT(4096);
	char k[64];

	if (copy_span(k, sizeof k, key) != 0 || memchr(key.ptr, '\0', key.len) != NULL)
		return;
	switch (http_query_get(in, k, &out)) {
	case HTTP_QUERY_FOUND:
		check(out.len <= in.len);
		break;
	case HTTP_QUERY_TOO_LONG:
		check(in.len > 4096);
		/* fall through */
	case HTTP_QUERY_NOT_FOUND:
	case HTTP_QUERY_MALFORMED:
	case HTTP_QUERY_NOMEM:
		check(out.len == 0);
		break;
	}
	buf_free(&out);
}

static void
fuzz_range(struct span in)
{
	uint64_t size = 0, start, len;
	size_t width;

	/* The first byte says how many of the next bytes make the size. */
	if (in.len == 0)
		return;
	width = (unsigned char)in.ptr[0] % 9;
	in.ptr++;
	in.len--;
	for (; width > 0 && in.len > 0; width--, in.ptr++, in.len--)
		size = size << 8 | (unsigned char)in.ptr[0];
	switch (http_parse_range(in, size, &start, &len)) {
	case HTTP_RANGE_OK:
		check(len > 0 && len <= size && start <= size - len);
		break;
	case HTTP_RANGE_UNSATISFIABLE:
	case HTTP_RANGE_IGNORE:
		break;
	}
}

/* Any bytes at all (the header must be safe whatever the database holds):
 * printable ASCII within DISPOSITION_MAX, and filename* decodes back. */
static void
fuzz_disposition(struct span in)
{
	static const char mid[] = "\"; filename*=UTF-8''";
	struct buf out = BUF_INIT(DISPOSITION_MAX(in.len)), dec = BUF_INIT(in.len + 1);
	const char *m;
	size_t i;

	check(disposition_attachment(in, &out) == BUF_OK);
	for (i = 0; i < out.len; i++)
		check(out.ptr[i] >= 0x20 && out.ptr[i] < 0x7f);
	/* The fallback holds no '"', so the first one ends it. */
	m = strchr(out.ptr + sizeof "attachment; filename=\"" - 1, '"');
	check(m != NULL && strncmp(m, mid, sizeof mid - 1) == 0);
	m += sizeof mid - 1;
	check(http_percent_decode((struct span){ m, out.len - (size_t)(m - out.ptr) }, &dec) ==
	    HTTP_DECODE_OK && dec.len == in.len && (in.len == 0 || memcmp(dec.ptr, in.ptr, in.len) == 0));
	buf_free(&out);
	buf_free(&dec);
}

static void
fuzz_name(struct span in)
{
	enum document_name_err e = document_name_check(in);
	size_t i;

	fuzz_disposition(in);
	check(document_name_err_string(e) != NULL);
	if (e != DOCNAME_OK)
		return;
	check(in.len >= 1 && in.len <= DOCUMENT_NAME_MAX);
	check(!span_eq_cstr(in, ".") && !span_eq_cstr(in, ".."));
	for (i = 0; i < in.len; i++) {
		unsigned char c = (unsigned char)in.ptr[i];

		check(c >= 0x20 && c != 0x7f && c != '/' && c != '\\');
		check(c != 0xc0 && c != 0xc1 && c < 0xf5);
		/* C1 controls are C2 80..C2 9F */
		check(!(c == 0xc2 && i + 1 < in.len && (unsigned char)in.ptr[i + 1] < 0xa0));
		/* surrogates are ED A0..BF xx */
		check(!(c == 0xed && i + 1 < in.len && (unsigned char)in.ptr[i + 1] >= 0xa0));
	}
}

static void
fuzz_etag(struct span in)
{
	struct span etag = take_line(&in);
	enum http_etag_result r = http_etag_match(in, etag);
	size_t i;
	int strong;

	check(r == HTTP_ETAG_MATCH || r == HTTP_ETAG_NO_MATCH || r == HTTP_ETAG_MALFORMED);
	/* A well-formed strong tag matches a header holding just itself. */
	strong = etag.len >= 2 && etag.ptr[0] == '"' && etag.ptr[etag.len - 1] == '"';
	for (i = 1; strong && i + 1 < etag.len; i++) {
		unsigned char c = (unsigned char)etag.ptr[i];

		strong = c == 0x21 || (c >= 0x23 && c <= 0x7e) || c >= 0x80;
	}
	if (strong)
		check(http_etag_match(etag, etag) == HTTP_ETAG_MATCH);
}

static void
fuzz_bearer(struct span in)
{
	struct span tok;
	enum http_auth_result r = http_bearer_token(in, &tok);

	if (r == HTTP_AUTH_OK) {
		check(tok.len > 0 && tok.ptr >= in.ptr && tok.ptr + tok.len <= in.ptr + in.len);
		check(memchr(tok.ptr, ' ', tok.len) == NULL);
	} else {
		check(tok.ptr == NULL);
	}
}

static void
fuzz_decode(struct span in)
{
	struct buf out = BUF_INIT(1 << 16);
	enum http_decode_err e = http_percent_decode(in, &out);

	if (e == HTTP_DECODE_OK)
		check(out.len <= in.len && (in.len == 0 || out.len * 3 >= in.len));
	buf_free(&out);
}

static void
fuzz_escape(struct span in)
{
	struct buf out = BUF_INIT(1 << 18);

	if (html_escape(in, &out) == BUF_OK) {
		check(out.len >= in.len && out.len <= in.len * 6);
		check(memchr(out.ptr ? out.ptr : "", '<', out.len) == NULL);
		check(memchr(out.ptr ? out.ptr : "", '"', out.len) == NULL);
		check(memchr(out.ptr ? out.ptr : "", '\'', out.len) == NULL);
	}
	buf_free(&out);
}

static void
fuzz_uint(struct span in)
{
	char back[32];
	uint64_t v, max = UINT64_MAX;
	size_t i;

	if (in.len > 0 && (unsigned char)in.ptr[0] < 64) {
		max = (uint64_t)1 << (unsigned char)in.ptr[0];
		in.ptr++;
		in.len--;
	}
	if (http_parse_uint(in, max, &v) != HTTP_UINT_OK)
		return;
	check(v <= max);
	for (i = 0; i + 1 < in.len && in.ptr[i] == '0'; i++)
		;
	snprintf(back, sizeof back, "%" PRIu64, v);
	check(in.len - i == strlen(back) && memcmp(in.ptr + i, back, strlen(back)) == 0);
}

/* Origin, Host and REMOTE_ADDR are the client's: a parsed origin is
 * normalised (lower-case host, no default port) and equal to itself, and
 * owner names that pass fit the column. */
static void
fuzz_origin(struct span in)
{
	struct origin o, again;
	struct origin_net net;
	struct origin_headers h;
	size_t i;

	if (origin_parse(in, in.len & 1, &o) == ORIGIN_PARSE_OK) {
		check(o.host_len > 0 && o.host_len <= ORIGIN_HOST_MAX && o.host[o.host_len] == '\0');
		for (i = 0; i < o.host_len; i++)
			check(!(o.host[i] >= 'A' && o.host[i] <= 'Z'));
		check(o.port != (o.https ? 443u : 80u) && o.port <= 65535);
		check(origin_equal(&o, &o));
		check(origin_from_host((struct span){ o.host, o.host_len }, o.https, &again) ==
		      ORIGIN_PARSE_OK && again.port == 0 && strcmp(again.host, o.host) == 0);
	}
	if (origin_from_host(in, 0, &o) == ORIGIN_PARSE_OK) {
		h = (struct origin_headers){ SPAN_NULL, in, SPAN_NULL };
		(void)origin_check(&h, &o);
	}
	h = (struct origin_headers){ in, in, in };
	(void)origin_check(&h, NULL);
	if (origin_net_parse(in, &net) == 0)
		check(net.prefix <= (net.family == AF_INET ? 32u : 128u));
	(void)origin_addr_in(in, &net, 0);
	(void)origin_last_element(in);
}

static void
fuzz_owner(struct span in)
{
	if (owner_name_check(in) == OWNER_NAME_OK)
		check(in.len > 0 && in.len <= 4 * OWNER_NAME_MAX && memchr(in.ptr, '\0', in.len) == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct span in;

	if (size == 0)
		return 0;
	in.ptr = (const char *)data + 1;
	in.len = size - 1;
	switch (data[0] % 11) {
	case 0: fuzz_route(in); break;
	case 1: fuzz_query(in); break;
	case 2: fuzz_range(in); break;
	case 3: fuzz_name(in); break;
	case 4: fuzz_etag(in); break;
	case 5: fuzz_bearer(in); break;
	case 6: fuzz_decode(in); break;
	case 7: fuzz_escape(in); break;
	case 8: fuzz_uint(in); break;
	case 9: fuzz_origin(in); break;
	case 10: fuzz_owner(in); break;
	}
	return 0;
}
