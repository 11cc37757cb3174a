/*
 * body_pace.h - how long the responder may wait for a client's next body
 * bytes: slow clients must not pin workers.
 *
 * A request body is read at the client's pace: lighttpd streams it through
 * and a CGI program reads it from the server as it arrives.  Two bounds
 * keep a silent or trickling client from holding a worker (and, during an
 * upload, a MariaDB connection): no more than idle_ms without a byte, and,
 * once grace_ms have passed since the body began, an average of at least
 * min_rate bytes per second.  Pure: the caller measures time and bytes.
 */
#ifndef BINDERY_BODY_PACE_H
#define BINDERY_BODY_PACE_H

#include <stdint.h>

struct body_pace_limits {
	int64_t idle_ms;	/* longest silence; <= 0: no bounds at all */
	uint64_t min_rate;	/* bytes per second on average; 0: no minimum */
	int64_t grace_ms;	/* min_rate applies only after this long */
};

enum body_pace_verdict {
	BODY_PACE_WAIT,		/* wait up to *wait_ms for more bytes (-1: no limit) */
	BODY_PACE_TOO_SLOW,	/* the body is already below min_rate: give up */
};

/*
 * elapsed_ms since the body's first read and bytes received so far: how
 * long the next wait for bytes may last.  The wait ends at the idle bound
 * or at the moment the average would fall below min_rate, whichever comes
 * first, so a waiter that times out has a client that broke a bound.
 */
enum body_pace_verdict body_pace_next_wait(const struct body_pace_limits *lim, int64_t elapsed_ms,
					   uint64_t bytes, int64_t *wait_ms);

#endif
