/* tus.c - see tus.h and doc/design.md ("Resumable uploads", "Create", "The claim and the fence"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/crypto.h>
#include <nettle/sha2.h>

#include "base/clock.h"
#include "base/alloc.h"
#include "base/counters.h"
#include "base/failpoint.h"
#include "base/log.h"
#include "base/rand.h"
#include "base/sha256_state.h"
#include "protocol/protocol_internal.h"
#include "protocol/stamp.h"
#include "protocol/admission.h"
#include "protocol/tus.h"
#include "protocol/tus_internal.h"
#include "registry/concat_db.h"
#include "registry/docs_db.h"
#include "storage/sign.h"

#define MAX_BLOCKS 50000u	/* a block list's limit */
#define BLOCK_ID_ATTEMPT 12	/* bytes of the PATCH's attempt id that begin its block ids */
#define READ_STEP ((size_t)256 * 1024)	/* a re-sent tail is read this much at a time */

/* ---- pure decisions ------------------------------------------------------ */

uint64_t
tus_acknowledged(uint64_t recorded, uint64_t length, uint64_t last_size, int ready)
{
	if (ready)
		return length;
	/* The tail is acknowledged last: a client that has heard "complete"
	 * never has to come back, so it must not hear it before the document
	 * is ready. */
	if (recorded == length)
		return recorded - last_size;
	return recorded;
}

enum tus_offset_verdict
tus_offset_decide(uint64_t offset, uint64_t recorded, uint64_t length, uint64_t last_size, int ready)
{
	if (ready)
		return offset == length ? TUS_OFFSET_DONE : TUS_OFFSET_WRONG;
	if (recorded < length)
		return offset == recorded ? TUS_OFFSET_APPEND : TUS_OFFSET_WRONG;
	return offset == recorded - last_size ? TUS_OFFSET_TAIL : TUS_OFFSET_WRONG;
}

static uint64_t
blocks_for(uint64_t bytes, uint64_t block_size)
{
	return bytes / block_size + (bytes % block_size != 0);
}

int
tus_blocks_fit(uint64_t nblocks, uint64_t remaining, uint64_t block_size)
{
	return nblocks + blocks_for(remaining, block_size) <= MAX_BLOCKS;
}

uint64_t
tus_shape_blocks(struct tus_shape sh, uint64_t bytes)
{
	if (bytes == 0)
		return 0;
	if (sh.lead == 0)
		return blocks_for(bytes, sh.block);
	return 1 + (bytes > sh.lead ? blocks_for(bytes - sh.lead, sh.block) : 0);
}

/* sh with its lead when a PATCH of declared bytes is longer than a block. */
static struct tus_shape
led(struct tus_shape sh, uint64_t declared)
{
	sh.lead = declared > sh.block && TUS_LEAD_BLOCK < sh.block ? TUS_LEAD_BLOCK : 0;
	return sh;
}

/* Does the upload still fit 50,000 blocks if this PATCH is cut as sh? */
static int
shape_fits(struct tus_shape sh, uint64_t nblocks, uint64_t declared, uint64_t rest,
	   uint64_t block_size)
{
	return tus_blocks_fit(nblocks + tus_shape_blocks(sh, declared), rest, block_size);
}

struct tus_shape
tus_patch_shape(int64_t declared, uint64_t room, uint64_t nblocks, uint64_t block_size,
		unsigned in_flight)
{
	struct tus_shape whole = { 0, block_size }, sh;
	uint64_t bs, rest;

	if (declared <= 0 || (uint64_t)declared > room || in_flight == 0)
		return whole;
	rest = room - (uint64_t)declared;
	bs = blocks_for((uint64_t)declared, in_flight);	/* declared / in_flight, rounded up */
	if (bs < TUS_MIN_BLOCK)
		bs = TUS_MIN_BLOCK;
	if (bs > block_size)
		bs = block_size;
	sh.block = bs;
	/* Small blocks with a lead, else full ones with a lead, else full ones. */
	sh = led(sh, (uint64_t)declared);
	if (shape_fits(sh, nblocks, (uint64_t)declared, rest, block_size))
		return sh;
	sh = led(whole, (uint64_t)declared);
	if (shape_fits(sh, nblocks, (uint64_t)declared, rest, block_size))
		return sh;
	return whole;
}

uint64_t
tus_takeover_ms(const struct bindery_config *cfg)
{
	return ((uint64_t)cfg->heartbeat + cfg->request_deadline) * 1000;
}

unsigned
tus_busy_retry_after(int64_t idle_ms, uint64_t window_ms)
{
	uint64_t left_ms, s;

	if (idle_ms < 0)
		idle_ms = 0;
	if ((uint64_t)idle_ms >= window_ms)
		return 1;	/* lapsed since the claim was refused: at once */
	left_ms = window_ms - (uint64_t)idle_ms;
	s = (left_ms + 999) / 1000;
	return s > TUS_BUSY_RETRY_MAX ? TUS_BUSY_RETRY_MAX : (unsigned)s;
}

/* ---- the upload as answered ------------------------------------------------ */

