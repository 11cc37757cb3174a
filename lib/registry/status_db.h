/*
 * status_db.h - the figures an operator watches: what waits in
 * the registry, what the sweeper last did, which schema is applied.  One
 * reader fills one struct; `bindery status`, /healthz and /metrics render
 * it, so the three never disagree about what a figure means.
 *
 * Every age is measured by the database's clock (TIMESTAMPDIFF against
 * NOW(6)), so a figure is the same whichever host asks.  The reads are a
 * handful of COUNTs over indexed states (the idempotency keys are counted
 * whole, a scan of their smallest index; the stored documents and bytes
 * one pass over the ready rows); none takes a lock.
 */
#ifndef BINDERY_STATUS_DB_H
#define BINDERY_STATUS_DB_H

#include <stdint.h>

#include "base/compat.h"
#include "base/state.h"
#include "registry/db.h"

/* The first schema version that has sweep_runs (sql/012). */
#define STATUS_DB_SWEEP_RUNS_VERSION 12

/* One row of sweep_runs. */
struct status_sweep_run {
	int present;			/* 0: no such run recorded */
	uint64_t id;
	int64_t started_at;		/* seconds since the epoch */
	int64_t finished_at;		/* 0 while under way (or after a crash) */
	enum sweep_result result;	/* SWEEP_RESULT_NONE while under way */
	int64_t age;			/* seconds since it finished (started, if it has not) */
	char host[256];
	uint64_t problems;		/* items left for a human */
	uint64_t deferred;		/* items left for a later run */
};

struct status_figures {
	uint64_t pending_intents;	/* blobs pending or being swept */
	int64_t oldest_pending_age;	/* seconds since the oldest one was created; -1: none */
	uint64_t outbox;		/* blobs retired or being deleted */
	uint64_t outbox_due;		/* ... whose retire_after has passed */
	uint64_t uploads_tus;		/* tus uploads whose intent is still pending */
	uint64_t uploads_direct;	/* direct intents still pending */
	uint64_t idempotency_keys;	/* all keys kept */
	uint64_t idempotency_unfinished;/* keys with no final answer yet */
	uint64_t stored_documents;	/* ready documents */
	uint64_t stored_bytes;		/* ... the sum of their sizes */
	int migrated;			/* schema_migrations exists (else every figure is 0) */
	unsigned schema_applied;	/* highest version in schema_migrations */
	int sweep_runs_known;		/* the schema has sweep_runs (else no runs below) */
	struct status_sweep_run last;	/* the newest run, whatever its result */
	struct status_sweep_run last_ok;/* the newest run with result ok */
};

/*
 * Fill out from the database.  A database never migrated (no
 * schema_migrations) reads as migrated = 0, schema 0 and nothing else; one
 * older than sql/012 reads everything but the runs.
 */
BINDERY_NODISCARD enum db_err status_db_read(struct db *db, struct status_figures *out);

/*
 * Only the newest ok run, for /healthz: the cheapest question that says
 * whether the sweeper is late.  A schema without sweep_runs is DB_FAILED.
 */
BINDERY_NODISCARD enum db_err status_db_last_ok(struct db *db, struct status_sweep_run *out);

/*
 * The sweeper is late when no ok run finished within late_after seconds
 * (never having run counts as late).  Pure.
 */
int status_db_sweeper_late(const struct status_sweep_run *last_ok, unsigned late_after);

#endif
