/* pool.c - see pool.h. */
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "base/clock.h"
#include "base/log.h"
#include "pool.h"
#include "protocol/services.h"

#define EX_OSERR_ 71
/* systemd's first passed descriptor (sd_listen_fds(3)). */
#define LISTEN_FDS_START 3
/* A worker that ends within this long of its start, having served nothing,
 * failed at start: it is respawned after a backoff, doubling to the cap. */
#define START_FAILURE_MS 1000
#define BACKOFF_FIRST_MS 500
#define BACKOFF_CAP_MS 30000
/* Old workers a reload or a drain may be waiting for, beyond the slots. */
#define RETIRING_MAX (2 * POOL_WORKERS_MAX)

/* ---- the worker's side ---------------------------------------------------- */

static volatile sig_atomic_t worker_stop;
static unsigned worker_max_requests;
static unsigned worker_served;
static volatile uint64_t *worker_counter;	/* the master's view of this worker */
static pid_t worker_master;

/*
 * A stop that lands between pool_worker_idle's check and accept(2) would
 * find the worker asleep in accept, where nothing else wakes it (a kept
 * connection's read likewise).  So the handler also arms a one-second
 * alarm, handled the same way: accept is interrupted until the loop sees
 * the flag.  SIGALRM waits with SIGTERM while a request is served.
 */
static void
on_worker_stop(int sig)
{
	(void)sig;
	worker_stop = 1;
	alarm(1);
}

static void
stop_signals(int how)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGALRM);
	sigprocmask(how, &set, NULL);
}

int
pool_worker_idle(void)
{
	/* A getppid() that changed means the master died before the kernel's
	 * PR_SET_PDEATHSIG could be asked for; either way, stop. */
	if ((worker_max_requests > 0 && worker_served >= worker_max_requests) || getppid() != worker_master)
		return -1;
	stop_signals(SIG_UNBLOCK);
	return worker_stop ? -1 : 0;
}

void
pool_worker_busy(void)
{
	stop_signals(SIG_BLOCK);
	worker_served++;
	if (worker_counter != NULL)
		(*worker_counter)++;
}

/* In the child, right after fork: its own signals, then the caller's loop. */
static void
worker_main(const struct pool_options *o, struct bindery_config *cfg, int listen_fd,
	    volatile uint64_t *counter, pid_t master, pool_worker_fn fn, void *ctx)
{
	struct sigaction sa;
	sigset_t none;

	worker_master = master;
	worker_max_requests = o->max_requests;
	worker_counter = counter;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_worker_stop;	/* no SA_RESTART: accept must return */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	signal(SIGHUP, SIG_IGN);
	signal(SIGCHLD, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != master)
		_exit(0);
	_exit(fn(cfg, listen_fd, ctx));
}

/* ---- the listening socket ------------------------------------------------- */

/* A unix socket at path, 0660.  A socket file no one answers on is a
 * leftover of a master that died: replaced.  One that answers is in use. */
