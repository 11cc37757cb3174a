/* direct_db.c - see direct_db.h.  All SQL is literal text with bound parameters. */
#include <string.h>

#include "base/failpoint.h"
#include "registry/direct_db.h"
#include "registry/docs_db.h"

static const char sql_mark_direct[] =
	"UPDATE blobs SET route = 'direct', direct_size = ?, direct_sha256 = ? WHERE name = ?";

static enum db_err
create_tx(struct db *db, const struct direct_new *n, uint64_t *doc_id)
{
	struct db_param p[] = { DBP_U64(n->size), DBP_STR_OR_NULL(n->sha256), DBP_STR(n->blob_name) };
	enum db_err e;

	e = docs_create_intent_tx(db, n->name, n->owner, n->content_type, n->blob_name, &n->lease,
				  n->idem_key, doc_id);
	if (e != DB_OK)
		return e;
	return db_exec_one(db, sql_mark_direct, p, ARRAY_LEN(p));
}

/* Re-run whole on a certification failure, and on a lost commit (its SAS
 * would create a blob no row names), as a server create is. */
enum db_err
direct_create_intent(struct db *db, const struct direct_new *n, uint64_t *doc_id)
{
	DB_IN_TX_CHECKED(db, "direct.intent_commit_lost", create_tx(db, n, doc_id),
			 docs_create_intent_check(db, n->blob_name, *doc_id));
}

static const char sql_get_direct[] =
	"SELECT name, document_id, state, route, COALESCE(direct_size, 0), COALESCE(direct_sha256, ''),"
	" COALESCE(holder, ''), COALESCE(etag, ''),"
	" IF(state = 'pending', COALESCE(CAST(FLOOR(UNIX_TIMESTAMP(expires_at)) AS SIGNED), 0), 0)"
	" FROM blobs WHERE name = ?";

enum db_err
direct_get(struct db *db, const char *blob_name, struct direct_row *out)
{
	char state[16] = "", route[16] = "";
	struct db_col c[] = { DBC_STR(out->blob_name), DBC_U64(&out->document_id), DBC_STR(state),
			      DBC_STR(route), DBC_U64(&out->declared_size), DBC_STR(out->declared_sha256),
			      DBC_STR(out->holder), DBC_STR(out->etag), DBC_I64(&out->expires_unix) };
	struct db_param p[] = { DBP_STR(blob_name) };
	enum db_err e;

	memset(out, 0, sizeof *out);
	e = db_query(db, sql_get_direct, p, ARRAY_LEN(p), c, ARRAY_LEN(c), NULL, NULL);
	out->state = registry_state_from_name(state);
	out->route = upload_route_from_name(route);
	return e;
}

/* The triple goes in one statement: recorded whole or not at all. */
static const char sql_record[] =
	"UPDATE blobs SET etag = ?, size = ?, sha256 = ?"
	" WHERE name = ? AND state = 'pending' AND holder = ? AND route = 'direct'";

enum db_err
direct_record(struct db *db, const char *blob_name, const char *holder, const char *etag, uint64_t size,
	      const char *sha256_hex)
{
	struct db_param p[] = { DBP_STR(etag), DBP_U64(size), DBP_STR(sha256_hex), DBP_STR(blob_name),
				DBP_STR(holder) };

	return db_exec_one(db, sql_record, p, ARRAY_LEN(p));
}

static const char sql_find_pending[] =
	"SELECT d.id FROM documents d JOIN blobs b ON b.name = d.blob_name"
	" WHERE d.name = ? AND d.status = 'pending' AND d.owner = ? AND b.route = 'direct'";

enum db_err
direct_find_pending(struct db *db, struct span name, const char *owner, uint64_t *doc_id)
{
	struct db_col c[] = { DBC_U64(doc_id) };
	struct db_param p[] = { DBP_SPAN(name), DBP_STR(owner) };
	enum db_err e;

	*doc_id = 0;
	e = db_query(db, sql_find_pending, p, ARRAY_LEN(p), c, ARRAY_LEN(c), NULL, NULL);
	if (e == DB_NOT_FOUND) {
		*doc_id = 0;
		e = DB_OK;
	}
	return e;
}
