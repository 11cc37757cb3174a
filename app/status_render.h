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
#include "parse/config.h"
#include "protocol/status.h"

/* The text `bindery status` prints. */
void status_render_text(FILE *fp, const struct status_view *v);
/* The same as a new JSON object (NULL when out of memory). */
json_t *status_render_json(const struct status_view *v);
/* The Prometheus text exposition (0.0.4) of the same figures, appended to out. */
BINDERY_NODISCARD enum buf_err status_render_metrics(struct buf *out, const struct status_view *v);

#endif
