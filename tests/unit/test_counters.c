/* Unit tests for counters.c: the shared file is made whole, adds from
 * several processes at once sum exactly (through one mapping inherited by
 * fork and through mappings each process made itself, racing to create
 * the file), the counts outlive a process, and a file of another layout
 * is refused and left as it was. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/counters.h"
#include "tap.h"

#define CHILDREN 4
#define ADDS 20000

static char dir[] = "/tmp/bindery-counters-XXXXXX";

static void
path_in_dir(char *out, size_t outlen, const char *name)
{
	snprintf(out, outlen, "%s/%s", dir, name);
}

/* Fork CHILDREN processes that each add ADDS times; when reopen is set,
 * each maps path itself first (all at once, so they race to create it).
 * Returns how many children exited 0. */
static int
fork_adders(const char *path, int reopen)
{
	char err[512];
	int i, ok = 0, status;
	pid_t pid;

	for (i = 0; i < CHILDREN; i++) {
		pid = fork();
		if (pid == 0) {
			int j;

			if (reopen && counters_open(path, err, sizeof err) != COUNTERS_OK) {
				fprintf(stderr, "child: %s\n", err);
				_exit(1);
			}
			for (j = 0; j < ADDS; j++) {
				counters_add(COUNTER_BYTES_IN, 3);
				counters_add_request(5, 201);
			}
			_exit(0);
		}
	}
	while (wait(&status) > 0)
		ok += WIFEXITED(status) && WEXITSTATUS(status) == 0;
	return ok;
}

static void
test_detached(void)
{
	counters_close();
	counters_add(COUNTER_DOCUMENTS_CREATED, 1);
	counters_add_request(1, 200);
	tap_ok(!counters_attached() && counters_get(COUNTER_DOCUMENTS_CREATED) == 0 &&
	       counters_get_request(1, 200) == 0 && counters_created() == 0,
	       "nothing attached: adds are no-ops, reads are 0");
}

static void
test_shared(void)
{
	char path[256], err[512];
	struct stat st;

	path_in_dir(path, sizeof path, "counters");
	tap_ok(counters_open(path, err, sizeof err) == COUNTERS_OK, "a missing file is created: %s", err);
	tap_ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0660, "... mode 0660");
	tap_ok(counters_created() > 0 && counters_get(COUNTER_BYTES_IN) == 0, "... every counter 0");
	counters_add(COUNTER_DOCUMENTS_CREATED, 2);
	counters_add_request(3, 404);
	counters_add_request(3, 42);	/* no such code: counted as 0 */
	counters_add_request(3, 600);
	TAP_EQ_INT(counters_get(COUNTER_DOCUMENTS_CREATED), 2, "an add is read back");
	TAP_EQ_INT(counters_get_request(3, 404), 1, "a request slot is read back");
	TAP_EQ_INT(counters_get_request(3, 0), 2, "codes outside 100-599 count as 0");

	tap_ok(fork_adders(path, 0) == CHILDREN, "%d children added through the inherited mapping", CHILDREN);
	TAP_EQ_INT(counters_get(COUNTER_BYTES_IN), (uint64_t)CHILDREN * ADDS * 3,
		   "their concurrent adds sum exactly");
	TAP_EQ_INT(counters_get_request(5, 201), (uint64_t)CHILDREN * ADDS, "... in the request table too");

	tap_ok(fork_adders(path, 1) == CHILDREN, "%d children mapped the file themselves", CHILDREN);
	TAP_EQ_INT(counters_get(COUNTER_BYTES_IN), (uint64_t)CHILDREN * ADDS * 3 * 2,
		   "the parent sees their adds too");

	counters_close();
	tap_ok(counters_open(path, err, sizeof err) == COUNTERS_OK &&
	       counters_get(COUNTER_DOCUMENTS_CREATED) == 2 &&
	       counters_get_request(5, 201) == (uint64_t)CHILDREN * ADDS * 2,
	       "closed and opened again (a restarted worker): the counts are still there");
	counters_close();
}

/* Processes that find no file all at once: one creates it, all count in it. */
static void
test_create_race(void)
{
	char path[256], err[512];

	path_in_dir(path, sizeof path, "raced");
	tap_ok(fork_adders(path, 1) == CHILDREN, "%d children raced to create a file", CHILDREN);
	tap_ok(counters_open(path, err, sizeof err) == COUNTERS_OK, "... it opens: %s", err);
	TAP_EQ_INT(counters_get(COUNTER_BYTES_IN), (uint64_t)CHILDREN * ADDS * 3,
		   "... and holds every child's adds: one file, nobody's lost");
	counters_close();
}

/* Read a whole small file into out; its length, -1 on error. */
static long
slurp(const char *path, char *out, size_t outlen)
{
	FILE *f = fopen(path, "rb");
	size_t n;

	if (f == NULL)
		return -1;
	n = fread(out, 1, outlen, f);
	fclose(f);
	return (long)n;
}

static void
test_mismatch(void)
{
	char path[256], err[512], before[4096], after[4096];
	long nb, na;
	int fd;

	/* Another layout's size: refused, untouched. */
	path_in_dir(path, sizeof path, "short");
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0660);
	tap_ok(fd >= 0 && write(fd, "bindctr\nsomething else", 22) == 22, "a file of another size");
	close(fd);
	nb = slurp(path, before, sizeof before);
	tap_ok(counters_open(path, err, sizeof err) == COUNTERS_MISMATCH && !counters_attached(),
	       "... is refused: %s", err);
	tap_ok(strstr(err, path) != NULL && strstr(err, "remove it") != NULL, "... the message names it"
	       " and says what to do");
	na = slurp(path, after, sizeof after);
	tap_ok(na == nb && memcmp(before, after, (size_t)nb) == 0, "... and it is left as it was");

	/* The right size, another version in the header. */
	path_in_dir(path, sizeof path, "counters");
	fd = open(path, O_WRONLY);
	tap_ok(fd >= 0 && pwrite(fd, "\x07\0\0\0", 4, 8) == 4, "the shared file's version changed to 7");
	close(fd);
	tap_ok(counters_open(path, err, sizeof err) == COUNTERS_MISMATCH && !counters_attached(),
	       "... is refused: %s", err);
	fd = open(path, O_RDONLY);
	tap_ok(fd >= 0 && pread(fd, after, 4, 8) == 4 && memcmp(after, "\x07\0\0\0", 4) == 0,
	       "... and not rewritten");
	close(fd);
}

int
main(void)
{
	char cmd[128];

	if (mkdtemp(dir) == NULL)
		tap_bail("mkdtemp failed");
	test_detached();
	test_shared();
	test_create_race();
	test_mismatch();
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		tap_diag("could not remove %s", dir);
	return tap_done();
}
