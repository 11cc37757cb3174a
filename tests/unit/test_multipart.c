/*
 * Unit tests for multipart.c: the data-driven cases in tests/data/multipart
 * (each parsed whole, byte by byte and split in two at every offset), the
 * boundary extractor, callbacks that abort, limits, and a large streamed
 * part that must not make the parser allocate.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "parse/multipart.h"
#include "tap.h"

#ifndef MULTIPART_DATA_DIR
#define MULTIPART_DATA_DIR "tests/data/multipart"
#endif

static const char *const err_names[] = {
	"MP_OK", "MP_NOMEM", "MP_BAD_CONTENT_TYPE", "MP_MALFORMED", "MP_HEADER_TOO_LONG",
	"MP_TOO_MANY_PARTS", "MP_TRUNCATED", "MP_ABORTED",
};

static const char *
err_name(enum multipart_err e)
{
	return (size_t)e < ARRAY_LEN(err_names) ? err_names[e] : "?";
}

/* The transcript the callbacks write: see tests/data/multipart/README. */
struct transcript {
	struct buf out;
	struct buf data;	/* the current part's bytes */
	int zero_len_calls;
	int abort_at_begin, abort_at_data, abort_at_end;	/* n-th call aborts (1-based) */
	int begins, datas, ends;
};

static void
must(enum buf_err e)
{
	if (e != BUF_OK)
		tap_bail("out of memory in the test");
}

static void
append_escaped(struct buf *b, struct span s)
{
	size_t i;
	unsigned char c;

	must(buf_append_cstr(b, "\""));
	for (i = 0; i < s.len; i++) {
		c = (unsigned char)s.ptr[i];
		if (c == '\r')
			must(buf_append_cstr(b, "\\r"));
		else if (c == '\n')
			must(buf_append_cstr(b, "\\n"));
		else if (c == '\t')
			must(buf_append_cstr(b, "\\t"));
		else if (c == '"' || c == '\\')
			must(buf_appendf(b, "\\%c", c));
		else if (c < 0x20 || c >= 0x7f)
			must(buf_appendf(b, "\\x%02x", c));
		else
			must(buf_append(b, &s.ptr[i], 1));
	}
	must(buf_append_cstr(b, "\""));
}

static void
append_opt(struct buf *b, struct span s)
{
	if (s.ptr == NULL)
		must(buf_append_cstr(b, "-"));
	else
		append_escaped(b, s);
}

static int
on_begin(void *ctx, const struct multipart_part *p)
{
	struct transcript *t = ctx;

	if (++t->begins == t->abort_at_begin)
		return 1;
	must(buf_append_cstr(&t->out, "begin name="));
	append_escaped(&t->out, p->name);
	must(buf_append_cstr(&t->out, " filename="));
	append_opt(&t->out, p->filename);
	must(buf_append_cstr(&t->out, " type="));
	append_opt(&t->out, p->content_type);
	must(buf_append_cstr(&t->out, "\n"));
	buf_reset(&t->data);
	return 0;
}

static int
on_data(void *ctx, const char *data, size_t len)
{
	struct transcript *t = ctx;

	if (len == 0)
		t->zero_len_calls++;
	if (++t->datas == t->abort_at_data)
		return 1;
	must(buf_append(&t->data, data, len));
	return 0;
}

static int
on_end(void *ctx)
{
	struct transcript *t = ctx;

	if (++t->ends == t->abort_at_end)
		return 1;
	must(buf_append_cstr(&t->out, "data "));
	append_escaped(&t->out, buf_span(&t->data));
	must(buf_append_cstr(&t->out, "\nend\n"));
	buf_reset(&t->data);
	return 0;
}

static const struct multipart_callbacks transcript_cb = { on_begin, on_data, on_end };

static void
transcript_init(struct transcript *t)
{
	memset(t, 0, sizeof *t);
	buf_init(&t->out, 1 << 20);
	buf_init(&t->data, 1 << 20);
}

static void
transcript_free(struct transcript *t)
{
	buf_free(&t->out);
	buf_free(&t->data);
}

/*
 * Parse body with boundary, fed in pieces: cuts[] are the offsets where a
 * new feed starts (ascending), or every byte when bytewise is set.
 */
