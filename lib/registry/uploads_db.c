/* uploads_db.c - see uploads_db.h.  All SQL is literal text with bound parameters. */
#include <string.h>

#include "registry/uploads_db.h"

/* Each transaction here runs whole again on a certification failure
 * (DB_IN_TX): its conditions are read inside it. */

/* The last recorded block is the one whose seq is nblocks - 1. */
static const char sql_get_upload[] =
	"SELECT u.id, u.blob_name, u.document_id, u.owner, u.upload_length, u.content_type,"
	" b.purpose, COALESCE(u.replace_version, 0), u.recorded, u.nblocks, u.hash_state, b.state,"
	" b.holder IS NOT NULL, CAST(TIMESTAMPDIFF(MICROSECOND, b.touched_at, NOW(6)) DIV 1000 AS SIGNED),"
	" IF(b.state = 'pending', COALESCE(CAST(FLOOR(UNIX_TIMESTAMP(b.expires_at)) AS SIGNED), 0), 0),"
	" COALESCE(k.size, 0), COALESCE(k.md5, ''),"
	" COALESCE(u.partial_etag, ''), COALESCE(u.final_id, ''), u.consumed_at IS NOT NULL,"
	" COALESCE(u.partials, '')"
	" FROM uploads u JOIN blobs b ON b.name = u.blob_name"
	" LEFT JOIN upload_blocks k ON k.upload_id = u.id AND k.seq + 1 = u.nblocks"
	" WHERE u.id = ?";

enum db_err
uploads_get(struct db *db, const char *id, struct upload_row *out)
{
	char purpose[16], state[16];
	uint64_t held = 0, consumed = 0;
	struct db_col c[] = { DBC_STR(out->id), DBC_STR(out->blob_name), DBC_U64(&out->document_id),
			      DBC_STR(out->owner), DBC_U64(&out->length), DBC_STR(out->content_type),
			      DBC_STR(purpose), DBC_U64(&out->replace_version), DBC_U64(&out->recorded),
			      DBC_U64(&out->nblocks), DBC_STR(out->hash_state), DBC_STR(state),
			      DBC_U64(&held), DBC_I64(&out->held_idle_ms), DBC_I64(&out->expires_unix),
			      DBC_U64(&out->last_size), DBC_STR(out->last_md5),
			      DBC_STR(out->partial_etag), DBC_STR(out->final_id), DBC_U64(&consumed),
			      DBC_STR(out->partials) };
	struct db_param p[] = { DBP_STR(id) };
	enum db_err e;

	memset(out, 0, sizeof *out);
	e = db_query(db, sql_get_upload, p, ARRAY_LEN(p), c, ARRAY_LEN(c), NULL, NULL);
	if (e == DB_OK) {
		out->purpose = intent_purpose_from_name(purpose);
		out->state = registry_state_from_name(state);
		out->held = held != 0;
		out->consumed = consumed != 0;
	}
	return e;
}

/* Free, or its holder is dead (UPLOADS_UNHELD_SQL). */
static const char sql_claim[] =
	"UPDATE blobs SET holder = ?, holder_session = " UPLOADS_SESSION_SQL ", touched_at = NOW(6),"
	" expires_at = NOW(6) + INTERVAL ? SECOND"
	" WHERE name = ? AND state = 'pending' AND " UPLOADS_UNHELD_SQL("");

enum db_err
uploads_claim(struct db *db, const char *blob_name, const char *holder, unsigned expiry,
	      uint64_t takeover_ms)
{
	struct db_param p[] = { DBP_STR(holder), DBP_U64(expiry), DBP_STR(blob_name),
				DBP_U64(takeover_ms * 1000) };

	return db_exec_one(db, sql_claim, p, ARRAY_LEN(p));
}

static const char sql_renew[] =
	"UPDATE blobs SET touched_at = NOW(6), expires_at = NOW(6) + INTERVAL ? SECOND"
	" WHERE name = ? AND state = 'pending' AND holder = ?";

enum db_err
uploads_renew(struct db *db, const char *blob_name, const char *holder, unsigned expiry)
{
	struct db_param p[] = { DBP_U64(expiry), DBP_STR(blob_name), DBP_STR(holder) };

	return db_exec_one(db, sql_renew, p, ARRAY_LEN(p));
}

static const char sql_release[] =
	"UPDATE blobs SET holder = NULL, holder_session = NULL WHERE name = ? AND state = 'pending' AND holder = ?";

enum db_err
uploads_release(struct db *db, const char *blob_name, const char *holder)
{
	struct db_param p[] = { DBP_STR(blob_name), DBP_STR(holder) };

	return db_exec(db, sql_release, p, ARRAY_LEN(p), NULL);
}

