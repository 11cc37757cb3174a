/* http_parse.c - see http_parse.h. */
#include <string.h>

#include "parse/http_parse.h"

static int
hex_value(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int
is_ows(char c)
{
	return c == ' ' || c == '\t';
}

static struct span
trim_ows(struct span s)
{
	while (s.len > 0 && is_ows(s.ptr[0])) {
		s.ptr++;
		s.len--;
	}
	while (s.len > 0 && is_ows(s.ptr[s.len - 1]))
		s.len--;
	return s;
}

static enum http_decode_err
decode_from_buf(enum buf_err e)
{
	switch (e) {
	case BUF_OK:
		return HTTP_DECODE_OK;
	case BUF_TOO_LONG:
		return HTTP_DECODE_TOO_LONG;
	case BUF_NOMEM:
		break;
	}
	return HTTP_DECODE_NOMEM;
}

/* Percent-decode in onto out; form turns '+' into a space (HTML's
 * application/x-www-form-urlencoded). Runs of plain bytes go in one append. */
static enum http_decode_err
decode_into(struct span in, struct buf *out, int form)
{
	size_t i = 0, run = 0;
	enum buf_err e;
	int hi, lo;
	char c;

	if (in.len == 0)
		return HTTP_DECODE_OK;
	while (i < in.len) {
		if (in.ptr[i] != '%' && !(form && in.ptr[i] == '+')) {
			i++;
			continue;
		}
		if ((e = buf_append(out, in.ptr + run, i - run)) != BUF_OK)
			return decode_from_buf(e);
		if (in.ptr[i] == '+') {
			c = ' ';
			i++;
		} else {
			if (in.len - i < 3 || (hi = hex_value((unsigned char)in.ptr[i + 1])) < 0 ||
			    (lo = hex_value((unsigned char)in.ptr[i + 2])) < 0)
				return HTTP_DECODE_MALFORMED;
			c = (char)(hi << 4 | lo);
			i += 3;
		}
		if ((e = buf_append(out, &c, 1)) != BUF_OK)
			return decode_from_buf(e);
		run = i;
	}
	return decode_from_buf(buf_append(out, in.ptr + run, i - run));
}

enum http_decode_err
http_percent_decode(struct span in, struct buf *out)
{
	return decode_into(in, out, 0);
}

/* Every '%' is followed by two hex digits. */
static int
percent_wellformed(struct span s)
{
	size_t i;

	for (i = 0; i < s.len; i++) {
		if (s.ptr[i] != '%')
			continue;
		if (s.len - i < 3 || hex_value((unsigned char)s.ptr[i + 1]) < 0 ||
		    hex_value((unsigned char)s.ptr[i + 2]) < 0)
			return 0;
		i += 2;
	}
	return 1;
}

/* Whether the form-encoded enc (already known well-formed) decodes to key. */
static int
form_key_equals(struct span enc, const char *key)
{
	size_t i = 0, k = 0, klen = strlen(key);
	char c;

	while (i < enc.len) {
		if (enc.ptr[i] == '%') {
			c = (char)(hex_value((unsigned char)enc.ptr[i + 1]) << 4 |
			    hex_value((unsigned char)enc.ptr[i + 2]));
			i += 3;
		} else {
			c = enc.ptr[i] == '+' ? ' ' : enc.ptr[i];
			i++;
		}
		if (k >= klen || key[k] != c)
			return 0;
		k++;
	}
	return k == klen;
}

enum http_query_result
http_query_get(struct span query, const char *key, struct buf *out)
{
	struct span pair, k, value = SPAN_NULL;
	size_t pos = 0, end;
	const char *eq;
	int found = 0;

	buf_reset(out);
	if (query.len == 0)
		return HTTP_QUERY_NOT_FOUND;
	if (!percent_wellformed(query))
		return HTTP_QUERY_MALFORMED;
	while (pos <= query.len) {
		for (end = pos; end < query.len && query.ptr[end] != '&'; end++)
			;
		pair.ptr = query.ptr + pos;
		pair.len = end - pos;
		pos = end + 1;
		if (pair.len == 0)
			continue;
		eq = memchr(pair.ptr, '=', pair.len);
		k.ptr = pair.ptr;
		k.len = eq ? (size_t)(eq - pair.ptr) : pair.len;
		if (!form_key_equals(k, key))
			continue;
		if (found)
			return HTTP_QUERY_MALFORMED;
		found = 1;
		value.ptr = eq ? eq + 1 : pair.ptr + pair.len;
		value.len = eq ? pair.len - k.len - 1 : 0;
	}
	if (!found)
		return HTTP_QUERY_NOT_FOUND;
	switch (decode_into(value, out, 1)) {
	case HTTP_DECODE_OK:
		return HTTP_QUERY_FOUND;
	case HTTP_DECODE_MALFORMED:
		break;
	case HTTP_DECODE_TOO_LONG:
		buf_reset(out);
		return HTTP_QUERY_TOO_LONG;
	case HTTP_DECODE_NOMEM:
		buf_reset(out);
		return HTTP_QUERY_NOMEM;
	}
	buf_reset(out);
	return HTTP_QUERY_MALFORMED;
}

/*
 * Decode one UTF-8 sequence at s[*i] (RFC 3629 section 4's table, which
 * excludes overlong forms, surrogates and anything above U+10FFFF).
 * Returns the code point and advances *i, or -1.
 */
static long
utf8_next(struct span s, size_t *i)
{
	const unsigned char *p = (const unsigned char *)s.ptr + *i;
	size_t left = s.len - *i, n, k;
	unsigned char lo = 0x80, hi = 0xbf;
	long cp;

	if (p[0] < 0x80) {
		(*i)++;
		return p[0];
	}
	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		n = 2;
		cp = p[0] & 0x1f;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		n = 3;
		cp = p[0] & 0x0f;
		if (p[0] == 0xe0)
			lo = 0xa0;	/* overlong */
		else if (p[0] == 0xed)
			hi = 0x9f;	/* surrogates U+D800-U+DFFF */
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		n = 4;
		cp = p[0] & 0x07;
		if (p[0] == 0xf0)
			lo = 0x90;	/* overlong */
		else if (p[0] == 0xf4)
			hi = 0x8f;	/* above U+10FFFF */
	} else {
		return -1;	/* continuation byte, C0, C1 or F5-FF */
	}
	if (left < n)
		return -1;
	for (k = 1; k < n; k++) {
		if (p[k] < lo || p[k] > hi)
			return -1;
		cp = cp << 6 | (p[k] & 0x3f);
		lo = 0x80;
		hi = 0xbf;
	}
	*i += n;
	return cp;
}

