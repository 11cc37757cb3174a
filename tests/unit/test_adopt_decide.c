/*
 * test_adopt_decide.c - what `bindery audit --repair --adopt` does with one
 * document id after a restore (lib/protocol/adopt.c), over every
 * combination of the facts.  The rules, written from doc/operating.md
 * ("Restoring the database"):
 *   - no row: a committed blob no row names makes the document again,
 *     unless its name is another document's now (reported);
 *   - a row of another owner, name or creation time holds the id: reported;
 *   - a pending row is the sweep's;
 *   - a newer committed blob moves the ready row to it (a replace);
 *   - otherwise a ready row whose blob is gone or retired goes (a delete);
 *   - anything else stands.
 */
#include "protocol/adopt.h"
#include "tap.h"

static enum adopt_action
expected(const struct adopt_facts *f)
{
	if (!f->row_found)
		return !f->winner ? ADOPT_KEEP : f->name_held ? ADOPT_NAME_TAKEN : ADOPT_CREATE;
	if (f->winner && !f->same_document)
		return ADOPT_ID_TAKEN;
	if (!f->row_ready)
		return ADOPT_KEEP;
	if (f->winner && f->winner_version > f->row_version)
		return ADOPT_REPLACE;
	return f->row_blob == ADOPT_BLOB_LIVE ? ADOPT_KEEP : ADOPT_DELETE;
}

int
main(void)
{
	struct adopt_facts f;
	unsigned bits, n = 0, bad = 0;
	int v, b;

	for (bits = 0; bits < 32; bits++)
		for (b = ADOPT_BLOB_LIVE; b <= ADOPT_BLOB_GONE; b++)
			for (v = 0; v < 3; v++) {
				f.row_found = bits & 1;
				f.row_ready = (bits >> 1) & 1;
				f.same_document = (bits >> 2) & 1;
				f.winner = (bits >> 3) & 1;
				f.name_held = (bits >> 4) & 1;
				f.row_blob = (enum adopt_row_blob)b;
				f.row_version = 2;
				f.winner_version = f.winner ? (uint64_t)(1 + v) : 0;
				n++;
				if (adopt_decide(&f) != expected(&f)) {
					bad++;
					tap_diag("facts %u/%d/%d: got %s", bits, b, v,
						 adopt_action_name(adopt_decide(&f)));
				}
			}
	tap_ok(bad == 0, "every combination decides by the rules (%u cases)", n);

	f = (struct adopt_facts){ .winner = 1, .winner_version = 3 };
	tap_ok(adopt_decide(&f) == ADOPT_CREATE, "created after the backup: made again");
	f.name_held = 1;
	tap_ok(adopt_decide(&f) == ADOPT_NAME_TAKEN, "... unless its name is another's now: never overwritten");
	f = (struct adopt_facts){ .row_found = 1, .row_ready = 1, .same_document = 1, .row_version = 1,
				  .row_blob = ADOPT_BLOB_RETIRED, .winner = 1, .winner_version = 2 };
	tap_ok(adopt_decide(&f) == ADOPT_REPLACE, "replaced after the backup: the newer version serves it");
	f.row_blob = ADOPT_BLOB_GONE;
	tap_ok(adopt_decide(&f) == ADOPT_REPLACE, "... whether the old blob is retired or already gone");
	f.winner = 0;
	tap_ok(adopt_decide(&f) == ADOPT_DELETE, "deleted after the backup (blob gone): the row goes");
	f.row_blob = ADOPT_BLOB_RETIRED;
	tap_ok(adopt_decide(&f) == ADOPT_DELETE, "... or its blob tagged retired, within the grace");
	f.row_blob = ADOPT_BLOB_LIVE;
	tap_ok(adopt_decide(&f) == ADOPT_KEEP, "a row on its live blob stands");
	f = (struct adopt_facts){ .row_found = 1, .row_ready = 1, .same_document = 0, .row_version = 1,
				  .row_blob = ADOPT_BLOB_LIVE, .winner = 1, .winner_version = 5 };
	tap_ok(adopt_decide(&f) == ADOPT_ID_TAKEN, "an id held by another document: reported, never adopted");
	f = (struct adopt_facts){ .row_found = 1, .row_ready = 1, .same_document = 1, .row_version = 3,
				  .row_blob = ADOPT_BLOB_LIVE, .winner = 1, .winner_version = 3 };
	tap_ok(adopt_decide(&f) == ADOPT_KEEP, "a blob of the row's own version does not move it");
	return tap_done();
}
