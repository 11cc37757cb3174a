/*
 * blob_upload.c - streaming uploads of the Blob REST client: create-only
 * and overwriting uploads (one Put Blob, or Put Block in parallel and a
 * Put Block List), the single Put Block and Put Block List calls, and the
 * purge of a name's uncommitted blocks.  Requests run on the engine of
 * blob_http.c (blob_internal.h).
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>

#include <curl/curl.h>
#include <gnutls/gnutls.h>
#include <gnutls/crypto.h>

#include "base/state.h"
#include "storage/blob.h"
#include "storage/blob_internal.h"
#include "storage/sign.h"

#define READ_CHUNK	((size_t)256 * 1024)
#define MAX_BLOCKS	50000u		/* Put Block List limit */
#define BLOCK_ID_RAW	16		/* 12 random bytes + 4-byte index */

/* ---- uploads ------------------------------------------------------------- */

/* "k=v&k2=v2", percent-encoded, for x-ms-tags. */
static int
tags_header(const struct blob_tag *tags, size_t n, struct buf *out)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if ((i > 0 && buf_append(out, "&", 1) != BUF_OK) ||
		    sign_percent_encode(tags[i].key, strlen(tags[i].key), 0,
		    out) != SIGN_OK || buf_append(out, "=", 1) != BUF_OK ||
		    sign_percent_encode(tags[i].value, strlen(tags[i].value), 0,
		    out) != SIGN_OK)
			return -1;
	}
	return 0;
}

/* The headers every creating call carries: condition, tags, content type,
 * and (when known) the size and SHA-256 metadata. */
static int
creating_headers(struct blob_req *r, const struct blob_upload_opts *o,
    int create_only, int type_header_is_blob, const char *size,
    const char *sha_hex)
{
	struct buf tags = BUF_INIT(8192);
	int rc = -1;
	const char *ct = o->content_type && o->content_type[0] ?
	    o->content_type : "application/octet-stream";

	if (create_only && bh_req_header(r, "If-None-Match", "*") != 0)
		goto out;
	r->create_only = create_only;
	if (o->ntags > 0) {
		if (tags_header(o->tags, o->ntags, &tags) != 0 ||
		    bh_req_header(r, "x-ms-tags", buf_cstr(&tags)) != 0)
			goto out;
	}
	if (bh_req_header(r, type_header_is_blob ? "x-ms-blob-content-type" :
	    "Content-Type", ct) != 0)
		goto out;
	if (size && bh_req_header(r, "x-ms-meta-size", size) != 0)
		goto out;
	if (sha_hex && bh_req_header(r, "x-ms-meta-sha256", sha_hex) != 0)
		goto out;
	rc = 0;
out:
	buf_free(&tags);
	return rc;
}

/* Content-MD5 for data[len]; known is the digest when the caller already
 * computed it on the way in. */
static int
md5_header(struct blob_req *r, const void *data, size_t len,
    const unsigned char *known)
{
	unsigned char md5[16];
	struct buf b64 = BUF_INIT(64);
	int rc = -1;

	if (known != NULL)
		memcpy(md5, known, sizeof md5);
	else if (gnutls_hash_fast(GNUTLS_DIG_MD5, data, len, md5) < 0)
		goto out;
	if (sign_base64_encode(md5, sizeof md5, &b64) != SIGN_OK ||
	    bh_req_header(r, "Content-MD5", buf_cstr(&b64)) != 0)
		goto out;
	rc = 0;
out:
	buf_free(&b64);
	return rc;
}

/* Set up (not start) a Put Block request for data[len]. */
static int
put_block_req(struct blob_client *c, struct blob_req *r, const char *name,
    const char *id_b64, const void *data, size_t len, const unsigned char *md5)
{
	bh_req_init(r, "PUT");
	r->body = data;
	r->body_len = len;
	r->has_body = 1;
	if (bh_req_path_blob(c, r, name) != 0 ||
	    bh_req_query_param(r, "comp", "block") != 0 ||
	    bh_req_query_param(r, "blockid", id_b64) != 0 ||
	    md5_header(r, data, len, md5) != 0)
		return -1;
	return 0;
}