static int
listen_unix(const char *path)
{
	struct sockaddr_un sun;
	struct stat st;
	mode_t old;
	int fd = -1, probe = -1, rc;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof sun.sun_path) {
		log_error("pool: the socket path %s is longer than %zu bytes", path, sizeof sun.sun_path - 1);
		return -1;
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			log_error("pool: %s exists and is not a socket", path);
			return -1;
		}
		probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		rc = probe >= 0 ? connect(probe, (struct sockaddr *)&sun, sizeof sun) : -1;
		if (probe >= 0)
			close(probe);
		if (rc == 0) {
			log_error("pool: %s is in use by another process", path);
			return -1;
		}
		if (unlink(path) != 0) {
			log_error("pool: cannot remove the stale socket %s: %s", path, strerror(errno));
			return -1;
		}
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) < 0) {
		log_error("pool: socket: %s", strerror(errno));
		return -1;
	}
	old = umask(0117);	/* rw for the owner and the group, nothing for others */
	rc = bind(fd, (struct sockaddr *)&sun, sizeof sun);
	umask(old);
	if (rc != 0 || chmod(path, 0660) != 0 || listen(fd, SOMAXCONN) != 0) {
		log_error("pool: cannot listen on %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static int
is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return 0;
}

/* HOST:PORT or [HOST]:PORT, every address of HOST a loopback one.  *refused
 * is set when the address is not allowed (a configuration error). */
static int
listen_tcp(const char *spec, int *refused)
{
	struct addrinfo hints, *ai = NULL, *a;
	char host[256], port[16];
	const char *colon = strrchr(spec, ':'), *h = spec;
	size_t hlen;
	int fd = -1, one = 1, rc;

	if (colon == NULL || colon == spec || colon[1] == '\0' || strlen(colon + 1) >= sizeof port) {
		log_error("pool: --listen %s: expected unix:PATH or HOST:PORT", spec);
		*refused = 1;
		return -1;
	}
	hlen = (size_t)(colon - spec);
	if (spec[0] == '[' && hlen >= 2 && spec[hlen - 1] == ']') {
		h = spec + 1;
		hlen -= 2;
	}
	if (hlen >= sizeof host) {
		*refused = 1;
		return -1;
	}
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	memcpy(port, colon + 1, strlen(colon + 1) + 1);
	memset(&hints, 0, sizeof hints);
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
	if ((rc = getaddrinfo(host, port, &hints, &ai)) != 0) {
		log_error("pool: --listen %s: %s", spec, gai_strerror(rc));
		*refused = 1;
		return -1;
	}
	for (a = ai; a != NULL; a = a->ai_next)
		if (!is_loopback(a->ai_addr)) {
			log_error("pool: --listen %s: not a loopback address; FastCGI carries no"
				  " authentication, so the pool listens on loopback or a unix socket only", spec);
			*refused = 1;
			goto out;
		}
	fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
		log_error("pool: cannot listen on %s: %s", spec, strerror(errno));
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
out:
	freeaddrinfo(ai);
	return fd;
}

/* systemd socket activation: the first descriptor passed, when it is ours. */
static int
listen_passed(void)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	struct stat st;
	char *end;
	long p, n, i;

	if (pid == NULL || fds == NULL)
		return -1;
	p = strtol(pid, &end, 10);
	if (*end != '\0' || p != (long)getpid())
		return -1;
	n = strtol(fds, &end, 10);
	if (*end != '\0' || n < 1 || n > 64)
		return -1;
	if (fstat(LISTEN_FDS_START, &st) != 0 || !S_ISSOCK(st.st_mode))
		return -1;
	/* One socket is served; any other passed would leak into every worker. */
	for (i = 1; i < n; i++)
		close(LISTEN_FDS_START + (int)i);
	/* Not for the workers: the variables name the master. */
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	return LISTEN_FDS_START;
}

/* ---- the master ----------------------------------------------------------- */

struct slot {
	pid_t pid;		/* 0: none running */
	int64_t started_ms;
	int64_t respawn_at_ms;	/* when pid is 0: not before this */
	unsigned backoff_ms;
	unsigned counter;	/* which of the slot's two counters this worker adds to */
};

struct master {
	const struct pool_options *o;
	struct bindery_config *cfg;	/* owned; what the next worker gets */
	pool_worker_fn fn;
	void *ctx;
	int listen_fd;
	struct slot slots[POOL_WORKERS_MAX];
	pid_t retiring[RETIRING_MAX];	/* told to stop; not respawned */
	volatile uint64_t *counters;	/* shared: two per slot, so an old worker
					 * finishing after a reload counts apart */
	int draining;
	int64_t drain_deadline_ms;
};

static void
spawn(struct master *m, unsigned i)
{
	struct slot *s = &m->slots[i];
	volatile uint64_t *counter = &m->counters[2 * i + s->counter];
	pid_t master = getpid(), pid;

	*counter = 0;
	pid = fork();
	if (pid == 0)
		worker_main(m->o, m->cfg, m->listen_fd, counter, master, m->fn, m->ctx);
	if (pid < 0) {
		log_error("pool: fork: %s", strerror(errno));
		s->respawn_at_ms = clock_now_ms() + BACKOFF_CAP_MS;
		return;
	}
	s->pid = pid;
	s->started_ms = clock_now_ms();
}

