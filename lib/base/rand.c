/* rand.c - see rand.h. */
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include "base/rand.h"

#define RAND_MAX_BYTES 64

int
rand_hex(char *out, size_t outlen, size_t nbytes)
{
	static const char digits[] = "0123456789abcdef";
	unsigned char rnd[RAND_MAX_BYTES];
	size_t i;

	if (nbytes > RAND_MAX_BYTES || outlen < 2 * nbytes + 1 ||
	    gnutls_rnd(GNUTLS_RND_NONCE, rnd, nbytes) != 0)
		return -1;
	for (i = 0; i < nbytes; i++) {
		out[2 * i] = digits[rnd[i] >> 4];
		out[2 * i + 1] = digits[rnd[i] & 15];
	}
	out[2 * nbytes] = '\0';
	return 0;
}
