/* migrate.c - see migrate.h. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/buf.h"
#include "base/log.h"
#include "registry/migrate.h"

#define MIGRATE_MAX_FILES 256
#define MIGRATE_MAX_BYTES (1 << 20)

struct migration {
	unsigned version;
	char file[256];
};

const char *
migrate_default_dir(void)
{
	const char *env = getenv("BINDERY_SQL_DIR");
	struct stat sb;

	if (env && *env)
		return env;
	if (stat(BINDERY_SQL_DIR, &sb) == 0 && S_ISDIR(sb.st_mode))
		return BINDERY_SQL_DIR;
	return BINDERY_SRC_SQL_DIR;
}

/* "007_name.sql" -> 7; 0 when the name is not a migration. */
static unsigned
migration_version(const char *name)
{
	size_t n = strlen(name);
	unsigned v = 0;
	int i;

	if (n < 9 || strcmp(name + n - 4, ".sql") != 0 || name[3] != '_')
		return 0;
	for (i = 0; i < 3; i++) {
		if (name[i] < '0' || name[i] > '9')
			return 0;
		v = v * 10 + (unsigned)(name[i] - '0');
	}
	return v;
}

static int
by_version(const void *a, const void *b)
{
	const struct migration *x = a, *y = b;
	return (x->version > y->version) - (x->version < y->version);
}

static enum migrate_err
read_file(const char *dir, const char *file, struct buf *out, char *err, size_t errlen)
{
	char path[4096];
	char chunk[8192];
	FILE *fp;
	size_t n;
	enum migrate_err e = MIGRATE_OK;

	if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, file) >= sizeof path) {
		snprintf(err, errlen, "%s/%s: path too long", dir, file);
		return MIGRATE_BAD_FILE;
	}
	fp = fopen(path, "r");
	if (fp == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return MIGRATE_BAD_FILE;
	}
	while ((n = fread(chunk, 1, sizeof chunk, fp)) > 0) {
		if (buf_append(out, chunk, n) != BUF_OK) {
			snprintf(err, errlen, "%s: larger than %d bytes", path, MIGRATE_MAX_BYTES);
			e = MIGRATE_BAD_FILE;
			break;
		}
	}
	if (ferror(fp)) {
		snprintf(err, errlen, "%s: read error", path);
		e = MIGRATE_BAD_FILE;
	}
	fclose(fp);
	return e;
}

static const char sql_create_table[] =
	"CREATE TABLE IF NOT EXISTS schema_migrations ("
	" version INT UNSIGNED NOT NULL PRIMARY KEY,"
	" name VARCHAR(255) NOT NULL,"
	" applied_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)) ENGINE = InnoDB";
static const char sql_current[] = "SELECT COALESCE(MAX(version), 0) FROM schema_migrations";
static const char sql_record[] = "INSERT INTO schema_migrations (version, name) VALUES (?, ?)";

/*
 * A statement the server refused for want of a privilege: the usual cause is
 * migrate run with the runtime account's file, which may read and write rows
 * but holds no DDL (sql/grants.sql).  Say so after the server's message, so
 * the admin need not decode "CREATE command denied".
 */
static enum migrate_err
db_failure(struct db *db, char *err, size_t errlen)
{
	size_t n = strlen(err);

	if (!db_last_denied(db))
		return MIGRATE_DB;
	if (n < errlen)
		snprintf(err + n, errlen - n, "; this database account lacks the privileges migrations"
			 " need (CREATE, ALTER, INDEX, REFERENCES): run migrate with the migration"
			 " account's configuration (bindery -c FILE migrate; sql/grants.sql)");
	return MIGRATE_DENIED;
}

