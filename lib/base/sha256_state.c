/* sha256_state.c - see sha256_state.h. */
#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "base/sha256_state.h"

#define PREFIX		"s1:"
#define PREFIX_LEN	3
/* The fixed part: prefix, 64 state digits, ':', 16, ':', 2, ':'. */
#define FIXED_LEN	(PREFIX_LEN + 64 + 1 + 16 + 1 + 2 + 1)
/* Nettle counts bits as count << 9 | index << 3 in 64 bits. */
#define COUNT_LIMIT	(UINT64_C(1) << 55)

static const char hexdigits[] = "0123456789abcdef";

/* Append v as exactly ndigits lower-case hex digits (big endian) at *p. */
static void
put_hex(char **p, uint64_t v, int ndigits)
{
	int i;

	for (i = ndigits - 1; i >= 0; i--)
		*(*p)++ = hexdigits[(v >> (4 * i)) & 15];
}

int
sha256_state_save(const struct sha256_ctx *ctx, char *out, size_t outlen)
{
	char *p = out;
	unsigned i;

	assert(ctx->index < SHA256_BLOCK_SIZE);
	if (outlen > 0)
		out[0] = '\0';
	if (outlen < FIXED_LEN + 2 * (size_t)ctx->index + 1)
		return -1;
	memcpy(p, PREFIX, PREFIX_LEN);
	p += PREFIX_LEN;
	for (i = 0; i < _SHA256_DIGEST_LENGTH; i++)
		put_hex(&p, ctx->state[i], 8);
	*p++ = ':';
	put_hex(&p, ctx->count, 16);
	*p++ = ':';
	put_hex(&p, ctx->index, 2);
	*p++ = ':';
	for (i = 0; i < ctx->index; i++)
		put_hex(&p, ctx->block[i], 2);
	*p = '\0';
	return 0;
}

/* Read exactly ndigits lower-case hex digits from s into *v; -1 if any is
 * not one. */
static int
get_hex(const char *s, int ndigits, uint64_t *v)
{
	const char *d;
	int i;

	*v = 0;
	for (i = 0; i < ndigits; i++) {
		if (s[i] == '\0' || (d = strchr(hexdigits, s[i])) == NULL)
			return -1;
		*v = *v << 4 | (uint64_t)(d - hexdigits);
	}
	return 0;
}

/* The state words and the count from the fixed part, which the caller has
 * checked is long enough. */
static int
load_fixed(const char *s, struct sha256_ctx *c, uint64_t *index)
{
	uint64_t v;
	unsigned i;

	if (memcmp(s, PREFIX, PREFIX_LEN) != 0)
		return -1;
	s += PREFIX_LEN;
	for (i = 0; i < _SHA256_DIGEST_LENGTH; i++, s += 8) {
		if (get_hex(s, 8, &v) != 0)
			return -1;
		c->state[i] = (uint32_t)v;
	}
	if (*s++ != ':' || get_hex(s, 16, &c->count) != 0 ||
	    c->count >= COUNT_LIMIT)
		return -1;
	s += 16;
	if (*s++ != ':' || get_hex(s, 2, index) != 0 ||
	    *index >= SHA256_BLOCK_SIZE || s[2] != ':')
		return -1;
	return 0;
}

int
sha256_state_load(struct span text, struct sha256_ctx *out)
{
	struct sha256_ctx c;
	uint64_t index, v;
	size_t i;

	memset(&c, 0, sizeof c);
	if (text.len < FIXED_LEN || memchr(text.ptr, '\0', text.len) != NULL ||
	    load_fixed(text.ptr, &c, &index) != 0 ||
	    text.len != FIXED_LEN + 2 * index)
		return -1;
	for (i = 0; i < index; i++) {
		if (get_hex(text.ptr + FIXED_LEN + 2 * i, 2, &v) != 0)
			return -1;
		c.block[i] = (uint8_t)v;
	}
	c.index = (unsigned)index;
	*out = c;
	return 0;
}
