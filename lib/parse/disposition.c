/* disposition.c - see disposition.h. */
#include <string.h>

#include "parse/disposition.h"

/* RFC 8187 section 3.2.1: attr-char. */
static int
is_attr_char(unsigned char c)
{
	if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
		return 1;
	return c != '\0' && strchr("!#$&+-.^_`|~", c) != NULL;
}

/* What the quoted fallback may carry as is: printable ASCII (RFC 9110 qdtext)
 * without the two characters a quoted-string must escape, and without '%',
 * which some user agents decode in filename= (RFC 6266 appendix D). */
static int
is_fallback_char(unsigned char c)
{
	return c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '%';
}

enum buf_err
disposition_attachment(struct span name, struct buf *out)
{
	static const char hex[] = "0123456789ABCDEF";
	enum buf_err e;
	size_t i;
	int in_multibyte = 0;

	if ((e = buf_append_cstr(out, "attachment; filename=\"")) != BUF_OK)
		return e;
	for (i = 0; i < name.len; i++) {
		unsigned char c = (unsigned char)name.ptr[i];

		/* One '_' per UTF-8 character: skip the continuation bytes. */
		if (c >= 0x80 && c <= 0xbf && in_multibyte)
			continue;
		in_multibyte = c >= 0x80;
		if ((e = buf_append(out, is_fallback_char(c) ? (const char *)&c : "_", 1)) != BUF_OK)
			return e;
	}
	if ((e = buf_append_cstr(out, "\"; filename*=UTF-8''")) != BUF_OK)
		return e;
	for (i = 0; i < name.len; i++) {
		unsigned char c = (unsigned char)name.ptr[i];
		char pct[3] = { '%', hex[c >> 4], hex[c & 15] };

		e = is_attr_char(c) ? buf_append(out, &c, 1) : buf_append(out, pct, 3);
		if (e != BUF_OK)
			return e;
	}
	return BUF_OK;
}

/* WHATWG MIME Sniffing, "JavaScript MIME type", and the document types. */
static const char *const active_types[] = {
	"application/ecmascript", "application/javascript", "application/x-ecmascript",
	"application/x-javascript", "text/ecmascript", "text/javascript", "text/javascript1.0",
	"text/javascript1.1", "text/javascript1.2", "text/javascript1.3", "text/javascript1.4",
	"text/javascript1.5", "text/jscript", "text/livescript", "text/x-ecmascript",
	"text/x-javascript", "text/html", "application/xhtml+xml", "text/xml", "application/xml",
	"text/xsl", "image/svg+xml",
};

int
content_type_is_active(struct span type)
{
	static const char xml_suffix[] = "+xml";
	size_t n = 0, i;

	/* A header value may list several types, and browsers take the last
	 * (Fetch, "extract a MIME type"): Chromium runs a <script src> served
	 * as "text/plain, text/javascript" under nosniff.  No single essence
	 * describes such a value, so none of it is served as it stands. */
	if (type.len > 0 && memchr(type.ptr, ',', type.len) != NULL)
		return 1;
	while (n < type.len && type.ptr[n] != ';')
		n++;
	while (n > 0 && (type.ptr[n - 1] == ' ' || type.ptr[n - 1] == '\t'))
		n--;
	while (n > 0 && (type.ptr[0] == ' ' || type.ptr[0] == '\t')) {
		type.ptr++;
		n--;
	}
	type.len = n;
	for (i = 0; i < ARRAY_LEN(active_types); i++)
		if (span_eq_nocase_cstr(type, active_types[i]))
			return 1;
	/* Any XML type (application/atom+xml, image/svg+xml, ...) may carry
	 * XHTML or an XSLT stylesheet that runs. */
	return n > sizeof xml_suffix - 1 &&
	       span_eq_nocase_cstr((struct span){ type.ptr + n - (sizeof xml_suffix - 1), sizeof xml_suffix - 1 },
				   xml_suffix);
}
