/*
 * tus.h - resumable uploads (tus 1.0.0; doc/design.md "Resumable uploads").
 *
 * An upload is a pending intent whose bytes are uncommitted blocks of its
 * blob.  A PATCH takes the upload (fenced by its own attempt id), stages
 * whole blocks (Content-MD5 each, ids derived from the attempt id and the
 * block's sequence, all of one width) and records each after its Put Block
 * succeeded, with the offset and the running SHA-256 state; with
 * Upload-Checksum it records its blocks only once the checksum verified.
 * The PATCH that reaches the declared length commits the block list
 * create-only tagged pending, flips the tag and makes the document ready:
 * the steps of a create (or of a replace) exactly.  The last block is
 * acknowledged only once the document is ready: until then the offset
 * reported stops short of it, so a client re-sends the tail after any crash
 * and that PATCH finishes the upload.
 */
#ifndef BINDERY_TUS_H
#define BINDERY_TUS_H

#include <stdint.h>

#include "base/compat.h"
#include "parse/tus_headers.h"
#include "protocol/protocol.h"
#include "registry/uploads_db.h"

/* The concatenation extension: what an upload is (doc/design.md,
 * "Resumable uploads: concatenation"). */
enum tus_concat {
	TUS_CONCAT_NONE = 0,
	TUS_CONCAT_PARTIAL,	/* a part of a final: no name, its own intent */
	TUS_CONCAT_FINAL,	/* assembled in storage from its partials */
};

/* What an answer about an upload reports. */
struct tus_state {
	char id[UPLOAD_ID_MAX];
	uint64_t length;
	uint64_t offset;	/* acknowledged: the whole length only once ready */
	int64_t expires;	/* Upload-Expires, Unix seconds; 0 once finished */
	uint64_t document_id;	/* the document, once ready (Location); else 0 */
	unsigned retry_after;	/* PROTO_BUSY: Retry-After seconds (tus_busy_retry_after) */
	enum tus_concat concat;
	char partials[UPLOAD_PARTIALS_MAX];	/* a final: its partials' ids, space-separated */
};

struct tus_new {
	const char *owner;
	uint64_t length;
	struct span name;		/* a create: the document's name (checked by the caller) */
	const char *content_type;
	uint64_t replaces;		/* nonzero: replace this document instead */
	const struct proto_precondition *pre;	/* a replace's If-Match, or NULL */
	enum tus_concat concat;		/* NONE, or PARTIAL (no name, no document) */
};

/* POST /uploads: the intent and the upload's row.  PROTO_NAME_TAKEN, PROTO_NOT_FOUND,
 * PROTO_FORBIDDEN, PROTO_STALE as for create and replace.  A partial
 * (req->concat) is an intent with no document; its PATCH that reaches its
 * length commits its blob tagged pending and reports the whole offset. */
BINDERY_NODISCARD enum proto_result tus_create(struct services *s, const struct tus_new *req,
					       struct tus_state *out);

struct tus_patch {
	const char *owner;
	const char *id;
	uint64_t offset;		/* Upload-Offset */
	int64_t content_length;		/* -1: unknown */
	blob_read_fn read;		/* the body */
	void *ctx;
	int has_checksum;		/* Upload-Checksum */
	enum tus_checksum_alg alg;
	unsigned char digest[32];
	size_t digest_len;
};

/*
 * PATCH /uploads/{id}: PROTO_OK with out's offset moved; PROTO_OFFSET_MISMATCH
 * (409), PROTO_BUSY (409 + Retry-After: another PATCH holds it),
 * PROTO_CHECKSUM_MISMATCH (460), PROTO_CHUNK_TOO_SMALL (400: the rest cannot
 * fit Azure's 50,000 blocks), PROTO_TOO_LARGE (413: past Upload-Length),
 * PROTO_BODY_ERROR (the body failed: its whole blocks are kept), and, on
 * the PATCH that finishes, whatever a create's or replace's commit answers.
 * PROTO_FINAL_UPLOAD (403) for a final upload (tus concatenation).
 */
BINDERY_NODISCARD enum proto_result tus_patch(struct services *s, const struct tus_patch *req,
					      struct tus_state *out);