static enum multipart_err
parse_pieces(struct span boundary, const struct multipart_limits *lim, struct span body,
    const size_t *cuts, size_t ncuts, int bytewise, struct transcript *t)
{
	struct multipart_parser *p = NULL;
	enum multipart_err e;
	size_t pos = 0, next, k = 0;

	if ((e = multipart_parser_new(boundary, lim, &transcript_cb, t, &p)) != MP_OK)
		return e;
	while (pos < body.len) {
		if (bytewise)
			next = pos + 1;
		else
			next = k < ncuts ? cuts[k++] : body.len;
		if (next > body.len)
			next = body.len;
		if ((e = multipart_feed(p, body.ptr + pos, next - pos)) != MP_OK)
			goto out;
		pos = next;
	}
	e = multipart_finish(p);
out:
	multipart_parser_free(p);
	return e;
}

static char *
read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	struct buf b = BUF_INIT(1 << 24);
	char chunk[4096];
	size_t n;

	if (f == NULL)
		return NULL;
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
		must(buf_append(&b, chunk, n));
	fclose(f);
	*len = b.len;
	return buf_take(&b);
}

static int
cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The case directories under dir, sorted; NULL-terminated, caller frees. */
static char **
list_cases(const char *dir, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **v = NULL, **nv;

	*n = 0;
	if (d == NULL)
		return NULL;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if ((nv = realloc(v, (*n + 2) * sizeof *v)) == NULL)
			tap_bail("out of memory");
		v = nv;
		if ((v[*n] = span_dup(span_from_cstr(de->d_name))) == NULL)
			tap_bail("out of memory");
		(*n)++;
		v[*n] = NULL;
	}
	closedir(d);
	if (*n > 1)
		qsort(v, *n, sizeof *v, cmp_names);
	return v;
}

/*
 * Run one case every way and compare with want (a transcript for valid
 * cases, an error name for invalid ones).
 */
static void
run_case(const char *kind, const char *name, struct span input, struct span want, int valid)
{
	const struct multipart_limits lim = {
		MULTIPART_DEFAULT_MAX_HEADER_BYTES, MULTIPART_DEFAULT_MAX_PARTS
	};
	const char *nl = memchr(input.ptr, '\n', input.len);
	struct span ctype, body, boundary;
	struct transcript t;
	enum multipart_err e;
	size_t cut, step, bad_cut = 0;
	int mode, split_ok = 1;
	char got[64];

	if (nl == NULL) {
		tap_ok(0, "%s/%s: input has no Content-Type line", kind, name);
		return;
	}
	ctype.ptr = input.ptr;
	ctype.len = (size_t)(nl - input.ptr);
	body.ptr = nl + 1;
	body.len = input.len - ctype.len - 1;
	e = multipart_boundary(ctype, &boundary);
	if (e != MP_OK) {
		snprintf(got, sizeof got, "%s", err_name(e));
		tap_ok(!valid && span_eq_cstr(want, got), "%s/%s: Content-Type gives %s", kind,
		    name, got);
		return;
	}
	for (mode = 0; mode < 2; mode++) {
		transcript_init(&t);
		e = parse_pieces(boundary, &lim, body, NULL, 0, mode == 1, &t);
		if (valid)
			tap_ok(e == MP_OK && span_eq(buf_span(&t.out), want) && t.zero_len_calls == 0,
			    "%s/%s: %s (%s)", kind, name, mode ? "byte by byte" : "whole",
			    err_name(e));
		else
			tap_ok(span_eq_cstr(want, err_name(e)), "%s/%s: %s gives %s", kind, name,
			    mode ? "byte by byte" : "whole", err_name(e));
		if (valid && e == MP_OK && !span_eq(buf_span(&t.out), want))
			tap_diag("got:\n%s", buf_cstr(&t.out));
		transcript_free(&t);
	}
	/* Every split point; a sample of them for the large inputs. */
	step = body.len <= 4096 ? 1 : body.len / 997;
	for (cut = 0; cut <= body.len; cut += step) {
		transcript_init(&t);
		e = parse_pieces(boundary, &lim, body, &cut, 1, 0, &t);
		if (valid ? (e != MP_OK || !span_eq(buf_span(&t.out), want)) :
		    !span_eq_cstr(want, err_name(e))) {
			split_ok = 0;
			bad_cut = cut;
		}
		transcript_free(&t);
		if (!split_ok)
			break;
	}
	tap_ok(split_ok, "%s/%s: split in two at every %s", kind, name,
	    step == 1 ? "offset" : "sampled offset");
	if (!split_ok)
		tap_diag("first failing split at offset %zu of the body", bad_cut);
}

