/*
 * protocol.h - the crash-safe create / replace / delete of doc/design.md,
 * (the results every operation of lib/protocol/ answers with are in
 * protocol/result.h).
 *
 * The database learns the blob's name first and admits the document exists
 * last.  Each function here runs one operation end to end against the
 * database and storage, checking the request deadline before every storage
 * call, and returns one result the responder maps to an HTTP status.  Every
 * failure leaves only state that `bindery sweep` resolves: pending rows (with
 * or without a blob tagged pending or committed) or retired rows.  Never a
 * ready row without its blob.
 */
#ifndef BINDERY_PROTOCOL_H
#define BINDERY_PROTOCOL_H

#include "storage/blob.h"
#include "base/compat.h"
#include "base/state.h"
#include "registry/doc_row.h"
#include "protocol/result.h"
#include "protocol/services.h"

/* The fields of an answer; app/ renders them (JSON, ETag). */
struct proto_answer {
	struct doc doc;		/* the document as it now is, or as first answered */
	int replayed;		/* an Idempotency-Key retry answered from the record */
	unsigned replay_status;	/* the recorded status; 0 when re-read, not recorded */
};

/*
 * A request's precondition on the current document (If-Match), judged by
 * the caller, who renders ETags: holds() returns nonzero when it is met.
 */
struct proto_precondition {
	int (*holds)(void *ctx, const struct doc *d);
	void *ctx;
};

/* ---- the create/resume decision (pure) ----------------------------------- */

/*
 * What a create request found before it moved anything.  Each fact is read
 * only when an earlier one leaves it relevant (the tests prove the decision
 * ignores it otherwise): the key's record first, then the registry row of
 * the blob name the key started.
 */
struct create_facts {
	int key_found;		/* an Idempotency-Key came and (owner, key) has a record */
	int name_taken;		/* step 1 was refused: the name (or the key) exists */
	int same_name;		/* the record is for this document name */
	int same_type;		/* ... and this Content-Type (or an older record knows none) */
	int same_route;		/* ... written by a server create, not a direct intent */
	int key_finished;	/* the record holds a final answer */
	int row_found;		/* the registry row of the record's blob name exists */
	enum registry_state row_state;
};

enum create_action {
	CREATE_NEW_INTENT,	/* step 1 with a fresh blob name */
	CREATE_NAME_TAKEN,	/* 409 name_taken */
	CREATE_KEY_MISMATCH,	/* 422: the key was used for another request */
	CREATE_REPLAY_RECORD,	/* finished: the same bytes get the recorded answer */
	CREATE_REPLAY_COMMITTED,/* committed, answer never recorded: the same bytes get the document */
	CREATE_RESUME,		/* pending: take the intent over once its owner is gone, finish it */
	CREATE_RESTART,		/* the sweeper dropped the intent: a new one under the same key */
	CREATE_SWEEPER_OWNS,	/* 503: a sweeper holds the intent; retry later */
};

/* What proto_create does next, given what it found (doc/design.md I4, "The claim and the fence"). */
enum create_action proto_create_decide(const struct create_facts *f);

/*
 * A create-only upload onto the name was refused because the name holds a
 * blob: the bytes there are this request's own (an earlier attempt's) or
 * not.  Returns PROTO_OK (count it as uploaded), PROTO_IDEM_MISMATCH (a
 * resumed intent holds another request's bytes), or PROTO_FAILED (a fresh
 * random name can only hold our own bytes: anything else is a bug).
 */
enum proto_result proto_create_upload_refused(int resuming, int same_bytes);

/*
 * The tag flip to committed was refused by its pending guard (412), and the
 * blob's state tag now reads `now` (TAG_STATE_UNKNOWN when it could not be
 * read).  PROTO_OK only when an earlier attempt already committed it;
 * otherwise PROTO_UNAVAILABLE and the document must not become ready.
 */
enum proto_result proto_tag_flip_refused(enum tag_state now);

/* ---- the operations (I/O) ------------------------------------------------ */

/*
 * Create document `name` for owner from body.  With idem_key, a retry of a
 * finished request answers the recorded result (replayed set), even after
 * the document was replaced or deleted, a retry of an unfinished one resumes
 * onto the same blob name.  A finished key older than [limits]
 * idempotency_ttl is forgotten: the request is a new create.
 */
BINDERY_NODISCARD enum proto_result proto_create(struct services *s, struct span name, const char *owner,
						 const struct proto_body *body, const char *idem_key,
						 struct proto_answer *out);

/* Replace a ready document's bytes; a precondition (NULL: none) that does not hold -> 412. */
BINDERY_NODISCARD enum proto_result proto_replace(struct services *s, uint64_t doc_id, const char *owner,
						  const struct proto_body *body,
						  const struct proto_precondition *pre,
						  struct proto_answer *out);

/*
 * Delete a ready document: the row goes, its blob enters the outbox.  A
 * precondition (NULL: none) that does not hold for the current version ->
 * PROTO_STALE (412), and nothing changes.
 */
BINDERY_NODISCARD enum proto_result proto_delete(struct services *s, uint64_t doc_id, const char *owner,
						 const struct proto_precondition *pre);

/*
 * The outbox path, shared by the responder and the sweeper: claim a retired
 * registry row, check no document references the name, tag the blob
 * `retired` (conditional on its current tag), delete it guarded by
 * "state" = 'retired', drop the row.  Returns PROTO_OK when the row is gone,
 * PROTO_NOT_FOUND when there was nothing due to claim, PROTO_FAILED when a
 * referenced blob was found retired (a bug: nothing is deleted), and
 * PROTO_UNAVAILABLE when storage failed (the claim is released).
 */
BINDERY_NODISCARD enum proto_result proto_drain_retired(struct services *s, const char *blob_name,
							const char *claimer);

/* A fresh, unguessable blob name: the configured prefix + 32 hex digits. */
BINDERY_NODISCARD int proto_new_blob_name(const struct bindery_config *cfg, char *out, size_t outlen);

#endif
