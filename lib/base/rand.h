/*
 * rand.h - unguessable identifiers from GnuTLS's nonce generator: blob names,
 * request ids, probe names.  Not for keys.
 */
#ifndef BINDERY_RAND_H
#define BINDERY_RAND_H

#include <stddef.h>

#include "base/compat.h"

/* Write 2 * nbytes lower-case hex digits and a NUL to out; 0, or -1 when the
 * generator failed or out is too small. */
BINDERY_NODISCARD int rand_hex(char *out, size_t outlen, size_t nbytes);

#endif