static void
run_data_cases(const char *root, const char *kind, const char *wantfile, int valid)
{
	char dir[4096], path[4096];
	char **cases;
	size_t n, i, inlen, wantlen;
	char *in, *want;

	if (snprintf(dir, sizeof dir, "%s/%s", root, kind) >= (int)sizeof dir)
		tap_bail("path too long");
	cases = list_cases(dir, &n);
	tap_ok(n >= 12, "%s: %zu cases in %s", kind, n, dir);
	for (i = 0; i < n; i++) {
		if (snprintf(path, sizeof path, "%s/%s/input", dir, cases[i]) >= (int)sizeof path)
			tap_bail("path too long");
		in = read_file(path, &inlen);
		if (snprintf(path, sizeof path, "%s/%s/%s", dir, cases[i], wantfile) >=
		    (int)sizeof path)
			tap_bail("path too long");
		want = read_file(path, &wantlen);
		if (in == NULL || want == NULL) {
			tap_ok(0, "%s/%s: cannot read input or %s", kind, cases[i], wantfile);
		} else {
			/* error files end in a newline; transcripts keep theirs */
			if (!valid)
				while (wantlen > 0 && (want[wantlen - 1] == '\n' || want[wantlen - 1] == '\r'))
					wantlen--;
			run_case(kind, cases[i], (struct span){ in, inlen },
			    (struct span){ want, wantlen }, valid);
		}
		free(in);
		free(want);
		free(cases[i]);
	}
	free(cases);
}

static void
test_boundary_extraction(void)
{
	static const struct {
		const char *ctype, *want;	/* want NULL: MP_BAD_CONTENT_TYPE */
	} cases[] = {
		{ "multipart/form-data; boundary=abc", "abc" },
		{ "multipart/form-data;boundary=abc", "abc" },
		{ "  multipart/form-data ; boundary = abc ; charset=utf-8  ", "abc" },
		{ "MULTIPART/FORM-DATA; BOUNDARY=AbC", "AbC" },
		{ "multipart/form-data; charset=utf-8; boundary=\"a b:c\"", "a b:c" },
		{ "multipart/form-data; boundary=----WebKitFormBoundary7MA4YWxkTrZu0gW",
		  "----WebKitFormBoundary7MA4YWxkTrZu0gW" },
		{ "multipart/form-data; boundary=\"0123456789012345678901234567890123456789"
		  "012345678901234567890123456789\"",
		  "0123456789012345678901234567890123456789012345678901234567890123456789" },
		{ "multipart/form-data; boundary=\"01234567890123456789012345678901234567890"
		  "123456789012345678901234567890\"", NULL },	/* 71 */
		{ "multipart/form-data", NULL },
		{ "multipart/form-data;", NULL },
		{ "multipart/form-data; boundary=", NULL },
		{ "multipart/form-data; boundary=\"\"", NULL },
		{ "multipart/form-data; boundary=\"abc", NULL },
		{ "multipart/form-data; boundary=\"ab \"", NULL },
		{ "multipart/form-data; boundary=a\"b", NULL },
		{ "multipart/form-data; boundary=\"a\\\"b\"", NULL },
		{ "multipart/form-data; boundary=a;boundary=b", NULL },
		{ "multipart/form-data; boundary=a\x01" "b", NULL },
		{ "multipart/form-data; boundary=a\xc3\xa9", NULL },
		{ "multipart/form-datax; boundary=a", NULL },
		{ "multipart/mixed; boundary=a", NULL },
		{ "text/plain", NULL },
		{ "", NULL },
		{ "multipart/form-data boundary=a", NULL },
	};
	struct span b;
	enum multipart_err e;
	size_t i;

	for (i = 0; i < ARRAY_LEN(cases); i++) {
		e = multipart_boundary(span_from_cstr(cases[i].ctype), &b);
		if (cases[i].want)
			tap_ok(e == MP_OK && span_eq_cstr(b, cases[i].want),
			    "boundary of \"%s\"", cases[i].ctype);
		else
			tap_ok(e == MP_BAD_CONTENT_TYPE && b.ptr == NULL,
			    "no boundary in \"%s\"", cases[i].ctype);
	}
	e = multipart_boundary(SPAN_NULL, &b);
	tap_ok(e == MP_BAD_CONTENT_TYPE, "no Content-Type at all");
}

