/*
 * db.h - a MariaDB connection whose statements are literals with bound values.
 *
 * Every query in bindery goes through db_exec()/db_query() (prepared, its
 * values bound as parameters) or db_batch() (several literals in one round
 * trip, its values written by the binder as literals no value can end);
 * there is no function that takes SQL built at run time from data
 * (tests/unit/sql_literal.sh checks for it).  Statements are prepared
 * once per connection and cached by their SQL text's address, so callers pass
 * string literals.  A lost server marks the connection broken; the next
 * db_ensure() reconnects, so a responder outlives a MariaDB restart without
 * being restarted itself.  Nobody holds a transaction open across a storage
 * call: db_begin/db_commit bracket database work only.
 */
#ifndef BINDERY_DB_H
#define BINDERY_DB_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/compat.h"

enum db_err {
	DB_OK = 0,
	DB_NOT_FOUND,		/* a query that needed a row found none */
	DB_DUPLICATE,		/* a unique index refused the row (ER_DUP_ENTRY) */
	DB_CONFLICT,		/* a conditional statement touched the wrong number of rows */
	DB_RETRY,		/* deadlock or lock wait timeout: the transaction was rolled back */
	DB_UNAVAILABLE,		/* cannot connect, or the server went away: answer 503 */
	DB_FAILED,		/* anything else (logged with the server's message) */
	DB_NOMEM,
	DB_QUOTA,		/* a [quota] limit would be passed (quota_db.h): nothing reserved */
};

const char *db_err_name(enum db_err e);

enum db_type { DBT_NULL, DBT_STR, DBT_U64, DBT_I64 };

/* A bound input parameter; strings are borrowed for the call. */
struct db_param {
	enum db_type type;
	const char *s;
	size_t len;
	uint64_t u;
	int64_t i;
};

#define DBP_STR(x) ((struct db_param){ DBT_STR, (x), strlen(x), 0, 0 })
#define DBP_SPAN(sp) ((struct db_param){ DBT_STR, (sp).ptr, (sp).len, 0, 0 })
#define DBP_U64(x) ((struct db_param){ DBT_U64, NULL, 0, (uint64_t)(x), 0 })
#define DBP_I64(x) ((struct db_param){ DBT_I64, NULL, 0, 0, (int64_t)(x) })
#define DBP_NULL ((struct db_param){ DBT_NULL, NULL, 0, 0, 0 })
#define DBP_STR_OR_NULL(x) ((x) ? DBP_STR(x) : DBP_NULL)

/*
 * An output column.  For DBT_STR, buf has cap bytes and receives a
 * NUL-terminated value (a longer value is an error, never silently cut).
 */
struct db_col {
	enum db_type type;
	char *buf;
	size_t cap;
	uint64_t *u;
	int64_t *i;
	int is_null;	/* set per row */
};

#define DBC_STR(b) ((struct db_col){ DBT_STR, (b), sizeof(b), NULL, NULL, 0 })
#define DBC_U64(p) ((struct db_col){ DBT_U64, NULL, 0, (p), NULL, 0 })
#define DBC_I64(p) ((struct db_col){ DBT_I64, NULL, 0, NULL, (p), 0 })

struct db;

/*
 * The sql_mode every connection sets for itself, whatever the server's
 * global one says: bindery's correctness must not depend on a DBA's
 * setting.  STRICT_ALL_TABLES makes a value that does not fit its column
 * (an over-long or mis-encoded owner or name) an error, never a silently
 * cut or mangled row; the NO_ZERO_* modes refuse impossible dates; and
 * leaving out ANSI_QUOTES, PIPES_AS_CONCAT and NO_BACKSLASH_ESCAPES keeps
 * the SQL text in sql/ and lib/registry/ meaning what it says.
 */
#define DB_SQL_MODE "STRICT_ALL_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO," \
	"NO_ENGINE_SUBSTITUTION"

/* TLS to a server over TCP: none, encrypted, or encrypted to a server whose
 * certificate chains to tls_ca (or the system's CAs) and names the host. */
