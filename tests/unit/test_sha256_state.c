/*
 * Unit tests for sha256_state.c: a hash saved and loaded at any point goes
 * on to the same digest as one uninterrupted hash (nettle's and GnuTLS's),
 * saving is deterministic, and every kind of damaged text is refused.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <gnutls/crypto.h>
#include <nettle/sha2.h>

#include "base/sha256_state.h"
#include "tap.h"

#define DATA_LEN	(300 * 1000)

static unsigned char data[DATA_LEN];
static unsigned char want[SHA256_DIGEST_SIZE];

/* A fixed xorshift stream: the same bytes on every run. */
static void
fill_data(void)
{
	uint64_t x = UINT64_C(0x9e3779b97f4a7c15);
	size_t i;

	for (i = 0; i < DATA_LEN; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		data[i] = (unsigned char)(x >> 24);
	}
}

/* Hash data[0..split), save, load into a fresh ctx, hash the rest; 1 when
 * the digest is want and save -> load -> save gives the same text. */
static int
split_ok(size_t split)
{
	struct sha256_ctx a, b;
	char text[SHA256_STATE_TEXT_MAX], again[SHA256_STATE_TEXT_MAX];
	unsigned char got[SHA256_DIGEST_SIZE];

	sha256_init(&a);
	sha256_update(&a, split, data);
	if (sha256_state_save(&a, text, sizeof text) != 0 ||
	    sha256_state_load(span_from_cstr(text), &b) != 0 ||
	    sha256_state_save(&b, again, sizeof again) != 0 ||
	    strcmp(text, again) != 0)
		return 0;
	sha256_update(&b, DATA_LEN - split, data + split);
	sha256_digest(&b, sizeof got, got);
	return memcmp(got, want, sizeof got) == 0;
}

static void
test_splits(void)
{
	static const size_t large[] = { 4096, 65535, 65536, 65599, 131072 + 17,
	    DATA_LEN - 64, DATA_LEN - 1, DATA_LEN };
	unsigned char gnutls_digest[SHA256_DIGEST_SIZE];
	struct sha256_ctx one;
	size_t split, first_bad = (size_t)-1, i;

	sha256_init(&one);
	sha256_update(&one, DATA_LEN, data);
	sha256_digest(&one, sizeof want, want);
	tap_ok(gnutls_hash_fast(GNUTLS_DIG_SHA256, data, DATA_LEN,
	    gnutls_digest) == 0 && memcmp(gnutls_digest, want, sizeof want) == 0,
	    "nettle's one-shot SHA-256 equals gnutls_hash_fast's");
	for (split = 0; split <= 200 && first_bad == (size_t)-1; split++)
		if (!split_ok(split))
			first_bad = split;
	tap_ok(first_bad == (size_t)-1, "every split 0..200 resumes to the same "
	    "digest, text stable (first failure: %zd)", (ssize_t)first_bad);
	for (i = 0; i < ARRAY_LEN(large); i++)
		tap_ok(split_ok(large[i]), "split at %zu resumes to the same digest",
		    large[i]);
}

/* The text of a hash over n bytes of data. */
static void
text_after(size_t n, char text[SHA256_STATE_TEXT_MAX])
{
	struct sha256_ctx c;

	sha256_init(&c);
	sha256_update(&c, n, data);
	if (sha256_state_save(&c, text, SHA256_STATE_TEXT_MAX) != 0)
		tap_bail("save failed after %zu bytes", n);
}

/* A state no test can reach by hashing: every field at full width. */
static void
test_wide_fields(void)
{
	struct sha256_ctx c, back;
	char text[SHA256_STATE_TEXT_MAX];
	unsigned i;

	memset(&c, 0, sizeof c);
	for (i = 0; i < 8; i++)
		c.state[i] = 0xfedcba98u - i;
	c.count = UINT64_C(0x0076543210fedcba);	/* below 2^55 */
	c.index = 63;
	for (i = 0; i < 63; i++)
		c.block[i] = (uint8_t)(0xff - i);
	tap_ok(sha256_state_save(&c, text, sizeof text) == 0 &&
	    sha256_state_load(span_from_cstr(text), &back) == 0 &&
	    memcmp(back.state, c.state, sizeof c.state) == 0 &&
	    back.count == c.count && back.index == 63 &&
	    memcmp(back.block, c.block, 63) == 0,
	    "32-bit words, a 55-bit count and 63 bytes survive save and load");
}

