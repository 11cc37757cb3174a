/*
 * http_parse.h - small parsers for the pieces of a request: query strings,
 * document names, Range, If-Match, Authorization, decimal numbers and the
 * request path's segments (the API's route table is app/routes.c).  Pure
 * functions over spans, no I/O; output that must be owned goes into a
 * caller's capped struct buf.
 */
#ifndef BINDERY_HTTP_PARSE_H
#define BINDERY_HTTP_PARSE_H

#include <stdint.h>

#include "base/buf.h"
#include "base/compat.h"

enum http_decode_err {
	HTTP_DECODE_OK = 0,
	HTTP_DECODE_MALFORMED,	/* '%' not followed by two hex digits */
	HTTP_DECODE_TOO_LONG,	/* out's cap was reached */
	HTTP_DECODE_NOMEM,
};

/*
 * Append the percent-decoding (RFC 3986 2.1) of in to out.  '+' stays '+'.
 * The result may contain any byte, NUL included.  On error out may hold a
 * partial result.
 */
BINDERY_NODISCARD enum http_decode_err http_percent_decode(struct span in, struct buf *out);

enum http_query_result {
	HTTP_QUERY_FOUND = 0,
	HTTP_QUERY_NOT_FOUND,
	HTTP_QUERY_MALFORMED,	/* a bad %XX anywhere, or key given twice */
	HTTP_QUERY_TOO_LONG,	/* the value exceeds out's cap */
	HTTP_QUERY_NOMEM,
};

/*
 * Look key up in an application/x-www-form-urlencoded query (no leading
 * '?'): pairs split on '&', '+' is a space, keys compared after decoding.
 * A key without '=' has the empty value.  A key that occurs twice is
 * malformed rather than first- or last-wins, so no two layers can disagree
 * on it.  On FOUND out is reset and holds the decoded value; otherwise it is
 * reset and empty.
 */
BINDERY_NODISCARD enum http_query_result http_query_get(struct span query, const char *key,
    struct buf *out);

#define DOCUMENT_NAME_MAX 255

enum document_name_err {
	DOCNAME_OK = 0,
	DOCNAME_EMPTY,
	DOCNAME_TOO_LONG,	/* more than DOCUMENT_NAME_MAX bytes */
	DOCNAME_BAD_UTF8,	/* overlong, surrogate, > U+10FFFF, truncated */
	DOCNAME_CONTROL_CHAR,	/* U+0000-U+001F, U+007F, U+0080-U+009F */
	DOCNAME_SLASH,		/* '/' or '\\' */
	DOCNAME_DOT_NAME,	/* "." or ".." */
};

/* Whether name is acceptable as a document name: 1..255 bytes of
 * well-formed UTF-8 (RFC 3629) without controls or slashes, not "." or "..".
 * Anything else, spaces at either end included, is kept exactly. */
BINDERY_NODISCARD enum document_name_err document_name_check(struct span name);
/* A sentence fit for a 400 message; never NULL. */
const char *document_name_err_string(enum document_name_err e);

/* Characters, not bytes: the owner columns are utf8mb4 VARCHAR(128). */
#define OWNER_NAME_MAX 128

enum owner_name_err {
	OWNER_NAME_OK = 0,
	OWNER_NAME_EMPTY,
	OWNER_NAME_TOO_LONG,	/* more than OWNER_NAME_MAX characters */
	OWNER_NAME_BAD_UTF8,
	OWNER_NAME_CONTROL_CHAR,
};

/*
 * Whether name can be stored as a document's owner exactly as given (a
 * REMOTE_USER from the web server, a token's owner from bindery.conf):
 * 1..128 characters of well-formed UTF-8 without controls.  Anything else
 * would be refused by a strict server or cut short by a lax one, and a cut
 * name could be someone else's.
 */
BINDERY_NODISCARD enum owner_name_err owner_name_check(struct span name);
/* A sentence fit for an error message; never NULL. */
const char *owner_name_err_string(enum owner_name_err e);

enum http_range_result {
	HTTP_RANGE_OK = 0,
	HTTP_RANGE_UNSATISFIABLE,	/* answer 416 with Content-Range: bytes * /size */
	HTTP_RANGE_IGNORE,		/* malformed, another unit or several ranges: serve 200 */
};

/*
 * A Range header (RFC 9110 14.1.2) for a representation of size bytes.
 * Only one range is honoured: "bytes=a-b", "bytes=a-" or "bytes=-n"; a
 * last-pos beyond the end is clamped.  On OK, 0 < *len and
 * *start + *len <= size.
 */
BINDERY_NODISCARD enum http_range_result http_parse_range(struct span header, uint64_t size,
    uint64_t *start, uint64_t *len);

enum http_uint_err {
	HTTP_UINT_OK = 0,
	HTTP_UINT_INVALID,	/* empty, or anything but ASCII digits */
	HTTP_UINT_TOO_BIG,	/* above max (overflow included) */
};

