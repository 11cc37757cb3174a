/*
 * Unit tests for mime_list.c: every rule of an allowed_types list (the
 * separators, case, a "*" subtype, each refusal with the entry it names,
 * the limit on patterns) and of matching a type against it (parameters and
 * blanks ignored, case-insensitive, wildcards and lists never a type).
 */
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "parse/mime_list.h"
#include "tap.h"

struct parse_case {
	const char *text;
	enum mime_list_err want;
	const char *bad;	/* the entry named on an error */
	size_t n;		/* patterns on success */
};

static const struct parse_case parse_cases[] = {
	{ "", MIME_LIST_OK, NULL, 0 },
	{ " ,\t, ", MIME_LIST_OK, NULL, 0 },
	{ "application/pdf", MIME_LIST_OK, NULL, 1 },
	{ "application/pdf, image/*, text/plain", MIME_LIST_OK, NULL, 3 },
	{ "application/pdf,image/*,text/plain", MIME_LIST_OK, NULL, 3 },
	{ "application/pdf image/*\ttext/plain", MIME_LIST_OK, NULL, 3 },
	{ ",application/pdf ,, image/png,", MIME_LIST_OK, NULL, 2 },
	{ "application/pdf, application/pdf", MIME_LIST_OK, NULL, 2 },
	{ "application/vnd.openxmlformats-officedocument.wordprocessingml.document", MIME_LIST_OK, NULL, 1 },
	{ "image/svg+xml, application/x-7z-compressed, text/x-c++", MIME_LIST_OK, NULL, 3 },
	{ "a/b!#$&-^_.+", MIME_LIST_OK, NULL, 1 },
	{ "9p/x", MIME_LIST_OK, NULL, 1 },
	{ "pdf", MIME_LIST_BAD_ENTRY, "pdf", 0 },
	{ "application/pdf, bogus, image/png", MIME_LIST_BAD_ENTRY, "bogus", 0 },
	{ "application/", MIME_LIST_BAD_ENTRY, "application/", 0 },
	{ "/pdf", MIME_LIST_BAD_ENTRY, "/pdf", 0 },
	{ "application/pdf/x", MIME_LIST_BAD_ENTRY, "application/pdf/x", 0 },
	{ "-text/plain", MIME_LIST_BAD_ENTRY, "-text/plain", 0 },
	{ "text/-plain", MIME_LIST_BAD_ENTRY, "text/-plain", 0 },
	{ "image/*+xml", MIME_LIST_BAD_ENTRY, "image/*+xml", 0 },
	{ "image/**", MIME_LIST_BAD_ENTRY, "image/**", 0 },
	{ "text/pl\"ain", MIME_LIST_BAD_ENTRY, "text/pl\"ain", 0 },
	{ "t\xc3\xa9xt/plain", MIME_LIST_BAD_ENTRY, "t\xc3\xa9xt/plain", 0 },
	{ "ima ge/png", MIME_LIST_BAD_ENTRY, "ima", 0 },
	{ "text/plain;charset=utf-8", MIME_LIST_PARAMETER, "text/plain;charset=utf-8", 0 },
	{ "text/plain; charset=utf-8", MIME_LIST_PARAMETER, "text/plain;", 0 },
	{ "image/png, *", MIME_LIST_ANY_TYPE, "*", 0 },
	{ "*/*", MIME_LIST_ANY_TYPE, "*/*", 0 },
	{ "*/html", MIME_LIST_ANY_TYPE, "*/html", 0 },
};

static void
test_parse(void)
{
	struct mime_list list;
	struct span bad;
	size_t i;

	for (i = 0; i < ARRAY_LEN(parse_cases); i++) {
		const struct parse_case *c = &parse_cases[i];
		enum mime_list_err e = mime_list_parse(span_from_cstr(c->text), &list, &bad);

		if (c->want == MIME_LIST_OK)
			tap_ok(e == MIME_LIST_OK && list.n == c->n, "'%s' -> %zu patterns", c->text, c->n);
		else
			tap_ok(e == c->want && list.n == 0 && span_eq_cstr(bad, c->bad),
			       "'%s' refused (%d), naming '%s': %d '%.*s'", c->text, c->want, c->bad, e,
			       (int)bad.len, bad.ptr ? bad.ptr : "");
	}
}

/* Patterns come out lower-case, in order; a "*" subtype stays one. */
static void
test_parsed_form(void)
{
	struct mime_list list;
	struct span bad;

	tap_ok(mime_list_parse(SPAN_LIT("Application/PDF IMAGE/* text/X-C++"), &list, &bad) == MIME_LIST_OK &&
	       list.n == 3 && strcmp(list.items[0].type, "application") == 0 &&
	       strcmp(list.items[0].subtype, "pdf") == 0 && strcmp(list.items[1].type, "image") == 0 &&
	       strcmp(list.items[1].subtype, "*") == 0 && strcmp(list.items[2].subtype, "x-c++") == 0,
	       "patterns are kept lower-case, in order");
	tap_ok(mime_list_parse(SPAN_LIT("text/plain"), &list, &bad) == MIME_LIST_OK && list.n == 1 &&
	       strcmp(list.items[0].type, "text") == 0, "a second parse replaces the first list");
	tap_ok(mime_list_parse(SPAN_LIT("text/plain, nope"), &list, &bad) != MIME_LIST_OK && list.n == 0,
	       "... and a refused one leaves it empty");
}

