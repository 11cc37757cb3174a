/* buf.c - see buf.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/alloc.h"
#include "base/buf.h"

struct span
span_from_cstr(const char *s)
{
	struct span sp = { s, s ? strlen(s) : 0 };
	return sp;
}

int
span_eq(struct span a, struct span b)
{
	return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

int
span_eq_cstr(struct span a, const char *s)
{
	return span_eq(a, span_from_cstr(s));
}

int
span_eq_nocase_cstr(struct span a, const char *s)
{
	size_t n = strlen(s);
	return a.len == n && (n == 0 || strncasecmp(a.ptr, s, n) == 0);
}

int
span_starts_with_cstr(struct span a, const char *prefix)
{
	size_t n = strlen(prefix);
	return a.len >= n && memcmp(a.ptr, prefix, n) == 0;
}

void
buf_init(struct buf *b, size_t max)
{
	*b = BUF_INIT(max);
}

enum buf_err
buf_reserve(struct buf *b, size_t n)
{
	size_t want, ncap;
	char *p;

	if (n > b->max - b->len)
		return BUF_TOO_LONG;
	want = b->len + n + 1;
	if (want <= b->cap)
		return BUF_OK;
	ncap = b->cap ? b->cap : 64;
	while (ncap < want)
		ncap = ncap > ((size_t)-1) / 2 ? want : ncap * 2;
	p = alloc_realloc(b->ptr, ncap);
	if (p == NULL)
		return BUF_NOMEM;
	b->ptr = p;
	b->cap = ncap;
	return BUF_OK;
}

enum buf_err
buf_append(struct buf *b, const void *p, size_t n)
{
	enum buf_err e = buf_reserve(b, n);

	if (e != BUF_OK)
		return e;
	if (n)
		memcpy(b->ptr + b->len, p, n);
	b->len += n;
	b->ptr[b->len] = '\0';
	return BUF_OK;
}

enum buf_err
buf_append_span(struct buf *b, struct span s)
{
	return buf_append(b, s.ptr, s.len);
}

enum buf_err
buf_append_cstr(struct buf *b, const char *s)
{
	return buf_append(b, s, strlen(s));
}

enum buf_err
buf_vappendf(struct buf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	int n;
	enum buf_err e;

	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return BUF_NOMEM;
	e = buf_reserve(b, (size_t)n);
	if (e != BUF_OK)
		return e;
	vsnprintf(b->ptr + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return BUF_OK;
}

enum buf_err
buf_appendf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	enum buf_err e;

	va_start(ap, fmt);
	e = buf_vappendf(b, fmt, ap);
	va_end(ap);
	return e;
}

const char *
buf_cstr(const struct buf *b)
{
	return b->ptr ? b->ptr : "";
}

struct span
buf_span(const struct buf *b)
{
	struct span s = { buf_cstr(b), b->len };
	return s;
}

void
buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->ptr)
		b->ptr[0] = '\0';
}

char *
buf_take(struct buf *b)
{
	char *p = b->ptr;

	if (p == NULL)
		p = alloc_calloc(1, 1);
	b->ptr = NULL;
	b->len = b->cap = 0;
	return p;
}

void
buf_free(struct buf *b)
{
	free(b->ptr);
	b->ptr = NULL;
	b->len = b->cap = 0;
}

int
copy_span(char *dst, size_t dstsize, struct span s)
{
	size_t n;

	if (dstsize == 0)
		return -1;
	n = s.len < dstsize - 1 ? s.len : dstsize - 1;
	if (n)
		memcpy(dst, s.ptr, n);
	dst[n] = '\0';
	return n == s.len ? 0 : -1;
}

int
copy_cstr(char *dst, size_t dstsize, const char *s)
{
	return copy_span(dst, dstsize, span_from_cstr(s));
}

char *
span_dup(struct span s)
{
	char *p = alloc_malloc(s.len + 1);

	if (p == NULL)
		return NULL;
	if (s.len)
		memcpy(p, s.ptr, s.len);
	p[s.len] = '\0';
	return p;
}

int
ct_equal(const void *a, size_t alen, const void *b, size_t blen)
{
	const unsigned char *x = a, *y = b;
	unsigned char diff = 0;
	size_t i;

	if (alen != blen)
		return 0;
	for (i = 0; i < alen; i++)
		diff |= x[i] ^ y[i];
	return diff == 0;
}

void
hex_lower(const void *p, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	const unsigned char *d = p;
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = digits[d[i] >> 4];
		out[2 * i + 1] = digits[d[i] & 15];
	}
	out[2 * n] = '\0';
}
