/* counters.c - see counters.h. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/counters.h"

#define COUNTERS_MAGIC "bindctr\n"	/* 8 bytes: `head -c8` tells what the file is */
#define COUNTERS_SLOTS (COUNTER_FIXED_COUNT + COUNTERS_ROUTES * COUNTERS_CODES)
#define COUNTERS_MODE 0660
#define COUNTERS_OPEN_TRIES 5

struct counters_header {
	char magic[8];
	uint32_t version;
	uint32_t header_size;
	uint64_t file_size;
	uint32_t fixed;
	uint32_t routes;
	uint32_t codes;
	uint32_t reserved;
	int64_t created;	/* Unix time */
};

#define COUNTERS_FILE_SIZE (sizeof(struct counters_header) + COUNTERS_SLOTS * sizeof(uint64_t))

static struct {
	void *map;
	struct counters_header *hdr;
	uint64_t *slot;
} attached;

/* The header this binary writes and expects. */
static void
header_expected(struct counters_header *h)
{
	memset(h, 0, sizeof *h);
	memcpy(h->magic, COUNTERS_MAGIC, sizeof h->magic);
	h->version = COUNTERS_LAYOUT_VERSION;
	h->header_size = (uint32_t)sizeof *h;
	h->file_size = COUNTERS_FILE_SIZE;
	h->fixed = COUNTER_FIXED_COUNT;
	h->routes = COUNTERS_ROUTES;
	h->codes = COUNTERS_CODES;
}

static enum counters_err
fail(enum counters_err e, char *err, size_t errlen, const char *path, const char *what, int errnum)
{
	if (errnum)
		snprintf(err, errlen, "counters file %s: %s: %s", path, what, strerror(errnum));
	else
		snprintf(err, errlen, "counters file %s: %s", path, what);
	return e;
}

/*
 * A new file, complete before it has its name: a process that opens path
 * never sees a half-written header.  EEXIST from link() means another
 * process got there first, which is as good.
 */
static enum counters_err
create_file(const char *path, char *err, size_t errlen)
{
	struct counters_header h;
	char tmp[4096], dir[4096];
	struct stat ds;
	const char *slash;
	enum counters_err rc = COUNTERS_SYSTEM;
	int fd = -1, n;

	n = snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
	slash = strrchr(path, '/');
	if (n < 0 || (size_t)n >= sizeof tmp)
		return fail(COUNTERS_SYSTEM, err, errlen, path, "path too long", 0);
	if (slash == NULL)
		n = snprintf(dir, sizeof dir, ".");
	else
		n = snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
	if (n < 0 || (size_t)n >= sizeof dir)
		return fail(COUNTERS_SYSTEM, err, errlen, path, "path too long", 0);
	if ((fd = mkstemp(tmp)) < 0)
		return fail(COUNTERS_SYSTEM, err, errlen, path, "cannot create it", errno);
	header_expected(&h);
	h.created = (int64_t)time(NULL);
	if (fchmod(fd, COUNTERS_MODE) != 0 || ftruncate(fd, (off_t)COUNTERS_FILE_SIZE) != 0 ||
	    pwrite(fd, &h, sizeof h, 0) != (ssize_t)sizeof h) {
		(void)fail(COUNTERS_SYSTEM, err, errlen, path, "cannot write a new one", errno);
		goto out;
	}
	/* Root (a `bindery sweep` from cron) makes it for the web server's
	 * user, who owns the directory. */
	if (geteuid() == 0 && stat(dir, &ds) == 0 && (ds.st_uid != 0 || ds.st_gid != 0) &&
	    fchown(fd, ds.st_uid, ds.st_gid) != 0) {
		(void)fail(COUNTERS_SYSTEM, err, errlen, path, "cannot hand it to the directory's owner", errno);
		goto out;
	}
	if (link(tmp, path) != 0 && errno != EEXIST) {
		(void)fail(COUNTERS_SYSTEM, err, errlen, path, "cannot create it", errno);
		goto out;
	}
	rc = COUNTERS_OK;
out:
	(void)unlink(tmp);
	close(fd);
	return rc;
}

