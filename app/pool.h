/*
 * pool.h - bindery.fcgi as a standing FastCGI pool of its own, for a web
 * server that connects to FastCGI rather than spawning it (Apache
 * mod_proxy_fcgi, lighttpd's "socket" without "bin-path"), as php-fpm runs.
 *
 * A master binds the socket (or takes the one systemd passes, LISTEN_FDS)
 * and forks workers that accept on it.  The master holds the configuration
 * and nothing else: no database or storage connection, no request, so no
 * worker's crash can take it down.  It respawns a worker that dies (at
 * once, unless the worker failed at start: then with a backoff, so a
 * database that refuses every worker is not hammered), replaces every
 * worker after SIGHUP with the configuration reloaded (one that does not
 * load leaves the running workers serving, logged), and on SIGTERM lets
 * the requests in flight finish within a bound, then exits.  A worker is
 * recycled after a number of requests, and exits when the master is gone.
 *
 * FastCGI carries no authentication: whoever connects sets REMOTE_USER and
 * every other parameter.  So a TCP listener must be on a loopback address,
 * and a unix socket is made 0660: for the owner and the web server's
 * group only.
 */
#ifndef BINDERY_POOL_H
#define BINDERY_POOL_H

#include "parse/config.h"

#define POOL_WORKERS_MAX 256
#define POOL_WORKERS_DEFAULT 4
#define POOL_DRAIN_DEFAULT_S 60

struct pool_options {
	const char *listen;		/* "unix:PATH" or "HOST:PORT" on a loopback
					 * address; NULL: the socket systemd passes */
	unsigned workers;		/* 1..POOL_WORKERS_MAX */
	unsigned max_requests;		/* a worker is replaced after this many; 0: never */
	unsigned drain_s;		/* SIGTERM: how long requests in flight may take */
	const char *config_path;	/* what SIGHUP reloads (NULL: the default) */
};

/*
 * A worker's life after fork: serve on listen_fd (FCGX_InitRequest with
 * POOL_ACCEPT_FLAGS) until pool_worker_idle() says stop, and return the
 * process's exit status.  cfg is the configuration the master loaded; the
 * worker owns its copy.
 */
typedef int (*pool_worker_fn)(struct bindery_config *cfg, int listen_fd, void *ctx);

/* FCGX_InitRequest's flags in a worker: an accept cut by SIGTERM returns. */
#define POOL_ACCEPT_FLAGS 1	/* FCGI_FAIL_ACCEPT_ON_INTR */

/*
 * Run the master until SIGTERM or SIGINT has drained the workers.  cfg is
 * loaded (the caller's; the pool owns it from here and frees it).  Returns
 * the process's exit status: 0 after a drain, 71 (EX_OSERR) when the
 * socket cannot be had, 78 (EX_CONFIG) for a listen address refused.
 * Logs why.
 */
int pool_run(const struct pool_options *o, struct bindery_config *cfg, pool_worker_fn fn, void *ctx);

/*
 * In a worker, before each accept: 0 to accept the next request, -1 to
 * stop (SIGTERM or SIGINT came, the master is gone, or max_requests were
 * served).  While accept waits, SIGTERM interrupts it.
 */
int pool_worker_idle(void);

/* In a worker, once a request is accepted: SIGTERM now waits until it is
 * answered and the worker is idle again. */
void pool_worker_busy(void);

#endif
