/*
 * concat_db.h - the rows of the tus concatenation extension (sql/019;
 * doc/design.md, "Resumable uploads: concatenation").
 *
 * A partial upload is an intent with no document: its registry row
 * (purpose partial) carries the lease and the holder as any upload's, its
 * upload row the offset and the running SHA-256; once its block list is
 * committed (tagged pending) its ETag is recorded and it is complete.  A
 * final is a create intent whose upload row lists its partials; the
 * transaction that writes it claims each partial (final_id from NULL, the
 * same owner's, complete, not consumed) or writes nothing.  While the final
 * assembles, the partials' leases are pushed with its own, so the sweeper
 * never takes a partial a live final is reading.
 */
#ifndef BINDERY_CONCAT_DB_H
#define BINDERY_CONCAT_DB_H

#include <stddef.h>
#include <stdint.h>

#include "base/compat.h"
#include "registry/db.h"
#include "registry/uploads_db.h"

/* A partial's intent, one transaction: its registry row (purpose partial,
 * document 0, no holder, lease u->expiry), its upload row, and under
 * [quota] its reservation (u->length; DB_QUOTA over a limit). */
BINDERY_NODISCARD enum db_err concat_db_partial_intent(struct db *db, const struct upload_new *u);

/* The partial's blob is committed: its ETag recorded, fenced by holder on
 * its pending registry row (DB_CONFLICT: the holder lost it). */
BINDERY_NODISCARD enum db_err concat_db_partial_committed(struct db *db, const char *blob_name,
							  const char *holder, const char *etag);

struct concat_final_new {
	const struct upload_new *u;	/* the final's upload: a create with its name */
	const char *partials;		/* the partials' ids in order, space-separated */
	const char *const *ids;		/* the same, one by one ... */
	const char *const *blob_names;	/* ... and their blobs */
	size_t n;
	uint64_t takeover_ms;		/* a partial's holder silent this long is dead (uploads_claim) */
};

/*
 * The final's intent and the claim of its partials, one transaction: the
 * pending document and its registry row (docs_create_intent_tx, quota
 * included), the final's upload row, then for each partial one
 * conditional UPDATE (final_id from NULL, u->owner's, complete, not
 * consumed) that must touch one row, and its lease pushed to the final's.
 * DB_DUPLICATE: the name is taken; DB_CONFLICT: a partial could not be
 * claimed (taken meanwhile); either way nothing is written.
 */
BINDERY_NODISCARD enum db_err concat_db_final_intent(struct db *db, const struct concat_final_new *f,
						     uint64_t *doc_id);

/* The final holds its partials: their pending rows' leases pushed to now + seconds. */
BINDERY_NODISCARD enum db_err concat_db_hold(struct db *db, const char *final_id, unsigned seconds);

/* A final terminated before it was ready (its rows dropped): its
 * partials are nobody's again, free for another final. */
BINDERY_NODISCARD enum db_err concat_db_unclaim(struct db *db, const char *final_id);

/* The final is ready and the partial's blob deleted: consumed_at set and
 * its reservation settled, in one transaction.  The rows stay (HEAD still
 * answers complete) until the lease ends and the sweeper drops them. */
BINDERY_NODISCARD enum db_err concat_db_consume(struct db *db, const char *partial_id,
						const char *blob_name, const char *final_id);

#endif
