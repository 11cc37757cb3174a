/* status_db.c - see status_db.h. */
#include <string.h>

#include "registry/status_db.h"

static const char sql_schema_applied[] = "SELECT COALESCE(MAX(version), 0) FROM schema_migrations";
/* bindery migrate makes schema_migrations first: without it nothing is there. */
static const char sql_migrated[] =
	"SELECT COUNT(*) FROM information_schema.TABLES"
	" WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'schema_migrations'";
/* The sweeper's states count as pending: a claim is not a resolution. */
static const char sql_intents[] =
	"SELECT COUNT(*), COALESCE(TIMESTAMPDIFF(SECOND, MIN(created_at), NOW(6)), -1),"
	" COALESCE(SUM(route = 'direct'), 0)"
	" FROM blobs WHERE state IN ('pending', 'sweeping')";
static const char sql_outbox[] =
	"SELECT COUNT(*), COALESCE(SUM(retire_after <= NOW(6)), 0)"
	" FROM blobs WHERE state IN ('retired', 'deleting')";
/* An uploads row outlives its upload (it goes with the blob): unfinished
 * is one whose intent is still open. */
static const char sql_uploads_tus[] =
	"SELECT COUNT(*) FROM uploads u JOIN blobs b ON b.name = u.blob_name"
	" WHERE b.state IN ('pending', 'sweeping')";
/* What is stored: one pass over the ready rows (documents_status_id
 * narrows to them; the sizes are read from each row). */
static const char sql_stored[] =
	"SELECT COUNT(*), COALESCE(SUM(size), 0) FROM documents WHERE status = 'ready'";
static const char sql_keys[] =
	"SELECT COUNT(*), COALESCE(SUM(status_code IS NULL), 0) FROM idempotency_keys";
/* UNIX_TIMESTAMP reads a DATETIME in the session's time zone, the one NOW(6) wrote it in. */
static const char sql_last_run[] =
	"SELECT id, CAST(UNIX_TIMESTAMP(started_at) AS SIGNED),"
	" COALESCE(CAST(UNIX_TIMESTAMP(finished_at) AS SIGNED), 0), COALESCE(result, ''),"
	" TIMESTAMPDIFF(SECOND, COALESCE(finished_at, started_at), NOW(6)), host, problems, deferred"
	" FROM sweep_runs ORDER BY id DESC LIMIT 1";
static const char sql_last_ok[] =
	"SELECT id, CAST(UNIX_TIMESTAMP(started_at) AS SIGNED),"
	" COALESCE(CAST(UNIX_TIMESTAMP(finished_at) AS SIGNED), 0), COALESCE(result, ''),"
	" TIMESTAMPDIFF(SECOND, COALESCE(finished_at, started_at), NOW(6)), host, problems, deferred"
	" FROM sweep_runs WHERE result = 'ok' ORDER BY finished_at DESC, id DESC LIMIT 1";

/* The newest run (ok_only: the newest ok one); none recorded is present = 0. */
static enum db_err
read_run(struct db *db, int ok_only, struct status_sweep_run *out)
{
	char result[16];
	struct db_col cols[] = {
		DBC_U64(&out->id), DBC_I64(&out->started_at), DBC_I64(&out->finished_at),
		DBC_STR(result), DBC_I64(&out->age), DBC_STR(out->host), DBC_U64(&out->problems),
		DBC_U64(&out->deferred),
	};
	enum db_err e;

	memset(out, 0, sizeof *out);
	result[0] = '\0';
	if (ok_only)
		e = db_query(db, sql_last_ok, NULL, 0, cols, ARRAY_LEN(cols), NULL, NULL);
	else
		e = db_query(db, sql_last_run, NULL, 0, cols, ARRAY_LEN(cols), NULL, NULL);
	if (e == DB_NOT_FOUND)
		return DB_OK;
	if (e != DB_OK)
		return e;
	out->present = 1;
	out->result = sweep_result_from_name(result);
	return DB_OK;
}

enum db_err
status_db_read(struct db *db, struct status_figures *out)
{
	uint64_t applied = 0, migrated = 0;
	struct db_col c_migrated[] = { DBC_U64(&migrated) };
	struct db_col c_schema[] = { DBC_U64(&applied) };
	struct db_col c_intents[] = { DBC_U64(&out->pending_intents), DBC_I64(&out->oldest_pending_age),
				      DBC_U64(&out->uploads_direct) };
	struct db_col c_outbox[] = { DBC_U64(&out->outbox), DBC_U64(&out->outbox_due) };
	struct db_col c_tus[] = { DBC_U64(&out->uploads_tus) };
	struct db_col c_keys[] = { DBC_U64(&out->idempotency_keys), DBC_U64(&out->idempotency_unfinished) };
	struct db_col c_stored[] = { DBC_U64(&out->stored_documents), DBC_U64(&out->stored_bytes) };
	enum db_err e;

	memset(out, 0, sizeof *out);
	out->oldest_pending_age = -1;
	if ((e = db_query(db, sql_migrated, NULL, 0, c_migrated, 1, NULL, NULL)) != DB_OK)
		return e;
	out->migrated = migrated != 0;
	if (!out->migrated)
		return DB_OK;	/* every figure 0, schema 0: behind */
	if ((e = db_query(db, sql_schema_applied, NULL, 0, c_schema, 1, NULL, NULL)) != DB_OK ||
	    (e = db_query(db, sql_intents, NULL, 0, c_intents, ARRAY_LEN(c_intents), NULL, NULL)) != DB_OK ||
	    (e = db_query(db, sql_outbox, NULL, 0, c_outbox, ARRAY_LEN(c_outbox), NULL, NULL)) != DB_OK ||
	    (e = db_query(db, sql_uploads_tus, NULL, 0, c_tus, 1, NULL, NULL)) != DB_OK ||
	    (e = db_query(db, sql_keys, NULL, 0, c_keys, ARRAY_LEN(c_keys), NULL, NULL)) != DB_OK ||
	    (e = db_query(db, sql_stored, NULL, 0, c_stored, ARRAY_LEN(c_stored), NULL, NULL)) != DB_OK)
		return e;
	out->schema_applied = (unsigned)applied;
	/* A database not yet migrated to sql/012 still has figures to show,
	 * among them that its schema is behind. */
	out->sweep_runs_known = applied >= STATUS_DB_SWEEP_RUNS_VERSION;
	if (!out->sweep_runs_known)
		return DB_OK;
	if ((e = read_run(db, 0, &out->last)) != DB_OK)
		return e;
	return read_run(db, 1, &out->last_ok);
}

enum db_err
status_db_last_ok(struct db *db, struct status_sweep_run *out)
{
	return read_run(db, 1, out);
}

int
status_db_sweeper_late(const struct status_sweep_run *last_ok, unsigned late_after)
{
	return !last_ok->present || last_ok->age > (int64_t)late_after;
}
