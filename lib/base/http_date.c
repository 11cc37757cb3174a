/* http_date.c - see http_date.h. */
#include <stdio.h>

#include "base/http_date.h"

struct civil {
	int64_t year;
	int month;	/* 1..12 */
	int day;	/* 1..31 */
};

/*
 * The Gregorian date of a day count since 1970-01-01 (days >= 0).  Counts
 * in 400-year eras of 146097 days, with years starting on 1 March so that
 * the leap day is the last day of a year; then maps back to January-based
 * months.
 */
static struct civil
civil_from_days(int64_t days)
{
	int64_t z = days + 719468;	/* days since 0000-03-01 */
	int64_t era = z / 146097;
	int64_t doe = z - era * 146097;	/* day of era, 0..146096 */
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);	/* from 1 March */
	int64_t mp = (5 * doy + 2) / 153;	/* month from March, 0..11 */
	struct civil c;

	c.day = (int)(doy - (153 * mp + 2) / 5 + 1);
	c.month = (int)(mp < 10 ? mp + 3 : mp - 9);
	c.year = yoe + era * 400 + (c.month <= 2);
	return c;
}

int
http_date_format(int64_t unix_seconds, char *out, size_t outlen)
{
	static const char days[7][4] = { "Thu", "Fri", "Sat", "Sun", "Mon",
	    "Tue", "Wed" };	/* 1970-01-01 was a Thursday */
	static const char months[12][4] = { "Jan", "Feb", "Mar", "Apr", "May",
	    "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
	int64_t day, sec;
	struct civil c;
	int n;

	if (outlen > 0)
		out[0] = '\0';
	if (unix_seconds < 0 || unix_seconds > HTTP_DATE_MAX ||
	    outlen < HTTP_DATE_SIZE)
		return -1;
	day = unix_seconds / 86400;
	sec = unix_seconds % 86400;
	c = civil_from_days(day);
	n = snprintf(out, outlen, "%s, %02d %s %04d %02d:%02d:%02d GMT",
	    days[day % 7], c.day, months[c.month - 1], (int)c.year,
	    (int)(sec / 3600), (int)(sec / 60 % 60), (int)(sec % 60));
	if (n != HTTP_DATE_LEN) {
		out[0] = '\0';
		return -1;
	}
	return 0;
}
