/*
 * libFuzzer harness for tus_headers.c and the base64 and HTTP date code it
 * stands on.
 *
 * The first byte picks the parser (modulo 5); the rest is its input.  Beyond
 * "no crash, no UB, no leak", each accepted input must come back from its
 * own output: a number prints as the same digits, strict base64 and a
 * checksum re-encode to the same text, parsed metadata re-encoded and
 * re-parsed gives the same pairs in the same order, and a date matches
 * gmtime_r's fields (Tus-Resumable rides along with the date).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base64.h"
#include "base/http_date.h"
#include "parse/tus_headers.h"

static void
check(int cond)
{
	if (!cond)
		abort();
}

static void
fuzz_u64(struct span in)
{
	char back[32];
	uint64_t v;

	if (tus_parse_u64(in, &v) != TUS_OK)
		return;
	check(v <= (uint64_t)INT64_MAX);
	check(snprintf(back, sizeof back, "%" PRIu64, v) == (int)in.len);
	check(memcmp(back, in.ptr, in.len) == 0);
}

static void
fuzz_base64(struct span in)
{
	struct buf raw = BUF_INIT(in.len), text = BUF_INIT(in.len + 4);
	enum base64_err e = base64_decode(in, &raw);

	check(e == BASE64_OK || e == BASE64_BAD);
	if (e == BASE64_OK) {
		check(raw.len <= in.len / 4 * 3);
		check(base64_encode(raw.ptr, raw.len, &text) == BASE64_OK);
		check(span_eq(buf_span(&text), in));
	} else
		check(raw.len == 0);
	buf_free(&raw);
	buf_free(&text);
}

/* m as a header: "key base64,key base64,...", the canonical form. */
static void
metadata_encode(const struct tus_metadata *m, struct buf *out)
{
	struct span k, v;
	size_t i;

	for (i = 0; i < m->npairs; i++) {
		tus_metadata_pair(m, i, &k, &v);
		check(buf_append(out, ",", i > 0) == BUF_OK);
		check(buf_append_span(out, k) == BUF_OK);
		/* An empty value goes without its space, so the text is never
		 * longer than the one parsed and stays under the limit. */
		check(buf_append(out, " ", v.len > 0) == BUF_OK);
		check(base64_encode(v.ptr, v.len, out) == BASE64_OK);
	}
}

/* Every pair of a is in b, at the same place, with the same bytes. */
static void
metadata_same(const struct tus_metadata *a, const struct tus_metadata *b)
{
	struct span ka, va, kb, vb;
	size_t i;

	check(a->npairs == b->npairs);
	for (i = 0; i < a->npairs; i++) {
		tus_metadata_pair(a, i, &ka, &va);
		tus_metadata_pair(b, i, &kb, &vb);
		check(span_eq(ka, kb) && span_eq(va, vb));
	}
}

/* The promises of an accepted header: bounded, keys clean and unique,
 * values no longer than the text, every key found by get. */
static void
metadata_sane(const struct tus_metadata *m, struct span in)
{
	struct span k, v, k2, v2, got;
	size_t i, j, total = 0;

	check(m->npairs <= TUS_METADATA_MAX_PAIRS);
	for (i = 0; i < m->npairs; i++) {
		tus_metadata_pair(m, i, &k, &v);
		check(k.len > 0);
		for (j = 0; j < k.len; j++)
			check(k.ptr[j] > ' ' && k.ptr[j] < 0x7f && k.ptr[j] != ',');
		for (j = 0; j < i; j++) {
			tus_metadata_pair(m, j, &k2, &v2);
			check(!span_eq(k, k2));
		}
		total += k.len + v.len;
		/* get takes a C string: only a key without NUL (all are). */
		if (k.len < 64) {
			char key[64];

			memcpy(key, k.ptr, k.len);
			key[k.len] = '\0';
			check(tus_metadata_get(m, key, &got) == TUS_OK &&
			    span_eq(got, v));
		}
	}
	check(total <= in.len);
}

static void
fuzz_metadata(struct span in)
{
	struct tus_metadata m, again;
	struct buf text = BUF_INIT(4 * TUS_METADATA_MAX_LEN);
	enum tus_err e = tus_metadata_parse(in, &m);

	check(e == TUS_OK || e == TUS_BAD || e == TUS_TOO_LONG);
	if (in.len > TUS_METADATA_MAX_LEN)
		check(e == TUS_TOO_LONG);
	if (e == TUS_OK) {
		metadata_sane(&m, in);
		metadata_encode(&m, &text);
		check(tus_metadata_parse(buf_span(&text), &again) == TUS_OK);
		metadata_same(&m, &again);
		tus_metadata_free(&again);
	} else
		check(m.npairs == 0);
	tus_metadata_free(&m);
	buf_free(&text);
}

static void
fuzz_checksum(struct span in)
{
	enum tus_checksum_alg alg;
	unsigned char digest[32];
	size_t len = 0;
	struct buf text = BUF_INIT(128);
	enum tus_err e = tus_checksum_parse(in, &alg, digest, &len);

	check(e == TUS_OK || e == TUS_BAD || e == TUS_UNSUPPORTED);
	if (e == TUS_OK) {
		check(len == (alg == TUS_SHA1 ? 20u : 32u));
		check(buf_append_cstr(&text, alg == TUS_SHA1 ? "sha1 " :
		    "sha256 ") == BUF_OK);
		check(base64_encode(digest, len, &text) == BASE64_OK);
		check(span_eq(buf_span(&text), in));
	}
	buf_free(&text);
}

static void
fuzz_date(struct span in)
{
	static const char *mons[] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
	    "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
	char out[HTTP_DATE_SIZE], want[64];
	int64_t t = 0;
	time_t tt;
	struct tm tm;
	enum tus_err e;

	check(tus_resumable_ok(in) ==
	    (in.len == 5 && memcmp(in.ptr, "1.0.0", 5) == 0));
	memcpy(&t, in.ptr, in.len < sizeof t ? in.len : sizeof t);
	e = tus_http_date(t, out, sizeof out);
	check((e == TUS_OK) == (t >= 0 && t <= HTTP_DATE_MAX));
	if (e != TUS_OK) {
		check(out[0] == '\0');
		return;
	}
	tt = (time_t)t;
	check(gmtime_r(&tt, &tm) != NULL);
	snprintf(want, sizeof want, "%02d %s %04d %02d:%02d:%02d GMT", tm.tm_mday,
	    mons[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
	check(strlen(out) == HTTP_DATE_LEN && strcmp(out + 5, want) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct span in;

	if (size == 0)
		return 0;
	in = (struct span){ (const char *)data + 1, size - 1 };
	switch (data[0] % 5) {
	case 0:
		fuzz_u64(in);
		break;
	case 1:
		fuzz_base64(in);
		break;
	case 2:
		fuzz_metadata(in);
		break;
	case 3:
		fuzz_checksum(in);
		break;
	default:
		fuzz_date(in);
		break;
	}
	return 0;
}
