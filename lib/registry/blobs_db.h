/*
 * blobs_db.h - the blob registry (the blobs table), one row a blob name:
 * the statements that move a registry row alone.  The transactions that
 * move it together with its document are docs_db's.  Each function is one
 * conditional statement that must touch exactly one row; a zero-row update
 * means another actor owns the next step and comes back as DB_CONFLICT.  No
 * function here touches storage.
 *
 * Fencing (doc/design.md, "The claim and the fence"): a pending registry
 * row carries a holder, the attempt id of whoever created, resumed or
 * claimed it.  Every later transition of the row by a responder is
 * conditional on its holder; DB_CONFLICT from one of them means "this
 * attempt lost the row" (to a resume or a sweeper) and the caller must
 * touch nothing in storage for it.
 */
#ifndef BINDERY_BLOBS_DB_H
#define BINDERY_BLOBS_DB_H

#include <stdint.h>

#include "base/compat.h"
#include "base/state.h"
#include "registry/db.h"
#include "registry/doc_row.h"

struct blob_row {
	char name[DOC_BLOB_NAME_MAX];
	uint64_t document_id;
	enum intent_purpose purpose;
	enum registry_state state;
	uint64_t size;			/* 0 and has_hash 0 until known */
	char sha256[DOC_SHA256_HEX];
	int64_t touched_age;		/* seconds since touched_at (the owner's heartbeat) */
	char holder[DOC_HOLDER_MAX];	/* "" when the row has none (written before 004) */
};

/*
 * A lease on a pending row: its holder's attempt id and how long the row
 * stays its holder's after each write (expires_at = now + seconds).  The
 * sweeper and an idempotent resume take the row only once it has expired.
 */
struct lease {
	const char *holder;
	unsigned seconds;
	/* The bytes the intent reserves against its owner's [quota] (its
	 * declared size, else max_upload); ignored without [quota]. */
	uint64_t reserve;
};

/*
 * The storage clock skew a SAS's expiry is given (doc/api.md, "Direct uploads"):
 * a grant counts as valid until its expiry plus this.  Every retirement
 * waits for the latest create SAS of the blob (blobs.sas_expires) plus
 * this, whatever grace it was given.
 */
#define BLOBS_SAS_SKEW_S 300
#define BLOBS_SAS_SKEW_SQL "300"
/* The earliest a row may be retired for (sql/013): until the latest create
 * SAS granted for the name has expired it could create the blob again once
 * it is gone.  Every statement that retires a row takes the later of this
 * and its own time. */
#define BLOBS_RETIRE_NOT_BEFORE_SAS_SQL \
	"COALESCE(FROM_UNIXTIME(sas_expires + " BLOBS_SAS_SKEW_SQL "), '1970-01-01')"

/*
 * The holder's heartbeat: touched_at = now and a fresh lease (expires_at =
 * now + l->seconds) on a pending row l->holder still holds.  Run while the
 * body streams, right before the commit and right before the tag flip, so
 * an attempt that lost its row learns so before it commits anything.
 * DB_CONFLICT: lost.
 */
BINDERY_NODISCARD enum db_err blobs_renew_held(struct db *db, const char *blob_name,
					       const struct lease *l);

/*
 * Compensation's claim, before any storage call: a pending row held by
 * holder -> sweeping, claimed_by = holder, with a lease of lease seconds (a
 * responder that dies here leaves a claim the sweeper takes over when the
 * lease ends).  DB_CONFLICT: lost; the caller must not touch the blob.
 * A compensation that cannot finish in storage gives the claim back
 * (sweep_db_release with holder as the claimer: pending again, still held).
 */
BINDERY_NODISCARD enum db_err blobs_claim_held(struct db *db, const char *blob_name, const char *holder,
					       unsigned lease);

/* A registry row by blob name. */
BINDERY_NODISCARD enum db_err blobs_get(struct db *db, const char *name, struct blob_row *out);

/*
 * A new blob that will never be referenced (a failed or refused replace):
 * pending (held by holder) -> retired, due now, so the outbox drain deletes
 * it.  DB_CONFLICT: the row was lost to the sweeper, which rolls it back.
 */
BINDERY_NODISCARD enum db_err blobs_retire_unreferenced(struct db *db, const char *blob_name,
							const char *holder);

/*
 * Outbox claim for one named blob (retired and due -> deleting, with a
 * lease), used by the responder to drain what it just retired and by the
 * sweeper.  DB_CONFLICT: someone else has it or it is not due.
 */
BINDERY_NODISCARD enum db_err blobs_claim_retired(struct db *db, const char *blob_name,
						  const char *claimer, unsigned lease);
/* Does any document (any status) reference this blob?  *referenced set. */
BINDERY_NODISCARD enum db_err blobs_is_referenced(struct db *db, const char *blob_name, int *referenced);
/* Drop a registry row we hold a claim on (state deleting/sweeping, claimed_by). */
BINDERY_NODISCARD enum db_err blobs_drop_claimed(struct db *db, const char *blob_name, const char *claimer);
/* Give a claim back (e.g. storage was unreachable): deleting -> retired. */
BINDERY_NODISCARD enum db_err blobs_release_retired(struct db *db, const char *blob_name, const char *claimer);

/*
 * The holder of a pending intent lets go of it now (its lease ends), so a
 * retry may take it over at once instead of after the lease: a request that
 * leaves its intent for the retry with its key.  DB_CONFLICT when holder no
 * longer holds it.
 */
BINDERY_NODISCARD enum db_err blobs_let_go(struct db *db, const char *blob_name, const char *holder);

/*
 * Resume: take a pending intent over for l->holder (a new holder, a fresh
 * lease) only once its lease has expired (expires_at passed: its owner is
 * gone).  DB_CONFLICT: its lease is live (another request is working on
 * it), it is no longer pending (the sweeper has it), or it is a direct
 * intent (never resumed by a server create).
 */
BINDERY_NODISCARD enum db_err blobs_take_over_stale(struct db *db, const char *blob_name,
						    const struct lease *l);

#endif