int
blob_put_block(struct blob_client *c, const char *name, const char *block_id_b64,
    const void *data, size_t len, struct blob_result *res)
{
	struct blob_req r;
	int rc;

	bh_result_clear(res);
	if (!bh_name_ok(name) || block_id_b64 == NULL || block_id_b64[0] == '\0' ||
	    strlen(block_id_b64) > 88 || (len > 0 && data == NULL))
		return bh_result_set(res, BLOB_BAD_INPUT, "bad blob name or block");
	if (put_block_req(c, &r, name, block_id_b64, data, len, NULL) != 0)
		rc = bh_result_nomem(res);
	else
		rc = bh_exec_one(c, &r, res);
	bh_req_free(&r);
	return rc;
}

static int
block_list_body(const char *const *ids, size_t nids, struct buf *body)
{
	size_t i;

	if (buf_append_cstr(body, "<?xml version=\"1.0\" encoding=\"utf-8\"?>"
	    "<BlockList>") != BUF_OK)
		return -1;
	for (i = 0; i < nids; i++)
		if (buf_append_cstr(body, "<Latest>") != BUF_OK ||
		    blob_xml_escape(body, ids[i]) != BUF_OK ||
		    buf_append_cstr(body, "</Latest>") != BUF_OK)
			return -1;
	return buf_append_cstr(body, "</BlockList>") == BUF_OK ? 0 : -1;
}

/* Put Block List with the creating headers. */
static int
commit_block_list(struct blob_client *c, const char *name,
    const char *const *ids, size_t nids, const struct blob_upload_opts *o,
    int create_only, const char *size, const char *sha_hex,
    struct blob_req *r, struct blob_result *res)
{
	struct buf body = BUF_INIT((size_t)MAX_BLOCKS * 128 + 256);
	int rc;

	bh_req_init(r, "PUT");
	if (block_list_body(ids, nids, &body) != 0 ||
	    bh_req_path_blob(c, r, name) != 0 ||
	    bh_req_query_param(r, "comp", "blocklist") != 0 ||
	    creating_headers(r, o, create_only, 1, size, sha_hex) != 0 ||
	    bh_req_header(r, "Content-Type", "application/xml; charset=utf-8") != 0) {
		rc = bh_result_nomem(res);
		goto out;
	}
	r->body = buf_cstr(&body);
	r->body_len = body.len;
	r->has_body = 1;
	rc = bh_exec_one(c, r, res);
out:
	buf_free(&body);
	return rc;
}

int
blob_put_block_list_create(struct blob_client *c, const char *name,
    const char *const *ids, size_t nids, const struct blob_upload_opts *opts,
    struct blob_result *res)
{
	static const struct blob_upload_opts none = { NULL, NULL, 0, -1 };
	struct blob_req r;
	int rc;

	bh_result_clear(res);
	if (opts == NULL)
		opts = &none;
	if (!bh_name_ok(name) || nids > MAX_BLOCKS || (nids > 0 && ids == NULL) ||
	    !blob_tags_ok(opts->tags, opts->ntags))
		return bh_result_set(res, BLOB_BAD_INPUT, "bad blob name, ids or tags");
	rc = commit_block_list(c, name, ids, nids, opts, 1, NULL, NULL, &r, res);
	bh_req_free(&r);
	return rc;
}

/*
 * A streamed upload is a pipeline over in_flight block buffers.  The
 * caller's thread reads a block from read_fn one chunk at a time, moving
 * curl along between chunks; a hashing thread then takes the block's MD5
 * (its Content-MD5) and feeds it to the body's SHA-256, blocks in order;
 * then the caller's thread starts its Put Block.  Hashing costs about
 * 0.6 s of CPU per 256 MiB (GnuTLS: MD5 ~550 MiB/s, SHA-256 ~1.4 GiB/s);
 * done on the thread that drives curl it stalled the transfers in flight.
 *
 * The hashing thread touches only the block buffers queued to it and the
 * two hash handles, and publishes each digest under hasher.mu before it
 * wakes curl_multi_poll; the caller's thread leaves a queued buffer alone
 * until then.  The thread lives for one upload and is joined on every
 * path.  If it cannot be started, blocks are hashed inline.
 */
enum slot_state { SLOT_FREE, SLOT_READING, SLOT_HASHING, SLOT_SENDING };

struct upload_slot {
	char *data;		/* block_size bytes, mapped on first use */
	size_t len;
	unsigned index;		/* the block's number in the body */
	unsigned char md5[16];	/* written by the hasher before it publishes */
	enum slot_state state;
	struct blob_req req;
};

