/* Unit tests for http_parse.c: a table per function, hostile inputs included. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "parse/http_parse.h"
#include "tap.h"

/* Spans with explicit lengths, so tables can hold NULs. */
#define S(lit) { (lit), sizeof(lit) - 1 }

static void
test_percent_decode(void)
{
	static const struct {
		struct span in;
		enum http_decode_err want;
		struct span out;
	} cases[] = {
		{ S(""), HTTP_DECODE_OK, S("") },
		{ S("plain"), HTTP_DECODE_OK, S("plain") },
		{ S("a%20b"), HTTP_DECODE_OK, S("a b") },
		{ S("a+b"), HTTP_DECODE_OK, S("a+b") },
		{ S("%2F%2f%41"), HTTP_DECODE_OK, S("//A") },
		{ S("%00x"), HTTP_DECODE_OK, S("\0x") },
		{ S("%C3%A9"), HTTP_DECODE_OK, S("\xc3\xa9") },
		{ S("%ff%FF"), HTTP_DECODE_OK, S("\xff\xff") },
		{ S("%"), HTTP_DECODE_MALFORMED, S("") },
		{ S("%4"), HTTP_DECODE_MALFORMED, S("") },
		{ S("abc%"), HTTP_DECODE_MALFORMED, S("") },
		{ S("%g0"), HTTP_DECODE_MALFORMED, S("") },
		{ S("%0g"), HTTP_DECODE_MALFORMED, S("") },
		{ S("%%41"), HTTP_DECODE_MALFORMED, S("") },
		{ S("%+1"), HTTP_DECODE_MALFORMED, S("") },
	};
	struct buf b = BUF_INIT(64), small = BUF_INIT(3);
	enum http_decode_err e;
	size_t i;

	for (i = 0; i < ARRAY_LEN(cases); i++) {
		buf_reset(&b);
		e = http_percent_decode(cases[i].in, &b);
		tap_ok(e == cases[i].want && (e != HTTP_DECODE_OK || span_eq(buf_span(&b), cases[i].out)),
		    "percent_decode case %zu (\"%.*s\")", i, (int)cases[i].in.len, cases[i].in.ptr);
	}
	buf_reset(&b);
	tap_ok(http_percent_decode(SPAN_LIT("x"), &b) == HTTP_DECODE_OK &&
	    http_percent_decode(SPAN_LIT("%79"), &b) == HTTP_DECODE_OK &&
	    span_eq_cstr(buf_span(&b), "xy"), "percent_decode appends");
	tap_ok(http_percent_decode(SPAN_LIT("abc"), &small) == HTTP_DECODE_OK,
	    "decode up to the cap");
	buf_reset(&small);
	tap_ok(http_percent_decode(SPAN_LIT("ab%63d"), &small) == HTTP_DECODE_TOO_LONG,
	    "decode past the cap is TOO_LONG");
	buf_free(&b);
	buf_free(&small);
}

static void
test_query_get(void)
{
	static const struct {
		const char *query, *key;
		enum http_query_result want;
		struct span value;
	} cases[] = {
		{ "name=a.txt", "name", HTTP_QUERY_FOUND, S("a.txt") },
		{ "limit=10&after=5", "after", HTTP_QUERY_FOUND, S("5") },
		{ "limit=10&after=5", "limit", HTTP_QUERY_FOUND, S("10") },
		{ "limit=10&after=5", "name", HTTP_QUERY_NOT_FOUND, S("") },
		{ "", "name", HTTP_QUERY_NOT_FOUND, S("") },
		{ "name=my+report%20v2.txt", "name", HTTP_QUERY_FOUND, S("my report v2.txt") },
		{ "name=a%2Bb", "name", HTTP_QUERY_FOUND, S("a+b") },
		{ "name=", "name", HTTP_QUERY_FOUND, S("") },
		{ "name", "name", HTTP_QUERY_FOUND, S("") },
		{ "&&name=x&&", "name", HTTP_QUERY_FOUND, S("x") },
		{ "na%6De=x", "name", HTTP_QUERY_FOUND, S("x") },
		{ "my+key=v", "my key", HTTP_QUERY_FOUND, S("v") },
		{ "name=a=b", "name", HTTP_QUERY_FOUND, S("a=b") },
		{ "names=x", "name", HTTP_QUERY_NOT_FOUND, S("") },
		{ "nam=x", "name", HTTP_QUERY_NOT_FOUND, S("") },
		{ "NAME=x", "name", HTTP_QUERY_NOT_FOUND, S("") },
		{ "name=%00", "name", HTTP_QUERY_FOUND, S("\0") },
		{ "name=..%2F..%2Fetc", "name", HTTP_QUERY_FOUND, S("../../etc") },
		{ "name=a&name=b", "name", HTTP_QUERY_MALFORMED, S("") },
		{ "name=a&na%6De=b", "name", HTTP_QUERY_MALFORMED, S("") },
		{ "name=%zz", "name", HTTP_QUERY_MALFORMED, S("") },
		{ "other=%4&name=x", "name", HTTP_QUERY_MALFORMED, S("") },
		{ "name=x%", "name", HTTP_QUERY_MALFORMED, S("") },
	};
	struct buf b = BUF_INIT(64), small = BUF_INIT(2);
	enum http_query_result r;
	size_t i;

	for (i = 0; i < ARRAY_LEN(cases); i++) {
		r = http_query_get(span_from_cstr(cases[i].query), cases[i].key, &b);
		tap_ok(r == cases[i].want && span_eq(buf_span(&b), cases[i].value),
		    "query_get(\"%s\", \"%s\") = %d", cases[i].query, cases[i].key, (int)r);
	}
	tap_ok(http_query_get(SPAN_LIT("name=abc"), "name", &small) == HTTP_QUERY_TOO_LONG &&
	    small.len == 0, "value past the cap is TOO_LONG and leaves out empty");
	tap_ok(http_query_get(SPAN_LIT("name=ab"), "name", &small) == HTTP_QUERY_FOUND,
	    "value at the cap fits");
	tap_ok(http_query_get(SPAN_LIT("x=1"), "name", &small) == HTTP_QUERY_NOT_FOUND &&
	    small.len == 0, "NOT_FOUND resets out");
	buf_free(&b);
	buf_free(&small);
}