static const char two_parts[] =
	"--b\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\nxx\r\n"
	"--b\r\nContent-Disposition: form-data; name=\"y\"\r\n\r\nyy\r\n--b--\r\n";

static void
test_abort_and_sticky(void)
{
	struct transcript t;
	struct multipart_parser *p = NULL;
	enum multipart_err e;
	int which;

	for (which = 0; which < 3; which++) {
		transcript_init(&t);
		if (which == 0)
			t.abort_at_begin = 2;
		else if (which == 1)
			t.abort_at_data = 1;
		else
			t.abort_at_end = 1;
		if (multipart_parser_new(SPAN_LIT("b"), NULL, &transcript_cb, &t, &p) != MP_OK)
			tap_bail("parser_new");
		e = multipart_feed(p, two_parts, sizeof two_parts - 1);
		tap_ok(e == MP_ABORTED, "abort from %s gives MP_ABORTED",
		    which == 0 ? "part_begin" : which == 1 ? "part_data" : "part_end");
		tap_ok(multipart_feed(p, "more", 4) == MP_ABORTED &&
		    multipart_finish(p) == MP_ABORTED, "the abort is sticky");
		tap_ok(t.begins + t.datas + t.ends == (which == 0 ? 4 : which == 1 ? 2 : 3),
		    "no callback after the abort");
		multipart_parser_free(p);
		p = NULL;
		transcript_free(&t);
	}

	/* NULL callbacks are allowed. */
	{
		static const struct multipart_callbacks none = { NULL, NULL, NULL };

		if (multipart_parser_new(SPAN_LIT("b"), NULL, &none, NULL, &p) != MP_OK)
			tap_bail("parser_new");
		e = multipart_feed(p, two_parts, sizeof two_parts - 1);
		tap_ok(e == MP_OK && multipart_finish(p) == MP_OK && multipart_part_count(p) == 2,
		    "NULL callbacks: parses, counts 2 parts");
		multipart_parser_free(p);
		p = NULL;
	}

	transcript_init(&t);
	if (multipart_parser_new(SPAN_LIT("b"), NULL, &transcript_cb, &t, &p) != MP_OK)
		tap_bail("parser_new");
	tap_ok(multipart_finish(p) == MP_TRUNCATED, "finish with no input is MP_TRUNCATED");
	tap_ok(multipart_feed(p, two_parts, sizeof two_parts - 1) == MP_TRUNCATED,
	    "and stays so");
	multipart_parser_free(p);
	transcript_free(&t);
	multipart_parser_free(NULL);

	tap_ok(multipart_parser_new(SPAN_LIT(""), NULL, &transcript_cb, &t, &p) ==
	    MP_BAD_CONTENT_TYPE && p == NULL, "parser_new refuses an empty boundary");
	tap_ok(multipart_parser_new(SPAN_LIT("a\r\nb"), NULL, &transcript_cb, &t, &p) ==
	    MP_BAD_CONTENT_TYPE && p == NULL, "parser_new refuses CR LF in a boundary");
	tap_ok(strcmp(multipart_err_string(MP_TRUNCATED),
	    "multipart body ended before its closing boundary") == 0 &&
	    multipart_err_string((enum multipart_err)99) != NULL, "error strings");
}