struct hasher {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thread;
	int started, stop, failed;
	struct upload_slot **queue;	/* ring of cap; FIFO keeps SHA-256 in order */
	unsigned cap, head, count;
	unsigned hashed;		/* blocks hashed so far (they go in order) */
	gnutls_hash_hd_t sha, md5;
	CURLM *wake;
};

struct upload {
	struct blob_client *c;
	blob_read_fn read;
	void *ctx;
	uint64_t total;
	int eof;
};

static int
hash_block(struct hasher *h, struct upload_slot *s)
{
	if (gnutls_hash(h->md5, s->data, s->len) < 0 ||
	    gnutls_hash(h->sha, s->data, s->len) < 0)
		return -1;
	gnutls_hash_output(h->md5, s->md5);	/* also resets it for the next */
	return 0;
}

static void *
hasher_main(void *arg)
{
	struct hasher *h = arg;

	pthread_mutex_lock(&h->mu);
	for (;;) {
		struct upload_slot *s;
		int failed;

		while (h->count == 0 && !h->stop)
			pthread_cond_wait(&h->cv, &h->mu);
		if (h->stop)
			break;
		s = h->queue[h->head];
		pthread_mutex_unlock(&h->mu);
		failed = hash_block(h, s) != 0;
		pthread_mutex_lock(&h->mu);
		h->head = (h->head + 1) % h->cap;
		h->count--;
		if (failed)
			h->failed = 1;
		else
			h->hashed++;
		curl_multi_wakeup(h->wake);
		if (failed)
			break;
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

/* Hash handles and queue; the thread itself is started by hasher_start. */
static int
hasher_init(struct hasher *h, unsigned cap, CURLM *wake)
{
	memset(h, 0, sizeof *h);
	h->cap = cap;
	h->wake = wake;
	if ((h->queue = calloc(cap, sizeof *h->queue)) == NULL)
		return -1;
	if (gnutls_hash_init(&h->sha, GNUTLS_DIG_SHA256) < 0) {
		h->sha = NULL;
		return -1;
	}
	if (gnutls_hash_init(&h->md5, GNUTLS_DIG_MD5) < 0) {
		h->md5 = NULL;
		return -1;
	}
	if (pthread_mutex_init(&h->mu, NULL) != 0)
		return -1;
	if (pthread_cond_init(&h->cv, NULL) != 0) {
		pthread_mutex_destroy(&h->mu);
		return -1;
	}
	h->started = -1;	/* sync objects exist, thread not yet */
	return 0;
}

static void
hasher_start(struct hasher *h)
{
	if (pthread_create(&h->thread, NULL, hasher_main, h) == 0)
		h->started = 1;
}

/* Queue s (whose bytes are final) for hashing; inline without a thread. */
static void
hasher_submit(struct hasher *h, struct upload_slot *s)
{
	if (h->started != 1) {
		if (h->failed || hash_block(h, s) != 0)
			h->failed = 1;
		else
			h->hashed++;
		return;
	}
	pthread_mutex_lock(&h->mu);
	assert(h->count < h->cap);
	h->queue[(h->head + h->count) % h->cap] = s;
	h->count++;
	pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->mu);
}

static void
hasher_progress(struct hasher *h, unsigned *hashed, int *failed)
{
	if (h->started == 1)
		pthread_mutex_lock(&h->mu);
	*hashed = h->hashed;
	*failed = h->failed;
	if (h->started == 1)
		pthread_mutex_unlock(&h->mu);
}

/* Stop and join the thread (it finishes the block in hand); idempotent. */
static void
hasher_stop(struct hasher *h)
{
	if (h->started != 1)
		return;
	pthread_mutex_lock(&h->mu);
	h->stop = 1;
	pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->mu);
	pthread_join(h->thread, NULL);
	h->started = -1;
}

/* Join, then free; sha_out (may be NULL) receives the body's SHA-256. */
static void
hasher_free(struct hasher *h, unsigned char *sha_out)
{
	hasher_stop(h);
	if (h->sha != NULL)
		gnutls_hash_deinit(h->sha, sha_out);
	if (h->md5 != NULL)
		gnutls_hash_deinit(h->md5, NULL);
	h->sha = h->md5 = NULL;
	if (h->started == -1) {
		pthread_cond_destroy(&h->cv);
		pthread_mutex_destroy(&h->mu);
	}
	h->started = 0;
	free(h->queue);
	h->queue = NULL;
}

