/* Unit tests for disposition.c: exact values for the names people use and
 * the ones attackers use, every single byte, and the longest name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "parse/disposition.h"
#include "parse/http_parse.h"
#include "tap.h"

/* Spans with explicit lengths, so tables can hold NULs. */
#define S(lit) { (lit), sizeof(lit) - 1 }
#define PREFIX "attachment; filename=\""
#define MIDDLE "\"; filename*=UTF-8''"

/* Whether every byte of s is printable ASCII: nothing that could end or
 * split a header line. */
static int
printable_ascii(struct span s)
{
	size_t i;

	for (i = 0; i < s.len; i++)
		if ((unsigned char)s.ptr[i] < 0x20 || (unsigned char)s.ptr[i] > 0x7e)
			return 0;
	return 1;
}

/* Split a value into its fallback and its encoded part; 0 when its shape
 * is not PREFIX fallback MIDDLE encoded with no '"' inside the fallback. */
static int
split_value(struct span v, struct span *fallback, struct span *encoded)
{
	const char *mid;
	size_t i;

	if (v.len < sizeof PREFIX - 1 || memcmp(v.ptr, PREFIX, sizeof PREFIX - 1) != 0)
		return 0;
	for (i = sizeof PREFIX - 1; i < v.len && v.ptr[i] != '"'; i++)
		;
	mid = v.ptr + i;
	if ((size_t)(v.ptr + v.len - mid) < sizeof MIDDLE - 1 ||
	    memcmp(mid, MIDDLE, sizeof MIDDLE - 1) != 0)
		return 0;
	fallback->ptr = v.ptr + sizeof PREFIX - 1;
	fallback->len = (size_t)(mid - fallback->ptr);
	encoded->ptr = mid + sizeof MIDDLE - 1;
	encoded->len = (size_t)(v.ptr + v.len - encoded->ptr);
	return 1;
}

static void
test_table(void)
{
	static const struct {
		struct span name;
		const char *fallback, *encoded;
	} cases[] = {
		{ S("report.pdf"), "report.pdf", "report.pdf" },
		{ S("my file.txt"), "my file.txt", "my%20file.txt" },
		{ S(" lead and trail "), " lead and trail ", "%20lead%20and%20trail%20" },
		{ S("say \"hi\".txt"), "say _hi_.txt", "say%20%22hi%22.txt" },
		{ S("back\\slash"), "back_slash", "back%5Cslash" },
		{ S("r\xc3\xa9sum\xc3\xa9.pdf"), "r_sum_.pdf", "r%C3%A9sum%C3%A9.pdf" },
		{ S("\xe6\x97\xa5\xe6\x9c\xac.txt"), "__.txt", "%E6%97%A5%E6%9C%AC.txt" },
		{ S("\xf0\x9f\x98\x80.png"), "_.png", "%F0%9F%98%80.png" },
		{ S("100%.txt"), "100_.txt", "100%25.txt" },
		{ S("%41%42"), "_41_42", "%2541%2542" },
		{ S("a;b=c.txt"), "a;b=c.txt", "a%3Bb%3Dc.txt" },
		{ S("x.txt\"; filename=evil.html"), "x.txt_; filename=evil.html",
		  "x.txt%22%3B%20filename%3Devil.html" },
		{ S("a\r\nSet-Cookie: x\0y"), "a__Set-Cookie: x_y", "a%0D%0ASet-Cookie%3A%20x%00y" },
		{ S("tab\there\x7f"), "tab_here_", "tab%09here%7F" },
		{ S("!#$&+-.^_`|~"), "!#$&+-.^_`|~", "!#$&+-.^_`|~" },
		{ S("'()*,/:<=>?@[]{}"), "'()*,/:<=>?@[]{}",
		  "%27%28%29%2A%2C%2F%3A%3C%3D%3E%3F%40%5B%5D%7B%7D" },
		{ S("<script>alert(1)</script>.html"), "<script>alert(1)</script>.html",
		  "%3Cscript%3Ealert%281%29%3C%2Fscript%3E.html" },
		/* Not UTF-8 (the database should never hold it; the header is safe anyway). */
		{ S("\x80x\xff"), "_x_", "%80x%FF" },
		{ S("\xc3\xa9\x80\x80\x80"), "_", "%C3%A9%80%80%80" },
		{ S("AZaz09"), "AZaz09", "AZaz09" },
	};
	struct buf b = BUF_INIT(4096);
	char want[1024];
	size_t i;

	for (i = 0; i < ARRAY_LEN(cases); i++) {
		buf_reset(&b);
		snprintf(want, sizeof want, PREFIX "%s" MIDDLE "%s", cases[i].fallback, cases[i].encoded);
		tap_ok(disposition_attachment(cases[i].name, &b) == BUF_OK &&
		    span_eq_cstr(buf_span(&b), want),
		    "case %zu: %s", i, b.len ? buf_cstr(&b) : "(error)");
	}
	buf_free(&b);
}

/* Every byte alone: printable output, the fallback never holds '"', '\\'
 * or '%', and the encoded part decodes back to the byte. */
static void
test_every_byte(void)
{
	struct buf b = BUF_INIT(256), dec = BUF_INIT(16);
	struct span fb, enc;
	unsigned c;
	int bad = 0;

	for (c = 0; c < 256; c++) {
		char ch = (char)c;

		buf_reset(&b);
		buf_reset(&dec);
		if (disposition_attachment((struct span){ &ch, 1 }, &b) != BUF_OK ||
		    !printable_ascii(buf_span(&b)) || !split_value(buf_span(&b), &fb, &enc) ||
		    fb.len != 1 || fb.ptr[0] == '"' || fb.ptr[0] == '\\' || fb.ptr[0] == '%' ||
		    http_percent_decode(enc, &dec) != HTTP_DECODE_OK ||
		    dec.len != 1 || dec.ptr[0] != ch) {
			tap_diag("byte 0x%02x: %s", c, buf_cstr(&b));
			bad++;
		}
	}
	tap_ok(bad == 0, "all 256 single-byte names are safe and round-trip (%d bad)", bad);
	buf_free(&b);
	buf_free(&dec);
}

