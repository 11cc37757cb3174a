/* quota_db.c - see quota_db.h. */
#include <string.h>

#include "registry/quota_db.h"

/* One configuration per process (a responder or a CLI run), set before any
 * intent is written; kept here rather than passed down every transaction
 * that starts or ends an intent, which are many and know nothing of
 * [quota] (as events_db keeps its receivers). */
static struct quota_limits limits;

void
quota_db_configure(const struct quota_limits *l)
{
	memset(&limits, 0, sizeof limits);
	if (l != NULL)
		limits = *l;
}

int
quota_db_enabled(void)
{
	return limits.bytes > 0 || limits.documents > 0 || limits.pending > 0;
}

/* The reservation's own row first: a recount reading the reservations
 * (a locking read) either waits for this transaction or is waited for, so
 * it never writes an owner's row without a reservation taken meanwhile. */
static const char sql_reservation[] =
	"INSERT INTO quota_reservations (blob_name, owner, bytes, is_create)"
	" SELECT ?, owner, ?, ? FROM documents WHERE id = ?";
/* Each limit: 0 is none.  Counted against what is stored and reserved. */
static const char sql_reserve[] =
	"UPDATE owner_usage SET reserved = reserved + ?, pending = pending + 1, creates = creates + ?"
	" WHERE owner = (SELECT owner FROM quota_reservations WHERE blob_name = ?)"
	" AND (? = 0 OR bytes + reserved + ? <= ?)"
	" AND (? = 0 OR documents + creates + ? <= ?)"
	" AND (? = 0 OR pending + 1 <= ?)";
static const char sql_usage_there[] =
	"SELECT COUNT(*) FROM owner_usage WHERE owner = (SELECT owner FROM quota_reservations WHERE blob_name = ?)";
/* An owner's first reservation: its row, from what it already stores. */
static const char sql_usage_new[] =
	"INSERT IGNORE INTO owner_usage (owner, bytes, documents)"
	" SELECT r.owner, COALESCE(SUM(d.size), 0), COUNT(d.id) FROM quota_reservations r"
	" LEFT JOIN documents d ON d.owner = r.owner AND d.status = 'ready' WHERE r.blob_name = ? GROUP BY r.owner";

static enum db_err
reserve_once(struct db *db, const char *blob_name, uint64_t bytes, int is_create, uint64_t *n)
{
	struct db_param p[] = { DBP_U64(bytes), DBP_U64(is_create ? 1 : 0), DBP_STR(blob_name),
				DBP_U64(limits.bytes), DBP_U64(bytes), DBP_U64(limits.bytes),
				DBP_U64(limits.documents), DBP_U64(is_create ? 1 : 0), DBP_U64(limits.documents),
				DBP_U64(limits.pending), DBP_U64(limits.pending) };

	return db_exec(db, sql_reserve, p, sizeof p / sizeof p[0], n);
}

/* The reservation's row is written: take it from the owner's figures. */
static enum db_err
reserve_written(struct db *db, const char *blob_name, uint64_t bytes, int is_create)
{
	struct db_param b[] = { DBP_STR(blob_name) };
	uint64_t n = 0, there = 0;
	struct db_col c[] = { DBC_U64(&there) };
	enum db_err e;

	if ((e = reserve_once(db, blob_name, bytes, is_create, &n)) != DB_OK || n == 1)
		return e;
	/* No row changed: over a limit, or the owner has no row yet. */
	if ((e = db_query(db, sql_usage_there, b, 1, c, 1, NULL, NULL)) != DB_OK)
		return e;
	if (there > 0)
		return DB_QUOTA;
	if ((e = db_exec(db, sql_usage_new, b, 1, NULL)) != DB_OK ||
	    (e = reserve_once(db, blob_name, bytes, is_create, &n)) != DB_OK)
		return e;
	return n == 1 ? DB_OK : DB_QUOTA;
}

enum db_err
quota_db_reserve(struct db *db, uint64_t doc_id, const char *blob_name, uint64_t bytes, int is_create)
{
	struct db_param r[] = { DBP_STR(blob_name), DBP_U64(bytes), DBP_U64(is_create ? 1 : 0), DBP_U64(doc_id) };
	uint64_t n = 0;
	enum db_err e;

	if (!quota_db_enabled())
		return DB_OK;
	if ((e = db_exec(db, sql_reservation, r, 4, &n)) != DB_OK)
		return e;
	if (n != 1)
		return DB_NOT_FOUND;	/* no document doc_id */
	return reserve_written(db, blob_name, bytes, is_create);
}

static const char sql_reservation_owner[] =
	"INSERT INTO quota_reservations (blob_name, owner, bytes, is_create) VALUES (?, ?, ?, 0)";

enum db_err
quota_db_reserve_owner(struct db *db, const char *owner, const char *blob_name, uint64_t bytes)
{
	struct db_param r[] = { DBP_STR(blob_name), DBP_STR(owner), DBP_U64(bytes) };
	enum db_err e;

	if (!quota_db_enabled())
		return DB_OK;
	if ((e = db_exec(db, sql_reservation_owner, r, ARRAY_LEN(r), NULL)) != DB_OK)
		return e;
	return reserve_written(db, blob_name, bytes, 0);
}