static void
test_limits(void)
{
	const struct multipart_limits two = { 64, 1 };
	const struct multipart_limits exact = { 44, 2 };
	const struct multipart_limits short_by_one = { 43, 2 };
	struct transcript t;
	struct span body = { two_parts, sizeof two_parts - 1 };

	transcript_init(&t);
	tap_ok(parse_pieces(SPAN_LIT("b"), &two, body, NULL, 0, 0, &t) == MP_TOO_MANY_PARTS,
	    "max_parts 1 refuses the second part");
	transcript_free(&t);
	/* "Content-Disposition: form-data; name=\"x\"\r\n\r\n" is 44 bytes. */
	transcript_init(&t);
	tap_ok(parse_pieces(SPAN_LIT("b"), &exact, body, NULL, 0, 0, &t) == MP_OK,
	    "a header block of exactly max_header_bytes fits");
	transcript_free(&t);
	transcript_init(&t);
	tap_ok(parse_pieces(SPAN_LIT("b"), &short_by_one, body, NULL, 0, 1, &t) ==
	    MP_HEADER_TOO_LONG, "one byte more is MP_HEADER_TOO_LONG");
	transcript_free(&t);
}

struct counter {
	uint64_t bytes, calls, hash;
	size_t max_piece;
};

static int
count_data(void *ctx, const char *data, size_t len)
{
	struct counter *c = ctx;
	size_t i;

	for (i = 0; i < len; i++)
		c->hash = (c->hash ^ (unsigned char)data[i]) * 1099511628211u;
	c->bytes += len;
	c->calls++;
	if (len > c->max_piece)
		c->max_piece = len;
	return 0;
}

/* A 16 MiB part full of near-miss delimiters streams through with no
 * allocation after parser_new, in pieces no larger than the feeds. */
static void
test_large_part_streams(void)
{
	static const struct multipart_callbacks cb = { NULL, count_data, NULL };
	static const char head[] = "--0123456789abcdef\r\n"
		"Content-Disposition: form-data; name=\"file\"; filename=\"big\"\r\n\r\n";
	static const char tail[] = "\r\n--0123456789abcdef--\r\n";
	const size_t total = 16u << 20, feed = 65521;
	struct counter want = { 0, 0, 14695981039346656037u, 0 };
	struct counter got = { 0, 0, 14695981039346656037u, 0 };
	struct multipart_parser *p = NULL;
	enum multipart_err e = MP_OK;
	char *chunk;
	size_t i, off, n;
	long allocs;

	if ((chunk = malloc(feed)) == NULL)
		tap_bail("out of memory");
	if (multipart_parser_new(SPAN_LIT("0123456789abcdef"), NULL, &cb, &got, &p) != MP_OK)
		tap_bail("parser_new");
	allocs = alloc_count();
	e = multipart_feed(p, head, sizeof head - 1);
	for (off = 0; off < total && e == MP_OK; off += n) {
		n = total - off < feed ? total - off : feed;
		for (i = 0; i < n; i++) {
			static const char pat[] = "\r\n--0123456789abcdeX-\r\r\n-";
			chunk[i] = pat[(off + i) % (sizeof pat - 1)];
		}
		(void)count_data(&want, chunk, n);
		e = multipart_feed(p, chunk, n);
	}
	if (e == MP_OK)
		e = multipart_feed(p, tail, sizeof tail - 1);
	if (e == MP_OK)
		e = multipart_finish(p);
	tap_ok(e == MP_OK, "16 MiB part parses (%s)", err_name(e));
	tap_ok(got.bytes == want.bytes && got.hash == want.hash,
	    "every byte arrives, in order (%llu bytes in %llu calls)",
	    (unsigned long long)got.bytes, (unsigned long long)got.calls);
	tap_ok(got.max_piece <= feed, "no piece larger than a feed");
	TAP_EQ_INT(alloc_count() - allocs, 0, "no allocation while feeding");
	multipart_parser_free(p);
	free(chunk);
}

int
main(void)
{
	const char *top = getenv("top_srcdir");
	char root[4096];

	if (top != NULL && *top != '\0') {
		if (snprintf(root, sizeof root, "%s/tests/data/multipart", top) >= (int)sizeof root)
			tap_bail("top_srcdir too long");
	} else if (copy_cstr(root, sizeof root, MULTIPART_DATA_DIR) != 0) {
		tap_bail("data dir too long");
	}
	run_data_cases(root, "valid", "expect", 1);
	run_data_cases(root, "invalid", "error", 0);
	test_boundary_extraction();
	test_abort_and_sticky();
	test_limits();
	test_large_part_streams();
	return tap_done();
}
