/*
 * tus_headers.h - the request headers of the tus 1.0.0 resumable upload
 * protocol (https://tus.io/protocols/resumable-upload), parsed strictly.
 *
 * Every input is hostile: nothing here allocates more than its input's
 * bounded size, and everything it accepts is exactly what the spec allows
 * (plus optional whitespace around metadata pairs, which clients send).
 * Pure: no I/O, no locale.  The server (app/tus.c) maps TUS_BAD and
 * TUS_TOO_LONG to 400, TUS_UNSUPPORTED on Upload-Checksum to 400 as the
 * checksum extension says, TUS_NOMEM to 500.
 */
#ifndef BINDERY_TUS_HEADERS_H
#define BINDERY_TUS_HEADERS_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/compat.h"

enum tus_err {
	TUS_OK = 0,
	TUS_BAD,		/* malformed, out of range, or absent (get) */
	TUS_UNSUPPORTED,	/* a checksum algorithm we do not offer */
	TUS_TOO_LONG,		/* header over its size limit, too many pairs */
	TUS_NOMEM,
};

/* Upload-Offset and Upload-Length: a non-negative decimal, digits only (no
 * sign, no whitespace, no leading zero but in "0"), at most INT64_MAX.
 * Anything else is TUS_BAD; *out is written only on TUS_OK. */
BINDERY_NODISCARD enum tus_err tus_parse_u64(struct span s, uint64_t *out);

/* Upload-Metadata limits: the header's bytes and the number of pairs. */
#define TUS_METADATA_MAX_LEN	8192
#define TUS_METADATA_MAX_PAIRS	32

/* Parsed Upload-Metadata: keys and decoded values live in store, located
 * by offsets (store may move while it grows). */
struct tus_metadata {
	struct buf store;
	size_t npairs;
	struct {
		size_t key_off, key_len;
		size_t value_off, value_len;
	} pairs[TUS_METADATA_MAX_PAIRS];
};

/*
 * Parse Upload-Metadata into *out, which the caller frees with
 * tus_metadata_free() whatever this returns.  Grammar (tus 1.0.0,
 * "Upload-Metadata"): pairs separated by ',', each a key, optionally one
 * space and a base64 value (standard alphabet, padded; no value means an
 * empty one).  A key is 1 or more printable ASCII characters other than
 * ',' (so no space or control), unique (compared exactly).  Spaces and tabs
 * may surround a pair.  An empty header has no pairs.  TUS_TOO_LONG: over
 * TUS_METADATA_MAX_LEN bytes or TUS_METADATA_MAX_PAIRS pairs.  Decoded
 * values are bytes and may hold NUL: the caller checks what it uses.
 */
BINDERY_NODISCARD enum tus_err tus_metadata_parse(struct span header,
    struct tus_metadata *out);
/* The decoded value of key (borrowed from m, valid until tus_metadata_free);
 * TUS_BAD when m has no such key. */
BINDERY_NODISCARD enum tus_err tus_metadata_get(const struct tus_metadata *m,
    const char *key, struct span *value);
/* Pair i (< m->npairs) in header order; both spans borrowed from m. */
void tus_metadata_pair(const struct tus_metadata *m, size_t i,
    struct span *key, struct span *value);
void tus_metadata_free(struct tus_metadata *m);

/* The algorithms of the checksum extension that bindery offers. */
enum tus_checksum_alg {
	TUS_SHA1,
	TUS_SHA256,
};
#define TUS_CHECKSUM_ALGORITHMS	"sha1,sha256"	/* Tus-Checksum-Algorithm */

/* Upload-Checksum: "<algorithm> <base64 digest>", one space between.  A
 * well-formed algorithm name (1 to 32 of [A-Za-z0-9._-]) other than exactly
 * "sha1" or "sha256" is TUS_UNSUPPORTED; a digest that is not padded standard base64 of exactly
 * 20 (sha1) or 32 (sha256) bytes, or any other shape, is TUS_BAD. */
BINDERY_NODISCARD enum tus_err tus_checksum_parse(struct span header,
    enum tus_checksum_alg *alg, unsigned char digest[32], size_t *digest_len);

/* Tus-Resumable: 1 when v is exactly "1.0.0", the one version we serve. */
int tus_resumable_ok(struct span v);

/* Upload-Expires: the RFC 7231 IMF-fixdate of unix_seconds into out[outlen]
 * with a NUL (base/http_date.h; HTTP_DATE_SIZE bytes are enough).  TUS_BAD
 * for a time before 1970 or after year 9999, TUS_TOO_LONG when outlen is
 * too small. */
BINDERY_NODISCARD enum tus_err tus_http_date(int64_t unix_seconds, char *out,
    size_t outlen);

#endif
