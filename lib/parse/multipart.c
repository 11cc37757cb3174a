/*
 * multipart.c - see multipart.h.
 *
 * The body is scanned for the delimiter CRLF "--" boundary (RFC 2046 5.1.1).
 * The boundary's characters (bchars) never include CR, so a partial match
 * can only restart at a CR: no lookbehind buffer and no KMP table are needed,
 * and the bytes of an abandoned partial match are the delimiter's own prefix,
 * which is where they are re-emitted from when they straddled two feeds.
 * The first delimiter may open the body without a CRLF ("[preamble CRLF]
 * dash-boundary"), so the scan starts as if a CRLF had just been seen.
 */
#include <assert.h>
#include <string.h>

#include "base/alloc.h"
#include "parse/multipart.h"

enum mp_state {
	ST_PREAMBLE,	/* before the first delimiter; bytes are discarded */
	ST_DELIM_TAIL,	/* just after a delimiter: "--", padding or CRLF */
	ST_PADDING,	/* transport-padding (LWSP) before the CRLF */
	ST_DELIM_LF,	/* CR seen after a delimiter, LF expected */
	ST_CLOSE_DASH,	/* one '-' of the close delimiter seen */
	ST_HEADERS,	/* collecting a part's header block */
	ST_DATA,	/* a part's bytes, streamed to part_data */
	ST_EPILOGUE,	/* after the close delimiter; bytes are ignored */
};

struct multipart_parser {
	const struct multipart_callbacks *cb;
	void *ctx;
	struct multipart_limits lim;
	enum mp_state state;
	enum multipart_err err;		/* sticky */
	unsigned parts;
	size_t match;			/* bytes of delim matched so far */
	size_t delim_len;
	char delim[4 + MULTIPART_BOUNDARY_MAX];	/* CRLF "--" boundary */
	char *hdr;			/* lim.max_header_bytes */
	size_t hdr_len;
};

const char *
multipart_err_string(enum multipart_err e)
{
	switch (e) {
	case MP_OK:
		return "success";
	case MP_NOMEM:
		return "out of memory";
	case MP_BAD_CONTENT_TYPE:
		return "not multipart/form-data with a valid boundary";
	case MP_MALFORMED:
		return "malformed multipart body";
	case MP_HEADER_TOO_LONG:
		return "multipart part headers too long";
	case MP_TOO_MANY_PARTS:
		return "too many multipart parts";
	case MP_TRUNCATED:
		return "multipart body ended before its closing boundary";
	case MP_ABORTED:
		return "multipart parsing stopped by the application";
	}
	return "unknown multipart error";
}

static int
is_wsp(char c)
{
	return c == ' ' || c == '\t';
}

/* RFC 2046 5.1.1 bchars, space included. */
static int
is_bchar(unsigned char c)
{
	if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
		return 1;
	return c != '\0' && strchr("'()+_,-./:=? ", c) != NULL;
}

static int
boundary_valid(struct span b)
{
	size_t i;

	if (b.len < 1 || b.len > MULTIPART_BOUNDARY_MAX || b.ptr[b.len - 1] == ' ')
		return 0;
	for (i = 0; i < b.len; i++)
		if (!is_bchar((unsigned char)b.ptr[i]))
			return 0;
	return 1;
}

static void
skip_wsp(struct span *s)
{
	while (s->len > 0 && is_wsp(s->ptr[0])) {
		s->ptr++;
		s->len--;
	}
}

static void
trim_wsp(struct span *s)
{
	skip_wsp(s);
	while (s->len > 0 && is_wsp(s->ptr[s->len - 1]))
		s->len--;
}

/* Take the leading run of s up to ';' or whitespace. */
static struct span
take_token(struct span *s)
{
	struct span t = { s->ptr, 0 };

	while (t.len < s->len && s->ptr[t.len] != ';' && !is_wsp(s->ptr[t.len]))
		t.len++;
	s->ptr += t.len;
	s->len -= t.len;
	return t;
}

/*
 * The next "; key=value" parameter of a header value (RFC 2045 5.1,
 * RFC 7578 4.2).  value is token or quoted-string; a quoted value comes back
 * without its quotes but still escaped (*quoted set).  Inside quotes a
 * backslash escapes only '"' and '\\', as Go's mime package does, so the
 * unescaped Windows paths old browsers sent keep their backslashes.
 * Returns 1 with a parameter, 0 at the end, -1 when malformed.
 */
