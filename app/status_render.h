/*
 * status_render.h - the figures of protocol/status.h as an operator reads
 * them: `bindery status` (text, --json) and GET /metrics (Prometheus text
 * format 0.0.4).  One fill, three renderings, so the CLI and the scrape agree.
 */
#ifndef BINDERY_STATUS_RENDER_H
#define BINDERY_STATUS_RENDER_H

#include <stdio.h>

#include <jansson.h>

#include "base/buf.h"
#include "base/counters.h"
#include "parse/config.h"
#include "protocol/status.h"

/* The text `bindery status` prints. */
void status_render_text(FILE *fp, const struct status_view *v);
/* The same as a new JSON object (NULL when out of memory). */
json_t *status_render_json(const struct status_view *v);
/* The Prometheus text exposition (0.0.4) of the same figures, appended to out. */
BINDERY_NODISCARD enum buf_err status_render_metrics(struct buf *out, const struct status_view *v);

/* What GET /metrics says besides the database's figures: who answered and
 * what it could reach. */
struct metrics_process {
	const char *version;	/* PACKAGE_VERSION */
	long pid;		/* the answering process */
	int database_up;
	int storage_up;
};

/* bindery_build_info, bindery_process_id and the up gauges, appended to out. */
BINDERY_NODISCARD enum buf_err status_render_process(struct buf *out, const struct metrics_process *p);

/*
 * The shared counters (base/counters.h) as counter families appended to
 * out, with bindery_counters_up; the requests by route (route_label(i) for
 * i below nroutes: a fixed set of names, none needing an escape) and code,
 * only the pairs counted at least once.  Nothing but counters_up 0 when no
 * counters file is attached.
 */
BINDERY_NODISCARD enum buf_err status_render_counters(struct buf *out, const char *(*route_label)(unsigned route),
						     unsigned nroutes);

#endif