enum db_tls { DB_TLS_OFF = 0, DB_TLS_ON, DB_TLS_VERIFY };

/* One server of a list (a Galera cluster's nodes). */
struct db_host {
	const char *name;
	unsigned port;
};
#define DB_MAX_HOSTS 8

/*
 * Where and as whom to connect; the caller fills it from bindery.conf (the
 * registry reads no configuration itself).  socket wins over hosts, hosts
 * over host/port; NULL strings mean "not set".  tls applies to TCP only.
 *
 * With hosts, every (re)connect tries them in order and takes the first
 * that accepts and, when it is a Galera node (wsrep on), is ready: a node
 * that is not in the primary component answers 1047 to everything.  A
 * statement that gets 1047 later marks the connection broken, so the next
 * db_ensure fails over.
 */
struct db_settings {
	const char *socket;
	const char *host;
	unsigned port;
	const struct db_host *hosts;	/* borrowed for db_new; at most DB_MAX_HOSTS */
	size_t nhosts;
	const char *user;
	const char *password;
	const char *name;
	enum db_tls tls;
	const char *tls_ca;	/* PEM file of CAs for DB_TLS_VERIFY; NULL: the system's */
	/* Seconds one wait on the server may take: connecting (the handshake
	 * included), and each read or write of a statement.  A responder sets
	 * them from request_deadline (doc/design.md: it bounds each wait on the
	 * database); 0 takes DB_CONNECT_TIMEOUT_DEFAULT / DB_IO_TIMEOUT_DEFAULT,
	 * for the CLI, whose sweeps and migrations may wait longer. */
	unsigned connect_timeout;
	unsigned io_timeout;
};
#define DB_CONNECT_TIMEOUT_DEFAULT 5
#define DB_IO_TIMEOUT_DEFAULT 60

/* Copies what it needs from settings; connects lazily on first use. */
BINDERY_NODISCARD enum db_err db_new(const struct db_settings *settings, struct db **out);
void db_free(struct db *db);

/*
 * Close every cached prepared statement and drop the kept batch text: the
 * next use prepares again (one round trip per statement).  For a worker
 * about to hold a large upload's buffers: what the statements keep (a few
 * KiB each, dozens of them once a worker has served every kind of request)
 * is scattered over the heap, and comes back only when they are closed.
 */
void db_forget_statements(struct db *db);

/* Connect if not connected (or broken); ping first if idle for a while. */
BINDERY_NODISCARD enum db_err db_ensure(struct db *db);
/* A round trip to the server (for /healthz); reconnects if needed. */
BINDERY_NODISCARD enum db_err db_ping(struct db *db);

/*
 * db_begin costs no round trip: the transaction starts with the next
 * statement (a batch carries its START TRANSACTION along, a prepared
 * statement sends it first), and a transaction that ran nothing is
 * committed or rolled back for free.
 */
BINDERY_NODISCARD enum db_err db_begin(struct db *db);
BINDERY_NODISCARD enum db_err db_commit(struct db *db);
/* Safe to call in any state, including after an error. */
void db_rollback(struct db *db);

/*
 * Whole-transaction retry.  Under Galera a transaction can fail at any
 * statement or at COMMIT because another node's write set won
 * certification (a deadlock error, 1213), or because its node left the
 * primary component (1047: the connection is then broken and the next
 * db_begin fails over).  Either way nothing of it was committed, so the
 * caller, having rolled back, may run the whole transaction again from its
 * first statement (its reads included: they decide what it writes).
 * db_txn_retry(db, e, tries) is true, after a short jittered pause, when e
 * (the transaction's result, tries runs done so far) is such a failure and
 * fewer than DB_TXN_TRIES runs were made.  A lost connection or a lock
 * wait timeout is not retried: a COMMIT whose answer was lost may have
 * committed.
 */
#define DB_TXN_TRIES 3
int db_txn_retry(struct db *db, enum db_err e, unsigned tries);
/*
 * Whether a COMMIT answered "committed" may not have taken effect: only on a
 * Galera node (see DB_IN_TX_CHECKED).  A single server's COMMIT is what it
 * says, so the read-back checks cost it nothing.
 */
