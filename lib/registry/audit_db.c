/* audit_db.c - see audit_db.h.  All SQL is literal text with bound parameters. */
#include <string.h>

#include "registry/audit_db.h"

/* The text of a row's enum columns, read before they become enums. */
struct audit_text {
	char state[16];
	char purpose[16];
	char doc_status[16];
};

struct audit_ctx {
	struct audit_row row;
	struct audit_text text;
	uint64_t has_registry;
	uint64_t lease_live;
	int (*on_row)(void *, const struct audit_row *);
	void *ctx;
};

/* The columns just read become the row's flags and enums. */
static void
audit_row_finish(struct audit_ctx *ac)
{
	ac->row.has_registry = ac->has_registry != 0;
	ac->row.lease_live = ac->lease_live != 0;
	ac->row.state = registry_state_from_name(ac->text.state);
	ac->row.purpose = intent_purpose_from_name(ac->text.purpose);
	ac->row.doc_status = doc_status_from_name(ac->text.doc_status);
}

static int
audit_row_cb(void *arg)
{
	struct audit_ctx *ac = arg;

	audit_row_finish(ac);
	return ac->on_row(ac->ctx, &ac->row);
}

/* LEFT(name, CHAR_LENGTH(?)) = ? rather than LIKE: a prefix may hold % or _. */
static const char sql_audit_registry[] =
	"SELECT b.name, 1, b.state, b.purpose, TIMESTAMPDIFF(SECOND, b.touched_at, NOW(6)),"
	" COALESCE(TIMESTAMPDIFF(SECOND, b.retire_after, NOW(6)), -1),"
	" COALESCE(d.id, 0), COALESCE(d.status, ''), COALESCE(d.size, 0), COALESCE(d.sha256, ''),"
	" COALESCE(b.state = 'pending' AND b.expires_at > NOW(6), 0), COALESCE(d.blob_etag, '')"
	" FROM blobs b LEFT JOIN documents d ON d.blob_name = b.name"
	" WHERE LEFT(b.name, CHAR_LENGTH(?)) = ?";
static const char sql_audit_unregistered[] =
	"SELECT d.blob_name, 0, '', '', 0, -1, d.id, d.status, COALESCE(d.size, 0),"
	" COALESCE(d.sha256, ''), 0, COALESCE(d.blob_etag, '') FROM documents d LEFT JOIN blobs b ON b.name = d.blob_name"
	" WHERE b.name IS NULL AND LEFT(d.blob_name, CHAR_LENGTH(?)) = ?";

#define AUDIT_NCOLS 12

static void
audit_cols(struct audit_ctx *ac, struct db_col *c)
{
	c[0] = DBC_STR(ac->row.name);
	c[1] = DBC_U64(&ac->has_registry);
	c[2] = DBC_STR(ac->text.state);
	c[3] = DBC_STR(ac->text.purpose);
	c[4] = DBC_I64(&ac->row.age);
	c[5] = DBC_I64(&ac->row.retire_overdue);
	c[6] = DBC_U64(&ac->row.doc_id);
	c[7] = DBC_STR(ac->text.doc_status);
	c[8] = DBC_U64(&ac->row.doc_size);
	c[9] = DBC_STR(ac->row.doc_sha256);
	c[10] = DBC_U64(&ac->lease_live);
	c[11] = DBC_STR(ac->row.doc_etag);
}

enum db_err
audit_db_walk(struct db *db, const char *prefix, int (*on_row)(void *, const struct audit_row *),
	      void *ctx)
{
	struct audit_ctx ac;
	struct db_col c[AUDIT_NCOLS];
	struct db_param p[] = { DBP_STR(prefix), DBP_STR(prefix) };
	enum db_err e;

	memset(&ac, 0, sizeof ac);
	ac.on_row = on_row;
	ac.ctx = ctx;
	audit_cols(&ac, c);
	e = db_query(db, sql_audit_registry, p, ARRAY_LEN(p), c, AUDIT_NCOLS, audit_row_cb, &ac);
	if (e != DB_OK)
		return e;
	return db_query(db, sql_audit_unregistered, p, ARRAY_LEN(p), c, AUDIT_NCOLS, audit_row_cb, &ac);
}

/* The walk's two statements for one name (blob names and documents'
 * blob_name are both unique). */
static const char sql_reread_registry[] =
	"SELECT b.name, 1, b.state, b.purpose, TIMESTAMPDIFF(SECOND, b.touched_at, NOW(6)),"
	" COALESCE(TIMESTAMPDIFF(SECOND, b.retire_after, NOW(6)), -1),"
	" COALESCE(d.id, 0), COALESCE(d.status, ''), COALESCE(d.size, 0), COALESCE(d.sha256, ''),"
	" COALESCE(b.state = 'pending' AND b.expires_at > NOW(6), 0), COALESCE(d.blob_etag, '')"
	" FROM blobs b LEFT JOIN documents d ON d.blob_name = b.name WHERE b.name = ?";
static const char sql_reread_unregistered[] =
	"SELECT d.blob_name, 0, '', '', 0, -1, d.id, d.status, COALESCE(d.size, 0),"
	" COALESCE(d.sha256, ''), 0, COALESCE(d.blob_etag, '') FROM documents d LEFT JOIN blobs b ON b.name = d.blob_name"
	" WHERE b.name IS NULL AND d.blob_name = ?";

enum db_err
audit_db_reread(struct db *db, const char *name, struct audit_row *out)
{
	struct audit_ctx ac;
	struct db_col c[AUDIT_NCOLS];
	struct db_param p[] = { DBP_STR(name) };
	enum db_err e;

	memset(&ac, 0, sizeof ac);
	audit_cols(&ac, c);
	e = db_query(db, sql_reread_registry, p, 1, c, AUDIT_NCOLS, NULL, NULL);
	if (e == DB_NOT_FOUND)
		e = db_query(db, sql_reread_unregistered, p, 1, c, AUDIT_NCOLS, NULL, NULL);
	if (e != DB_OK)
		return e;
	audit_row_finish(&ac);
	*out = ac.row;
	return DB_OK;
}
