/* secret_cache.c - see secret_cache.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <nettle/sha2.h>

#include "base/rand.h"
#include "storage/secret_cache.h"

/* The first line of every file: a format tag and the expiry. */
#define HEADER_TAG "bindery-secret 1 "

struct secret_cache {
	char *path;	/* DIR/<uid> */
	int dirfd;	/* held open: every file is opened relative to it */
	uid_t uid;
};

/* A directory that another user could replace or fill is not ours. */
static int
dir_is_private(const struct stat *st, uid_t uid)
{
	return S_ISDIR(st->st_mode) && st->st_uid == uid && (st->st_mode & 077) == 0;
}

/* DIR must not let another user swap DIR/<uid> out: owned by root or us,
 * and sticky when others may write it. */
static int
parent_is_safe(const struct stat *st, uid_t uid)
{
	if (!S_ISDIR(st->st_mode) || (st->st_uid != 0 && st->st_uid != uid))
		return 0;
	return (st->st_mode & 022) == 0 || (st->st_mode & S_ISVTX) != 0;
}

enum secret_cache_err
secret_cache_open(const char *dir, struct secret_cache **out, char *why, size_t whylen)
{
	struct secret_cache *c = NULL;
	struct buf path = BUF_INIT(4096);
	struct stat st;
	uid_t uid = geteuid();
	char uidname[16];
	int parentfd = -1, fd = -1;
	enum secret_cache_err e = SECRET_CACHE_UNSAFE;

	*out = NULL;
	if (dir == NULL || dir[0] != '/') {
		snprintf(why, whylen, "the cache directory must be an absolute path");
		goto out;
	}
	parentfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (parentfd < 0 && errno == ENOENT && mkdir(dir, 01733) == 0) {
		/* mkdir applies the umask; the sticky, others-may-enter mode is
		 * what lets each user make a directory of its own here. */
		(void)chmod(dir, 01733);
		parentfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (parentfd < 0) {
		snprintf(why, whylen, "cannot open %s: %s", dir, strerror(errno));
		goto out;
	}
	if (fstat(parentfd, &st) != 0 || !parent_is_safe(&st, uid)) {
		snprintf(why, whylen, "%s may let another user replace what is in it "
		    "(it must be owned by root or uid %u, and sticky when others may write it)",
		    dir, (unsigned)uid);
		goto out;
	}
	snprintf(uidname, sizeof uidname, "%u", (unsigned)uid);
	if (buf_appendf(&path, "%s/%s", dir, uidname) != BUF_OK) {
		e = SECRET_CACHE_NOMEM;
		snprintf(why, whylen, "out of memory");
		goto out;
	}
	if (mkdirat(parentfd, uidname, 0700) != 0 && errno != EEXIST) {
		snprintf(why, whylen, "cannot make %s: %s", buf_cstr(&path), strerror(errno));
		goto out;
	}
	fd = openat(parentfd, uidname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0 || !dir_is_private(&st, uid)) {
		snprintf(why, whylen, "%s is not a directory of uid %u alone (mode 0700, no link)",
		    buf_cstr(&path), (unsigned)uid);
		goto out;
	}
	c = calloc(1, sizeof *c);
	if (c == NULL) {
		e = SECRET_CACHE_NOMEM;
		snprintf(why, whylen, "out of memory");
		goto out;
	}
	c->path = buf_take(&path);
	c->dirfd = fd;
	c->uid = uid;
	fd = -1;
	*out = c;
	e = SECRET_CACHE_OK;
out:
	if (fd >= 0)
		close(fd);
	if (parentfd >= 0)
		close(parentfd);
	buf_free(&path);
	return e;
}

void
secret_cache_free(struct secret_cache *c)
{
	if (c == NULL)
		return;
	close(c->dirfd);
	free(c->path);
	free(c);
}

const char *
secret_cache_path(const struct secret_cache *c)
{
	return c->path;
}

void
secret_cache_name(const char *const *parts, size_t n, const char *suffix, char out[80])
{
	struct sha256_ctx h;
	unsigned char d[SHA256_DIGEST_SIZE];
	size_t i;

	sha256_init(&h);
	for (i = 0; i < n; i++) {
		const char *p = parts[i] ? parts[i] : "";

		/* The NUL separates the parts. */
		sha256_update(&h, strlen(p) + 1, (const uint8_t *)p);
	}
	sha256_digest(&h, sizeof d, d);
	/* 32 hex characters name a secret well enough. */
	hex_lower(d, 16, out);
	snprintf(out + 32, 80 - 32, "%s", suffix ? suffix : "");
}

enum secret_cache_err
secret_cache_get(struct secret_cache *c, const char *name, int64_t now, int64_t margin,
    struct buf *out, int64_t *expires)
{
	struct stat st;
	char *data = NULL, *nl, *end;
	ssize_t got;
	size_t len = 0, hl = sizeof HEADER_TAG - 1;
	long long exp;
	int fd;
	enum secret_cache_err e = SECRET_CACHE_MISS;

	buf_reset(out);
	*expires = 0;
	fd = openat(c->dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		goto out;
	/* Only a regular file of ours that nobody else can read or write. */
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != c->uid ||
	    (st.st_mode & 077) != 0 || st.st_size <= 0 || st.st_size > SECRET_CACHE_MAX + 64)
		goto out;
	data = malloc((size_t)st.st_size + 1);
	if (data == NULL) {
		e = SECRET_CACHE_NOMEM;
		goto out;
	}
	while (len < (size_t)st.st_size &&
	    (got = read(fd, data + len, (size_t)st.st_size - len)) > 0)
		len += (size_t)got;
	data[len] = '\0';
	nl = memchr(data, '\n', len);
	if (nl == NULL || len < hl || memcmp(data, HEADER_TAG, hl) != 0)
		goto out;
	errno = 0;
	exp = strtoll(data + hl, &end, 10);
	if (errno != 0 || end != nl || exp <= 0)
		goto out;
	if ((int64_t)exp <= now + margin)
		goto out;
	if (buf_append(out, nl + 1, len - (size_t)(nl + 1 - data)) != BUF_OK) {
		e = SECRET_CACHE_NOMEM;
		goto out;
	}
	*expires = (int64_t)exp;
	e = SECRET_CACHE_OK;
out:
	if (data != NULL) {
		explicit_bzero(data, len);
		free(data);
	}
	if (fd >= 0)
		close(fd);
	return e;
}

enum secret_cache_err
secret_cache_put(struct secret_cache *c, const char *name, const void *data, size_t len,
    int64_t expires)
{
	char tmp[128], rnd[17], head[48];
	size_t hlen, done = 0;
	ssize_t w;
	int fd = -1, made = 0;
	enum secret_cache_err e = SECRET_CACHE_IO;

	if (len > SECRET_CACHE_MAX || rand_hex(rnd, sizeof rnd, 8) != 0)
		goto out;
	snprintf(tmp, sizeof tmp, ".%s.%s", rnd, name);
	hlen = (size_t)snprintf(head, sizeof head, "%s%" PRId64 "\n", HEADER_TAG, expires);
	fd = openat(c->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		goto out;
	made = 1;
	if (write(fd, head, hlen) != (ssize_t)hlen)
		goto out;
	while (done < len) {
		w = write(fd, (const char *)data + done, len - done);
		if (w <= 0)
			goto out;
		done += (size_t)w;
	}
	if (close(fd) != 0) {
		fd = -1;
		goto out;
	}
	fd = -1;
	if (renameat(c->dirfd, tmp, c->dirfd, name) != 0)
		goto out;
	made = 0;
	e = SECRET_CACHE_OK;
out:
	if (fd >= 0)
		close(fd);
	if (made)
		(void)unlinkat(c->dirfd, tmp, 0);
	return e;
}