/* HEAD /uploads/{id}. */
BINDERY_NODISCARD enum proto_result tus_head(struct services *s, const char *owner, const char *id,
					     struct tus_state *out);

/* The owner's pending upload of document name, for a 409 name_taken that
 * names it: id receives it, "" when the name is held by something else. */
BINDERY_NODISCARD enum proto_result tus_find_pending(struct services *s, struct span name,
						     const char *owner, char *id, size_t idlen);

/* DELETE /uploads/{id}: staged blocks purged, the intent dropped.  PROTO_BUSY
 * while a PATCH holds it; PROTO_FINISHED once its document is ready;
 * PROTO_PARTIAL_CLAIMED for a partial a final has claimed.  A final's
 * partials are let go (free for another final). */
BINDERY_NODISCARD enum proto_result tus_terminate(struct services *s, const char *owner, const char *id,
						  unsigned *retry_after);

/*
 * 409 upload_busy's Retry-After (pure; unit-tested): the seconds until a
 * holder silent for idle_ms would lose the upload to the window_ms a live
 * holder keeps it (heartbeat + request_deadline), rounded up, at least 1
 * and at most TUS_BUSY_RETRY_MAX: a holder whose process died lets go as
 * soon as its database session is gone (sql/014), any moment, so a client
 * asks again that soon.  idle_ms < 0 (no holder, or the clock stepped
 * back) counts as a holder renewed just now.
 */
#define TUS_BUSY_RETRY_MAX 5
unsigned tus_busy_retry_after(int64_t idle_ms, uint64_t window_ms);

/* How long an upload's holder may be silent before another request counts
 * it dead and may take the upload over: heartbeat + request_deadline. */
uint64_t tus_takeover_ms(const struct bindery_config *cfg);

/*
 * The decision before a PATCH moves anything (pure; unit-tested): given the
 * upload's recorded offset, its length, its last block and whether the
 * document is ready, is the client's offset the one acknowledged, a re-send
 * of the unacknowledged tail, or wrong?
 */
enum tus_offset_verdict {
	TUS_OFFSET_APPEND,	/* offset == recorded < length: new bytes */
	TUS_OFFSET_TAIL,	/* recorded == length, offset == length - last block: finish */
	TUS_OFFSET_DONE,	/* ready and offset == length: nothing to do */
	TUS_OFFSET_WRONG,	/* 409 */
};
enum tus_offset_verdict tus_offset_decide(uint64_t offset, uint64_t recorded, uint64_t length,
					  uint64_t last_size, int ready);

/*
 * Can an upload with nblocks blocks recorded once this PATCH's are, and
 * remaining bytes still to come, finish within the block list's 50,000
 * blocks (every later block full)?
 */
int tus_blocks_fit(uint64_t nblocks, uint64_t remaining, uint64_t block_size);

/*
 * How a PATCH cuts its bytes into blocks: a lead block (when lead is not
 * 0), then blocks of block bytes, the last of which may be short.
 */
struct tus_shape {
	uint64_t lead;
	uint64_t block;
};

/*
 * The shape of a PATCH declaring declared bytes (-1: not said) at offset
 * room bytes before the end, nblocks recorded.  A PATCH answers only once
 * its last block reached storage, and storage has nothing to do until its
 * first block is whole (Content-MD5 leads a Put Block), so both ends are
 * made short: the PATCH is cut into about in_flight blocks, of at least
 * TUS_MIN_BLOCK and at most block_size bytes, led by one of TUS_LEAD_BLOCK
 * when the PATCH is longer than one block, while the upload can still
 * finish within 50,000 blocks; else block_size without a lead.
 */
#define TUS_MIN_BLOCK ((uint64_t)1 << 20)
#define TUS_LEAD_BLOCK ((uint64_t)512 << 10)
struct tus_shape tus_patch_shape(int64_t declared, uint64_t room, uint64_t nblocks,
				 uint64_t block_size, unsigned in_flight);

/* The blocks bytes of a PATCH take in that shape. */
uint64_t tus_shape_blocks(struct tus_shape, uint64_t bytes);

/* The offset HEAD reports: recorded, less the last block until ready. */
uint64_t tus_acknowledged(uint64_t recorded, uint64_t length, uint64_t last_size, int ready);

#endif
