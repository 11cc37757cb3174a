/* status_render.c - see status_render.h. */
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "registry/migrate.h"
#include "status_render.h"

enum db_err
status_view_fill(struct db *db, const struct bindery_config *cfg, const char *sql_dir,
		 struct status_view *v)
{
	char err[512];
	enum db_err e;

	memset(v, 0, sizeof *v);
	v->late_after = cfg->sweep_late_after;
	if ((e = status_db_read(db, &v->fig)) != DB_OK)
		return e;
	if (migrate_latest(sql_dir, &v->schema_latest, err, sizeof err) != MIGRATE_OK) {
		log_warn("status: the shipped migrations: %s", err);
		v->schema_latest = 0;
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

/* "2026-12-03T12:00:00Z" for t seconds since the epoch. */
static void
utc_time(int64_t t, char *out, size_t outlen)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (gmtime_r(&tt, &tm) == NULL || strftime(out, outlen, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(out, outlen, "?");
}

/* A run's result as status names it: "running" for a row without one. */
static const char *
run_result(const struct status_sweep_run *r)
{
	return r->result == SWEEP_RESULT_NONE ? "running" : sweep_result_name(r->result);
}

static void
text_run(FILE *fp, const char *label, const struct status_sweep_run *r, int runs_known)
{
	char when[32];

	if (!runs_known) {
		fprintf(fp, "%-20s unknown (schema older than %u)\n", label, STATUS_DB_SWEEP_RUNS_VERSION);
		return;
	}
	if (!r->present) {
		fprintf(fp, "%-20s never\n", label);
		return;
	}
	utc_time(r->finished_at ? r->finished_at : r->started_at, when, sizeof when);
	fprintf(fp, "%-20s %s, %s, %llds ago on %s (%llu problems, %llu deferred)\n", label, when,
		run_result(r), (long long)r->age, r->host, (unsigned long long)r->problems,
		(unsigned long long)r->deferred);
}

void
status_render_text(FILE *fp, const struct status_view *v)
{
	const struct status_figures *f = &v->fig;

	if (!f->migrated) {
		/* No table to count from: the one thing to say is what to do. */
		fprintf(fp, "%-20s never migrated (%u shipped): run bindery migrate\n", "schema:",
			v->schema_latest);
		fprintf(fp, "%-20s attention\n", "status:");
		return;
	}
	if (f->oldest_pending_age >= 0)
		fprintf(fp, "%-20s %llu (oldest %llds)\n", "pending intents:",
			(unsigned long long)f->pending_intents, (long long)f->oldest_pending_age);
	else
		fprintf(fp, "%-20s 0\n", "pending intents:");
	fprintf(fp, "%-20s %llu (%llu due)\n", "outbox:", (unsigned long long)f->outbox,
		(unsigned long long)f->outbox_due);
	fprintf(fp, "%-20s %llu tus, %llu direct\n", "unfinished uploads:",
		(unsigned long long)f->uploads_tus, (unsigned long long)f->uploads_direct);
	fprintf(fp, "%-20s %llu (%llu unfinished)\n", "idempotency keys:",
		(unsigned long long)f->idempotency_keys, (unsigned long long)f->idempotency_unfinished);
	text_run(fp, "last sweep:", &f->last, f->sweep_runs_known);
	text_run(fp, "last ok sweep:", &f->last_ok, f->sweep_runs_known);
	fprintf(fp, "%-20s %s (late after %us without an ok sweep)\n", "sweeper:",
		v->late ? "late" : "ok", v->late_after);
	if (v->schema_latest == 0)
		fprintf(fp, "%-20s %u applied, shipped version unknown\n", "schema:", f->schema_applied);
	else
		fprintf(fp, "%-20s %u applied, %u shipped%s\n", "schema:", f->schema_applied,
			v->schema_latest, v->schema_behind ? " (behind: run bindery migrate)" :
			v->schema_ahead ? " (ahead: this bindery is older than the database)" : "");
	fprintf(fp, "%-20s %s\n", "status:", status_view_fine(v) ? "ok" : "attention");
}

static json_t *
json_run(const struct status_sweep_run *r)
{
	char started[32], finished[32];
	json_t *j;

	if (!r->present)
		return json_null();
	utc_time(r->started_at, started, sizeof started);
	utc_time(r->finished_at, finished, sizeof finished);
	j = json_pack("{s:I, s:s, s:s, s:I, s:s, s:I, s:I}", "id", (json_int_t)r->id, "started_at",
		      started, "result", run_result(r), "age_seconds", (json_int_t)r->age, "host", r->host,
		      "problems", (json_int_t)r->problems, "deferred", (json_int_t)r->deferred);
	if (j != NULL)
		json_object_set_new(j, "finished_at", r->finished_at ? json_string(finished) : json_null());
	return j;
}

json_t *
status_render_json(const struct status_view *v)
{
	const struct status_figures *f = &v->fig;

	return json_pack("{s:b, s:{s:I, s:o}, s:{s:I, s:I}, s:{s:I, s:I}, s:{s:I, s:I},"
			 " s:{s:b, s:I, s:o, s:o}, s:{s:b, s:I, s:o, s:b}}",
			 "ok", status_view_fine(v),
			 "pending_intents", "count", (json_int_t)f->pending_intents,
			 "oldest_age_seconds",
			 f->oldest_pending_age >= 0 ? json_integer(f->oldest_pending_age) : json_null(),
			 "outbox", "backlog", (json_int_t)f->outbox, "due", (json_int_t)f->outbox_due,
			 "unfinished_uploads", "tus", (json_int_t)f->uploads_tus, "direct",
			 (json_int_t)f->uploads_direct,
			 "idempotency_keys", "count", (json_int_t)f->idempotency_keys, "unfinished",
			 (json_int_t)f->idempotency_unfinished,
			 "sweep", "late", v->late, "late_after_seconds", (json_int_t)v->late_after,
			 "last", json_run(&f->last), "last_ok", json_run(&f->last_ok),
			 "schema", "migrated", f->migrated, "applied", (json_int_t)f->schema_applied, "latest",
			 v->schema_latest ? json_integer(v->schema_latest) : json_null(),
			 "behind", v->schema_behind);
}

/* ---- Prometheus text format 0.0.4 ---- */

struct exposition {
	struct buf *out;
	enum buf_err err;	/* the first failure; later appends are skipped */
};

/* A metric family's HELP and TYPE lines (every figure here is a gauge). */
static void
family(struct exposition *x, const char *name, const char *help)
{
	if (x->err == BUF_OK)
		x->err = buf_appendf(x->out, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

/* One sample; labels is "" or "{k=\"v\"}" (values here are fixed words, nothing to escape). */
static void
sample(struct exposition *x, const char *name, const char *labels, int64_t value)
{
	if (x->err == BUF_OK)
		x->err = buf_appendf(x->out, "%s%s %lld\n", name, labels, (long long)value);
}

static void
gauge(struct exposition *x, const char *name, const char *help, int64_t value)
{
	family(x, name, help);
	sample(x, name, "", value);
}

enum buf_err
status_render_metrics(struct buf *out, const struct status_view *v)
{
	static const enum sweep_result results[] = {
		SWEEP_RESULT_OK, SWEEP_RESULT_PARTIAL, SWEEP_RESULT_FAILED,
	};
	const struct status_figures *f = &v->fig;
	struct exposition x = { out, BUF_OK };
	char labels[64];
	size_t i;

	gauge(&x, "bindery_pending_intents", "Upload intents not yet resolved (pending or being swept).",
	      (int64_t)f->pending_intents);
	gauge(&x, "bindery_oldest_pending_intent_age_seconds",
	      "Age of the oldest unresolved upload intent (0 when there is none).",
	      f->oldest_pending_age > 0 ? f->oldest_pending_age : 0);
	gauge(&x, "bindery_outbox_blobs", "Blobs in the deletion outbox (retired or being deleted).",
	      (int64_t)f->outbox);
	gauge(&x, "bindery_outbox_due_blobs", "Outbox blobs whose retire_after has passed.",
	      (int64_t)f->outbox_due);
	family(&x, "bindery_unfinished_uploads", "Uploads whose intent is still open, by route.");
	sample(&x, "bindery_unfinished_uploads", "{route=\"tus\"}", (int64_t)f->uploads_tus);
	sample(&x, "bindery_unfinished_uploads", "{route=\"direct\"}", (int64_t)f->uploads_direct);
	gauge(&x, "bindery_idempotency_keys", "Idempotency keys kept.", (int64_t)f->idempotency_keys);
	gauge(&x, "bindery_idempotency_keys_unfinished", "Idempotency keys without a final answer yet.",
	      (int64_t)f->idempotency_unfinished);
	/* A run never recorded has no time: the samples are left out rather than faked as 0. */
	if (f->last.present) {
		gauge(&x, "bindery_sweep_last_run_start_timestamp_seconds",
		      "When the newest recorded sweep started (Unix time).", f->last.started_at);
		family(&x, "bindery_sweep_last_run_result",
		       "1 for the newest recorded sweep's result (running: not finished).");
		for (i = 0; i < ARRAY_LEN(results); i++) {
			snprintf(labels, sizeof labels, "{result=\"%s\"}", sweep_result_name(results[i]));
			sample(&x, "bindery_sweep_last_run_result", labels, f->last.result == results[i]);
		}
		sample(&x, "bindery_sweep_last_run_result", "{result=\"running\"}",
		       f->last.result == SWEEP_RESULT_NONE);
		gauge(&x, "bindery_sweep_last_run_problems", "Items the newest sweep left for a human.",
		      (int64_t)f->last.problems);
	}
	if (f->last_ok.present) {
		gauge(&x, "bindery_sweep_last_success_timestamp_seconds",
		      "When the newest ok sweep finished (Unix time).", f->last_ok.finished_at);
		gauge(&x, "bindery_sweep_last_success_age_seconds",
		      "Seconds since the newest ok sweep finished.", f->last_ok.age);
	}
	gauge(&x, "bindery_sweep_late", "1 when no sweep ended ok within late_after seconds.", v->late);
	gauge(&x, "bindery_sweep_late_after_seconds", "The configured [sweep] late_after.",
	      (int64_t)v->late_after);
	gauge(&x, "bindery_schema_version", "Highest schema migration applied to the database.",
	      (int64_t)f->schema_applied);
	gauge(&x, "bindery_schema_version_latest", "Highest schema migration this bindery ships.",
	      (int64_t)v->schema_latest);
	return x.err;
}