/* Strict decimal: 1*DIGIT, leading zeros allowed, no sign or space. */
BINDERY_NODISCARD enum http_uint_err http_parse_uint(struct span s, uint64_t max, uint64_t *out);

enum http_etag_result {
	HTTP_ETAG_MATCH = 0,
	HTTP_ETAG_NO_MATCH,
	HTTP_ETAG_MALFORMED,	/* not "*" nor a list of entity-tags */
};

/*
 * Evaluate If-Match (RFC 9110 13.1.1) against the current representation's
 * ETag, given as the header shows it ("\"abc\"").  "*" matches (the caller
 * asks only when the document exists); otherwise any listed tag must match
 * with the strong comparison, so a W/ tag never does.  The caller answers
 * 412 on NO_MATCH and may treat MALFORMED the same.
 */
BINDERY_NODISCARD enum http_etag_result http_etag_match(struct span if_match, struct span etag);

/*
 * Compare If-None-Match (RFC 9110 13.1.2) with the current ETag: "*" or any
 * listed tag matches, with the weak comparison (W/"x" matches "x").  MATCH
 * means the condition is false: a GET or HEAD answers 304.  The caller
 * ignores a MALFORMED header (the condition cannot be evaluated).
 */
BINDERY_NODISCARD enum http_etag_result http_etag_none_match(struct span if_none_match, struct span etag);

/*
 * Nonzero when If-Match is "*" (OWS around it allowed): RFC 9110 13.1.1
 * makes it true for ANY current representation, so a write under it must
 * not be pinned to the version that happened to be current when it was
 * read -- only to the document still existing.
 */
int http_if_match_any(struct span if_match);

enum http_auth_result {
	HTTP_AUTH_OK = 0,
	HTTP_AUTH_ABSENT,	/* empty header */
	HTTP_AUTH_INVALID,	/* another scheme, or not a token68 */
};

/* "Bearer" (any case), one or more spaces, a token68 (RFC 6750 2.1).  On OK
 * *token points into authorization; otherwise it is SPAN_NULL. */
BINDERY_NODISCARD enum http_auth_result http_bearer_token(struct span authorization,
    struct span *token);

/* Enough for every route of the API; a longer path matches none. */
#define HTTP_PATH_MAX_SEGMENTS 4

struct http_path {
	struct span seg[HTTP_PATH_MAX_SEGMENTS];	/* point into the path */
	size_t nseg;					/* "/" has none */
};

/*
 * Split an absolute request path (query already stripped, nothing decoded)
 * into its segments.  A path with a NUL, an empty segment ("//", a trailing
 * '/'), a dot segment or more than HTTP_PATH_MAX_SEGMENTS segments is
 * refused (returns -1), so no two spellings of a path can reach one
 * resource; 0 otherwise.
 */
BINDERY_NODISCARD int http_path_split(struct span path, struct http_path *out);

/* The longest mount prefix (SCRIPT_NAME) bindery accepts. */
#define HTTP_MOUNT_MAX 255

enum http_mount_result {
	HTTP_MOUNT_ROOT = 0,	/* SCRIPT_NAME "" or "/": the app is the whole site */
	HTTP_MOUNT_PREFIX,	/* mounted under *prefix, which the path starts with */
	HTTP_MOUNT_OUTSIDE,	/* a good SCRIPT_NAME the path does not start with */
	HTTP_MOUNT_BAD,		/* SCRIPT_NAME is not a safe path (see below) */
};

/*
 * Where the app is mounted, as the client sees it: script_name is the web
 * server's SCRIPT_NAME, path the request path from REQUEST_URI (query
 * stripped, nothing decoded).  A prefix is kept only when it is a safe
 * path, so it can be put into a Location header, a URL and HTML as it is:
 * '/' then segments of [A-Za-z0-9._~-], no empty, "." or ".." segment, no
 * trailing '/', at most HTTP_MOUNT_MAX bytes; and only when path starts
 * with it at a segment boundary (a rewrite in front of the app can hand
 * over a SCRIPT_NAME the client never asked for).  On HTTP_MOUNT_PREFIX,
 * *prefix points into script_name and *rest is path without it ("/" when
 * nothing is left); otherwise *prefix is empty and *rest is path (""
 * becomes "/"), so routing sees what the client sent.
 */
BINDERY_NODISCARD enum http_mount_result http_mount_split(struct span script_name, struct span path,
    struct span *prefix, struct span *rest);

/* A resource id in a path: canonical decimal 1..UINT64_MAX (no leading
 * zeros, no sign), so "/documents/07" is not "/documents/7".  1 if valid. */
BINDERY_NODISCARD int http_parse_id(struct span seg, uint64_t *id);

/* Append in to out with & < > " ' escaped for HTML text and attributes. */
BINDERY_NODISCARD enum buf_err html_escape(struct span in, struct buf *out);

#endif
