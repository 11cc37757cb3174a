/*
 * secret_cache.h - short-lived secrets (Entra ID access tokens, user
 * delegation keys) shared by the processes of one user through files.
 *
 * A FastCGI pool has several workers, mod_fcgid starts and stops them, a
 * CGI responder is one process per request and cron starts `bindery sweep`
 * every few minutes: a token kept only in memory would be fetched again by
 * each.  So a secret lives in DIR/<uid>/<name>, where:
 *
 *   - DIR/<uid> is a directory of the effective user's own, mode 0700 (made
 *     so when missing), reached without a symbolic link; DIR itself must not
 *     let another user replace that directory (owned by root or this user,
 *     and sticky if others may write it).  One directory per user: the admin
 *     running the CLI as root never writes the responder's files, nor reads
 *     them.
 *   - each file is mode 0600, written to a temporary name and renamed, so a
 *     reader sees a whole old secret or a whole new one;
 *   - a file carries its expiry, and a reader takes it only while it has at
 *     least the margin the caller asks for left.
 *
 * When the directory cannot be used, secret_cache_open says why and the
 * caller keeps its secrets in memory only (correct, just more fetches).
 * Nothing here logs a secret; the caller wipes what it reads.
 */
#ifndef BINDERY_SECRET_CACHE_H
#define BINDERY_SECRET_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/compat.h"

enum secret_cache_err {
	SECRET_CACHE_OK = 0,
	SECRET_CACHE_MISS,	/* no file, another user's, expired, or malformed */
	SECRET_CACHE_UNSAFE,	/* the directory is not this user's alone */
	SECRET_CACHE_IO,	/* a write or rename failed */
	SECRET_CACHE_NOMEM,
};

/* The longest secret a file may hold. */
#define SECRET_CACHE_MAX (64 * 1024)

struct secret_cache;

/* Open (and create, 0700, when missing) DIR/<euid>.  On failure *out is
 * NULL and why holds a sentence for the log. */
BINDERY_NODISCARD enum secret_cache_err secret_cache_open(const char *dir,
    struct secret_cache **out, char *why, size_t whylen);
void secret_cache_free(struct secret_cache *);
/* The directory in use (DIR/<uid>), for reports. */
const char *secret_cache_path(const struct secret_cache *);

/* The file name for a secret identified by the parts (each part is
 * separated so "ab","c" and "a","bc" differ): hex SHA-256 and suffix. */
void secret_cache_name(const char *const *parts, size_t n, const char *suffix,
    char out[80]);

/* Read name's secret into out (reset first) when it expires later than
 * now + margin; *expires receives its expiry.  Anything else is a MISS. */
BINDERY_NODISCARD enum secret_cache_err secret_cache_get(struct secret_cache *,
    const char *name, int64_t now, int64_t margin, struct buf *out,
    int64_t *expires);
/* Store data[len] under name until expires, replacing the old file whole. */
BINDERY_NODISCARD enum secret_cache_err secret_cache_put(struct secret_cache *,
    const char *name, const void *data, size_t len, int64_t expires);

#endif