static void
test_document_name(void)
{
	static const struct {
		struct span name;
		enum document_name_err want;
	} cases[] = {
		{ S("report.txt"), DOCNAME_OK },
		{ S("a"), DOCNAME_OK },
		{ S(" a.txt "), DOCNAME_OK },
		{ S("...") , DOCNAME_OK },
		{ S(".hidden"), DOCNAME_OK },
		{ S("r\xc3\xa9sum\xc3\xa9.pdf"), DOCNAME_OK },
		{ S("\xe2\x82\xac \xf0\x9f\x98\x80"), DOCNAME_OK },	/* U+20AC U+1F600 */
		{ S("\xc2\xa0"), DOCNAME_OK },			/* U+00A0, first after C1 */
		{ S("\xef\xbf\xbd"), DOCNAME_OK },		/* U+FFFD */
		{ S("\xf4\x8f\xbf\xbf"), DOCNAME_OK },		/* U+10FFFF */
		{ S("\xed\x9f\xbf"), DOCNAME_OK },		/* U+D7FF */
		{ S("\xee\x80\x80"), DOCNAME_OK },		/* U+E000 */
		{ S(""), DOCNAME_EMPTY },
		{ S("."), DOCNAME_DOT_NAME },
		{ S(".."), DOCNAME_DOT_NAME },
		{ S("../etc/passwd"), DOCNAME_SLASH },
		{ S("a/b"), DOCNAME_SLASH },
		{ S("/"), DOCNAME_SLASH },
		{ S("a\\b"), DOCNAME_SLASH },
		{ S("..\\x"), DOCNAME_SLASH },
		{ S("a\0b"), DOCNAME_CONTROL_CHAR },
		{ S("\0"), DOCNAME_CONTROL_CHAR },
		{ S("a\nb"), DOCNAME_CONTROL_CHAR },
		{ S("a\rb"), DOCNAME_CONTROL_CHAR },
		{ S("tab\t"), DOCNAME_CONTROL_CHAR },
		{ S("\x1b[31m"), DOCNAME_CONTROL_CHAR },
		{ S("del\x7f"), DOCNAME_CONTROL_CHAR },
		{ S("\xc2\x80"), DOCNAME_CONTROL_CHAR },	/* U+0080 */
		{ S("\xc2\x85"), DOCNAME_CONTROL_CHAR },	/* U+0085 NEL */
		{ S("\xc2\x9f"), DOCNAME_CONTROL_CHAR },	/* U+009F */
		{ S("\xc0\xaf"), DOCNAME_BAD_UTF8 },		/* overlong '/' */
		{ S("..\xc0\xaf"), DOCNAME_BAD_UTF8 },
		{ S("\xc1\xbf"), DOCNAME_BAD_UTF8 },		/* overlong */
		{ S("\xe0\x80\xaf"), DOCNAME_BAD_UTF8 },	/* overlong 3-byte '/' */
		{ S("\xe0\x9f\xbf"), DOCNAME_BAD_UTF8 },	/* overlong U+07FF */
		{ S("\xf0\x80\x80\xaf"), DOCNAME_BAD_UTF8 },	/* overlong 4-byte '/' */
		{ S("\xf0\x8f\xbf\xbf"), DOCNAME_BAD_UTF8 },	/* overlong U+FFFF */
		{ S("\xed\xa0\x80"), DOCNAME_BAD_UTF8 },	/* lone surrogate U+D800 */
		{ S("\xed\xbf\xbf"), DOCNAME_BAD_UTF8 },	/* U+DFFF */
		{ S("\xed\xa0\xbd\xed\xb8\x80"), DOCNAME_BAD_UTF8 },	/* CESU-8 pair */
		{ S("\xf4\x90\x80\x80"), DOCNAME_BAD_UTF8 },	/* U+110000 */
		{ S("\xf5\x80\x80\x80"), DOCNAME_BAD_UTF8 },
		{ S("\xff"), DOCNAME_BAD_UTF8 },
		{ S("\xfe\xff"), DOCNAME_BAD_UTF8 },
		{ S("\x80"), DOCNAME_BAD_UTF8 },		/* lone continuation */
		{ S("a\xc3"), DOCNAME_BAD_UTF8 },		/* truncated */
		{ S("\xe2\x82"), DOCNAME_BAD_UTF8 },
		{ S("\xf0\x9f\x98"), DOCNAME_BAD_UTF8 },
		{ S("\xe2\x28\xa1"), DOCNAME_BAD_UTF8 },	/* bad continuation */
		{ S("\xc3\xa9\xa9"), DOCNAME_BAD_UTF8 },	/* extra continuation */
	};
	char big[10240];
	size_t i;

	for (i = 0; i < ARRAY_LEN(cases); i++)
		tap_ok(document_name_check(cases[i].name) == cases[i].want,
		    "document_name_check case %zu is %s", i,
		    document_name_err_string(cases[i].want));
	memset(big, 'a', sizeof big);
	tap_ok(document_name_check((struct span){ big, 255 }) == DOCNAME_OK, "255 bytes is OK");
	tap_ok(document_name_check((struct span){ big, 256 }) == DOCNAME_TOO_LONG, "256 bytes is TOO_LONG");
	tap_ok(document_name_check((struct span){ big, sizeof big }) == DOCNAME_TOO_LONG,
	    "10 KiB is TOO_LONG");
	/* 85 three-byte characters = 255 bytes; one more byte is too long. */
	for (i = 0; i + 3 <= 255; i += 3)
		memcpy(big + i, "\xe2\x82\xac", 3);
	tap_ok(document_name_check((struct span){ big, 255 }) == DOCNAME_OK,
	    "255 bytes of multibyte UTF-8 is OK");
	tap_ok(document_name_check((struct span){ big, 254 }) == DOCNAME_BAD_UTF8,
	    "cut inside a character is BAD_UTF8");
	for (i = DOCNAME_OK; i <= DOCNAME_DOT_NAME; i++)
		tap_ok(document_name_err_string((enum document_name_err)i)[0] != '\0',
		    "message for %zu: %s", i, document_name_err_string((enum document_name_err)i));
	tap_ok(document_name_err_string((enum document_name_err)99) != NULL, "unknown code has a message");
}

