/*
 * events.h - delivering the events outbox (registry/events_db.h) as
 * Standard Webhooks: a POST of the stored JSON body with webhook-id (the
 * event's, stable across attempts), webhook-timestamp (this attempt's own
 * time) and webhook-signature "v1,<base64 HMAC-SHA256 of id.timestamp.body>"
 * under the receiver's own key.
 *
 * At least once, in a document's order: a delivery is claimed by
 * conditional UPDATE before it is sent, a 2xx marks it delivered, anything
 * else (or no answer within the receiver's timeout) schedules a retry with
 * exponential backoff and jitter up to [events] backoff_max, and past the
 * receiver's max_age the delivery is dead (counted, listed and re-queued by
 * `bindery events`).  A 410 stops the receiver until it is resumed.
 * Redirects are never followed.  See doc/design.md, "Events".
 */
#ifndef BINDERY_EVENTS_H
#define BINDERY_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "base/compat.h"
#include "parse/config.h"
#include "registry/db.h"

struct events_sender;

/* Read each receiver's secret file and configure events_db for them; with
 * no [events] *out is NULL and nothing is recorded.  -1 with err when a
 * secret file cannot be read or is not "whsec_" + base64. */
BINDERY_NODISCARD int events_sender_new(const struct bindery_config *cfg, struct events_sender **out,
					char *err, size_t errlen);
/* Wipes the keys; NULL is a no-op. */
void events_sender_free(struct events_sender *);

struct events_report {
	unsigned delivered, retried, dead, stopped, busy;
};

/*
 * Send what is due: only document doc_id's events when nonzero (a
 * responder right after its commit), else every due event (the sweep),
 * only blob names under prefix when non-NULL.  With deadline_ms
 * (clock_now_ms; 0: none) nothing runs past it: each receiver gets one
 * attempt, cut to what is left, and a further event only when a whole
 * timeout still fits.  Adds to *rep.  DB_OK, or the
 * database's error (what is unsent stays for the next sender).
 */
BINDERY_NODISCARD enum db_err events_deliver(struct events_sender *, struct db *db, uint64_t doc_id,
					     const char *prefix, int64_t deadline_ms,
					     struct events_report *rep);

/*
 * A responder right after the commit of a change to doc_id: send that
 * document's due events now, all of them within the longest receiver
 * timeout (every receiver is tried, each within what is left).  Never an error to the caller: what is not sent (a receiver
 * down, the database gone) stays for the next sender, the sweep.
 */
void events_after_commit(struct events_sender *, struct db *db, uint64_t doc_id);

/* The hex SHA-256 of url: a receiver's id in the tables. */
void events_endpoint_id(const char *url, char out[65]);

/*
 * The Standard Webhooks signature header value "v1,<base64>" of
 * "<id>.<timestamp>.<body>" under key[keylen], into out (reset first).
 * Pure; -1 when out cannot hold it.
 */
BINDERY_NODISCARD int events_sign(const unsigned char *key, size_t keylen, const char *id, int64_t timestamp,
				  const char *body, size_t bodylen, struct buf *out);

/* A "whsec_" secret's key bytes into key[*keylen] (at most keycap);
 * -1 when it is not "whsec_" followed by base64. */
BINDERY_NODISCARD int events_secret_decode(struct span secret, unsigned char *key, size_t keycap,
					   size_t *keylen);

#endif
