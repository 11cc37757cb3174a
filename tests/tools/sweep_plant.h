/*
 * sweep_plant.h - plants the crash table's states for the sweep and audit
 * tests and the benchmark: rows straight into MariaDB, blobs through the
 * storage client, tagged as each step of the protocol would leave them.
 * Header-only (static functions) so each test program includes it once.
 */
#ifndef BINDERY_SWEEP_PLANT_H
#define BINDERY_SWEEP_PLANT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "storage/blob.h"
#include "parse/config.h"
#include "registry/db.h"
#include "protocol/services.h"
#include "tools/mem_reader.h"

/* Upload bytes create-only with a state tag (NULL: no tags at all). */
static BINDERY_UNUSED int
plant_blob(struct blob_client *b, const char *name, const char *bytes, const char *state,
	   struct blob_upload_info *info)
{
	struct blob_tag tag = { "state", state };
	struct blob_upload_opts o = { .content_type = "text/plain", .tags = state ? &tag : NULL,
				      .ntags = state ? 1 : 0, .expected_size = (int64_t)strlen(bytes) };
	struct mem_reader m = { bytes, strlen(bytes), 0 };
	struct blob_upload_info scratch;
	struct blob_result r;

	return blob_upload_create(b, name, &o, mem_read, &m, info ? info : &scratch, &r);
}

static BINDERY_UNUSED int
plant_tag(struct blob_client *b, const char *name, const char *state)
{
	struct blob_tag tag = { "state", state };
	struct blob_result r;

	return blob_set_tags(b, name, &tag, 1, NULL, &r);
}

/* Three staged blocks and no commit: an upload cut mid-step-2 (experiment K). */
static BINDERY_UNUSED int
plant_staged(struct blob_client *b, const char *name)
{
	static const char *const ids[] = { "YmxrMDAwMDAx", "YmxrMDAwMDAy", "YmxrMDAwMDAz" };
	struct blob_result r;
	size_t i;

	for (i = 0; i < 3; i++)
		if (blob_put_block(b, name, ids[i], "staged", 6, &r) != 0)
			return -1;
	return 0;
}

static const char plant_sql_doc[] =
	"INSERT INTO documents (name, status, blob_name, content_type, owner, size, sha256)"
	" VALUES (?, ?, ?, 'text/plain', 'sweeptest', ?, ?)";
static const char plant_sql_blob[] =
	"INSERT INTO blobs (name, document_id, purpose, state, touched_at, size, sha256, retire_after)"
	" VALUES (?, ?, ?, ?, NOW(6) - INTERVAL ? SECOND, ?, ?,"
	" IF(? = 'retired', NOW(6) - INTERVAL 1 SECOND, NULL))";

/* A document row; size/sha NULL unless ready. *id is its id. */
static BINDERY_UNUSED enum db_err
plant_doc(struct db *db, const char *doc_name, const char *status, const char *blob_name,
	  uint64_t size, const char *sha, uint64_t *id)
{
	int ready = strcmp(status, "ready") == 0;
	struct db_param p[] = { DBP_STR(doc_name), DBP_STR(status), DBP_STR(blob_name),
				ready ? DBP_U64(size) : DBP_NULL, ready ? DBP_STR(sha) : DBP_NULL };
	enum db_err e = db_exec(db, plant_sql_doc, p, ARRAY_LEN(p), NULL);

	*id = db_last_insert_id(db);
	return e;
}

/* A registry row idle for age seconds (retired rows are due already). */
static BINDERY_UNUSED enum db_err
plant_row(struct db *db, const char *blob_name, uint64_t doc_id, const char *purpose,
	  const char *state, unsigned age, const char *sha)
{
	struct db_param p[] = { DBP_STR(blob_name), DBP_U64(doc_id), DBP_STR(purpose), DBP_STR(state),
				DBP_U64(age), DBP_NULL,
				DBP_STR_OR_NULL(sha), DBP_STR(state) };

	return db_exec(db, plant_sql_blob, p, ARRAY_LEN(p), NULL);
}

static const char plant_sql_count_rows[] =
	"SELECT (SELECT COUNT(*) FROM blobs WHERE LEFT(name, CHAR_LENGTH(?)) = ?)"
	" + (SELECT COUNT(*) FROM documents WHERE LEFT(blob_name, CHAR_LENGTH(?)) = ?)";

/* Registry + document rows whose blob name starts with prefix. */
static BINDERY_UNUSED uint64_t
count_rows(struct db *db, const char *prefix)
{
	uint64_t n = 0;
	struct db_col c[] = { DBC_U64(&n) };
	struct db_param p[] = { DBP_STR(prefix), DBP_STR(prefix), DBP_STR(prefix), DBP_STR(prefix) };

	if (db_query(db, plant_sql_count_rows, p, 4, c, 1, NULL, NULL) != DB_OK)
		return (uint64_t)-1;
	return n;
}

