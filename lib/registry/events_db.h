/*
 * events_db.h - the events outbox (sql/016_events.sql): document.ready and
 * document.deleted rows written inside the transaction of the change they
 * report, and their delivery state per receiver.
 *
 * The receivers this process writes for are set once (events_db_configure,
 * from [events]); with none, recording is a no-op and nothing is written,
 * so an installation without [events] pays nothing.  Delivery is claimed by
 * conditional UPDATE, like every other claim in bindery, so any number of
 * responders and sweepers on any number of hosts or Galera nodes send each
 * event to each receiver one at a time; a document's events go to a
 * receiver in seq order (its version), never by the AUTO_INCREMENT id.
 */
#ifndef BINDERY_EVENTS_DB_H
#define BINDERY_EVENTS_DB_H

#include <stddef.h>
#include <stdint.h>

#include "base/compat.h"
#include "registry/db.h"

#define EVENTS_MAX_ENDPOINTS 8
/* An endpoint's id: the hex SHA-256 of its URL. */
#define EVENTS_ENDPOINT_ID_LEN 64
#define EVENTS_BODY_MAX 4096

/* The receivers this process records events for, by id (copied); n 0: none. */
void events_db_configure(const char *const *endpoint_ids, size_t n);
/* Whether any receiver is configured: the ready transaction then has an
 * event to write. */
int events_db_enabled(void);

/*
 * Inside the transaction that made the document ready (create, replace,
 * tus, direct finalize, roll forward, adoption): a document.ready event of
 * its version now, with a delivery row per receiver.  No-op without any.
 */
BINDERY_NODISCARD enum db_err events_db_record_ready(struct db *db, uint64_t doc_id);
/* Inside a delete's transaction, BEFORE its row goes: document.deleted, seq
 * one past the document's version. */
BINDERY_NODISCARD enum db_err events_db_record_deleted(struct db *db, uint64_t doc_id);

/* One event due for a receiver, as a sender needs it. */
struct events_due {
	uint64_t event_id;
	uint64_t document_id;
	uint64_t seq;
	uint64_t attempts;
	char webhook_id[40];
	char type[33];
	char body[EVENTS_BODY_MAX];
	int64_t age_s;		/* seconds since the change committed */
};

/*
 * The events due for receiver endpoint, oldest first, at most limit: pending
 * there, next_at passed, not claimed by a live claim, no earlier event of
 * the same document pending there, the receiver not stopped; only document
 * doc_id's when nonzero; only blob names starting with prefix when non-NULL.
 * on_due is called for each (nonzero stops).
 */
BINDERY_NODISCARD enum db_err events_db_due(struct db *db, const char *endpoint, uint64_t doc_id,
					    const char *prefix, unsigned limit,
					    int (*on_due)(void *ctx, const struct events_due *), void *ctx);
/* Claim one delivery for lease_s seconds: DB_OK, or DB_CONFLICT when another
 * sender has it (or it is no longer due). */
BINDERY_NODISCARD enum db_err events_db_claim(struct db *db, uint64_t event_id, const char *endpoint,
					      const char *claimer, unsigned lease_s);
/* The receiver took it (2xx). */
BINDERY_NODISCARD enum db_err events_db_delivered(struct db *db, uint64_t event_id, const char *endpoint,
						  const char *claimer, long status);
/* It did not: try again in retry_ms, or never (dead) when dead is set. */
BINDERY_NODISCARD enum db_err events_db_failed(struct db *db, uint64_t event_id, const char *endpoint,
					       const char *claimer, long status, const char *why,
					       int64_t retry_ms, int dead);
/* A receiver that answered 410: stopped (url recorded) until resumed. */
BINDERY_NODISCARD enum db_err events_db_stop_endpoint(struct db *db, const char *endpoint, const char *url);
/* Resume a stopped receiver; *n gets 1 when it was stopped. */
BINDERY_NODISCARD enum db_err events_db_resume_endpoint(struct db *db, const char *endpoint, uint64_t *n);
/* Dead deliveries for endpoint (NULL: all) back to pending, due now. */
BINDERY_NODISCARD enum db_err events_db_requeue_dead(struct db *db, const char *endpoint, uint64_t *n);
/* Forget events whose every delivery is done (delivered or dead) and
 * older than retention_s. */
BINDERY_NODISCARD enum db_err events_db_prune(struct db *db, unsigned retention_s, uint64_t *n);

/* One delivery given up, for `bindery events`. */
struct events_dead {
	char webhook_id[40];
	char type[33];
	uint64_t document_id, seq, attempts;
	int64_t last_status;
	char endpoint[EVENTS_ENDPOINT_ID_LEN + 1];
	char last_error[256];
	char created_at[32];
};
/* The dead deliveries, oldest first, at most limit. */
BINDERY_NODISCARD enum db_err events_db_list_dead(struct db *db, unsigned limit,
						  int (*on_dead)(void *ctx, const struct events_dead *), void *ctx);

struct events_counts {
	uint64_t pending, dead, delivered, stopped_endpoints;
};
BINDERY_NODISCARD enum db_err events_db_counts(struct db *db, struct events_counts *out);

#endif
