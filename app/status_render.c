/* status_render.c - see status_render.h. */
#include <string.h>
#include <time.h>

#include "status_render.h"

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
	if (v->events_on)
		fprintf(fp, "%-20s %llu pending, %llu dead, %llu receivers stopped\n", "events:",
			(unsigned long long)v->events.pending, (unsigned long long)v->events.dead,
			(unsigned long long)v->events.stopped_endpoints);
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
	json_t *j;

	j = json_pack("{s:b, s:{s:I, s:o}, s:{s:I, s:I}, s:{s:I, s:I}, s:{s:I, s:I},"
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
	/* [events]: deliveries waiting, given up, receivers stopped. */
	if (j != NULL && v->events_on)
		json_object_set_new(j, "events", json_pack("{s:I, s:I, s:I, s:I}", "pending",
				    (json_int_t)v->events.pending, "delivered", (json_int_t)v->events.delivered,
				    "dead", (json_int_t)v->events.dead, "stopped_receivers",
				    (json_int_t)v->events.stopped_endpoints));
	return j;
}

/* ---- Prometheus text format 0.0.4 ---- */

struct exposition {
	struct buf *out;
	enum buf_err err;	/* the first failure; later appends are skipped */
};

/* A metric family's HELP and TYPE lines, of a type. */
static void
family_of(struct exposition *x, const char *type, const char *name, const char *help)
{
	if (x->err == BUF_OK)
		x->err = buf_appendf(x->out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void
family(struct exposition *x, const char *name, const char *help)
{
	family_of(x, "gauge", name, help);
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
	if (v->events_on) {
		gauge(&x, "bindery_events_pending", "Event deliveries waiting for their receiver ([events]).",
		      (int64_t)v->events.pending);
		gauge(&x, "bindery_events_dead", "Event deliveries given up past max_age (bindery events --dead).",
		      (int64_t)v->events.dead);
		gauge(&x, "bindery_events_receivers_stopped",
		      "Receivers that answered 410 Gone, stopped until bindery events --resume.",
		      (int64_t)v->events.stopped_endpoints);
	}
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
	gauge(&x, "bindery_stored_documents", "Ready documents in the database.", (int64_t)f->stored_documents);
	gauge(&x, "bindery_stored_bytes", "The sum of the ready documents' sizes, in bytes.",
	      (int64_t)f->stored_bytes);
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

enum buf_err
status_render_process(struct buf *out, const struct metrics_process *p)
{
	struct exposition x = { out, BUF_OK };
	char labels[128];

	family(&x, "bindery_build_info", "Always 1; the version of the bindery that answered.");
	snprintf(labels, sizeof labels, "{version=\"%s\"}", p->version);
	sample(&x, "bindery_build_info", labels, 1);
	gauge(&x, "bindery_process_id", "The process that answered this scrape (the counters are the"
	      " sum over every process; this is not).", p->pid);
	gauge(&x, "bindery_database_up", "1 when the database answered this scrape's queries.", p->database_up);
	gauge(&x, "bindery_storage_up", "1 when storage answered this scrape's probe.", p->storage_up);
	return x.err;
}

/* A counter family with one sample of its own. */
static void
counter(struct exposition *x, const char *name, const char *help, enum counter_id id)
{
	family_of(x, "counter", name, help);
	sample(x, name, "", (int64_t)counters_get(id));
}

enum buf_err
status_render_counters(struct buf *out, const char *(*route_label)(unsigned route), unsigned nroutes)
{
	static const struct {
		const char *action;
		enum counter_id id;
	} sweep[] = {
		{ "dropped", COUNTER_SWEEP_DROPPED }, { "deleted", COUNTER_SWEEP_DELETED },
		{ "purged", COUNTER_SWEEP_PURGED }, { "rolled_forward", COUNTER_SWEEP_ROLLED_FORWARD },
		{ "rolled_back", COUNTER_SWEEP_ROLLED_BACK }, { "outbox", COUNTER_SWEEP_OUTBOX },
		{ "taken_over", COUNTER_SWEEP_TAKEN_OVER }, { "keys_expired", COUNTER_SWEEP_KEYS_EXPIRED },
		{ "strays", COUNTER_SWEEP_STRAYS }, { "problems", COUNTER_SWEEP_PROBLEMS },
		{ "deferred", COUNTER_SWEEP_DEFERRED },
	};
	struct exposition x = { out, BUF_OK };
	char labels[160];
	unsigned route;
	size_t i;
	int code;

	gauge(&x, "bindery_counters_up", "1 when this process counts in the shared counters file"
	      " ([metrics] counters_file); 0: the counters below are missing (the log says why).",
	      counters_attached());
	if (!counters_attached())
		return x.err;
	gauge(&x, "bindery_counters_start_timestamp_seconds",
	      "When the counters file was created (Unix time): the counters count from then.",
	      counters_created());
	family_of(&x, "counter", "bindery_http_requests_total",
		  "Requests answered, by route (its template) and status code.");
	for (route = 0; route < nroutes && route < COUNTERS_ROUTES; route++)
		for (code = 0; code < COUNTERS_CODES; code++) {
			uint64_t n = counters_get_request(route, code);

			if (n == 0 || (code > 0 && code < 100))
				continue;
			snprintf(labels, sizeof labels, "{route=\"%s\",code=\"%d\"}", route_label(route), code);
			sample(&x, "bindery_http_requests_total", labels, (int64_t)n);
		}
	counter(&x, "bindery_documents_created_total", "Documents created (they became ready).",
		COUNTER_DOCUMENTS_CREATED);
	counter(&x, "bindery_documents_replaced_total", "Documents whose bytes a replace committed.",
		COUNTER_DOCUMENTS_REPLACED);
	counter(&x, "bindery_documents_deleted_total", "Documents deleted.", COUNTER_DOCUMENTS_DELETED);
	counter(&x, "bindery_http_request_bytes_total", "Request body bytes read.", COUNTER_BYTES_IN);
	counter(&x, "bindery_http_response_bytes_total", "Response body bytes written.", COUNTER_BYTES_OUT);
	counter(&x, "bindery_storage_errors_total",
		"Storage calls that failed after their retries (unreachable, refused, 5xx, throttled, timed out).",
		COUNTER_STORAGE_ERRORS);
	counter(&x, "bindery_database_errors_total",
		"Database failures: a connection that could not be made or was lost, a server error.",
		COUNTER_DATABASE_ERRORS);
	counter(&x, "bindery_database_round_trips_total",
		"Commands sent to the database and answered (a prepared statement, a batch, a COMMIT).",
		COUNTER_DATABASE_ROUND_TRIPS);
	counter(&x, "bindery_sweep_runs_total", "Runs of bindery sweep on this host (dry runs not counted).",
		COUNTER_SWEEP_RUNS);
	counter(&x, "bindery_entra_token_refreshes_total",
		"Entra ID access tokens fetched from the authority ([storage] auth = entra).",
		COUNTER_ENTRA_TOKENS);
	counter(&x, "bindery_entra_token_failures_total",
		"Entra ID token fetches that failed (the authority unreachable or refusing).",
		COUNTER_ENTRA_TOKEN_FAILURES);
	counter(&x, "bindery_delegation_key_refreshes_total",
		"User delegation keys fetched from storage (to sign SAS links with auth = entra).",
		COUNTER_DELEGATION_KEYS);
	counter(&x, "bindery_delegation_key_failures_total",
		"User delegation key fetches that failed.", COUNTER_DELEGATION_KEY_FAILURES);
	counter(&x, "bindery_events_delivered_total", "Event deliveries a receiver took (2xx), [events].",
		COUNTER_EVENTS_DELIVERED);
	counter(&x, "bindery_events_dead_total", "Event deliveries given up past their receiver's max_age.",
		COUNTER_EVENTS_DEAD);
	family_of(&x, "counter", "bindery_sweep_actions_total",
		  "What bindery sweep did on this host, by action (as its summary names them).");
	for (i = 0; i < ARRAY_LEN(sweep); i++) {
		snprintf(labels, sizeof labels, "{action=\"%s\"}", sweep[i].action);
		sample(&x, "bindery_sweep_actions_total", labels, (int64_t)counters_get(sweep[i].id));
	}
	return x.err;
}
