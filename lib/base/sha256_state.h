/*
 * sha256_state.h - a running SHA-256 (nettle's struct sha256_ctx) as text,
 * so a tus upload's hash survives between PATCHes in a MariaDB column
 * (doc/design.md "Resumable uploads").
 *
 * The text is versioned ASCII that fits VARCHAR(300) CHARACTER SET ascii:
 *
 *   s1:<state>:<count>:<index>:<buffered>
 *
 * state is the eight 32-bit words, each as 8 lower-case hex digits (big
 * endian); count the 64-bit count of compressed blocks as 16 hex digits;
 * index the buffered byte count (0..63) as 2 hex digits; buffered exactly
 * those index bytes, 2 hex digits each.  Loading is strict: what it accepts
 * is exactly what sha256_state_save() writes, so a damaged or foreign row
 * is refused rather than turned into a wrong digest.
 */
#ifndef BINDERY_SHA256_STATE_H
#define BINDERY_SHA256_STATE_H

#include <stddef.h>

#include <nettle/sha2.h>

#include "base/buf.h"
#include "base/compat.h"

/* The longest text with its NUL: "s1:" 64 ":" 16 ":" 2 ":" 126, plus 1. */
#define SHA256_STATE_TEXT_MAX	215

/* Write ctx's text and a NUL to out[outlen].  Returns 0, or -1 when outlen
 * is too small (out then holds "" when outlen > 0). */
BINDERY_NODISCARD int sha256_state_save(const struct sha256_ctx *ctx,
    char *out, size_t outlen);

/* Restore *out from a text sha256_state_save() wrote.  Returns 0, or -1 for
 * anything else: another version, a field of the wrong length, upper-case
 * or non-hex digits, an index of 64 or more, a buffered part that does not
 * match the index, trailing bytes, or a count whose bit length would not
 * fit 64 bits.  *out is unchanged unless 0. */
BINDERY_NODISCARD int sha256_state_load(struct span text,
    struct sha256_ctx *out);

#endif