/* Read one chunk from the caller onto the end of s. */
static int
upload_read_chunk(struct upload *u, struct upload_slot *s, struct blob_result *res)
{
	size_t n = u->c->block_size - s->len;
	long got;

	if (n > READ_CHUNK)
		n = READ_CHUNK;
	got = u->read(u->ctx, s->data + s->len, n);
	if (got < 0 || (size_t)got > n)
		return bh_result_set(res, BLOB_ABORTED, "the body could not be read");
	if (got == 0)
		u->eof = 1;
	s->len += (size_t)got;
	u->total += (uint64_t)got;
	return BLOB_OK;
}

/* Block buffers are mapped, not malloc'd: glibc would serve 8 MiB from the
 * heap once one such chunk was freed (its mmap threshold adapts) and keep
 * it after the upload; munmap gives it back at once. */
static int
slot_map(struct blob_client *c, struct upload_slot *s)
{
	void *p;

	if (s->data != NULL)
		return 0;
	p = mmap(NULL, c->block_size, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	s->data = p;
	return 0;
}

static void
slot_unmap(struct blob_client *c, struct upload_slot *s)
{
	if (s->data != NULL)
		munmap(s->data, c->block_size);
	s->data = NULL;
}

static void
block_id(const unsigned char token[12], unsigned idx, struct buf *out)
{
	unsigned char raw[BLOCK_ID_RAW];

	memcpy(raw, token, 12);
	raw[12] = (unsigned char)(idx >> 24);
	raw[13] = (unsigned char)(idx >> 16);
	raw[14] = (unsigned char)(idx >> 8);
	raw[15] = (unsigned char)idx;
	buf_reset(out);
	if (sign_base64_encode(raw, sizeof raw, out) != SIGN_OK)
		buf_reset(out);
}

static struct upload_slot *
slot_of(struct upload_slot *slots, unsigned n, const struct blob_req *r)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if (&slots[i].req == r)
			return &slots[i];
	return NULL;
}

static void
sha_hex_of(const unsigned char sha[32], char hex[65])
{
	static const char digits[] = "0123456789abcdef";
	unsigned i;

	for (i = 0; i < 32; i++) {
		hex[2 * i] = digits[sha[i] >> 4];
		hex[2 * i + 1] = digits[sha[i] & 15];
	}
	hex[64] = '\0';
}

static int
upload_common(struct blob_client *c, const char *name,
    const struct blob_upload_opts *opts, blob_read_fn read_fn, void *ctx,
    struct blob_upload_info *info, struct blob_result *res, int create_only)
{
	static const struct blob_upload_opts none = { NULL, NULL, 0, -1 };
	struct upload u;
	struct hasher h;
	struct upload_slot *slots = NULL, *filling = NULL;
	struct buf idtext = BUF_INIT((size_t)MAX_BLOCKS * 32), id = BUF_INIT(64);
	const char **ids = NULL;
	struct blob_req commit;
	unsigned char token[12], sha[32];
	char size_str[32], sha_hex[65];
	unsigned i, nslots = c->in_flight, nblocks = 0;
	size_t idlen = 0;
	int rc, have_hasher = 0, commit_used = 0;

	bh_result_clear(res);
	memset(info, 0, sizeof *info);
	memset(&u, 0, sizeof u);
	if (opts == NULL)
		opts = &none;
	if (!bh_name_ok(name) || read_fn == NULL || !blob_tags_ok(opts->tags, opts->ntags))
		return bh_result_set(res, BLOB_BAD_INPUT, "bad blob name, reader or tags");
	if (bh_deadline_passed(c))
		return bh_result_set(res, BLOB_DEADLINE, "deadline passed before the call");
	u.c = c;
	u.read = read_fn;
	u.ctx = ctx;
	slots = calloc(nslots, sizeof *slots);
	if (slots == NULL || hasher_init(&h, nslots, c->multi) != 0) {
		if (slots != NULL)
			hasher_free(&h, NULL);
		free(slots);
		return bh_result_set(res, BLOB_NOMEM, "out of memory");
	}
	have_hasher = 1;
	for (i = 0; i < nslots; i++)
		bh_req_init(&slots[i].req, "PUT");
	if (gnutls_rnd(GNUTLS_RND_NONCE, token, sizeof token) < 0 ||
	    slot_map(c, &slots[0]) != 0) {
		rc = bh_result_nomem(res);
		goto out;
	}
	/* The first block decides between one Put Blob and staged blocks;
	 * nothing is in flight yet, so it is read straight through. */
	while (!u.eof && slots[0].len < c->block_size)
		if ((rc = upload_read_chunk(&u, &slots[0], res)) != BLOB_OK)
			goto out;

