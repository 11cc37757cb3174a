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
