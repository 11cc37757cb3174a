/*
 * mime_list.h - [upload] allowed_types: a list of media type patterns and
 * whether a type is in it (doc/design.md, "Admission": types by content).
 *
 * A pattern is "type/subtype", or "type/" and a "*" for any subtype of
 * the type; each name is an RFC 6838 4.2 restricted-name.  Patterns are
 * separated by commas and/or blanks and compared case-insensitively (RFC
 * 6838 4.2: the names are).  A "*" type is refused: a list that admits
 * every type is no list, and leaving allowed_types out says so.  Pure:
 * text in, verdicts out; no allocation.
 */
#ifndef BINDERY_MIME_LIST_H
#define BINDERY_MIME_LIST_H

#include <stddef.h>

#include "base/buf.h"
#include "base/compat.h"

#define MIME_LIST_MAX 64	/* patterns in one list */
#define MIME_NAME_MAX 127	/* a type or subtype name (RFC 6838 4.2) */

/* One pattern, lower-case; a subtype "*" matches any. */
struct mime_pattern {
	char type[MIME_NAME_MAX + 1];
	char subtype[MIME_NAME_MAX + 1];
};

struct mime_list {
	struct mime_pattern items[MIME_LIST_MAX];
	size_t n;
};

enum mime_list_err {
	MIME_LIST_OK = 0,
	MIME_LIST_BAD_ENTRY,	/* not type/subtype (or a "*" subtype) of RFC 6838 names */
	MIME_LIST_PARAMETER,	/* carries a ";" parameter, which a pattern cannot */
	MIME_LIST_ANY_TYPE,	/* a "*" type: every type; a type must be named */
	MIME_LIST_TOO_MANY,	/* more than MIME_LIST_MAX patterns */
};

/*
 * Parse text into *out (replacing what it held).  Empty text, or only
 * separators, is an empty list.  On an error *bad is the entry refused (a
 * view into text; for MIME_LIST_TOO_MANY the first that did not fit) and
 * *out is empty.
 */
BINDERY_NODISCARD enum mime_list_err mime_list_parse(struct span text, struct mime_list *out,
						     struct span *bad);

/* Why an entry was refused, as a phrase that follows it in a message:
 * "'x/y;q=1' carries a parameter; ..." */
const char *mime_list_strerror(enum mime_list_err err);

/*
 * Whether mime (a Content-Type value such as libmagic's "text/plain", or a
 * client's "Text/Plain; charset=utf-8") matches a pattern of list.  Only
 * the type and subtype count: blanks around them and any ";" parameters
 * are ignored.  A value that is not type/subtype of RFC 9110 tokens, or
 * whose type or subtype is a "*", matches nothing.  An empty list allows
 * nothing: whether to check at all is the caller's (config.h: an empty
 * allowed_types turns the check off).
 */
int mime_list_allows(const struct mime_list *list, struct span mime);

#endif
