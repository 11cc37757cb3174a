/*
 * Integration test for db.c against the test MariaDB: every connection sets
 * its own sql_mode (DB_SQL_MODE), so a server whose global sql_mode is
 * permissive still refuses a value that does not fit its column instead of
 * cutting it (an over-long owner must never be stored truncated).  The
 * global mode is changed for the test and put back.
 *
 * Then [database] tls over TCP: off, on (encrypted), verify (the stack's
 * MariaDB has a certificate from its own CA, BINDERY_TEST_DB_TLS_CA), and
 * verify against CAs that did not sign it, which must fail rather than fall
 * back to plain text.
 *
 * Then the waits db_settings bound (a responder's are
 * request_deadline): a server that accepts the connection and never says a
 * word costs connect_timeout, and 0 keeps the CLI's default.
 */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "registry/db.h"
#include "tap.h"

static const char sql_global_mode[] = "SELECT @@GLOBAL.sql_mode";
static const char sql_set_global_mode[] = "SET GLOBAL sql_mode = ?";
static const char sql_session_mode[] = "SELECT @@SESSION.sql_mode";
static const char sql_make_table[] = "CREATE TEMPORARY TABLE test_db_fit (owner VARCHAR(4) "
	"CHARACTER SET utf8mb4 NOT NULL)";
static const char sql_insert[] = "INSERT INTO test_db_fit (owner) VALUES (?)";
static const char sql_count[] = "SELECT COUNT(*) FROM test_db_fit";
static const char sql_cipher[] = "SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS "
	"WHERE VARIABLE_NAME = 'SSL_CIPHER'";
/* Debian's bundle of public CAs: none of them signed the stack's certificate. */
#define PUBLIC_CAS "/etc/ssl/certs/ca-certificates.crt"

/* Root over the socket: only root may set the global mode. */
static struct db *
connect_root(const char *sock, const char *name)
{
	struct db_settings set = { .socket = sock, .user = "root", .name = name, .tls = DB_TLS_OFF };
	struct db *db = NULL;

	if (db_new(&set, &db) != DB_OK || db_ensure(db) != DB_OK)
		tap_bail("cannot connect as root over %s", sock);
	return db;
}

static void
check_session(const char *sock, const char *name)
{
	struct db *db = connect_root(sock, name);
	char mode[512] = "";
	struct db_col col = DBC_STR(mode);
	struct db_param too_long = DBP_STR("alice");
	uint64_t rows = 99;
	struct db_col count = DBC_U64(&rows);

	tap_ok(db_query(db, sql_session_mode, NULL, 0, &col, 1, NULL, NULL) == DB_OK &&
	       strcmp(mode, DB_SQL_MODE) == 0, "a new connection's sql_mode is bindery's: '%s'", mode);
	tap_ok(db_exec(db, sql_make_table, NULL, 0, NULL) == DB_OK, "a table with a 4-character column");
	tap_ok(db_exec(db, sql_insert, &too_long, 1, NULL) == DB_FAILED,
	       "a 5-character value is refused, not cut");
	if (db_query(db, sql_count, NULL, 0, &count, 1, NULL, NULL) != DB_OK)
		rows = 99;
	tap_ok(rows == 0, "... and nothing was stored (%llu rows)", (unsigned long long)rows);
	db_free(db);
}

/* Connect as the test user over TCP with tls and ca; the session's cipher
 * into cipher ("" without TLS).  Returns db_ensure's result. */
static enum db_err
connect_tls(enum db_tls tls, const char *ca, char *cipher, size_t cap)
{
	struct db_settings set = { .host = "127.0.0.1", .user = getenv("BINDERY_TEST_DB_USER"),
				   .password = getenv("BINDERY_TEST_DB_PASSWORD"),
				   .name = getenv("BINDERY_TEST_DB_NAME"), .tls = tls, .tls_ca = ca };
	struct db *db = NULL;
	struct db_col col = { DBT_STR, cipher, cap, NULL, NULL, 0 };
	enum db_err e;

	cipher[0] = '\0';
	set.port = (unsigned)strtoul(getenv("BINDERY_TEST_DB_PORT"), NULL, 10);
	if (db_new(&set, &db) != DB_OK)
		tap_bail("db_new");
	e = db_ensure(db);
	if (e == DB_OK && db_query(db, sql_cipher, NULL, 0, &col, 1, NULL, NULL) != DB_OK)
		e = DB_FAILED;
	db_free(db);
	return e;
}

