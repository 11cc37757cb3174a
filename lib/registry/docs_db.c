/* docs_db.c - see docs_db.h.  All SQL is literal text with bound parameters. */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "base/failpoint.h"
#include "base/log.h"
#include "registry/blobs_db.h"
#include "registry/docs_db.h"
#include "registry/events_db.h"
#include "registry/quota_db.h"
#include "registry/idem_db.h"
#include "registry/uploads_db.h"

#define DOC_COLUMNS "id, name, status, blob_name, COALESCE(size, 0), content_type," \
	" COALESCE(sha256, ''), owner, version, DATE_FORMAT(created_at, " DOC_TIME_SQL ")," \
	" DATE_FORMAT(updated_at, " DOC_TIME_SQL "), COALESCE(blob_etag, ''), COALESCE(ready_seq, 0)," \
	" COALESCE(DATE_FORMAT(quarantined_at, " DOC_TIME_SQL "), '')"

/* The intent's two rows go in one round trip (db_batch): the document's id
 * and creation time come back from its INSERT, and the registry row takes
 * the id from LAST_INSERT_ID() on the server. */
static const char sql_insert_doc[] =
	"INSERT INTO documents (name, status, blob_name, content_type, owner)"
	" VALUES (?, 'pending', ?, ?, ?) RETURNING id, DATE_FORMAT(created_at, " DOC_TIME_SQL ")";
static const char sql_insert_blob[] =
	"INSERT INTO blobs (name, document_id, purpose, state, holder, expires_at)"
	" VALUES (?, LAST_INSERT_ID(), ?, 'pending', ?, NOW(6) + INTERVAL ? SECOND)";
static const char sql_insert_idem[] =
	"INSERT INTO idempotency_keys (owner, idem_key, document_id, blob_name, doc_name, content_type)"
	" VALUES (?, ?, ?, ?, ?, ?)";

/* The intent's statements; commit: the batch carries the COMMIT too (the
 * two INSERTs are the whole transaction and either fails loudly). */
static enum db_err
create_intent(struct db *db, struct span name, const char *owner, const char *content_type,
	      const char *blob_name, const struct lease *l, const char *idem_key,
	      uint64_t *doc_id, char *created_at, int commit)
{
	char at[DOC_TIME_MAX] = "";
	struct db_col made[] = { DBC_U64(doc_id), DBC_STR(at) };
	struct db_param doc[] = { DBP_SPAN(name), DBP_STR(blob_name), DBP_STR(content_type),
				  DBP_STR(owner) };
	struct db_param blob[] = { DBP_STR(blob_name), DBP_STR(intent_purpose_name(PURPOSE_CREATE)),
				   DBP_STR_OR_NULL(l->holder), DBP_U64(l->seconds) };
	struct db_step steps[] = { DB_STEP_ROW(sql_insert_doc, doc, made, ARRAY_LEN(made)),
				   DB_STEP(sql_insert_blob, blob), DB_STEP0(db_sql_commit) };
	enum db_err e;

	*doc_id = 0;
	if ((e = db_batch(db, steps, ARRAY_LEN(steps) - (commit ? 0 : 1))) != DB_OK)
		return e;
	if (!steps[0].found || *doc_id == 0 || at[0] == '\0')
		return DB_FAILED;
	if (created_at != NULL && copy_cstr(created_at, DOC_TIME_MAX, at) != 0)
		return DB_FAILED;
	if (idem_key) {
		struct db_param idem[] = { DBP_STR(owner), DBP_STR(idem_key), DBP_U64(*doc_id),
					   DBP_STR(blob_name), DBP_SPAN(name), DBP_STR(content_type) };
		if ((e = db_exec(db, sql_insert_idem, idem, ARRAY_LEN(idem), NULL)) != DB_OK)
			return e;
	}
	return quota_db_reserve(db, *doc_id, blob_name, l->reserve, 1);
}

enum db_err
docs_create_intent_tx(struct db *db, struct span name, const char *owner, const char *content_type,
		      const char *blob_name, const struct lease *l, const char *idem_key,
		      uint64_t *doc_id, char *created_at)
{
	return create_intent(db, name, owner, content_type, blob_name, l, idem_key, doc_id, created_at, 0);
}

static const char sql_intent_there[] =
	"SELECT COUNT(*) FROM blobs WHERE name = ? AND document_id = ?";

/* After the create intent's COMMIT: is its registry row there?  Without
 * it the responder would upload a blob no row names (an orphan) and then
 * fail to mark a document that does not exist. */
enum db_err
docs_create_intent_check(struct db *db, const char *blob_name, uint64_t doc_id)
{
	struct db_param p[] = { DBP_STR(blob_name), DBP_U64(doc_id) };
	uint64_t n = 0;
	struct db_col c[] = { DBC_U64(&n) };
	enum db_err e = db_query(db, sql_intent_there, p, ARRAY_LEN(p), c, 1, NULL, NULL);

	if (e == DB_OK && n == 0) {
		log_error("create intent for blob %s: COMMIT succeeded but the row is not there;"
			  " taken as a certification failure", blob_name);
		return db_set_lost_commit(db);
	}
	return e;
}

