/* adopt_db.c - see adopt_db.h.  All SQL is literal text with bound parameters. */
#include <stdio.h>
#include <string.h>

#include "base/rand.h"
#include "registry/adopt_db.h"
#include "registry/docs_db.h"
#include "registry/events_db.h"

static const char sql_name_holder[] = "SELECT id FROM documents WHERE name = ?";

enum db_err
adopt_db_name_holder(struct db *db, const char *name, uint64_t *id)
{
	struct db_param p[] = { DBP_STR(name) };
	struct db_col c[] = { DBC_U64(id) };

	return db_query(db, sql_name_holder, p, 1, c, 1, NULL, NULL);
}

/* The time as DOC_TIME_SQL writes it, read back on the connection's UTC. */
#define TIME_IN "STR_TO_DATE(?, " DOC_TIME_SQL ")"

static const char sql_insert_doc[] =
	"INSERT INTO documents (id, name, status, blob_name, size, content_type, sha256, owner,"
	" version, created_at, updated_at, blob_etag)"
	" VALUES (?, ?, 'ready', ?, ?, ?, ?, ?, ?, " TIME_IN ", NOW(6), ?)";
static const char sql_insert_committed[] =
	"INSERT INTO blobs (name, document_id, purpose, state, size, sha256, etag)"
	" VALUES (?, ?, ?, 'committed', ?, ?, ?)";

static enum db_err
insert_committed(struct db *db, const struct adopt_blob *b, const char *purpose)
{
	struct db_param p[] = { DBP_STR(b->blob_name), DBP_U64(b->doc_id), DBP_STR(purpose),
				DBP_U64(b->size), DBP_STR(b->sha256), DBP_STR(b->etag) };

	return db_exec_one(db, sql_insert_committed, p, ARRAY_LEN(p));
}

static enum db_err
create_tx(struct db *db, const struct adopt_blob *b)
{
	struct db_param p[] = { DBP_U64(b->doc_id), DBP_STR(b->name), DBP_STR(b->blob_name),
				DBP_U64(b->size), DBP_STR(b->content_type), DBP_STR(b->sha256),
				DBP_STR(b->owner), DBP_U64(b->version), DBP_STR(b->created_at),
				DBP_STR(b->etag) };
	enum db_err e;

	if ((e = db_exec_one(db, sql_insert_doc, p, ARRAY_LEN(p))) != DB_OK ||
	    (e = insert_committed(db, b, intent_purpose_name(PURPOSE_CREATE))) != DB_OK ||
	    (e = docs_assign_ready_seq(db, b->doc_id)) != DB_OK)
		return e;
	return events_db_record_ready(db, b->doc_id);
}

enum db_err
adopt_db_create(struct db *db, const struct adopt_blob *b)
{
	DB_IN_TX(db, create_tx(db, b));
}

static const char sql_point_doc[] =
	"UPDATE documents SET blob_name = ?, size = ?, sha256 = ?, content_type = ?, version = ?,"
	" blob_etag = ?, updated_at = NOW(6)"
	" WHERE id = ? AND blob_name = ? AND status = 'ready' AND version < ?";
static const char sql_retire_row[] =
	"UPDATE blobs SET state = 'retired', retire_after = NOW(6) + INTERVAL ? SECOND,"
	" claimed_by = NULL, lease_until = NULL WHERE name = ? AND state = 'committed'";

static enum db_err
retire_row(struct db *db, const char *blob, unsigned grace)
{
	struct db_param p[] = { DBP_U64(grace), DBP_STR(blob) };

	return db_exec(db, sql_retire_row, p, ARRAY_LEN(p), NULL);
}