static int
param_next(struct span *rest, struct span *key, struct span *value, int *quoted)
{
	size_t j;

	skip_wsp(rest);
	if (rest->len == 0)
		return 0;
	if (rest->ptr[0] != ';')
		return -1;
	rest->ptr++;
	rest->len--;
	skip_wsp(rest);
	if (rest->len == 0)
		return 0;	/* a trailing ';' some generators emit */
	key->ptr = rest->ptr;
	key->len = 0;
	while (key->len < rest->len && rest->ptr[key->len] != '=' &&
	    rest->ptr[key->len] != ';' && !is_wsp(rest->ptr[key->len]))
		key->len++;
	if (key->len == 0)
		return -1;
	rest->ptr += key->len;
	rest->len -= key->len;
	skip_wsp(rest);
	if (rest->len == 0 || rest->ptr[0] != '=')
		return -1;
	rest->ptr++;
	rest->len--;
	skip_wsp(rest);
	if (rest->len > 0 && rest->ptr[0] == '"') {
		for (j = 1; j < rest->len; j++) {
			if (rest->ptr[j] == '\\' && j + 1 < rest->len &&
			    (rest->ptr[j + 1] == '"' || rest->ptr[j + 1] == '\\'))
				j++;
			else if (rest->ptr[j] == '"')
				break;
		}
		if (j >= rest->len)
			return -1;	/* unterminated quoted-string */
		value->ptr = rest->ptr + 1;
		value->len = j - 1;
		rest->ptr += j + 1;
		rest->len -= j + 1;
		*quoted = 1;
		return 1;
	}
	*value = take_token(rest);
	if (value->len == 0 || memchr(value->ptr, '"', value->len) != NULL)
		return -1;
	*quoted = 0;
	return 1;
}

enum multipart_err
multipart_boundary(struct span content_type, struct span *boundary)
{
	struct span rest = content_type, type, key, value, found = SPAN_NULL;
	int quoted, r;

	*boundary = SPAN_NULL;
	if (content_type.ptr == NULL)
		return MP_BAD_CONTENT_TYPE;
	trim_wsp(&rest);
	type = take_token(&rest);
	if (!span_eq_nocase_cstr(type, "multipart/form-data"))
		return MP_BAD_CONTENT_TYPE;
	while ((r = param_next(&rest, &key, &value, &quoted)) == 1) {
		if (!span_eq_nocase_cstr(key, "boundary"))
			continue;
		/* A second boundary would let two parsers disagree. */
		if (found.ptr != NULL)
			return MP_BAD_CONTENT_TYPE;
		found = value;
	}
	if (r < 0 || found.ptr == NULL || !boundary_valid(found))
		return MP_BAD_CONTENT_TYPE;
	*boundary = found;
	return MP_OK;
}

enum multipart_err
multipart_parser_new(struct span boundary, const struct multipart_limits *limits,
    const struct multipart_callbacks *callbacks, void *ctx, struct multipart_parser **out)
{
	static const struct multipart_limits defaults = {
		MULTIPART_DEFAULT_MAX_HEADER_BYTES, MULTIPART_DEFAULT_MAX_PARTS
	};
	struct multipart_parser *p = NULL;
	enum multipart_err e;

	assert(callbacks != NULL && out != NULL);
	assert(limits == NULL || (limits->max_header_bytes > 0 && limits->max_parts > 0));
	*out = NULL;
	if (boundary.ptr == NULL || !boundary_valid(boundary)) {
		e = MP_BAD_CONTENT_TYPE;
		goto out;
	}
	if ((p = alloc_calloc(1, sizeof *p)) == NULL) {
		e = MP_NOMEM;
		goto out;
	}
	p->lim = limits ? *limits : defaults;
	if ((p->hdr = alloc_malloc(p->lim.max_header_bytes)) == NULL) {
		e = MP_NOMEM;
		goto out;
	}
	p->cb = callbacks;
	p->ctx = ctx;
	memcpy(p->delim, "\r\n--", 4);
	memcpy(p->delim + 4, boundary.ptr, boundary.len);
	p->delim_len = 4 + boundary.len;
	p->state = ST_PREAMBLE;
	p->match = 2;	/* the body may open with the dash-boundary itself */
	*out = p;
	p = NULL;
	e = MP_OK;
out:
	multipart_parser_free(p);
	return e;
}

void
multipart_parser_free(struct multipart_parser *p)
{
	if (p == NULL)
		return;
	alloc_free(p->hdr);
	alloc_free(p);
}

unsigned
multipart_part_count(const struct multipart_parser *p)
{
	return p->parts;
}