enum db_err
docs_create_intent(struct db *db, struct span name, const char *owner, const char *content_type,
		   const char *blob_name, const struct lease *l, const char *idem_key, uint64_t *doc_id,
		   char *created_at)
{
	/* A plain create's intent is the two INSERTs alone: one round trip. */
	DB_IN_TX_CHECKED(db, "create.intent_commit_lost",
			 create_intent(db, name, owner, content_type, blob_name, l, idem_key, doc_id,
				       created_at, idem_key == NULL && !quota_db_enabled() &&
				       db_may_commit_in_batch(db)),
			 docs_create_intent_check(db, blob_name, *doc_id));
}

static const char sql_pending_type[] =
	"UPDATE documents SET content_type = ? WHERE id = ? AND blob_name = ? AND status = 'pending'";

enum db_err
docs_set_pending_type(struct db *db, uint64_t doc_id, const char *blob_name, const char *content_type)
{
	struct db_param p[] = { DBP_STR(content_type), DBP_U64(doc_id), DBP_STR(blob_name) };

	return db_exec_one(db, sql_pending_type, p, ARRAY_LEN(p));
}

static const char sql_doc_ready[] =
	"UPDATE documents SET status = 'ready', size = ?, sha256 = ?, blob_etag = ?, updated_at = NOW(6)"
	" WHERE id = ? AND blob_name = ? AND status = 'pending'";
/* Fenced: only the row's holder commits it. */
static const char sql_blob_commit[] =
	"UPDATE blobs SET state = 'committed', size = ?, sha256 = ?"
	" WHERE name = ? AND state = 'pending' AND holder = ?";

/* Last in the ready transaction: the counter row's lock is held only to
 * the commit, and makes the sequence follow commit order. */
static const char sql_bump_ready_counter[] =
	"UPDATE ready_counter SET n = LAST_INSERT_ID(n + 1) WHERE id = 1";
static const char sql_doc_ready_seq[] =
	"UPDATE documents SET ready_seq = LAST_INSERT_ID() WHERE id = ? AND status = 'ready'";
static const char sql_get_doc[] = "SELECT " DOC_COLUMNS " FROM documents WHERE id = ?";

/* The text of a row's enum column, read before it becomes an enum. */
struct row_text {
	char status[16];
};
static void doc_cols(struct doc *d, struct row_text *t, struct db_col *c);
static enum db_err doc_finish(enum db_err e, struct doc *d, const struct row_text *t);
#define DOC_NCOLS 14

/*
 * The ready transaction in as few round trips as its statements allow
 * (doc/design.md "Round trips"): the two fenced one-row updates, the
 * sequence, and the row as committed (when asked for) in one batch.  What
 * extras and the configuration hang on the intent runs between the
 * updates and the sequence, in a second batch's place, so the counter's
 * lock is still taken last.
 */
static enum db_err
mark_ready_tx(struct db *db, uint64_t doc_id, const char *blob_name, const char *holder,
	      uint64_t size, const char *sha, const char *etag, unsigned extras, struct doc *row)
{
	struct db_param d[] = { DBP_U64(size), DBP_STR(sha), DBP_STR(etag), DBP_U64(doc_id),
				DBP_STR(blob_name) };
	struct db_param b[] = { DBP_U64(size), DBP_STR(sha), DBP_STR(blob_name), DBP_STR(holder) };
	struct db_param id[] = { DBP_U64(doc_id) };
	struct db_col c[DOC_NCOLS];
	struct row_text t;
	struct db_step steps[] = { DB_STEP_ONE(sql_doc_ready, d), DB_STEP_ONE(sql_blob_commit, b),
				   DB_STEP0_ONE(sql_bump_ready_counter), DB_STEP_ONE(sql_doc_ready_seq, id),
				   DB_STEP_ROW(sql_get_doc, id, c, DOC_NCOLS) };
	size_t n = ARRAY_LEN(steps), first = 2;
	int more = (extras & READY_ALL) || events_db_enabled() || quota_db_enabled();
	enum db_err e;

	if (row != NULL) {
		memset(row, 0, sizeof *row);
		doc_cols(row, &t, c);
	} else {
		n--;
	}
	if (more) {
		if ((e = db_batch(db, steps, first)) != DB_OK)
			return e;
		if ((extras & READY_UPLOAD) && (e = uploads_record_ready(db, blob_name)) != DB_OK)
			return e;
		if ((extras & READY_KEY) && (e = idem_record_ready(db, blob_name)) != DB_OK)
			return e;
		if ((e = events_db_record_ready(db, doc_id)) != DB_OK ||
		    (e = quota_db_settle(db, blob_name)) != DB_OK ||
		    (e = quota_db_account(db, doc_id, (int64_t)size, 1)) != DB_OK)
			return e;
		e = db_batch(db, steps + first, n - first);
	} else {
		e = db_batch(db, steps, n);
	}
	if (e == DB_OK && row != NULL)
		e = doc_finish(steps[n - 1].found ? DB_OK : DB_FAILED, row, &t);
	return e;
}

enum db_err
docs_assign_ready_seq(struct db *db, uint64_t doc_id)
{
	struct db_param p[] = { DBP_U64(doc_id) };
	enum db_err e;

	if ((e = db_exec_one(db, sql_bump_ready_counter, NULL, 0)) != DB_OK)
		return e;
	return db_exec_one(db, sql_doc_ready_seq, p, ARRAY_LEN(p));
}

