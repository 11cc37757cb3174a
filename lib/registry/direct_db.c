/* direct_db.c - see direct_db.h.  All SQL is literal text with bound parameters. */
#include <string.h>

#include "base/failpoint.h"
#include "registry/direct_db.h"
#include "registry/docs_db.h"

static const char sql_mark_direct[] =
	"UPDATE blobs SET route = 'direct', direct_size = ?, direct_sha256 = ?, sas_granted = ?,"
	" sas_expires = ? WHERE name = ?";
static const char sql_mark_key_direct[] =
	"UPDATE idempotency_keys SET route = 'direct' WHERE owner = ? AND idem_key = ?";

static enum db_err
create_tx(struct db *db, const struct direct_new *n, uint64_t *doc_id, char *created_at)
{
	struct db_param p[] = { DBP_U64(n->size), DBP_STR_OR_NULL(n->sha256), DBP_I64(n->grant.signed_at),
				DBP_I64(n->grant.expires), DBP_STR(n->blob_name) };
	enum db_err e;

	e = docs_create_intent_tx(db, n->name, n->owner, n->content_type, n->blob_name, &n->lease,
				  n->idem_key, doc_id, created_at);
	if (e != DB_OK)
		return e;
	if ((e = db_exec_one(db, sql_mark_direct, p, ARRAY_LEN(p))) != DB_OK || n->idem_key == NULL)
		return e;
	{
		/* The key is this route's: a server create never resumes it. */
		struct db_param k[] = { DBP_STR(n->owner), DBP_STR(n->idem_key) };
		return db_exec_one(db, sql_mark_key_direct, k, ARRAY_LEN(k));
	}
}

/* Re-run whole on a certification failure, and on a lost commit (its SAS
 * would create a blob no row names), as a server create is. */
enum db_err
direct_db_create_intent(struct db *db, const struct direct_new *n, uint64_t *doc_id,
			char *created_at)
{
	DB_IN_TX_CHECKED(db, "direct.intent_commit_lost", create_tx(db, n, doc_id, created_at),
			 docs_create_intent_check(db, n->blob_name, *doc_id));
}

static const char sql_get_direct[] =
	"SELECT name, document_id, state, route, COALESCE(direct_size, 0), COALESCE(direct_sha256, ''),"
	" COALESCE(holder, ''), COALESCE(etag, ''), IF(etag IS NULL, 0, COALESCE(size, 0)),"
	" IF(etag IS NULL, '', COALESCE(sha256, '')),"
	" IF(state = 'pending', COALESCE(CAST(FLOOR(UNIX_TIMESTAMP(expires_at)) AS SIGNED), 0), 0),"
	" COALESCE(sas_granted, 0), COALESCE(sas_expires, 0)"
	" FROM blobs WHERE name = ?";

enum db_err
direct_db_get(struct db *db, const char *blob_name, struct direct_row *out)
{
	char state[16] = "", route[16] = "";
	struct db_col c[] = { DBC_STR(out->blob_name), DBC_U64(&out->document_id), DBC_STR(state),
			      DBC_STR(route), DBC_U64(&out->declared_size), DBC_STR(out->declared_sha256),
			      DBC_STR(out->holder), DBC_STR(out->etag), DBC_U64(&out->size),
			      DBC_STR(out->sha256), DBC_I64(&out->expires_unix),
			      DBC_I64(&out->grant.signed_at), DBC_I64(&out->grant.expires) };
	struct db_param p[] = { DBP_STR(blob_name) };
	enum db_err e;

	memset(out, 0, sizeof *out);
	e = db_query(db, sql_get_direct, p, ARRAY_LEN(p), c, ARRAY_LEN(c), NULL, NULL);
	out->state = registry_state_from_name(state);
	out->route = upload_route_from_name(route);
	return e;
}

/* GREATEST: a retry's grant never shortens what an earlier one allowed. */
static const char sql_renew_grant[] =
	"UPDATE blobs SET touched_at = NOW(6), expires_at = NOW(6) + INTERVAL ? SECOND,"
	" sas_granted = ?, sas_expires = GREATEST(COALESCE(sas_expires, 0), ?)"
	" WHERE name = ? AND state = 'pending' AND holder = ? AND route = 'direct'";

enum db_err
direct_db_renew_grant(struct db *db, const char *blob_name, const struct lease *l,
		      const struct direct_sas_grant *g)
{
	struct db_param p[] = { DBP_U64(l->seconds), DBP_I64(g->signed_at), DBP_I64(g->expires),
				DBP_STR(blob_name), DBP_STR(l->holder) };

	return db_exec_one(db, sql_renew_grant, p, ARRAY_LEN(p));
}

/* The triple goes in one statement: recorded whole or not at all, and only
 * over the record finalize read (a compare-and-set on the ETag). */
static const char sql_record[] =
	"UPDATE blobs SET etag = ?, size = ?, sha256 = ?"
	" WHERE name = ? AND state = 'pending' AND holder = ? AND route = 'direct'"
	" AND COALESCE(etag, '') = ?";

enum db_err
direct_db_record(struct db *db, const char *blob_name, const char *holder, const char *was_etag,
		 const char *etag, uint64_t size, const char *sha256_hex)
{
	struct db_param p[] = { DBP_STR(etag), DBP_U64(size), DBP_STR(sha256_hex), DBP_STR(blob_name),
				DBP_STR(holder), DBP_STR(was_etag) };
	struct direct_row now;
	enum db_err e;

	e = db_exec_one(db, sql_record, p, ARRAY_LEN(p));
	if (e != DB_CONFLICT)
		return e;
	/* Zero rows changed is also what MariaDB says when the row already
	 * holds exactly these values (no CLIENT_FOUND_ROWS): a finalize that
	 * recorded them before it died, or a concurrent one.  Look. */
	if ((e = direct_db_get(db, blob_name, &now)) != DB_OK)
		return e == DB_NOT_FOUND ? DB_CONFLICT : e;
	if (now.state == REGISTRY_PENDING && strcmp(now.holder, holder) == 0 && strcmp(now.etag, etag) == 0 &&
	    now.size == size && strcmp(now.sha256, sha256_hex) == 0)
		return DB_OK;
	return DB_CONFLICT;
}

static const char sql_find_pending[] =
	"SELECT d.id FROM documents d JOIN blobs b ON b.name = d.blob_name"
	" WHERE d.name = ? AND d.status = 'pending' AND d.owner = ? AND b.route = 'direct'";

enum db_err
direct_db_find_pending(struct db *db, struct span name, const char *owner, uint64_t *doc_id)
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