static void
test_range(void)
{
	static const struct {
		const char *h;
		uint64_t size;
		enum http_range_result want;
		uint64_t start, len;
	} cases[] = {
		{ "bytes=0-99", 1000, HTTP_RANGE_OK, 0, 100 },
		{ "bytes=100-199", 1000, HTTP_RANGE_OK, 100, 100 },
		{ "bytes=999-999", 1000, HTTP_RANGE_OK, 999, 1 },
		{ "bytes=500-", 1000, HTTP_RANGE_OK, 500, 500 },
		{ "bytes=0-", 1000, HTTP_RANGE_OK, 0, 1000 },
		{ "bytes=-100", 1000, HTTP_RANGE_OK, 900, 100 },
		{ "bytes=-1000", 1000, HTTP_RANGE_OK, 0, 1000 },
		{ "bytes=-5000", 1000, HTTP_RANGE_OK, 0, 1000 },
		{ "bytes=900-5000", 1000, HTTP_RANGE_OK, 900, 100 },
		{ "bytes=0-99999999999999999999999", 1000, HTTP_RANGE_OK, 0, 1000 },
		{ "bytes=-99999999999999999999999", 1000, HTTP_RANGE_OK, 0, 1000 },
		{ "BYTES=0-0", 1000, HTTP_RANGE_OK, 0, 1 },
		{ "  bytes= 1-2 ", 1000, HTTP_RANGE_OK, 1, 2 },
		{ "bytes=0-18446744073709551615", UINT64_MAX, HTTP_RANGE_OK, 0, UINT64_MAX },
		{ "bytes=1000-", 1000, HTTP_RANGE_UNSATISFIABLE, 0, 0 },
		{ "bytes=1000-2000", 1000, HTTP_RANGE_UNSATISFIABLE, 0, 0 },
		{ "bytes=99999999999999999999999-", 1000, HTTP_RANGE_UNSATISFIABLE, 0, 0 },
		{ "bytes=-0", 1000, HTTP_RANGE_UNSATISFIABLE, 0, 0 },
		{ "bytes=0-", 0, HTTP_RANGE_UNSATISFIABLE, 0, 0 },
		{ "bytes=-5", 0, HTTP_RANGE_UNSATISFIABLE, 0, 0 },
		{ "bytes=5-4", 1000, HTTP_RANGE_IGNORE, 0, 0 },
		{ "bytes=0-1,5-6", 1000, HTTP_RANGE_IGNORE, 0, 0 },
		{ "bytes=0-1,", 1000, HTTP_RANGE_IGNORE, 0, 0 },
		{ "bytes=", 1000, HTTP_RANGE_IGNORE, 0, 0 },
		{ "bytes=-", 1000, HTTP_RANGE_IGNORE, 0, 0 },
		{ "bytes=a-b", 1000, HTTP_RANGE_IGNORE, 0, 0 },
		{ "bytes=1", 1000, HTTP_RANGE_IGNORE, 0, 0 },
		{ "bytes=+1-2", 1000, HTTP_RANGE_IGNORE, 0, 0 },
		{ "bytes=1-2x", 1000, HTTP_RANGE_IGNORE, 0, 0 },
		{ "bytes=1 -2", 1000, HTTP_RANGE_IGNORE, 0, 0 },
		{ "bytes=--1", 1000, HTTP_RANGE_IGNORE, 0, 0 },
		{ "bytes 0-1", 1000, HTTP_RANGE_IGNORE, 0, 0 },
		{ "items=0-1", 1000, HTTP_RANGE_IGNORE, 0, 0 },
		{ "", 1000, HTTP_RANGE_IGNORE, 0, 0 },
	};
	uint64_t start, len;
	enum http_range_result r;
	size_t i;

	for (i = 0; i < ARRAY_LEN(cases); i++) {
		r = http_parse_range(span_from_cstr(cases[i].h), cases[i].size, &start, &len);
		tap_ok(r == cases[i].want && (r != HTTP_RANGE_OK ||
		    (start == cases[i].start && len == cases[i].len)),
		    "range \"%s\" of %llu -> %d %llu+%llu", cases[i].h,
		    (unsigned long long)cases[i].size, (int)r, (unsigned long long)start,
		    (unsigned long long)len);
	}
}