static enum multipart_err
emit_data(struct multipart_parser *p, const char *data, size_t len)
{
	if (len == 0 || p->cb->part_data == NULL)
		return MP_OK;
	return p->cb->part_data(p->ctx, data, len) ? MP_ABORTED : MP_OK;
}

/*
 * Scan data for the delimiter, passing everything before it to part_data
 * when emit is set (a part's bytes) or dropping it (the preamble).  Sets
 * *used to the bytes consumed and *found when the delimiter was completed;
 * a partial match at the end of data is remembered in p->match.
 */
static enum multipart_err
scan_delimiter(struct multipart_parser *p, const char *data, size_t len, int emit,
    size_t *used, int *found)
{
	size_t i = 0, start = 0, mstart = 0;
	int carried = p->match > 0;	/* the match began in an earlier feed */
	const char *cr;
	enum multipart_err e;

	*found = 0;
	*used = len;
	while (i < len) {
		if (p->match == 0) {
			if ((cr = memchr(data + i, '\r', len - i)) == NULL) {
				i = len;
				break;
			}
			i = (size_t)(cr - data);
			mstart = i++;
			p->match = 1;
			continue;
		}
		if (data[i] == p->delim[p->match]) {
			i++;
			if (++p->match < p->delim_len)
				continue;
			p->match = 0;
			*used = i;
			*found = 1;
			if (emit && !carried)
				return emit_data(p, data + start, mstart - start);
			return MP_OK;
		}
		/* Mismatch: the bytes held so far were data after all. */
		if (carried) {
			if (emit && (e = emit_data(p, p->delim, p->match)) != MP_OK)
				return e;
			start = i;
			carried = 0;
		}
		p->match = 0;	/* data[i] is looked at again: it may be a CR */
	}
	if (!emit || (carried && p->match > 0))
		return MP_OK;
	return emit_data(p, data + start, (p->match > 0 ? mstart : len) - start);
}

/*
 * Unquote a quoted-string parameter in place (it lies in p->hdr, which the
 * parser owns); the result is never longer.
 */
static struct span
param_unquote(struct multipart_parser *p, struct span v)
{
	char *w = p->hdr + (v.ptr - p->hdr), *start = w;
	size_t i;

	for (i = 0; i < v.len; i++) {
		if (v.ptr[i] == '\\' && i + 1 < v.len && (v.ptr[i + 1] == '"' || v.ptr[i + 1] == '\\'))
			i++;
		*w++ = v.ptr[i];
	}
	v.ptr = start;
	v.len = (size_t)(w - start);
	return v;
}

/* Content-Disposition: form-data; name="..."[; filename="..."] (RFC 7578 4.2). */
static enum multipart_err
parse_disposition(struct multipart_parser *p, struct span value, struct multipart_part *part)
{
	struct span rest = value, key, v;
	int quoted, r;

	if (!span_eq_nocase_cstr(take_token(&rest), "form-data"))
		return MP_MALFORMED;
	while ((r = param_next(&rest, &key, &v, &quoted)) == 1) {
		struct span *dst;

		if (span_eq_nocase_cstr(key, "name"))
			dst = &part->name;
		else if (span_eq_nocase_cstr(key, "filename"))
			dst = &part->filename;
		else
			continue;	/* filename* and extensions */
		if (dst->ptr != NULL)
			return MP_MALFORMED;	/* duplicates are ambiguous */
		*dst = quoted ? param_unquote(p, v) : v;
	}
	if (r < 0 || part->name.ptr == NULL)
		return MP_MALFORMED;
	return MP_OK;
}

/*
 * Parse the header block in p->hdr, which ends in CRLF CRLF (or is just the
 * CRLF of an empty block).  Folded lines (CRLF followed by whitespace,
 * RFC 5322 2.2.3) are unfolded in place; a bare CR or LF, a NUL or another
 * control character is malformed.  Headers other than Content-Disposition
 * and Content-Type are ignored (RFC 7578 4.8).
 */