/* Done: ready, or a partial whose blob is committed (it never becomes a
 * document of its own: its final does). */
static int
upload_done(const struct upload_row *u)
{
	if (u->purpose == PURPOSE_PARTIAL)
		return u->partial_etag[0] != '\0';
	return u->state == REGISTRY_COMMITTED;
}

void
tus_state_of(const struct upload_row *u, struct tus_state *out)
{
	int ready = u->state == REGISTRY_COMMITTED;

	memcpy(out->id, u->id, sizeof out->id);	/* same size, NUL-terminated by the read */
	out->length = u->length;
	out->offset = tus_acknowledged(u->recorded, u->length, u->last_size, upload_done(u));
	/* A complete partial keeps its lease: it answers until then. */
	out->expires = ready ? 0 : u->expires_unix;
	out->document_id = ready ? u->document_id : 0;
	out->concat = u->purpose == PURPOSE_PARTIAL ? TUS_CONCAT_PARTIAL
		      : u->partials[0] ? TUS_CONCAT_FINAL : TUS_CONCAT_NONE;
	memcpy(out->partials, u->partials, sizeof out->partials);
}

/* The upload id, read for owner: another owner's is as absent as none. */
enum proto_result
tus_read_upload(struct services *s, const char *owner, const char *id, struct upload_row *u)
{
	enum db_err e = uploads_get(s->db, id, u);

	if (e != DB_OK)
		return proto_from_db(e);
	if (strcmp(u->owner, owner) != 0)
		return PROTO_NOT_FOUND;
	if (u->state != REGISTRY_PENDING && u->state != REGISTRY_COMMITTED)
		return PROTO_NOT_FOUND;	/* being swept or terminated: gone */
	return PROTO_OK;
}

enum proto_result
tus_head(struct services *s, const char *owner, const char *id, struct tus_state *out)
{
	struct upload_row u;
	enum proto_result pr;

	memset(out, 0, sizeof *out);
	if ((pr = tus_read_upload(s, owner, id, &u)) == PROTO_OK)
		tus_state_of(&u, out);
	return pr;
}

/* ---- creation ---------------------------------------------------------- */

enum proto_result
tus_create(struct services *s, const struct tus_new *req, struct tus_state *out)
{
	char id[UPLOAD_ID_MAX], blob_name[DOC_BLOB_NAME_MAX], hash[SHA256_STATE_TEXT_MAX];
	struct upload_new u = { id, blob_name, req->owner, req->length, req->content_type, req->name,
				req->replaces, 0, hash, s->cfg->upload_expiry };
	struct upload_row row;
	struct sha256_ctx ctx;
	struct doc target;
	uint64_t doc_id = 0;
	enum proto_result pr;
	enum db_err e;

	memset(out, 0, sizeof *out);
	proto_start_deadline(s);
	if (req->replaces &&
	    (pr = proto_replace_target(s, req->replaces, req->owner, req->pre, &target, &u.replace_version)) != PROTO_OK)
		return pr;
	sha256_init(&ctx);
	if (rand_hex(id, sizeof id, 16) != 0 || proto_new_blob_name(s->cfg, blob_name, sizeof blob_name) != 0 ||
	    sha256_state_save(&ctx, hash, sizeof hash) != 0)
		return PROTO_FAILED;
	if (req->concat == TUS_CONCAT_PARTIAL)
		e = concat_db_partial_intent(s->db, &u);
	else
		e = docs_upload_intent(s->db, &u, &doc_id);
	if (e == DB_DUPLICATE)
		return PROTO_NAME_TAKEN;	/* tus_find_pending says whose */
	if (e != DB_OK)
		return proto_from_db(e);
	if (FAILPOINT("tus.after_create"))
		return PROTO_UNAVAILABLE;
	if ((e = uploads_get(s->db, id, &row)) != DB_OK)
		return proto_from_db(e);
	tus_state_of(&row, out);
	return PROTO_OK;
}

enum proto_result
tus_find_pending(struct services *s, struct span name, const char *owner, char *id, size_t idlen)
{
	return proto_from_db(uploads_find_pending(s->db, name, owner, id, idlen));
}

/* ---- PATCH ------------------------------------------------------------- */

int
tus_renew(struct patch_run *p)
{
	enum db_err e = uploads_renew(p->s->db, p->u.blob_name, p->hi.holder, p->s->cfg->upload_expiry);

	if (e == DB_OK) {
		p->renewed_ms = clock_now_ms();
		return 0;
	}
	if (e == DB_CONFLICT) {
		log_info("upload %s was taken over; this PATCH stops", p->u.id);
		p->lost = 1;
	}
	return -1;
}

/* blob_upload_opts.before_commit: renew right before the block list is committed. */
static int
renew_before_commit(void *arg)
{
	return tus_renew(arg);
}

/* The body, with the heartbeat: a PATCH that keeps receiving keeps its hold. */
static long
read_body(struct patch_run *p, char *buf, size_t len)
{
	long n = p->req->read(p->req->ctx, buf, len);

	if (n > 0 && clock_now_ms() - p->renewed_ms >= (int64_t)p->s->cfg->heartbeat * 1000 &&
	    tus_renew(p) != 0)
		return -1;
	return n;
}

