/*
 * protocol_internal.h - the steps protocol.c shares with the other ways a
 * document is written (tus.c): one implementation of each step, so an
 * upload that spans requests commits, flips and compensates exactly as a
 * single-request create does.  Not for app/.
 */
#ifndef BINDERY_PROTOCOL_INTERNAL_H
#define BINDERY_PROTOCOL_INTERNAL_H

#include "protocol/protocol.h"

/* Compensation runs after a failure, often a slow or absent service: it
 * gets a short budget of its own and leaves whatever it cannot finish to
 * the sweeper (the tag guard keeps a late delete safe either way).  The
 * budget is a term of the sweep_cutoff relation checked at load. */
#define COMPENSATION_BUDGET_MS (CONFIG_COMPENSATION_BUDGET_S * 1000)

/*
 * An intent this attempt holds: its document, its blob name and the holder
 * id every transition of its registry row is conditional on (doc/design.md,
 * "The claim and the fence").  Fresh for each attempt: a create, a resume, a restart, a
 * replace, a PATCH.
 */
struct held_intent {
	uint64_t doc_id;
	char blob_name[DOC_BLOB_NAME_MAX];
	char holder[DOC_HOLDER_MAX];
	int64_t leased_ms;	/* monotonic time just before the row's lease was
				 * written: this attempt's own view of it */
	unsigned extras;	/* what else the intent carries (enum ready_extras);
				 * proto_held_intent_init: READY_ALL until the caller knows */
	char written_etag[128];	/* the ETag of the pending blob this attempt wrote
				 * (or found its own); "" while it wrote none */
};

/* A new holder id for an attempt on blob_name; -1 without randomness or room. */
BINDERY_NODISCARD int proto_held_intent_init(struct held_intent *hi, uint64_t doc_id, const char *blob_name);

/* The bytes an upload reserves against its owner's [quota]: its declared
 * size, or max_upload when it declared none (declared < 0). */
uint64_t proto_reservation(const struct services *s, int64_t declared);

enum proto_result proto_from_db(enum db_err e);
enum proto_result proto_from_blob(const struct blob_result *r);

/* request_deadline bounds each wait on storage or the database, not a
 * whole request: steps that call storage set it afresh. */
void proto_start_deadline(struct services *s);

/* Is the blob named ours: the bytes info describes?  (A retried create-only
 * call that was refused may have been refused by our own first attempt.)
 * When it is, info's etag receives the blob's.  It reads the metadata our
 * committing call wrote, so it is only for names no SAS can write: never a
 * direct intent's (routes never mix: proto_create_decide refuses a direct key,
 * and direct finalize hashes the bytes instead). */
int proto_blob_matches(struct services *s, const char *blob_name, struct blob_upload_info *info);

/* Step 3: flip the tag to committed, guarded by pending; PROTO_OK also when
 * an earlier attempt of ours flipped it. */
BINDERY_NODISCARD enum proto_result proto_commit_tag_flip(struct services *s, const char *blob_name);

/*
 * Failure before the tag flip: claim the row by hi's holder, delete the
 * blob guarded by pending (or purge its staged blocks), drop the rows.
 * PROTO_OK when all is gone; PROTO_NOT_FOUND when the row was not ours to
 * claim (nothing touched); anything else leaves the rest to the sweeper.
 * A request that is failing anyway may ignore the result (whatever it
 * leaves is the sweeper's); termination answers by it.
 */
enum proto_result proto_compensate_pending(struct services *s, const struct held_intent *hi);

/*
 * A replace's target: document doc_id into *d, ready, owner's, and as the
 * precondition (NULL: none) wants it; *expected_version is the version the
 * commit must find (0: any).  PROTO_NOT_FOUND, PROTO_FORBIDDEN, PROTO_STALE.
 */
BINDERY_NODISCARD enum proto_result proto_replace_target(struct services *s, uint64_t doc_id, const char *owner,
						   const struct proto_precondition *pre, struct doc *d,
						   uint64_t *expected_version);

/*
 * Right after a delete or a replace commits: tag the blob it retired
 * `retired`, guarded by `committed` (doc/design.md, "Deletes leave a
 * mark").  Best effort within the compensation budget: the outbox tags it
 * anyway before it deletes.  The ETag stays and reads do not look at tags,
 * so a download under way finishes.
 */
void proto_mark_retired(struct services *s, const char *blob_name);

/* A replace that will not be committed: its new blob goes through the
 * outbox now, if hi still holds its row (else the sweeper rolls it back). */
void proto_roll_back_replace(struct services *s, const struct held_intent *hi);

#endif
