/* events_db.c - see events_db.h. */
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "base/rand.h"
#include "registry/events_db.h"

/*
 * The receivers this process writes deliveries for.  One configuration per
 * process (a responder or a CLI run), set before any change is made; kept
 * here rather than passed down every transaction that can make a document
 * ready, which are many and know nothing of [events].
 */
static struct {
	char id[EVENTS_MAX_ENDPOINTS][EVENTS_ENDPOINT_ID_LEN + 1];
	size_t n;
} endpoints;

void
events_db_configure(const char *const *ids, size_t n)
{
	size_t i;

	endpoints.n = 0;
	for (i = 0; i < n && i < EVENTS_MAX_ENDPOINTS; i++)
		if (copy_cstr(endpoints.id[endpoints.n], sizeof endpoints.id[0], ids[i]) == 0)
			endpoints.n++;
}

int
events_db_enabled(void)
{
	return endpoints.n > 0;
}

/*
 * The body is made by the database from the row it is about, in the same
 * statement, so it says exactly what the transaction committed; its text is
 * what every attempt signs.  The session's time zone is UTC (db.c).
 */
static const char sql_record[] =
	"INSERT INTO events (webhook_id, document_id, seq, type, blob_name, body)"
	" SELECT ?, id, version + ?, ?, blob_name, JSON_OBJECT('type', ?,"
	" 'timestamp', DATE_FORMAT(NOW(6), '%Y-%m-%dT%H:%i:%s.%fZ'),"
	" 'data', JSON_OBJECT('id', CAST(id AS CHAR), 'version', version, 'owner', owner,"
	" 'name', name, 'size', size, 'content_type', content_type, 'sha256', sha256,"
	" 'created_at', DATE_FORMAT(created_at, '%Y-%m-%dT%H:%i:%s.%fZ')))"
	" FROM documents WHERE id = ? AND status = 'ready'";
static const char sql_delivery[] = "INSERT INTO event_deliveries (event_id, endpoint) VALUES (?, ?)";

static enum db_err
record(struct db *db, uint64_t doc_id, const char *type, unsigned seq_add)
{
	char rnd[33], wid[40];
	uint64_t event_id;
	size_t i;
	enum db_err e;

	if (endpoints.n == 0)
		return DB_OK;
	/* Random, so a restore that rewinds ids never repeats one a receiver
	 * has seen (receivers dedupe on it). */
	if (rand_hex(rnd, sizeof rnd, 16) != 0)
		return DB_FAILED;
	snprintf(wid, sizeof wid, "msg_%s", rnd);
	{
		struct db_param p[] = { DBP_STR(wid), DBP_U64(seq_add), DBP_STR(type), DBP_STR(type),
					DBP_U64(doc_id) };

		if ((e = db_exec_one(db, sql_record, p, ARRAY_LEN(p))) != DB_OK)
			return e;
	}
	event_id = db_last_insert_id(db);
	for (i = 0; i < endpoints.n; i++) {
		struct db_param p[] = { DBP_U64(event_id), DBP_STR(endpoints.id[i]) };

		if ((e = db_exec(db, sql_delivery, p, ARRAY_LEN(p), NULL)) != DB_OK)
			return e;
	}
	return DB_OK;
}

enum db_err
events_db_record_ready(struct db *db, uint64_t doc_id)
{
	return record(db, doc_id, "document.ready", 0);
}

enum db_err
events_db_record_deleted(struct db *db, uint64_t doc_id)
{
	return record(db, doc_id, "document.deleted", 1);
}

/* Due: pending, its time come, no live claim, the receiver not stopped, and
 * nothing earlier of the same document still pending for this receiver. */
static const char sql_due[] =
	"SELECT e.id, e.document_id, e.seq, d.attempts, e.webhook_id, e.type, e.body,"
	" TIMESTAMPDIFF(SECOND, e.created_at, NOW(6))"
	" FROM event_deliveries d JOIN events e ON e.id = d.event_id"
	" LEFT JOIN event_endpoints p ON p.endpoint = d.endpoint"
	" WHERE d.endpoint = ? AND d.state = 'pending' AND d.next_at <= NOW(6)"
	" AND (d.claimed_until IS NULL OR d.claimed_until < NOW(6)) AND p.stopped_at IS NULL"
	" AND (? = 0 OR e.document_id = ?) AND LEFT(e.blob_name, CHAR_LENGTH(?)) = ?"
	" AND NOT EXISTS (SELECT 1 FROM events e2 JOIN event_deliveries d2 ON d2.event_id = e2.id"
	" WHERE e2.document_id = e.document_id AND e2.seq < e.seq AND d2.endpoint = d.endpoint"
	" AND d2.state = 'pending')"
	" ORDER BY e.created_at, e.document_id, e.seq LIMIT ?";

