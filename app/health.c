/*
 * health.c - GET /healthz (can this responder do its work now?) and GET
 * /metrics (the figures of `bindery status` for a scraper).  The facts come
 * from lib/protocol/status.h; this file only words them.
 */
#include <string.h>

#include "answer.h"
#include "app.h"
#include "base/log.h"
#include "protocol/status.h"
#include "status_render.h"

/* The Prometheus text format's media type, version 0.0.4. */
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define METRICS_MAX_BYTES (64 * 1024)

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

/* GET /metrics: who may ask was settled before the database (input_refused_early). */
void
handle_metrics(struct app *app, struct request *r)
{
	struct buf out = BUF_INIT(METRICS_MAX_BYTES);
	struct status_view v;

	if (status_view_fill(app->svc, NULL, &v) != DB_OK) {
		log_warn("metrics: the database does not answer");
		answer_failure(r, ANSWER_READ, PROTO_UNAVAILABLE, 0);
		goto out;
	}
	if (status_render_metrics(&out, &v) != BUF_OK) {
		resp_error(r, 500, "internal", "the metrics did not fit");
		goto out;
	}
	resp_begin(r, 200, METRICS_CONTENT_TYPE, (int64_t)out.len, "Cache-Control: no-store\r\n");
	(void)req_write(r, out.ptr, out.len);
out:
	buf_free(&out);
}
