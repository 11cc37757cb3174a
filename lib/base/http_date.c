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

/* Days since 1970-01-01 of a Gregorian date: civil_from_days' inverse. */
static int64_t
days_from_civil(int64_t year, int month, int day)
{
	int64_t y = year - (month <= 2);
	int64_t era = y / 400;
	int64_t yoe = y - era * 400;
	int64_t mp = month > 2 ? month - 3 : month + 9;
	int64_t doy = (153 * mp + 2) / 5 + day - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;

	return era * 146097 + doe - 719468;
}

static const char day_names[7][4] = { "Thu", "Fri", "Sat", "Sun", "Mon",
    "Tue", "Wed" };	/* 1970-01-01 was a Thursday */
static const char month_names[12][4] = { "Jan", "Feb", "Mar", "Apr", "May",
    "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };

int
http_date_format(int64_t unix_seconds, char *out, size_t outlen)
{
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
	    day_names[day % 7], c.day, month_names[c.month - 1], (int)c.year,
	    (int)(sec / 3600), (int)(sec / 60 % 60), (int)(sec % 60));
	if (n != HTTP_DATE_LEN) {
		out[0] = '\0';
		return -1;
	}
	return 0;
}

/* The n digits at s as a number, or -1. */
static int64_t
digits(const char *s, size_t n)
{
	int64_t v = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

int
http_date_parse(const char *s, size_t len, int64_t *unix_seconds)
{
	/* "Sun, 06 Nov 1994 08:49:37 GMT": every field at a fixed place. */
	int64_t day, year, hh, mm, ss, days, t;
	int month = 0, i;

	if (len != HTTP_DATE_LEN || s[3] != ',' || s[4] != ' ' || s[7] != ' ' ||
	    s[11] != ' ' || s[16] != ' ' || s[19] != ':' || s[22] != ':' ||
	    s[25] != ' ' || s[26] != 'G' || s[27] != 'M' || s[28] != 'T')
		return -1;
	for (i = 0; i < 12; i++)
		if (s[8] == month_names[i][0] && s[9] == month_names[i][1] &&
		    s[10] == month_names[i][2])
			month = i + 1;
	day = digits(s + 5, 2);
	year = digits(s + 12, 4);
	hh = digits(s + 17, 2);
	mm = digits(s + 20, 2);
	ss = digits(s + 23, 2);
	if (month == 0 || day < 1 || day > 31 || year < 1970 || hh < 0 ||
	    hh > 23 || mm < 0 || mm > 59 || ss < 0 || ss > 59)
		return -1;
	days = days_from_civil(year, month, (int)day);
	/* 31 Feb and the like: the day count lands in another month. */
	if (civil_from_days(days).month != month)
		return -1;
	t = days * 86400 + hh * 3600 + mm * 60 + ss;
	if (s[0] != day_names[days % 7][0] || s[1] != day_names[days % 7][1] ||
	    s[2] != day_names[days % 7][2])
		return -1;
	*unix_seconds = t;
	return 0;
}