static void
test_uint(void)
{
	static const struct {
		const char *s;
		uint64_t max;
		enum http_uint_err want;
		uint64_t v;
	} cases[] = {
		{ "0", UINT64_MAX, HTTP_UINT_OK, 0 },
		{ "42", UINT64_MAX, HTTP_UINT_OK, 42 },
		{ "007", UINT64_MAX, HTTP_UINT_OK, 7 },
		{ "18446744073709551615", UINT64_MAX, HTTP_UINT_OK, UINT64_MAX },
		{ "18446744073709551616", UINT64_MAX, HTTP_UINT_TOO_BIG, 0 },
		{ "99999999999999999999999999", UINT64_MAX, HTTP_UINT_TOO_BIG, 0 },
		{ "100", 100, HTTP_UINT_OK, 100 },
		{ "101", 100, HTTP_UINT_TOO_BIG, 0 },
		{ "1000", 100, HTTP_UINT_TOO_BIG, 0 },
		{ "9", 5, HTTP_UINT_TOO_BIG, 0 },
		{ "0", 0, HTTP_UINT_OK, 0 },
		{ "1", 0, HTTP_UINT_TOO_BIG, 0 },
		{ "", UINT64_MAX, HTTP_UINT_INVALID, 0 },
		{ "-1", UINT64_MAX, HTTP_UINT_INVALID, 0 },
		{ "+1", UINT64_MAX, HTTP_UINT_INVALID, 0 },
		{ " 1", UINT64_MAX, HTTP_UINT_INVALID, 0 },
		{ "1 ", UINT64_MAX, HTTP_UINT_INVALID, 0 },
		{ "0x10", UINT64_MAX, HTTP_UINT_INVALID, 0 },
		{ "1e3", UINT64_MAX, HTTP_UINT_INVALID, 0 },
		{ "1.0", UINT64_MAX, HTTP_UINT_INVALID, 0 },
		{ "\xd9\xa1", UINT64_MAX, HTTP_UINT_INVALID, 0 },	/* Arabic-Indic one */
	};
	uint64_t v;
	enum http_uint_err r;
	size_t i;

	for (i = 0; i < ARRAY_LEN(cases); i++) {
		r = http_parse_uint(span_from_cstr(cases[i].s), cases[i].max, &v);
		tap_ok(r == cases[i].want && v == cases[i].v, "parse_uint(\"%s\", max %llu)",
		    cases[i].s, (unsigned long long)cases[i].max);
	}
	r = http_parse_uint((struct span){ "12\0" "3", 4 }, UINT64_MAX, &v);
	tap_ok(r == HTTP_UINT_INVALID, "parse_uint refuses an embedded NUL");
}