static BINDERY_UNUSED int
count_one(void *ctx, const struct blob_list_item *it)
{
	(void)it;
	(*(uint64_t *)ctx)++;
	return 0;
}

static BINDERY_UNUSED uint64_t
count_blobs(struct blob_client *b, const char *prefix)
{
	uint64_t n = 0;
	struct blob_result r;

	if (blob_list(b, prefix, 0, count_one, &n, &r) != 0)
		return (uint64_t)-1;
	return n;
}

static BINDERY_UNUSED int
blob_exists(struct blob_client *b, const char *name)
{
	struct blob_props p;
	struct blob_result r;

	if (blob_get_properties(b, name, &p, &r) == 0)
		return 1;
	return r.status == BLOB_NOT_FOUND ? 0 : -1;
}

/* The state tag's value, "" without one, "?" on error. */
static BINDERY_UNUSED const char *
blob_state(struct blob_client *b, const char *name, char *out, size_t outlen)
{
	struct blob_tag_set t;
	struct blob_result r;
	size_t i;

	snprintf(out, outlen, "?");
	if (blob_get_tags(b, name, &t, &r) != 0)
		return out;
	snprintf(out, outlen, "%s", "");
	for (i = 0; i < t.n; i++)
		if (strcmp(t.key[i], "state") == 0)
			snprintf(out, outlen, "%s", t.value[i]);
	return out;
}

static BINDERY_UNUSED int
plant_delete_listed(void *ctx, const struct blob_list_item *it)
{
	struct blob_result r;

	if (blob_delete(ctx, it->name, NULL, NULL, &r) != 0 && r.status != BLOB_NOT_FOUND)
		fprintf(stderr, "# clean-up of %s failed\n", it->name);
	return 0;
}

static const char plant_sql_del_blobs[] = "DELETE FROM blobs WHERE LEFT(name, CHAR_LENGTH(?)) = ?";
static const char plant_sql_del_docs[] =
	"DELETE FROM documents WHERE LEFT(blob_name, CHAR_LENGTH(?)) = ?";

/* A test's clean-up: every row whose blob name starts with prefix, then
 * every blob listed under it (rows first, so nothing points at a deleted
 * blob meanwhile).  0, or -1 when something stayed behind. */
static BINDERY_UNUSED int
plant_remove_prefix(struct services *s, const char *prefix)
{
	struct db_param p[] = { DBP_STR(prefix), DBP_STR(prefix) };
	struct blob_result r;

	if (db_exec(s->db, plant_sql_del_blobs, p, 2, NULL) != DB_OK ||
	    db_exec(s->db, plant_sql_del_docs, p, 2, NULL) != DB_OK ||
	    blob_list(s->blob, prefix, 0, plant_delete_listed, s->blob, &r) != 0)
		return -1;
	return 0;
}

/* Open config + services from $BINDERY_CONFIG, or skip the whole test. */
static BINDERY_UNUSED struct services *
plant_open(struct bindery_config **cfgp)
{
	char err[512], warn[512];
	struct services *s = NULL;
	const char *path = getenv("BINDERY_CONFIG");

	if (path == NULL || getenv("BINDERY_TEST_BIN") == NULL)
		return NULL;
	if (config_load(path, cfgp, err, sizeof err, warn, sizeof warn) != 0) {
		fprintf(stderr, "%s\n", err);
		return NULL;
	}
	if (services_open(*cfgp, &s, err, sizeof err) != 0) {
		fprintf(stderr, "%s\n", err);
		return NULL;
	}
	if (db_ensure(s->db) != DB_OK) {
		services_free(s);
		return NULL;
	}
	return s;
}

/* This run's name prefix, TAG + pid + 4 random bytes + "-", so runs sharing
 * the stack never touch each other's states.  0, or -1 without urandom. */
static BINDERY_UNUSED int
plant_run_prefix(const char *tag, char *out, size_t size)
{
	unsigned char rnd[4];
	FILE *ur = fopen("/dev/urandom", "rb");
	int got = ur != NULL && fread(rnd, 1, sizeof rnd, ur) == sizeof rnd;

	if (ur != NULL)
		fclose(ur);
	if (!got)
		return -1;
	snprintf(out, size, "%s%ld%02x%02x%02x%02x-", tag, (long)getpid(), rnd[0], rnd[1], rnd[2],
		 rnd[3]);
	return 0;
}

/* Remove a test's failpoints file and the PATH.lock that lib/base/failpoint.c
 * makes beside it once a failpoint is read, so a run leaves nothing in /tmp. */
static BINDERY_UNUSED void
plant_remove_failpoints(const char *path)
{
	char lock[4096];

	unlink(path);
	if ((size_t)snprintf(lock, sizeof lock, "%s.lock", path) < sizeof lock)
		unlink(lock);
}

#endif