static enum multipart_err
parse_headers(struct multipart_parser *p, struct multipart_part *part)
{
	char *h = p->hdr;
	size_t blen = p->hdr_len - 2, i, s, e;
	int seen_cd = 0;
	enum multipart_err err;

	memset(part, 0, sizeof *part);
	if (blen > 0 && is_wsp(h[0]))
		return MP_MALFORMED;
	for (i = 0; i + 2 < blen; i++)
		if (h[i] == '\r' && h[i + 1] == '\n' && is_wsp(h[i + 2]))
			h[i] = h[i + 1] = ' ';
	for (s = 0; s < blen; s = e + 2) {
		struct span name, value;
		size_t colon = 0;

		for (e = s; h[e] != '\r' || h[e + 1] != '\n'; e++) {
			unsigned char c = (unsigned char)h[e];

			if ((c < 0x20 && c != '\t') || c == 0x7f)
				return MP_MALFORMED;
			if (c == ':' && colon == 0)
				colon = e;
		}
		if (colon == 0 || colon == s)
			return MP_MALFORMED;
		name.ptr = h + s;
		name.len = colon - s;
		for (i = 0; i < name.len; i++)
			if ((unsigned char)name.ptr[i] <= 0x20 || (unsigned char)name.ptr[i] >= 0x7f)
				return MP_MALFORMED;
		value.ptr = h + colon + 1;
		value.len = e - colon - 1;
		trim_wsp(&value);
		if (span_eq_nocase_cstr(name, "Content-Disposition")) {
			if (seen_cd++)
				return MP_MALFORMED;
			if ((err = parse_disposition(p, value, part)) != MP_OK)
				return err;
		} else if (span_eq_nocase_cstr(name, "Content-Type")) {
			if (part->content_type.ptr != NULL)
				return MP_MALFORMED;
			part->content_type = value;
		}
	}
	return seen_cd ? MP_OK : MP_MALFORMED;
}

/* Append header bytes; *used is how many were taken, *done set at CRLFCRLF. */
static enum multipart_err
collect_headers(struct multipart_parser *p, const char *data, size_t len, size_t *used, int *done)
{
	size_t i;

	*done = 0;
	*used = len;
	for (i = 0; i < len; i++) {
		char *h = p->hdr;
		size_t n;

		if (p->hdr_len == p->lim.max_header_bytes)
			return MP_HEADER_TOO_LONG;
		h[p->hdr_len++] = data[i];
		n = p->hdr_len;
		if (data[i] == '\n' && n >= 2 && h[n - 2] == '\r' &&
		    (n == 2 || (n >= 4 && h[n - 3] == '\n' && h[n - 4] == '\r'))) {
			*used = i + 1;
			*done = 1;
			return MP_OK;
		}
	}
	return MP_OK;
}

enum multipart_err
multipart_feed(struct multipart_parser *p, const char *data, size_t len)
{
	struct multipart_part part;
	enum multipart_err e = MP_OK;
	size_t i = 0, n;
	int done;
	char c;

	if (p->err != MP_OK)
		return p->err;
	while (i < len && e == MP_OK) {
		switch (p->state) {
		case ST_PREAMBLE:
		case ST_DATA:
			e = scan_delimiter(p, data + i, len - i, p->state == ST_DATA, &n, &done);
			i += n;
			if (e != MP_OK || !done)
				break;
			if (p->state == ST_DATA && p->cb->part_end && p->cb->part_end(p->ctx))
				e = MP_ABORTED;
			p->state = ST_DELIM_TAIL;
			break;
		case ST_DELIM_TAIL:
		case ST_PADDING:
			c = data[i++];
			if (c == '\r')
				p->state = ST_DELIM_LF;
			else if (is_wsp(c))
				p->state = ST_PADDING;
			else if (c == '-' && p->state == ST_DELIM_TAIL)
				p->state = ST_CLOSE_DASH;
			else
				e = MP_MALFORMED;
			break;
		case ST_DELIM_LF:
			if (data[i++] != '\n') {
				e = MP_MALFORMED;
			} else if (p->parts >= p->lim.max_parts) {
				e = MP_TOO_MANY_PARTS;
			} else {
				p->parts++;
				p->hdr_len = 0;
				p->state = ST_HEADERS;
			}
			break;
		case ST_CLOSE_DASH:
			if (data[i++] == '-')
				p->state = ST_EPILOGUE;
			else
				e = MP_MALFORMED;
			break;
		case ST_HEADERS:
			e = collect_headers(p, data + i, len - i, &n, &done);
			i += n;
			if (e != MP_OK || !done)
				break;
			if ((e = parse_headers(p, &part)) != MP_OK)
				break;
			if (p->cb->part_begin && p->cb->part_begin(p->ctx, &part))
				e = MP_ABORTED;
			p->state = ST_DATA;
			p->match = 0;
			break;
		case ST_EPILOGUE:
			i = len;
			break;
		}
	}
	p->err = e;
	return e;
}

enum multipart_err
multipart_finish(struct multipart_parser *p)
{
	if (p->err == MP_OK && p->state != ST_EPILOGUE)
		p->err = MP_TRUNCATED;
	return p->err;
}
