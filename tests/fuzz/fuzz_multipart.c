/*
 * libFuzzer harness for multipart.c.
 *
 * Input: a first line (up to LF) taken as the Content-Type value, then the
 * body.  When the line yields no boundary, "XyZ" is used so the body is
 * still parsed.  The body is parsed whole and then in feeds whose sizes come
 * from a PRNG seeded with the input; both runs must end with the same
 * result and the same callback stream (a hash of every event and byte), and
 * every callback must keep the API's promises.  Small limits make the
 * header and part limits reachable.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parse/multipart.h"

struct run {
	uint64_t hash;
	uint64_t bytes;
	int in_part;
	int failed;		/* set once the parser returned an error */
	size_t body_len;
};

static void
check(int cond)
{
	if (!cond)
		abort();
}

static void
mix(struct run *r, const void *p, size_t n)
{
	const unsigned char *c = p;
	size_t i;

	for (i = 0; i < n; i++)
		r->hash = (r->hash ^ c[i]) * 1099511628211u;
}

static void
mix_span(struct run *r, struct span s)
{
	unsigned char present = s.ptr != NULL;

	mix(r, &present, 1);
	mix(r, &s.len, sizeof s.len);
	if (s.len)
		mix(r, s.ptr, s.len);
}

static int
on_begin(void *ctx, const struct multipart_part *p)
{
	struct run *r = ctx;
	size_t i;

	check(!r->failed && !r->in_part);
	check(p->name.ptr != NULL);
	/* Decoded parameters never hold CR, LF or NUL. */
	for (i = 0; i < p->name.len; i++)
		check(p->name.ptr[i] != '\r' && p->name.ptr[i] != '\n' && p->name.ptr[i] != '\0');
	for (i = 0; i < p->filename.len; i++)
		check(p->filename.ptr[i] != '\r' && p->filename.ptr[i] != '\n' &&
		    p->filename.ptr[i] != '\0');
	r->in_part = 1;
	mix(r, "B", 1);
	mix_span(r, p->name);
	mix_span(r, p->filename);
	mix_span(r, p->content_type);
	return 0;
}

static int
on_data(void *ctx, const char *data, size_t len)
{
	struct run *r = ctx;

	check(!r->failed && r->in_part && len > 0);
	r->bytes += len;
	check(r->bytes <= r->body_len);
	mix(r, data, len);
	return 0;
}

static int
on_end(void *ctx)
{
	struct run *r = ctx;

	check(!r->failed && r->in_part);
	r->in_part = 0;
	mix(r, "E", 1);
	return 0;
}

static const struct multipart_callbacks cb = { on_begin, on_data, on_end };

static uint64_t
next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static enum multipart_err
parse(struct span boundary, const char *body, size_t len, uint64_t seed, struct run *r)
{
	const struct multipart_limits lim = { 256, 8 };
	struct multipart_parser *p = NULL;
	enum multipart_err e;
	size_t off = 0, n;

	memset(r, 0, sizeof *r);
	r->hash = 14695981039346656037u;
	r->body_len = len;
	e = multipart_parser_new(boundary, &lim, &cb, r, &p);
	check(e == MP_OK);
	while (off < len) {
		if (seed == 0)
			n = len - off;
		else if (next_rand(&seed) % 8 == 0)
			n = 1 + next_rand(&seed) % 300;
		else
			n = 1 + next_rand(&seed) % 5;
		if (n > len - off)
			n = len - off;
		e = multipart_feed(p, body + off, n);
		off += n;
		if (e != MP_OK) {
			r->failed = 1;
			/* Sticky: more input and finish repeat the error. */
			check(multipart_feed(p, "x", 1) == e && multipart_finish(p) == e);
			goto out;
		}
	}
	e = multipart_finish(p);
	r->failed = e != MP_OK;
	check(e != MP_OK || !r->in_part);
	check(multipart_part_count(p) <= lim.max_parts);
out:
	multipart_parser_free(p);
	return e;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	const char *nl = memchr(in, '\n', size);
	struct span ct = { in, nl ? (size_t)(nl - in) : 0 };
	struct span boundary;
	struct run whole, split;
	enum multipart_err e1, e2;
	const char *body = nl ? nl + 1 : in;
	size_t len = nl ? size - ct.len - 1 : size;
	uint64_t seed = 0x9e3779b97f4a7c15u;
	size_t i;

	if (multipart_boundary(ct, &boundary) != MP_OK) {
		check(boundary.ptr == NULL);
		boundary = SPAN_LIT("XyZ");
	} else {
		check(boundary.len >= 1 && boundary.len <= MULTIPART_BOUNDARY_MAX);
		check(boundary.ptr >= ct.ptr && boundary.ptr + boundary.len <= ct.ptr + ct.len);
	}
	for (i = 0; i < size; i++)
		seed = (seed ^ data[i]) * 1099511628211u;
	if (seed == 0)
		seed = 1;
	e1 = parse(boundary, body, len, 0, &whole);
	e2 = parse(boundary, body, len, seed, &split);
	check(e1 == e2);
	check(e1 == MP_OK || e1 == MP_MALFORMED || e1 == MP_HEADER_TOO_LONG ||
	    e1 == MP_TOO_MANY_PARTS || e1 == MP_TRUNCATED);
	/* On success both saw the same parts and bytes; on failure the split
	 * run may have stopped earlier or later inside the same part. */
	if (e1 == MP_OK)
		check(whole.hash == split.hash && whole.bytes == split.bytes);
	return 0;
}
