/* tus_headers.c - see tus_headers.h. */
#include <assert.h>
#include <string.h>

#include "base/base64.h"
#include "base/http_date.h"
#include "parse/tus_headers.h"

#define ALG_NAME_MAX	32

enum tus_err
tus_parse_u64(struct span s, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (s.len == 0 || (s.len > 1 && s.ptr[0] == '0'))
		return TUS_BAD;
	for (i = 0; i < s.len; i++) {
		unsigned d = (unsigned char)s.ptr[i] - (unsigned)'0';

		if (d > 9 || v > ((uint64_t)INT64_MAX - d) / 10)
			return TUS_BAD;
		v = v * 10 + d;
	}
	*out = v;
	return TUS_OK;
}

static int
is_ows(char ch)
{
	return ch == ' ' || ch == '\t';
}

/* A metadata key character: printable ASCII but space and ','. */
static int
is_key_char(char ch)
{
	return ch > ' ' && ch < 0x7f && ch != ',';
}

/* The standard base64 alphabet and its padding, for finding a value's end;
 * base64_decode judges the value itself. */
static int
is_base64_char(char ch)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
	    (ch >= '0' && ch <= '9') || ch == '+' || ch == '/' || ch == '=';
}

static enum tus_err
from_base64(enum base64_err e)
{
	switch (e) {
	case BASE64_OK:
		return TUS_OK;
	case BASE64_NOMEM:
		return TUS_NOMEM;
	default:
		return TUS_BAD;
	}
}

/* Whether m already holds key. */
static int
metadata_has(const struct tus_metadata *m, struct span key)
{
	struct span k, v;
	size_t i;

	for (i = 0; i < m->npairs; i++) {
		tus_metadata_pair(m, i, &k, &v);
		if (span_eq(k, key))
			return 1;
	}
	return 0;
}

/* Store one pair: the key as is, the value decoded. */
static enum tus_err
metadata_add(struct tus_metadata *m, struct span key, struct span value)
{
	size_t i = m->npairs;
	enum tus_err e;

	if (metadata_has(m, key))
		return TUS_BAD;
	if (i == TUS_METADATA_MAX_PAIRS)
		return TUS_TOO_LONG;
	m->pairs[i].key_off = m->store.len;
	m->pairs[i].key_len = key.len;
	/* The store's cap is the header's: keys and decoded values are never
	 * longer than their text. */
	if (buf_append_span(&m->store, key) != BUF_OK)
		return TUS_NOMEM;
	m->pairs[i].value_off = m->store.len;
	e = from_base64(base64_decode(value, &m->store));
	if (e != TUS_OK)
		return e;
	m->pairs[i].value_len = m->store.len - m->pairs[i].value_off;
	m->npairs++;
	return TUS_OK;
}

/*
 * Parse one pair at s[*pos]: OWS key [SP value] OWS, then ',' or the end.
 * *pos moves past the ',' (or to the end).
 */
static enum tus_err
metadata_pair(struct tus_metadata *m, struct span s, size_t *pos)
{
	size_t i = *pos, start;
	struct span key, value;

	while (i < s.len && is_ows(s.ptr[i]))
		i++;
	for (start = i; i < s.len && is_key_char(s.ptr[i]); i++)
		continue;
	key = (struct span){ s.ptr + start, i - start };
	if (key.len == 0)
		return TUS_BAD;
	if (i < s.len && s.ptr[i] == ' ')
		i++;
	for (start = i; i < s.len && is_base64_char(s.ptr[i]); i++)
		continue;
	value = (struct span){ s.ptr + start, i - start };
	while (i < s.len && is_ows(s.ptr[i]))
		i++;
	if (i < s.len && s.ptr[i] != ',')
		return TUS_BAD;
	/* A ',' must be followed by another pair: "a YQ==," is refused. */
	*pos = i < s.len ? i + 1 : i;
	if (i < s.len && *pos == s.len)
		return TUS_BAD;
	return metadata_add(m, key, value);
}