/* The longest name a document may have, in its cheapest and its most
 * expensive spelling. */
static void
test_longest(void)
{
	char ascii[DOCUMENT_NAME_MAX], cjk[DOCUMENT_NAME_MAX], want[2048];
	struct buf b = BUF_INIT(DISPOSITION_MAX(DOCUMENT_NAME_MAX)), dec = BUF_INIT(1024);
	struct span fb, enc;
	size_t i, n;

	memset(ascii, 'a', sizeof ascii);
	for (i = 0; i + 3 <= sizeof cjk; i += 3)
		memcpy(cjk + i, "\xe6\x97\xa5", 3);
	tap_ok(document_name_check((struct span){ cjk, sizeof cjk }) == DOCNAME_OK,
	    "85 x U+65E5 is a valid 255-byte name");

	n = (size_t)snprintf(want, sizeof want, PREFIX "%.*s" MIDDLE "%.*s",
	    (int)sizeof ascii, ascii, (int)sizeof ascii, ascii);
	tap_ok(disposition_attachment((struct span){ ascii, sizeof ascii }, &b) == BUF_OK &&
	    b.len == n && span_eq_cstr(buf_span(&b), want), "255 x 'a' (%zu bytes)", b.len);

	buf_reset(&b);
	tap_ok(disposition_attachment((struct span){ cjk, sizeof cjk }, &b) == BUF_OK &&
	    printable_ascii(buf_span(&b)) && split_value(buf_span(&b), &fb, &enc) &&
	    fb.len == 85 && strspn(fb.ptr, "_") == 85 && enc.len == 3 * sizeof cjk &&
	    http_percent_decode(enc, &dec) == HTTP_DECODE_OK &&
	    span_eq(buf_span(&dec), (struct span){ cjk, sizeof cjk }),
	    "255 bytes of CJK: 85 '_' and 765 encoded bytes that decode back (%zu bytes)", b.len);
	tap_ok(b.len <= DISPOSITION_MAX(DOCUMENT_NAME_MAX),
	    "within DISPOSITION_MAX(255) = %zu", DISPOSITION_MAX(DOCUMENT_NAME_MAX));

	/* Every byte percent-encoded and kept in the fallback is the bound's worst case. */
	memset(ascii, ' ', sizeof ascii);
	buf_reset(&b);
	tap_ok(disposition_attachment((struct span){ ascii, sizeof ascii }, &b) == BUF_OK &&
	    b.len == DISPOSITION_MAX(DOCUMENT_NAME_MAX), "255 spaces reach DISPOSITION_MAX exactly");
	buf_free(&b);
	buf_free(&dec);
}

static void
test_buffer(void)
{
	struct buf b = BUF_INIT(128), tight = BUF_INIT(DISPOSITION_MAX(3) - 1);

	tap_ok(buf_append_cstr(&b, "Content-Disposition: ") == BUF_OK &&
	    disposition_attachment(SPAN_LIT("a"), &b) == BUF_OK &&
	    span_eq_cstr(buf_span(&b), "Content-Disposition: " PREFIX "a" MIDDLE "a"),
	    "appends to what the buffer holds");
	tap_ok(disposition_attachment(SPAN_LIT("   "), &tight) == BUF_TOO_LONG,
	    "past the buffer's cap: BUF_TOO_LONG");
	buf_free(&b);
	buf_free(&tight);
}

/* content_type_is_active: types a browser runs or renders actively, by essence. */
static void
test_active_types(void)
{
	static const struct {
		const char *type;
		int active;
	} cases[] = {
		{ "text/javascript", 1 }, { "application/javascript", 1 }, { "text/ecmascript", 1 },
		{ "application/x-javascript", 1 }, { "text/javascript1.5", 1 }, { "text/jscript", 1 },
		{ "Text/JavaScript; charset=utf-8", 1 }, { " text/html ;q=1", 1 }, { "text/html", 1 },
		{ "application/xhtml+xml", 1 }, { "text/xml", 1 }, { "application/xml", 1 },
		{ "image/svg+xml", 1 }, { "application/atom+xml", 1 }, { "IMAGE/SVG+XML", 1 },
		{ "text/xsl", 1 },
		/* a list of types: browsers take the last, so any ',' is active */
		{ "text/plain, text/javascript", 1 }, { "text/plain;,text/javascript", 1 },
		{ "text/javascript, */*", 1 }, { "text/plain,image/png", 1 }, { "text/plain; x=\",\"", 1 },
		{ "text/plain", 0 }, { "application/pdf", 0 }, { "application/octet-stream", 0 },
		{ "image/png", 0 }, { "application/json", 0 }, { "text/css", 0 }, { "+xml", 0 },
		{ "text/javascriptx", 0 }, { "application/xmlx", 0 }, { "", 0 }, { "text/html2", 0 },
	};
	size_t i;

	for (i = 0; i < ARRAY_LEN(cases); i++)
		tap_ok(content_type_is_active(span_from_cstr(cases[i].type)) == cases[i].active,
		    "\"%s\" is %s", cases[i].type, cases[i].active ? "active" : "not active");
}

int
main(void)
{
	test_active_types();
	test_table();
	test_every_byte();
	test_longest();
	test_buffer();
	return tap_done();
}
