/* base64.c - see base64.h. */
#include <assert.h>
#include <stdint.h>

#include "base/base64.h"

static const char alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
/* RFC 4648 section 5: the same values, "-_" for "+/" (safe in URLs). */
static const char url_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* The value of one alphabet character, or -1 (padding included). */
static int
sextet(unsigned char ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	if (ch == '+')
		return 62;
	if (ch == '/')
		return 63;
	return -1;
}

size_t
base64_encoded_len(size_t n)
{
	return (n / 3 + (n % 3 != 0)) * 4;
}

/*
 * Encode p[n] with the 64 characters of abc; pad with '=' to a multiple of
 * four when pad is set.  Both encoders are this one loop, so the only
 * difference between base64 and base64url is the alphabet and the padding.
 */
static enum base64_err
encode_with(const char *abc, int pad, const void *p, size_t n, struct buf *out)
{
	const unsigned char *in = p;
	char quad[4];
	uint32_t v;
	size_t i, left, keep;

	if (n > ((size_t)-1) / 2 || buf_reserve(out, base64_encoded_len(n)) != BUF_OK)
		return BASE64_NOMEM;
	/* buf_reserve may have allocated without terminating: n may be 0. */
	out->ptr[out->len] = '\0';
	for (i = 0; i < n; i += 3) {
		left = n - i;
		v = (uint32_t)in[i] << 16;
		if (left > 1)
			v |= (uint32_t)in[i + 1] << 8;
		if (left > 2)
			v |= in[i + 2];
		quad[0] = abc[(v >> 18) & 63];
		quad[1] = abc[(v >> 12) & 63];
		quad[2] = left > 1 ? abc[(v >> 6) & 63] : '=';
		quad[3] = left > 2 ? abc[v & 63] : '=';
		/* Unpadded, a group of one byte is two characters, of two three. */
		keep = pad || left > 2 ? 4 : left + 1;
		if (buf_append(out, quad, keep) != BUF_OK)
			return BASE64_NOMEM;
	}
	return BASE64_OK;
}

enum base64_err
base64_encode(const void *p, size_t n, struct buf *out)
{
	return encode_with(alphabet, 1, p, n, out);
}

enum base64_err
base64url_encode(const void *p, size_t n, struct buf *out)
{
	return encode_with(url_alphabet, 0, p, n, out);
}

/*
 * Decode one group of four characters into three bytes; *nbytes gets how
 * many of them are real (3, or 2 or 1 before padding).  Padding is only
 * allowed when last is set, and the bits it leaves over must be zero.
 */
static enum base64_err
decode_quad(const char *q, int last, unsigned char b[3], size_t *nbytes)
{
	int v[4], i, pad = 0;
	uint32_t w;

	if (last && q[3] == '=')
		pad = q[2] == '=' ? 2 : 1;
	for (i = 0; i < 4 - pad; i++)
		if ((v[i] = sextet((unsigned char)q[i])) < 0)
			return BASE64_BAD;
	for (; i < 4; i++)
		v[i] = 0;
	w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 |
	    (uint32_t)v[3];
	if ((pad == 1 && (w & 0xff) != 0) || (pad == 2 && (w & 0xffff) != 0))
		return BASE64_BAD;
	b[0] = (unsigned char)(w >> 16);
	b[1] = (unsigned char)(w >> 8);
	b[2] = (unsigned char)w;
	*nbytes = 3 - (size_t)pad;
	return BASE64_OK;
}

enum base64_err
base64_decode_into(struct span text, unsigned char *out, size_t outsize,
    size_t *outlen)
{
	unsigned char b[3];
	size_t i, j, nb, len = 0;
	enum base64_err e;

	assert(outlen != NULL && (out != NULL || outsize == 0));
	*outlen = 0;
	if (text.len % 4 != 0)
		return BASE64_BAD;
	for (i = 0; i < text.len; i += 4) {
		e = decode_quad(text.ptr + i, i + 4 == text.len, b, &nb);
		if (e != BASE64_OK)
			return e;
		if (nb > outsize - len)
			return BASE64_TOO_LONG;
		for (j = 0; j < nb; j++)
			out[len++] = b[j];
	}
	*outlen = len;
	return BASE64_OK;
}

enum base64_err
base64_decode(struct span text, struct buf *out)
{
	size_t room = text.len / 4 * 3, got;
	enum base64_err e;

	if (text.len % 4 != 0)
		return BASE64_BAD;
	switch (buf_reserve(out, room)) {
	case BUF_OK:
		break;
	case BUF_TOO_LONG:
		return BASE64_TOO_LONG;
	default:
		return BASE64_NOMEM;
	}
	/* buf_reserve made room for room bytes and the terminator. */
	e = base64_decode_into(text, (unsigned char *)out->ptr + out->len, room,
	    &got);
	if (e == BASE64_OK)
		out->len += got;
	out->ptr[out->len] = '\0';
	return e;
}