/* The migrations in dir, sorted by version, into list (MIGRATE_MAX_FILES); *n how many. */
static enum migrate_err
list_migrations(const char *dir, struct migration *list, size_t *np, char *err, size_t errlen)
{
	struct dirent *de;
	DIR *d;
	size_t n = 0, i;
	enum migrate_err e = MIGRATE_OK;

	*np = 0;
	d = opendir(dir);
	if (d == NULL) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return MIGRATE_NO_FILES;
	}
	while ((de = readdir(d)) != NULL) {
		unsigned v = migration_version(de->d_name);

		if (v == 0)
			continue;
		if (n == MIGRATE_MAX_FILES || copy_cstr(list[n].file, sizeof list[n].file, de->d_name)) {
			snprintf(err, errlen, "%s: too many migrations or name too long", dir);
			e = MIGRATE_BAD_FILE;
			goto out;
		}
		list[n++].version = v;
	}
	if (n == 0) {
		snprintf(err, errlen, "%s: no NNN_name.sql files", dir);
		e = MIGRATE_NO_FILES;
		goto out;
	}
	qsort(list, n, sizeof *list, by_version);
	for (i = 1; i < n; i++) {
		if (list[i].version == list[i - 1].version) {
			snprintf(err, errlen, "%s and %s share a version", list[i - 1].file, list[i].file);
			e = MIGRATE_BAD_FILE;
			goto out;
		}
	}
	*np = n;
out:
	closedir(d);
	return e;
}

enum migrate_err
migrate_latest(const char *dir, unsigned *known, char *err, size_t errlen)
{
	struct migration *list = calloc(MIGRATE_MAX_FILES, sizeof *list);
	size_t n = 0;
	enum migrate_err e;

	*known = 0;
	if (list == NULL) {
		snprintf(err, errlen, "out of memory");
		return MIGRATE_BAD_FILE;
	}
	if ((e = list_migrations(dir, list, &n, err, errlen)) == MIGRATE_OK)
		*known = list[n - 1].version;
	free(list);
	return e;
}

enum migrate_err
migrate_run(struct db *db, const char *dir, int dry_run, struct migrate_report *report,
	    char *err, size_t errlen)
{
	struct migration *list = NULL;
	struct buf sql = BUF_INIT(MIGRATE_MAX_BYTES);
	size_t n = 0, i;
	uint64_t current = 0;
	enum migrate_err e = MIGRATE_OK;
	enum db_err de_err;
	struct db_col col = DBC_U64(&current);

	memset(report, 0, sizeof *report);
	list = calloc(MIGRATE_MAX_FILES, sizeof *list);
	if (list == NULL) {
		snprintf(err, errlen, "out of memory");
		e = MIGRATE_BAD_FILE;
		goto out;
	}
	if ((e = list_migrations(dir, list, &n, err, errlen)) != MIGRATE_OK)
		goto out;
	report->known = list[n - 1].version;

	if ((de_err = db_exec(db, sql_create_table, NULL, 0, NULL)) != DB_OK ||
	    (de_err = db_query(db, sql_current, NULL, 0, &col, 1, NULL, NULL)) != DB_OK) {
		snprintf(err, errlen, "database %s: %s", db_err_name(de_err), db_last_error(db));
		e = db_failure(db, err, errlen);
		goto out;
	}
	report->current = (unsigned)current;
	if (current > report->known) {
		snprintf(err, errlen, "the database is at version %u but this bindery knows only up to %u;"
			 " upgrade bindery", report->current, report->known);
		e = MIGRATE_TOO_NEW;
		goto out;
	}
	for (i = 0; i < n; i++) {
		struct db_param rec[2];

		if (list[i].version <= current)
			continue;
		if (dry_run) {
			log_info("would apply %s", list[i].file);
			report->applied++;
			continue;
		}
		buf_reset(&sql);
		if ((e = read_file(dir, list[i].file, &sql, err, errlen)) != MIGRATE_OK)
			goto out;
		if (db_exec_script(db, buf_span(&sql), err, errlen) != DB_OK) {
			e = db_failure(db, err, errlen);
			goto out;
		}
		rec[0] = DBP_U64(list[i].version);
		rec[1] = DBP_STR(list[i].file);
		if ((de_err = db_exec(db, sql_record, rec, 2, NULL)) != DB_OK) {
			snprintf(err, errlen, "recording %s: %s", list[i].file, db_last_error(db));
			e = db_failure(db, err, errlen);
			goto out;
		}
		log_info("applied %s", list[i].file);
		report->applied++;
		report->current = list[i].version;
	}
out:
	free(list);
	buf_free(&sql);
	return e;
}
