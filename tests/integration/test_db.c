/*
 * Integration test for db.c against the test MariaDB: every connection sets
 * its own sql_mode (DB_SQL_MODE), so a server whose global sql_mode is
 * permissive still refuses a value that does not fit its column instead of
 * cutting it (issue 11, item 5: an over-long owner must never be stored
 * truncated).  The global mode is changed for the test and put back.
 *
 * Then [database] tls over TCP: off, on (encrypted), verify (the stack's
 * MariaDB has a certificate from its own CA, BINDERY_TEST_DB_TLS_CA), and
 * verify against CAs that did not sign it, which must fail rather than fall
 * back to plain text.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	struct db_settings set = { sock, NULL, 0, "root", NULL, name, DB_TLS_OFF, NULL };
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
	struct db_settings set = { NULL, "127.0.0.1", 0, getenv("BINDERY_TEST_DB_USER"),
				   getenv("BINDERY_TEST_DB_PASSWORD"), getenv("BINDERY_TEST_DB_NAME"),
				   tls, ca };
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
	check_tls();
	return tap_done();
}