static enum db_err
replace_tx(struct db *db, const char *old_blob, const struct adopt_blob *b, unsigned grace)
{
	struct db_param p[] = { DBP_STR(b->blob_name), DBP_U64(b->size), DBP_STR(b->sha256),
				DBP_STR(b->content_type), DBP_U64(b->version), DBP_STR(b->etag),
				DBP_U64(b->doc_id), DBP_STR(old_blob), DBP_U64(b->version) };
	enum db_err e;

	if ((e = db_exec_one(db, sql_point_doc, p, ARRAY_LEN(p))) != DB_OK ||
	    (e = insert_committed(db, b, intent_purpose_name(PURPOSE_REPLACE))) != DB_OK ||
	    (e = events_db_record_ready(db, b->doc_id)) != DB_OK)
		return e;
	return retire_row(db, old_blob, grace);
}

enum db_err
adopt_db_replace(struct db *db, const char *old_blob, const struct adopt_blob *b, unsigned grace)
{
	DB_IN_TX(db, replace_tx(db, old_blob, b, grace));
}

static const char sql_delete_doc[] =
	"DELETE FROM documents WHERE id = ? AND blob_name = ? AND status = 'ready'";

static enum db_err
delete_tx(struct db *db, uint64_t doc_id, const char *blob, unsigned grace)
{
	struct db_param p[] = { DBP_U64(doc_id), DBP_STR(blob) };
	enum db_err e;

	if ((e = events_db_record_deleted(db, doc_id)) != DB_OK ||
	    (e = db_exec_one(db, sql_delete_doc, p, ARRAY_LEN(p))) != DB_OK)
		return e;
	return retire_row(db, blob, grace);
}

enum db_err
adopt_db_delete(struct db *db, uint64_t doc_id, const char *blob, unsigned grace)
{
	DB_IN_TX(db, delete_tx(db, doc_id, blob, grace));
}

static const char sql_insert_retired[] =
	"INSERT IGNORE INTO blobs (name, document_id, purpose, state, retire_after)"
	" VALUES (?, ?, 'replace', 'retired', NOW(6) + INTERVAL ? SECOND)";

enum db_err
adopt_db_retire(struct db *db, const char *blob, uint64_t doc_id, unsigned grace)
{
	struct db_param p[] = { DBP_STR(blob), DBP_U64(doc_id), DBP_U64(grace) };

	return db_exec(db, sql_insert_retired, p, ARRAY_LEN(p), NULL);
}

static const char sql_id_taken[] = "SELECT COUNT(*) FROM documents WHERE id = ?";
static const char sql_floor_insert[] =
	"INSERT INTO documents (id, name, status, blob_name, content_type, owner)"
	" VALUES (?, ?, 'pending', ?, 'application/octet-stream', '')";
static const char sql_floor_delete[] = "DELETE FROM documents WHERE id = ? AND blob_name = ?";

static enum db_err
floor_tx(struct db *db, uint64_t id)
{
	char tag[33], name[64], blob[64];
	uint64_t n = 0;
	struct db_param q[] = { DBP_U64(id) };
	struct db_col c[] = { DBC_U64(&n) };
	enum db_err e;

	if ((e = db_query(db, sql_id_taken, q, 1, c, 1, NULL, NULL)) != DB_OK)
		return e;
	if (n > 0)
		return DB_OK;	/* a row holds it: the counter is past it already */
	if (rand_hex(tag, sizeof tag, 16) != 0)
		return DB_FAILED;
	/* Names no document can have: never seen outside this transaction. */
	snprintf(name, sizeof name, "\x01id-floor-%s", tag);
	snprintf(blob, sizeof blob, "\x01id-floor-%s", tag);
	{
		struct db_param p[] = { DBP_U64(id), DBP_STR(name), DBP_STR(blob) };
		struct db_param d[] = { DBP_U64(id), DBP_STR(blob) };

		if ((e = db_exec_one(db, sql_floor_insert, p, ARRAY_LEN(p))) != DB_OK)
			return e;
		return db_exec_one(db, sql_floor_delete, d, ARRAY_LEN(d));
	}
}

enum db_err
adopt_db_id_floor(struct db *db, uint64_t id)
{
	DB_IN_TX(db, floor_tx(db, id));
}
