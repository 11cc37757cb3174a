/* sniff.c - see sniff.h. */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include <magic.h>

#include "autoconfig.h"
#include "base/log.h"
#include "protocol/sniff.h"

#define SNIFF_FLAGS (MAGIC_MIME_TYPE | MAGIC_ERROR | MAGIC_NO_CHECK_COMPRESS | MAGIC_NO_CHECK_ELF)

/* The one handle of the process, NULL until loaded; both only under the lock. */
static pthread_mutex_t sniff_lock = PTHREAD_MUTEX_INITIALIZER;
static magic_t sniff_magic;

/* The database list configure asked libmagic for, or NULL (a cross build:
 * libmagic's own search, which reads $MAGIC and ~/.magic.mgc too). */
static const char *
database_path(void)
{
#ifdef SNIFF_MAGIC_PATH
	return SNIFF_MAGIC_PATH[0] != '\0' ? SNIFF_MAGIC_PATH : NULL;
#else
	return NULL;
#endif
}

/*
 * Open and load with sniff_lock held.  A failure is logged and not
 * remembered: the next call tries again, so a host whose libmagic-mgc is
 * put back recovers without a restart.
 */
static enum sniff_err
open_locked(void)
{
	const char *path = database_path(), *why;
	magic_t m;

	if (sniff_magic != NULL)
		return SNIFF_OK;
	m = magic_open(SNIFF_FLAGS);
	if (m == NULL) {
		log_error("sniff: libmagic cannot start: %s", strerror(errno));
		return SNIFF_UNAVAILABLE;
	}
	if (magic_load(m, path) != 0) {
		why = magic_error(m);
		log_error("sniff: libmagic cannot load %s: %s", path ? path : "its database",
			  why ? why : "no reason given");
		magic_close(m);
		return SNIFF_UNAVAILABLE;
	}
	sniff_magic = m;
	return SNIFF_OK;
}

/* type/subtype in printable ASCII, one '/', no blanks, no parameters:
 * what MAGIC_MIME_TYPE promises, checked because it goes into headers. */
static int
is_bare_type(const char *s, size_t len)
{
	const char *slash = memchr(s, '/', len);
	size_t i;

	if (slash == NULL || slash == s || slash == s + len - 1 || len >= SNIFF_TYPE_MAX)
		return 0;
	for (i = 0; i < len; i++)
		if (s[i] <= ' ' || s[i] > '~' || s[i] == ';' || s[i] == ',' || s[i] == '"' ||
		    (s[i] == '/' && s + i != slash))
			return 0;
	return 1;
}

enum sniff_err
sniff_buffer(struct span head, char *type, size_t typelen)
{
	size_t n = head.len < SNIFF_BYTES ? head.len : SNIFF_BYTES, len, i;
	enum sniff_err rc;
	const char *r, *why;

	assert(typelen >= SNIFF_TYPE_MAX);
	type[0] = '\0';
	pthread_mutex_lock(&sniff_lock);
	rc = open_locked();
	if (rc != SNIFF_OK)
		goto out;
	/* r lives in the handle until its next call: copied under the lock. */
	r = magic_buffer(sniff_magic, n > 0 ? head.ptr : "", n);
	if (r == NULL) {
		why = magic_error(sniff_magic);
		log_warn("sniff: libmagic gave up on %zu bytes: %s", n, why ? why : "no reason given");
		rc = SNIFF_UNREADABLE;
		goto out;
	}
	len = strlen(r);
	if (!is_bare_type(r, len)) {
		log_warn("sniff: libmagic answered something that is no media type (%zu bytes)", len);
		rc = SNIFF_UNREADABLE;
		goto out;
	}
	/* Media type names are case-insensitive (RFC 6838 4.2); libmagic
	 * writes a few in capitals ("application/CDFV2"). */
	for (i = 0; i < len; i++)
		type[i] = r[i] >= 'A' && r[i] <= 'Z' ? (char)(r[i] - 'A' + 'a') : r[i];
	type[len] = '\0';
out:
	pthread_mutex_unlock(&sniff_lock);
	return rc;
}

enum sniff_err
sniff_prepare(void)
{
	enum sniff_err rc;

	pthread_mutex_lock(&sniff_lock);
	rc = open_locked();
	pthread_mutex_unlock(&sniff_lock);
	return rc;
}
