/*
 * sweep.h - `bindery sweep`: resolve stale intents, drain the deletion
 * outbox, purge staged blocks (doc/design.md, "The claim and the fence" and "What a crash leaves"),
 * and forget finished idempotency keys older than [limits] idempotency_ttl.
 *
 * The sweeper claims registry rows with a conditional UPDATE and a lease
 * (pending -> sweeping, retired -> deleting), so two sweepers on two hosts
 * never handle one item twice, and only the claimer touches storage for it.
 * A batch may take longer than a lease: each item's lease is renewed right
 * before its storage steps (an item whose lease already ran out is skipped,
 * since another sweeper may hold it now), and no storage call for it starts
 * after the renewed lease ends.
 * What it then does with a claimed intent is a pure function of the facts it
 * read from storage, sweep_decide(), tested exhaustively on its own.
 */
#ifndef BINDERY_SWEEP_H
#define BINDERY_SWEEP_H

#include <stdint.h>
#include <stdio.h>

#include "base/compat.h"
#include "base/state.h"
#include "protocol/services.h"

/* ---- the decision (pure) ------------------------------------------------- */

struct sweep_facts {
	enum intent_purpose purpose;	/* anything but replace counts as create */
	int blob_exists;	/* a committed blob is at the name */
	enum tag_state tag;	/* the blob's state tag (base/state.h) */
	int uncommitted_blocks;	/* Get Block List shows staged blocks */
	int metadata_matches;	/* x-ms-meta-size = the blob's size, sha256 present,
				 * and both agree with the intent where it knows them */
	int referenced;		/* a document (any status) other than the intent's own
				 * pending one points at the name */
	int direct;		/* the client uploaded (route direct): its tags prove nothing */
	int recorded;		/* direct: finalize recorded (ETag, size, SHA-256) */
	int etag_matches;	/* direct: the blob's ETag now is the recorded one */
};

enum sweep_action {
	SWEEP_DROP,			/* nothing in storage: drop the rows */
	SWEEP_PURGE_THEN_DROP,		/* only staged blocks: purge them, drop the rows */
	SWEEP_DELETE_PENDING_THEN_DROP,	/* delete guarded by pending, then the rows */
	SWEEP_ROLL_FORWARD,		/* create finished storage-side: document ready */
	SWEEP_ROLL_BACK,		/* replace never committed: through the outbox */
	SWEEP_LEAVE,			/* not ours to decide: log, count a problem */
	SWEEP_DIRECT_ROLL_FORWARD,	/* direct, verified, unchanged: tag committed, document ready */
	SWEEP_DELETE_IF_MATCH_THEN_DROP,/* direct, never verified (or changed since): delete
					 * with If-Match on the ETag just read, then the rows */
};

const char *sweep_action_name(enum sweep_action a);
/* What the sweeper does with a claimed intent, given what storage showed. */
enum sweep_action sweep_decide(const struct sweep_facts *f);

/* ---- the run (I/O) ------------------------------------------------------- */

struct sweep_opts {
	int64_t cutoff;		/* < 0: intents whose lease (expires_at) has passed;
				 * >= 0 (--older-than): also those not renewed
				 * for this many seconds */
	unsigned batch;		/* rows claimed per round */
	unsigned parallel;	/* worker threads, each with its own connections */
	int dry_run;		/* claim nothing, change nothing, print the plan */
	FILE *plan;		/* where --dry-run prints (stdout) */
	const char *claimer;	/* this run's id; NULL: host:pid:random */
	const char *prefix;	/* only blob names starting with this (NULL or "": all) */
};

struct sweep_report {
	uint64_t dropped;	/* intents with nothing in storage, rows dropped */
	uint64_t deleted;	/* intents whose pending blob was deleted */
	uint64_t purged;	/* intents whose staged blocks were purged */
	uint64_t rolled_forward;
	uint64_t rolled_back;
	uint64_t outbox;	/* retired blobs deleted through the outbox */
	uint64_t taken_over;	/* expired leases re-claimed */
	uint64_t keys_expired;	/* finished idempotency keys past idempotency_ttl, deleted */
	uint64_t strays;	/* pending blobs no row names, older than sweep_cutoff, removed
				 * (stray.h); with dry_run: found */
	uint64_t problems;	/* items left for a human (logged) */
	uint64_t deferred;	/* items released for a later run (storage or DB trouble) */
	uint64_t events_delivered;	/* [events] deliveries receivers took */
	uint64_t events_retried;	/* ... and that failed, to be tried again */
	uint64_t events_dead;		/* ... and that were given up (max_age) */
	uint64_t events_pruned;		/* delivered events forgotten (retention) */
	uint64_t lease_expired;	/* claimed items whose lease ran out before their turn:
				 * not touched (a later round or another sweeper takes them) */
	int unavailable;	/* a dependency was down: exit 69 */
	int temporary;		/* transient trouble: exit 75 */
	int refused;		/* the database or storage refused our credentials
				 * or a privilege: exit 77 */
	char cause[384];	/* the first trouble in the service's own words
				 * (never a secret), "" when none: the caller
				 * prints it, whatever the log does */
};

enum sweep_err {
	SWEEP_OK = 0,
	SWEEP_UNAVAILABLE,	/* database or storage down at the start */
	SWEEP_FAILED,
};

/*
 * Run one sweep with s (its configuration; its db holds any lock the caller
 * took).  Workers open their own services from s->cfg.  Items that fail are
 * counted in the report; the return value is only for a run that could not
 * start or was cut short.
 */
BINDERY_NODISCARD enum sweep_err sweep_run(struct services *s, const struct sweep_opts *o,
					   struct sweep_report *rep);

#endif
