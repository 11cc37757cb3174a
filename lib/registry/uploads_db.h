/*
 * uploads_db.h - the rows of a resumable upload (tus; doc/design.md "Resumable
 * uploads"): the upload (declared length, owner, bytes recorded so far and
 * the running SHA-256 state at that offset) and its recorded blocks.
 *
 * An upload is a pending intent like any other: its registry row in blobs
 * carries the lease (expires_at = last progress + upload_expiry) and the
 * holder, here the PATCH working on it (NULL between PATCHes, touched_at
 * its heartbeat).  Every change a PATCH makes is fenced by that holder and
 * must touch one row; DB_CONFLICT means the PATCH lost the upload (to a
 * PATCH that took it over, to a termination or to the sweeper) and must
 * record nothing more.  The upload's rows go with its registry row (ON
 * DELETE CASCADE), so every path that drops an intent drops them too.
 */
#ifndef BINDERY_UPLOADS_DB_H
#define BINDERY_UPLOADS_DB_H

#include <stddef.h>
#include <stdint.h>

#include "base/compat.h"
#include "base/state.h"
#include "registry/db.h"
#include "registry/doc_row.h"

#define UPLOAD_ID_MAX 33	/* 32 hex digits, plus NUL */
#define UPLOAD_BLOCK_ID_MAX 65
#define UPLOAD_MD5_MAX 25	/* base64 of 16 bytes, plus NUL */
#define UPLOAD_HASH_STATE_MAX 301
#define UPLOAD_ETAG_MAX 128
/* tus concatenation (sql/019): at most this many partials in one final,
 * their ids space-separated. */
#define UPLOAD_CONCAT_MAX 64
#define UPLOAD_PARTIALS_MAX (UPLOAD_CONCAT_MAX * UPLOAD_ID_MAX)

/* A new upload: a create (document name set) or a replace of document
 * replaces.  Its rows are written with its intent, in the documents'
 * transaction (docs_upload_intent). */
struct upload_new {
	const char *id;
	const char *blob_name;
	const char *owner;
	uint64_t length;
	const char *content_type;
	struct span name;		/* create: the document's name */
	uint64_t replaces;		/* 0: a create; else the document it replaces */
	uint64_t replace_version;	/* replace: the If-Match version, 0: none */
	const char *hash_state;		/* the SHA-256 state of no bytes */
	unsigned expiry;		/* the lease: seconds */
};

/* An upload as a request sees it: its row, its registry row's state and lease, its last block. */
struct upload_row {
	char id[UPLOAD_ID_MAX];
	char blob_name[DOC_BLOB_NAME_MAX];
	uint64_t document_id;
	char owner[DOC_OWNER_MAX];
	uint64_t length;
	char content_type[DOC_CTYPE_MAX];
	enum intent_purpose purpose;
	uint64_t replace_version;	/* 0: none */
	uint64_t recorded;		/* bytes in recorded blocks */
	uint64_t nblocks;
	char hash_state[UPLOAD_HASH_STATE_MAX];
	enum registry_state state;	/* pending while it takes bytes, committed once ready */
	int held;			/* a PATCH holds it ... */
	int64_t held_idle_ms;		/* ... and renewed it this long ago */
	int64_t expires_unix;		/* the lease's end (Upload-Expires); 0 when not pending */
	uint64_t last_size;		/* the last recorded block's size, 0 without one */
	char last_md5[UPLOAD_MD5_MAX];
	/* Concatenation (sql/019): a partial (purpose PURPOSE_PARTIAL) ... */
	char partial_etag[UPLOAD_ETAG_MAX];	/* ... its committed blob's ETag: "" until complete */
	char final_id[UPLOAD_ID_MAX];		/* ... the final that claimed it, "" for none */
	int consumed;				/* ... its blob removed: the final is ready */
	char partials[UPLOAD_PARTIALS_MAX];	/* a final: its partials' ids in order; "" otherwise */
};

/* The upload with this id; DB_NOT_FOUND without one (or once its intent is gone). */
BINDERY_NODISCARD enum db_err uploads_get(struct db *db, const char *id, struct upload_row *out);