static void
test_etag(void)
{
	static const struct {
		const char *h;
		enum http_etag_result want;
	} cases[] = {
		{ "\"v1\"", HTTP_ETAG_MATCH },
		{ "*", HTTP_ETAG_MATCH },
		{ " * ", HTTP_ETAG_MATCH },
		{ "\"v0\", \"v1\"", HTTP_ETAG_MATCH },
		{ "\"v0\",\"v1\",\"v2\"", HTTP_ETAG_MATCH },
		{ " , \"v1\" ,, ", HTTP_ETAG_MATCH },
		{ "\"v2\"", HTTP_ETAG_NO_MATCH },
		{ "W/\"v1\"", HTTP_ETAG_NO_MATCH },
		{ "\"V1\"", HTTP_ETAG_NO_MATCH },
		{ "\"v1 \"", HTTP_ETAG_MALFORMED },
		{ "\"\"", HTTP_ETAG_NO_MATCH },
		{ "v1", HTTP_ETAG_MALFORMED },
		{ "\"v1", HTTP_ETAG_MALFORMED },
		{ "\"v1\" \"v2\"", HTTP_ETAG_MALFORMED },
		{ "\"v1\"x", HTTP_ETAG_MALFORMED },
		{ "\"v1\", *", HTTP_ETAG_MALFORMED },
		{ "w/\"v1\"", HTTP_ETAG_MALFORMED },
		{ "", HTTP_ETAG_MALFORMED },
		{ ",,", HTTP_ETAG_MALFORMED },
		{ "\"v\x01\"", HTTP_ETAG_MALFORMED },
	};
	size_t i;

	for (i = 0; i < ARRAY_LEN(cases); i++)
		tap_ok(http_etag_match(span_from_cstr(cases[i].h), SPAN_LIT("\"v1\"")) ==
		    cases[i].want, "If-Match: %s -> %d", cases[i].h, (int)cases[i].want);
	tap_ok(http_etag_match(SPAN_LIT("\"\xc3\xa9\""), SPAN_LIT("\"\xc3\xa9\"")) ==
	    HTTP_ETAG_MATCH, "obs-text in an etag");
	tap_ok(http_etag_none_match(SPAN_LIT("W/\"v1\""), SPAN_LIT("\"v1\"")) == HTTP_ETAG_MATCH &&
	    http_etag_none_match(SPAN_LIT("\"v1\""), SPAN_LIT("W/\"v1\"")) == HTTP_ETAG_MATCH &&
	    http_etag_none_match(SPAN_LIT("\"v0\", W/\"v1\""), SPAN_LIT("\"v1\"")) == HTTP_ETAG_MATCH &&
	    http_etag_none_match(SPAN_LIT("*"), SPAN_LIT("\"v1\"")) == HTTP_ETAG_MATCH,
	    "If-None-Match compares weakly: W/\"v1\" and \"v1\" match either way round, * matches");
	tap_ok(http_etag_none_match(SPAN_LIT("W/\"v2\", \"V1\""), SPAN_LIT("\"v1\"")) == HTTP_ETAG_NO_MATCH &&
	    http_etag_none_match(SPAN_LIT("\"v1"), SPAN_LIT("\"v1\"")) == HTTP_ETAG_MALFORMED &&
	    http_etag_none_match(SPAN_LIT("w/\"v1\""), SPAN_LIT("\"v1\"")) == HTTP_ETAG_MALFORMED,
	    "If-None-Match: another tag does not match, a malformed list is MALFORMED");
	tap_ok(http_if_match_any(SPAN_LIT("*")) && http_if_match_any(SPAN_LIT(" *\t")),
	    "If-Match: * is the any-version form");
	tap_ok(!http_if_match_any(SPAN_LIT("\"*\"")) && !http_if_match_any(SPAN_LIT("\"v1\", *")) &&
	    !http_if_match_any(SPAN_LIT("**")) && !http_if_match_any(SPAN_LIT("")),
	    "a quoted \"*\", a list holding *, ** and an empty field are not");
}

