/* Unit tests for http_date.c: RFC 7231's example, the range's ends, leap
 * days, and agreement with gmtime_r over four centuries; the parser reads
 * back every date the formatter writes and refuses the rest. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/http_date.h"
#include "tap.h"

static int
date_is(int64_t t, const char *want)
{
	char out[HTTP_DATE_SIZE];

	return http_date_format(t, out, sizeof out) == 0 && strcmp(out, want) == 0;
}

/* The same date through the C library, with the names in English. */
static void
libc_date(int64_t t, char out[64])
{
	static const char *days[] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };
	static const char *mons[] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
	    "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	snprintf(out, 64, "%s, %02d %s %04d %02d:%02d:%02d GMT", days[tm.tm_wday],
	    tm.tm_mday, mons[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min,
	    tm.tm_sec);
}

static void
test_sweep(void)
{
	char mine[HTTP_DATE_SIZE], libc[64];
	int64_t t, first_bad = -1;
	long checked = 0;

	/* Every 7 hours and 13 seconds from 1970 to 2400: each day of the
	 * week, month and leap rule at many times of day. */
	for (t = 0; t < INT64_C(13569465600); t += 7 * 3600 + 13) {
		libc_date(t, libc);
		if (http_date_format(t, mine, sizeof mine) != 0 ||
		    strcmp(mine, libc) != 0) {
			first_bad = t;
			break;
		}
		checked++;
	}
	tap_ok(first_bad == -1, "agrees with gmtime_r 1970-2400 (%ld times; first "
	    "difference at %lld, -1 for none)", checked, (long long)first_bad);
}

static int
parses_to(const char *s, int64_t want)
{
	int64_t got = -1;

	return http_date_parse(s, strlen(s), &got) == 0 && got == want;
}

static int
refused(const char *s)
{
	int64_t got = 12345;

	return http_date_parse(s, strlen(s), &got) == -1 && got == 12345;
}

static void
test_parse(void)
{
	char out[HTTP_DATE_SIZE];
	int64_t t, got, first_bad = -1;
	long checked = 0;

	for (t = 0; t < INT64_C(13569465600); t += 5 * 86400 + 3 * 3600 + 7) {
		if (http_date_format(t, out, sizeof out) != 0 ||
		    http_date_parse(out, HTTP_DATE_LEN, &got) != 0 || got != t) {
			first_bad = t;
			break;
		}
		checked++;
	}
	tap_ok(first_bad == -1, "parse reads back what format wrote 1970-2400 (%ld "
	    "times; first difference at %lld, -1 for none)", checked, (long long)first_bad);
	tap_ok(parses_to("Sun, 06 Nov 1994 08:49:37 GMT", 784111777), "parse: RFC 7231's example");
	tap_ok(parses_to("Tue, 29 Feb 2000 12:00:00 GMT", 951825600), "parse: a leap day");
	tap_ok(refused("Mon, 06 Nov 1994 08:49:37 GMT"), "parse: a day name that is not the date's is refused");
	tap_ok(refused("Thu, 29 Feb 2001 12:00:00 GMT"), "parse: 29 February of a common year is refused");
	tap_ok(refused("Sunday, 06-Nov-94 08:49:37 GMT"), "parse: RFC 850's form is refused");
	tap_ok(refused("Sun Nov  6 08:49:37 1994"), "parse: asctime's form is refused");
	tap_ok(refused("Sun, 06 Nov 1994 24:00:00 GMT"), "parse: hour 24 is refused");
	tap_ok(refused("Sun, 06 Nox 1994 08:49:37 GMT"), "parse: an unknown month is refused");
	tap_ok(refused("Sun, 06 Nov 1994 08:49:37 UTC"), "parse: a zone other than GMT is refused");
	tap_ok(refused("Sun, 06 Nov 1994 08:49:37 GMT "), "parse: a trailing space is refused");
	tap_ok(refused(""), "parse: nothing is refused");
}

int
main(void)
{
	char out[HTTP_DATE_SIZE];

	tap_ok(date_is(784111777, "Sun, 06 Nov 1994 08:49:37 GMT"),
	    "RFC 7231's example");
	tap_ok(date_is(0, "Thu, 01 Jan 1970 00:00:00 GMT"), "the epoch");
	tap_ok(date_is(HTTP_DATE_MAX, "Fri, 31 Dec 9999 23:59:59 GMT"),
	    "the last four-digit year");
	tap_ok(date_is(951825600, "Tue, 29 Feb 2000 12:00:00 GMT"),
	    "2000 is a leap year");
	tap_ok(date_is(4107542400, "Mon, 01 Mar 2100 00:00:00 GMT"),
	    "2100 is not");
	tap_ok(http_date_format(-1, out, sizeof out) == -1 && out[0] == '\0',
	    "before 1970 refused");
	tap_ok(http_date_format(HTTP_DATE_MAX + 1, out, sizeof out) == -1 &&
	    out[0] == '\0', "year 10000 refused");
	tap_ok(http_date_format(0, out, HTTP_DATE_SIZE - 1) == -1 && out[0] == '\0',
	    "a buffer one byte short refused");
	test_sweep();
	test_parse();
	return tap_done();
}