enum document_name_err
document_name_check(struct span name)
{
	size_t i = 0;
	long cp;

	if (name.len == 0)
		return DOCNAME_EMPTY;
	if (name.len > DOCUMENT_NAME_MAX)
		return DOCNAME_TOO_LONG;
	while (i < name.len) {
		if ((cp = utf8_next(name, &i)) < 0)
			return DOCNAME_BAD_UTF8;
		if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f))
			return DOCNAME_CONTROL_CHAR;
		if (cp == '/' || cp == '\\')
			return DOCNAME_SLASH;
	}
	if (span_eq_cstr(name, ".") || span_eq_cstr(name, ".."))
		return DOCNAME_DOT_NAME;
	return DOCNAME_OK;
}

enum owner_name_err
owner_name_check(struct span name)
{
	size_t i = 0, chars = 0;
	long cp;

	if (name.len == 0)
		return OWNER_NAME_EMPTY;
	/* Bound the walk before decoding: 4 bytes is the longest character. */
	if (name.len > 4 * OWNER_NAME_MAX)
		return OWNER_NAME_TOO_LONG;
	while (i < name.len) {
		if ((cp = utf8_next(name, &i)) < 0)
			return OWNER_NAME_BAD_UTF8;
		if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f))
			return OWNER_NAME_CONTROL_CHAR;
		chars++;
	}
	return chars > OWNER_NAME_MAX ? OWNER_NAME_TOO_LONG : OWNER_NAME_OK;
}

