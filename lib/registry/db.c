/* db.c - see db.h.  Connector/C prepared statements with a per-connection cache, and batches. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mysql.h>
#include <errmsg.h>
#include <mysqld_error.h>

#include "registry/db.h"
#include "base/counters.h"
#include "base/log.h"

#define DB_MAX_STMTS 64
#define DB_MAX_BINDS 24
#define DB_IDLE_PING_SECONDS 5

struct stmt_slot {
	const char *sql;	/* identity: the literal's address */
	MYSQL_STMT *stmt;
};

struct db {
	MYSQL *conn;
	int broken;
	int galera;		/* the server is a Galera node (wsrep on and ready) */
	time_t last_used;
	char *socket, *user, *password, *name, *tls_ca;
	char *hosts[DB_MAX_HOSTS];	/* tried in order on every connect */
	unsigned ports[DB_MAX_HOSTS];
	size_t nhosts;
	enum db_tls tls;
	unsigned connect_timeout, io_timeout;	/* seconds, never 0 */
	struct stmt_slot stmts[DB_MAX_STMTS];
	size_t nstmts;
	char last_error[512];
	unsigned last_errno;	/* the server's or client's number for last_error */
	uint64_t last_insert_id;
	int begin_pending;	/* db_begin ran; START TRANSACTION not yet sent */
	int batch_commit_ok;	/* db_set_commit_in_batch */
	int committed;		/* a batch's COMMIT ended the transaction */
	struct buf batch;	/* a batch's text, kept for the next one */
};

static const char *const err_names[] = {
	"ok", "not found", "duplicate", "conflict", "retry", "unavailable", "failed", "out of memory",
	"over quota",
};

const char *
db_err_name(enum db_err e)
{
	return (size_t)e < ARRAY_LEN(err_names) ? err_names[e] : "?";
}

static char *
dup_or_null(const char *s)
{
	return s ? span_dup(span_from_cstr(s)) : NULL;
}

enum db_err
db_new(const struct db_settings *cfg, struct db **out)
{
	struct db *db = calloc(1, sizeof *db);
	size_t i;
	int nomem = 0;

	*out = NULL;
	if (db == NULL)
		return DB_NOMEM;
	db->socket = dup_or_null(cfg->socket);
	if (cfg->nhosts > 0) {
		db->nhosts = cfg->nhosts < DB_MAX_HOSTS ? cfg->nhosts : DB_MAX_HOSTS;
		for (i = 0; i < db->nhosts; i++) {
			db->hosts[i] = dup_or_null(cfg->hosts[i].name);
			db->ports[i] = cfg->hosts[i].port;
			nomem |= db->hosts[i] == NULL;
		}
	} else if (cfg->host) {
		db->nhosts = 1;
		db->hosts[0] = dup_or_null(cfg->host);
		db->ports[0] = cfg->port;
		nomem |= db->hosts[0] == NULL;
	}
	db->user = dup_or_null(cfg->user);
	db->password = dup_or_null(cfg->password);
	db->name = dup_or_null(cfg->name);
	db->tls = cfg->tls;
	db->tls_ca = dup_or_null(cfg->tls_ca);
	db->connect_timeout = cfg->connect_timeout ? cfg->connect_timeout : DB_CONNECT_TIMEOUT_DEFAULT;
	db->io_timeout = cfg->io_timeout ? cfg->io_timeout : DB_IO_TIMEOUT_DEFAULT;
	if ((cfg->socket && !db->socket) || nomem || !db->user ||
	    (cfg->password && !db->password) || !db->name || (cfg->tls_ca && !db->tls_ca)) {
		db_free(db);
		return DB_NOMEM;
	}
	*out = db;
	return DB_OK;
}

void
db_forget_statements(struct db *db)
{
	size_t i;

	for (i = 0; i < db->nstmts; i++)
		mysql_stmt_close(db->stmts[i].stmt);
	db->nstmts = 0;
	buf_free(&db->batch);
}

static void
disconnect(struct db *db)
{
	db_forget_statements(db);
	if (db->conn)
		mysql_close(db->conn);
	db->conn = NULL;
	db->broken = 0;
}

