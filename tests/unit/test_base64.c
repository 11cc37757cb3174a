/* Unit tests for base64.c: RFC 4648 vectors, every strictness rule, binary
 * round trips, the output bounds and an allocation failure; base64url's
 * vectors, its two characters and its missing padding. */
#include <string.h>

#include "base/alloc.h"
#include "base/base64.h"
#include "tap.h"

static enum base64_err
decode_cstr(const char *text, struct buf *out)
{
	buf_reset(out);
	return base64_decode(span_from_cstr(text), out);
}

/* RFC 4648 section 10, both ways. */
static void
test_vectors(void)
{
	static const char *plain[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar" };
	static const char *coded[] = { "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==",
	    "Zm9vYmE=", "Zm9vYmFy" };
	struct buf b = BUF_INIT(64);
	size_t i;

	for (i = 0; i < ARRAY_LEN(plain); i++) {
		buf_reset(&b);
		tap_ok(base64_encode(plain[i], strlen(plain[i]), &b) == BASE64_OK &&
		    strcmp(buf_cstr(&b), coded[i]) == 0 &&
		    b.len == base64_encoded_len(strlen(plain[i])),
		    "encode \"%s\"", plain[i]);
		tap_ok(decode_cstr(coded[i], &b) == BASE64_OK &&
		    b.len == strlen(plain[i]) &&
		    memcmp(buf_cstr(&b), plain[i], b.len) == 0,
		    "decode \"%s\"", coded[i]);
	}
	buf_free(&b);
}

/* Each text breaks exactly one rule of the strict decoder. */
static void
test_refusals(void)
{
	static const char *bad[] = {
		"Zm9", "Zm9vY", "Z", "Zm!v", "Zm9v Zg==", " Zm9v", "Zm9v\n",
		"Zm-v", "Zm_v", "Zg", "Zg=", "Z===", "====", "=Zg=", "Zg==Zg==",
		"Zm=v", "Zh==", "Zm9=", "Zm\x80v",
	};
	struct buf b = BUF_INIT(64);
	size_t i;

	for (i = 0; i < ARRAY_LEN(bad); i++)
		tap_ok(decode_cstr(bad[i], &b) == BASE64_BAD && b.len == 0,
		    "refuses \"%s\"", tap_escape(bad[i]));
	buf_free(&b);
}

static void
test_binary(void)
{
	unsigned char all[256], back[256];
	struct buf b = BUF_INIT(1024), d = BUF_INIT(1024);
	size_t i, got;

	for (i = 0; i < 256; i++)
		all[i] = (unsigned char)i;
	tap_ok(base64_encode(all, sizeof all, &b) == BASE64_OK &&
	    base64_decode(buf_span(&b), &d) == BASE64_OK && d.len == 256 &&
	    memcmp(d.ptr, all, 256) == 0, "round trip of every byte value");
	tap_ok(base64_decode_into(buf_span(&b), back, sizeof back, &got) ==
	    BASE64_OK && got == 256 && memcmp(back, all, 256) == 0,
	    "decode_into gives the same bytes");
	tap_ok(base64_decode_into(buf_span(&b), back, 255, &got) ==
	    BASE64_TOO_LONG, "decode_into refuses a short output");
	/* Seven characters of a longer text: the group is cut by the span's
	 * length, not by a NUL or a bad character after it. */
	tap_ok(base64_decode_into((struct span){ "Zm9vYmFy", 7 }, back,
	    sizeof back, &got) == BASE64_BAD && got == 0,
	    "decode_into refuses a group cut by the span's length");
	buf_reset(&d);
	tap_ok(decode_cstr("AAE=", &d) == BASE64_OK && d.len == 2 &&
	    d.ptr[0] == 0 && d.ptr[1] == 1, "NUL bytes decode (length kept)");
	buf_free(&b);
	buf_free(&d);
}

/* A buf that holds memory but nothing written: empty output must still
 * leave it NUL-terminated, whatever the memory held. */
static void
test_empty_terminated(void)
{
	struct buf b = BUF_INIT(64);

	if (buf_reserve(&b, 8) != BUF_OK)
		tap_bail("out of memory");
	memset(b.ptr, 'x', b.cap);
	tap_ok(base64_encode("", 0, &b) == BASE64_OK && b.len == 0 &&
	    b.ptr[0] == '\0', "encoding nothing terminates the buffer");
	memset(b.ptr, 'x', b.cap);
	tap_ok(base64_decode(SPAN_LIT(""), &b) == BASE64_OK && b.len == 0 &&
	    b.ptr[0] == '\0', "decoding nothing terminates the buffer");
	buf_free(&b);
}

static void
test_bounds(void)
{
	struct buf small = BUF_INIT(2), b = BUF_INIT(64);

	tap_ok(decode_cstr("Zm9v", &small) == BASE64_TOO_LONG && small.len == 0,
	    "a decode over the buf's cap is TOO_LONG and appends nothing");
	tap_ok(decode_cstr("Zm8=", &small) == BASE64_TOO_LONG,
	    "the cap counts the group's three bytes before padding");
	buf_free(&small);
	alloc_fail_after(1);
	tap_ok(decode_cstr("Zm9v", &b) == BASE64_NOMEM, "allocation failure: NOMEM");
	alloc_fail_after(1);
	tap_ok(base64_encode("foo", 3, &b) == BASE64_NOMEM,
	    "encode: allocation failure: NOMEM");
	alloc_fail_after(-1);
	tap_ok(decode_cstr("Zm9v", &b) == BASE64_OK && b.len == 3,
	    "works again once allocation does");
	buf_free(&b);
}

/* base64url (RFC 4648 section 5) without padding, as a JWS writes it. */
static void
test_url(void)
{
	static const char *plain[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar" };
	static const char *coded[] = { "", "Zg", "Zm8", "Zm9v", "Zm9vYg", "Zm9vYmE",
	    "Zm9vYmFy" };
	static const unsigned char plus[] = { 0xfb, 0xef, 0xbe }, slash[] = { 0xff,
	    0xff, 0xff }, both[] = { 0xfb, 0xff };
	unsigned char all[256];
	struct buf b = BUF_INIT(1024), std = BUF_INIT(1024);
	size_t i, j;
	int same = 1;

	for (i = 0; i < ARRAY_LEN(plain); i++) {
		buf_reset(&b);
		tap_ok(base64url_encode(plain[i], strlen(plain[i]), &b) == BASE64_OK &&
		    strcmp(buf_cstr(&b), coded[i]) == 0,
		    "base64url encode \"%s\" (no padding)", plain[i]);
	}
	buf_reset(&b);
	tap_ok(base64url_encode(plus, sizeof plus, &b) == BASE64_OK &&
	    strcmp(buf_cstr(&b), "----") == 0, "base64url writes '-' for 62");
	buf_reset(&b);
	tap_ok(base64url_encode(slash, sizeof slash, &b) == BASE64_OK &&
	    strcmp(buf_cstr(&b), "____") == 0, "base64url writes '_' for 63");
	buf_reset(&b);
	tap_ok(base64url_encode(both, sizeof both, &b) == BASE64_OK &&
	    strcmp(buf_cstr(&b), "-_8") == 0, "base64url of two bytes is three characters");
	/* Every byte value at every offset: the standard text with "+/" mapped
	 * and the padding cut is the base64url text. */
	for (i = 0; i < 256; i++)
		all[i] = (unsigned char)i;
	for (i = 0; i < 3; i++) {
		buf_reset(&b);
		buf_reset(&std);
		if (base64url_encode(all + i, sizeof all - i, &b) != BASE64_OK ||
		    base64_encode(all + i, sizeof all - i, &std) != BASE64_OK) {
			same = 0;
			break;
		}
		while (std.len > 0 && std.ptr[std.len - 1] == '=')
			std.len--;
		for (j = 0; j < std.len; j++)
			if (std.ptr[j] == '+')
				std.ptr[j] = '-';
			else if (std.ptr[j] == '/')
				std.ptr[j] = '_';
		same = same && b.len == std.len && memcmp(b.ptr, std.ptr, b.len) == 0;
	}
	tap_ok(same, "base64url of every byte value is base64 with '-_' and no '='");
	buf_reset(&b);
	if (buf_append_cstr(&b, "x.") != BUF_OK)
		tap_bail("out of memory");
	tap_ok(base64url_encode("f", 1, &b) == BASE64_OK &&
	    strcmp(buf_cstr(&b), "x.Zg") == 0, "base64url appends to what the buffer holds");
	buf_free(&b);
	alloc_fail_after(1);
	tap_ok(base64url_encode("foo", 3, &b) == BASE64_NOMEM,
	    "base64url: allocation failure: NOMEM");
	alloc_fail_after(-1);
	buf_free(&b);
	buf_free(&std);
}

int
main(void)
{
	test_vectors();
	test_refusals();
	test_binary();
	test_empty_terminated();
	test_bounds();
	test_url();
	return tap_done();
}