static void
test_bearer(void)
{
	static const struct {
		const char *h;
		enum http_auth_result want;
		const char *token;
	} cases[] = {
		{ "Bearer abc123", HTTP_AUTH_OK, "abc123" },
		{ "bearer abc", HTTP_AUTH_OK, "abc" },
		{ "BEARER abc", HTTP_AUTH_OK, "abc" },
		{ "Bearer   a-b.c_d~e+f/g==", HTTP_AUTH_OK, "a-b.c_d~e+f/g==" },
		{ " Bearer abc ", HTTP_AUTH_OK, "abc" },
		{ "", HTTP_AUTH_ABSENT, NULL },
		{ "   ", HTTP_AUTH_ABSENT, NULL },
		{ "Bearer", HTTP_AUTH_INVALID, NULL },
		{ "Bearer ", HTTP_AUTH_INVALID, NULL },
		{ "Bearer =abc", HTTP_AUTH_INVALID, NULL },
		{ "Bearer abc def", HTTP_AUTH_INVALID, NULL },
		{ "Bearer ab=c", HTTP_AUTH_INVALID, NULL },
		{ "Bearer\tabc", HTTP_AUTH_INVALID, NULL },
		{ "Bearerabc", HTTP_AUTH_INVALID, NULL },
		{ "Basic dXNlcjpwYXNz", HTTP_AUTH_INVALID, NULL },
		{ "Bearer a\"b", HTTP_AUTH_INVALID, NULL },
		{ "Bearer a,b", HTTP_AUTH_INVALID, NULL },
	};
	struct span tok;
	enum http_auth_result r;
	size_t i;

	for (i = 0; i < ARRAY_LEN(cases); i++) {
		r = http_bearer_token(span_from_cstr(cases[i].h), &tok);
		tap_ok(r == cases[i].want && (cases[i].token ? span_eq_cstr(tok, cases[i].token) :
		    tok.ptr == NULL), "Authorization: \"%s\" -> %d", cases[i].h, (int)r);
	}
	r = http_bearer_token((struct span){ "Bearer a\0b", 10 }, &tok);
	tap_ok(r == HTTP_AUTH_INVALID, "NUL in a token");
}

static void
test_path_split(void)
{
	static const struct {
		const char *path;
		int ok;
		size_t nseg;
	} cases[] = {
		{ "/", 1, 0 },
		{ "/documents", 1, 1 },
		{ "/documents/7/content", 1, 3 },
		{ "/a/b/c/d", 1, 4 },
		{ "/a/b/c/d/e", 0, 0 },
		{ "", 0, 0 },
		{ "documents", 0, 0 },
		{ "//", 0, 0 },
		{ "/documents/", 0, 0 },
		{ "/documents//1", 0, 0 },
		{ "/./documents", 0, 0 },
		{ "/documents/..", 0, 0 },
		{ "/x/../documents", 0, 0 },
		{ "/...", 1, 1 },
	};
	struct http_path p;
	size_t i;
	uint64_t id;

	for (i = 0; i < ARRAY_LEN(cases); i++) {
		int rc = http_path_split(span_from_cstr(cases[i].path), &p);

		tap_ok((rc == 0) == cases[i].ok && p.nseg == cases[i].nseg, "split \"%s\": %s, %zu segments",
		    cases[i].path, rc == 0 ? "ok" : "refused", p.nseg);
	}
	tap_ok(http_path_split(SPAN_LIT("/documents/7/content"), &p) == 0 &&
	    span_eq_cstr(p.seg[0], "documents") && span_eq_cstr(p.seg[1], "7") &&
	    span_eq_cstr(p.seg[2], "content"), "segments point into the path");
	tap_ok(http_path_split((struct span){ "/documents/1\0", 13 }, &p) != 0, "NUL in a path");
	tap_ok(http_parse_id(SPAN_LIT("18446744073709551615"), &id) && id == UINT64_MAX, "id UINT64_MAX");
	tap_ok(!http_parse_id(SPAN_LIT("0"), &id) && !http_parse_id(SPAN_LIT("07"), &id) &&
	    !http_parse_id(SPAN_LIT("+7"), &id) && !http_parse_id(SPAN_NULL, &id) &&
	    !http_parse_id(SPAN_LIT("18446744073709551616"), &id), "ids: no zero, sign, leading zero, overflow");
}

