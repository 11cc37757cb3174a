/*
 * direct.h - direct uploads (doc/design.md "Direct uploads").  The client
 * sends its bytes straight to storage: create writes the intent first (a
 * pending document, its registry row marked direct) and hands out a service
 * SAS for exactly that blob with `sp=c` only, so it can create the blob
 * once and do nothing else.  The intent's lease outlives the SAS (expiry +
 * DIRECT_SAS_SKEW_S + sweep_cutoff): no row is dropped while its SAS could
 * still create the blob.  Finalize trusts nothing the client set: it reads
 * the blob's properties, hashes the bytes under If-Match on the ETag it
 * just read, records (ETag, size, SHA-256), then sets the tag committed
 * itself and marks the document ready through docs_mark_ready, pinned to
 * that ETag.
 */
#ifndef BINDERY_DIRECT_H
#define BINDERY_DIRECT_H

#include <stdint.h>

#include "base/buf.h"
#include "base/compat.h"
#include "protocol/protocol.h"
#include "registry/blobs_db.h"

/* Clock skew allowed between bindery and storage on the SAS's expiry. */
#define DIRECT_SAS_SKEW_S BLOBS_SAS_SKEW_S

struct direct_request {
	struct span name;		/* checked by the caller */
	const char *owner;
	const char *content_type;	/* checked by the caller */
	uint64_t size;			/* within max_upload and single_put_max (the caller's) */
	const char *sha256;		/* 64 lower-case hex, or NULL */
	const char *idem_key;		/* or NULL */
};

/* What the client gets to upload with. */
struct direct_grant {
	uint64_t doc_id;
	int64_t expires_unix;		/* the SAS's expiry */
	char expires[24];		/* the same as ISO 8601 UTC, as the SAS writes it */
	int replayed;			/* an Idempotency-Key retry: the same intent */
};

/*
 * POST /documents/direct: the intent and a create-only SAS URL for its blob
 * appended to upload_url; the grant is recorded before the URL is signed.
 * PROTO_NAME_TAKEN, PROTO_IDEM_MISMATCH (the key named another request, or
 * was a server create's), PROTO_GONE (the key's intent is over and its rows
 * are gone), PROTO_UNAVAILABLE.  A retry with the same key answers the same
 * intent: while it is pending with a fresh SAS (recorded, its lease renewed
 * to outlive it); once finalized with the URL handed out last, re-signed
 * at its recorded time (no new SAS).
 */
BINDERY_NODISCARD enum proto_result direct_create(struct services *s, const struct direct_request *req,
						  struct buf *upload_url, struct direct_grant *out);

/*
 * POST /documents/{id}/finalize: PROTO_OK with the ready document in *out
 * (also when it was already ready, when an earlier finalize died after any
 * step, or when another finalize ran at the same time: it is idempotent).
 * Only one Put Blob of a block blob is accepted; finalize hashes its bytes,
 * replaces the client's metadata and content headers with the server's
 * (If-Match at each step), then records (ETag after that, size, SHA-256),
 * sets the tag and marks the document ready pinned to that ETag.
 * PROTO_NOT_FOUND (no such direct document of owner's), PROTO_NOT_UPLOADED
 * (no blob yet), PROTO_NOT_ONE_PUT (a page or append blob, a copy, or a
 * blob with snapshots: deleted, the intent stays for another upload),
 * PROTO_SIZE_MISMATCH, PROTO_DIGEST_MISMATCH (the intent stays as it is and
 * expires), PROTO_UNAVAILABLE (storage or the database failed, or the
 * sweeper has the intent).
 */
BINDERY_NODISCARD enum proto_result direct_finalize(struct services *s, uint64_t doc_id, const char *owner,
						    struct doc *out);

/* The owner's pending direct upload of document name, for a 409 that names
 * it: *doc_id, 0 when the name is held by something else. */
BINDERY_NODISCARD enum proto_result direct_find_pending_of(struct services *s, struct span name,
							   const char *owner, uint64_t *doc_id);

#endif
