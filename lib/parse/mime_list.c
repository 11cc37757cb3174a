/* mime_list.c - see mime_list.h. */
#include <string.h>

#include "parse/mime_list.h"

#define STR(x) #x
#define XSTR(x) STR(x)

static int
is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static char
lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* RFC 6838 4.2: restricted-name = restricted-name-first *126restricted-name-chars,
 * first ALPHA / DIGIT, then also ! # $ & - ^ _ . + */
static int
is_restricted_name(struct span s)
{
	size_t i;

	if (s.len == 0 || s.len > MIME_NAME_MAX || !is_alnum(s.ptr[0]))
		return 0;
	for (i = 1; i < s.len; i++)
		if (!is_alnum(s.ptr[i]) && strchr("!#$&-^_.+", s.ptr[i]) == NULL)
			return 0;
	return 1;
}

/* RFC 9110 5.6.2 token, less "*": a client may send any token, but a
 * wildcard is a pattern, never a type a document has. */
static int
is_type_token(struct span s)
{
	size_t i;

	if (s.len == 0)
		return 0;
	for (i = 0; i < s.len; i++)
		if (!is_alnum(s.ptr[i]) && strchr("!#$%&'+-.^_`|~", s.ptr[i]) == NULL)
			return 0;
	return 1;
}

static void
copy_lower(char *dst, struct span s)
{
	size_t i;

	for (i = 0; i < s.len; i++)
		dst[i] = lower(s.ptr[i]);
	dst[s.len] = '\0';
}

/* One entry, separators already stripped. */
static enum mime_list_err
parse_pattern(struct span e, struct mime_pattern *out)
{
	const char *slash = memchr(e.ptr, '/', e.len);
	struct span type, subtype;

	if (memchr(e.ptr, ';', e.len) != NULL)
		return MIME_LIST_PARAMETER;
	if (e.ptr[0] == '*')
		return MIME_LIST_ANY_TYPE;
	if (slash == NULL)
		return MIME_LIST_BAD_ENTRY;
	type = (struct span){ e.ptr, (size_t)(slash - e.ptr) };
	subtype = (struct span){ slash + 1, e.len - type.len - 1 };
	if (!is_restricted_name(type) ||
	    !(span_eq_cstr(subtype, "*") || is_restricted_name(subtype)))
		return MIME_LIST_BAD_ENTRY;
	copy_lower(out->type, type);
	copy_lower(out->subtype, subtype);
	return MIME_LIST_OK;
}

static int
is_separator(char c)
{
	return c == ',' || c == ' ' || c == '\t';
}

enum mime_list_err
mime_list_parse(struct span text, struct mime_list *out, struct span *bad)
{
	size_t i = 0, start;
	enum mime_list_err err;

	out->n = 0;
	*bad = SPAN_NULL;
	while (i < text.len) {
		struct span e;

		while (i < text.len && is_separator(text.ptr[i]))
			i++;
		if (i == text.len)
			break;
		start = i;
		while (i < text.len && !is_separator(text.ptr[i]))
			i++;
		e = (struct span){ text.ptr + start, i - start };
		if (out->n == MIME_LIST_MAX)
			err = MIME_LIST_TOO_MANY;
		else
			err = parse_pattern(e, &out->items[out->n]);
		if (err != MIME_LIST_OK) {
			out->n = 0;
			*bad = e;
			return err;
		}
		out->n++;
	}
	return MIME_LIST_OK;
}

const char *
mime_list_strerror(enum mime_list_err err)
{
	switch (err) {
	case MIME_LIST_OK:
		return "is a pattern";
	case MIME_LIST_BAD_ENTRY:
		return "is not type/subtype or a type with a \"*\" subtype (RFC 6838 names)";
	case MIME_LIST_PARAMETER:
		return "carries a parameter; a pattern names a type and subtype only"
		       " (matching ignores a type's parameters)";
	case MIME_LIST_ANY_TYPE:
		return "does not name a type; to admit every type leave allowed_types out";
	case MIME_LIST_TOO_MANY:
		return "is one pattern too many (at most " XSTR(MIME_LIST_MAX) ")";
	}
	return "is refused";
}

/* Equal to lower-case name, whatever the case of s. */
static int
eq_lower(struct span s, const char *name)
{
	size_t i;

	for (i = 0; i < s.len; i++)
		if (name[i] == '\0' || lower(s.ptr[i]) != name[i])
			return 0;
	return name[i] == '\0';
}

int
mime_list_allows(const struct mime_list *list, struct span mime)
{
	const char *p = mime.ptr, *end = mime.ptr + mime.len, *slash, *q;
	struct span type, subtype;
	size_t i;

	if (mime.len == 0)
		return 0;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	slash = memchr(p, '/', (size_t)(end - p));
	if (slash == NULL)
		return 0;
	q = slash + 1;
	while (q < end && *q != ';' && *q != ' ' && *q != '\t')
		q++;
	type = (struct span){ p, (size_t)(slash - p) };
	subtype = (struct span){ slash + 1, (size_t)(q - slash - 1) };
	/* After the subtype only blanks, then the parameters, if any. */
	while (q < end && (*q == ' ' || *q == '\t'))
		q++;
	if ((q < end && *q != ';') || !is_type_token(type) || !is_type_token(subtype))
		return 0;
	for (i = 0; i < list->n; i++)
		if (eq_lower(type, list->items[i].type) &&
		    (strcmp(list->items[i].subtype, "*") == 0 || eq_lower(subtype, list->items[i].subtype)))
			return 1;
	return 0;
}