/*
 * The mount prefix (SCRIPT_NAME) against the request path: what each web
 * server passes (Apache Alias/ScriptAlias "/bindery", lighttpd's "/docs"
 * prefix with check-local disabled, a root mount's "" or "/"), and the
 * SCRIPT_NAMEs that must not reach a URL or the page.
 */
static void
test_mount_split(void)
{
	static const struct {
		const char *script, *path;
		enum http_mount_result res;
		const char *prefix, *rest;
	} cases[] = {
		{ "", "/documents/7", HTTP_MOUNT_ROOT, "", "/documents/7" },
		{ "/", "/documents/7", HTTP_MOUNT_ROOT, "", "/documents/7" },
		{ "", "", HTTP_MOUNT_ROOT, "", "/" },
		{ "/bindery", "/bindery/documents/7", HTTP_MOUNT_PREFIX, "/bindery", "/documents/7" },
		{ "/bindery", "/bindery", HTTP_MOUNT_PREFIX, "/bindery", "/" },
		{ "/bindery", "/bindery/", HTTP_MOUNT_PREFIX, "/bindery", "/" },
		{ "/a/b-c_d.e~f", "/a/b-c_d.e~f/uploads", HTTP_MOUNT_PREFIX, "/a/b-c_d.e~f", "/uploads" },
		/* a segment boundary, not a string prefix */
		{ "/bindery", "/binderyx/documents", HTTP_MOUNT_OUTSIDE, "", "/binderyx/documents" },
		{ "/bindery", "/documents", HTTP_MOUNT_OUTSIDE, "", "/documents" },
		{ "/bindery", "/%62indery/documents", HTTP_MOUNT_OUTSIDE, "", "/%62indery/documents" },
		{ "/Bindery", "/bindery/documents", HTTP_MOUNT_OUTSIDE, "", "/bindery/documents" },
		{ "/bindery", "", HTTP_MOUNT_OUTSIDE, "", "/" },
		/* not a safe path: never stripped, never in a URL */
		{ "/bindery/", "/bindery/documents", HTTP_MOUNT_BAD, "", "/bindery/documents" },
		{ "bindery", "bindery/documents", HTTP_MOUNT_BAD, "", "bindery/documents" },
		{ "/a//b", "/a//b/documents", HTTP_MOUNT_BAD, "", "/a//b/documents" },
		{ "/a/../b", "/a/../b/documents", HTTP_MOUNT_BAD, "", "/a/../b/documents" },
		{ "/..", "/../documents", HTTP_MOUNT_BAD, "", "/../documents" },
		{ "/a/.", "/a/./documents", HTTP_MOUNT_BAD, "", "/a/./documents" },
		{ "/my docs", "/my docs/documents", HTTP_MOUNT_BAD, "", "/my docs/documents" },
		{ "/a\"b", "/a\"b/", HTTP_MOUNT_BAD, "", "/a\"b/" },
		{ "/a<b>", "/a<b>/", HTTP_MOUNT_BAD, "", "/a<b>/" },
		{ "/a%2fb", "/a%2fb/", HTTP_MOUNT_BAD, "", "/a%2fb/" },
		{ "/a?b", "/a?b/", HTTP_MOUNT_BAD, "", "/a?b/" },
		{ "/caf\xc3\xa9", "/caf\xc3\xa9/", HTTP_MOUNT_BAD, "", "/caf\xc3\xa9/" },
	};
	char longest[HTTP_MOUNT_MAX + 2], path[HTTP_MOUNT_MAX + 16];
	struct span prefix, rest;
	size_t i;

	for (i = 0; i < ARRAY_LEN(cases); i++) {
		enum http_mount_result res = http_mount_split(span_from_cstr(cases[i].script),
		    span_from_cstr(cases[i].path), &prefix, &rest);

		tap_ok(res == cases[i].res && span_eq_cstr(prefix, cases[i].prefix) &&
		    span_eq_cstr(rest, cases[i].rest), "mount \"%s\" on \"%s\": %d, \"%.*s\" + \"%.*s\"",
		    cases[i].script, cases[i].path, (int)res, (int)prefix.len, prefix.ptr, (int)rest.len,
		    rest.ptr);
	}
	tap_ok(http_mount_split((struct span){ "/a\0b", 4 }, (struct span){ "/a\0b/x", 6 }, &prefix,
	    &rest) == HTTP_MOUNT_BAD && prefix.len == 0, "mount: a NUL in SCRIPT_NAME");
	/* HTTP_MOUNT_MAX bytes is the longest prefix taken. */
	longest[0] = '/';
	memset(longest + 1, 'p', HTTP_MOUNT_MAX);
	memcpy(path, longest, HTTP_MOUNT_MAX + 1);
	memcpy(path + HTTP_MOUNT_MAX + 1, "/healthz", 8);
	tap_ok(http_mount_split((struct span){ longest, HTTP_MOUNT_MAX }, (struct span){ path, 0 },
	    &prefix, &rest) == HTTP_MOUNT_OUTSIDE, "mount: %d bytes is a good prefix", HTTP_MOUNT_MAX);
	tap_ok(http_mount_split((struct span){ longest, HTTP_MOUNT_MAX + 1 },
	    (struct span){ path, HTTP_MOUNT_MAX + 9 }, &prefix, &rest) == HTTP_MOUNT_BAD &&
	    prefix.len == 0 && rest.len == HTTP_MOUNT_MAX + 9,
	    "mount: %d bytes is too long, and the path stays whole", HTTP_MOUNT_MAX + 1);
}

