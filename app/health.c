/*
 * health.c - GET /healthz (can this responder do its work now?) and GET
 * /metrics (the figures of `bindery status` for a scraper).  The facts come
 * from lib/protocol/status.h; this file only words them.
 */
#include <string.h>
#include <unistd.h>

#include "autoconfig.h"
#include "answer.h"
#include "app.h"
#include "base/counters.h"
#include "base/log.h"
#include "protocol/status.h"
#include "status_render.h"

/* The Prometheus text format's media type, version 0.0.4. */
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define METRICS_MAX_BYTES (256 * 1024)

/*
 * 200 when the database and storage both answer, with whether the sweeper
 * is late ([sweep] late_after): a cron that stopped calling `bindery sweep`
 * is said here without turning /healthz into a 503 that would take the
 * responder out of a load balancer.  503 names the first dependency down.
 */
void
handle_healthz(struct app *app, struct request *r)
{
	struct status_probe p;
	int storage_ok;
	json_t *j;

	status_probe(app->svc, &p);
	storage_ok = strcmp(p.storage, "ok") == 0;
	if (p.database_ok && storage_ok) {
		resp_json(r, 200, json_pack("{s:s, s:s, s:s}", "database", "ok", "storage", "ok",
					    "sweeper", p.sweeper_late ? "late" : "ok"), NULL);
		return;
	}
	j = json_pack("{s:s, s:s, s:s, s:s}", "database", p.database_ok ? "ok" : "unavailable",
		      "storage", p.storage, "error", p.database_ok ? "storage_unavailable" : "database_unavailable",
		      "message", p.database_ok ? p.storage_why : "the database does not answer");
	resp_json(r, 503, j, "Retry-After: 5\r\n");
}

/* route_name for the counters' table, whose rows are route ids. */
static const char *
route_label(unsigned route)
{
	return route_name((enum route_id)route);
}

/*
 * GET /metrics: who may ask was settled before the database
 * (input_refused_early).  A database or storage that is down is a figure
 * of its own (bindery_database_up, bindery_storage_up 0), not a 503: the
 * scrape still answers with the counters, and the database's figures are
 * left out until it is back.
 */
void
handle_metrics(struct app *app, struct request *r)
{
	struct buf out = BUF_INIT(METRICS_MAX_BYTES);
	struct metrics_process p = { PACKAGE_VERSION, (long)getpid(), 0, 0 };
	struct status_probe probe;
	struct status_view v;
	enum buf_err e;

	p.database_up = status_view_fill(app->svc, NULL, &v) == DB_OK;
	if (!p.database_up)
		log_warn("metrics: the database does not answer");
	p.storage_up = status_storage_ok(app->svc, &probe);
	if ((e = status_render_process(&out, &p)) == BUF_OK)
		e = status_render_counters(&out, route_label, ROUTE_COUNT);
	if (e == BUF_OK && p.database_up)
		e = status_render_metrics(&out, &v);
	if (e != BUF_OK) {
		resp_error(r, 500, "internal", "the metrics did not fit");
		goto out;
	}
	resp_begin(r, 200, METRICS_CONTENT_TYPE, (int64_t)out.len, "Cache-Control: no-store\r\n");
	(void)req_write(r, out.ptr, out.len);
out:
	buf_free(&out);
}

void
metrics_counters_open(const struct bindery_config *cfg)
{
	char err[512];

	if (!cfg->metrics_enabled)
		return;
	if (counters_open(cfg->metrics_counters_file, err, sizeof err) != COUNTERS_OK)
		log_warn("%s; /metrics answers without the counters (bindery_counters_up 0)", err);
}

void
metrics_count_request(const struct request *r)
{
	if (!counters_attached())
		return;
	counters_add_request((unsigned)r->route.id, r->status);
	counters_add(COUNTER_BYTES_IN, r->body_read);
	counters_add(COUNTER_BYTES_OUT, r->bytes_out);
}