struct due_walk {
	struct events_due row;
	int64_t age;
	int (*on_due)(void *, const struct events_due *);
	void *ctx;
};

static int
due_row(void *ctx)
{
	struct due_walk *w = ctx;

	w->row.age_s = w->age;
	return w->on_due(w->ctx, &w->row);
}

enum db_err
events_db_due(struct db *db, const char *endpoint, uint64_t doc_id, const char *prefix, unsigned limit,
	      int (*on_due)(void *ctx, const struct events_due *), void *ctx)
{
	struct due_walk w;
	const char *pre = prefix ? prefix : "";
	struct db_param p[] = { DBP_STR(endpoint), DBP_U64(doc_id), DBP_U64(doc_id), DBP_STR(pre), DBP_STR(pre),
				DBP_U64(limit) };
	struct db_col c[] = { DBC_U64(&w.row.event_id), DBC_U64(&w.row.document_id), DBC_U64(&w.row.seq),
			      DBC_U64(&w.row.attempts), DBC_STR(w.row.webhook_id), DBC_STR(w.row.type),
			      DBC_STR(w.row.body), DBC_I64(&w.age) };
	enum db_err e;

	memset(&w, 0, sizeof w);
	w.on_due = on_due;
	w.ctx = ctx;
	e = db_query(db, sql_due, p, ARRAY_LEN(p), c, ARRAY_LEN(c), due_row, &w);
	return e == DB_NOT_FOUND ? DB_OK : e;
}

static const char sql_claim[] =
	"UPDATE event_deliveries SET claimed_by = ?, claimed_until = NOW(6) + INTERVAL ? SECOND,"
	" attempts = attempts + 1"
	" WHERE event_id = ? AND endpoint = ? AND state = 'pending' AND next_at <= NOW(6)"
	" AND (claimed_until IS NULL OR claimed_until < NOW(6))";

enum db_err
events_db_claim(struct db *db, uint64_t event_id, const char *endpoint, const char *claimer, unsigned lease_s)
{
	struct db_param p[] = { DBP_STR(claimer), DBP_U64(lease_s), DBP_U64(event_id), DBP_STR(endpoint) };

	return db_exec_one(db, sql_claim, p, ARRAY_LEN(p));
}

static const char sql_delivered[] =
	"UPDATE event_deliveries SET state = 'delivered', delivered_at = NOW(6), last_status = ?,"
	" last_error = NULL, claimed_by = NULL, claimed_until = NULL"
	" WHERE event_id = ? AND endpoint = ? AND claimed_by = ? AND state = 'pending'";

enum db_err
events_db_delivered(struct db *db, uint64_t event_id, const char *endpoint, const char *claimer, long status)
{
	struct db_param p[] = { DBP_I64(status), DBP_U64(event_id), DBP_STR(endpoint), DBP_STR(claimer) };

	return db_exec_one(db, sql_delivered, p, ARRAY_LEN(p));
}

static const char sql_failed[] =
	"UPDATE event_deliveries SET state = IF(?, 'dead', 'pending'), last_status = ?, last_error = ?,"
	" next_at = NOW(6) + INTERVAL ? MICROSECOND, claimed_by = NULL, claimed_until = NULL"
	" WHERE event_id = ? AND endpoint = ? AND claimed_by = ? AND state = 'pending'";

enum db_err
events_db_failed(struct db *db, uint64_t event_id, const char *endpoint, const char *claimer, long status,
		 const char *why, int64_t retry_ms, int dead)
{
	char text[256];
	struct db_param p[7];

	/* The column holds 255 characters: cut on a character boundary of ASCII. */
	snprintf(text, sizeof text, "%s", why ? why : "");
	p[0] = DBP_U64(dead ? 1 : 0);
	p[1] = DBP_I64(status);
	p[2] = DBP_STR(text);
	p[3] = DBP_U64((uint64_t)(retry_ms < 0 ? 0 : retry_ms) * 1000);
	p[4] = DBP_U64(event_id);
	p[5] = DBP_STR(endpoint);
	p[6] = DBP_STR(claimer);
	return db_exec_one(db, sql_failed, p, ARRAY_LEN(p));
}

static const char sql_stop[] =
	"INSERT INTO event_endpoints (endpoint, url, stopped_at) VALUES (?, ?, NOW(6))"
	" ON DUPLICATE KEY UPDATE url = VALUES(url), stopped_at = COALESCE(stopped_at, NOW(6))";

enum db_err
events_db_stop_endpoint(struct db *db, const char *endpoint, const char *url)
{
	struct db_param p[] = { DBP_STR(endpoint), DBP_STR(url) };

	return db_exec(db, sql_stop, p, ARRAY_LEN(p), NULL);
}