	if (u.eof && slots[0].len <= c->single_put_max) {
		/* One Put Blob: the whole body is in slot 0. */
		hasher_submit(&h, &slots[0]);
		if (h.failed) {
			rc = bh_result_set(res, BLOB_FAILED, "hashing failed");
			goto out;
		}
		have_hasher = 0;
		hasher_free(&h, sha);
		goto single;
	}

	hasher_start(&h);
	filling = &slots[0];
	for (;;) {
		struct blob_req *done;
		struct upload_slot *s;
		int64_t next_retry;
		unsigned hashed;
		int failed, progressed = 0, busy = 0;

		/* A block whose transfer finished frees its buffer. */
		while ((done = bh_exec_collect(c, &next_retry)) != NULL) {
			if (done->res.status != BLOB_OK) {
				*res = done->res;
				rc = res->status;
				goto out;
			}
			if ((s = slot_of(slots, nslots, done)) == NULL) {
				rc = bh_result_set(res, BLOB_FAILED, "lost a block transfer");
				goto out;
			}
			s->state = SLOT_FREE;
			progressed = 1;
		}
		/* A hashed block goes out. */
		hasher_progress(&h, &hashed, &failed);
		if (failed) {
			rc = bh_result_set(res, BLOB_FAILED, "hashing failed");
			goto out;
		}
		for (i = 0; i < nslots; i++) {
			s = &slots[i];
			if (s->state != SLOT_HASHING || s->index >= hashed)
				continue;
			bh_req_free(&s->req);
			if (put_block_req(c, &s->req, name,
			    idtext.ptr + (size_t)s->index * (idlen + 1), s->data,
			    s->len, s->md5) != 0 || bh_exec_start(c, &s->req) != 0) {
				rc = bh_result_nomem(res);
				goto out;
			}
			s->state = SLOT_SENDING;
			progressed = 1;
		}
		/* One more chunk into the block being read, taking a free
		 * buffer for it if need be. */
		if (filling == NULL && !u.eof) {
			for (i = 0; i < nslots && filling == NULL; i++)
				if (slots[i].state == SLOT_FREE)
					filling = &slots[i];
			if (filling != NULL) {
				if (slot_map(c, filling) != 0) {
					rc = bh_result_nomem(res);
					goto out;
				}
				filling->len = 0;
				filling->state = SLOT_READING;
			}
		}
		if (filling != NULL && !u.eof && filling->len < c->block_size) {
			if ((rc = upload_read_chunk(&u, filling, res)) != BLOB_OK)
				goto out;
			progressed = 1;
		}
		if (filling != NULL && (u.eof || filling->len == c->block_size)) {
			if (filling->len == 0) {
				filling->state = SLOT_FREE;
			} else {
				if (nblocks >= MAX_BLOCKS) {
					rc = bh_result_set(res, BLOB_BAD_INPUT, "body needs more "
					    "than 50000 blocks: raise block_size");
					goto out;
				}
				block_id(token, nblocks, &id);
				if (id.len == 0 || (idlen && id.len != idlen) ||
				    buf_append(&idtext, id.ptr, id.len + 1) != BUF_OK) {
					rc = bh_result_nomem(res);
					goto out;
				}
				idlen = id.len;
				filling->index = nblocks++;
				filling->state = SLOT_HASHING;
				hasher_submit(&h, filling);
			}
			filling = NULL;
			progressed = 1;
		}
		for (i = 0; i < nslots; i++)
			busy |= slots[i].state == SLOT_HASHING ||
			    slots[i].state == SLOT_SENDING;
		if (u.eof && filling == NULL && !busy)
			break;
		/* Nothing to do until a socket, the hasher or a retry
		 * timer calls. */
		if (!progressed)
			bh_exec_poll(c, next_retry, 1000);
	}
	have_hasher = 0;
	hasher_free(&h, sha);
	if (opts->expected_size >= 0 && (uint64_t)opts->expected_size != u.total) {
		rc = bh_result_set(res, BLOB_BAD_INPUT, "body size differs from the "
		    "expected size; nothing committed");
		goto out;
	}
	ids = calloc(nblocks ? nblocks : 1, sizeof *ids);
	if (ids == NULL) {
		rc = bh_result_nomem(res);
		goto out;
	}
	for (i = 0; i < nblocks; i++)
		ids[i] = idtext.ptr + (size_t)i * (idlen + 1);
	for (i = 0; i < nslots; i++)
		slot_unmap(c, &slots[i]);
	snprintf(size_str, sizeof size_str, "%llu", (unsigned long long)u.total);
	sha_hex_of(sha, sha_hex);
	commit_used = 1;
	rc = commit_block_list(c, name, ids, nblocks, opts, create_only, size_str,
	    sha_hex, &commit, res);
	if (rc == BLOB_OK)
		bh_set_field(info->etag, sizeof info->etag, commit.rh.etag,
		    strlen(commit.rh.etag));
	goto done;

single:
	if (opts->expected_size >= 0 && (uint64_t)opts->expected_size != u.total) {
		rc = bh_result_set(res, BLOB_BAD_INPUT, "body size differs from the "
		    "expected size; nothing committed");
		goto out;
	}
	snprintf(size_str, sizeof size_str, "%llu", (unsigned long long)u.total);
	sha_hex_of(sha, sha_hex);
	{
		struct blob_req *r = &slots[0].req;

		bh_req_free(r);
		bh_req_init(r, "PUT");
		r->body = slots[0].data;
		r->body_len = slots[0].len;
		r->has_body = 1;
		if (bh_req_path_blob(c, r, name) != 0 ||
		    bh_req_header(r, "x-ms-blob-type", "BlockBlob") != 0 ||
		    md5_header(r, r->body, r->body_len, slots[0].md5) != 0 ||
		    creating_headers(r, opts, create_only, 1, size_str, sha_hex) != 0) {
			rc = bh_result_nomem(res);
			goto out;
		}
		rc = bh_exec_one(c, r, res);
		if (rc == BLOB_OK)
			bh_set_field(info->etag, sizeof info->etag, r->rh.etag,
			    strlen(r->rh.etag));
	}
done:
	/* A refused create read and hashed the whole body too: the caller
	 * needs size and hash to tell its own earlier try from someone
	 * else's blob (BLOB_EXISTS_MAYBE_OURS, an idempotent resume). */
	if (rc == BLOB_OK || rc == BLOB_EXISTS || rc == BLOB_EXISTS_MAYBE_OURS) {
		info->size = u.total;
		memcpy(info->sha256, sha, sizeof sha);
		memcpy(info->sha256_hex, sha_hex, sizeof sha_hex);
	}
out:
	/* Join the hasher before any buffer it may be reading goes away. */
	if (have_hasher)
		hasher_free(&h, NULL);
	for (i = 0; i < nslots; i++) {
		if (slots[i].state == SLOT_SENDING)
			bh_exec_cancel(c, &slots[i].req);
		bh_req_free(&slots[i].req);
		slot_unmap(c, &slots[i]);
	}
	if (commit_used)
		bh_req_free(&commit);
	free(slots);
	free(ids);
	buf_free(&idtext);
	buf_free(&id);
	return rc;
}

