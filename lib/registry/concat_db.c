/* concat_db.c - see concat_db.h.  All SQL is literal text with bound parameters. */
#include <string.h>

#include "base/state.h"
#include "registry/concat_db.h"
#include "registry/docs_db.h"
#include "registry/quota_db.h"

static const char sql_insert_partial_blob[] =
	"INSERT INTO blobs (name, document_id, purpose, state, holder, expires_at)"
	" VALUES (?, 0, ?, 'pending', NULL, NOW(6) + INTERVAL ? SECOND)";
static const char sql_insert_upload[] =
	"INSERT INTO uploads (id, blob_name, document_id, owner, upload_length, content_type,"
	" hash_state, partials) VALUES (?, ?, ?, ?, ?, ?, ?, ?)";

static enum db_err
partial_intent_tx(struct db *db, const struct upload_new *u)
{
	struct db_param b[] = { DBP_STR(u->blob_name), DBP_STR(intent_purpose_name(PURPOSE_PARTIAL)),
				DBP_U64(u->expiry) };
	struct db_param p[] = { DBP_STR(u->id), DBP_STR(u->blob_name), DBP_U64(0), DBP_STR(u->owner),
				DBP_U64(u->length), DBP_STR(u->content_type), DBP_STR(u->hash_state),
				DBP_NULL };
	enum db_err e;

	if ((e = db_exec(db, sql_insert_partial_blob, b, ARRAY_LEN(b), NULL)) != DB_OK ||
	    (e = db_exec(db, sql_insert_upload, p, ARRAY_LEN(p), NULL)) != DB_OK)
		return e;
	return quota_db_reserve_owner(db, u->owner, u->blob_name, u->length);
}

enum db_err
concat_db_partial_intent(struct db *db, const struct upload_new *u)
{
	DB_IN_TX(db, partial_intent_tx(db, u));
}

static const char sql_partial_committed[] =
	"UPDATE uploads u JOIN blobs b ON b.name = u.blob_name SET u.partial_etag = ?"
	" WHERE u.blob_name = ? AND b.state = 'pending' AND b.purpose = 'partial' AND b.holder = ?"
	" AND u.partial_etag IS NULL";

enum db_err
concat_db_partial_committed(struct db *db, const char *blob_name, const char *holder, const char *etag)
{
	struct db_param p[] = { DBP_STR(etag), DBP_STR(blob_name), DBP_STR(holder) };

	return db_exec_one(db, sql_partial_committed, p, ARRAY_LEN(p));
}

/* The claim: one partial of the owner's, complete, pending, not consumed,
 * unclaimed, and held by no live request: a DELETE that holds it
 * (tus_terminate) reads it again under its hold, so one of the two sees
 * the other; a dead holder (a PATCH that died after recording the
 * partial complete) is no obstacle. */
static const char sql_claim_partial[] =
	"UPDATE uploads SET final_id = ?"
	" WHERE id = ? AND blob_name = ? AND owner = ? AND final_id IS NULL AND consumed_at IS NULL"
	" AND partial_etag IS NOT NULL"
	" AND EXISTS (SELECT 1 FROM blobs b WHERE b.name = ? AND b.state = 'pending' AND b.purpose = 'partial'"
	" AND " UPLOADS_UNHELD_SQL("b.") ")";
/* A held partial is in use: touched_at keeps `sweep --older-than` off it
 * while its final reads and copies it. */
static const char sql_hold_partial[] =
	"UPDATE blobs SET touched_at = NOW(6), expires_at = GREATEST(expires_at, NOW(6) + INTERVAL ? SECOND)"
	" WHERE name = ? AND state = 'pending'";

static enum db_err
final_intent_tx(struct db *db, const struct concat_final_new *f, uint64_t *doc_id)
{
	const struct upload_new *u = f->u;
	struct lease l = { NULL, u->expiry, u->length };
	enum db_err e;
	size_t i;

	if ((e = docs_create_intent_tx(db, u->name, u->owner, u->content_type, u->blob_name, &l, NULL,
				       doc_id, NULL)) != DB_OK)
		return e;
	{
		struct db_param p[] = { DBP_STR(u->id), DBP_STR(u->blob_name), DBP_U64(*doc_id),
					DBP_STR(u->owner), DBP_U64(u->length), DBP_STR(u->content_type),
					DBP_STR(u->hash_state), DBP_STR(f->partials) };

		if ((e = db_exec(db, sql_insert_upload, p, ARRAY_LEN(p), NULL)) != DB_OK)
			return e;
	}
	for (i = 0; i < f->n; i++) {
		struct db_param c[] = { DBP_STR(u->id), DBP_STR(f->ids[i]), DBP_STR(f->blob_names[i]),
					DBP_STR(u->owner), DBP_STR(f->blob_names[i]),
					DBP_U64(f->takeover_ms * 1000) };
		struct db_param h[] = { DBP_U64(u->expiry), DBP_STR(f->blob_names[i]) };

		if ((e = db_exec_one(db, sql_claim_partial, c, ARRAY_LEN(c))) != DB_OK ||
		    (e = db_exec(db, sql_hold_partial, h, ARRAY_LEN(h), NULL)) != DB_OK)
			return e;
	}
	return DB_OK;
}

enum db_err
concat_db_final_intent(struct db *db, const struct concat_final_new *f, uint64_t *doc_id)
{
	DB_IN_TX(db, final_intent_tx(db, f, doc_id));
}

static const char sql_hold[] =
	"UPDATE blobs b JOIN uploads u ON u.blob_name = b.name"
	" SET b.touched_at = NOW(6), b.expires_at = GREATEST(b.expires_at, NOW(6) + INTERVAL ? SECOND)"
	" WHERE u.final_id = ? AND b.state = 'pending'";

enum db_err
concat_db_hold(struct db *db, const char *final_id, unsigned seconds)
{
	struct db_param p[] = { DBP_U64(seconds), DBP_STR(final_id) };

	return db_exec(db, sql_hold, p, ARRAY_LEN(p), NULL);
}

static const char sql_unclaim[] =
	"UPDATE uploads SET final_id = NULL WHERE final_id = ? AND consumed_at IS NULL";

enum db_err
concat_db_unclaim(struct db *db, const char *final_id)
{
	struct db_param p[] = { DBP_STR(final_id) };

	return db_exec(db, sql_unclaim, p, ARRAY_LEN(p), NULL);
}

static const char sql_consume[] =
	"UPDATE uploads SET consumed_at = NOW(6) WHERE id = ? AND final_id = ? AND consumed_at IS NULL";

static enum db_err
consume_tx(struct db *db, const char *partial_id, const char *blob_name, const char *final_id)
{
	struct db_param p[] = { DBP_STR(partial_id), DBP_STR(final_id) };
	uint64_t n = 0;
	enum db_err e;

	if ((e = db_exec(db, sql_consume, p, ARRAY_LEN(p), &n)) != DB_OK || n == 0)
		return e;	/* consumed before: settled then */
	return quota_db_settle(db, blob_name);
}

enum db_err
concat_db_consume(struct db *db, const char *partial_id, const char *blob_name, const char *final_id)
{
	DB_IN_TX(db, consume_tx(db, partial_id, blob_name, final_id));
}