void
db_free(struct db *db)
{
	size_t i;

	if (db == NULL)
		return;
	disconnect(db);
	free(db->socket);
	for (i = 0; i < db->nhosts; i++)
		free(db->hosts[i]);
	free(db->user);
	if (db->password)
		explicit_bzero(db->password, strlen(db->password));
	free(db->password);
	free(db->name);
	free(db->tls_ca);
	free(db);
}

static void
remember_error(struct db *db, unsigned code, const char *msg)
{
	snprintf(db->last_error, sizeof db->last_error, "%u: %s", code, msg ? msg : "");
	db->last_errno = code;
}

int
db_commit_may_be_lost(const struct db *db)
{
	return db->galera;
}

enum db_err
db_set_lost_commit(struct db *db)
{
	remember_error(db, ER_LOCK_DEADLOCK, "COMMIT succeeded but did not take effect");
	return DB_RETRY;
}

int
db_txn_retry(struct db *db, enum db_err e, unsigned tries)
{
	struct timespec now, pause;
	long ms;

	if (tries >= DB_TXN_TRIES)
		return 0;
	if (!((e == DB_RETRY && db->last_errno == ER_LOCK_DEADLOCK) ||
	      (e == DB_UNAVAILABLE && db->last_errno == ER_UNKNOWN_COM_ERROR)))
		return 0;
	/* 5 ms, then 10 ms, plus up to 5 ms of jitter from the clock so two
	 * losers on different hosts do not meet again in step. */
	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (5L << (tries - 1 < 4 ? tries - 1 : 4)) + (now.tv_nsec / 1000) % 5;
	pause.tv_sec = 0;
	pause.tv_nsec = ms * 1000000L;
	nanosleep(&pause, NULL);
	log_info("transaction retried (%u of %d) after %s", tries + 1, DB_TXN_TRIES, db->last_error);
	return 1;
}

/* Map a server/client error number to our result, marking lost connections. */
static enum db_err
classify(struct db *db, unsigned code, const char *msg)
{
	remember_error(db, code, msg);
	switch (code) {
	case ER_DUP_ENTRY:
		return DB_DUPLICATE;
	case ER_LOCK_DEADLOCK:
	case ER_LOCK_WAIT_TIMEOUT:
		return DB_RETRY;
	case CR_SERVER_GONE_ERROR:
	case CR_SERVER_LOST:
	case CR_CONNECTION_ERROR:
	case CR_CONN_HOST_ERROR:
	case CR_COMMANDS_OUT_OF_SYNC:
	case ER_CONNECTION_KILLED:
	case ER_SERVER_SHUTDOWN:
	/* A Galera node that left the primary component ("WSREP has not yet
	 * prepared node for application use"): reconnecting fails over. */
	case ER_UNKNOWN_COM_ERROR:
		db->broken = 1;
		log_warn("database connection lost (%s)", db->last_error);
		counters_add(COUNTER_DATABASE_ERRORS, 1);
		return DB_UNAVAILABLE;
	default:
		log_error("database error %s", db->last_error);
		counters_add(COUNTER_DATABASE_ERRORS, 1);
		return DB_FAILED;
	}
}

/*
 * TLS over TCP (a unix socket never leaves the host).  ENFORCE makes a
 * server without TLS a failed connection, never a silent fall back to
 * plain text; VERIFY is set either way because Connector/C's default for it
 * changed between releases.
 */
static void
tls_options(struct db *db)
{
	my_bool on = 1, verify = db->tls == DB_TLS_VERIFY;

	if (db->tls == DB_TLS_OFF || db->socket)
		return;
	mysql_options(db->conn, MYSQL_OPT_SSL_ENFORCE, &on);
	mysql_options(db->conn, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &verify);
	if (db->tls_ca)
		mysql_options(db->conn, MYSQL_OPT_SSL_CA, db->tls_ca);
}

enum wsrep_kind { WSREP_NONE, WSREP_READY, WSREP_NOT_READY };

