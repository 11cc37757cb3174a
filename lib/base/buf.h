/*
 * buf.h - length-carrying byte views (span) and capped growable buffers (buf).
 *
 * Every byte string that crosses a module boundary in bindery travels with its
 * length.  A struct buf owns its memory and refuses to grow past the cap given
 * at init, so a hostile or runaway producer fails with BUF_TOO_LONG instead of
 * exhausting memory.  The contents are always NUL-terminated for convenience
 * (the terminator is not counted in len), but nothing relies on that for
 * binary data.
 */
#ifndef BINDERY_BUF_H
#define BINDERY_BUF_H

#include <stddef.h>
#include <stdarg.h>

#include "base/compat.h"

/* A borrowed view; never freed through the span. */
struct span {
	const char *ptr;
	size_t len;
};

#define SPAN_LIT(s) ((struct span){ (s), sizeof(s) - 1 })
#define SPAN_NULL ((struct span){ NULL, 0 })

struct span span_from_cstr(const char *s);
int span_eq(struct span a, struct span b);
int span_eq_cstr(struct span a, const char *s);
int span_eq_nocase_cstr(struct span a, const char *s);
int span_starts_with_cstr(struct span a, const char *prefix);

enum buf_err {
	BUF_OK = 0,
	BUF_NOMEM,	/* allocation failed */
	BUF_TOO_LONG,	/* would exceed the cap given to buf_init */
};

struct buf {
	char *ptr;	/* NULL until the first append; always NUL-terminated after */
	size_t len;
	size_t cap;	/* allocated bytes (excluding nothing; includes the NUL) */
	size_t max;	/* hard cap on len */
};

#define BUF_INIT(maxlen) ((struct buf){ NULL, 0, 0, (maxlen) })

void buf_init(struct buf *b, size_t max);
BINDERY_NODISCARD enum buf_err buf_append(struct buf *b, const void *p, size_t n);
BINDERY_NODISCARD enum buf_err buf_append_span(struct buf *b, struct span s);
BINDERY_NODISCARD enum buf_err buf_append_cstr(struct buf *b, const char *s);
BINDERY_NODISCARD enum buf_err buf_appendf(struct buf *b, const char *fmt, ...)
	BINDERY_PRINTF(2, 3);
BINDERY_NODISCARD enum buf_err buf_vappendf(struct buf *b, const char *fmt, va_list ap)
	BINDERY_PRINTF(2, 0);
/* Make sure at least n more bytes fit without reallocation. */
BINDERY_NODISCARD enum buf_err buf_reserve(struct buf *b, size_t n);

/* The contents as a C string; "" for an empty buffer.  Borrowed. */
const char *buf_cstr(const struct buf *b);
struct span buf_span(const struct buf *b);
/* Forget the contents but keep the allocation. */
void buf_reset(struct buf *b);
/* Hand the allocation to the caller (free() it); the buf becomes empty.
 * Returns a freshly allocated "" when the buffer was never written. */
char *buf_take(struct buf *b);
void buf_free(struct buf *b);

/* Copy s into dst[dstsize] with truncation checking; returns 0, or -1 when
 * it did not fit (dst then holds a truncated, NUL-terminated prefix).
 * glibc 2.36 has no strlcpy. */
BINDERY_NODISCARD int copy_cstr(char *dst, size_t dstsize, const char *s);
BINDERY_NODISCARD int copy_span(char *dst, size_t dstsize, struct span s);

/* Duplicate a span into a fresh NUL-terminated allocation; NULL on ENOMEM. */
char *span_dup(struct span s);

/* Constant-time comparison of two byte strings (length is not secret). */
int ct_equal(const void *a, size_t alen, const void *b, size_t blen);
/* Write the n bytes at p as 2n lower-case hex digits and a NUL to out
 * (which holds 2n + 1). */
void hex_lower(const void *p, size_t n, char *out);

#endif