static const char sql_resume[] =
	"UPDATE event_endpoints SET stopped_at = NULL WHERE endpoint = ? AND stopped_at IS NOT NULL";

enum db_err
events_db_resume_endpoint(struct db *db, const char *endpoint, uint64_t *n)
{
	struct db_param p[] = { DBP_STR(endpoint) };

	return db_exec(db, sql_resume, p, ARRAY_LEN(p), n);
}

static const char sql_requeue[] =
	"UPDATE event_deliveries SET state = 'pending', next_at = NOW(6), attempts = 0"
	" WHERE state = 'dead' AND (? = '' OR endpoint = ?)";

enum db_err
events_db_requeue_dead(struct db *db, const char *endpoint, uint64_t *n)
{
	const char *ep = endpoint ? endpoint : "";
	struct db_param p[] = { DBP_STR(ep), DBP_STR(ep) };

	return db_exec(db, sql_requeue, p, ARRAY_LEN(p), n);
}

/* Deliveries go with their event (no foreign key: one statement each). */
static const char sql_prune_deliveries[] =
	"DELETE d FROM event_deliveries d JOIN events e ON e.id = d.event_id"
	" WHERE e.created_at < NOW(6) - INTERVAL ? SECOND AND NOT EXISTS (SELECT 1 FROM"
	" (SELECT event_id FROM event_deliveries WHERE state = 'pending') AS p WHERE p.event_id = e.id)";
static const char sql_prune_events[] =
	"DELETE FROM events WHERE created_at < NOW(6) - INTERVAL ? SECOND"
	" AND NOT EXISTS (SELECT 1 FROM event_deliveries d WHERE d.event_id = events.id)";

enum db_err
events_db_prune(struct db *db, unsigned retention_s, uint64_t *n)
{
	struct db_param p[] = { DBP_U64(retention_s) };
	enum db_err e;

	*n = 0;
	if ((e = db_exec(db, sql_prune_deliveries, p, 1, NULL)) != DB_OK)
		return e;
	return db_exec(db, sql_prune_events, p, 1, n);
}

static const char sql_list_dead[] =
	"SELECT e.webhook_id, e.type, e.document_id, e.seq, d.attempts, COALESCE(d.last_status, 0), d.endpoint,"
	" COALESCE(d.last_error, ''), DATE_FORMAT(e.created_at, '%Y-%m-%dT%H:%i:%sZ')"
	" FROM event_deliveries d JOIN events e ON e.id = d.event_id WHERE d.state = 'dead'"
	" ORDER BY e.created_at, e.document_id, e.seq LIMIT ?";

struct dead_walk {
	struct events_dead row;
	int (*on_dead)(void *, const struct events_dead *);
	void *ctx;
};

static int
dead_row(void *ctx)
{
	struct dead_walk *w = ctx;

	return w->on_dead(w->ctx, &w->row);
}

enum db_err
events_db_list_dead(struct db *db, unsigned limit, int (*on_dead)(void *ctx, const struct events_dead *),
		    void *ctx)
{
	struct dead_walk w;
	struct db_param p[] = { DBP_U64(limit) };
	struct db_col c[] = { DBC_STR(w.row.webhook_id), DBC_STR(w.row.type), DBC_U64(&w.row.document_id),
			      DBC_U64(&w.row.seq), DBC_U64(&w.row.attempts), DBC_I64(&w.row.last_status),
			      DBC_STR(w.row.endpoint), DBC_STR(w.row.last_error), DBC_STR(w.row.created_at) };
	enum db_err e;

	memset(&w, 0, sizeof w);
	w.on_dead = on_dead;
	w.ctx = ctx;
	e = db_query(db, sql_list_dead, p, ARRAY_LEN(p), c, ARRAY_LEN(c), dead_row, &w);
	return e == DB_NOT_FOUND ? DB_OK : e;
}

static const char sql_counts[] =
	"SELECT COALESCE(SUM(state = 'pending'), 0), COALESCE(SUM(state = 'dead'), 0),"
	" COALESCE(SUM(state = 'delivered'), 0),"
	" (SELECT COUNT(*) FROM event_endpoints WHERE stopped_at IS NOT NULL) FROM event_deliveries";

enum db_err
events_db_counts(struct db *db, struct events_counts *out)
{
	struct db_col c[] = { DBC_U64(&out->pending), DBC_U64(&out->dead), DBC_U64(&out->delivered),
			      DBC_U64(&out->stopped_endpoints) };

	memset(out, 0, sizeof *out);
	return db_query(db, sql_counts, NULL, 0, c, ARRAY_LEN(c), NULL, NULL);
}
