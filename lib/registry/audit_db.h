/*
 * audit_db.h - the registry side of `bindery audit`: one read-only walk
 * over the registry rows and the documents that point at them.  It changes
 * nothing and touches no storage; the audit compares what it reports with
 * the container.
 */
#ifndef BINDERY_AUDIT_DB_H
#define BINDERY_AUDIT_DB_H

#include <stdint.h>

#include "base/compat.h"
#include "base/state.h"
#include "registry/db.h"
#include "registry/doc_row.h"

struct audit_row {
	char name[DOC_BLOB_NAME_MAX];	/* the registry's blob name (or the document's) */
	int has_registry;
	enum registry_state state;	/* REGISTRY_STATE_UNKNOWN without a row */
	enum intent_purpose purpose;
	int64_t age;			/* seconds since touched_at */
	int lease_live;			/* pending, and its lease (expires_at) not yet over */
	int64_t retire_overdue;		/* seconds past retire_after, or -1 */
	uint64_t doc_id;		/* 0: no document points at the name */
	enum doc_status doc_status;
	uint64_t doc_size;
	char doc_sha256[DOC_SHA256_HEX];
	char doc_etag[DOC_ETAG_MAX];	/* the storage ETag its reads are pinned to, or "" */
};

/*
 * Every registry row whose name starts with prefix, joined with the
 * document that points at it, then every document whose blob has no
 * registry row.  on_row per row.
 */
BINDERY_NODISCARD enum db_err audit_db_walk(struct db *db, const char *prefix,
					    int (*on_row)(void *, const struct audit_row *), void *ctx);

/*
 * The walk's row for one blob name, read again now: its registry row joined
 * with the document that points at it, else the document alone.
 * DB_NOT_FOUND: neither exists (any more).
 */
BINDERY_NODISCARD enum db_err audit_db_reread(struct db *db, const char *name, struct audit_row *out);

#endif
