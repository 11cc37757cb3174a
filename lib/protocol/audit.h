/*
 * audit.h - `bindery audit`: list the container (with tags and metadata),
 * walk the registry and the documents, and report what does not agree
 * (doc/design.md, I3: anything that escaped the protocol is found here).
 *
 * A pending blob no row names is "in flight", not an orphan, until
 * stale_cutoff has passed since it was written (stray.h: its fenced-out
 * writer removes it, or the sweep after the cutoff).
 *
 * --repair only ever moves storage toward the database's truth: it deletes
 * orphans (no row anywhere) older than min_age, each delete guarded by the
 * ETag seen in the listing and by the state tag where the blob has one, and
 * tags a ready document's blob `committed`.  It never re-tags a committed
 * blob, never deletes a name any document references, and never deletes a
 * committed blob whose stamp (stamp.h) names a document of this
 * installation: that is an acknowledged document a restore lost, reported
 * as adoptable (adopt.h).
 */
#ifndef BINDERY_AUDIT_H
#define BINDERY_AUDIT_H

#include <stdint.h>

#include <jansson.h>

#include "base/compat.h"
#include "protocol/services.h"

struct audit_opts {
	unsigned stale_cutoff;	/* a pending intent idle this long is stale */
	int repair;
	unsigned min_age;	/* orphans younger than this are left (seconds) */
	const char *prefix;	/* blob names audited: the configured prefix, maybe narrowed */
	int deep;		/* re-read every ready document's bytes and re-hash them */
};

struct audit_report {
	uint64_t listed;		/* blobs in the listing */
	uint64_t rows;			/* registry rows and unregistered documents walked */
	uint64_t orphans;		/* blobs with no registry row and no document */
	uint64_t adoptable;		/* committed blobs with no row whose stamp names a document
					 * of this installation: never deleted; --adopt */
	uint64_t in_flight;		/* pending blobs with no row, younger than stale_cutoff:
					 * the writer or the sweep removes them; no problem */
	uint64_t dangling;		/* ready documents whose blob is missing or differs */
	uint64_t tag_mismatches;	/* ready document's blob not tagged committed */
	uint64_t committed_unreferenced;/* committed registry row + committed tag, no ready document */
	uint64_t unregistered;		/* a document whose blob has no registry row */
	uint64_t stale_pending;		/* pending intents idle past the cutoff */
	uint64_t uncommitted;		/* names holding staged blocks and no blob */
	uint64_t orphans_deleted;	/* --repair */
	uint64_t retagged;		/* --repair */
	uint64_t repair_failed;		/* --repair tried and the service refused or failed */
	uint64_t deep_checked;		/* --deep: ready documents re-read and re-hashed */
	uint64_t unreadable;		/* --deep: a ready document's blob could not be read back */
	json_t *findings;		/* array of {kind, name, detail, document_id?, repaired?} */
	struct blob_result listing;	/* AUDIT_STORAGE_UNAVAILABLE: what listing the
					 * container answered (the caller says why) */
};

enum audit_err {
	AUDIT_OK = 0,
	AUDIT_DB_UNAVAILABLE,
	AUDIT_STORAGE_UNAVAILABLE,
	AUDIT_FAILED,
};

/* Run the audit; rep->findings is a new reference the caller releases with audit_report_clear. */
BINDERY_NODISCARD enum audit_err audit_run(struct services *s, const struct audit_opts *o,
					   struct audit_report *rep);
void audit_report_clear(struct audit_report *rep);

/* Problems left after any repair (what the exit status reflects). */
uint64_t audit_problems_left(const struct audit_report *rep);

#endif