static const char sql_insert_block[] =
	"INSERT INTO upload_blocks (upload_id, seq, block_id, size, md5) VALUES (?, ?, ?, ?, ?)";
static const char sql_advance[] =
	"UPDATE uploads SET recorded = ?, nblocks = ?, hash_state = ?"
	" WHERE id = ? AND recorded = ? AND nblocks = ?";

/* The heartbeat that also lets go: the PATCH's last record. */
static const char sql_renew_release[] =
	"UPDATE blobs SET touched_at = NOW(6), expires_at = NOW(6) + INTERVAL ? SECOND, holder = NULL"
	" WHERE name = ? AND state = 'pending' AND holder = ?";

static enum db_err
record_tx(struct db *db, const struct upload_record *rec)
{
	struct db_param h[] = { DBP_U64(rec->expiry), DBP_STR(rec->blob_name), DBP_STR(rec->holder) };
	uint64_t recorded = rec->recorded_before;
	enum db_err e;
	size_t i;

	if (rec->release)
		e = db_exec_one(db, sql_renew_release, h, ARRAY_LEN(h));
	else
		e = db_exec_one(db, sql_renew, h, ARRAY_LEN(h));
	if (e != DB_OK)
		return e;
	for (i = 0; i < rec->n; i++) {
		const struct upload_block *b = &rec->blocks[i];
		struct db_param p[] = { DBP_STR(rec->upload_id), DBP_U64(rec->nblocks_before + i),
					DBP_STR(b->id), DBP_U64(b->size), DBP_STR(b->md5) };

		if ((e = db_exec(db, sql_insert_block, p, ARRAY_LEN(p), NULL)) != DB_OK)
			return e == DB_DUPLICATE ? DB_CONFLICT : e;
		recorded += b->size;
	}
	{
		struct db_param p[] = { DBP_U64(recorded), DBP_U64(rec->nblocks_before + rec->n),
					DBP_STR(rec->hash_state), DBP_STR(rec->upload_id),
					DBP_U64(rec->recorded_before), DBP_U64(rec->nblocks_before) };
		return db_exec_one(db, sql_advance, p, ARRAY_LEN(p));
	}
}

enum db_err
uploads_record(struct db *db, const struct upload_record *rec)
{
	DB_IN_TX(db, record_tx(db, rec));
}

struct ids_ctx {
	char id[UPLOAD_BLOCK_ID_MAX];
	int (*on_id)(void *, const char *);
	void *ctx;
};

static int
id_row(void *arg)
{
	struct ids_ctx *ic = arg;

	return ic->on_id(ic->ctx, ic->id);
}

static const char sql_block_ids[] =
	"SELECT block_id FROM upload_blocks WHERE upload_id = ? ORDER BY seq";

enum db_err
uploads_block_ids(struct db *db, const char *upload_id, int (*on_id)(void *ctx, const char *id),
		  void *ctx)
{
	struct ids_ctx ic = { "", on_id, ctx };
	struct db_col c[] = { DBC_STR(ic.id) };
	struct db_param p[] = { DBP_STR(upload_id) };

	return db_query(db, sql_block_ids, p, ARRAY_LEN(p), c, ARRAY_LEN(c), id_row, &ic);
}

static const char sql_drop_blocks_of_blob[] =
	"DELETE k FROM upload_blocks k JOIN uploads u ON u.id = k.upload_id WHERE u.blob_name = ?";

enum db_err
uploads_record_ready(struct db *db, const char *blob_name)
{
	struct db_param p[] = { DBP_STR(blob_name) };

	return db_exec(db, sql_drop_blocks_of_blob, p, ARRAY_LEN(p), NULL);
}

static const char sql_find_pending[] =
	"SELECT u.id FROM documents d JOIN uploads u ON u.document_id = d.id AND u.blob_name = d.blob_name"
	" WHERE d.name = ? AND d.status = 'pending' AND u.owner = ?";

enum db_err
uploads_find_pending(struct db *db, struct span name, const char *owner, char *id, size_t idlen)
{
	char found[UPLOAD_ID_MAX] = "";
	struct db_col c[] = { DBC_STR(found) };
	struct db_param p[] = { DBP_SPAN(name), DBP_STR(owner) };
	enum db_err e = db_query(db, sql_find_pending, p, ARRAY_LEN(p), c, ARRAY_LEN(c), NULL, NULL);

	if (e == DB_NOT_FOUND) {
		found[0] = '\0';
		e = DB_OK;
	}
	if (e == DB_OK && copy_cstr(id, idlen, found) != 0)
		return DB_FAILED;
	return e;
}