static void
check_tls(void)
{
	const char *ca = getenv("BINDERY_TEST_DB_TLS_CA");
	char cipher[128];

	if (ca == NULL || getenv("BINDERY_TEST_DB_PORT") == NULL || getenv("BINDERY_TEST_DB_USER") == NULL) {
		tap_skip("no TCP test database with a TLS certificate (run under ./dev test)");
		return;
	}
	tap_ok(connect_tls(DB_TLS_OFF, NULL, cipher, sizeof cipher) == DB_OK && cipher[0] == '\0',
	       "tls = off: connected in plain text");
	tap_ok(connect_tls(DB_TLS_ON, NULL, cipher, sizeof cipher) == DB_OK && cipher[0] != '\0',
	       "tls = on: connected with TLS (%s)", cipher);
	tap_ok(connect_tls(DB_TLS_VERIFY, ca, cipher, sizeof cipher) == DB_OK && cipher[0] != '\0',
	       "tls = verify with the stack's CA: connected with TLS (%s)", cipher);
	tap_ok(connect_tls(DB_TLS_VERIFY, PUBLIC_CAS, cipher, sizeof cipher) == DB_UNAVAILABLE,
	       "tls = verify with CAs that did not sign the server: no connection");
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A listener on a free loopback port that never accepts: the kernel
 * completes the TCP handshake, then nothing ever arrives.  -1 on failure. */
static int
silent_listener(unsigned *port)
{
	struct sockaddr_in a;
	socklen_t len = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 8) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*port = ntohs(a.sin_port);
	return fd;
}

/* db_ensure against the silent server with connect_timeout; its seconds. */
static double
silent_connect(unsigned port, unsigned connect_timeout, enum db_err *e)
{
	struct db_settings set = { .host = "127.0.0.1", .port = port, .user = "nobody", .name = "none",
				   .connect_timeout = connect_timeout, .io_timeout = connect_timeout };
	struct db *db = NULL;
	double t0 = now_s();

	if (db_new(&set, &db) != DB_OK)
		tap_bail("db_new");
	*e = db_ensure(db);
	db_free(db);
	return now_s() - t0;
}

static void
check_silent_server(void)
{
	unsigned port = 0;
	int fd = silent_listener(&port);
	enum db_err e;
	double secs;

	if (fd < 0)
		tap_bail("no loopback listener");
	secs = silent_connect(port, 1, &e);
	tap_ok(e == DB_UNAVAILABLE, "a server that never greets: unavailable (%s)", db_err_name(e));
	tap_ok(secs >= 0.5 && secs < 3, "... after %.2f s with connect_timeout = 1, not the default %d s",
	       secs, DB_CONNECT_TIMEOUT_DEFAULT);
	secs = silent_connect(port, 0, &e);
	tap_ok(e == DB_UNAVAILABLE && secs >= DB_CONNECT_TIMEOUT_DEFAULT - 1 &&
	       secs < 2 * DB_CONNECT_TIMEOUT_DEFAULT, "connect_timeout = 0 (the CLI) keeps the default: %.2f s", secs);
	close(fd);
}

/*
 * db_batch: values written by its binder arrive exactly as bound ones do
 * (every byte, a quote, a backslash, a NUL, a '?', UTF-8), an invalid
 * value is refused as a bound one is, the first error stops the batch,
 * "one" judges changed rows, and db_begin's transaction starts with the
 * batch and ends with the rollback.
 */
static const char sql_batch_table[] = "CREATE TEMPORARY TABLE test_db_batch (id INT NOT NULL"
	" AUTO_INCREMENT PRIMARY KEY, s VARCHAR(64) CHARACTER SET utf8mb4 NOT NULL,"
	" a VARCHAR(16) CHARACTER SET ascii NOT NULL DEFAULT '', n BIGINT NULL, UNIQUE KEY (s))"
	" ENGINE=InnoDB";
static const char sql_batch_insert[] = "INSERT INTO test_db_batch (s, n) VALUES (?, ?) RETURNING id, s";
static const char sql_batch_ascii[] = "INSERT INTO test_db_batch (s, a) VALUES (?, ?)";
static const char sql_batch_touch[] = "UPDATE test_db_batch SET n = n + 1 WHERE s = ?";
static const char sql_batch_get[] = "SELECT s, HEX(s), n, '?' FROM test_db_batch WHERE id = ?";
static const char sql_batch_count[] = "SELECT COUNT(*) FROM test_db_batch";
static const char sql_stmt_closes[] = "SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS "
				      "WHERE VARIABLE_NAME = 'COM_STMT_CLOSE'";

