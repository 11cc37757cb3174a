/* idem_db.c - see idem_db.h.  All SQL is literal text with bound parameters. */
#include <string.h>

#include "registry/idem_db.h"

static const char sql_idem_get[] =
	"SELECT COALESCE(document_id, 0), COALESCE(blob_name, ''), doc_name,"
	" COALESCE(content_type, ''), COALESCE(status_code, 0), COALESCE(sha256, ''),"
	" status_code IS NOT NULL AND created_at < NOW(6) - INTERVAL ? SECOND,"
	" COALESCE(answer_size, 0), COALESCE(answer_content_type, ''),"
	" COALESCE(DATE_FORMAT(answer_created_at, " DOC_TIME_SQL "), ''), COALESCE(answer_version, 0), route"
	" FROM idempotency_keys WHERE owner = ? AND idem_key = ?";

/* The recorded answer as the document it described. */
static void
idem_answer(struct idem_row *k, const char *owner)
{
	struct doc *d = &k->answer;

	k->has_answer = k->status_code != 0 && d->version != 0;
	if (!k->has_answer)
		return;
	d->id = k->document_id;
	d->status = DOC_STATUS_READY;
	memcpy(d->name, k->doc_name, sizeof d->name);
	memcpy(d->blob_name, k->blob_name, sizeof d->blob_name);
	memcpy(d->sha256, k->sha256, sizeof d->sha256);
	if (copy_cstr(d->owner, sizeof d->owner, owner) != 0)
		d->owner[0] = '\0';
}

enum db_err
idem_get(struct db *db, const char *owner, const char *key, unsigned ttl, struct idem_row *out)
{
	uint64_t expired = 0;
	char route[16] = "";
	struct db_col c[] = { DBC_U64(&out->document_id), DBC_STR(out->blob_name),
			      DBC_STR(out->doc_name), DBC_STR(out->content_type),
			      DBC_U64(&out->status_code), DBC_STR(out->sha256), DBC_U64(&expired),
			      DBC_U64(&out->answer.size), DBC_STR(out->answer.content_type),
			      DBC_STR(out->answer.created_at), DBC_U64(&out->answer.version), DBC_STR(route) };
	struct db_param p[] = { DBP_U64(ttl), DBP_STR(owner), DBP_STR(key) };
	enum db_err e;

	memset(out, 0, sizeof *out);
	e = db_query(db, sql_idem_get, p, ARRAY_LEN(p), c, ARRAY_LEN(c), NULL, NULL);
	if (e == DB_OK) {
		out->route = upload_route_from_name(route);
		out->expired = expired != 0;
		idem_answer(out, owner);
	}
	return e;
}

/*
 * The answer is copied from the document row itself, inside the caller's
 * transaction when there is one: the fields cannot differ from what the
 * ready document says, and the key (found through idempotency_blob) is
 * locked after the document and the blob, the order every transaction
 * takes.  d.blob_name = k.blob_name: a key answers for the blob it
 * created, never for a later replace's.
 */
static const char sql_idem_record_ready[] =
	"UPDATE idempotency_keys k JOIN documents d ON d.id = k.document_id AND d.blob_name = k.blob_name"
	" SET k.status_code = ?, k.sha256 = d.sha256, k.answer_size = d.size,"
	" k.answer_content_type = d.content_type, k.answer_created_at = d.created_at,"
	" k.answer_version = d.version"
	" WHERE k.blob_name = ? AND k.status_code IS NULL AND d.status = 'ready'";

enum db_err
idem_record_ready(struct db *db, const char *blob_name)
{
	struct db_param p[] = { DBP_U64(IDEM_STATUS_CREATED), DBP_STR(blob_name) };

	return db_exec(db, sql_idem_record_ready, p, ARRAY_LEN(p), NULL);
}

static const char sql_idem_drop_expired[] =
	"DELETE FROM idempotency_keys WHERE owner = ? AND idem_key = ?"
	" AND status_code IS NOT NULL AND created_at < NOW(6) - INTERVAL ? SECOND";

enum db_err
idem_drop_expired(struct db *db, const char *owner, const char *key, unsigned ttl)
{
	struct db_param p[] = { DBP_STR(owner), DBP_STR(key), DBP_U64(ttl) };

	return db_exec(db, sql_idem_drop_expired, p, ARRAY_LEN(p), NULL);
}
