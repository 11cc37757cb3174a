/*
 * Unit tests for tus_headers.c: the tus 1.0.0 spec's examples, each class
 * of refusal, the boundaries (INT64_MAX, 32 pairs, 8 KiB), NUL bytes in a
 * metadata value, checksums of a known body, and every allocation of a
 * metadata parse failing in turn.
 */
#include <stdint.h>
#include <string.h>

#include <gnutls/crypto.h>

#include "base/alloc.h"
#include "base/http_date.h"
#include "parse/tus_headers.h"
#include "tap.h"

static enum tus_err
u64_of(const char *s, uint64_t *v)
{
	*v = 12345;
	return tus_parse_u64(span_from_cstr(s), v);
}

static void
test_u64(void)
{
	static const char *bad[] = { "", " 1", "1 ", "01", "00", "+1", "-1", "1a",
	    "0x10", "1.0", "9223372036854775808", "18446744073709551615",
	    "18446744073709551616", "99999999999999999999999", "\xd9\xa1" };
	uint64_t v;
	size_t i;

	tap_ok(u64_of("0", &v) == TUS_OK && v == 0, "\"0\" is 0");
	tap_ok(u64_of("1", &v) == TUS_OK && v == 1, "\"1\" is 1");
	tap_ok(u64_of("1048576", &v) == TUS_OK && v == 1048576, "a size");
	tap_ok(u64_of("9223372036854775807", &v) == TUS_OK &&
	    v == (uint64_t)INT64_MAX, "INT64_MAX accepted");
	for (i = 0; i < ARRAY_LEN(bad); i++)
		tap_ok(u64_of(bad[i], &v) == TUS_BAD && v == 12345,
		    "refused, out untouched: \"%s\"", tap_escape(bad[i]));
	tap_ok(tus_parse_u64((struct span){ "1\0", 2 }, &v) == TUS_BAD,
	    "a NUL after the digits refused");
}

static enum tus_err
meta_of(const char *header, struct tus_metadata *m)
{
	return tus_metadata_parse(span_from_cstr(header), m);
}

/* 1 when m maps key to exactly want[wantlen]. */
static int
has(const struct tus_metadata *m, const char *key, const char *want,
    size_t wantlen)
{
	struct span v;

	return tus_metadata_get(m, key, &v) == TUS_OK && v.len == wantlen &&
	    memcmp(v.ptr, want, wantlen) == 0;
}

static void
test_metadata_good(void)
{
	struct tus_metadata m;
	struct span v;

	/* The spec's own example. */
	tap_ok(meta_of("filename d29ybGRfZG9taW5hdGlvbl9wbGFuLnBkZg==,is_confidential",
	    &m) == TUS_OK && m.npairs == 2 &&
	    has(&m, "filename", "world_domination_plan.pdf", 25) &&
	    has(&m, "is_confidential", "", 0), "the spec's example");
	tap_ok(tus_metadata_get(&m, "Filename", &v) == TUS_BAD &&
	    tus_metadata_get(&m, "absent", &v) == TUS_BAD &&
	    tus_metadata_get(&m, "", &v) == TUS_BAD,
	    "an absent key (keys compare exactly) is TUS_BAD");
	tus_metadata_free(&m);
	tap_ok(meta_of("a YQ==, b Yg==", &m) == TUS_OK && has(&m, "a", "a", 1) &&
	    has(&m, "b", "b", 1), "a space after the comma");
	tus_metadata_free(&m);
	tap_ok(meta_of(" \ta YQ== ,\tb Yg==\t ", &m) == TUS_OK && m.npairs == 2 &&
	    has(&m, "a", "a", 1) && has(&m, "b", "b", 1),
	    "spaces and tabs around pairs");
	tus_metadata_free(&m);
	tap_ok(meta_of("n AGIA", &m) == TUS_OK && has(&m, "n", "\0b\0", 3),
	    "a value holding NUL bytes keeps its length");
	tus_metadata_free(&m);
	tap_ok(meta_of("a ,b", &m) == TUS_OK && has(&m, "a", "", 0) &&
	    has(&m, "b", "", 0), "a key with a space but no value is empty");
	tus_metadata_free(&m);
	tap_ok(meta_of("", &m) == TUS_OK && m.npairs == 0, "an empty header has no pairs");
	tus_metadata_free(&m);
	tap_ok(meta_of("k=!~ YQ==", &m) == TUS_OK && has(&m, "k=!~", "a", 1),
	    "any printable ASCII but space and comma in a key");
	tus_metadata_free(&m);
}