const char *
owner_name_err_string(enum owner_name_err e)
{
	switch (e) {
	case OWNER_NAME_OK:
		return "the user name is valid";
	case OWNER_NAME_EMPTY:
		return "the user name is empty";
	case OWNER_NAME_TOO_LONG:
		return "the user name is longer than 128 characters";
	case OWNER_NAME_BAD_UTF8:
		return "the user name is not valid UTF-8";
	case OWNER_NAME_CONTROL_CHAR:
		return "the user name contains a control character";
	}
	return "the user name is not valid";
}

const char *
document_name_err_string(enum document_name_err e)
{
	switch (e) {
	case DOCNAME_OK:
		return "the name is valid";
	case DOCNAME_EMPTY:
		return "the name is empty";
	case DOCNAME_TOO_LONG:
		return "the name is longer than 255 bytes";
	case DOCNAME_BAD_UTF8:
		return "the name is not valid UTF-8";
	case DOCNAME_CONTROL_CHAR:
		return "the name contains a control character";
	case DOCNAME_SLASH:
		return "the name contains a slash or backslash";
	case DOCNAME_DOT_NAME:
		return "the name may not be \".\" or \"..\"";
	}
	return "the name is invalid";
}

/* 1*DIGIT at s[*i], saturating at UINT64_MAX; 0 when there is no digit. */
static int
digits_saturating(struct span s, size_t *i, uint64_t *out)
{
	size_t start = *i;
	uint64_t v = 0;
	unsigned d;

	for (; *i < s.len && is_digit(s.ptr[*i]); (*i)++) {
		d = (unsigned)(s.ptr[*i] - '0');
		v = v > (UINT64_MAX - d) / 10 ? UINT64_MAX : v * 10 + d;
	}
	*out = v;
	return *i > start;
}

enum http_range_result
http_parse_range(struct span header, uint64_t size, uint64_t *start, uint64_t *len)
{
	struct span s = trim_ows(header);
	uint64_t first, last;
	size_t i = 0;
	int has_last;

	*start = *len = 0;
	if (s.len < 6 || !span_eq_nocase_cstr((struct span){ s.ptr, 6 }, "bytes="))
		return HTTP_RANGE_IGNORE;
	s.ptr += 6;
	s.len -= 6;
	if (memchr(s.ptr, ',', s.len) != NULL)
		return HTTP_RANGE_IGNORE;	/* several ranges: we send the whole */
	s = trim_ows(s);
	if (s.len > 0 && s.ptr[0] == '-') {
		i = 1;
		if (!digits_saturating(s, &i, &last) || i != s.len)
			return HTTP_RANGE_IGNORE;
		/* A suffix of zero, or of an empty representation, selects nothing. */
		if (last == 0 || size == 0)
			return HTTP_RANGE_UNSATISFIABLE;
		*len = last < size ? last : size;
		*start = size - *len;
		return HTTP_RANGE_OK;
	}
	if (!digits_saturating(s, &i, &first) || i >= s.len || s.ptr[i] != '-')
		return HTTP_RANGE_IGNORE;
	i++;
	has_last = digits_saturating(s, &i, &last);
	if (i != s.len || (has_last && last < first))
		return HTTP_RANGE_IGNORE;
	if (first >= size)
		return HTTP_RANGE_UNSATISFIABLE;
	if (!has_last || last >= size)
		last = size - 1;
	*start = first;
	*len = last - first + 1;
	return HTTP_RANGE_OK;
}

enum http_uint_err
http_parse_uint(struct span s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	unsigned d;
	size_t i;

	*out = 0;
	if (s.len == 0)
		return HTTP_UINT_INVALID;
	for (i = 0; i < s.len; i++)
		if (!is_digit(s.ptr[i]))
			return HTTP_UINT_INVALID;
	for (i = 0; i < s.len; i++) {
		d = (unsigned)(s.ptr[i] - '0');
		if (d > max || v > (max - d) / 10)
			return HTTP_UINT_TOO_BIG;
		v = v * 10 + d;
	}
	*out = v;
	return HTTP_UINT_OK;
}

