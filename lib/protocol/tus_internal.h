/*
 * tus_internal.h - what tus.c shares with tus_concat.c (the concatenation
 * extension's final upload): one upload's run under its hold, and the steps
 * of a PATCH that finishes, so a final commits, flips and becomes ready
 * exactly as the last PATCH of any upload does.  Not for app/.
 */
#ifndef BINDERY_TUS_INTERNAL_H
#define BINDERY_TUS_INTERNAL_H

#include <gnutls/crypto.h>
#include <nettle/sha2.h>

#include "protocol/protocol_internal.h"
#include "protocol/tus.h"

/* One PATCH at work: what its steps share. */
struct patch_run {
	struct services *s;
	const struct tus_patch *req;
	struct upload_row u;		/* as read once the PATCH held it */
	struct held_intent hi;
	struct sha256_ctx sha;		/* the document's, at u.recorded + staged */
	gnutls_hash_hd_t sum;		/* Upload-Checksum's, or NULL */
	struct tus_shape shape;		/* how this PATCH cuts its bytes */
	size_t record_every;		/* blocks accepted between two records (no checksum) */
	size_t naccepted;		/* blocks storage accepted for this PATCH */
	struct upload_block *staged;	/* accepted by storage, not yet recorded */
	size_t nstaged, staged_cap;
	uint64_t staged_bytes;
	uint64_t room;			/* bytes the upload takes from this PATCH's offset */
	uint64_t body_bytes;		/* ... and bytes this PATCH has read */
	int body_done;			/* ... which are all it has */
	int64_t renewed_ms;
	enum proto_result stopped;	/* why this PATCH stopped staging, else PROTO_OK */
	int lost;			/* a fenced write touched no row */
	int released;			/* the last record let go of the upload */
	unsigned busy_retry;		/* PROTO_BUSY: tus_busy_retry_after */
};

/* The upload id, read for owner: another owner's is as absent as none. */
BINDERY_NODISCARD enum proto_result tus_read_upload(struct services *s, const char *owner, const char *id,
						    struct upload_row *u);

/* What an answer about u reports. */
void tus_state_of(const struct upload_row *u, struct tus_state *out);

/* Take p->u for a fresh attempt (p->hi); PROTO_BUSY while another holds
 * it, with p->busy_retry. */
BINDERY_NODISCARD enum proto_result tus_take(struct patch_run *p);

/* The holder's heartbeat; -1 when lost (p->lost) or failed. */
int tus_renew(struct patch_run *p);

/* Record blocks[n] of bytes after what is recorded, with p->sha's state;
 * last: the run's last record (it lets go of the upload unless it
 * completes it). */
BINDERY_NODISCARD enum proto_result tus_record(struct patch_run *p, const struct upload_block *blocks, size_t n,
					       uint64_t bytes, int last);

/* Every byte recorded, p->sha the whole's: commit, admission, flip, ready. */
BINDERY_NODISCARD enum proto_result tus_finish(struct patch_run *p);

/* Ids of the blocks an attempt stages: the first 12 bytes of its holder
 * (hex), then the block's 4-byte index, base64 (all of one width). */
BINDERY_NODISCARD int tus_block_id_prefix(const char *holder, unsigned char out[12]);

#endif