static void
retire(struct master *m, pid_t pid)
{
	unsigned i;

	kill(pid, SIGTERM);
	for (i = 0; i < RETIRING_MAX; i++)
		if (m->retiring[i] == 0) {
			m->retiring[i] = pid;
			return;
		}
	/* More old workers than ever expected: it is stopped all the same,
	 * only not waited for by name. */
	log_warn("pool: too many workers stopping at once; %ld not tracked", (long)pid);
}

/* A worker ended: respawn its slot at once, or after a backoff when it
 * failed at start (served nothing, lived less than START_FAILURE_MS). */
static void
reaped(struct master *m, pid_t pid, int status)
{
	int64_t now = clock_now_ms();
	unsigned i;

	for (i = 0; i < RETIRING_MAX; i++)
		if (m->retiring[i] == pid) {
			m->retiring[i] = 0;
			return;
		}
	for (i = 0; i < m->o->workers; i++) {
		struct slot *s = &m->slots[i];

		if (s->pid != pid)
			continue;
		s->pid = 0;
		if (m->draining)
			return;		/* told to stop: nothing to respawn or report */
		if (WIFSIGNALED(status))
			log_warn("pool: worker %ld killed by signal %d", (long)pid, WTERMSIG(status));
		else if (WEXITSTATUS(status) != 0)
			log_warn("pool: worker %ld exited with status %d", (long)pid, WEXITSTATUS(status));
		if (m->counters[2 * i + s->counter] == 0 && now - s->started_ms < START_FAILURE_MS) {
			s->backoff_ms = s->backoff_ms ? s->backoff_ms * 2 : BACKOFF_FIRST_MS;
			if (s->backoff_ms > BACKOFF_CAP_MS)
				s->backoff_ms = BACKOFF_CAP_MS;
			s->respawn_at_ms = now + s->backoff_ms;
			log_warn("pool: worker %ld failed at start; the next in %u ms", (long)pid, s->backoff_ms);
		} else {
			s->backoff_ms = 0;
			s->respawn_at_ms = now;
		}
		return;
	}
}

static unsigned
running(const struct master *m)
{
	unsigned i, n = 0;

	for (i = 0; i < m->o->workers; i++)
		n += m->slots[i].pid != 0;
	for (i = 0; i < RETIRING_MAX; i++)
		n += m->retiring[i] != 0;
	return n;
}

/* SIGHUP: a new generation of workers on the configuration as it now
 * reads; the old ones finish what they serve and exit. */
static void
reload(struct master *m)
{
	struct bindery_config *cfg = NULL;
	struct services *probe = NULL;
	char err[CONFIG_ERRORS_MAX], warn[512];
	unsigned i;

	if (config_load(m->o->config_path, &cfg, err, sizeof err, warn, sizeof warn) != 0 ||
	    services_open_responder(cfg, &probe, err, sizeof err) != 0) {
		/* services_open_responder connects to nothing: it checks the
		 * settings every worker would open with. */
		config_log_errors("pool: reload refused, the workers keep the configuration they have: ",
				  err);
		config_free(cfg);
		return;
	}
	services_free(probe);
	if (warn[0])
		log_warn("%s", warn);
	config_free(m->cfg);
	m->cfg = cfg;
	log_set_level(cfg->log_level);
	log_set_sink(cfg->log_sink);
	for (i = 0; i < m->o->workers; i++) {
		struct slot *s = &m->slots[i];

		if (s->pid != 0)
			retire(m, s->pid);
		s->pid = 0;
		s->counter ^= 1;
		s->backoff_ms = 0;
		spawn(m, i);
	}
	log_info("pool: configuration reloaded; %u new workers", m->o->workers);
}

static void
drain(struct master *m)
{
	unsigned i;

	if (m->draining)
		return;
	m->draining = 1;
	m->drain_deadline_ms = clock_now_ms() + (int64_t)m->o->drain_s * 1000;
	/* No new connections: the path goes now, the socket with the workers. */
	if (m->o->listen != NULL && strncmp(m->o->listen, "unix:", 5) == 0)
		unlink(m->o->listen + 5);
	close(m->listen_fd);
	for (i = 0; i < m->o->workers; i++)
		if (m->slots[i].pid != 0)
			kill(m->slots[i].pid, SIGTERM);
	for (i = 0; i < RETIRING_MAX; i++)
		if (m->retiring[i] != 0)
			kill(m->retiring[i], SIGTERM);
	log_info("pool: stopping; requests in flight have %u s", m->o->drain_s);
}