static const char sql_doc_still_pending[] =
	"SELECT COUNT(*) FROM documents WHERE id = ? AND blob_name = ? AND status = 'pending'";

/* After mark-ready's COMMIT: is the document still pending?  Then the 201
 * would name a document nobody can read (until a sweep rolls it forward). */
static enum db_err
mark_ready_check(struct db *db, uint64_t doc_id, const char *blob_name)
{
	struct db_param p[] = { DBP_U64(doc_id), DBP_STR(blob_name) };
	uint64_t n = 0;
	struct db_col c[] = { DBC_U64(&n) };
	enum db_err e = db_query(db, sql_doc_still_pending, p, ARRAY_LEN(p), c, 1, NULL, NULL);

	if (e == DB_OK && n > 0) {
		log_error("mark ready of document %llu: COMMIT succeeded but it is still pending;"
			  " taken as a certification failure", (unsigned long long)doc_id);
		return db_set_lost_commit(db);
	}
	return e;
}

enum db_err
docs_mark_ready(struct db *db, uint64_t doc_id, const char *blob_name, const char *holder,
		uint64_t size, const char *sha256_hex, const char *etag, unsigned extras,
		struct doc *row)
{
	DB_IN_TX_CHECKED(db, "create.ready_commit_lost",
			 mark_ready_tx(db, doc_id, blob_name, holder, size, sha256_hex, etag, extras,
				       row),
			 mark_ready_check(db, doc_id, blob_name));
}

static const char sql_drop_claimed_intent[] =
	"DELETE FROM blobs WHERE name = ? AND state = 'sweeping' AND claimed_by = ?";
static const char sql_drop_pending_doc[] =
	"DELETE FROM documents WHERE id = ? AND blob_name = ? AND status = 'pending'";
/* Only the key that started this intent: a replace's intent shares the
 * document id with the create whose key may still await its answer. */
static const char sql_drop_idem_for_blob[] =
	"DELETE FROM idempotency_keys WHERE blob_name = ? AND status_code IS NULL";

static enum db_err
abandon_tx(struct db *db, uint64_t doc_id, const char *blob_name, const char *holder)
{
	struct db_param b[] = { DBP_STR(blob_name), DBP_STR(holder) };
	struct db_param d[] = { DBP_U64(doc_id), DBP_STR(blob_name) };
	struct db_param k[] = { DBP_STR(blob_name) };
	enum db_err e;

	/* Documents, then blobs, then keys: the order every transaction
	 * locks rows in, so none waits on another in a cycle.  The blob's
	 * row must go under our claim (one row): otherwise the whole
	 * transaction rolls back. */
	if ((e = db_exec(db, sql_drop_pending_doc, d, 2, NULL)) != DB_OK)
		return e;
	if ((e = db_exec_one(db, sql_drop_claimed_intent, b, 2)) != DB_OK)
		return e;
	if ((e = db_exec(db, sql_drop_idem_for_blob, k, 1, NULL)) != DB_OK)
		return e;
	return quota_db_settle(db, blob_name);
}

enum db_err
docs_abandon_intent(struct db *db, uint64_t doc_id, const char *blob_name, const char *holder)
{
	DB_IN_TX(db, abandon_tx(db, doc_id, blob_name, holder));
}

static void
doc_cols(struct doc *d, struct row_text *t, struct db_col *c)
{
	c[0] = DBC_U64(&d->id);
	c[1] = DBC_STR(d->name);
	c[2] = DBC_STR(t->status);
	c[3] = DBC_STR(d->blob_name);
	c[4] = DBC_U64(&d->size);
	c[5] = DBC_STR(d->content_type);
	c[6] = DBC_STR(d->sha256);
	c[7] = DBC_STR(d->owner);
	c[8] = DBC_U64(&d->version);
	c[9] = DBC_STR(d->created_at);
	c[10] = DBC_STR(d->updated_at);
	c[11] = DBC_STR(d->blob_etag);
	c[12] = DBC_U64(&d->ready_seq);
	c[13] = DBC_STR(d->quarantined_at);
}

/* After a row was read into doc_cols: the status as an enum. */
static enum db_err
doc_finish(enum db_err e, struct doc *d, const struct row_text *t)
{
	if (e == DB_OK)
		d->status = doc_status_from_name(t->status);
	return e;
}

enum db_err
docs_get(struct db *db, uint64_t id, struct doc *out)
{
	struct db_col c[DOC_NCOLS];
	struct db_param p[] = { DBP_U64(id) };
	struct row_text t;

	memset(out, 0, sizeof *out);
	doc_cols(out, &t, c);
	return doc_finish(db_query(db, sql_get_doc, p, 1, c, DOC_NCOLS, NULL, NULL), out, &t);
}

struct list_ctx {
	struct doc row;
	struct row_text text;
	int (*on_doc)(void *, const struct doc *);
	void *ctx;
};

static int
list_row(void *arg)
{
	struct list_ctx *lc = arg;

	(void)doc_finish(DB_OK, &lc->row, &lc->text);
	return lc->on_doc(lc->ctx, &lc->row);
}

