/*
 * http_date.h - the HTTP date format, RFC 7231 section 7.1.1.1
 * IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT".
 *
 * Computed from the count of seconds alone (proleptic Gregorian calendar,
 * no leap seconds), with English day and month names written out here: no
 * locale, no time zone, no gmtime.  Azure's x-ms-date and tus's
 * Upload-Expires both use it.
 */
#ifndef BINDERY_HTTP_DATE_H
#define BINDERY_HTTP_DATE_H

#include <stddef.h>
#include <stdint.h>

#include "base/compat.h"

/* Characters in an IMF-fixdate, and the buffer that holds one with its NUL. */
#define HTTP_DATE_LEN	29
#define HTTP_DATE_SIZE	(HTTP_DATE_LEN + 1)
/* The last second with a four-digit year: 9999-12-31T23:59:59Z. */
#define HTTP_DATE_MAX	INT64_C(253402300799)

/* Write the IMF-fixdate of unix_seconds (UTC) and a NUL to out[outlen].
 * Returns 0, or -1 (out then holds "" when outlen > 0) when unix_seconds is
 * outside 0..HTTP_DATE_MAX or outlen < HTTP_DATE_SIZE. */
BINDERY_NODISCARD int http_date_format(int64_t unix_seconds, char *out,
    size_t outlen);

/* Read an IMF-fixdate (exactly what http_date_format writes: storage's
 * Last-Modified) of len bytes into *unix_seconds.  Returns 0, or -1 for
 * anything else (the obsolete RFC 850 and asctime forms included), a
 * day name that does not match the date, or a date out of range. */
BINDERY_NODISCARD int http_date_parse(const char *s, size_t len,
    int64_t *unix_seconds);

#endif