/* LEAST: a recount may have set the row below what an older reservation
 * says; the figures never go below zero. */
static const char sql_settle[] =
	"UPDATE owner_usage u JOIN quota_reservations r ON r.owner = u.owner"
	" SET u.reserved = u.reserved - LEAST(u.reserved, r.bytes), u.pending = u.pending - LEAST(u.pending, 1),"
	" u.creates = u.creates - LEAST(u.creates, r.is_create)"
	" WHERE r.blob_name = ?";
static const char sql_settled[] = "DELETE FROM quota_reservations WHERE blob_name = ?";

enum db_err
quota_db_settle(struct db *db, const char *blob_name)
{
	struct db_param p[] = { DBP_STR(blob_name) };
	enum db_err e;

	if (!quota_db_enabled())
		return DB_OK;
	if ((e = db_exec(db, sql_settle, p, 1, NULL)) != DB_OK)
		return e;
	return db_exec(db, sql_settled, p, 1, NULL);
}

static const char sql_account[] =
	"UPDATE owner_usage u JOIN documents d ON d.owner = u.owner"
	" SET u.bytes = GREATEST(CAST(u.bytes AS SIGNED) + ?, 0),"
	" u.documents = GREATEST(CAST(u.documents AS SIGNED) + ?, 0)"
	" WHERE d.id = ?";

enum db_err
quota_db_account(struct db *db, uint64_t doc_id, int64_t bytes, int64_t documents)
{
	struct db_param p[] = { DBP_I64(bytes), DBP_I64(documents), DBP_U64(doc_id) };

	if (!quota_db_enabled() || (bytes == 0 && documents == 0))
		return DB_OK;
	return db_exec(db, sql_account, p, 3, NULL);
}

static const char sql_recount[] =
	"INSERT INTO owner_usage (owner, bytes, documents, reserved, pending, creates)"
	" SELECT o.owner, COALESCE(d.b, 0), COALESCE(d.n, 0), COALESCE(r.b, 0), COALESCE(r.n, 0), COALESCE(r.c, 0)"
	" FROM (SELECT owner FROM documents UNION SELECT owner FROM quota_reservations) o"
	" LEFT JOIN (SELECT owner, SUM(size) AS b, COUNT(*) AS n FROM documents WHERE status = 'ready'"
	" GROUP BY owner) d ON d.owner = o.owner"
	" LEFT JOIN (SELECT owner, SUM(bytes) AS b, COUNT(*) AS n, SUM(is_create) AS c FROM quota_reservations"
	" GROUP BY owner) r ON r.owner = o.owner"
	" ON DUPLICATE KEY UPDATE bytes = VALUES(bytes), documents = VALUES(documents),"
	" reserved = VALUES(reserved), pending = VALUES(pending), creates = VALUES(creates)";
/* Owners with nothing left. */
static const char sql_recount_empty[] =
	"UPDATE owner_usage u SET bytes = 0, documents = 0, reserved = 0, pending = 0, creates = 0"
	" WHERE NOT EXISTS (SELECT 1 FROM documents d WHERE d.owner = u.owner)"
	" AND NOT EXISTS (SELECT 1 FROM quota_reservations r WHERE r.owner = u.owner)";
static const char sql_count_owners[] = "SELECT COUNT(*) FROM owner_usage";

static enum db_err
recount_tx(struct db *db, uint64_t *owners)
{
	struct db_col c[] = { DBC_U64(owners) };
	enum db_err e;

	if ((e = db_exec(db, sql_recount, NULL, 0, NULL)) != DB_OK ||
	    (e = db_exec(db, sql_recount_empty, NULL, 0, NULL)) != DB_OK)
		return e;
	return db_query(db, sql_count_owners, NULL, 0, c, 1, NULL, NULL);
}

enum db_err
quota_db_recount(struct db *db, uint64_t *owners)
{
	*owners = 0;
	DB_IN_TX(db, recount_tx(db, owners));
}

struct list_walk {
	struct quota_usage u;
	int (*on_row)(void *, const struct quota_usage *);
	void *ctx;
};

static int
list_row(void *ctx)
{
	struct list_walk *w = ctx;

	return w->on_row(w->ctx, &w->u);
}

static const char sql_list[] =
	"SELECT owner, bytes, documents, reserved, pending FROM owner_usage ORDER BY bytes DESC, owner LIMIT ?";

enum db_err
quota_db_list(struct db *db, unsigned limit, int (*on_row)(void *ctx, const struct quota_usage *u), void *ctx)
{
	struct list_walk w;
	struct db_param p[] = { DBP_U64(limit) };
	struct db_col c[] = { DBC_STR(w.u.owner), DBC_U64(&w.u.bytes), DBC_U64(&w.u.documents),
			      DBC_U64(&w.u.reserved), DBC_U64(&w.u.pending) };

	memset(&w, 0, sizeof w);
	w.on_row = on_row;
	w.ctx = ctx;
	return db_query(db, sql_list, p, 1, c, 5, list_row, &w);
}