/* A quarantined document (sql/018) is no reader's: every list and count
 * leaves it out, and documents_visible keeps them range scans in order. */
static const char sql_list_ready[] =
	"SELECT " DOC_COLUMNS " FROM documents WHERE quarantined_at IS NULL AND ready_seq > ?"
	" ORDER BY ready_seq LIMIT ?";
static const char sql_list_ready_desc[] =
	"SELECT " DOC_COLUMNS " FROM documents WHERE quarantined_at IS NULL AND ready_seq < ?"
	" ORDER BY ready_seq DESC LIMIT ?";
/* LIKE's default escape is the backslash; naming it keeps the pattern's
 * meaning fixed should a server's sql_mode ever make it something else.
 * ('\\' is one backslash: DB_SQL_MODE leaves NO_BACKSLASH_ESCAPES out.) */
static const char sql_list_ready_prefix[] =
	"SELECT " DOC_COLUMNS " FROM documents WHERE quarantined_at IS NULL AND ready_seq > ?"
	" AND name LIKE ? ESCAPE '\\\\' ORDER BY ready_seq LIMIT ?";
static const char sql_list_ready_prefix_desc[] =
	"SELECT " DOC_COLUMNS " FROM documents WHERE quarantined_at IS NULL AND ready_seq < ?"
	" AND name LIKE ? ESCAPE '\\\\' ORDER BY ready_seq DESC LIMIT ?";
/* Pending rows have no ready_seq (sql/009): these count ready documents. */
static const char sql_count_ready[] =
	"SELECT COUNT(*) FROM documents WHERE quarantined_at IS NULL AND ready_seq IS NOT NULL";
static const char sql_count_ready_prefix[] =
	"SELECT COUNT(*) FROM documents WHERE quarantined_at IS NULL AND ready_seq IS NOT NULL"
	" AND name LIKE ? ESCAPE '\\\\'";

/*
 * The LIKE pattern "prefix%": every '%', '_' and '\\' of the prefix is
 * escaped, so a name's own wildcard characters match only themselves
 * ("50%" lists "50% off", not "500 days").  out holds 2 * DOCS_PREFIX_MAX + 2.
 */
static size_t
like_prefix_pattern(struct span prefix, char *out)
{
	size_t i, n = 0;

	for (i = 0; i < prefix.len; i++) {
		if (prefix.ptr[i] == '%' || prefix.ptr[i] == '_' || prefix.ptr[i] == '\\')
			out[n++] = '\\';
		out[n++] = prefix.ptr[i];
	}
	out[n++] = '%';
	return n;
}

enum db_err
docs_list_ready(struct db *db, enum doc_order order, uint64_t after, struct span prefix, unsigned limit,
		int (*on_doc)(void *ctx, const struct doc *d), void *ctx)
{
	char pattern[2 * DOCS_PREFIX_MAX + 2];
	struct span like = { pattern, 0 };
	struct list_ctx lc;
	struct db_col c[DOC_NCOLS];
	int newest = order == DOC_ORDER_NEWEST;
	/* Newest first, no cursor yet: below every place there is. */
	uint64_t from = newest && after == 0 ? UINT64_MAX : after;

	assert(prefix.len <= DOCS_PREFIX_MAX);
	memset(&lc, 0, sizeof lc);
	lc.on_doc = on_doc;
	lc.ctx = ctx;
	doc_cols(&lc.row, &lc.text, c);
	if (prefix.len == 0) {
		struct db_param p[] = { DBP_U64(from), DBP_U64(limit) };

		if (newest)
			return db_query(db, sql_list_ready_desc, p, ARRAY_LEN(p), c, DOC_NCOLS, list_row, &lc);
		return db_query(db, sql_list_ready, p, ARRAY_LEN(p), c, DOC_NCOLS, list_row, &lc);
	}
	like.len = like_prefix_pattern(prefix, pattern);
	{
		struct db_param p[] = { DBP_U64(from), DBP_SPAN(like), DBP_U64(limit) };

		if (newest)
			return db_query(db, sql_list_ready_prefix_desc, p, ARRAY_LEN(p), c, DOC_NCOLS,
					list_row, &lc);
		return db_query(db, sql_list_ready_prefix, p, ARRAY_LEN(p), c, DOC_NCOLS, list_row, &lc);
	}
}

enum db_err
docs_count_ready(struct db *db, struct span prefix, uint64_t *out)
{
	char pattern[2 * DOCS_PREFIX_MAX + 2];
	struct span like = { pattern, 0 };
	struct db_col c[] = { DBC_U64(out) };

	assert(prefix.len <= DOCS_PREFIX_MAX);
	*out = 0;
	if (prefix.len == 0)
		return db_query(db, sql_count_ready, NULL, 0, c, 1, NULL, NULL);
	like.len = like_prefix_pattern(prefix, pattern);
	{
		struct db_param p[] = { DBP_SPAN(like) };

		return db_query(db, sql_count_ready_prefix, p, ARRAY_LEN(p), c, 1, NULL, NULL);
	}
}

static const char sql_find_ready_by_name[] =
	"SELECT " DOC_COLUMNS " FROM documents WHERE name = ? AND status = 'ready' AND quarantined_at IS NULL";