enum counters_err
counters_open(const char *path, char *err, size_t errlen)
{
	struct counters_header want;
	enum counters_err rc;
	struct stat st;
	void *map = MAP_FAILED;
	int fd = -1, tries;

	counters_close();
	for (tries = 0; fd < 0 && tries < COUNTERS_OPEN_TRIES; tries++) {
		fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		if (fd >= 0)
			break;
		if (errno != ENOENT)
			return fail(COUNTERS_SYSTEM, err, errlen, path, "cannot open it", errno);
		if ((rc = create_file(path, err, errlen)) != COUNTERS_OK)
			return rc;
	}
	if (fd < 0)
		return fail(COUNTERS_SYSTEM, err, errlen, path, "removed as often as it was created", 0);
	rc = COUNTERS_MISMATCH;
	if (fstat(fd, &st) != 0) {
		rc = fail(COUNTERS_SYSTEM, err, errlen, path, "cannot stat it", errno);
		goto out;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != COUNTERS_FILE_SIZE) {
		snprintf(err, errlen, "counters file %s: %lld bytes, not the %llu of this bindery's layout %d:"
			 " another version made it (remove it to start the counters over)", path,
			 (long long)st.st_size, (unsigned long long)COUNTERS_FILE_SIZE, COUNTERS_LAYOUT_VERSION);
		goto out;
	}
	map = mmap(NULL, COUNTERS_FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		rc = fail(COUNTERS_SYSTEM, err, errlen, path, "cannot map it", errno);
		goto out;
	}
	header_expected(&want);
	want.created = ((struct counters_header *)map)->created;
	if (memcmp(map, &want, sizeof want) != 0) {
		snprintf(err, errlen, "counters file %s: its header is not this bindery's layout %d"
			 " (another version made it, or it is no counters file): remove it to start the"
			 " counters over", path, COUNTERS_LAYOUT_VERSION);
		goto out;
	}
	attached.map = map;
	attached.hdr = map;
	attached.slot = (uint64_t *)((char *)map + sizeof(struct counters_header));
	map = MAP_FAILED;
	rc = COUNTERS_OK;
out:
	if (map != MAP_FAILED)
		munmap(map, COUNTERS_FILE_SIZE);
	close(fd);	/* the mapping holds the file */
	return rc;
}

void
counters_close(void)
{
	if (attached.map != NULL)
		munmap(attached.map, COUNTERS_FILE_SIZE);
	memset(&attached, 0, sizeof attached);
}

int
counters_attached(void)
{
	return attached.map != NULL;
}

static size_t
request_slot(unsigned route, int code)
{
	assert(route < COUNTERS_ROUTES);
	if (code < 100 || code >= COUNTERS_CODES)
		code = 0;
	return COUNTER_FIXED_COUNT + (size_t)route * COUNTERS_CODES + (size_t)code;
}

void
counters_add(enum counter_id id, uint64_t n)
{
	assert((unsigned)id < COUNTER_FIXED_COUNT);
	if (attached.slot != NULL && n > 0)
		__atomic_fetch_add(&attached.slot[id], n, __ATOMIC_RELAXED);
}

void
counters_add_request(unsigned route, int code)
{
	size_t i = request_slot(route, code);

	if (attached.slot != NULL)
		__atomic_fetch_add(&attached.slot[i], 1, __ATOMIC_RELAXED);
}

uint64_t
counters_get(enum counter_id id)
{
	assert((unsigned)id < COUNTER_FIXED_COUNT);
	return attached.slot != NULL ? __atomic_load_n(&attached.slot[id], __ATOMIC_RELAXED) : 0;
}

uint64_t
counters_get_request(unsigned route, int code)
{
	size_t i = request_slot(route, code);

	return attached.slot != NULL ? __atomic_load_n(&attached.slot[i], __ATOMIC_RELAXED) : 0;
}

int64_t
counters_created(void)
{
	return attached.hdr != NULL ? attached.hdr->created : 0;
}