/* etagc = %x21 / %x23-7E / obs-text (RFC 9110 8.8.3) */
static int
is_etagc(unsigned char c)
{
	return c == 0x21 || (c >= 0x23 && c <= 0x7e) || c >= 0x80;
}

/* The opaque-tag of an entity-tag: without its W/ (RFC 9110 8.8.3). */
static struct span
etag_opaque(struct span tag)
{
	if (tag.len >= 2 && tag.ptr[0] == 'W' && tag.ptr[1] == '/')
		return (struct span){ tag.ptr + 2, tag.len - 2 };
	return tag;
}

/*
 * "*" or 1#entity-tag against etag: the strong comparison (If-Match) never
 * matches a W/ tag; the weak one (If-None-Match) compares the opaque-tags
 * whatever their W/ (RFC 9110 8.8.3.2).
 */
static enum http_etag_result
etag_list_match(struct span header, struct span etag, int weak_comparison)
{
	struct span s = trim_ows(header), tag;
	size_t i = 0, j;
	int weak, matched = 0, elements = 0;

	if (span_eq_cstr(s, "*"))
		return HTTP_ETAG_MATCH;
	/* 1#entity-tag: empty elements and OWS around commas are allowed. */
	while (i < s.len) {
		if (s.ptr[i] == ',' || is_ows(s.ptr[i])) {
			i++;
			continue;
		}
		weak = 0;
		if (s.len - i >= 2 && s.ptr[i] == 'W' && s.ptr[i + 1] == '/') {
			weak = 1;
			i += 2;
		}
		if (i >= s.len || s.ptr[i] != '"')
			return HTTP_ETAG_MALFORMED;
		for (j = i + 1; j < s.len && is_etagc((unsigned char)s.ptr[j]); j++)
			;
		if (j >= s.len || s.ptr[j] != '"')
			return HTTP_ETAG_MALFORMED;
		tag.ptr = s.ptr + i;
		tag.len = j - i + 1;
		if (weak_comparison ? span_eq(tag, etag_opaque(etag)) : !weak && span_eq(tag, etag))
			matched = 1;
		elements++;
		i = j + 1;
		while (i < s.len && is_ows(s.ptr[i]))
			i++;
		if (i < s.len && s.ptr[i] != ',')
			return HTTP_ETAG_MALFORMED;
	}
	if (elements == 0)
		return HTTP_ETAG_MALFORMED;
	return matched ? HTTP_ETAG_MATCH : HTTP_ETAG_NO_MATCH;
}

enum http_etag_result
http_etag_match(struct span if_match, struct span etag)
{
	return etag_list_match(if_match, etag, 0);
}

enum http_etag_result
http_etag_none_match(struct span if_none_match, struct span etag)
{
	return etag_list_match(if_none_match, etag, 1);
}

int
http_if_match_any(struct span if_match)
{
	return span_eq_cstr(trim_ows(if_match), "*");
}

/* token68 characters before the trailing '=' padding (RFC 9110 11.2). */
static int
is_token68_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) ||
	    c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/';
}

enum http_auth_result
http_bearer_token(struct span authorization, struct span *token)
{
	struct span s = trim_ows(authorization);
	size_t i, t;

	*token = SPAN_NULL;
	if (s.len == 0)
		return HTTP_AUTH_ABSENT;
	if (s.len < 7 || !span_eq_nocase_cstr((struct span){ s.ptr, 6 }, "Bearer") ||
	    s.ptr[6] != ' ')
		return HTTP_AUTH_INVALID;
	for (i = 7; i < s.len && s.ptr[i] == ' '; i++)
		;
	for (t = i; t < s.len && is_token68_char(s.ptr[t]); t++)
		;
	if (t == i)
		return HTTP_AUTH_INVALID;
	while (t < s.len && s.ptr[t] == '=')
		t++;
	if (t != s.len)
		return HTTP_AUTH_INVALID;
	token->ptr = s.ptr + i;
	token->len = t - i;
	return HTTP_AUTH_OK;
}