enum db_err
docs_find_ready_by_name(struct db *db, struct span name, struct doc *out)
{
	struct db_col c[DOC_NCOLS];
	struct db_param p[] = { DBP_SPAN(name) };
	struct row_text t;

	memset(out, 0, sizeof *out);
	doc_cols(out, &t, c);
	return doc_finish(db_query(db, sql_find_ready_by_name, p, 1, c, DOC_NCOLS, NULL, NULL),
			  out, &t);
}

/* Every ready document, quarantined or not, by id: the rescan's walk.
 * documents_status_id keeps it a range scan; LEFT rather than LIKE, as
 * the sweep's and the audit's prefixes (a prefix may hold % or _). */
static const char sql_walk_ready[] =
	"SELECT " DOC_COLUMNS " FROM documents WHERE status = 'ready' AND id > ?"
	" AND LEFT(blob_name, CHAR_LENGTH(?)) = ? ORDER BY id LIMIT ?";

enum db_err
docs_walk_ready(struct db *db, uint64_t after, const char *blob_prefix, unsigned limit,
		int (*on_doc)(void *ctx, const struct doc *d), void *ctx)
{
	struct db_param p[] = { DBP_U64(after), DBP_STR(blob_prefix), DBP_STR(blob_prefix), DBP_U64(limit) };
	struct db_col c[DOC_NCOLS];
	struct list_ctx lc;

	memset(&lc, 0, sizeof lc);
	lc.on_doc = on_doc;
	lc.ctx = ctx;
	doc_cols(&lc.row, &lc.text, c);
	return db_query(db, sql_walk_ready, p, ARRAY_LEN(p), c, DOC_NCOLS, list_row, &lc);
}

/* Only the bytes that were scanned: the document still on that blob (a
 * replace moves it to another name, never back), ready, not yet taken out. */
static const char sql_quarantine[] =
	"UPDATE documents SET quarantined_at = NOW(6)"
	" WHERE id = ? AND blob_name = ? AND status = 'ready' AND quarantined_at IS NULL";
static const char sql_release[] =
	"UPDATE documents SET quarantined_at = NULL"
	" WHERE id = ? AND status = 'ready' AND quarantined_at IS NOT NULL";
static const char sql_quarantined_on[] =
	"SELECT blob_name, quarantined_at IS NOT NULL FROM documents WHERE id = ? AND status = 'ready'";

/* A ready document's blob and whether it is quarantined now. */
struct quarantine_row {
	char blob_name[DOC_BLOB_NAME_MAX];
	uint64_t quarantined;
};

/* DB_NOT_FOUND when doc_id is not a ready document. */
static enum db_err
quarantine_read(struct db *db, uint64_t doc_id, struct quarantine_row *r)
{
	struct db_param p[] = { DBP_U64(doc_id) };
	struct db_col c[] = { DBC_STR(r->blob_name), DBC_U64(&r->quarantined) };

	memset(r, 0, sizeof *r);
	return db_query(db, sql_quarantined_on, p, ARRAY_LEN(p), c, ARRAY_LEN(c), NULL, NULL);
}

static enum db_err
quarantine_tx(struct db *db, uint64_t doc_id, const char *blob_name, int *changed)
{
	struct db_param p[] = { DBP_U64(doc_id), DBP_STR(blob_name) };
	struct quarantine_row r;
	uint64_t n = 0;
	enum db_err e;

	*changed = 0;
	if ((e = db_exec(db, sql_quarantine, p, ARRAY_LEN(p), &n)) != DB_OK)
		return e;
	if (n == 1) {
		*changed = 1;
		return DB_OK;
	}
	/* No row: quarantined already, or not those bytes any more. */
	if ((e = quarantine_read(db, doc_id, &r)) != DB_OK)
		return e;
	return strcmp(r.blob_name, blob_name) == 0 && r.quarantined ? DB_OK : DB_NOT_FOUND;
}

/* After the COMMIT: is it quarantined on those bytes? */
static enum db_err
quarantine_check(struct db *db, uint64_t doc_id, const char *blob_name)
{
	struct quarantine_row r;
	enum db_err e = quarantine_read(db, doc_id, &r);

	if (e == DB_OK && strcmp(r.blob_name, blob_name) == 0 && !r.quarantined) {
		log_error("quarantine of document %llu: COMMIT succeeded but it is not quarantined;"
			  " taken as a certification failure", (unsigned long long)doc_id);
		return db_set_lost_commit(db);
	}
	/* Replaced or deleted since the COMMIT: what the quarantine did stands. */
	return e == DB_NOT_FOUND ? DB_OK : e;
}

enum db_err
docs_quarantine(struct db *db, uint64_t doc_id, const char *blob_name, int *changed)
{
	DB_IN_TX_CHECKED(db, "scan.quarantine_commit_lost", quarantine_tx(db, doc_id, blob_name, changed),
			 quarantine_check(db, doc_id, blob_name));
}