static void
test_sizes(void)
{
	char text[SHA256_STATE_TEXT_MAX];
	struct sha256_ctx c;

	text_after(63, text);
	tap_ok(strlen(text) == SHA256_STATE_TEXT_MAX - 1,
	    "63 buffered bytes make the longest text (%zu)", strlen(text));
	tap_ok(strncmp(text, "s1:", 3) == 0, "the text carries its version");
	sha256_init(&c);
	sha256_update(&c, 63, data);
	tap_ok(sha256_state_save(&c, text, SHA256_STATE_TEXT_MAX - 1) == -1 &&
	    text[0] == '\0', "save refuses a buffer one byte short");
	text_after(64, text);
	tap_ok(strlen(text) == SHA256_STATE_TEXT_MAX - 1 - 126,
	    "a full block leaves nothing buffered (%zu)", strlen(text));
}

/* Load a variant of good: replace len bytes at off with with. */
static int
load_edited(const char *good, size_t off, size_t len, const char *with)
{
	char edited[2 * SHA256_STATE_TEXT_MAX];
	struct sha256_ctx c;
	size_t n = strlen(good);

	memcpy(edited, good, off);
	memcpy(edited + off, with, strlen(with));
	memcpy(edited + off + strlen(with), good + off + len, n - off - len);
	n = n - len + strlen(with);
	return sha256_state_load((struct span){ edited, n }, &c);
}

/* good's fixed part with index n and n buffered bytes (all 0x5a): only
 * the index bound can refuse it. */
static int
load_index(const char *good, unsigned n)
{
	char text[SHA256_STATE_TEXT_MAX + 2 * 255];
	size_t fixed = 3 + 64 + 1 + 16 + 1, len = fixed, i;
	struct sha256_ctx c;

	memcpy(text, good, fixed);
	text[len++] = "0123456789abcdef"[n >> 4];
	text[len++] = "0123456789abcdef"[n & 15];
	text[len++] = ':';
	for (i = 0; i < n; i++) {
		text[len++] = '5';
		text[len++] = 'a';
	}
	return sha256_state_load((struct span){ text, len }, &c);
}

static void
test_refusals(void)
{
	char good[SHA256_STATE_TEXT_MAX];	/* 65 bytes: index 01 */
	char nul[SHA256_STATE_TEXT_MAX];
	size_t idx = 3 + 64 + 1 + 16 + 1;	/* where the index starts */
	struct sha256_ctx c;

	text_after(65, good);
	tap_ok(load_edited(good, 0, 0, "") == 0, "the unedited text loads");
	tap_ok(load_edited(good, 0, 3, "s2:") == -1, "another version refused");
	tap_ok(load_edited(good, 0, 3, "") == -1, "no version refused");
	tap_ok(load_edited(good, 3, 1, "") == -1, "a short state refused");
	tap_ok(load_edited(good, 3, 0, "0") == -1, "a long state refused");
	tap_ok(load_edited(good, 3, 1, "g") == -1, "a non-hex state digit refused");
	tap_ok(load_edited(good, 3, 1, "A") == -1, "upper-case hex refused");
	tap_ok(load_edited(good, 68, 1, ";") == -1, "a wrong separator refused");
	tap_ok(load_edited(good, 69, 1, "") == -1, "a short count refused");
	tap_ok(load_edited(good, 69, 1, "8") == -1,
	    "a count whose bit length overflows 64 bits refused");
	tap_ok(load_index(good, 64) == -1,
	    "index 64 refused, even with 64 buffered bytes");
	tap_ok(load_index(good, 255) == -1,
	    "index 255 refused, even with 255 buffered bytes");
	tap_ok(load_index(good, 63) == 0, "index 63 with 63 buffered bytes loads");
	tap_ok(load_edited(good, idx, 2, "02") == -1,
	    "an index longer than the buffered bytes refused");
	tap_ok(load_edited(good, idx, 2, "00") == -1,
	    "an index shorter than the buffered bytes refused (trailing bytes)");
	tap_ok(load_edited(good, strlen(good), 0, "0") == -1,
	    "a trailing byte refused");
	tap_ok(load_edited(good, strlen(good), 0, "\n") == -1,
	    "a trailing newline refused");
	tap_ok(load_edited(good, strlen(good) - 1, 1, "x") == -1,
	    "a non-hex buffered digit refused");
	memcpy(nul, good, sizeof nul);
	nul[3] = '\0';
	tap_ok(sha256_state_load((struct span){ nul, strlen(good) }, &c) == -1 &&
	    sha256_state_load((struct span){ good, 40 }, &c) == -1 &&
	    sha256_state_load(SPAN_LIT(""), &c) == -1,
	    "an embedded NUL, a cut text and an empty one refused");
}

int
main(void)
{
	fill_data();
	test_splits();
	test_wide_fields();
	test_sizes();
	test_refusals();
	return tap_done();
}
