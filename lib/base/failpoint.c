/* failpoint.c - see failpoint.h.  Test builds only. */
#include "base/failpoint.h"

#ifdef BINDERY_FAILPOINTS
#include <sys/file.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"

static int
act(const char *name, const char *action)
{
	if (strcmp(action, "exit") == 0) {
		log_warn("failpoint %s: exiting", name);
		_exit(137);
	}
	if (strncmp(action, "sleep:", 6) == 0) {
		long ms = strtol(action + 6, NULL, 10);
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

		log_warn("failpoint %s: sleeping %ld ms", name, ms);
		nanosleep(&ts, NULL);
		return 0;
	}
	if (strcmp(action, "error") == 0) {
		log_warn("failpoint %s: injected error", name);
		return 1;
	}
	return 0;
}

static int
from_env(const char *name)
{
	const char *spec = getenv("BINDERY_FAILPOINTS");
	size_t n = strlen(name);
	char action[64];

	while (spec && *spec) {
		const char *end = strchr(spec, ',');
		size_t len = end ? (size_t)(end - spec) : strlen(spec);

		if (len > n + 1 && strncmp(spec, name, n) == 0 && spec[n] == '=') {
			size_t alen = len - n - 1;

			if (alen < sizeof action) {
				memcpy(action, spec + n + 1, alen);
				action[alen] = '\0';
				return act(name, action);
			}
		}
		spec = end ? end + 1 : NULL;
	}
	return 0;
}

/*
 * Two processes may hit one failpoint at once (two responders racing in a
 * test, each meant to take one of two "once" lines).  Reading the file and
 * writing it back without the line is one step under an exclusive lock on
 * PATH.lock, or both would drop the same line and leave the other armed.
 * A lock file that cannot be made (a directory the process may not write)
 * leaves the step unlocked, as it always was.
 */
static int
lock_file(const char *path)
{
	char lockpath[4096];
	int fd;

	if ((size_t)snprintf(lockpath, sizeof lockpath, "%s.lock", path) >= sizeof lockpath)
		return -1;
	fd = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	if (fd >= 0 && flock(fd, LOCK_EX) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static int
from_file(const char *name)
{
	const char *path = getenv("BINDERY_FAILPOINTS_FILE");
	char line[256], pname[128], action[64], once[16], hit_action[64];
	char rest[4096];
	size_t restlen = 0;
	int hit = 0, fired_once = 0, lock;
	FILE *fp;

	if (path == NULL)
		return 0;
	lock = lock_file(path);
	if ((fp = fopen(path, "r")) == NULL) {
		if (lock >= 0)
			close(lock);
		return 0;
	}
	rest[0] = '\0';
	while (fgets(line, sizeof line, fp)) {
		int n = sscanf(line, "%127s %63s %15s", pname, action, once);

		if (n >= 2 && strcmp(pname, name) == 0 && !hit) {
			/* Keep it: the next lines' sscanf overwrite action. */
			memcpy(hit_action, action, sizeof hit_action);
			hit = 1;
			if (n == 3 && strcmp(once, "once") == 0) {
				fired_once = 1;
				continue;
			}
		}
		if (restlen + strlen(line) < sizeof rest) {
			memcpy(rest + restlen, line, strlen(line) + 1);
			restlen += strlen(line);
		}
	}
	fclose(fp);
	if (hit && fired_once) {
		/* Disarm before acting: an exit must not fire again after restart. */
		char tmp[4096];
		FILE *out;

		if ((size_t)snprintf(tmp, sizeof tmp, "%s.%ld", path, (long)getpid()) < sizeof tmp &&
		    (out = fopen(tmp, "w")) != NULL) {
			fputs(rest, out);
			fclose(out);
			if (rename(tmp, path) != 0)
				unlink(tmp);
		}
	}
	if (lock >= 0)
		close(lock);	/* before acting: a sleep must not hold the others */
	return hit ? act(name, hit_action) : 0;
}

int
failpoint_hit(const char *name)
{
	return from_env(name) || from_file(name);
}

/* name=error in $BINDERY_FAILPOINTS, or a line "name error" in the file. */
int
failpoint_armed(const char *name)
{
	const char *spec = getenv("BINDERY_FAILPOINTS");
	const char *path = getenv("BINDERY_FAILPOINTS_FILE");
	char line[256], pname[128], action[64];
	size_t n = strlen(name);
	int armed = 0;
	FILE *fp;

	while (spec && *spec && !armed) {
		const char *end = strchr(spec, ',');
		size_t len = end ? (size_t)(end - spec) : strlen(spec);

		armed = len == n + 6 && strncmp(spec, name, n) == 0 && strncmp(spec + n, "=error", 6) == 0;
		spec = end ? end + 1 : NULL;
	}
	if (armed || path == NULL || (fp = fopen(path, "r")) == NULL)
		return armed;
	while (!armed && fgets(line, sizeof line, fp))
		armed = sscanf(line, "%127s %63s", pname, action) == 2 && strcmp(pname, name) == 0 &&
			strcmp(action, "error") == 0;
	fclose(fp);
	return armed;
}
#else
/* ISO C wants a translation unit to declare something. */
typedef int failpoint_unused_t;
#endif
