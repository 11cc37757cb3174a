/*
 * answer.h - how the HTTP front end answers: one table from a protocol
 * result (lib/protocol/protocol.h) to an HTTP status, an error code, a
 * message and a Retry-After, for every API the responder serves, and the
 * answers the APIs share (a document, a taken name, an unread body).
 */
#ifndef BINDERY_ANSWER_H
#define BINDERY_ANSWER_H

#include "app.h"

/*
 * Which API asks.  Most results read the same everywhere; where an API's
 * clients need another word or status (a tus client's "no such upload",
 * a download's storage failure), the table has a row for that API.
 */
enum answer_api {
	ANSWER_DOCUMENTS,	/* create, replace, delete */
	ANSWER_READ,		/* get, list, the page */
	ANSWER_DOWNLOAD,	/* a document's bytes */
	ANSWER_TUS,		/* /uploads (tus 1.0.0) */
	ANSWER_DIRECT,		/* /documents/direct and finalize */
};

/*
 * Answer pr (anything but PROTO_OK) as api's clients read it.  retry_after
 * replaces the table's Retry-After for a result that has one (PROTO_BUSY:
 * the holder's lease says when); 0 keeps the table's.
 */
void answer_failure(struct request *r, enum answer_api api, enum proto_result pr, unsigned retry_after);

/*
 * A body req_read could not read to its end: 408 body_timeout when the
 * client broke body_idle_timeout or body_min_rate, 503 interrupted (with
 * Retry-After) when the responder was stopped in the read, else 400
 * bad_body with message.  kept says, for the first two, what became of
 * the upload ("the upload was abandoned").
 */
void answer_body_unread(struct request *r, const char *message, const char *kept);

/* A replayed answer says so: Stripe's name for it (the Idempotency-Key
 * draft names none), so a client can tell a retry's answer from a fresh one. */
#define ANSWER_REPLAYED_HEADER "Idempotent-Replayed: true\r\n"

/* status + the document's JSON and ETag (201 adds its Location); replayed
 * (an Idempotency-Key retry answered from the record) adds
 * ANSWER_REPLAYED_HEADER. */
void answer_document(struct request *r, int status, const struct doc *d, int replayed);

/* name_taken, with api's status (409; 422 for tus); when the caller's own
 * resumable upload holds name, the answer names it, so the client can
 * resume instead of starting again. */
void answer_name_taken(struct app *app, struct request *r, enum answer_api api, struct span name);

#endif