static uint64_t
batch_rows(struct db *db)
{
	uint64_t n = 99;
	struct db_col c = DBC_U64(&n);

	return db_query(db, sql_batch_count, NULL, 0, &c, 1, NULL, NULL) == DB_OK ? n : 99;
}

/* db_forget_statements closes every cached statement on the server too,
 * and whatever runs next prepares again. */
static uint64_t
stmt_closes(struct db *db)
{
	char v[32] = "";
	struct db_col col = DBC_STR(v);

	if (db_query(db, sql_stmt_closes, NULL, 0, &col, 1, NULL, NULL) != DB_OK)
		tap_bail("cannot read Com_stmt_close: %s", db_last_error(db));
	return strtoull(v, NULL, 10);
}

static void
check_forget(struct db *db)
{
	uint64_t before = stmt_closes(db), after;
	struct db_param sixth[] = { DBP_STR("sixth"), DBP_NULL };
	struct db_step st[] = { DB_STEP(sql_batch_insert, sixth) };

	db_forget_statements(db);
	after = stmt_closes(db);
	/* At least the count query itself and batch_rows' count were cached. */
	tap_ok(after >= before + 2, "forgetting the statements closed them on the server (%llu closed)",
	       (unsigned long long)(after - before));
	tap_ok(db_batch(db, st, 1) == DB_OK && batch_rows(db) == 4,
	       "statements and batches run again after it");
}

static void
check_batch(const char *sock, const char *name)
{
	static const char odd[] = "q'\\\0?\"\xc3\xa9;--";	/* ' \ NUL ? " é ; -- */
	struct db *db = connect_root(sock, name);
	uint64_t id = 0, n = 0, id2 = 0;
	char back[64] = "", back2[64] = "", hex[160] = "", mark[4] = "";
	struct db_col made[] = { DBC_U64(&id), DBC_STR(back) };
	struct db_col got[] = { DBC_STR(back2), DBC_STR(hex), DBC_U64(&n), DBC_STR(mark) };
	struct db_param ins[] = { { DBT_STR, odd, sizeof odd - 1, 0, 0 }, DBP_U64(41) };
	struct db_param key[] = { { DBT_STR, odd, sizeof odd - 1, 0, 0 } };
	struct db_param idp[] = { DBP_U64(0) };
	struct db_param other[] = { DBP_STR("other"), DBP_I64(-7) };
	struct db_param bad_utf8[] = { DBP_STR("\xff"), DBP_NULL };
	struct db_param bad_ascii[] = { DBP_STR("x"), DBP_STR("\xc3\xa9") };
	enum db_err e;

	if (db_exec(db, sql_batch_table, NULL, 0, NULL) != DB_OK)
		tap_bail("cannot make the batch table");
	{
		struct db_step st[] = { DB_STEP_ROW(sql_batch_insert, ins, made, 2),
					DB_STEP_ONE(sql_batch_touch, key) };
		e = db_batch(db, st, 2);
		tap_ok(e == DB_OK && st[0].found && id > 0 && st[1].affected == 1 &&
		       memcmp(back, odd, sizeof odd - 1) == 0,
		       "a batch inserts and returns the row (id %llu), the update changed one row",
		       (unsigned long long)id);
	}
	idp[0] = DBP_U64(id);
	{
		struct db_step st[] = { DB_STEP_ROW(sql_batch_get, idp, got, 4) };
		static const char want_hex[] = "71275C003F22C3A93B2D2D";

		e = db_batch(db, st, 1);
		tap_ok(e == DB_OK && st[0].found && strcmp(hex, want_hex) == 0 && n == 42 &&
		       strcmp(mark, "?") == 0,
		       "every byte arrived as bound (%s), n = %llu, a quoted '?' stayed text", hex,
		       (unsigned long long)n);
	}
	{
		struct db_step st[] = { DB_STEP(sql_batch_ascii, bad_utf8) };
		tap_ok(db_batch(db, st, 1) != DB_OK && batch_rows(db) == 1,
		       "invalid UTF-8 is refused as a bound value is: %s", db_last_error(db));
	}
	{
		struct db_step st[] = { DB_STEP(sql_batch_ascii, bad_ascii) };
		tap_ok(db_batch(db, st, 1) != DB_OK && batch_rows(db) == 1,
		       "a character its column cannot hold is refused (strict mode): %s", db_last_error(db));
	}
	{
		/* The duplicate stops the batch: the third statement never runs. */
		struct db_col made2[] = { DBC_U64(&id2), DBC_STR(back) };
		struct db_step st[] = { DB_STEP_ROW(sql_batch_insert, other, made2, 2),
					DB_STEP(sql_batch_insert, ins),
					DB_STEP(sql_batch_touch, key) };
		e = db_batch(db, st, 3);
		tap_ok(e == DB_DUPLICATE && st[0].found && id2 > id && st[2].affected == 0 &&
		       batch_rows(db) == 2, "the first error stops the batch (%s), earlier steps stand",
		       db_err_name(e));
	}
	{
		struct db_param none[] = { DBP_STR("nobody") };
		struct db_step st[] = { DB_STEP_ONE(sql_batch_touch, none) };
		tap_ok(db_batch(db, st, 1) == DB_CONFLICT && st[0].affected == 0,
		       "a step that must change one row and changed none: conflict");
	}
	{
		struct db_param third[] = { DBP_STR("third"), DBP_NULL };
		struct db_step st[] = { DB_STEP(sql_batch_insert, third) };
		tap_ok(db_begin(db) == DB_OK && db_batch(db, st, 1) == DB_OK && batch_rows(db) == 3,
		       "db_begin's transaction starts with the batch");
		db_rollback(db);
		tap_ok(batch_rows(db) == 2, "and its rollback takes the row back");
		tap_ok(db_begin(db) == DB_OK && db_commit(db) == DB_OK, "a transaction that ran nothing commits");
	}
	{
		struct db_param fourth[] = { DBP_STR("fourth"), DBP_NULL };
		struct db_step st[] = { DB_STEP(sql_batch_insert, fourth), DB_STEP0(db_sql_commit) };
		tap_ok(db_begin(db) == DB_OK && db_batch(db, st, 2) == DB_OK, "a batch that ends with COMMIT");
		db_rollback(db);
		tap_ok(batch_rows(db) == 3 && db_commit(db) == DB_OK,
		       "its rows outlast a rollback after it, and the commit after it is free");
	}
	{
		struct db_param none[] = { DBP_STR("nobody") };
		struct db_step st[] = { DB_STEP_ONE(sql_batch_touch, none), DB_STEP0(db_sql_commit) };
		tap_ok(db_begin(db) == DB_OK && db_batch(db, st, 2) == DB_FAILED,
		       "a batch may not judge a row count it would already have committed");
		db_rollback(db);
	}
	{
		struct db_param dup[] = { DBP_STR("fourth"), DBP_NULL }, fifth[] = { DBP_STR("fifth"), DBP_NULL };
		struct db_step st[] = { DB_STEP(sql_batch_insert, fifth), DB_STEP(sql_batch_insert, dup),
					DB_STEP0(db_sql_commit) };
		tap_ok(db_begin(db) == DB_OK && db_batch(db, st, 3) == DB_DUPLICATE,
		       "an error before the batch's COMMIT stops it there");
		db_rollback(db);
		tap_ok(batch_rows(db) == 3, "... and the rollback takes back what ran before it");
	}
	check_forget(db);
	db_free(db);
}