/* Names up to RFC 6838's 127 characters, not one more. */
static void
test_name_length(void)
{
	char text[300];
	struct mime_list list;
	struct span bad;

	memset(text, 'a', 127);
	memcpy(text + 127, "/x", 3);
	tap_ok(mime_list_parse(span_from_cstr(text), &list, &bad) == MIME_LIST_OK && list.n == 1,
	       "a 127-character type");
	memcpy(text, "x/", 2);
	memset(text + 2, 'b', 127);
	text[129] = '\0';
	tap_ok(mime_list_parse(span_from_cstr(text), &list, &bad) == MIME_LIST_OK && list.n == 1,
	       "a 127-character subtype");
	memset(text, 'a', 128);
	memcpy(text + 128, "/x", 3);
	tap_ok(mime_list_parse(span_from_cstr(text), &list, &bad) == MIME_LIST_BAD_ENTRY && bad.len == 130,
	       "a 128-character type is refused");
	memcpy(text, "x/", 2);
	memset(text + 2, 'b', 128);
	text[130] = '\0';
	tap_ok(mime_list_parse(span_from_cstr(text), &list, &bad) == MIME_LIST_BAD_ENTRY,
	       "a 128-character subtype is refused");
}

/* MIME_LIST_MAX patterns, and the one after them named. */
static void
test_too_many(void)
{
	struct buf b = BUF_INIT(8192);
	struct mime_list list;
	struct span bad;
	size_t i;
	int ok = 1;

	for (i = 0; i < MIME_LIST_MAX && ok; i++)
		ok = buf_appendf(&b, "type%zu/x, ", i) == BUF_OK;
	tap_ok(ok && mime_list_parse(buf_span(&b), &list, &bad) == MIME_LIST_OK && list.n == MIME_LIST_MAX,
	       "%d patterns fit", MIME_LIST_MAX);
	ok = ok && buf_append_cstr(&b, "one/more, last/one") == BUF_OK;
	tap_ok(ok && mime_list_parse(buf_span(&b), &list, &bad) == MIME_LIST_TOO_MANY && list.n == 0 &&
	       span_eq_cstr(bad, "one/more"), "one more is refused, naming it");
	buf_free(&b);
}

static void
test_strerror(void)
{
	static const enum mime_list_err all[] = { MIME_LIST_OK, MIME_LIST_BAD_ENTRY, MIME_LIST_PARAMETER,
						  MIME_LIST_ANY_TYPE, MIME_LIST_TOO_MANY };
	size_t i;
	int ok = 1;

	for (i = 0; i < ARRAY_LEN(all); i++)
		ok = ok && strlen(mime_list_strerror(all[i])) > 5;
	tap_ok(ok, "every error has its phrase");
	tap_ok(strstr(mime_list_strerror(MIME_LIST_TOO_MANY), "64") != NULL, "... the limit in it is %d",
	       MIME_LIST_MAX);
}

struct allow_case {
	const char *mime;
	int allowed;
};

static const struct allow_case allow_cases[] = {
	{ "application/pdf", 1 },
	{ "APPLICATION/PDF", 1 },
	{ "Application/Pdf", 1 },
	{ "application/pdf; charset=binary", 1 },
	{ "application/pdf;charset=binary", 1 },
	{ " application/pdf ", 1 },
	{ "\tapplication/pdf\t; x=y", 1 },
	{ "image/png", 1 },
	{ "IMAGE/SVG+XML", 1 },
	{ "image/vnd.microsoft.icon", 1 },
	{ "text/plain", 1 },
	{ "text/plain; charset=utf-8", 1 },
	{ "text/html", 0 },
	{ "text/plain2", 0 },
	{ "text/plai", 0 },
	{ "application/pdfx", 0 },
	{ "application/x-pdf", 0 },
	{ "applications/pdf", 0 },
	{ "application", 0 },
	{ "", 0 },
	{ "/pdf", 0 },
	{ "application/", 0 },
	{ "image/", 0 },
	{ "image/;x=y", 0 },
	{ "image/*", 0 },
	{ "*/*", 0 },
	{ "*/pdf", 0 },
	{ "application/pdf x", 0 },
	{ "application/pdf,text/html", 0 },
	{ "text/html, application/pdf", 0 },
	{ "application/pdf/x", 0 },
	{ "application /pdf", 0 },
	{ "text/plain\r\n", 0 },
	{ "image/pn\xc3\xa9", 0 },
};

static void
test_allows(void)
{
	struct mime_list list, empty;
	struct span bad;
	size_t i;

	if (mime_list_parse(SPAN_LIT("application/pdf, image/*, text/plain"), &list, &bad) != MIME_LIST_OK)
		tap_bail("the list of the matching tests does not parse");
	for (i = 0; i < ARRAY_LEN(allow_cases); i++)
		tap_ok(mime_list_allows(&list, span_from_cstr(allow_cases[i].mime)) == allow_cases[i].allowed,
		       "'%s' %s", allow_cases[i].mime, allow_cases[i].allowed ? "allowed" : "not allowed");
	tap_ok(!mime_list_allows(&list, SPAN_NULL), "an empty span is not allowed");
	/* The span's length counts, not a NUL: "application/pdf" cut short. */
	tap_ok(!mime_list_allows(&list, (struct span){ "application/pdf", 13 }), "a cut span is its own type");
	tap_ok(mime_list_parse(SPAN_LIT(""), &empty, &bad) == MIME_LIST_OK &&
	       !mime_list_allows(&empty, SPAN_LIT("application/pdf")), "an empty list allows nothing");
}

int
main(void)
{
	test_parse();
	test_parsed_form();
	test_name_length();
	test_too_many();
	test_strerror();
	test_allows();
	return tap_done();
}
