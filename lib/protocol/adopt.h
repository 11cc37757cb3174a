/*
 * adopt.h - `bindery audit --repair --adopt`: after the database is
 * restored from an older backup while storage kept today's blobs, rebuild
 * the rows from the blobs' stamps (stamp.h) so that nothing acknowledged is
 * lost and nothing deleted comes back (doc/operating.md, "Restoring the
 * database").
 *
 * Only names under the configured prefix (narrowed by --prefix) whose stamp
 * names this installation are touched.  Per document id the stamps name:
 *   - a committed blob no row names, whose version is above the row's (or
 *     there is no row), is the document's newest version: the highest
 *     version wins, the later-written of two equal ones (both reported);
 *     no row: the document is made again on it, with the id, name, owner
 *     and creation time the API answered, unless another document now has
 *     the name (reported, never overwritten); a row of the same document:
 *     it moves to that blob (a replace after the backup); a row of another
 *     owner, name or creation time holds the id: reported, never adopted;
 *   - otherwise a ready row whose blob is gone (Get Blob Properties says
 *     so; a listing's silence is not enough) or tagged retired is a
 *     document deleted after the backup: the row goes.  A user's delete
 *     stands: a retired blob is never tagged committed again;
 *   - every other blob of the id that no row names enters the outbox.
 * Then the id sequence moves past every id a surviving stamp names.
 */
#ifndef BINDERY_ADOPT_H
#define BINDERY_ADOPT_H

#include <stdint.h>
#include <stdio.h>

#include "base/compat.h"
#include "protocol/services.h"

/* ---- the decision (pure) ------------------------------------------------- */

enum adopt_row_blob {
	ADOPT_BLOB_LIVE,	/* the row's blob is there and not retired */
	ADOPT_BLOB_RETIRED,	/* ... tagged retired: deleted or replaced since */
	ADOPT_BLOB_GONE,	/* ... not there (Get Blob Properties: 404) */
};

struct adopt_facts {
	int row_found;		/* a document has the id */
	int row_ready;
	int same_document;	/* its owner, name and creation time are the stamp's */
	uint64_t row_version;
	enum adopt_row_blob row_blob;
	int winner;		/* a committed blob no row names claims the id */
	uint64_t winner_version;
	int name_held;		/* (no row) another document has the winner's name */
};

enum adopt_action {
	ADOPT_KEEP,		/* the row stands (or there is nothing to make) */
	ADOPT_CREATE,		/* no row: make the document on the winner */
	ADOPT_REPLACE,		/* the row moves to the winner, a newer version */
	ADOPT_DELETE,		/* deleted since the backup: the row goes */
	ADOPT_NAME_TAKEN,	/* reported: the name is another document's now */
	ADOPT_ID_TAKEN,		/* reported: the id is another document's */
};

enum adopt_action adopt_decide(const struct adopt_facts *f);
const char *adopt_action_name(enum adopt_action a);

/* ---- the repair (I/O) ---------------------------------------------------- */

struct adopt_opts {
	const char *prefix;	/* the configured prefix, maybe narrowed */
	int dry_run;		/* decide and print, change nothing */
};

struct adopt_report {
	uint64_t created, replaced, deleted, retired;	/* done (or, dry, to do) */
	uint64_t conflicts;	/* reported, left for a human: names, ids, twins */
	uint64_t failed;	/* a step storage or the database refused */
	uint64_t id_floor;	/* the highest id a stamp names (0: none) */
};

/* Run it; every decision is a line on out.  0, or -1 when the listing or
 * the database could not be read (nothing decided after that). */
BINDERY_NODISCARD int adopt_run(struct services *s, const struct adopt_opts *o, FILE *out,
				struct adopt_report *rep);

#endif
