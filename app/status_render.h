/*
 * status_render.h - the figures of status_db.h as an operator reads them:
 * `bindery status` (text, --json) and GET /metrics (Prometheus text format
 * 0.0.4).  One fill, three renderings, so the CLI and the scrape agree.
 */
#ifndef BINDERY_STATUS_RENDER_H
#define BINDERY_STATUS_RENDER_H

#include <stdio.h>

#include <jansson.h>

#include "base/buf.h"
#include "parse/config.h"
#include "registry/status_db.h"

struct status_view {
	struct status_figures fig;
	unsigned schema_latest;		/* the highest sql/ version shipped; 0: unknown */
	unsigned late_after;		/* [sweep] late_after */
	int late;			/* no ok sweep within late_after */
	int schema_behind;		/* applied < latest */
	int schema_ahead;		/* applied > latest: this binary is older than the schema */
};

/*
 * Read the figures (db) and the shipped schema version (sql_dir) into v.
 * DB_OK, or the database's error (v is then unusable).  An unreadable
 * sql_dir leaves schema_latest 0 and is logged, not an error: the rest
 * still tells the operator something.
 */
BINDERY_NODISCARD enum db_err status_view_fill(struct db *db, const struct bindery_config *cfg,
					       const char *sql_dir, struct status_view *v);

/* Nothing needs a human: the sweeper is not late and the schema is current. */
int status_view_fine(const struct status_view *v);

/* The text `bindery status` prints. */
void status_render_text(FILE *fp, const struct status_view *v);
/* The same as a new JSON object (NULL when out of memory). */
json_t *status_render_json(const struct status_view *v);
/* The Prometheus text exposition (0.0.4) of the same figures, appended to out. */
BINDERY_NODISCARD enum buf_err status_render_metrics(struct buf *out, const struct status_view *v);

#endif
