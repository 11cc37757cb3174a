/*
 * Unit tests for sign.c: every string-to-sign and signature is pinned for
 * fixed inputs.  The expected signatures were computed independently
 * (Python's hmac + base64 over the pinned strings) with Azurite's well-known
 * development key, so a change in canonicalisation cannot go unnoticed.
 */
#include <string.h>

#include "base/buf.h"
#include "storage/sign.h"
#include "tap.h"

static const char dev_key_b64[] =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

static struct buf key = BUF_INIT(128);

static int
str_is(const struct buf *b, const char *want, const char *what)
{
	int ok = strcmp(buf_cstr(b), want) == 0;

	tap_ok(ok, "%s", what);
	if (!ok)
		tap_diag("got  [%s]\n# want [%s]", buf_cstr(b), want);
	return ok;
}

static void
test_hmac_base64(void)
{
	static const char *const samples[] = { "", "f", "fo", "foo", "foob",
	    "fooba", "foobar" };
	static const char *const encoded[] = { "", "Zg==", "Zm8=", "Zm9v",
	    "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy" };
	unsigned char mac[32];
	char hex[65];
	size_t i;
	struct buf b = BUF_INIT(1024), d = BUF_INIT(1024);

	tap_ok(sign_hmac_sha256("key", 3, "The quick brown fox jumps over the lazy dog",
	    43, mac) == SIGN_OK, "hmac computes");
	for (i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", mac[i]);
	tap_ok(strcmp(hex, "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8") == 0,
	    "HMAC-SHA256 known answer (RFC 4231 style vector)");
	/* RFC 4648 section 10 test vectors, both ways. */
	for (i = 0; i < ARRAY_LEN(samples); i++) {
		buf_reset(&b);
		buf_reset(&d);
		tap_ok(sign_base64_encode(samples[i], strlen(samples[i]), &b) == SIGN_OK &&
		    strcmp(buf_cstr(&b), encoded[i]) == 0, "base64 encode \"%s\"", samples[i]);
		tap_ok(sign_base64_decode(encoded[i], strlen(encoded[i]), &d) == SIGN_OK &&
		    d.len == strlen(samples[i]) &&
		    memcmp(buf_cstr(&d), samples[i], d.len) == 0,
		    "base64 decode \"%s\"", encoded[i]);
	}
	buf_reset(&d);
	tap_ok(sign_base64_decode("Zm9", 3, &d) == SIGN_BAD_INPUT, "base64 refuses bad length");
	buf_reset(&d);
	tap_ok(sign_base64_decode("Zm!v", 4, &d) == SIGN_BAD_INPUT, "base64 refuses bad alphabet");
	buf_reset(&d);
	/* GnuTLS's decoder skipped line breaks; lib/base/base64 is strict. */
	tap_ok(sign_base64_decode("Zm\n9vYmFy\n\n\n", 12, &d) == SIGN_BAD_INPUT,
	    "base64 refuses embedded line breaks");
	/* Binary round trip through all 256 byte values. */
	{
		unsigned char all[256];

		for (i = 0; i < 256; i++)
			all[i] = (unsigned char)i;
		buf_reset(&b);
		buf_reset(&d);
		tap_ok(sign_base64_encode(all, sizeof all, &b) == SIGN_OK &&
		    sign_base64_decode(b.ptr, b.len, &d) == SIGN_OK &&
		    d.len == 256 && memcmp(d.ptr, all, 256) == 0,
		    "base64 round trip of every byte value");
	}
	buf_free(&b);
	buf_free(&d);
}

static void
test_percent(void)
{
	struct buf b = BUF_INIT(1024);

	tap_ok(sign_percent_encode("dir/a b+c=é~", strlen("dir/a b+c=é~"), 1, &b) == SIGN_OK,
	    "percent-encode");
	str_is(&b, "dir/a%20b%2Bc%3D%C3%A9~", "path keeps '/' and unreserved, encodes the rest");
	buf_reset(&b);
	tap_ok(sign_percent_encode("a/b", 3, 0, &b) == SIGN_OK, "percent-encode query value");
	str_is(&b, "a%2Fb", "query value encodes '/'");
	buf_free(&b);
}

static void
test_shared_key(void)
{
	static const struct sign_header put_headers[] = {
		{ "x-ms-version", "2025-11-05" },
		{ "Content-Length", "11" },
		{ "X-MS-Meta-Foo", "  a    b  " },
		{ "Content-MD5", "XrY7u+Ae7tCTyyK7j1rNww==" },
		{ "If-None-Match", "*" },
		{ "x-ms-date", "Wed, 02 Dec 2026 14:00:00 GMT" },
		{ "Accept", "*/*" },
	};
	static const struct sign_header del_headers[] = {
		{ "x-ms-date", "Wed, 02 Dec 2026 14:00:00 GMT" },
		{ "x-ms-if-tags", "\"state\" = 'pending'" },
		{ "Content-Length", "0" },
		{ "If-Match", "W/\"0x1\"" },
		{ "x-ms-version", "2025-11-05" },
	};
	struct buf b = BUF_INIT(8192);

	tap_ok(sign_shared_key_string("PUT", "devstoreaccount1",
	    "/devstoreaccount1/c1/a%20b.txt", "comp=block&blockid=QUJD%2B%2F%3D%3D",
	    put_headers, ARRAY_LEN(put_headers), &b) == SIGN_OK, "shared key string builds");
	str_is(&b, "PUT\n\n\n11\nXrY7u+Ae7tCTyyK7j1rNww==\n\n\n\n\n*\n\n\n"
	    "x-ms-date:Wed, 02 Dec 2026 14:00:00 GMT\nx-ms-meta-foo:a b\n"
	    "x-ms-version:2025-11-05\n"
	    "/devstoreaccount1/devstoreaccount1/c1/a%20b.txt\nblockid:QUJD+/==\ncomp:block",
	    "Shared Key: path-style resource, headers folded, query decoded and sorted");
	buf_reset(&b);
	tap_ok(sign_shared_key(key.ptr ? (unsigned char *)key.ptr : NULL, key.len, "PUT",
	    "devstoreaccount1", "/devstoreaccount1/c1/a%20b.txt",
	    "comp=block&blockid=QUJD%2B%2F%3D%3D", put_headers,
	    ARRAY_LEN(put_headers), &b) == SIGN_OK, "shared key signs");
	str_is(&b, "SharedKey devstoreaccount1:MG13RZnu1WX5z5ciTCW1/1y42lmy6EobCEC/xll7aPQ=",
	    "Shared Key Authorization value pinned");

	buf_reset(&b);
	tap_ok(sign_shared_key_string("DELETE", "acct", "/c1/x",
	    "restype=container&a=2&include=tags%2Cmetadata&A=1", del_headers,
	    ARRAY_LEN(del_headers), &b) == SIGN_OK, "second shared key string builds");
	str_is(&b, "DELETE\n\n\n\n\n\n\n\nW/\"0x1\"\n\n\n\n"
	    "x-ms-date:Wed, 02 Dec 2026 14:00:00 GMT\nx-ms-if-tags:\"state\" = 'pending'\n"
	    "x-ms-version:2025-11-05\n/acct/c1/x\na:1,2\ninclude:tags,metadata\n"
	    "restype:container",
	    "Content-Length 0 signs empty; repeated names merge with sorted values");
	buf_reset(&b);
	tap_ok(sign_shared_key(key.ptr ? (unsigned char *)key.ptr : NULL, key.len,
	    "DELETE", "acct", "/c1/x",
	    "restype=container&a=2&include=tags%2Cmetadata&A=1", del_headers,
	    ARRAY_LEN(del_headers), &b) == SIGN_OK, "second shared key signs");
	str_is(&b, "SharedKey acct:rRvn8QujUi1phWOupWgn9ooI0fIAJLEaaqOhCjiZkxI=",
	    "second Authorization value pinned");

	buf_reset(&b);
	tap_ok(sign_shared_key_string("GET", "acct", "", NULL, NULL, 0, &b) == SIGN_OK,
	    "empty path signs as '/'");
	tap_ok(b.len > 7 && strcmp(b.ptr + b.len - 6, "/acct/") == 0, "resource is /acct/");
	buf_free(&b);
}

static void
test_service_sas(void)
{
	struct sas_service_fields f;
	struct buf b = BUF_INIT(8192);
	size_t i, lines = 1;

	memset(&f, 0, sizeof f);
	f.permissions = "r";
	f.start = "2026-12-02T13:55:00Z";
	f.expiry = "2026-12-02T15:00:00Z";
	f.protocol = "https,http";
	f.resource = "b";
	f.content_disposition = "attachment; filename=\"a b.txt\"";
	tap_ok(sas_service_string_to_sign(&f, "devstoreaccount1", "c1", "dir/a b.txt",
	    &b) == SIGN_OK, "service SAS string builds");
	str_is(&b, "r\n2026-12-02T13:55:00Z\n2026-12-02T15:00:00Z\n"
	    "/blob/devstoreaccount1/c1/dir/a b.txt\n\n\nhttps,http\n2025-11-05\nb\n"
	    "\n\n\nattachment; filename=\"a b.txt\"\n\n\n",
	    "service SAS string-to-sign pinned (names unencoded)");
	for (i = 0; i < b.len; i++)
		lines += b.ptr[i] == '\n';
	TAP_EQ_INT(lines, 16, "service SAS string-to-sign has 16 fields");
	buf_reset(&b);
	tap_ok(sas_sign_service((unsigned char *)key.ptr, key.len, "devstoreaccount1",
	    "c1", "dir/a b.txt", &f, &b) == SIGN_OK, "service SAS signs");
	str_is(&b, "sv=2025-11-05&st=2026-12-02T13%3A55%3A00Z&se=2026-12-02T15%3A00%3A00Z"
	    "&sr=b&sp=r&spr=https%2Chttp&rscd=attachment%3B%20filename%3D%22a%20b.txt%22"
	    "&sig=NM0WpXTkbDo%2B3UVG8xLogRAB6rWjKdsspWJ1d6UdKvk%3D",
	    "service SAS query string and signature pinned");

	buf_reset(&b);
	f.resource = "c";
	f.content_disposition = NULL;
	tap_ok(sas_service_string_to_sign(&f, "acct", "c1", "ignored", &b) == SIGN_OK &&
	    strstr(buf_cstr(&b), "\n/blob/acct/c1\n") != NULL,
	    "container SAS resource has no blob part");
	buf_reset(&b);
	f.expiry = NULL;
	tap_ok(sas_sign_service((unsigned char *)key.ptr, key.len, "acct", "c1", NULL,
	    &f, &b) == SIGN_BAD_INPUT, "service SAS without expiry is refused");
	buf_free(&b);
}

/* The user delegation SAS: the 2025-07-05 layout (26 fields), the key's
 * six fields in the query, and no stored access policy.  Azurite checks
 * the signature (tests/e2e/entra.sh); this pins the bytes. */
static void
test_user_delegation_sas(void)
{
	struct sas_service_fields f;
	struct sas_delegation_fields k = { "oid-1", "tid-2", "2026-12-06T00:00:00Z",
	    "2026-12-07T00:00:00Z", "b", "2026-06-06" };
	struct buf b = BUF_INIT(8192);
	size_t i, lines = 1;

	memset(&f, 0, sizeof f);
	f.permissions = "c";
	f.start = "2026-12-06T09:55:00Z";
	f.expiry = "2026-12-06T10:15:00Z";
	f.protocol = "https";
	f.resource = "b";
	f.content_type = "text/plain";
	tap_ok(sas_user_delegation_string_to_sign(&f, &k, "acct", "c1", "a b", &b) == SIGN_OK,
	    "user delegation SAS string builds");
	str_is(&b, "c\n2026-12-06T09:55:00Z\n2026-12-06T10:15:00Z\n/blob/acct/c1/a b\n"
	    "oid-1\ntid-2\n2026-12-06T00:00:00Z\n2026-12-07T00:00:00Z\nb\n2026-06-06\n"
	    "\n\n\n\n\n\nhttps\n2025-11-05\nb\n\n\n\n\n\n\ntext/plain",
	    "user delegation SAS string-to-sign pinned");
	for (i = 0; i < b.len; i++)
		lines += b.ptr[i] == '\n';
	TAP_EQ_INT(lines, 26, "user delegation SAS string-to-sign has 26 fields");
	buf_reset(&b);
	tap_ok(sas_sign_user_delegation((unsigned char *)key.ptr, key.len, "acct", "c1", "a b", &f, &k,
	    &b) == SIGN_OK, "user delegation SAS signs");
	tap_ok(strncmp(buf_cstr(&b), "sv=2025-11-05&st=2026-12-06T09%3A55%3A00Z&se=2026-12-06T10%3A15%3A00Z"
	    "&sr=b&sp=c&skoid=oid-1&sktid=tid-2&skt=2026-12-06T00%3A00%3A00Z&ske=2026-12-07T00%3A00%3A00Z"
	    "&sks=b&skv=2026-06-06&spr=https&rsct=text%2Fplain&sig=", strlen("sv=2025-11-05&st=2026-12-06T09"
	    "%3A55%3A00Z&se=2026-12-06T10%3A15%3A00Z&sr=b&sp=c&skoid=oid-1&sktid=tid-2&skt=2026-12-06T00"
	    "%3A00%3A00Z&ske=2026-12-07T00%3A00%3A00Z&sks=b&skv=2026-06-06&spr=https&rsct=text%2Fplain&sig="))
	    == 0, "... its query names the key (skoid, sktid, skt, ske, sks, skv)");
	buf_reset(&b);
	f.identifier = "policy";
	tap_ok(sas_sign_user_delegation((unsigned char *)key.ptr, key.len, "acct", "c1", "a b", &f, &k,
	    &b) == SIGN_BAD_INPUT, "a stored access policy cannot back a user delegation SAS");
	f.identifier = NULL;
	k.object_id = NULL;
	tap_ok(sas_sign_user_delegation((unsigned char *)key.ptr, key.len, "acct", "c1", "a b", &f, &k,
	    &b) == SIGN_BAD_INPUT, "a key without its object id is refused");
	buf_free(&b);
}

static void
test_account_sas(void)
{
	struct sas_account_fields f;
	struct buf b = BUF_INIT(8192);

	memset(&f, 0, sizeof f);
	f.permissions = "rwdlacup";
	f.services = "b";
	f.resource_types = "sco";
	f.expiry = "2026-12-02T15:00:00Z";
	f.protocol = "https";
	tap_ok(sas_account_string_to_sign(&f, "devstoreaccount1", &b) == SIGN_OK,
	    "account SAS string builds");
	str_is(&b, "devstoreaccount1\nrwdlacup\nb\nsco\n\n2026-12-02T15:00:00Z\n\nhttps\n"
	    "2025-11-05\n\n", "account SAS string-to-sign pinned");
	buf_reset(&b);
	tap_ok(buf_append_cstr(&b, "x=1") == BUF_OK &&
	    sas_sign_account((unsigned char *)key.ptr, key.len, "devstoreaccount1", &f,
	    &b) == SIGN_OK, "account SAS signs after existing text");
	str_is(&b, "x=1&sv=2025-11-05&ss=b&srt=sco&sp=rwdlacup&se=2026-12-02T15%3A00%3A00Z"
	    "&spr=https&sig=y4%2F88NjWA4SEfiB0BUsQ8Xzn8nLKw3jT4DeAD88eGb8%3D",
	    "account SAS query string and signature pinned");
	buf_free(&b);
}

static void
test_times(void)
{
	char a[32], b[24];

	sign_time_rfc1123((time_t)1796220000, a);
	sign_time_iso8601((time_t)1796220000, b);
	tap_ok(strcmp(a, "Wed, 02 Dec 2026 14:00:00 GMT") == 0, "RFC 1123 date (%s)", a);
	tap_ok(strcmp(b, "2026-12-02T14:00:00Z") == 0, "ISO 8601 date (%s)", b);
}

int
main(void)
{
	if (sign_base64_decode(dev_key_b64, strlen(dev_key_b64), &key) != SIGN_OK)
		tap_bail("cannot decode the development key");
	TAP_EQ_INT(key.len, 64, "development key decodes to 64 bytes");
	test_hmac_base64();
	test_percent();
	test_shared_key();
	test_service_sas();
	test_account_sas();
	test_user_delegation_sas();
	test_times();
	buf_free(&key);
	return tap_done();
}