int
main(void)
{
	const char *sock = getenv("BINDERY_TEST_DB_SOCKET");
	const char *name = getenv("BINDERY_TEST_DB_NAME");
	struct db *admin;
	char saved[512] = "", now[512] = "";
	struct db_col col = DBC_STR(saved), col_now = DBC_STR(now);
	struct db_param lax = DBP_STR(""), restore;

	if (sock == NULL || name == NULL)
		tap_skip_all("no test database (run under ./dev test)");
	admin = connect_root(sock, name);
	if (db_query(admin, sql_global_mode, NULL, 0, &col, 1, NULL, NULL) != DB_OK)
		tap_bail("cannot read the global sql_mode");
	restore = DBP_STR(saved);
	tap_ok(db_exec(admin, sql_set_global_mode, &lax, 1, NULL) == DB_OK &&
	       db_query(admin, sql_global_mode, NULL, 0, &col_now, 1, NULL, NULL) == DB_OK &&
	       now[0] == '\0', "the server's global sql_mode is now permissive ('')");
	check_session(sock, name);
	tap_ok(db_exec(admin, sql_set_global_mode, &restore, 1, NULL) == DB_OK &&
	       db_query(admin, sql_global_mode, NULL, 0, &col_now, 1, NULL, NULL) == DB_OK &&
	       strcmp(now, saved) == 0, "the global sql_mode is put back: '%s'", saved);
	db_free(admin);
	check_batch(sock, name);
	check_tls();
	check_silent_server();
	return tap_done();
}
