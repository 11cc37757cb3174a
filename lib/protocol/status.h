/*
 * status.h - what an operator or a probe learns about an installation: the
 * figures `bindery status` prints and GET /metrics exposes (one fill, so
 * the CLI and the scrape agree), and the quick probe behind GET /healthz.
 */
#ifndef BINDERY_STATUS_H
#define BINDERY_STATUS_H

#include "base/compat.h"
#include "protocol/services.h"
#include "registry/events_db.h"
#include "registry/status_db.h"

struct status_view {
	struct status_figures fig;
	int events_on;			/* [events] is configured: events below are read */
	struct events_counts events;	/* deliveries pending, delivered, dead; receivers stopped */
	unsigned schema_latest;		/* the highest sql/ version shipped; 0: unknown */
	unsigned late_after;		/* [sweep] late_after */
	int late;			/* no ok sweep within late_after */
	int schema_behind;		/* applied < latest */
	int schema_ahead;		/* applied > latest: this binary is older than the schema */
};

/*
 * Read the figures (the database) and the shipped schema version (sql_dir;
 * NULL: the installed migrations) into v.  DB_OK, or the database's error (v is then unusable).  An
 * unreadable sql_dir leaves schema_latest 0 and is logged, not an error:
 * the rest still tells the operator something.
 */
BINDERY_NODISCARD enum db_err status_view_fill(struct services *s, const char *sql_dir, struct status_view *v);

/* Nothing needs a human: the sweeper is not late and the schema is current. */
int status_view_fine(const struct status_view *v);

/* What each dependency answered a probe: the words GET /healthz reports. */
struct status_probe {
	int database_ok;
	const char *storage;	/* "ok", "unauthorized" or "unavailable" */
	char storage_why[256];	/* the cause in words when storage is not ok
				 * (a refused certificate, DNS, a clock off);
				 * never a credential */
	int sweeper_late;	/* read only when both answered */
};

/*
 * Ask storage for a name that never exists, within a few seconds: 1 when
 * it answered (a 404 proves reachability and the credentials); else 0 with
 * what it said in probe->storage and probe->storage_why (the rest of probe
 * untouched).  Logged when not ok.
 */
int status_storage_ok(struct services *s, struct status_probe *probe);

/*
 * Ping the database and ask storage for a name that never exists (a 404
 * proves reachability and the credentials), within a few seconds; then,
 * when both answered, whether the sweeper is late ([sweep] late_after).  A
 * late sweeper is said but is no failure: every request still works.
 */
void status_probe(struct services *s, struct status_probe *out);

#endif