static enum db_err
release_tx(struct db *db, uint64_t doc_id, int *changed)
{
	struct db_param p[] = { DBP_U64(doc_id) };
	struct quarantine_row r;
	uint64_t n = 0;
	enum db_err e;

	*changed = 0;
	if ((e = db_exec(db, sql_release, p, ARRAY_LEN(p), &n)) != DB_OK)
		return e;
	*changed = n == 1;
	/* No row: a ready document that was not quarantined, or none. */
	return n == 1 ? DB_OK : quarantine_read(db, doc_id, &r);
}

static enum db_err
release_check(struct db *db, uint64_t doc_id)
{
	struct quarantine_row r;
	enum db_err e = quarantine_read(db, doc_id, &r);

	if (e == DB_OK && r.quarantined) {
		log_error("release of document %llu: COMMIT succeeded but it is still quarantined;"
			  " taken as a certification failure", (unsigned long long)doc_id);
		return db_set_lost_commit(db);
	}
	return e == DB_NOT_FOUND ? DB_OK : e;
}

enum db_err
docs_release(struct db *db, uint64_t doc_id, int *changed)
{
	DB_IN_TX_CHECKED(db, "scan.release_commit_lost", release_tx(db, doc_id, changed),
			 release_check(db, doc_id));
}

/* The replace's registry row only while the document is ready and not
 * quarantined: a quarantined document's bytes wait for an administrator,
 * and no replace may retire them (the commit does not look again: one that
 * got its intent before the quarantine commits, and the document stays
 * quarantined on its new bytes). */
static const char sql_insert_replace_blob[] =
	"INSERT INTO blobs (name, document_id, purpose, state, holder, expires_at)"
	" SELECT ?, id, ?, 'pending', ?, NOW(6) + INTERVAL ? SECOND FROM documents"
	" WHERE id = ? AND status = 'ready' AND quarantined_at IS NULL";

/* The replace intent's statements, inside a transaction the caller holds. */
static enum db_err
replace_intent_tx(struct db *db, uint64_t doc_id, const char *blob_name, const struct lease *l)
{
	struct db_param p[] = { DBP_STR(blob_name), DBP_STR(intent_purpose_name(PURPOSE_REPLACE)),
				DBP_STR_OR_NULL(l->holder), DBP_U64(l->seconds), DBP_U64(doc_id) };
	uint64_t n = 0;
	enum db_err e = db_exec(db, sql_insert_replace_blob, p, ARRAY_LEN(p), &n);

	if (e == DB_OK && n == 0)
		return DB_NOT_FOUND;
	return e == DB_OK ? quota_db_reserve(db, doc_id, blob_name, l->reserve, 0) : e;
}

enum db_err
docs_replace_intent(struct db *db, uint64_t doc_id, const char *blob_name, const struct lease *l)
{
	if (!quota_db_enabled())
		return replace_intent_tx(db, doc_id, blob_name, l);	/* one statement */
	DB_IN_TX(db, replace_intent_tx(db, doc_id, blob_name, l));
}

/*
 * Replace and delete read the document without a lock, then change it with
 * WHERE id = ? AND version = ? AND status = 'ready', which must touch one
 * row.  Under Galera a SELECT ... FOR UPDATE locks only the local node; the
 * conditional statement is what certification checks (doc/design.md, "Past one
 * machine").  Zero rows means another replace or delete committed in
 * between: the transaction rolls back and runs again on what is there now,
 * a few times at most.  The next try answers 404 (deleted) or 412 (a
 * guarded replace that is now stale), or goes ahead (an unguarded replace,
 * last writer wins; a delete of the replaced document).
 */
#define VERSION_RACE_TRIES 3

static const char sql_get_ready_doc[] =
	"SELECT " DOC_COLUMNS " FROM documents WHERE id = ? AND status = 'ready'";
static const char sql_doc_point[] =
	"UPDATE documents SET blob_name = ?, size = ?, sha256 = ?, blob_etag = ?, content_type = ?,"
	" version = version + 1, updated_at = NOW(6)"
	" WHERE id = ? AND version = ? AND status = 'ready'";
static const char sql_blob_retire[] =
	"UPDATE blobs SET state = 'retired',"
	" retire_after = GREATEST(NOW(6) + INTERVAL ? SECOND, " BLOBS_RETIRE_NOT_BEFORE_SAS_SQL ")"
	" WHERE name = ? AND state = 'committed'";

/* Commit on DB_OK, roll back otherwise; the result of the whole transaction. */
static enum db_err
tx_finish(struct db *db, enum db_err e)
{
	if (e == DB_OK)
		e = db_commit(db);
	if (e != DB_OK)
		db_rollback(db);
	return e;
}

/* Point the read document (version out->version) at the new blob; *raced when the guard missed. */
static enum db_err
point_doc(struct db *db, uint64_t doc_id, const struct replace_blob *nb, const struct doc *cur,
	  int *raced)
{
	struct db_param p[] = { DBP_STR(nb->name), DBP_U64(nb->size), DBP_STR(nb->sha256_hex),
				DBP_STR(nb->etag), DBP_STR(nb->content_type), DBP_U64(doc_id),
				DBP_U64(cur->version) };
	enum db_err e = db_exec_one(db, sql_doc_point, p, ARRAY_LEN(p));

	*raced = e == DB_CONFLICT;
	return e;
}