int
http_parse_id(struct span seg, uint64_t *id)
{
	if (seg.len == 0 || seg.ptr[0] == '0')
		return 0;
	return http_parse_uint(seg, UINT64_MAX, id) == HTTP_UINT_OK;
}

int
http_path_split(struct span path, struct http_path *out)
{
	size_t i, start;
	struct span seg;

	out->nseg = 0;
	if (path.len == 0 || path.ptr[0] != '/' || memchr(path.ptr, '\0', path.len) != NULL)
		return -1;
	/* Split after the leading '/'; "/" alone has no segment. */
	for (start = 1, i = 1; path.len > 1 && i <= path.len; i++) {
		if (i < path.len && path.ptr[i] != '/')
			continue;
		seg.ptr = path.ptr + start;
		seg.len = i - start;
		if (out->nseg == HTTP_PATH_MAX_SEGMENTS || seg.len == 0 ||
		    span_eq_cstr(seg, ".") || span_eq_cstr(seg, ".."))
			goto refuse;
		out->seg[out->nseg++] = seg;
		start = i + 1;
	}
	return 0;
refuse:
	out->nseg = 0;
	return -1;
}

/* A mount prefix fit to be copied into URLs and HTML unescaped. */
static int
mount_prefix_safe(struct span s)
{
	size_t i, seg = 1;

	if (s.len < 2 || s.len > HTTP_MOUNT_MAX || s.ptr[0] != '/' || s.ptr[s.len - 1] == '/')
		return 0;
	for (i = 1; i <= s.len; i++) {
		char c = i < s.len ? s.ptr[i] : '/';

		if (c == '/') {
			struct span part = { s.ptr + seg, i - seg };

			if (part.len == 0 || span_eq_cstr(part, ".") || span_eq_cstr(part, ".."))
				return 0;
			seg = i + 1;
		} else if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			     (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '~' || c == '-'))
			return 0;
	}
	return 1;
}

enum http_mount_result
http_mount_split(struct span script_name, struct span path, struct span *prefix,
    struct span *rest)
{
	enum http_mount_result res;

	*prefix = (struct span){ "", 0 };
	*rest = path;
	if (script_name.len == 0 || (script_name.len == 1 && script_name.ptr[0] == '/'))
		res = HTTP_MOUNT_ROOT;
	else if (!mount_prefix_safe(script_name))
		res = HTTP_MOUNT_BAD;
	else if (path.len < script_name.len || memcmp(path.ptr, script_name.ptr, script_name.len) != 0 ||
		 (path.len > script_name.len && path.ptr[script_name.len] != '/'))
		res = HTTP_MOUNT_OUTSIDE;
	else {
		*prefix = script_name;
		rest->ptr = path.ptr + script_name.len;
		rest->len = path.len - script_name.len;
		res = HTTP_MOUNT_PREFIX;
	}
	if (rest->len == 0)
		*rest = (struct span){ "/", 1 };
	return res;
}

enum buf_err
html_escape(struct span in, struct buf *out)
{
	size_t i, run = 0;
	const char *rep;
	enum buf_err e;

	if (in.len == 0)
		return BUF_OK;
	for (i = 0; i < in.len; i++) {
		switch (in.ptr[i]) {
		case '&': rep = "&amp;"; break;
		case '<': rep = "&lt;"; break;
		case '>': rep = "&gt;"; break;
		case '"': rep = "&quot;"; break;
		case '\'': rep = "&#39;"; break;
		default: continue;
		}
		if ((e = buf_append(out, in.ptr + run, i - run)) != BUF_OK ||
		    (e = buf_append_cstr(out, rep)) != BUF_OK)
			return e;
		run = i + 1;
	}
	return buf_append(out, in.ptr + run, i - run);
}