static void
test_html_escape(void)
{
	struct buf b = BUF_INIT(256), small = BUF_INIT(4);

	tap_ok(html_escape(SPAN_LIT("<a href=\"x\">Tom & Jerry's</a>"), &b) == BUF_OK &&
	    strcmp(buf_cstr(&b), "&lt;a href=&quot;x&quot;&gt;Tom &amp; Jerry&#39;s&lt;/a&gt;") == 0,
	    "html_escape escapes & < > \" '");
	buf_reset(&b);
	tap_ok(html_escape(SPAN_LIT("plain text"), &b) == BUF_OK &&
	    strcmp(buf_cstr(&b), "plain text") == 0, "plain text passes");
	buf_reset(&b);
	tap_ok(html_escape(SPAN_NULL, &b) == BUF_OK && b.len == 0, "empty input");
	tap_ok(html_escape(SPAN_LIT("x"), &b) == BUF_OK && html_escape(SPAN_LIT("<"), &b) == BUF_OK &&
	    strcmp(buf_cstr(&b), "x&lt;") == 0, "html_escape appends");
	tap_ok(html_escape(SPAN_LIT("a<"), &small) == BUF_TOO_LONG, "escape past the cap");
	buf_free(&b);
	buf_free(&small);
}

/* REMOTE_USER and token owners: what the owner columns hold exactly. */
static void
test_owner_name(void)
{
	char at_max[OWNER_NAME_MAX * 4 + 1], over[OWNER_NAME_MAX + 2];
	size_t i;

	tap_ok(owner_name_check(SPAN_LIT("alice")) == OWNER_NAME_OK, "owner: alice");
	tap_ok(owner_name_check(SPAN_LIT("j\xc3\xb6rg@EXAMPLE.ORG")) == OWNER_NAME_OK,
	    "owner: UTF-8 and a realm");
	tap_ok(owner_name_check(SPAN_NULL) == OWNER_NAME_EMPTY, "owner: empty");
	tap_ok(owner_name_check(SPAN_LIT("al\xffice")) == OWNER_NAME_BAD_UTF8, "owner: a 0xff byte");
	tap_ok(owner_name_check(SPAN_LIT("\xc3")) == OWNER_NAME_BAD_UTF8, "owner: a cut sequence");
	tap_ok(owner_name_check(SPAN_LIT("a\tb")) == OWNER_NAME_CONTROL_CHAR, "owner: a tab");
	/* 128 four-byte characters fit the column (it counts characters). */
	for (i = 0; i < OWNER_NAME_MAX; i++)
		memcpy(at_max + 4 * i, "\xf0\x9f\x93\x84", 4);
	tap_ok(owner_name_check((struct span){ at_max, 4 * OWNER_NAME_MAX }) == OWNER_NAME_OK,
	    "owner: 128 characters of 4 bytes each");
	tap_ok(owner_name_check((struct span){ at_max, 4 * OWNER_NAME_MAX - 4 + 2 }) ==
	    OWNER_NAME_BAD_UTF8, "owner: ... ending in a cut character");
	memset(over, 'u', sizeof over);
	tap_ok(owner_name_check((struct span){ over, OWNER_NAME_MAX }) == OWNER_NAME_OK,
	    "owner: 128 ASCII characters");
	tap_ok(owner_name_check((struct span){ over, OWNER_NAME_MAX + 1 }) == OWNER_NAME_TOO_LONG,
	    "owner: 129 characters");
}

int
main(void)
{
	test_percent_decode();
	test_query_get();
	test_document_name();
	test_range();
	test_uint();
	test_etag();
	test_bearer();
	test_path_split();
	test_mount_split();
	test_html_escape();
	test_owner_name();
	return tap_done();
}