/* Only spaces and tabs: the header is there but names nothing. */
static int
all_ows(struct span s)
{
	size_t i;

	for (i = 0; i < s.len; i++)
		if (!is_ows(s.ptr[i]))
			return 0;
	return 1;
}

enum tus_err
tus_metadata_parse(struct span header, struct tus_metadata *out)
{
	size_t pos = 0;
	enum tus_err e;

	memset(out, 0, sizeof *out);
	buf_init(&out->store, TUS_METADATA_MAX_LEN);
	if (header.len > TUS_METADATA_MAX_LEN)
		return TUS_TOO_LONG;
	if (all_ows(header))
		return TUS_OK;
	while (pos < header.len) {
		e = metadata_pair(out, header, &pos);
		if (e != TUS_OK) {
			out->npairs = 0;
			return e;
		}
	}
	return TUS_OK;
}

void
tus_metadata_pair(const struct tus_metadata *m, size_t i, struct span *key,
    struct span *value)
{
	assert(i < m->npairs);
	key->ptr = m->store.ptr + m->pairs[i].key_off;
	key->len = m->pairs[i].key_len;
	value->ptr = m->store.ptr + m->pairs[i].value_off;
	value->len = m->pairs[i].value_len;
}

enum tus_err
tus_metadata_get(const struct tus_metadata *m, const char *key,
    struct span *value)
{
	struct span k, v;
	size_t i;

	for (i = 0; i < m->npairs; i++) {
		tus_metadata_pair(m, i, &k, &v);
		if (span_eq_cstr(k, key)) {
			*value = v;
			return TUS_OK;
		}
	}
	return TUS_BAD;
}

void
tus_metadata_free(struct tus_metadata *m)
{
	buf_free(&m->store);
	m->npairs = 0;
}

/* The algorithm name before the space: known, unknown, or not a name. */
static enum tus_err
checksum_alg(struct span name, enum tus_checksum_alg *alg)
{
	size_t i;

	if (name.len == 0 || name.len > ALG_NAME_MAX)
		return TUS_BAD;
	for (i = 0; i < name.len; i++) {
		char ch = name.ptr[i];

		if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
		    (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' ||
		    ch == '-'))
			return TUS_BAD;
	}
	if (span_eq_cstr(name, "sha1"))
		*alg = TUS_SHA1;
	else if (span_eq_cstr(name, "sha256"))
		*alg = TUS_SHA256;
	else
		return TUS_UNSUPPORTED;
	return TUS_OK;
}

enum tus_err
tus_checksum_parse(struct span header, enum tus_checksum_alg *alg,
    unsigned char digest[32], size_t *digest_len)
{
	const char *sp = header.len ? memchr(header.ptr, ' ', header.len) : NULL;
	struct span name, text;
	size_t want, got;
	enum tus_err e;

	if (sp == NULL)
		return TUS_BAD;
	name = (struct span){ header.ptr, (size_t)(sp - header.ptr) };
	text = (struct span){ sp + 1, header.len - name.len - 1 };
	if ((e = checksum_alg(name, alg)) != TUS_OK)
		return e;
	want = *alg == TUS_SHA1 ? 20 : 32;
	/* Exactly the padded length of want bytes, so no space or padding
	 * games and no longer text reaches the decoder. */
	if (text.len != base64_encoded_len(want) ||
	    base64_decode_into(text, digest, want, &got) != BASE64_OK ||
	    got != want)
		return TUS_BAD;
	*digest_len = got;
	return TUS_OK;
}

int
tus_resumable_ok(struct span v)
{
	return span_eq_cstr(v, "1.0.0");
}

enum tus_err
tus_http_date(int64_t unix_seconds, char *out, size_t outlen)
{
	if (outlen > 0)
		out[0] = '\0';
	if (unix_seconds < 0 || unix_seconds > HTTP_DATE_MAX)
		return TUS_BAD;
	if (outlen < HTTP_DATE_SIZE)
		return TUS_TOO_LONG;
	return http_date_format(unix_seconds, out, outlen) == 0 ? TUS_OK :
	    TUS_BAD;
}