int db_commit_may_be_lost(const struct db *db);

/* A caller found that a transaction it committed did not take effect:
 * remembered as a certification failure; returns DB_RETRY. */
enum db_err db_set_lost_commit(struct db *db);

/*
 * The whole body of a function whose work is one transaction: expr (an
 * enum db_err expression, the transaction's statements) runs between
 * db_begin and db_commit, rolled back unless both are DB_OK, and again
 * from db_begin while db_txn_retry says so; the function returns the
 * last result.  expr must be safe to run again: whatever it decides on,
 * it reads inside the transaction.
 */
#define DB_IN_TX(db, expr)                                       \
	do {                                                     \
		enum db_err tx_e_;                               \
		unsigned tx_tries_ = 0;                          \
		do {                                             \
			tx_e_ = db_begin(db);                    \
			if (tx_e_ == DB_OK)                      \
				tx_e_ = (expr);                  \
			if (tx_e_ == DB_OK)                      \
				tx_e_ = db_commit(db);           \
			if (tx_e_ != DB_OK)                      \
				db_rollback(db);                 \
		} while (db_txn_retry(db, tx_e_, ++tx_tries_));  \
		return tx_e_;                                    \
	} while (0)

/*
 * DB_IN_TX with a check after a COMMIT that said yes.  On a Galera node a
 * COMMIT has been answered "committed" for a write set that did not take
 * effect (docs_db.c, replace_commit_check); a caller that would act on
 * such an answer (upload after its intent, answer 201 after marking
 * ready, delete a blob after dropping its row) reads back what it wrote.
 * check, an enum db_err expression run after the COMMIT (one read on the
 * local node, where a real commit is visible at once), returns DB_OK when
 * the transaction took effect and db_set_lost_commit(db) when it did not:
 * then the whole transaction runs again, as on a certification failure.
 * The check runs on a Galera node only (db_commit_may_be_lost), and
 * wherever lost, a failpoint that turns the COMMIT into a ROLLBACK
 * answered as a success, fired: so tests make a lost commit on a single
 * server.
 */
#define DB_IN_TX_CHECKED(db, lost, expr, check)                  \
	do {                                                     \
		enum db_err tx_e_;                               \
		unsigned tx_tries_ = 0;                          \
		int tx_lost_ = 0;                                \
		do {                                             \
			tx_e_ = db_begin(db);                    \
			db_set_commit_in_batch(db, !FAILPOINT_ARMED(lost)); \
			if (tx_e_ == DB_OK)                      \
				tx_e_ = (expr);                  \
			db_set_commit_in_batch(db, 0);           \
			if (tx_e_ == DB_OK && FAILPOINT(lost)) { \
				db_rollback(db);                 \
				tx_lost_ = 1;                    \
			} else if (tx_e_ == DB_OK)               \
				tx_e_ = db_commit(db);           \
			if (tx_e_ == DB_OK &&                    \
			    (tx_lost_ || db_commit_may_be_lost(db))) \
				tx_e_ = (check);                 \
			if (tx_e_ != DB_OK)                      \
				db_rollback(db);                 \
		} while (db_txn_retry(db, tx_e_, ++tx_tries_));  \
		return tx_e_;                                    \
	} while (0)

/* Run one statement; *affected (may be NULL) gets the changed-row count. */
BINDERY_NODISCARD enum db_err db_exec(struct db *db, const char *sql, const struct db_param *params,
				      size_t nparams, uint64_t *affected);
/* db_exec that must change exactly one row, else DB_CONFLICT. */
BINDERY_NODISCARD enum db_err db_exec_one(struct db *db, const char *sql,
					  const struct db_param *params, size_t nparams);

/*
 * Run a SELECT; for each row the columns are filled and on_row is called
 * (return nonzero to stop).  on_row may be NULL when only the first row is
 * wanted: then the columns hold the first row and DB_NOT_FOUND means none.
 */
