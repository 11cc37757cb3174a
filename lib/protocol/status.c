/* status.c - see status.h. */
#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "protocol/status.h"
#include "registry/migrate.h"
#include "storage/blob.h"

/* How long the probe waits for storage: a probe that hangs is no probe. */
#define PROBE_STORAGE_MS 3000

enum db_err
status_view_fill(struct services *s, const char *sql_dir, struct status_view *v)
{
	char err[512];
	enum db_err e;

	memset(v, 0, sizeof *v);
	v->late_after = s->cfg->sweep_late_after;
	if ((e = status_db_read(s->db, &v->fig)) != DB_OK)
		return e;
	if (sql_dir == NULL)
		sql_dir = migrate_default_dir();
	if (migrate_latest(sql_dir, &v->schema_latest, err, sizeof err) != MIGRATE_OK) {
		log_warn("status: the shipped migrations: %s", err);
		v->schema_latest = 0;
	}
	/* A schema from before sql/016 has no events tables: nothing to count. */
	if (s->events != NULL && v->fig.migrated && v->fig.schema_applied >= 16) {
		if ((e = events_db_counts(s->db, &v->events)) != DB_OK)
			return e;
		v->events_on = 1;
	}
	v->late = status_db_sweeper_late(&v->fig.last_ok, v->late_after);
	v->schema_behind = !v->fig.migrated ||
	    (v->schema_latest > 0 && v->fig.schema_applied < v->schema_latest);
	v->schema_ahead = v->schema_latest > 0 && v->fig.schema_applied > v->schema_latest;
	return DB_OK;
}

int
status_view_fine(const struct status_view *v)
{
	return !v->late && !v->schema_behind && !v->schema_ahead;
}

/*
 * A cron that stopped calling `bindery sweep` leaves intents and the
 * outbox to pile up while every request still works.  A schema without
 * sweep_runs has no record of a sweep: late.
 */
static int
sweeper_late(struct services *s)
{
	struct status_sweep_run last_ok;

	if (status_db_last_ok(s->db, &last_ok) != DB_OK)
		return 1;
	return status_db_sweeper_late(&last_ok, s->cfg->sweep_late_after);
}

int
status_storage_ok(struct services *s, struct status_probe *probe)
{
	struct blob_props props;
	struct blob_result res;
	int ok = 1;

	probe->storage = "ok";
	probe->storage_why[0] = '\0';
	blob_client_set_deadline(s->blob, clock_now_ms() + PROBE_STORAGE_MS);
	if (blob_get_properties(s->blob, ".bindery-healthz", &props, &res) != 0 &&
	    res.status != BLOB_NOT_FOUND) {
		ok = 0;
		/* An Entra authority that refused the credential is as much a
		 * refusal as storage's own 403; one out of reach is an outage. */
		probe->storage = res.status == BLOB_AUTH_FAILED ||
				 (res.status == BLOB_CREDENTIAL && res.code[0] != '\0') ? "unauthorized"
											  : "unavailable";
		snprintf(probe->storage_why, sizeof probe->storage_why, "%s",
			 res.message[0] != '\0' ? res.message : "storage does not answer");
		log_warn("storage probe: %s (HTTP %ld %s): %s", blob_status_name(res.status),
			 res.http_status, res.code, res.message);
	}
	blob_client_set_deadline(s->blob, 0);
	return ok;
}

void
status_probe(struct services *s, struct status_probe *out)
{
	memset(out, 0, sizeof *out);
	out->database_ok = db_ping(s->db) == DB_OK;
	if (status_storage_ok(s, out) && out->database_ok)
		out->sweeper_late = sweeper_late(s);
}