static enum db_err
replace_commit_tx(struct db *db, uint64_t doc_id, const struct replace_blob *nb,
		  uint64_t expected_version, unsigned grace, int *stale, int *raced, struct doc *out)
{
	struct db_col c[DOC_NCOLS];
	struct db_param id[] = { DBP_U64(doc_id) };
	char old_blob[DOC_BLOB_NAME_MAX];
	uint64_t old_size;
	struct row_text t;
	enum db_err e;

	doc_cols(out, &t, c);
	if ((e = db_query(db, sql_get_ready_doc, id, 1, c, DOC_NCOLS, NULL, NULL)) != DB_OK)
		return e;
	if (expected_version && out->version != expected_version) {
		*stale = 1;
		return DB_CONFLICT;
	}
	memcpy(old_blob, out->blob_name, sizeof old_blob);
	old_size = out->size;
	/* Tests hold two commits here at once to race them on one version. */
	if (FAILPOINT("replace.commit_after_read"))
		return DB_UNAVAILABLE;
	if ((e = point_doc(db, doc_id, nb, out, raced)) != DB_OK)
		return e;
	{
		struct db_param p[] = { DBP_U64(nb->size), DBP_STR(nb->sha256_hex), DBP_STR(nb->name),
					DBP_STR(nb->holder) };
		if ((e = db_exec_one(db, sql_blob_commit, p, ARRAY_LEN(p))) != DB_OK)
			return e;
	}
	{
		struct db_param p[] = { DBP_U64(grace), DBP_STR(old_blob) };
		if ((e = db_exec_one(db, sql_blob_retire, p, ARRAY_LEN(p))) != DB_OK)
			return e;
	}
	if ((e = uploads_record_ready(db, nb->name)) != DB_OK)
		return e;
	if ((e = events_db_record_ready(db, doc_id)) != DB_OK ||
	    (e = quota_db_settle(db, nb->name)) != DB_OK ||
	    (e = quota_db_account(db, doc_id, (int64_t)nb->size - (int64_t)old_size, 0)) != DB_OK)
		return e;
	if (nb->retired != NULL)
		memcpy(nb->retired, old_blob, sizeof old_blob);
	return doc_finish(db_query(db, sql_get_doc, id, 1, c, DOC_NCOLS, NULL, NULL), out, &t);
}

/*
 * After a COMMIT that said yes: is the new blob's row committed?  On a
 * Galera cluster, two replaces of one version committed on two nodes have
 * both been answered "committed" while only one took effect (found by
 * tests/cluster/replace_conflict.sh: the loser's blob row stayed pending,
 * MariaDB 10.11.19, galera 26.4.23; compare MDEV-29044).  A lost commit is
 * reported as a certification failure, so the whole transaction runs again
 * and now sees the winner's version.  One point read on the local node,
 * where a real commit is visible at once.
 */
static enum db_err
replace_commit_check(struct db *db, const char *blob_name)
{
	struct blob_row b;
	enum db_err e = blobs_get(db, blob_name, &b);

	if (e == DB_OK && b.state == REGISTRY_PENDING) {
		log_error("replace of blob %s: COMMIT succeeded but the row is still pending;"
			  " taken as a certification failure", blob_name);
		return db_set_lost_commit(db);
	}
	return e == DB_NOT_FOUND ? DB_OK : e;
}

enum db_err
docs_replace_commit(struct db *db, uint64_t doc_id, const struct replace_blob *nb,
		    uint64_t expected_version, unsigned grace, int *stale, struct doc *out)
{
	enum db_err e = DB_CONFLICT;
	int tries, raced, again = 1;

	/* Again on a lost version race, or on a certification failure. */
	for (tries = 0; again; tries++) {
		raced = 0;
		*stale = 0;
		memset(out, 0, sizeof *out);
		if (nb->retired != NULL)
			nb->retired[0] = '\0';
		if ((e = db_begin(db)) == DB_OK)
			e = replace_commit_tx(db, doc_id, nb, expected_version, grace, stale, &raced, out);
		e = tx_finish(db, e);
		if (e == DB_OK && db_commit_may_be_lost(db))
			e = replace_commit_check(db, nb->name);
		again = (raced && tries + 1 < VERSION_RACE_TRIES) || db_txn_retry(db, e, (unsigned)tries + 1);
	}
	return e;
}

static const char sql_delete_doc[] =
	"DELETE FROM documents WHERE id = ? AND version = ? AND status = 'ready'";

static const char sql_doc_version[] = "SELECT version FROM documents WHERE id = ?";

/*
 * After a delete's COMMIT said yes: is the row gone?  The same check as
 * replace_commit_check: if the version it deleted is still there, the
 * commit did not take effect (a Galera conflict), and the whole delete
 * runs again (and now finds what the winner left).
 */
static enum db_err
delete_commit_check(struct db *db, uint64_t doc_id, uint64_t deleted_version)
{
	uint64_t v = 0;
	struct db_param id[] = { DBP_U64(doc_id) };
	struct db_col c[] = { DBC_U64(&v) };
	enum db_err e = db_query(db, sql_doc_version, id, 1, c, 1, NULL, NULL);

	if (e == DB_NOT_FOUND)
		return DB_OK;
	if (e == DB_OK && v == deleted_version) {
		log_error("delete of document %llu: COMMIT succeeded but version %llu is still there;"
			  " taken as a certification failure", (unsigned long long)doc_id,
			  (unsigned long long)v);
		return db_set_lost_commit(db);
	}
	return e;
}

