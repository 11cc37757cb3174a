/*
 * stray.h - pending blobs that no row names any more (doc/design.md "What
 * a crash leaves"): a writer fenced out (a forced sweep, or a lapsed lease,
 * dropped its rows while it still uploaded) or one that died after that.
 * Neither the writer's compensation nor the sweep's claims can reach such a
 * blob, since both start from a row; these remove it instead of leaving it
 * to the lifecycle policy.
 */
#ifndef BINDERY_STRAY_H
#define BINDERY_STRAY_H

#include <stdint.h>
#include <stdio.h>

#include "base/compat.h"
#include "protocol/services.h"

enum stray_result {
	STRAY_REMOVED,		/* deleted (or already gone) */
	STRAY_NAMED,		/* a registry row or a document names it: not a stray; left */
	STRAY_CHANGED,		/* no longer pending, or not the ETag given: left */
	STRAY_FAILED,		/* the database or storage failed: left for the next sweep */
};

/*
 * Delete blob_name while no registry row and no document names it, guarded
 * by the pending tag and by etag (the ETag its writer wrote, or the one a
 * listing just showed), so a committed blob or one rewritten since is never
 * touched.  Names are never reused (each intent draws its own), so a name
 * no row holds cannot be taken again between the check and the delete.
 * Calls storage under the client's current deadline.
 */
BINDERY_NODISCARD enum stray_result stray_remove(struct services *s, const char *blob_name,
						 const char *etag);

/* The same for a name whose writer staged blocks and committed nothing (or
 * does not know that it did): while no row names it, the staged blocks are
 * purged (blob_purge_uncommitted: an empty commit create-only, then a delete
 * guarded by pending); a committed blob there is left (STRAY_CHANGED), for
 * the sweep's pass if it is pending. */
BINDERY_NODISCARD enum stray_result stray_purge_blocks(struct services *s, const char *blob_name);

/*
 * The sweep's pass (doc/design.md "What sweep and audit decide"): find the
 * pending-tagged blobs (Find Blobs by Tags) whose names this installation
 * could have written (the configured prefix and 32 hex digits) and that
 * start with prefix (the configured one, or narrower), at most limit of
 * them, and remove each last modified more than cutoff seconds ago that
 * no row names, with the ETag just read.  With plan (--dry-run) it removes
 * nothing and prints there what it would remove (counted as removed).  0,
 * or -1 when the search failed.
 */
struct stray_sweep {
	uint64_t removed;	/* deleted */
	uint64_t left;		/* changed since it was read: no longer pending, another ETag */
	uint64_t failed;	/* the database or storage failed: the next run looks again */
	int more;		/* the limit stopped the search */
	int refused;		/* storage refused the search (401/403: a SAS without
				 * the filter permission, f) */
};
BINDERY_NODISCARD int stray_sweep(struct services *s, const char *prefix, unsigned cutoff,
				  unsigned limit, FILE *plan, struct stray_sweep *out);

#endif