/* blob_stage_stream's reader: the body, refused past the upload's length.
 * Each storage call started after progress gets request_deadline anew. */
static long
stage_read(void *arg, char *buf, size_t len)
{
	struct patch_run *p = arg;
	long n = read_body(p, buf, len);

	if (n < 0) {
		p->stopped = p->lost ? PROTO_UNAVAILABLE : PROTO_BODY_ERROR;
		return -1;
	}
	p->body_bytes += (uint64_t)n;
	if (n == 0 || (p->req->content_length >= 0 && p->body_bytes == (uint64_t)p->req->content_length))
		p->body_done = 1;
	if (p->body_bytes > p->room) {
		p->stopped = PROTO_TOO_LARGE;
		return -1;
	}
	proto_start_deadline(p->s);
	return n;
}

/* Read up to len bytes (less only at the body's end); -1 on failure. */
static long
read_full(struct patch_run *p, char *buf, size_t len)
{
	size_t got = 0, want;
	long n;

	while (got < len) {
		want = len - got < READ_STEP ? len - got : READ_STEP;
		if ((n = read_body(p, buf + got, want)) < 0)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (long)got;
}

static int
hex_nibble(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The first BLOCK_ID_ATTEMPT bytes of attempt holder (hex), which begin
 * the ids of the blocks it stages (then the block's 4-byte sequence,
 * blob_stage_stream): fixed width, never reused by another attempt. */
int
tus_block_id_prefix(const char *holder, unsigned char out[BLOCK_ID_ATTEMPT])
{
	int i, hi, lo;

	for (i = 0; i < BLOCK_ID_ATTEMPT; i++) {
		if ((hi = hex_nibble(holder[2 * i])) < 0 || (lo = hex_nibble(holder[2 * i + 1])) < 0)
			return -1;
		out[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

/* The base64 of an MD5 digest, as Content-MD5 and the block row carry it. */
static int
md5_text(const unsigned char md5[16], char *out, size_t outlen)
{
	struct buf b64 = BUF_INIT(UPLOAD_MD5_MAX - 1);
	int rc = -1;

	if (sign_base64_encode(md5, 16, &b64) == SIGN_OK && copy_cstr(out, outlen, buf_cstr(&b64)) == 0)
		rc = 0;
	buf_free(&b64);
	return rc;
}

/* Record blocks[n] (staged after u.recorded + what is already recorded)
 * with the hash state; the PATCH's last record (last) also lets go of the
 * upload unless it completes it (the commit that follows needs the hold). */
enum proto_result
tus_record(struct patch_run *p, const struct upload_block *blocks, size_t n, uint64_t bytes, int last)
{
	char hash[SHA256_STATE_TEXT_MAX];
	struct upload_record rec = { p->u.id, p->u.blob_name, p->hi.holder, p->s->cfg->upload_expiry,
				     p->u.recorded, p->u.nblocks, blocks, n, hash,
				     last && p->u.recorded + bytes < p->u.length };
	enum db_err e;

	if (sha256_state_save(&p->sha, hash, sizeof hash) != 0)
		return PROTO_FAILED;
	e = uploads_record(p->s->db, &rec);
	if (e == DB_CONFLICT) {
		log_info("upload %s was taken over; its blocks are not recorded", p->u.id);
		p->lost = 1;
		return PROTO_UNAVAILABLE;
	}
	if (e != DB_OK)
		return proto_from_db(e);
	p->renewed_ms = clock_now_ms();
	p->released = rec.release;
	p->u.recorded += bytes;
	p->u.nblocks += n;
	p->u.last_size = blocks[n - 1].size;
	return PROTO_OK;
}

static enum proto_result
keep_staged(struct patch_run *p, const struct upload_block *b)
{
	struct upload_block *more;
	size_t cap;

	if (p->nstaged == p->staged_cap) {
		cap = p->staged_cap ? 2 * p->staged_cap : 16;
		if ((more = alloc_realloc(p->staged, cap * sizeof *p->staged)) == NULL)
			return PROTO_FAILED;
		p->staged = more;
		p->staged_cap = cap;
	}
	p->staged[p->nstaged++] = *b;
	return PROTO_OK;
}

/* Record what storage accepted and this PATCH has not recorded yet;
 * last: the PATCH's body is over.  A crash right after a record mid-way
 * is the crash matrix's "mid_patch" cell. */
static enum proto_result
record_staged(struct patch_run *p, int last)
{
	enum proto_result pr;

	if (p->nstaged == 0)
		return PROTO_OK;
	if ((pr = tus_record(p, p->staged, p->nstaged, p->staged_bytes, last)) != PROTO_OK)
		return pr;
	p->nstaged = 0;
	p->staged_bytes = 0;
	return FAILPOINT("tus.mid_patch") ? PROTO_UNAVAILABLE : PROTO_OK;
}

/* blob_stage_stream's report of a block storage accepted, in order: kept,
 * and recorded every record_every blocks while more of the body is to
 * come (with a checksum, only once it verifies); once the body is all
 * read, the PATCH's last record takes the rest and lets go of the upload
 * in the same commit.  Nonzero stops the PATCH (why: p->stopped). */
static int
block_accepted(void *arg, const struct blob_staged *b)
{
	struct patch_run *p = arg;
	struct upload_block ub;
	uint64_t after = p->u.recorded + p->staged_bytes + b->len;
	uint64_t whole = p->naccepted++ == 0 && p->shape.lead ? p->shape.lead : p->shape.block;
	enum proto_result pr;

	memset(&ub, 0, sizeof ub);
	ub.size = b->len;
	if (copy_cstr(ub.id, sizeof ub.id, b->id_b64) != 0 || md5_text(b->md5, ub.md5, sizeof ub.md5) != 0) {
		p->stopped = PROTO_FAILED;
		return 1;
	}
	/* A short block ends this PATCH; unless it ends the upload too, the
	 * rest must still fit the block list. */
	if (b->len < whole && after < p->u.length &&
	    !tus_blocks_fit(p->u.nblocks + p->nstaged + 1, p->u.length - after, p->s->cfg->block_size)) {
		p->stopped = PROTO_CHUNK_TOO_SMALL;
		return 1;
	}
	if ((pr = keep_staged(p, &ub)) != PROTO_OK) {
		p->stopped = pr;
		return 1;
	}
	p->staged_bytes += b->len;
	p->sha = *b->sha;
	if (p->sum == NULL && p->nstaged >= p->record_every && !p->body_done &&
	    (pr = record_staged(p, 0)) != PROTO_OK) {
		p->stopped = pr;
		return 1;
	}
	return 0;
}

/* The checksum came with the PATCH: record its blocks only if it matches. */
static enum proto_result
verify_and_record(struct patch_run *p)
{
	unsigned char got[32];

	gnutls_hash_deinit(p->sum, got);
	p->sum = NULL;
	if (memcmp(got, p->req->digest, p->req->digest_len) != 0)
		return PROTO_CHECKSUM_MISMATCH;
	return record_staged(p, 1);
}

/* Why blob_stage_stream stopped: the PATCH's own reason, else storage's. */
static enum proto_result
stage_failure(struct patch_run *p, int rc, const struct blob_result *r)
{
	enum proto_result pr;

	if (p->stopped != PROTO_OK)
		return p->stopped;
	if (rc == BLOB_BAD_INPUT)
		return PROTO_CHUNK_TOO_SMALL;	/* past the block list's 50000 */
	blob_log_failure("put block", p->u.blob_name, r);
	pr = proto_from_blob(r);
	return pr == PROTO_BODY_ERROR ? PROTO_FAILED : pr;
}

/*
 * The PATCH's bytes as blocks after the recorded ones: each Put Block on
 * the wire while the next block is read and the one before is hashed
 * (blob_stage_stream), each recorded once storage accepted it.  Whole
 * blocks accepted before the body or storage failed still count (not
 * with a checksum: all or nothing); nothing more is recorded for a PATCH
 * refused as too large or too short.
 */
static enum proto_result
stream_blocks(struct patch_run *p)
{
	struct blob_stage_opts o;
	struct blob_result r;
	enum proto_result pr = PROTO_OK, rec;
	int rc;

	memset(&o, 0, sizeof o);
	if (tus_block_id_prefix(p->hi.holder, o.id_prefix) != 0)
		return PROTO_FAILED;
	p->room = p->u.length - p->u.recorded;
	o.first_index = (uint32_t)p->u.nblocks;
	o.block_size = p->shape.block;
	o.lead_size = p->shape.lead;
	o.sha = p->sha;
	o.extra = p->sum;
	o.accepted = block_accepted;
	o.ctx = p;
	proto_start_deadline(p->s);
	if ((rc = blob_stage_stream(p->s->blob, p->u.blob_name, &o, stage_read, p, &r)) != BLOB_OK)
		pr = stage_failure(p, rc, &r);
	if (p->sum != NULL)
		return pr == PROTO_OK ? verify_and_record(p) : pr;
	if (pr == PROTO_TOO_LARGE || pr == PROTO_CHUNK_TOO_SMALL || p->lost)
		return pr;
	rec = record_staged(p, 1);
	return pr != PROTO_OK ? pr : rec;
}

/* A re-sent tail: the body must be the last recorded block's bytes. */
static enum proto_result
check_tail(struct patch_run *p)
{
	unsigned char raw[16];
	char md5[UPLOAD_MD5_MAX];
	char extra, *tail;
	enum proto_result pr = PROTO_OFFSET_MISMATCH;
	long n;

	if ((tail = alloc_malloc(p->u.last_size ? p->u.last_size : 1)) == NULL)
		return PROTO_FAILED;
	if ((n = read_full(p, tail, p->u.last_size)) < 0) {
		pr = p->lost ? PROTO_UNAVAILABLE : PROTO_BODY_ERROR;
		goto out;
	}
	if ((uint64_t)n != p->u.last_size ||
	    (n > 0 && (gnutls_hash_fast(GNUTLS_DIG_MD5, tail, (size_t)n, raw) != 0 ||
		       md5_text(raw, md5, sizeof md5) != 0)))
		goto out;
	if (read_body(p, &extra, 1) != 0) {
		pr = PROTO_TOO_LARGE;
		goto out;
	}
	if (n > 0 && strcmp(md5, p->u.last_md5) != 0)
		goto out;	/* not the bytes recorded there */
	pr = PROTO_OK;
out:
	alloc_free(tail);
	return pr;
}

/* ---- the PATCH that finishes ------------------------------------------- */

struct id_list {
	char (*ids)[UPLOAD_BLOCK_ID_MAX];
	const char **ptrs;
	size_t n, cap;
};

static int
add_id(void *arg, const char *id)
{
	struct id_list *l = arg;

	if (l->n == l->cap || copy_cstr(l->ids[l->n], sizeof l->ids[0], id) != 0)
		return 1;
	l->ptrs[l->n] = l->ids[l->n];
	l->n++;
	return 0;
}

/* Put Block List of the recorded blocks, create-only, tagged pending, with
 * info's size and SHA-256; info's etag receives the committed blob's. */
static enum proto_result
commit_blocks(struct patch_run *p, struct blob_upload_info *info)
{
	const struct blob_tag pending[] = { { TAG_STATE_KEY, tag_state_name(TAG_STATE_PENDING) } };
	struct blob_upload_opts opts = { p->u.content_type, pending, 1, (int64_t)p->u.length,
					 renew_before_commit, p, NULL, 0 };
	struct id_list l = { NULL, NULL, 0, p->u.nblocks };
	const char *install = services_install_id(p->s);
	struct stamp_meta sm;
	struct stamp st;
	struct blob_result r;
	struct doc d;
	enum proto_result pr = PROTO_FAILED;
	enum db_err e;

	/* A partial is no document: no stamp (its final's blob carries one). */
	if (p->u.purpose == PURPOSE_PARTIAL)
		goto blocks;
	/* The stamp: the document as it is now, as the version this commit
	 * makes it (a replace: the current one's next). */
	if (install == NULL) {
		pr = PROTO_UNAVAILABLE;
		goto out;
	}
	if ((e = docs_get(p->s->db, p->u.document_id, &d)) != DB_OK) {
		pr = proto_from_db(e);
		goto out;
	}
	if (stamp_of_doc(&st, install, &d, p->u.purpose == PURPOSE_REPLACE ? d.version + 1 : 1) != 0 ||
	    copy_cstr(st.content_type, sizeof st.content_type, p->u.content_type) != 0 ||
	    stamp_encode(&st, &sm) != 0)
		goto out;
	opts.meta = sm.v;
	opts.nmeta = STAMP_NMETA;
blocks:
	l.ids = alloc_calloc(l.cap ? l.cap : 1, sizeof *l.ids);
	l.ptrs = alloc_calloc(l.cap ? l.cap : 1, sizeof *l.ptrs);
	if (l.ids == NULL || l.ptrs == NULL)
		goto out;
	if ((e = uploads_block_ids(p->s->db, p->u.id, add_id, &l)) != DB_OK || l.n != p->u.nblocks) {
		pr = e == DB_OK ? PROTO_FAILED : proto_from_db(e);
		goto out;
	}
	proto_start_deadline(p->s);
	if (blob_commit_blocks(p->s->blob, p->u.blob_name, l.ptrs, l.n, &opts, info, &r) == 0) {
		pr = PROTO_OK;
		goto out;
	}
	if (p->lost) {
		pr = PROTO_UNAVAILABLE;
		goto out;
	}
	if ((r.status == BLOB_EXISTS || r.status == BLOB_EXISTS_MAYBE_OURS) &&
	    proto_blob_matches(p->s, p->u.blob_name, info)) {
		pr = PROTO_OK;	/* an earlier PATCH of this upload committed it */
		goto out;
	}
	blob_log_failure("commit block list", p->u.blob_name, &r);
	pr = proto_from_blob(&r) == PROTO_OK ? PROTO_FAILED : proto_from_blob(&r);
	if (pr == PROTO_BODY_ERROR)
		pr = PROTO_FAILED;
out:
	alloc_free(l.ids);
	alloc_free(l.ptrs);
	return pr;
}

/* Step 4 of a create, or a replace's commit, for the blob this upload committed. */
static enum proto_result
make_ready(struct patch_run *p, const struct blob_upload_info *info)
{
	struct services *s = p->s;
	struct doc d;
	enum db_err e;
	int stale = 0;

	if (p->u.purpose == PURPOSE_REPLACE) {
		char retired[DOC_BLOB_NAME_MAX] = "";
		struct replace_blob nb = { p->u.blob_name, p->hi.holder, p->u.length, info->sha256_hex,
					   info->etag, p->u.content_type, retired };

		e = docs_replace_commit(s->db, p->u.document_id, &nb, p->u.replace_version,
					s->cfg->retire_grace, &stale, &d);
		if (e == DB_OK)
			proto_mark_retired(s, retired);
		if (e == DB_NOT_FOUND || stale) {
			proto_roll_back_replace(s, &p->hi);
			return stale ? PROTO_STALE : PROTO_NOT_FOUND;
		}
		if (e == DB_OK) {
			counters_add(COUNTER_DOCUMENTS_REPLACED, 1);
			events_after_commit(s->events, s->db, p->u.document_id);
		}
		return e == DB_CONFLICT ? PROTO_UNAVAILABLE : proto_from_db(e);
	}
	e = docs_mark_ready(s->db, p->u.document_id, p->u.blob_name, p->hi.holder, p->u.length,
			    info->sha256_hex, info->etag, READY_ALL, NULL);
	if (e == DB_CONFLICT) {
		/* The sweeper may have rolled it forward: then it is done. */
		if (docs_get(s->db, p->u.document_id, &d) == DB_OK && d.status == DOC_STATUS_READY &&
		    strcmp(d.blob_name, p->u.blob_name) == 0)
			return PROTO_OK;
		return PROTO_UNAVAILABLE;
	}
	if (e == DB_OK) {
		counters_add(COUNTER_DOCUMENTS_CREATED, 1);
		events_after_commit(s->events, s->db, p->u.document_id);
	}
	return proto_from_db(e);
}

struct admission_read {
	struct admission *adm;
	uint64_t bytes;
};

static int
admit_data(void *ctx, const char *data, size_t len)
{
	struct admission_read *ar = ctx;

	admission_stored_data(ar->adm, data, len);
	ar->bytes += len;
	return 0;
}

/*
 * Admission of the committed blob, before its tag flip (doc/design.md,
 * "Admission"): its bytes read back once, under If-Match on the ETag the
 * commit answered, for their type and the scan.  The type to record goes
 * into p->u (and a create's pending row).  A refusal: the caller
 * compensates; PROTO_SCAN_UNAVAILABLE leaves the upload for a retry of its
 * last PATCH.
 */
static enum proto_result
admit_stored(struct patch_run *p, const struct blob_upload_info *info)
{
	struct admission_read ar = { NULL, 0 };
	char type[SNIFF_TYPE_MAX];
	struct blob_result r;
	enum proto_result pr;
	enum db_err e;

	if ((pr = admission_stored_begin(p->s, &ar.adm)) != PROTO_OK || ar.adm == NULL)
		return pr;
	if (blob_get(p->s->blob, p->u.blob_name, 0, 0, info->etag, NULL, admit_data, &ar, &r) != BLOB_OK) {
		blob_log_failure("admission read", p->u.blob_name, &r);
		pr = proto_from_blob(&r) == PROTO_OK ? PROTO_FAILED : proto_from_blob(&r);
		goto out;
	}
	pr = admission_stored_end(ar.adm, ar.bytes == p->u.length, p->u.content_type, type, sizeof type);
	if (pr != PROTO_OK || strcmp(type, p->u.content_type) == 0)
		goto out;
	if (p->u.purpose != PURPOSE_REPLACE &&
	    (e = docs_set_pending_type(p->s->db, p->u.document_id, p->u.blob_name, type)) != DB_OK) {
		pr = e == DB_CONFLICT ? PROTO_UNAVAILABLE : proto_from_db(e);
		goto out;
	}
	if (copy_cstr(p->u.content_type, sizeof p->u.content_type, type) != 0)
		pr = PROTO_FAILED;
out:
	admission_free(ar.adm);
	return pr;
}

/* What the commit of every recorded byte says: the length and the SHA-256
 * the records carried (the running state is copied, never finished). */
static void
sealed_info(const struct patch_run *p, struct blob_upload_info *info)
{
	struct sha256_ctx done = p->sha;

	memset(info, 0, sizeof *info);
	info->size = p->u.length;
	sha256_digest(&done, sizeof info->sha256, info->sha256);
	hex_lower(info->sha256, sizeof info->sha256, info->sha256_hex);
}

/* A final dropped before it was ready (terminated, or refused by
 * admission) lets its partials go: free for another final, or for the
 * owner's DELETE, instead of claimed by nothing until their leases end. */
static void
let_partials_go(struct services *s, const struct upload_row *final)
{
	if (final->partials[0] && concat_db_unclaim(s->db, final->id) != DB_OK)
		log_warn("final upload %s dropped; its partials stay claimed until their leases end", final->id);
}

/* Steps 2 (the commit), 3 and 4 once every byte is recorded. */
enum proto_result
tus_finish(struct patch_run *p)
{
	struct blob_upload_info info;
	enum proto_result pr;

	sealed_info(p, &info);
	if (FAILPOINT("tus.after_last_block"))
		return PROTO_UNAVAILABLE;
	if ((pr = commit_blocks(p, &info)) != PROTO_OK)
		return pr;
	if (FAILPOINT("tus.after_commit"))
		return PROTO_UNAVAILABLE;
	if ((pr = admit_stored(p, &info)) != PROTO_OK) {
		/* Refused: nothing kept.  A scanner that could not answer
		 * leaves it all for the client's retry of its last PATCH. */
		if ((pr == PROTO_TYPE_REFUSED || pr == PROTO_INFECTED) &&
		    proto_compensate_pending(p->s, &p->hi) == PROTO_OK)
			let_partials_go(p->s, &p->u);
		return pr;
	}
	if (tus_renew(p) != 0)
		return PROTO_UNAVAILABLE;
	proto_start_deadline(p->s);
	if ((pr = proto_commit_tag_flip(p->s, p->u.blob_name)) != PROTO_OK)
		return pr;
	if (FAILPOINT("tus.after_flip"))
		return PROTO_UNAVAILABLE;
	return make_ready(p, &info);
}

/*
 * A partial's every byte recorded (tus concatenation): its block list
 * committed create-only tagged pending, with size and SHA-256 like any
 * commit, and its ETag recorded under the hold.  No tag flip and no
 * document: the partial is complete, and reports its whole offset, once
 * the ETag is recorded; its final makes the document.  A crash between
 * the two leaves the tail unacknowledged, and its re-send lands here
 * again, finding the committed blob its own by its metadata.
 */
static enum proto_result
finish_partial(struct patch_run *p)
{
	struct blob_upload_info info;
	enum proto_result pr;
	enum db_err e;

	sealed_info(p, &info);
	if ((pr = commit_blocks(p, &info)) != PROTO_OK)
		return pr;
	if (FAILPOINT("tus.partial_after_commit"))
		return PROTO_UNAVAILABLE;
	e = concat_db_partial_committed(p->s->db, p->u.blob_name, p->hi.holder, info.etag);
	if (e == DB_CONFLICT) {
		p->lost = 1;
		return PROTO_UNAVAILABLE;
	}
	if (e == DB_OK && copy_cstr(p->u.partial_etag, sizeof p->u.partial_etag, info.etag) != 0)
		return PROTO_FAILED;
	return proto_from_db(e);
}

/* Take the upload for this attempt; PROTO_BUSY while another PATCH holds
 * it, with p->busy_retry. */
enum proto_result
tus_take(struct patch_run *p)
{
	const struct bindery_config *cfg = p->s->cfg;
	uint64_t takeover_ms = tus_takeover_ms(cfg);
	enum db_err e;

	if (proto_held_intent_init(&p->hi, p->u.document_id, p->u.blob_name) != 0)
		return PROTO_FAILED;
	e = uploads_claim(p->s->db, p->u.blob_name, p->hi.holder, cfg->upload_expiry, takeover_ms);
	if (e == DB_CONFLICT) {
		struct upload_row now;

		if (uploads_get(p->s->db, p->u.id, &now) != DB_OK || now.state != REGISTRY_PENDING)
			return PROTO_NOT_FOUND;
		p->busy_retry = tus_busy_retry_after(now.held ? now.held_idle_ms : -1, takeover_ms);
		return PROTO_BUSY;
	}
	p->renewed_ms = clock_now_ms();
	return proto_from_db(e);
}

/* The PATCH's checks before it takes the upload (none moves anything). */
static enum proto_result
admit_patch(struct patch_run *p, enum tus_offset_verdict *v)
{
	const struct tus_patch *req = p->req;
	uint64_t room;

	if (p->u.partials[0])
		return PROTO_FINAL_UPLOAD;	/* tus concatenation: a final takes no PATCH */
	*v = tus_offset_decide(req->offset, p->u.recorded, p->u.length, p->u.last_size, upload_done(&p->u));
	if (*v == TUS_OFFSET_WRONG)
		return PROTO_OFFSET_MISMATCH;
	room = p->u.length - req->offset;
	if (req->content_length >= 0 && (uint64_t)req->content_length > room)
		return PROTO_TOO_LARGE;
	p->shape = tus_patch_shape(req->content_length, room, p->u.nblocks, p->s->cfg->block_size,
				   p->s->cfg->blocks_in_flight);
	/* A declared non-final chunk too small for the block list to ever finish. */
	if (*v == TUS_OFFSET_APPEND && req->content_length >= 0 && (uint64_t)req->content_length < room &&
	    !tus_blocks_fit(p->u.nblocks + tus_shape_blocks(p->shape, (uint64_t)req->content_length),
			room - (uint64_t)req->content_length, p->s->cfg->block_size))
		return PROTO_CHUNK_TOO_SMALL;
	return PROTO_OK;
}

/* Under the hold: the bytes, then, when they complete the upload, the commit. */
static enum proto_result
patch_held(struct patch_run *p, enum tus_offset_verdict v)
{
	enum proto_result pr;

	if (sha256_state_load(span_from_cstr(p->u.hash_state), &p->sha) != 0) {
		log_error("upload %s has an unreadable hash state", p->u.id);
		return PROTO_FAILED;
	}
	if (p->req->has_checksum &&
	    gnutls_hash_init(&p->sum, p->req->alg == TUS_SHA1 ? GNUTLS_DIG_SHA1 : GNUTLS_DIG_SHA256) != 0)
		return PROTO_FAILED;
	if (v == TUS_OFFSET_TAIL)
		pr = check_tail(p);
	else
		pr = stream_blocks(p);
	if (pr != PROTO_OK || p->u.recorded < p->u.length)
		return pr;
	return p->u.purpose == PURPOSE_PARTIAL ? finish_partial(p) : tus_finish(p);
}

static enum proto_result
run_patch(struct patch_run *p)
{
	enum tus_offset_verdict v;
	enum proto_result pr;

	if ((pr = tus_read_upload(p->s, p->req->owner, p->req->id, &p->u)) != PROTO_OK)
		return pr;
	if ((pr = admit_patch(p, &v)) != PROTO_OK || v == TUS_OFFSET_DONE)
		return pr;
	if ((pr = tus_take(p)) != PROTO_OK)
		return pr;
	if (FAILPOINT("tus.after_take"))
		pr = PROTO_UNAVAILABLE;
	/* Read again under the hold: a PATCH that held it before may have
	 * recorded more since the first read. */
	else if ((pr = tus_read_upload(p->s, p->req->owner, p->req->id, &p->u)) == PROTO_OK &&
	    (pr = admit_patch(p, &v)) == PROTO_OK && v != TUS_OFFSET_DONE)
		pr = patch_held(p, v);
	/* A complete partial stays pending (a final consumes it): let go too. */
	if (!p->lost && !p->released &&
	    (pr != PROTO_OK || p->u.recorded < p->u.length || p->u.purpose == PURPOSE_PARTIAL) &&
	    uploads_release(p->s->db, p->u.blob_name, p->hi.holder) != DB_OK)
		log_warn("upload %s stays held until its holder's lease lapses", p->u.id);
	return pr;
}

enum proto_result
tus_patch(struct services *s, const struct tus_patch *req, struct tus_state *out)
{
	struct patch_run p;
	enum proto_result pr;

	memset(out, 0, sizeof *out);
	memset(&p, 0, sizeof p);
	p.s = s;
	p.req = req;
	/* A record is a database commit on the thread that moves the
	 * transfers, so not one per block: every half of blocks_in_flight,
	 * and a killed PATCH loses at most that many accepted blocks. */
	p.record_every = s->cfg->blocks_in_flight / 2 ? s->cfg->blocks_in_flight / 2 : 1;
	proto_start_deadline(s);
	pr = run_patch(&p);
	out->retry_after = p.busy_retry;
	if (pr == PROTO_OK && tus_read_upload(s, req->owner, req->id, &p.u) == PROTO_OK)
		tus_state_of(&p.u, out);
	else if (pr == PROTO_OK)
		pr = PROTO_UNAVAILABLE;
	if (p.sum)
		gnutls_hash_deinit(p.sum, NULL);
	alloc_free(p.staged);
	blob_client_set_deadline(s->blob, 0);
	return pr;
}

/* ---- termination ------------------------------------------------------- */

enum proto_result
tus_terminate(struct services *s, const char *owner, const char *id, unsigned *retry_after)
{
	struct tus_patch none = { owner, id, 0, -1, NULL, NULL, 0, TUS_SHA256, { 0 }, 0 };
	struct patch_run p;
	enum proto_result pr;

	*retry_after = 0;
	memset(&p, 0, sizeof p);
	p.s = s;
	p.req = &none;
	proto_start_deadline(s);
	if ((pr = tus_read_upload(s, owner, id, &p.u)) != PROTO_OK)
		goto out;
	if (p.u.state == REGISTRY_COMMITTED) {
		pr = PROTO_FINISHED;
		goto out;
	}
	/* A partial a final claimed is the final's to consume. */
	if (p.u.final_id[0]) {
		pr = PROTO_PARTIAL_CLAIMED;
		goto out;
	}
	if (FAILPOINT("tus.terminate_before_take")) {
		pr = PROTO_UNAVAILABLE;
		goto out;
	}
	if ((pr = tus_take(&p)) != PROTO_OK) {
		*retry_after = p.busy_retry;
		goto out;
	}
	/* A final may have claimed it between the first read and the hold (a
	 * claim needs the partial unheld, so none can follow the hold). */
	if (p.u.purpose == PURPOSE_PARTIAL) {
		pr = tus_read_upload(s, owner, id, &p.u);
		if (pr == PROTO_OK && p.u.final_id[0])
			pr = PROTO_PARTIAL_CLAIMED;
		if (pr != PROTO_OK) {
			if (uploads_release(s->db, p.u.blob_name, p.hi.holder) != DB_OK)
				log_warn("upload %s: hold not released; it lapses with its lease", id);
			goto out;
		}
	}
	/* Held: compensation's own path purges the staged blocks and drops the rows. */
	pr = proto_compensate_pending(s, &p.hi);
	if (pr == PROTO_NOT_FOUND)
		pr = PROTO_UNAVAILABLE;	/* lost between the hold and the claim */
	if (pr == PROTO_OK)
		let_partials_go(s, &p.u);
out:
	blob_client_set_deadline(s->blob, 0);
	return pr;
}