int
blob_upload_create(struct blob_client *c, const char *name,
    const struct blob_upload_opts *opts, blob_read_fn read_fn, void *ctx,
    struct blob_upload_info *info, struct blob_result *res)
{
	return upload_common(c, name, opts, read_fn, ctx, info, res, 1);
}

int
blob_upload_overwrite(struct blob_client *c, const char *name,
    const struct blob_upload_opts *opts, blob_read_fn read_fn, void *ctx,
    struct blob_upload_info *info, struct blob_result *res)
{
	return upload_common(c, name, opts, read_fn, ctx, info, res, 0);
}

int
blob_purge_uncommitted(struct blob_client *c, const char *name,
    struct blob_result *res)
{
	static const struct blob_tag pending[] = { { "state", "pending" } };
	struct blob_upload_opts o = { NULL, pending, 1, 0 };
	int rc;

	rc = blob_put_block_list_create(c, name, NULL, 0, &o, res);
	if (rc == BLOB_EXISTS_MAYBE_OURS) {
		/* An earlier try of this very commit may have landed; the
		 * guarded delete below is still safe, because it only removes
		 * a blob tagged pending.  But a committed blob might be there:
		 * refuse and let the caller look again. */
		res->status = BLOB_EXISTS;
		return BLOB_EXISTS;
	}
	if (rc != BLOB_OK)
		return rc;
	return blob_delete(c, name, tag_state_guard(TAG_STATE_PENDING), NULL, res);
}
