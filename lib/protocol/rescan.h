/*
 * rescan.h - `bindery scan`: the committed bytes of ready documents through
 * clamd again (after a signature update), and the quarantine of what it
 * finds (doc/design.md, "Admission").
 *
 * Each document's blob is read once, pinned to the ETag its row recorded
 * (reads_download), and streamed to clamd's INSTREAM as it arrives; the
 * read's result and clamd's verdict make the outcome (rescan_decide, pure).
 * Bytes that are not the committed ones are reported, never judged; a
 * clamd limit is "not scanned", never clean.  With quarantine, an infected
 * document is taken out of every read while it still holds the bytes that
 * were scanned (docs_quarantine); its rows and its blob stay as they are,
 * so the sweeper, the audit and the outbox still see a ready document, and
 * an administrator decides: rescan_release puts it back, its owner may
 * delete it.
 */
#ifndef BINDERY_RESCAN_H
#define BINDERY_RESCAN_H

#include <stdint.h>

#include "base/compat.h"
#include "protocol/admission.h"
#include "protocol/clamd.h"
#include "protocol/result.h"
#include "protocol/services.h"
#include "registry/doc_row.h"

/* What became of one document. */
enum rescan_outcome {
	RESCAN_CLEAN,		/* clamd read all of it and found nothing */
	RESCAN_INFECTED,	/* clamd named a signature */
	RESCAN_LIMIT,		/* past a clamd limit: not scanned, never clean */
	RESCAN_NO_VERDICT,	/* clamd gave no answer for it, and answers PING: not scanned */
	RESCAN_CHANGED,		/* the blob is not the one committed (ETag): not judged */
	RESCAN_MISSING,		/* a ready document without its blob */
	RESCAN_UNREADABLE,	/* storage refused the read bindery built */
	/* Not a document's outcome but the run's end (rescan_decide only): */
	RESCAN_STOP_SCANNER,	/* clamd could not answer */
	RESCAN_STOP_STORAGE,	/* storage did not answer */
};

/* "clean", "infected", "not_scanned" (LIMIT and NO_VERDICT), "changed",
 * "missing", "unreadable", "scanner_down", "storage_down" (static): the
 * words of the command's report. */
const char *rescan_outcome_name(enum rescan_outcome o);

/*
 * Pure: the outcome of one document from reads_download's result read,
 * whether the scan stopped the read itself (stopped: clamd settled before
 * the end, or could not be reached, so nothing was read), and clamd's
 * verdict (clamd_finish; any value when neither read is PROTO_OK nor
 * stopped is set: then no verdict was asked).  Bytes changed, missing or
 * refused are that, whatever clamd says; clean needs the whole read and
 * clamd's "OK"; a read storage cut is no verdict on the bytes.
 */
enum rescan_outcome rescan_decide(enum proto_result read, int stopped, enum clamd_result verdict);

/* Where an infected document stands after the run. */
enum rescan_hold {
	RESCAN_HOLD_NONE,	/* not quarantined (not asked to) */
	RESCAN_HOLD_BEFORE,	/* quarantined before this run */
	RESCAN_HOLD_NOW,	/* quarantined by this run */
	RESCAN_HOLD_MOVED,	/* replaced or deleted since it was read: left alone */
};

struct rescan_finding {
	const struct doc *doc;		/* as read when the walk reached it */
	enum rescan_outcome outcome;	/* never CLEAN but for a quarantined document */
	enum rescan_hold hold;		/* INFECTED: where it stands; otherwise BEFORE
					 * when it was quarantined, else NONE */
	const char *signature;		/* INFECTED and LIMIT by signature: clamd's name; "" */
	const char *detail;		/* one line for a person: what clamd or storage said */
};

/* Nonzero stops the run (RESCAN_ERR_FAILED). */
typedef int (*rescan_finding_fn)(void *ctx, const struct rescan_finding *f);

struct rescan_opts {
	const char *prefix;	/* only blob names that begin with it ("": every one) */
	int quarantine;		/* take infected documents out of every read */
	unsigned batch;		/* documents read from the database at a time, > 0 */
	/* Called for every document that is not clean, and for a clean one
	 * that is quarantined (an administrator may want it back). */
	rescan_finding_fn on_finding;
	void *ctx;
};

struct rescan_report {
	uint64_t documents;	/* documents walked, whatever became of them */
	uint64_t bytes;		/* bytes read from storage for clamd */
	uint64_t clean, infected, not_scanned, changed, missing, unreadable;
	uint64_t quarantined;	/* by this run */
	uint64_t held;		/* quarantined before it, among the documents walked */
	enum db_err db;		/* RESCAN_ERR_DB: the database's error */
	/* Why the run stopped, for a person: clamd's address and what it said. */
	char cause[ADMISSION_CLAMD_ADDRESS_MAX + 2 * CLAMD_MESSAGE_MAX + 128];
};

enum rescan_err {
	RESCAN_OK = 0,		/* every document walked */
	RESCAN_ERR_NO_SCANNER,	/* [scan] clamd is not set */
	RESCAN_ERR_SCANNER,	/* clamd does not answer (cause says) */
	RESCAN_ERR_STORAGE,	/* storage did not answer (cause says) */
	RESCAN_ERR_DB,		/* the database failed (db says which way) */
	RESCAN_ERR_FAILED,	/* out of memory, or on_finding stopped it */
};

/*
 * Scan every ready document under o->prefix, in id order, quarantined ones
 * too; *rep counts what it found.  A document that is replaced or deleted
 * while it is read is judged on the bytes read (the ETag held for them).
 * clamd is asked PING first; a document it gives no verdict for ends the
 * run unless it still answers PING (then that one is "not scanned").
 */
BINDERY_NODISCARD enum rescan_err rescan_run(struct services *s, const struct rescan_opts *o,
					     struct rescan_report *rep);

/*
 * Put quarantined document id back into every read.  PROTO_OK: released
 * (*changed 1), or it was not quarantined (*changed 0); PROTO_NOT_FOUND: no
 * ready document has the id; PROTO_UNAVAILABLE or PROTO_FAILED: the
 * database (*e says how).
 */
BINDERY_NODISCARD enum proto_result rescan_release(struct services *s, uint64_t id, int *changed,
						   enum db_err *e);

#endif
