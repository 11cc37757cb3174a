/*
 * The seed article's database experiments, in C, against the real MariaDB
 * and Azurite of the test stack:
 *   E  a database rollback does not undo an upload        rows=0 blobs=1
 *   A  naive upload-then-insert, unique index fails        rows=1 blobs=1 orphaned=1
 *   B  the same with a compensating delete                 rows=1 blobs=0
 *   C  bindery's protocol, crash before mark-ready, sweep  before rows=2 pending=1 blobs=2,
 *                                                          after rows=1 blobs=1 swept=1
 * E, A and B use a scratch table so they show the hazard bindery avoids; C
 * runs the real protocol in a child that dies at a failpoint.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "autoconfig.h"
#include "storage/blob.h"
#include "parse/config.h"
#include "registry/db.h"
#include "protocol/protocol.h"
#include "protocol/services.h"
#include "tap.h"
#include "tools/mem_reader.h"

static struct services *svc;
static char prefix[64];

static int
upload(const char *name, const char *text)
{
	struct mem_reader m = { text, strlen(text), 0 };
	struct blob_upload_opts o = { "text/plain", NULL, 0, -1, NULL, NULL, NULL, 0 };
	struct blob_upload_info info;
	struct blob_result r;

	return blob_upload_create(svc->blob, name, &o, mem_read, &m, &info, &r);
}

static int
count_item(void *ctx, const struct blob_list_item *it)
{
	(void)it;
	(*(unsigned *)ctx)++;
	return 0;
}

static unsigned
count_blobs(const char *pfx)
{
	struct blob_result r;
	unsigned n = 0;

	if (blob_list(svc->blob, pfx, 0, count_item, &n, &r) != 0)
		tap_bail("list blobs: %s", blob_status_name(r.status));
	return n;
}

static const char sql_scratch[] =
	"CREATE TABLE IF NOT EXISTS experiment_docs (id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,"
	" name VARCHAR(255) NOT NULL, blob_name VARCHAR(200) NOT NULL, UNIQUE KEY (name)) ENGINE = InnoDB";
static const char sql_insert[] = "INSERT INTO experiment_docs (name, blob_name) VALUES (?, ?)";
static const char sql_count[] = "SELECT COUNT(*) FROM experiment_docs WHERE name LIKE ?";
static const char sql_cleanup[] = "DELETE FROM experiment_docs WHERE name LIKE ?";

static uint64_t
count_rows(const char *like)
{
	uint64_t n = 0;
	struct db_col c[] = { DBC_U64(&n) };
	struct db_param p[] = { DBP_STR(like) };

	if (db_query(svc->db, sql_count, p, 1, c, 1, NULL, NULL) != DB_OK)
		tap_bail("count rows: %s", db_last_error(svc->db));
	return n;
}

static void
experiment_e(void)
{
	char blob[128], name[128], like[128];
	struct db_param p[2];

	snprintf(blob, sizeof blob, "%se-blob", prefix);
	snprintf(name, sizeof name, "%se-tx", prefix);
	snprintf(like, sizeof like, "%se-%%", prefix);
	p[0] = DBP_STR(name);
	p[1] = DBP_STR(blob);
	tap_ok(db_begin(svc->db) == DB_OK && db_exec(svc->db, sql_insert, p, 2, NULL) == DB_OK,
	       "E: row inserted inside a transaction");
	tap_ok(upload(blob, "bytes in storage") == 0, "E: blob uploaded inside it");
	db_rollback(svc->db);
	TAP_EQ_INT(count_rows(like), 0, "E: after rollback rows=0");
	TAP_EQ_INT(count_blobs(blob), 1, "E: ... but blobs=1: the rollback did not undo the upload");
}

static void
experiment_a_b(int compensate)
{
	const char *tag = compensate ? "B" : "A";
	char first[128], blob[128], name[128], like[128];
	struct db_param p[2];
	struct blob_result r;
	enum db_err e;

	snprintf(name, sizeof name, "%s%s-doc", prefix, tag);
	snprintf(first, sizeof first, "%s%s-first", prefix, tag);
	snprintf(blob, sizeof blob, "%s%s-second", prefix, tag);
	snprintf(like, sizeof like, "%s%s-%%", prefix, tag);
	p[0] = DBP_STR(name);
	p[1] = DBP_STR(first);
	tap_ok(db_exec(svc->db, sql_insert, p, 2, NULL) == DB_OK, "%s: an existing row holds the name", tag);
	/* The naive handler: upload first, then insert. */
	tap_ok(upload(blob, "second upload") == 0, "%s: upload first", tag);
	p[1] = DBP_STR(blob);
	e = db_exec(svc->db, sql_insert, p, 2, NULL);
	tap_ok(e == DB_DUPLICATE, "%s: the insert fails on the unique index (%s)", tag, db_err_name(e));
	if (compensate)
		tap_ok(blob_delete(svc->blob, blob, NULL, NULL, &r) == 0, "B: compensating delete ran");
	TAP_EQ_INT(count_rows(like), 1, compensate ? "B: rows=1" : "A: rows=1");
	TAP_EQ_INT(count_blobs(blob), compensate ? 0 : 1,
		   compensate ? "B: blobs=0: the compensation cleaned up" : "A: blobs=1 orphaned=1");
}

/* The experiments leave orphans on purpose; remove them so audit stays clean. */
static int
cleanup_item(void *ctx, const struct blob_list_item *it)
{
	struct blob_result r;

	(void)ctx;
	if (blob_delete(svc->blob, it->name, NULL, NULL, &r) != 0)
		tap_diag("cleanup of %s: %s", it->name, blob_status_name(r.status));
	return 0;
}