static void
kill_all(struct master *m)
{
	unsigned i;

	for (i = 0; i < m->o->workers; i++)
		if (m->slots[i].pid != 0)
			kill(m->slots[i].pid, SIGKILL);
	for (i = 0; i < RETIRING_MAX; i++)
		if (m->retiring[i] != 0)
			kill(m->retiring[i], SIGKILL);
	log_warn("pool: requests still in flight after %u s were cut", m->o->drain_s);
}

/* How long the master may sleep: until the next respawn or the drain's end. */
static int64_t
next_wake_ms(const struct master *m)
{
	int64_t now = clock_now_ms(), wake = now + 1000;
	unsigned i;

	if (m->draining)
		return m->drain_deadline_ms < wake ? m->drain_deadline_ms : wake;
	for (i = 0; i < m->o->workers; i++)
		if (m->slots[i].pid == 0 && m->slots[i].respawn_at_ms < wake)
			wake = m->slots[i].respawn_at_ms;
	return wake;
}

static int
open_listener(const struct pool_options *o, int *refused)
{
	int fd;

	if (o->listen == NULL) {
		if ((fd = listen_passed()) < 0) {
			log_error("pool: no --listen and no socket from systemd (LISTEN_FDS)");
			*refused = 1;
		}
		return fd;
	}
	if (strncmp(o->listen, "unix:", 5) == 0)
		return listen_unix(o->listen + 5);
	return listen_tcp(o->listen, refused);
}

int
pool_run(const struct pool_options *o, struct bindery_config *cfg, pool_worker_fn fn, void *ctx)
{
	struct master m;
	sigset_t set;
	siginfo_t info;
	struct timespec ts;
	int64_t wait_ms;
	int refused = 0, sig, status, rc = 0;
	unsigned i;
	pid_t pid;

	memset(&m, 0, sizeof m);
	m.o = o;
	m.cfg = cfg;
	m.fn = fn;
	m.ctx = ctx;
	m.counters = mmap(NULL, sizeof(uint64_t) * 2 * POOL_WORKERS_MAX, PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (m.counters == MAP_FAILED) {
		log_error("pool: mmap: %s", strerror(errno));
		config_free(cfg);
		return EX_OSERR_;
	}
	if ((m.listen_fd = open_listener(o, &refused)) < 0) {
		rc = refused ? CONFIG_EX_CONFIG : EX_OSERR_;
		goto out;
	}
	/* The master waits for signals rather than handling them: nothing it
	 * does can be interrupted half-way. */
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	for (i = 0; i < o->workers; i++)
		spawn(&m, i);
	log_info("pool: %u workers on %s", o->workers, o->listen ? o->listen : "the socket systemd passed");
	for (;;) {
		while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
			reaped(&m, pid, status);
		if (m.draining && running(&m) == 0)
			break;
		if (m.draining && clock_now_ms() >= m.drain_deadline_ms) {
			kill_all(&m);
			m.drain_deadline_ms = INT64_MAX;
		}
		for (i = 0; !m.draining && i < o->workers; i++)
			if (m.slots[i].pid == 0 && m.slots[i].respawn_at_ms <= clock_now_ms())
				spawn(&m, i);
		wait_ms = next_wake_ms(&m) - clock_now_ms();
		if (wait_ms < 0)
			wait_ms = 0;
		ts.tv_sec = (time_t)(wait_ms / 1000);
		ts.tv_nsec = (long)(wait_ms % 1000) * 1000000L;
		sig = sigtimedwait(&set, &info, &ts);
		if (sig == SIGTERM || sig == SIGINT)
			drain(&m);
		else if (sig == SIGHUP && !m.draining)
			reload(&m);
	}
	log_info("pool: stopped");
out:
	if (!m.draining && m.listen_fd >= 0) {
		close(m.listen_fd);
		if (o->listen != NULL && strncmp(o->listen, "unix:", 5) == 0)
			unlink(o->listen + 5);
	}
	munmap((void *)m.counters, sizeof(uint64_t) * 2 * POOL_WORKERS_MAX);
	config_free(m.cfg);
	return rc;
}
