/*
 * multipart.h - a streaming push parser for multipart/form-data (RFC 7578,
 * framed as RFC 2046 section 5.1).
 *
 * The caller feeds the request body in chunks of any size, split anywhere;
 * the parser calls back at the start of each part (with its decoded
 * Content-Disposition parameters and Content-Type), with the part's bytes as
 * they arrive, and at its end.  A part's bytes are never held: memory use is
 * one allocation of the header limit plus the delimiter, whatever the size
 * of the parts.  Pure code, no I/O.
 */
#ifndef BINDERY_MULTIPART_H
#define BINDERY_MULTIPART_H

#include <stddef.h>

#include "base/buf.h"
#include "base/compat.h"

enum multipart_err {
	MP_OK = 0,
	MP_NOMEM,
	MP_BAD_CONTENT_TYPE,	/* not multipart/form-data, or no/invalid boundary */
	MP_MALFORMED,		/* framing or part headers violate RFC 2046/7578 */
	MP_HEADER_TOO_LONG,	/* a part's header block exceeds max_header_bytes */
	MP_TOO_MANY_PARTS,	/* more than max_parts parts */
	MP_TRUNCATED,		/* input ended before the closing delimiter */
	MP_ABORTED,		/* a callback returned nonzero */
};

/* A fixed English sentence for logs and error messages; never NULL. */
const char *multipart_err_string(enum multipart_err e);

/* The longest boundary RFC 2046 5.1.1 allows. */
#define MULTIPART_BOUNDARY_MAX 70

/*
 * Check that a Content-Type header value is multipart/form-data and extract
 * its boundary parameter, quoted or token form, 1..70 characters from the
 * RFC 2046 bchars set and not ending in a space.  On MP_OK *boundary points
 * into content_type; otherwise it is SPAN_NULL and the result is
 * MP_BAD_CONTENT_TYPE.
 */
BINDERY_NODISCARD enum multipart_err multipart_boundary(struct span content_type,
    struct span *boundary);

/*
 * What part_begin learns about a part.  Parameters are unquoted (a backslash
 * escapes only '"' and '\\', so an old browser's "C:\dir\f.txt" stays
 * literal); filename* (RFC 5987) is ignored, as RFC 7578 4.2 tells senders
 * not to use it.  An absent filename or Content-Type has ptr == NULL; a
 * present but empty one (a browser's file input left empty sends
 * filename="") has a non-NULL ptr and len 0.  The bytes may contain anything
 * but CR, LF and NUL, including non-UTF-8: validate before use.  The spans
 * point into the parser and are valid only during part_begin.
 */
struct multipart_part {
	struct span name;
	struct span filename;
	struct span content_type;
};

/*
 * Each callback returns 0 to go on, nonzero to stop: the feed then returns
 * MP_ABORTED and so does every later call.  Any callback may be NULL.
 * part_data gets the part's bytes in order, in pieces of any size (never
 * 0); part_end is called only when the delimiter after the part was seen,
 * so a truncated part never ends.  No callback runs after an error.
 */
struct multipart_callbacks {
	int (*part_begin)(void *ctx, const struct multipart_part *p);
	int (*part_data)(void *ctx, const char *data, size_t len);
	int (*part_end)(void *ctx);
};

struct multipart_limits {
	size_t max_header_bytes;	/* one part's header block, final CRLFCRLF included */
	unsigned max_parts;
};

#define MULTIPART_DEFAULT_MAX_HEADER_BYTES 8192
#define MULTIPART_DEFAULT_MAX_PARTS 16

struct multipart_parser;

/*
 * Allocate a parser for one body.  boundary is copied (it may be freed after
 * the call).  limits may be NULL for the defaults above; a limit of 0 is a
 * caller bug.  callbacks is borrowed and must outlive the parser.  Returns
 * MP_BAD_CONTENT_TYPE for a boundary multipart_boundary() would refuse, or
 * MP_NOMEM; *out is then NULL.
 */
BINDERY_NODISCARD enum multipart_err multipart_parser_new(struct span boundary,
    const struct multipart_limits *limits, const struct multipart_callbacks *callbacks,
    void *ctx, struct multipart_parser **out);

/*
 * Feed the next len bytes of the body.  A delimiter may straddle any number
 * of feeds.  Errors are sticky: after the first, every call returns it.
 * Bytes after the closing delimiter (the epilogue) are ignored.
 */
BINDERY_NODISCARD enum multipart_err multipart_feed(struct multipart_parser *p,
    const char *data, size_t len);

/* End of input: MP_OK only if the closing delimiter "--boundary--" was seen,
 * MP_TRUNCATED if not, or the sticky error. */
BINDERY_NODISCARD enum multipart_err multipart_finish(struct multipart_parser *p);

/* Number of parts begun so far. */
unsigned multipart_part_count(const struct multipart_parser *p);

/* NULL is a no-op. */
void multipart_parser_free(struct multipart_parser *p);

#endif