/*
 * A PATCH (or a termination) takes the upload: holder, this database
 * session, and a fresh lease (expires_at = now + expiry) on its pending
 * registry row, only when no PATCH holds it, its holder renewed nothing for
 * takeover_ms, or its holder's database session is gone (the process died:
 * seen at once from the same server as the same user, sql/014).
 * DB_CONFLICT: held by a live PATCH, or no longer pending.
 */
BINDERY_NODISCARD enum db_err uploads_claim(struct db *db, const char *blob_name, const char *holder,
					    unsigned expiry, uint64_t takeover_ms);

/* For the registry's own statements.  This session's server and user, and
 * the session (sql/014). */
#define UPLOADS_SESSION_NODE_SQL "CONCAT(@@hostname, ':', @@port, '/', CURRENT_USER(), '/')"
#define UPLOADS_SESSION_SQL "CONCAT(" UPLOADS_SESSION_NODE_SQL ", CONNECTION_ID())"
/* A blobs row nobody holds: free, or its holder is dead, silent for more
 * than the window (one parameter, in microseconds) or, seen from the
 * holder's own server as the holder's user, its database session gone,
 * which is the moment its process died.  T is the table's alias with its
 * dot, or "". */
#define UPLOADS_UNHELD_SQL(T) \
	"(" T "holder IS NULL OR " T "touched_at < NOW(6) - INTERVAL ? MICROSECOND" \
	" OR (LEFT(" T "holder_session, CHAR_LENGTH(" UPLOADS_SESSION_NODE_SQL ")) = " UPLOADS_SESSION_NODE_SQL \
	" AND NOT EXISTS (SELECT 1 FROM information_schema.PROCESSLIST pl" \
	" WHERE pl.ID = SUBSTRING_INDEX(" T "holder_session, '/', -1))))"

/* The holder's heartbeat (touched_at, expires_at = now + expiry).  DB_CONFLICT: lost. */
BINDERY_NODISCARD enum db_err uploads_renew(struct db *db, const char *blob_name, const char *holder,
					    unsigned expiry);

/* Let go after a PATCH: no holder, the lease as it is.  Losing the row meanwhile is not an error. */
BINDERY_NODISCARD enum db_err uploads_release(struct db *db, const char *blob_name, const char *holder);

struct upload_block {
	char id[UPLOAD_BLOCK_ID_MAX];
	uint64_t size;
	char md5[UPLOAD_MD5_MAX];
};

/* Blocks a PATCH staged, to be recorded at once (the upload's state after them included). */
struct upload_record {
	const char *upload_id;
	const char *blob_name;
	const char *holder;
	unsigned expiry;
	uint64_t recorded_before;	/* the offset the blocks start at */
	uint64_t nblocks_before;
	const struct upload_block *blocks;
	size_t n;
	const char *hash_state;		/* after the blocks */
	int release;			/* the PATCH's last: let go of the upload too */
};

/*
 * One transaction: the holder's heartbeat (fenced, one row; with release,
 * the holder lets go as uploads_release does), the blocks' rows (seq from
 * nblocks_before), and the upload's offset, block count and hash state,
 * conditional on the offset and count it started from.
 * DB_CONFLICT: the upload was lost or moved; nothing is recorded.
 */
BINDERY_NODISCARD enum db_err uploads_record(struct db *db, const struct upload_record *rec);

/* The recorded block ids in order, for the block list: on_id per block (nonzero stops). */
BINDERY_NODISCARD enum db_err uploads_block_ids(struct db *db, const char *upload_id,
						int (*on_id)(void *ctx, const char *id), void *ctx);

/*
 * Inside a ready transaction (docs_mark_ready, docs_replace_commit, the
 * sweeper's roll forward): the upload whose blob this is, if any, is done;
 * its block rows go.  No upload: nothing changes, DB_OK.
 */
BINDERY_NODISCARD enum db_err uploads_record_ready(struct db *db, const char *blob_name);

/* The pending upload owner has under document name, if any (*id "" when none). */
BINDERY_NODISCARD enum db_err uploads_find_pending(struct db *db, struct span name, const char *owner,
						   char *id, size_t idlen);

#endif