static void
test_metadata_bad(void)
{
	static const char *bad[] = {
		"a YQ==,", ",a YQ==", "a YQ==,,b Yg==", "a YQ==, ,b", " YQ== ,",
		"a  YQ==", "a\tYQ==", "a YQ=", "a YQ", "a Y-Q=", "a YR==",
		"a YQ== Yg==", "a YQ==;b Yg==", "\xc3\xa4 YQ==", "a\x01 YQ==",
		"a\x7f YQ==", "a YQ==,a Yg==", "a,a", "a YQ==\r\n", "a\n",
	};
	struct tus_metadata m;
	size_t i;

	for (i = 0; i < ARRAY_LEN(bad); i++) {
		tap_ok(meta_of(bad[i], &m) == TUS_BAD && m.npairs == 0,
		    "refused: \"%s\"", tap_escape(bad[i]));
		tus_metadata_free(&m);
	}
	tap_ok(tus_metadata_parse((struct span){ "a\0b YQ==", 8 }, &m) == TUS_BAD,
	    "a NUL in a key refused");
	tus_metadata_free(&m);
}

/* A header of n pairs "k0 YQ==,k1 YQ==,...". */
static void
pairs_header(struct buf *b, int n)
{
	int i;

	buf_reset(b);
	for (i = 0; i < n; i++)
		if (buf_appendf(b, "%sk%d YQ==", i ? "," : "", i) != BUF_OK)
			tap_bail("out of memory");
}

/* A header of exactly len bytes: "v ", 8188 'A's (6141 zero bytes), then
 * spaces. */
static void
long_header(struct buf *b, size_t len)
{
	buf_reset(b);
	if (buf_append(b, "v ", 2) != BUF_OK)
		tap_bail("out of memory");
	while (b->len < len)
		if (buf_append(b, b->len < 8190 ? "A" : " ", 1) != BUF_OK)
			tap_bail("out of memory");
}

static void
test_metadata_limits(void)
{
	struct buf h = BUF_INIT(16384);
	struct tus_metadata m;
	struct span k, v;

	pairs_header(&h, 32);
	tap_ok(tus_metadata_parse(buf_span(&h), &m) == TUS_OK && m.npairs == 32 &&
	    has(&m, "k31", "a", 1), "32 pairs accepted");
	tus_metadata_pair(&m, 0, &k, &v);
	tap_ok(span_eq_cstr(k, "k0") && v.len == 1, "pairs come in header order");
	tus_metadata_free(&m);
	pairs_header(&h, 33);
	tap_ok(tus_metadata_parse(buf_span(&h), &m) == TUS_TOO_LONG,
	    "33 pairs: TUS_TOO_LONG");
	tus_metadata_free(&m);
	long_header(&h, TUS_METADATA_MAX_LEN);
	tap_ok(h.len == 8192 && tus_metadata_parse(buf_span(&h), &m) == TUS_OK &&
	    m.npairs == 1 && tus_metadata_get(&m, "v", &v) == TUS_OK &&
	    v.len == 6141 && v.ptr[6140] == '\0', "an 8192-byte header accepted");
	tus_metadata_free(&m);
	long_header(&h, TUS_METADATA_MAX_LEN + 1);
	tap_ok(tus_metadata_parse(buf_span(&h), &m) == TUS_TOO_LONG,
	    "an 8193-byte header: TUS_TOO_LONG");
	tus_metadata_free(&m);
	buf_free(&h);
}

/* Every allocation of a parse fails in turn: NOMEM (nothing else), and no
 * leak for ASan to find; then the parse succeeds. */
static void
test_metadata_nomem(void)
{
	const char *header = "filename aGVsbG8udHh0,filetype dGV4dC9wbGFpbg==";
	struct tus_metadata m;
	enum tus_err e = TUS_NOMEM;
	long n, failed = 0;

	for (n = 1; n < 100 && e == TUS_NOMEM; n++) {
		alloc_fail_after(n);
		e = meta_of(header, &m);
		if (e == TUS_NOMEM)
			failed++;
		tus_metadata_free(&m);
	}
	alloc_fail_after(-1);
	tap_ok(e == TUS_OK && failed > 0,
	    "each failing allocation gives TUS_NOMEM (%ld), then TUS_OK", failed);
}