static enum db_err
delete_tx(struct db *db, uint64_t doc_id, uint64_t expected_version, unsigned grace, int *stale,
	  int *raced, uint64_t *deleted_version)
{
	struct doc d;
	struct row_text t;
	struct db_col c[DOC_NCOLS];
	struct db_param id[] = { DBP_U64(doc_id) };
	enum db_err e;

	doc_cols(&d, &t, c);
	if ((e = db_query(db, sql_get_ready_doc, id, 1, c, DOC_NCOLS, NULL, NULL)) != DB_OK)
		return e;
	if (FAILPOINT("delete.commit_after_read"))
		return DB_UNAVAILABLE;
	if (expected_version != 0 && d.version != expected_version) {
		*stale = 1;
		return DB_CONFLICT;
	}
	/* The event and the owner's figures read the row: before it goes. */
	if ((e = events_db_record_deleted(db, doc_id)) != DB_OK ||
	    (e = quota_db_account(db, doc_id, -(int64_t)d.size, -1)) != DB_OK)
		return e;
	{
		struct db_param p[] = { DBP_U64(doc_id), DBP_U64(d.version) };

		e = db_exec_one(db, sql_delete_doc, p, ARRAY_LEN(p));
		*raced = e == DB_CONFLICT;
		if (e != DB_OK)
			return e;
		*deleted_version = d.version;
	}
	{
		struct db_param p[] = { DBP_U64(grace), DBP_STR(d.blob_name) };
		return db_exec_one(db, sql_blob_retire, p, ARRAY_LEN(p));
	}
}

enum db_err
docs_delete(struct db *db, uint64_t doc_id, uint64_t expected_version, unsigned grace, int *stale)
{
	enum db_err e = DB_CONFLICT;
	int tries, raced, again = 1;
	uint64_t deleted = 0;

	*stale = 0;
	/* Again on a lost version race, or on a certification failure. */
	for (tries = 0; again; tries++) {
		raced = 0;
		if ((e = db_begin(db)) == DB_OK)
			e = delete_tx(db, doc_id, expected_version, grace, stale, &raced, &deleted);
		e = tx_finish(db, e);
		if (e == DB_OK && db_commit_may_be_lost(db))
			e = delete_commit_check(db, doc_id, deleted);
		again = (raced && tries + 1 < VERSION_RACE_TRIES) || db_txn_retry(db, e, (unsigned)tries + 1);
	}
	return e;
}

static const char sql_idem_repoint[] =
	"UPDATE idempotency_keys SET document_id = ?, blob_name = ?"
	" WHERE owner = ? AND idem_key = ? AND status_code IS NULL";

static enum db_err
restart_tx(struct db *db, const char *owner, const char *key, struct span name,
	   const char *content_type, const char *blob_name, const struct lease *l, uint64_t *doc_id)
{
	enum db_err e = docs_create_intent_tx(db, name, owner, content_type, blob_name, l, NULL, doc_id,
					      NULL);

	if (e != DB_OK)
		return e;
	{
		struct db_param p[] = { DBP_U64(*doc_id), DBP_STR(blob_name), DBP_STR(owner),
					DBP_STR(key) };
		return db_exec_one(db, sql_idem_repoint, p, ARRAY_LEN(p));
	}
}

enum db_err
docs_restart_intent(struct db *db, const char *owner, const char *key, struct span name,
		    const char *content_type, const char *blob_name, const struct lease *l,
		    uint64_t *doc_id)
{
	DB_IN_TX(db, restart_tx(db, owner, key, name, content_type, blob_name, l, doc_id));
}

static const char sql_insert_upload[] =
	"INSERT INTO uploads (id, blob_name, document_id, owner, upload_length, content_type,"
	" replace_version, hash_state) VALUES (?, ?, ?, ?, ?, ?, ?, ?)";

static enum db_err
upload_intent_tx(struct db *db, const struct upload_new *u, uint64_t *doc_id)
{
	struct lease l = { NULL, u->expiry, u->length };
	enum db_err e;

	if (u->replaces == 0)
		e = docs_create_intent_tx(db, u->name, u->owner, u->content_type, u->blob_name, &l, NULL,
					  doc_id, NULL);
	else if ((e = replace_intent_tx(db, u->replaces, u->blob_name, &l)) == DB_OK)
		*doc_id = u->replaces;
	if (e != DB_OK)
		return e;
	{
		struct db_param p[] = { DBP_STR(u->id), DBP_STR(u->blob_name), DBP_U64(*doc_id),
					DBP_STR(u->owner), DBP_U64(u->length), DBP_STR(u->content_type),
					u->replace_version ? DBP_U64(u->replace_version) : DBP_NULL,
					DBP_STR(u->hash_state) };
		return db_exec(db, sql_insert_upload, p, ARRAY_LEN(p), NULL);
	}
}

enum db_err
docs_upload_intent(struct db *db, const struct upload_new *u, uint64_t *doc_id)
{
	DB_IN_TX(db, upload_intent_tx(db, u, doc_id));
}