static void
cleanup(void)
{
	char like[128];
	struct db_param p[1];
	struct blob_result r;

	snprintf(like, sizeof like, "%s%%", prefix);
	p[0] = DBP_STR(like);
	tap_ok(db_exec(svc->db, sql_cleanup, p, 1, NULL) == DB_OK &&
	       blob_list(svc->blob, prefix, 0, cleanup_item, NULL, &r) == 0 && count_blobs(prefix) == 0,
	       "the experiments' scratch rows and blobs are gone");
}

#ifdef BINDERY_FAILPOINTS
static const char sql_blob_of[] = "SELECT blob_name FROM documents WHERE name = ?";

static int
blob_exists(const char *name)
{
	struct blob_props props;
	struct blob_result r;

	return blob_get_properties(svc->blob, name, &props, &r) == 0;
}

static const char sql_count_docs[] =
	"SELECT COUNT(*), COALESCE(SUM(status = 'pending'), 0) FROM documents WHERE name LIKE ?";

static enum proto_result
create_doc(const char *name, const char *text)
{
	struct mem_reader m = { text, strlen(text), 0 };
	struct proto_body body = { mem_read, &m, (int64_t)strlen(text), "text/plain" };
	struct proto_answer ans;

	return proto_create(svc, span_from_cstr(name), "experiments", &body, NULL, &ans);
}

static void
doc_counts(const char *like, uint64_t *rows, uint64_t *pending)
{
	struct db_col c[] = { DBC_U64(rows), DBC_U64(pending) };
	struct db_param p[] = { DBP_STR(like) };

	if (db_query(svc->db, sql_count_docs, p, 1, c, 2, NULL, NULL) != DB_OK)
		tap_bail("count documents");
}

static void
experiment_c(void)
{
	char one[128], two[128], like[128], cmd[2048], blob_one[256] = "", blob_two[256] = "";
	const char *bin = getenv("BINDERY_TEST_BIN");
	uint64_t rows = 0, pending = 0;
	struct db_col c1[] = { DBC_STR(blob_one) }, c2[] = { DBC_STR(blob_two) };
	struct db_param p1[1], p2[1];
	pid_t pid;
	int status = 0;

	snprintf(one, sizeof one, "%sC-one", prefix);
	snprintf(two, sizeof two, "%sC-two", prefix);
	snprintf(like, sizeof like, "%sC-%%", prefix);
	tap_ok(create_doc(one, "the first document") == PROTO_OK, "C: a document created by the protocol");
	pid = fork();
	if (pid == 0) {
		/* The child dies between the upload and the tag flip, as a kill -9 would. */
		setenv("BINDERY_FAILPOINTS", "create.after_upload=exit", 1);
		(void)create_doc(two, "the second, never marked ready");
		_exit(0);
	}
	waitpid(pid, &status, 0);
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 137, "C: the second create crashed at the failpoint");
	doc_counts(like, &rows, &pending);
	TAP_EQ_INT(rows, 2, "C: before sweep rows=2");
	TAP_EQ_INT(pending, 1, "C: ... pending=1");
	p1[0] = DBP_STR(one);
	p2[0] = DBP_STR(two);
	tap_ok(db_query(svc->db, sql_blob_of, p1, 1, c1, 1, NULL, NULL) == DB_OK &&
	       db_query(svc->db, sql_blob_of, p2, 1, c2, 1, NULL, NULL) == DB_OK &&
	       blob_exists(blob_one) && blob_exists(blob_two), "C: ... blobs=2");
	if (bin == NULL) {
		tap_diag("BINDERY_TEST_BIN unset: no sweep");
		return;
	}
	snprintf(cmd, sizeof cmd, "BINDERY_LOG_STDERR=1 %s/bindery sweep --older-than 0 --force", bin);
	tap_ok(system(cmd) == 0, "C: bindery sweep ran");
	doc_counts(like, &rows, &pending);
	TAP_EQ_INT(rows, 1, "C: after sweep rows=1");
	TAP_EQ_INT(pending, 0, "C: ... pending=0");
	tap_ok(blob_exists(blob_one) && !blob_exists(blob_two), "C: ... blobs=1 (swept=1: the crashed upload's)");
}
#endif

int
main(void)
{
	struct bindery_config *cfg = NULL;
	char err[1024];
	/* The scratch table is DDL, which the runtime account BINDERY_CONFIG
	 * names may not run (sql/grants.sql): the migration account's file. */
	const char *path = getenv("BINDERY_TEST_MIGRATE_CONFIG");

	if (path == NULL)
		path = getenv("BINDERY_CONFIG");
	if (path == NULL || getenv("BINDERY_TEST_DB_SOCKET") == NULL)
		tap_missing("no test stack (./dev test starts one)");
	if (config_load(path, &cfg, err, sizeof err, NULL, 0) != 0)
		tap_bail("%s", err);
	if (services_open(cfg, &svc, err, sizeof err) != 0)
		tap_bail("%s", err);
	snprintf(prefix, sizeof prefix, "exp-%ld-", (long)getpid());
	if (db_exec(svc->db, sql_scratch, NULL, 0, NULL) != DB_OK)
		tap_bail("scratch table: %s", db_last_error(svc->db));

	experiment_e();
	experiment_a_b(0);
	experiment_a_b(1);
	cleanup();
#ifdef BINDERY_FAILPOINTS
	experiment_c();
#else
	tap_diag("C needs --enable-failpoints (./dev test builds with it)");
#endif
	services_free(svc);
	config_free(cfg);
	return tap_done();
}
