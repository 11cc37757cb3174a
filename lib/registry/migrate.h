/*
 * migrate.h - apply sql/NNN_name.sql files in order, once each.
 *
 * Applied versions are recorded in schema_migrations.  A database that has a
 * version this binary does not ship is refused (an older bindery must not
 * run against a newer schema).  Idempotent: a second run applies nothing.
 */
#ifndef BINDERY_MIGRATE_H
#define BINDERY_MIGRATE_H

#include <stddef.h>

#include "base/compat.h"
#include "registry/db.h"

enum migrate_err {
	MIGRATE_OK = 0,
	MIGRATE_NO_FILES,	/* the directory is unreadable or holds no migrations */
	MIGRATE_BAD_FILE,	/* unreadable file or a name not like 001_name.sql */
	MIGRATE_TOO_NEW,	/* the database has a version we do not know */
	MIGRATE_DB,		/* the database refused a statement */
	MIGRATE_DENIED,		/* the account lacks the DDL privileges (sql/grants.sql) */
};

struct migrate_report {
	unsigned applied;	/* files applied by this run */
	unsigned current;	/* version after the run */
	unsigned known;		/* highest version shipped */
};

/* The directory holding the migrations: --sql-dir, $BINDERY_SQL_DIR, the
 * installed one, or the source tree's (in that order; NULL skips a choice). */
const char *migrate_default_dir(void);

BINDERY_NODISCARD enum migrate_err migrate_run(struct db *db, const char *dir, int dry_run,
					       struct migrate_report *report, char *err, size_t errlen);

/*
 * The highest version dir ships (what migrate_run would bring a database
 * to), without touching a database: `bindery status` and /metrics compare
 * it with the applied one.
 */
BINDERY_NODISCARD enum migrate_err migrate_latest(const char *dir, unsigned *known, char *err,
						  size_t errlen);

#endif
