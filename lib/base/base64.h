/*
 * base64.h - strict standard base64 (RFC 4648 section 4, with padding).
 *
 * One codec for every base64 bindery reads or writes: tus metadata values
 * and checksums (hostile), the storage account key, Content-MD5 and block
 * ids.  Decoding is strict on purpose: the length is a multiple of four,
 * '=' appears only as one or two final padding characters, nothing outside
 * the standard alphabet (no whitespace, no URL-safe "-_"), and the bits the
 * padding leaves over are zero (RFC 4648 section 3.5).  So every accepted
 * text is the one base64_encode() would produce for its bytes.
 *
 * base64url (RFC 4648 section 5, without padding) is encoded only: a JWS
 * (RFC 7515 section 2) writes each part that way, and bindery never has to
 * read one.
 */
#ifndef BINDERY_BASE64_H
#define BINDERY_BASE64_H

#include <stddef.h>

#include "base/buf.h"
#include "base/compat.h"

enum base64_err {
	BASE64_OK = 0,
	BASE64_BAD,		/* not strict standard base64 */
	BASE64_TOO_LONG,	/* the output does not fit (outsize, buf cap) */
	BASE64_NOMEM,		/* an output buffer could not grow */
};

/* The number of characters base64_encode() writes for n bytes. */
size_t base64_encoded_len(size_t n);

/* Append the padded base64 text of p[n] to out. */
BINDERY_NODISCARD enum base64_err base64_encode(const void *p, size_t n,
    struct buf *out);

/* Append the base64url text of p[n] to out: "-_" in place of "+/" and no
 * '=' padding, so 3k bytes are 4k characters, 3k + 1 are 4k + 2 and 3k + 2
 * are 4k + 3. */
BINDERY_NODISCARD enum base64_err base64url_encode(const void *p, size_t n,
    struct buf *out);

/* Decode the text into out[outsize]; *outlen gets the byte count.  An empty
 * text decodes to zero bytes.  BASE64_TOO_LONG when the bytes do not fit;
 * out is then unspecified. */
BINDERY_NODISCARD enum base64_err base64_decode_into(struct span text,
    unsigned char *out, size_t outsize, size_t *outlen);

/* Append the bytes that text encodes to out (which may hold NUL bytes);
 * out is unchanged unless BASE64_OK. */
BINDERY_NODISCARD enum base64_err base64_decode(struct span text,
    struct buf *out);

#endif