/*
 * Is the server a Galera node, and can it take work (in the primary
 * component, not joining)?  A plain server has wsrep off, and one built
 * without wsrep refuses the variable (not Galera); 1047 to the query itself
 * is a node that is not ready.
 */
static enum wsrep_kind
wsrep_probe(struct db *db)
{
	MYSQL_RES *res;
	MYSQL_ROW row;
	enum wsrep_kind k = WSREP_NOT_READY;

	if (mysql_query(db->conn, "SELECT @@GLOBAL.wsrep_on, (SELECT VARIABLE_VALUE FROM "
			"information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'WSREP_READY')"))
		return mysql_errno(db->conn) == ER_UNKNOWN_COM_ERROR ? WSREP_NOT_READY : WSREP_NONE;
	res = mysql_store_result(db->conn);
	if (res == NULL)
		return WSREP_NOT_READY;
	row = mysql_fetch_row(res);
	if (row != NULL) {
		if (row[0] == NULL || strcmp(row[0], "0") == 0)
			k = WSREP_NONE;
		else if (row[1] != NULL && strcmp(row[1], "ON") == 0)
			k = WSREP_READY;
	}
	mysql_free_result(res);
	return k;
}

/* One connection attempt to server i of the list (or the socket). */
static enum db_err
connect_one(struct db *db, size_t i)
{
	my_bool off = 0;
	enum wsrep_kind wsrep;

	db->conn = mysql_init(NULL);
	if (db->conn == NULL)
		return DB_NOMEM;
	/* Every wait on the server is bounded (db_settings): a server that
	 * stops answering costs a request one timeout, not a hung worker. */
	mysql_options(db->conn, MYSQL_OPT_CONNECT_TIMEOUT, &db->connect_timeout);
	mysql_options(db->conn, MYSQL_OPT_READ_TIMEOUT, &db->io_timeout);
	mysql_options(db->conn, MYSQL_OPT_WRITE_TIMEOUT, &db->io_timeout);
	/* We reconnect ourselves: an implicit reconnect would drop prepared
	 * statements and transaction state behind our back. */
	mysql_options(db->conn, MYSQL_OPT_RECONNECT, &off);
	mysql_options(db->conn, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	tls_options(db);
	/* Multi-statement text carries db_batch (literal SQL, values bound by
	 * its binder); prepared statements are one statement by nature. */
	if (mysql_real_connect(db->conn, db->socket ? NULL : db->hosts[i], db->user, db->password,
			       db->name, db->socket ? 0 : db->ports[i], db->socket,
			       CLIENT_MULTI_STATEMENTS) == NULL) {
		remember_error(db, mysql_errno(db->conn), mysql_error(db->conn));
		log_warn("cannot connect to the database %s:%u (%s)", db->socket ? db->socket : db->hosts[i],
			 db->socket ? 0 : db->ports[i], db->last_error);
		counters_add(COUNTER_DATABASE_ERRORS, 1);
		mysql_close(db->conn);
		db->conn = NULL;
		return DB_UNAVAILABLE;
	}
	wsrep = wsrep_probe(db);
	db->galera = wsrep == WSREP_READY;
	/* Only a list has somewhere else to go: one server is used as it is. */
	if (db->nhosts > 1 && wsrep == WSREP_NOT_READY) {
		remember_error(db, ER_UNKNOWN_COM_ERROR, "wsrep_ready is not ON");
		log_warn("database %s:%u is a Galera node that is not ready; trying the next",
			 db->hosts[i], db->ports[i]);
		mysql_close(db->conn);
		db->conn = NULL;
		return DB_UNAVAILABLE;
	}
	/* A Galera node applies other nodes' commits after they return there:
	 * a read must first wait for what the cluster has committed, or a
	 * document created through another web host can be 404 here
	 * (doc/design.md "Past one machine"; its cost is in doc/scaling.md). */
	if (wsrep == WSREP_READY && mysql_query(db->conn, "SET SESSION wsrep_sync_wait = 1")) {
		enum db_err e = classify(db, mysql_errno(db->conn), mysql_error(db->conn));
		disconnect(db);
		return e;
	}
	/* Times are UTC everywhere so RFC 3339 output needs no conversion;
	 * sql_mode is ours, not the server's (db.h). */
	if (mysql_query(db->conn, "SET time_zone = '+00:00', SESSION tx_isolation = 'READ-COMMITTED', "
			"SESSION sql_mode = '" DB_SQL_MODE "'")) {
		enum db_err e = classify(db, mysql_errno(db->conn), mysql_error(db->conn));
		disconnect(db);
		return e;
	}
	db->last_used = time(NULL);
	return DB_OK;
}

/* Connect afresh: the socket, or the first server of the list that takes us. */
static enum db_err
connect_now(struct db *db)
{
	enum db_err e = DB_UNAVAILABLE;
	size_t i, n = db->socket ? 1 : db->nhosts;

	disconnect(db);
	for (i = 0; i < n; i++) {
		e = connect_one(db, i);
		if (e == DB_OK || e == DB_NOMEM)
			break;
	}
	return e;
}

enum db_err
db_ensure(struct db *db)
{
	if (db->conn == NULL || db->broken)
		return connect_now(db);
	if (time(NULL) - db->last_used >= DB_IDLE_PING_SECONDS) {
		counters_add(COUNTER_DATABASE_ROUND_TRIPS, 1);
		if (mysql_ping(db->conn) != 0)
			return connect_now(db);
		db->last_used = time(NULL);
	}
	return DB_OK;
}

enum db_err
db_ping(struct db *db)
{
	if (db->conn == NULL || db->broken)
		return connect_now(db);
	counters_add(COUNTER_DATABASE_ROUND_TRIPS, 1);
	if (mysql_ping(db->conn) != 0)
		return connect_now(db);
	db->last_used = time(NULL);
	return DB_OK;
}

static enum db_err
simple(struct db *db, const char *sql)
{
	enum db_err e = db_ensure(db);

	if (e != DB_OK)
		return e;
	counters_add(COUNTER_DATABASE_ROUND_TRIPS, 1);
	if (mysql_query(db->conn, sql))
		return classify(db, mysql_errno(db->conn), mysql_error(db->conn));
	return DB_OK;
}

const char db_sql_commit[] = "COMMIT";

int
db_may_commit_in_batch(const struct db *db)
{
	return db->batch_commit_ok;
}

void
db_set_commit_in_batch(struct db *db, int allowed)
{
	db->batch_commit_ok = allowed;
}

enum db_err
db_begin(struct db *db)
{
	db->begin_pending = 1;
	db->committed = 0;
	return DB_OK;
}

/* The START TRANSACTION a db_begin deferred, before a prepared statement. */
static enum db_err
start_pending(struct db *db)
{
	if (!db->begin_pending)
		return DB_OK;
	db->begin_pending = 0;
	return simple(db, "START TRANSACTION");
}

enum db_err
db_commit(struct db *db)
{
	if (db->begin_pending || db->committed) {
		/* nothing ran, or a batch committed: nothing to commit */
		db->begin_pending = db->committed = 0;
		return DB_OK;
	}
	return simple(db, "COMMIT");
}

void
db_rollback(struct db *db)
{
	if (db->begin_pending || db->committed) {
		db->begin_pending = db->committed = 0;
		return;
	}
	if (db->conn == NULL || db->broken)
		return;
	counters_add(COUNTER_DATABASE_ROUND_TRIPS, 1);
	if (mysql_query(db->conn, "ROLLBACK"))
		(void)classify(db, mysql_errno(db->conn), mysql_error(db->conn));
}

static enum db_err
prepare_cached(struct db *db, const char *sql, MYSQL_STMT **out)
{
	MYSQL_STMT *stmt;
	size_t i;
	enum db_err e;

	for (i = 0; i < db->nstmts; i++) {
		if (db->stmts[i].sql == sql) {
			*out = db->stmts[i].stmt;
			return DB_OK;
		}
	}
	e = db_ensure(db);
	if (e != DB_OK)
		return e;
	stmt = mysql_stmt_init(db->conn);
	if (stmt == NULL)
		return DB_NOMEM;
	counters_add(COUNTER_DATABASE_ROUND_TRIPS, 1);
	if (mysql_stmt_prepare(stmt, sql, strlen(sql))) {
		e = classify(db, mysql_stmt_errno(stmt), mysql_stmt_error(stmt));
		mysql_stmt_close(stmt);
		return e;
	}
	if (db->nstmts == DB_MAX_STMTS) {
		/* More distinct statements than expected: evict the oldest. */
		mysql_stmt_close(db->stmts[0].stmt);
		memmove(db->stmts, db->stmts + 1, sizeof db->stmts[0] * (DB_MAX_STMTS - 1));
		db->nstmts--;
	}
	db->stmts[db->nstmts].sql = sql;
	db->stmts[db->nstmts].stmt = stmt;
	db->nstmts++;
	*out = stmt;
	return DB_OK;
}

static void
bind_params(MYSQL_BIND *b, const struct db_param *params, size_t n, unsigned long *lens)
{
	size_t i;

	memset(b, 0, sizeof *b * n);
	for (i = 0; i < n; i++) {
		switch (params[i].type) {
		case DBT_NULL:
			b[i].buffer_type = MYSQL_TYPE_NULL;
			break;
		case DBT_STR:
			lens[i] = params[i].len;
			b[i].buffer_type = MYSQL_TYPE_STRING;
			b[i].buffer = (void *)(params[i].s ? params[i].s : "");
			b[i].buffer_length = params[i].len;
			b[i].length = &lens[i];
			break;
		case DBT_U64:
			b[i].buffer_type = MYSQL_TYPE_LONGLONG;
			b[i].buffer = (void *)&params[i].u;
			b[i].is_unsigned = 1;
			break;
		case DBT_I64:
			b[i].buffer_type = MYSQL_TYPE_LONGLONG;
			b[i].buffer = (void *)&params[i].i;
			break;
		}
	}
}

static enum db_err
run(struct db *db, const char *sql, const struct db_param *params, size_t nparams,
    MYSQL_STMT **out)
{
	MYSQL_BIND binds[DB_MAX_BINDS];
	unsigned long lens[DB_MAX_BINDS];
	MYSQL_STMT *stmt = NULL;
	enum db_err e;

	if (nparams > DB_MAX_BINDS)
		return DB_FAILED;
	e = prepare_cached(db, sql, &stmt);
	if (e != DB_OK)
		return e;
	if (mysql_stmt_param_count(stmt) != nparams) {
		log_error("statement expects %lu parameters, got %zu",
			  (unsigned long)mysql_stmt_param_count(stmt), nparams);
		return DB_FAILED;
	}
	if ((e = start_pending(db)) != DB_OK)
		return e;
	bind_params(binds, params, nparams, lens);
	counters_add(COUNTER_DATABASE_ROUND_TRIPS, 1);
	if ((nparams && mysql_stmt_bind_param(stmt, binds)) || mysql_stmt_execute(stmt))
		return classify(db, mysql_stmt_errno(stmt), mysql_stmt_error(stmt));
	db->last_used = time(NULL);
	db->last_insert_id = mysql_stmt_insert_id(stmt);
	*out = stmt;
	return DB_OK;
}

enum db_err
db_exec(struct db *db, const char *sql, const struct db_param *params, size_t nparams,
	uint64_t *affected)
{
	MYSQL_STMT *stmt = NULL;
	enum db_err e = run(db, sql, params, nparams, &stmt);

	if (e != DB_OK)
		return e;
	if (affected)
		*affected = mysql_stmt_affected_rows(stmt);
	return DB_OK;
}

enum db_err
db_exec_one(struct db *db, const char *sql, const struct db_param *params, size_t nparams)
{
	uint64_t n = 0;
	enum db_err e = db_exec(db, sql, params, nparams, &n);

	if (e != DB_OK)
		return e;
	return n == 1 ? DB_OK : DB_CONFLICT;
}

enum db_err
db_query(struct db *db, const char *sql, const struct db_param *params, size_t nparams,
	 struct db_col *cols, size_t ncols, int (*on_row)(void *ctx), void *ctx)
{
	MYSQL_BIND binds[DB_MAX_BINDS];
	unsigned long lens[DB_MAX_BINDS];
	my_bool nulls[DB_MAX_BINDS], errs[DB_MAX_BINDS];
	MYSQL_STMT *stmt = NULL;
	enum db_err e;
	size_t i;
	int rc, rows = 0, ended = 0;

	if (ncols > DB_MAX_BINDS) {
		log_error("a query reads %zu columns; at most %d", ncols, DB_MAX_BINDS);
		return DB_FAILED;
	}
	e = run(db, sql, params, nparams, &stmt);
	if (e != DB_OK)
		return e;
	memset(binds, 0, sizeof binds);
	for (i = 0; i < ncols; i++) {
		binds[i].is_null = &nulls[i];
		binds[i].error = &errs[i];
		binds[i].length = &lens[i];
		switch (cols[i].type) {
		case DBT_STR:
			binds[i].buffer_type = MYSQL_TYPE_STRING;
			binds[i].buffer = cols[i].buf;
			binds[i].buffer_length = cols[i].cap;
			break;
		case DBT_U64:
			binds[i].buffer_type = MYSQL_TYPE_LONGLONG;
			binds[i].buffer = cols[i].u;
			binds[i].is_unsigned = 1;
			break;
		case DBT_I64:
			binds[i].buffer_type = MYSQL_TYPE_LONGLONG;
			binds[i].buffer = cols[i].i;
			break;
		case DBT_NULL:
			binds[i].buffer_type = MYSQL_TYPE_NULL;
			break;
		}
	}
	if (ncols && mysql_stmt_bind_result(stmt, binds)) {
		e = classify(db, mysql_stmt_errno(stmt), mysql_stmt_error(stmt));
		goto out;
	}
	/* A lookup (no on_row) reads its first row only: taking the whole
	 * answer off the wire at once (a row or two) leaves nothing on the
	 * server, where a part-read one would need COM_STMT_RESET's extra
	 * round trip below. */
	if (on_row == NULL) {
		if (mysql_stmt_store_result(stmt)) {
			e = classify(db, mysql_stmt_errno(stmt), mysql_stmt_error(stmt));
			goto out;
		}
		ended = 1;
	}
	for (;;) {
		rc = mysql_stmt_fetch(stmt);
		if (rc == MYSQL_NO_DATA) {
			ended = 1;
			break;
		}
		if (rc == 1) {
			e = classify(db, mysql_stmt_errno(stmt), mysql_stmt_error(stmt));
			goto out;
		}
		for (i = 0; i < ncols; i++) {
			cols[i].is_null = nulls[i];
			if (cols[i].type != DBT_STR)
				continue;
			/* MYSQL_DATA_TRUNCATED or a value with no room for the NUL. */
			if (rc == MYSQL_DATA_TRUNCATED && errs[i]) {
				remember_error(db, 0, "column value longer than its buffer");
				log_error("database result: %s", db->last_error);
				e = DB_FAILED;
				goto out;
			}
			if (nulls[i] || lens[i] >= cols[i].cap) {
				if (!nulls[i]) {
					remember_error(db, 0, "column value fills its buffer");
					log_error("database result: %s", db->last_error);
					e = DB_FAILED;
					goto out;
				}
				cols[i].buf[0] = '\0';
			} else {
				cols[i].buf[lens[i]] = '\0';
			}
		}
		rows++;
		if (on_row == NULL)
			break;
		if (on_row(ctx))
			break;
	}
	e = (on_row == NULL && rows == 0) ? DB_NOT_FOUND : DB_OK;
out:
	mysql_stmt_free_result(stmt);
	/* Rows left unread on the server (on_row stopped early, or an error)
	 * must be discarded before the statement runs again. */
	if (!ended)
		mysql_stmt_reset(stmt);
	return e;
}

enum db_err
db_exec_script(struct db *db, struct span sql, char *err, size_t errlen)
{
	enum db_err e = db_ensure(db);
	int status;

	if (e != DB_OK) {
		snprintf(err, errlen, "%s", db->last_error);
		return e;
	}
	if (mysql_real_query(db->conn, sql.ptr, sql.len))
		goto fail;
	do {
		MYSQL_RES *res = mysql_store_result(db->conn);

		if (res)
			mysql_free_result(res);
		status = mysql_next_result(db->conn);
		if (status > 0)
			goto fail;
	} while (status == 0);
	return DB_OK;
fail:
	e = classify(db, mysql_errno(db->conn), mysql_error(db->conn));
	snprintf(err, errlen, "%s", db->last_error);
	return e;
}

/* One value as SQL text: see db_batch in db.h for why a string is hex. */
static enum buf_err
bind_literal(struct buf *out, const struct db_param *p)
{
	static const char hex[] = "0123456789ABCDEF";
	enum buf_err be;
	size_t i;

	switch (p->type) {
	case DBT_NULL:
		return buf_append_cstr(out, "NULL");
	case DBT_U64:
		return buf_appendf(out, "%" PRIu64, p->u);
	case DBT_I64:
		return buf_appendf(out, "%" PRId64, p->i);
	case DBT_STR:
		break;
	}
	if ((be = buf_append_cstr(out, "_utf8mb4 X'")) != BUF_OK ||
	    (be = buf_reserve(out, 2 * p->len + 2)) != BUF_OK)
		return be;
	for (i = 0; i < p->len; i++) {
		unsigned char c = (unsigned char)p->s[i];
		char pair[2] = { hex[c >> 4], hex[c & 15] };

		if ((be = buf_append(out, pair, 2)) != BUF_OK)
			return be;
	}
	return buf_append(out, "'", 1);
}

/* A step's statement with its values written in; a '?' inside a quoted
 * literal of the statement is text, every other '?' takes the next value. */
static enum db_err
bind_step(struct db *db, struct buf *out, const struct db_step *st)
{
	const char *q = st->sql;
	size_t used = 0;
	int quoted = 0;

	for (; *q; q++) {
		enum buf_err be;

		if (*q == '\'')
			quoted = !quoted;
		if (*q != '?' || quoted)
			be = buf_append(out, q, 1);
		else if (used < st->nparams)
			be = bind_literal(out, &st->params[used++]);
		else
			break;
		if (be != BUF_OK)
			return DB_NOMEM;
	}
	if (*q || used != st->nparams) {
		remember_error(db, 0, "batch statement and its values do not match");
		log_error("%s: %s", db->last_error, st->sql);
		return DB_FAILED;
	}
	return DB_OK;
}

/* The first row of a text result into a step's columns. */
static enum db_err
read_row(struct db *db, MYSQL_RES *res, struct db_step *st)
{
	MYSQL_ROW row = mysql_fetch_row(res);
	unsigned long *lens;
	size_t i;

	st->found = row != NULL;
	if (row == NULL)
		return DB_OK;
	lens = mysql_fetch_lengths(res);
	if (mysql_num_fields(res) < st->ncols || lens == NULL) {
		remember_error(db, 0, "batch result has fewer columns than asked for");
		return DB_FAILED;
	}
	for (i = 0; i < st->ncols; i++) {
		struct db_col *c = &st->cols[i];
		char *end = NULL;

		c->is_null = row[i] == NULL;
		switch (c->type) {
		case DBT_STR:
			if (row[i] == NULL) {
				c->buf[0] = '\0';
				break;
			}
			if (lens[i] >= c->cap) {
				remember_error(db, 0, "column value fills its buffer");
				return DB_FAILED;
			}
			memcpy(c->buf, row[i], lens[i]);
			c->buf[lens[i]] = '\0';
			break;
		case DBT_U64:
		case DBT_I64:
			if (row[i] == NULL)
				break;
			errno = 0;
			if (c->type == DBT_U64)
				*c->u = strtoull(row[i], &end, 10);
			else
				*c->i = strtoll(row[i], &end, 10);
			if (errno != 0 || end == row[i] || *end != '\0') {
				remember_error(db, 0, "batch result column is not a number");
				return DB_FAILED;
			}
			break;
		case DBT_NULL:
			break;
		}
	}
	return DB_OK;
}

enum db_err
db_batch(struct db *db, struct db_step *steps, size_t n)
{
	int begin = db->begin_pending;
	struct buf *text = &db->batch;
	enum db_err e = DB_OK;
	size_t i, ran = 0;
	int status;

	if (n == 0 || n > DB_BATCH_MAX)
		return DB_FAILED;
	if (steps[n - 1].sql == db_sql_commit) {
		for (i = 0; i < n; i++)
			if (steps[i].one) {
				log_error("a batch that commits judges a row count after its COMMIT");
				return DB_FAILED;
			}
	}
	if ((e = db_ensure(db)) != DB_OK)
		return e;
	if (text->max == 0)
		buf_init(text, 64 * 1024);
	buf_reset(text);
	if (begin && buf_append_cstr(text, "START TRANSACTION;") != BUF_OK)
		return DB_NOMEM;
	for (i = 0; i < n; i++) {
		steps[i].affected = 0;
		steps[i].found = 0;
		if (i > 0 && buf_append(text, ";", 1) != BUF_OK)
			return DB_NOMEM;
		if ((e = bind_step(db, text, &steps[i])) != DB_OK)
			return e;
	}
	db->begin_pending = 0;
	counters_add(COUNTER_DATABASE_ROUND_TRIPS, 1);
	if (mysql_real_query(db->conn, text->ptr, text->len))
		return classify(db, mysql_errno(db->conn), mysql_error(db->conn));
	db->last_used = time(NULL);
	/* One result per statement, in order; the first error ends them. */
	for (i = 0;; i++) {
		MYSQL_RES *res = mysql_store_result(db->conn);
		struct db_step *st = (begin && i == 0) ? NULL : &steps[ran];

		if (res == NULL && mysql_field_count(db->conn) != 0) {
			e = classify(db, mysql_errno(db->conn), mysql_error(db->conn));
			break;
		}
		if (st != NULL) {
			if (res != NULL && st->ncols > 0 && e == DB_OK &&
			    (e = read_row(db, res, st)) != DB_OK)
				log_error("database result: %s", db->last_error);
			st->affected = (uint64_t)mysql_affected_rows(db->conn);
			ran++;
		}
		if (res != NULL)
			mysql_free_result(res);
		status = mysql_next_result(db->conn);
		if (status > 0) {
			e = classify(db, mysql_errno(db->conn), mysql_error(db->conn));
			break;
		}
		if (status < 0)
			break;
	}
	if (e != DB_OK)
		return e;
	if (ran != n) {
		remember_error(db, 0, "batch answered fewer statements than it sent");
		log_error("database result: %s", db->last_error);
		return DB_FAILED;
	}
	if (steps[n - 1].sql == db_sql_commit)
		db->committed = 1;
	for (i = 0; i < n; i++)
		if (steps[i].one && steps[i].affected != 1)
			return DB_CONFLICT;
	return DB_OK;
}

const char *
db_last_error(const struct db *db)
{
	return db->last_error;
}

int
db_last_denied(const struct db *db)
{
	switch (db->last_errno) {
	case ER_DBACCESS_DENIED_ERROR:
	case ER_TABLEACCESS_DENIED_ERROR:
	case ER_COLUMNACCESS_DENIED_ERROR:
	case ER_SPECIFIC_ACCESS_DENIED_ERROR:
		return 1;
	default:
		return 0;
	}
}

int
db_last_refused(const struct db *db)
{
	switch (db->last_errno) {
	case ER_ACCESS_DENIED_ERROR:
	case ER_ACCESS_DENIED_NO_PASSWORD_ERROR:
	case ER_DBACCESS_DENIED_ERROR:
		return 1;
	default:
		return db_last_denied(db);
	}
}

uint64_t
db_last_insert_id(const struct db *db)
{
	return db->last_insert_id;
}