BINDERY_NODISCARD enum db_err db_query(struct db *db, const char *sql, const struct db_param *params,
				       size_t nparams, struct db_col *cols, size_t ncols,
				       int (*on_row)(void *ctx), void *ctx);

/*
 * A batch: statements sent to the server in one round trip, for the hot
 * transactions whose statements do not depend on each other's answers in
 * the client (doc/design.md "Round trips").  Each step is a static literal
 * with its values, as for db_exec; the values travel as literals the
 * binder writes itself (a string as _utf8mb4 X'hex', which no value can
 * end, and which the server converts and checks exactly as a bound
 * utf8mb4 parameter; a number in decimal), so no value ever becomes SQL.
 * A step with cols reads its statement's first row into them (found says
 * whether there was one); every step gets its changed-row count.
 * The server runs the steps in order and stops at the first error, which
 * db_batch returns: the steps after it did not run.  Nothing is judged by
 * row counts here: a step with one set makes db_batch answer DB_CONFLICT
 * unless that statement changed exactly one row, after all steps ran.  A
 * batch that fails part-way leaves its transaction to the caller's
 * rollback, as any failed statement does.
 */
struct db_step {
	const char *sql;
	const struct db_param *params;
	size_t nparams;
	struct db_col *cols;
	size_t ncols;
	int one;		/* exactly one row changed, else DB_CONFLICT */
	uint64_t affected;	/* out */
	int found;		/* out: the statement returned a row */
};
#define DB_STEP(sql_, params_) { (sql_), (params_), ARRAY_LEN(params_), NULL, 0, 0, 0, 0 }
#define DB_STEP_ONE(sql_, params_) { (sql_), (params_), ARRAY_LEN(params_), NULL, 0, 1, 0, 0 }
#define DB_STEP0(sql_) { (sql_), NULL, 0, NULL, 0, 0, 0, 0 }
#define DB_STEP0_ONE(sql_) { (sql_), NULL, 0, NULL, 0, 1, 0, 0 }
#define DB_STEP_ROW(sql_, params_, cols_, ncols_) \
	{ (sql_), (params_), ARRAY_LEN(params_), (cols_), (ncols_), 0, 0, 0 }
#define DB_BATCH_MAX 8
BINDERY_NODISCARD enum db_err db_batch(struct db *db, struct db_step *steps, size_t n);
/*
 * A batch may end with DB_STEP0(db_sql_commit) when it is its whole
 * transaction and nothing in it is judged by row counts (no step with
 * one: db_batch refuses the pair, since the COMMIT would run before the
 * judgement): a statement that fails stops the batch before its COMMIT,
 * and the caller's db_commit is then free.  Only where db_may_commit_in_batch
 * says so: DB_IN_TX_CHECKED forbids it while its lost-commit failpoint is
 * armed, since that failpoint rolls back what the COMMIT would have kept.
 */
extern const char db_sql_commit[];
int db_may_commit_in_batch(const struct db *db);
void db_set_commit_in_batch(struct db *db, int allowed);

/* Plain SQL text without parameters, for migrations only (multi-statement files). */
BINDERY_NODISCARD enum db_err db_exec_script(struct db *db, struct span sql, char *err, size_t errlen);

/* The AUTO_INCREMENT id of the last INSERT run through db_exec. */
uint64_t db_last_insert_id(const struct db *db);

/* The last server error message, for logs only (never sent to clients). */
const char *db_last_error(const struct db *db);

/* True when the last error was the server refusing a privilege the account
 * lacks (a table, database or administrative right), as opposed to a failed
 * statement: `bindery migrate` run with the runtime account's file. */
int db_last_denied(const struct db *db);

/* True when the last error was the server refusing the account itself: its
 * user name or password (1045, 1698), its database (1044), or a privilege
 * (db_last_denied).  Retrying with the same settings cannot help: the CLI
 * exits 77 (EX_NOPERM) for it. */
int db_last_refused(const struct db *db);

#endif