static void
test_checksum_hello(enum tus_checksum_alg want_alg, const char *header)
{
	unsigned char digest[32], want[32];
	size_t want_len = want_alg == TUS_SHA1 ? 20 : 32, got_len = 0;
	enum tus_checksum_alg alg = want_alg == TUS_SHA1 ? TUS_SHA256 : TUS_SHA1;

	if (gnutls_hash_fast(want_alg == TUS_SHA1 ? GNUTLS_DIG_SHA1 :
	    GNUTLS_DIG_SHA256, "hello", 5, want) != 0)
		tap_bail("gnutls_hash_fast failed");
	tap_ok(tus_checksum_parse(span_from_cstr(header), &alg, digest, &got_len) ==
	    TUS_OK && alg == want_alg && got_len == want_len &&
	    memcmp(digest, want, want_len) == 0, "\"%s\" is the digest of \"hello\"",
	    header);
}

static enum tus_err
checksum_of(const char *header)
{
	enum tus_checksum_alg alg;
	unsigned char digest[32];
	size_t len;

	return tus_checksum_parse(span_from_cstr(header), &alg, digest, &len);
}

static void
test_checksum(void)
{
	static const char *unsupported[] = { "md5 XUFAKrxLKna5cZ2REBfFkg==",
	    "SHA1 qvTGHdzF6KLavt4PO0gs2a6pQ00=", "crc32 NhCmhg==",
	    "sha-256 LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ=", "sha512 x" };
	static const char *bad[] = { "", "sha1", "sha1 ", " sha1 qvTGHdzF6KLavt4PO0gs2a6pQ00=",
	    "sha1  qvTGHdzF6KLavt4PO0gs2a6pQ00=", "sha1 qvTGHdzF6KLavt4PO0gs2a6pQ00= ",
	    "sha1 qvTGHdzF6KLavt4PO0gs2a6pQ00", "sha1 qvTGHdzF6KLavt4PO0gs2a6pQ01=",
	    "sha1 qvTGHdzF6KLavt4PO0gs2a6pQ0==",
	    "sha1 LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ=",
	    "sha256 qvTGHdzF6KLavt4PO0gs2a6pQ00=",
	    "sha256 LPJNul-wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ=",
	    "sha256 LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ=AAAA",
	    "sha/1 qvTGHdzF6KLavt4PO0gs2a6pQ00=", "sha1\tqvTGHdzF6KLavt4PO0gs2a6pQ00=",
	    "0123456789012345678901234567890123 x" };
	size_t i;

	test_checksum_hello(TUS_SHA1, "sha1 qvTGHdzF6KLavt4PO0gs2a6pQ00=");
	test_checksum_hello(TUS_SHA256,
	    "sha256 LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ=");
	for (i = 0; i < ARRAY_LEN(unsupported); i++)
		tap_ok(checksum_of(unsupported[i]) == TUS_UNSUPPORTED,
		    "unsupported: \"%s\"", unsupported[i]);
	for (i = 0; i < ARRAY_LEN(bad); i++)
		tap_ok(checksum_of(bad[i]) == TUS_BAD, "refused: \"%s\"",
		    tap_escape(bad[i]));
}

static void
test_resumable_and_date(void)
{
	char out[HTTP_DATE_SIZE];

	tap_ok(tus_resumable_ok(SPAN_LIT("1.0.0")), "Tus-Resumable 1.0.0");
	tap_ok(!tus_resumable_ok(SPAN_LIT("1.0.0 ")) && !tus_resumable_ok(SPAN_LIT("1.0")) &&
	    !tus_resumable_ok(SPAN_LIT("0.2.2")) && !tus_resumable_ok(SPAN_LIT("")) &&
	    !tus_resumable_ok((struct span){ "1.0.0\0", 6 }), "other versions refused");
	tap_ok(tus_http_date(784111777, out, sizeof out) == TUS_OK &&
	    strcmp(out, "Sun, 06 Nov 1994 08:49:37 GMT") == 0,
	    "Upload-Expires as RFC 7231's example");
	tap_ok(tus_http_date(-1, out, sizeof out) == TUS_BAD && out[0] == '\0' &&
	    tus_http_date(HTTP_DATE_MAX + 1, out, sizeof out) == TUS_BAD,
	    "times outside 1970..9999 refused");
	tap_ok(tus_http_date(0, out, HTTP_DATE_SIZE - 1) == TUS_TOO_LONG &&
	    out[0] == '\0', "a short buffer: TUS_TOO_LONG");
}

int
main(void)
{
	test_u64();
	test_metadata_good();
	test_metadata_bad();
	test_metadata_limits();
	test_metadata_nomem();
	test_checksum();
	test_resumable_and_date();
	return tap_done();
}
