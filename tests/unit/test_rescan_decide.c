/*
 * test_rescan_decide.c - what `bindery scan` makes of one document
 * (lib/protocol/rescan.c), over every read result reads_download gives,
 * stopped by the scan or not, and every verdict clamd gives.  The rules,
 * from doc/design.md ("Admission") and the command's promise:
 *   - bytes that are not the committed ones, or missing, or a read storage
 *     refused, are that, whatever clamd said: never judged;
 *   - a read storage cut (not the scan) is no verdict: the run stops;
 *   - otherwise clamd's verdict: infected, a limit (never clean), clean
 *     only for a whole read, and no answer stops the run (the caller asks
 *     PING before it goes on).
 */
#include <string.h>

#include "protocol/rescan.h"
#include "tap.h"

static enum rescan_outcome
expected(enum proto_result read, int stopped, enum clamd_result v)
{
	if (read == PROTO_BYTES_CHANGED)
		return RESCAN_CHANGED;
	if (read == PROTO_BYTES_MISSING)
		return RESCAN_MISSING;
	if (read == PROTO_STORAGE_ERROR)
		return RESCAN_UNREADABLE;
	if (read != PROTO_OK && !stopped)
		return RESCAN_STOP_STORAGE;
	if (v == CLAMD_INFECTED)
		return RESCAN_INFECTED;
	if (v == CLAMD_LIMIT)
		return RESCAN_LIMIT;
	if (v == CLAMD_CLEAN && read == PROTO_OK)
		return RESCAN_CLEAN;
	return RESCAN_STOP_SCANNER;
}

int
main(void)
{
	/* Every result reads_download answers, and two it never does. */
	static const enum proto_result reads[] = { PROTO_OK, PROTO_BYTES_CHANGED, PROTO_BYTES_MISSING,
						   PROTO_STORAGE_ERROR, PROTO_UNAVAILABLE, PROTO_FAILED,
						   PROTO_NOT_FOUND };
	static const enum clamd_result verdicts[] = { CLAMD_CLEAN, CLAMD_INFECTED, CLAMD_LIMIT,
						      CLAMD_UNAVAILABLE };
	unsigned r, v, n = 0, bad = 0, clean = 0;
	int stopped;

	for (r = 0; r < ARRAY_LEN(reads); r++)
		for (stopped = 0; stopped <= 1; stopped++)
			for (v = 0; v < ARRAY_LEN(verdicts); v++) {
				enum rescan_outcome got = rescan_decide(reads[r], stopped, verdicts[v]);

				n++;
				clean += got == RESCAN_CLEAN;
				if (got != expected(reads[r], stopped, verdicts[v])) {
					bad++;
					tap_diag("read %u stopped %d verdict %s: got %s", r, stopped,
						 clamd_result_str(verdicts[v]), rescan_outcome_name(got));
				}
			}
	tap_ok(bad == 0, "every combination decides by the rules (%u cases)", n);
	/* Clean needs a whole read (PROTO_OK) and clamd's OK; a stream the
	 * scan stopped early never reads as PROTO_OK. */
	tap_ok(clean == 2, "clean only for a whole read that clamd called clean (%u cases)", clean);

	tap_ok(rescan_decide(PROTO_OK, 0, CLAMD_LIMIT) == RESCAN_LIMIT,
	       "a limit answer after the whole read: not scanned, never clean");
	tap_ok(rescan_decide(PROTO_UNAVAILABLE, 1, CLAMD_LIMIT) == RESCAN_LIMIT,
	       "clamd's limit answered mid-stream (the scan stopped the read): not scanned");
	tap_ok(rescan_decide(PROTO_UNAVAILABLE, 1, CLAMD_CLEAN) == RESCAN_STOP_SCANNER,
	       "an OK before the end of the stream is no verdict");
	tap_ok(rescan_decide(PROTO_BYTES_CHANGED, 0, CLAMD_INFECTED) == RESCAN_CHANGED,
	       "changed bytes are reported as changed, never judged as something else");
	tap_ok(rescan_decide(PROTO_UNAVAILABLE, 0, CLAMD_INFECTED) == RESCAN_STOP_STORAGE,
	       "a read storage cut stops the run, whatever clamd saw of it");
	tap_ok(rescan_decide(PROTO_UNAVAILABLE, 1, CLAMD_UNAVAILABLE) == RESCAN_STOP_SCANNER,
	       "clamd unreachable at the open: the scanner, not storage");
	tap_ok(rescan_decide(PROTO_OK, 0, CLAMD_INFECTED) == RESCAN_INFECTED, "infected");
	tap_ok(rescan_decide(PROTO_OK, 0, CLAMD_CLEAN) == RESCAN_CLEAN, "clean");

	tap_ok(strcmp(rescan_outcome_name(RESCAN_LIMIT), "not_scanned") == 0 &&
	       strcmp(rescan_outcome_name(RESCAN_NO_VERDICT), "not_scanned") == 0,
	       "a limit and no verdict are both reported as not scanned");
	return tap_done();
}
