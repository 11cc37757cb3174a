/*
 * counters.h - monotone counters shared by every process of an
 * installation on one host: the responders that mod_fcgid, lighttpd or the
 * pool run side by side, a CGI process, and `bindery sweep`.  A scrape is
 * answered by one of them and must report the sum over all, so the counts
 * live in one file ([metrics] counters_file) that each process maps
 * MAP_SHARED and adds to with atomic operations: no lock, no daemon, and a
 * process that dies mid-request loses nothing already added.
 *
 * What it promises:
 *  - The file has a fixed layout: a header (magic, layout version, the
 *    header's and the whole file's size, how many slots of each kind)
 *    followed by 64-bit slots.  A file whose header or size differs from
 *    this binary's layout is refused (COUNTERS_MISMATCH), never written:
 *    a bindery of another layout cannot corrupt it, and removing it starts
 *    the counters over (a reset Prometheus handles).
 *  - A missing file is created whole before anyone can open it (made
 *    under a temporary name and linked into place), mode 0660; made by
 *    root in a directory another user owns, it is handed to that
 *    directory's owner and group, so a root `bindery sweep` never locks
 *    the web server's user out.
 *  - Every add is one atomic fetch-and-add: concurrent adds from any
 *    number of processes sum exactly, and a read never goes backwards.
 *  - A process with no file attached counts nothing and reads nothing:
 *    counters_add is then a no-op, never an error.
 */
#ifndef BINDERY_COUNTERS_H
#define BINDERY_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

#include "base/compat.h"

/* The single counters; their Prometheus names are the renderer's. */
enum counter_id {
	COUNTER_DOCUMENTS_CREATED,	/* a create became ready (any route) */
	COUNTER_DOCUMENTS_REPLACED,	/* a replace committed */
	COUNTER_DOCUMENTS_DELETED,	/* a delete committed */
	COUNTER_BYTES_IN,		/* request body bytes read by a responder */
	COUNTER_BYTES_OUT,		/* response body bytes written by a responder */
	COUNTER_STORAGE_ERRORS,		/* storage calls that failed after their retries */
	COUNTER_DATABASE_ERRORS,	/* lost connections, failed connects, server errors */
	COUNTER_SWEEP_RUNS,		/* `bindery sweep` runs that swept (not dry) */
	COUNTER_SWEEP_DROPPED,		/* the sweeper's actions, as its report names them */
	COUNTER_SWEEP_DELETED,
	COUNTER_SWEEP_PURGED,
	COUNTER_SWEEP_ROLLED_FORWARD,
	COUNTER_SWEEP_ROLLED_BACK,
	COUNTER_SWEEP_OUTBOX,
	COUNTER_SWEEP_TAKEN_OVER,
	COUNTER_SWEEP_KEYS_EXPIRED,
	COUNTER_SWEEP_STRAYS,
	COUNTER_SWEEP_PROBLEMS,
	COUNTER_SWEEP_DEFERRED,
	COUNTER_ENTRA_TOKENS,		/* [storage] auth = entra: tokens fetched */
	COUNTER_ENTRA_TOKEN_FAILURES,	/* token fetches that failed */
	COUNTER_DELEGATION_KEYS,	/* user delegation keys fetched */
	COUNTER_DELEGATION_KEY_FAILURES, /* user delegation key fetches that failed */
	COUNTER_EVENTS_DELIVERED,	/* [events]: deliveries a receiver took (2xx) */
	COUNTER_EVENTS_DEAD,		/* deliveries given up past max_age */
	COUNTER_DATABASE_ROUND_TRIPS,	/* commands sent to the database and answered */
	COUNTER_FIXED_COUNT
};

/* The request table: one slot per (route, status code).  Route is the
 * caller's route number below COUNTERS_ROUTES; a code outside 100-599
 * (none was sent) is counted as 0. */
#define COUNTERS_ROUTES 32
#define COUNTERS_CODES 600

/* Bump when the layout above changes: an older file is then refused. */
/* 2: the Entra token and delegation key counters; 3: the events'; 4: the
 * database round trips. */
#define COUNTERS_LAYOUT_VERSION 4

enum counters_err {
	COUNTERS_OK = 0,
	COUNTERS_SYSTEM,	/* open, create or map failed (errno in the message) */
	COUNTERS_MISMATCH,	/* the file is not of this layout: left untouched */
};

/*
 * Map the file at path (creating it when absent) and attach it to this
 * process; a file attached before is detached first.  On failure nothing
 * is attached and err says why, naming the file.  A child forked after
 * this shares the mapping.
 */
BINDERY_NODISCARD enum counters_err counters_open(const char *path, char *err, size_t errlen);

/* Detach and unmap (the file stays). */
void counters_close(void);

/* 1 when a file is attached. */
int counters_attached(void);

/* Add n to a counter / to the request slot (route, code).  No-ops when
 * nothing is attached; a route out of range is a caller bug (assert). */
void counters_add(enum counter_id id, uint64_t n);
void counters_add_request(unsigned route, int code);

/* The current totals (0 when nothing is attached). */
uint64_t counters_get(enum counter_id id);
uint64_t counters_get_request(unsigned route, int code);

/* Unix time the attached file was created (0: none attached): a newer one
 * than a scraper saw before means the counters started over. */
int64_t counters_created(void);

#endif
