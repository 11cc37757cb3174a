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
#include <stdint.h>
#include <sys/mman.h>

#include <curl/curl.h>
#include <gnutls/gnutls.h>
#include <gnutls/crypto.h>
#include <nettle/md5.h>
#include <nettle/sha2.h>

#include "base/clock.h"
#include "base/state.h"
#include "storage/blob.h"
#include "storage/blob_internal.h"
#include "storage/sign.h"

#define READ_CHUNK	((size_t)256 * 1024)
/* The hashing thread is handed a block's new bytes once this many have
 * gathered (or the block is sealed), not after every read: a FastCGI read
 * returns at most libfcgi's 8 KiB, and a hand-off per read was about three
 * futex calls per 8 KiB (111,000 for a 256 MiB create).  What is left to
 * hash when a block is sealed stays under a tenth of a millisecond. */
#define PUBLISH_MIN	((size_t)64 * 1024)
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
creating_headers(struct blob_request *r, const struct blob_upload_opts *o,
    int create_only, int type_header_is_blob, const char *size,
    const char *sha_hex)
{
	struct buf tags = BUF_INIT(8192);
	size_t i;
	int rc = -1;
	const char *ct = o->content_type && o->content_type[0] ?
	    o->content_type : "application/octet-stream";

	if (create_only && blob_request_header(r, "If-None-Match", "*") != 0)
		goto out;
	r->create_only = create_only;
	if (o->ntags > 0) {
		if (tags_header(o->tags, o->ntags, &tags) != 0 ||
		    blob_request_header(r, "x-ms-tags", buf_cstr(&tags)) != 0)
			goto out;
	}
	if (blob_request_header(r, type_header_is_blob ? "x-ms-blob-content-type" :
	    "Content-Type", ct) != 0)
		goto out;
	if (size && blob_request_header(r, "x-ms-meta-size", size) != 0)
		goto out;
	if (sha_hex && blob_request_header(r, "x-ms-meta-sha256", sha_hex) != 0)
		goto out;
	for (i = 0; i < o->nmeta; i++)
		if (blob_request_meta(r, o->meta[i].name, o->meta[i].value) != 0)
			goto out;
	rc = 0;
out:
	buf_free(&tags);
	return rc;
}

/* Content-MD5 for data[len]; known is the digest when the caller already
 * computed it on the way in. */
static int
md5_header(struct blob_request *r, const void *data, size_t len,
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
	    blob_request_header(r, "Content-MD5", buf_cstr(&b64)) != 0)
		goto out;
	rc = 0;
out:
	buf_free(&b64);
	return rc;
}

/* Set up (not start) a Put Block request for data[len]. */
static int
put_block_req(struct blob_client *c, struct blob_request *r, const char *name,
    const char *id_b64, const void *data, size_t len, const unsigned char *md5)
{
	blob_request_init(r, "PUT");
	r->body = data;
	r->body_len = len;
	r->has_body = 1;
	if (blob_request_path_blob(c, r, name) != 0 ||
	    blob_request_query(r, "comp", "block") != 0 ||
	    blob_request_query(r, "blockid", id_b64) != 0 ||
	    md5_header(r, data, len, md5) != 0)
		return -1;
	return 0;
}

int
blob_put_block(struct blob_client *c, const char *name, const char *block_id_b64,
    const void *data, size_t len, struct blob_result *res)
{
	struct blob_request r;
	int rc;

	blob_result_clear(res);
	if (!blob_name_ok(name) || block_id_b64 == NULL || block_id_b64[0] == '\0' ||
	    strlen(block_id_b64) > 88 || (len > 0 && data == NULL))
		return blob_result_set(res, BLOB_BAD_INPUT, "bad blob name or block");
	if (put_block_req(c, &r, name, block_id_b64, data, len, NULL) != 0)
		rc = blob_result_nomem(res);
	else
		rc = blob_exec_run(c, &r, res);
	blob_request_free(&r);
	return rc;
}

/*
 * The copy source of a Put Block From URL: the source blob's URL, readable
 * by the service on our behalf.  With the key, a read-only service SAS of
 * FROM_URL_SAS_S seconds; with a configured SAS, that SAS (it already
 * grants read); with Entra, the bare URL, the bearer going in
 * x-ms-copy-source-authorization instead (added by the caller).
 */
#define FROM_URL_SAS_S 900
static int
copy_source_url(struct blob_client *c, const char *source, struct buf *out,
    struct blob_result *res)
{
	struct blob_request u;
	int rc = BLOB_OK;

	if (c->keylen > 0 && c->entra == NULL)
		return blob_sas_url(c, source, "r", FROM_URL_SAS_S, NULL, NULL, out, res);
	blob_request_init(&u, "GET");
	if (blob_request_path_blob(c, &u, source) != 0 ||
	    buf_appendf(out, "%s%s%s%s", c->url_base, buf_cstr(&u.path),
	    c->sas != NULL ? "?" : "", c->sas != NULL ? c->sas : "") != BUF_OK)
		rc = blob_result_nomem(res);
	blob_request_free(&u);
	return rc;
}

/* Set up (not start) one Put Block From URL; r is initialised here and
 * needs blob_request_free whatever the result. */
static int
from_url_req(struct blob_client *c, struct blob_request *r, const char *name,
    const struct blob_from_url *it, struct blob_result *res)
{
	struct buf src = BUF_INIT(16 * 1024), bearer = BUF_INIT(20 * 1024), md5 = BUF_INIT(32);
	char range[64];
	int rc;

	blob_request_init(r, "PUT");
	if (!blob_name_ok(it->source) || it->id_b64 == NULL || it->id_b64[0] == '\0' ||
	    strlen(it->id_b64) > 88 || it->len == 0 || it->len > BLOB_FROM_URL_MAX ||
	    it->offset > UINT64_MAX - it->len) {
		rc = blob_result_set(res, BLOB_BAD_INPUT, "bad source, block or range");
		goto out;
	}
	if ((rc = copy_source_url(c, it->source, &src, res)) != BLOB_OK)
		goto out;
	if (it->source_md5 != NULL && sign_base64_encode(it->source_md5, 16, &md5) != SIGN_OK) {
		rc = blob_result_nomem(res);
		goto out;
	}
	if (c->entra != NULL && (rc = blob_entra_authorization(c, &bearer, res)) != BLOB_OK)
		goto out;
	snprintf(range, sizeof range, "bytes=%llu-%llu", (unsigned long long)it->offset,
	    (unsigned long long)(it->offset + it->len - 1));
	/* An empty PUT: the bytes come from the source, not from us. */
	r->body = "";
	r->body_len = 0;
	r->has_body = 1;
	if (blob_request_path_blob(c, r, name) != 0 ||
	    blob_request_query(r, "comp", "block") != 0 ||
	    blob_request_query(r, "blockid", it->id_b64) != 0 ||
	    blob_request_header(r, "x-ms-copy-source", buf_cstr(&src)) != 0 ||
	    blob_request_header(r, "x-ms-source-range", range) != 0 ||
	    (it->source_md5 != NULL && blob_request_header(r, "x-ms-source-content-md5", buf_cstr(&md5)) != 0) ||
	    (c->entra != NULL && blob_request_header(r,
	    "x-ms-copy-source-authorization", buf_cstr(&bearer)) != 0))
		rc = blob_result_nomem(res);
out:
	/* The source's SAS and the bearer are credentials. */
	if (src.ptr != NULL)
		explicit_bzero(src.ptr, src.len);
	if (bearer.ptr != NULL)
		explicit_bzero(bearer.ptr, bearer.len);
	buf_free(&src);
	buf_free(&bearer);
	buf_free(&md5);
	return rc;
}

int
blob_put_block_from_url(struct blob_client *c, const char *name,
    const char *block_id_b64, const char *source, uint64_t offset,
    uint64_t len, struct blob_result *res)
{
	const struct blob_from_url it = { block_id_b64, source, offset, len, NULL };

	return blob_put_blocks_from_url(c, name, &it, 1, res);
}

int
blob_put_blocks_from_url(struct blob_client *c, const char *name,
    const struct blob_from_url *items, size_t n, struct blob_result *res)
{
	struct blob_request *reqs = NULL, *done;
	size_t built = 0, running = 0, i;
	int64_t next_retry = -1;
	int rc = BLOB_OK;

	blob_result_clear(res);
	if (!blob_name_ok(name) || (n > 0 && items == NULL))
		return blob_result_set(res, BLOB_BAD_INPUT, "bad blob name or blocks");
	if (n == 0)
		return BLOB_OK;
	if ((reqs = calloc(n, sizeof *reqs)) == NULL)
		return blob_result_nomem(res);
	/* At most in_flight on the wire; after a failure nothing more starts,
	 * and what runs is let finish (a late block is harmless: its id is
	 * the caller's attempt's, and it lists only what it recorded). */
	while (built < n || running > 0) {
		while (rc == BLOB_OK && built < n && running < c->in_flight) {
			if ((rc = from_url_req(c, &reqs[built], name, &items[built], res)) != BLOB_OK) {
				built++;
				break;
			}
			if (blob_exec_start(c, &reqs[built++]) != 0) {
				rc = blob_result_set(res, BLOB_FAILED, "cannot start a transfer");
				break;
			}
			running++;
		}
		if (running == 0)
			break;
		while ((done = blob_exec_collect(c, &next_retry)) != NULL) {
			running--;
			if (done->res.status != BLOB_OK && rc == BLOB_OK) {
				*res = done->res;
				rc = res->status;
			}
		}
		if (running > 0)
			blob_exec_poll(c, next_retry, 1000);
	}
	for (i = 0; i < built; i++)
		blob_request_free(&reqs[i]);
	free(reqs);
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
    struct blob_request *r, struct blob_result *res)
{
	struct buf body = BUF_INIT((size_t)MAX_BLOCKS * 128 + 256);
	int rc;

	blob_request_init(r, "PUT");
	if (block_list_body(ids, nids, &body) != 0 ||
	    blob_request_path_blob(c, r, name) != 0 ||
	    blob_request_query(r, "comp", "blocklist") != 0 ||
	    creating_headers(r, o, create_only, 1, size, sha_hex) != 0 ||
	    blob_request_header(r, "Content-Type", "application/xml; charset=utf-8") != 0) {
		rc = blob_result_nomem(res);
		goto out;
	}
	r->body = buf_cstr(&body);
	r->body_len = body.len;
	r->has_body = 1;
	rc = blob_exec_run(c, r, res);
out:
	buf_free(&body);
	return rc;
}

int
blob_put_block_list_create(struct blob_client *c, const char *name,
    const char *const *ids, size_t nids, const struct blob_upload_opts *opts,
    struct blob_result *res)
{
	static const struct blob_upload_opts none = { NULL, NULL, 0, -1, NULL, NULL, NULL, 0 };
	struct blob_request r;
	int rc;

	blob_result_clear(res);
	if (opts == NULL)
		opts = &none;
	if (!blob_name_ok(name) || nids > MAX_BLOCKS || (nids > 0 && ids == NULL) ||
	    !blob_tags_ok(opts->tags, opts->ntags) || !blob_meta_ok(opts->meta, opts->nmeta))
		return blob_result_set(res, BLOB_BAD_INPUT, "bad blob name, ids, tags or metadata");
	rc = commit_block_list(c, name, ids, nids, opts, 1, NULL, NULL, &r, res);
	blob_request_free(&r);
	return rc;
}

int
blob_commit_blocks(struct blob_client *c, const char *name, const char *const *ids, size_t n,
    const struct blob_upload_opts *opts, struct blob_upload_info *info, struct blob_result *res)
{
	struct blob_request r;
	char size_str[32];
	int rc;

	blob_result_clear(res);
	info->etag[0] = '\0';
	if (!blob_name_ok(name) || n > MAX_BLOCKS || (n > 0 && ids == NULL) || opts == NULL ||
	    !blob_tags_ok(opts->tags, opts->ntags) || !blob_meta_ok(opts->meta, opts->nmeta) ||
	    strlen(info->sha256_hex) != 64)
		return blob_result_set(res, BLOB_BAD_INPUT, "bad blob name, ids, tags, metadata or digest");
	if (opts->before_commit && opts->before_commit(opts->commit_ctx) != 0)
		return blob_result_set(res, BLOB_ABORTED, "stopped before the commit");
	snprintf(size_str, sizeof size_str, "%llu", (unsigned long long)info->size);
	rc = commit_block_list(c, name, ids, n, opts, 1, size_str, info->sha256_hex, &r, res);
	if (rc == BLOB_OK)
		blob_copy_field(info->etag, sizeof info->etag, r.rh.etag, strlen(r.rh.etag));
	blob_request_free(&r);
	return rc;
}

/*
 * A streamed upload is a pipeline over in_flight block buffers.  The
 * caller's thread reads a block from read_fn one chunk at a time, moving
 * curl along between chunks; a hashing thread follows it chunk by chunk,
 * feeding the block's MD5 (its Content-MD5) and the body's SHA-256, blocks
 * in order, and keeps the SHA-256 state as it stands after each block; the
 * caller's thread starts the block's Put Block once the last chunk is
 * hashed.  Hashing costs about 1.1 s of CPU per 256 MiB here (nettle: MD5
 * ~370 MB/s, SHA-256 ~700 MB/s with SHA-NI); done on the thread that
 * drives curl it stalled the transfers in flight.  Hashed as the chunks
 * arrive, not once the block is whole, a block goes out a chunk's hashing
 * after its last byte came in instead of a block's: the wait that a tus
 * PATCH pays twice (its first block and its last) and a create once.
 *
 * The hashing thread reads only the bytes a slot has published (avail)
 * and the hash contexts; the caller's thread only appends past avail, and
 * publishes under hasher.mu.  A slot's digest is published under hasher.mu
 * before the thread wakes curl_multi_poll.  The thread lives for one upload
 * and is joined on every path.  If it cannot be started, chunks are hashed
 * inline.
 */
enum slot_state { SLOT_FREE, SLOT_READING, SLOT_HASHING, SLOT_SENDING, SLOT_SENT };

struct upload_slot {
	char *data;		/* bsize bytes, mapped on first use */
	size_t len;
	size_t want;		/* the block's length unless the body ends first */
	unsigned index;		/* the block's number in the body */
	unsigned char md5[16];	/* written by the hasher before it publishes */
	struct sha256_ctx sha;	/* ... and the body's SHA-256 through this block */
	enum slot_state state;	/* SENT: accepted, waiting to be reported in order */
	/* Shared with the hasher, under hasher.mu: */
	size_t avail;		/* bytes of data final and published */
	size_t hashed_len;	/* ... of which the hasher has fed these */
	int sealed;		/* avail is the block's whole length */
	int queued;		/* in the hasher's queue */
	struct blob_request req;
};

struct hasher {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thread;
	int started, stop, failed;
	struct upload_slot **queue;	/* ring of cap; FIFO keeps SHA-256 in order */
	unsigned cap, head, count;
	unsigned hashed;		/* blocks hashed so far (they go in order) */
	struct sha256_ctx sha;
	struct md5_ctx md5;
	gnutls_hash_hd_t extra;		/* the caller's, or NULL */
	CURLM *wake;
};

/* One streamed upload in flight: what its stages (upload_*) share. */
struct upload {
	struct blob_client *c;
	const char *name;
	const struct blob_upload_opts *opts;
	int create_only;
	blob_read_fn read;
	void *ctx;
	uint64_t total;
	int eof;
	struct blob_result *res;
	struct hasher h;
	int have_hasher;		/* h must be freed (even half made) */
	size_t bsize;			/* bytes of a block (the last may be short) */
	struct upload_slot *slots;	/* nslots = in_flight buffers */
	unsigned nslots;
	struct upload_slot *filling;	/* the block being read, or NULL */
	const struct blob_stage_opts *stage;	/* blob_stage_stream's, else NULL */
	struct blob_result read_err;	/* staging: read_fn failed; sent what was read */
	unsigned first;			/* staging: the index of the stream's first block */
	unsigned reported;		/* staging: blocks reported so far */
	unsigned char token[12];	/* makes this attempt's block ids unique */
	struct buf idtext;		/* nblocks ids of idlen, each NUL-ended */
	struct buf id;
	size_t idlen;
	unsigned nblocks;
	unsigned char sha[32];		/* the body's, once all is hashed */
	char size_str[32], sha_hex[65];
};

static int
hash_bytes(struct hasher *h, const char *p, size_t n)
{
	md5_update(&h->md5, n, (const uint8_t *)p);
	sha256_update(&h->sha, n, (const uint8_t *)p);
	if (h->extra != NULL && n > 0 && gnutls_hash(h->extra, p, n) < 0)
		return -1;
	return 0;
}

/* The block's every byte is fed: its digest, and the SHA-256 so far. */
static void
hash_finish(struct hasher *h, struct upload_slot *s)
{
	md5_digest(&h->md5, sizeof s->md5, s->md5);	/* also resets it for the next */
	s->sha = h->sha;
}

/* Wait (mu held) for the queue's head to have bytes to feed or to be
 * sealed; NULL once told to stop. */
static struct upload_slot *
hasher_next(struct hasher *h)
{
	struct upload_slot *s;

	for (;;) {
		if (h->stop)
			return NULL;
		if (h->count > 0) {
			s = h->queue[h->head];
			if (s->hashed_len < s->avail || s->sealed)
				return s;
		}
		pthread_cond_wait(&h->cv, &h->mu);
	}
}

static void *
hasher_main(void *arg)
{
	struct hasher *h = arg;
	struct upload_slot *s;
	size_t from, to;
	int sealed, failed;

	pthread_mutex_lock(&h->mu);
	while ((s = hasher_next(h)) != NULL) {
		from = s->hashed_len;
		to = s->avail;
		sealed = s->sealed;
		pthread_mutex_unlock(&h->mu);
		failed = hash_bytes(h, s->data + from, to - from) != 0;
		if (!failed && sealed)
			hash_finish(h, s);
		pthread_mutex_lock(&h->mu);
		s->hashed_len = to;
		if (failed) {
			h->failed = 1;
			curl_multi_wakeup(h->wake);
			break;
		}
		if (sealed) {
			s->queued = 0;
			h->head = (h->head + 1) % h->cap;
			h->count--;
			h->hashed++;
			curl_multi_wakeup(h->wake);
		}
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

/* Hash contexts and queue, the SHA-256 going on from sha (NULL: a new
 * one) and extra fed too when not NULL (borrowed); the thread itself is
 * started by hasher_start. */
static int
hasher_init(struct hasher *h, unsigned cap, CURLM *wake, const struct sha256_ctx *sha,
    gnutls_hash_hd_t extra)
{
	memset(h, 0, sizeof *h);
	h->cap = cap;
	h->wake = wake;
	h->extra = extra;
	md5_init(&h->md5);
	if (sha != NULL)
		h->sha = *sha;
	else
		sha256_init(&h->sha);
	if ((h->queue = calloc(cap, sizeof *h->queue)) == NULL)
		return -1;
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

/* s's bytes up to s->len are final (sealed: and the block ends there):
 * queue s on its first publication, in block order; hashed inline
 * without a thread. */
static void
hasher_publish(struct hasher *h, struct upload_slot *s, int sealed)
{
	if (h->started != 1) {
		if (h->failed || hash_bytes(h, s->data + s->hashed_len, s->len - s->hashed_len) != 0) {
			h->failed = 1;
			return;
		}
		s->hashed_len = s->avail = s->len;
		if (sealed) {
			hash_finish(h, s);
			h->hashed++;
		}
		return;
	}
	pthread_mutex_lock(&h->mu);
	if (!s->queued) {
		assert(h->count < h->cap);
		h->queue[(h->head + h->count) % h->cap] = s;
		h->count++;
		s->queued = 1;
	}
	s->avail = s->len;
	s->sealed = sealed;
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

/* Stop and join the thread (it finishes the chunk in hand); idempotent. */
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
	if (sha_out != NULL)
		sha256_digest(&h->sha, 32, sha_out);
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
	size_t n = s->want - s->len;
	long got;

	if (n > READ_CHUNK)
		n = READ_CHUNK;
	got = u->read(u->ctx, s->data + s->len, n);
	if (got < 0 || (size_t)got > n)
		return blob_result_set(res, BLOB_ABORTED, "the body could not be read");
	if (got == 0)
		u->eof = 1;
	s->len += (size_t)got;
	u->total += (uint64_t)got;
	return BLOB_OK;
}

/*
 * One block buffer is kept mapped between uploads when the upload that
 * used it read at most SPARE_MAX bytes: the pages a small body touched
 * stay resident (at most SPARE_MAX), the rest of the mapping costs
 * nothing, and the next upload skips an mmap, its page faults and the
 * munmap whose TLB flush reaches every core the process ran on (for a 1
 * KiB create that was a tenth of the responder's CPU, doc/performance.md).
 * A buffer a large body filled is unmapped as before.  Uploads in one
 * process run one at a time (the caller's thread maps and unmaps).
 */
#define SPARE_MAX (64 * 1024)
static struct {
	char *data;
	size_t size;
} spare;

static int
slot_take_spare(const struct upload *u, struct upload_slot *s)
{
	if (spare.data == NULL || spare.size != u->bsize)
		return 0;
	s->data = spare.data;
	spare.data = NULL;
	return 1;
}

/*
 * Block buffers are mapped, not malloc'd: glibc would serve 8 MiB from the
 * heap once one such chunk was freed (its mmap threshold adapts) and keep
 * it after the upload; munmap gives it back at once.
 *
 * A slot mapped for a block after the body's first (huge) is aligned to a
 * 2 MiB huge page and advised MADV_HUGEPAGE, when its size is a whole
 * number of those.  Such a body is longer than a block, and a block faulted
 * in 4 KiB pages is dear: about 2.3 us a page here, 1.2 ms per 2 MiB
 * against 0.12 ms for one huge page, paid again by each tus PATCH, which
 * maps its slots anew.  256 MiB in 8 MiB PATCHes took 61,000 faults, 14,500
 * with this; over 16 paired rounds bindery's CPU per upload fell by 7 % in
 * every round, and the upload took 3 % less time (median; 11 rounds of
 * 16).  Slot 0 holds the first block, maybe a whole small body, and keeps
 * small pages: a 1 KiB create touches 4 KiB, not 2 MiB.  A full block
 * touches every page either way, so the resident peak is the same.  Where
 * THP is "never" the advice does nothing; under "madvise" (Debian's
 * default) a fault may first compact memory to make a huge page, and falls
 * back to small pages when it cannot.
 */
#define HUGE_PAGE	((size_t)2 * 1024 * 1024)

static int
slot_map(const struct upload *u, struct upload_slot *s, int huge)
{
	char *p;
	size_t head;

	if (s->data != NULL || slot_take_spare(u, s))
		return 0;
	huge = huge && u->bsize % HUGE_PAGE == 0;
	p = mmap(NULL, u->bsize + (huge ? HUGE_PAGE : 0), PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	if (huge) {
		head = (size_t)(-(uintptr_t)p & (HUGE_PAGE - 1));
		if (head > 0)
			munmap(p, head);
		munmap(p + head + u->bsize, HUGE_PAGE - head);
		p += head;
		(void)madvise(p, u->bsize, MADV_HUGEPAGE);	/* advice only */
	}
	s->data = p;
	return 0;
}

static void
slot_unmap(const struct upload *u, struct upload_slot *s)
{
	if (s->data == NULL)
		return;
	if (u->total <= SPARE_MAX && spare.data == NULL) {
		spare.data = s->data;
		spare.size = u->bsize;
	} else {
		munmap(s->data, u->bsize);
	}
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
slot_of(struct upload_slot *slots, unsigned n, const struct blob_request *r)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if (&slots[i].req == r)
			return &slots[i];
	return NULL;
}

/* What every upload starts from (upload_begin makes its buffers). */
static void
upload_init(struct upload *u, struct blob_client *c, const char *name, blob_read_fn read_fn,
    void *ctx, struct blob_result *res)
{
	memset(u, 0, sizeof *u);
	u->c = c;
	u->name = name;
	u->read = read_fn;
	u->ctx = ctx;
	u->res = res;
	u->nslots = c->in_flight;
	u->bsize = c->block_size;
	blob_result_clear(&u->read_err);
	buf_init(&u->idtext, (size_t)MAX_BLOCKS * 32);
	buf_init(&u->id, 64);
}

/* The block read next (u->nblocks) is this long, unless the body ends
 * first: a staged body's lead block may be shorter than the others. */
static size_t
block_want(const struct upload *u)
{
	size_t lead = u->stage != NULL ? u->stage->lead_size : 0;

	return u->nblocks == 0 && lead > 0 && lead < u->bsize ? lead : u->bsize;
}

/* Buffers, hasher and requests for one upload; slot 0 is mapped for the
 * first block. */
static int
upload_begin(struct upload *u)
{
	unsigned i;

	u->slots = calloc(u->nslots, sizeof *u->slots);
	if (u->slots == NULL)
		return blob_result_nomem(u->res);
	for (i = 0; i < u->nslots; i++)
		blob_request_init(&u->slots[i].req, "PUT");
	u->have_hasher = 1;	/* hasher_free copes with a half-made one */
	if (hasher_init(&u->h, u->nslots, u->c->multi, u->stage ? &u->stage->sha : NULL,
	    u->stage ? u->stage->extra : NULL) != 0 || slot_map(u, &u->slots[0], 0) != 0)
		return blob_result_nomem(u->res);
	u->slots[0].want = block_want(u);
	if (u->stage != NULL)
		memcpy(u->token, u->stage->id_prefix, sizeof u->token);
	else if (gnutls_rnd(GNUTLS_RND_NONCE, u->token, sizeof u->token) < 0)
		return blob_result_nomem(u->res);
	return BLOB_OK;
}

/* The body is all read and hashed: check its size against the caller's
 * expectation before anything is committed, and spell size and SHA-256
 * for the metadata headers. */
static int
upload_seal(struct upload *u)
{
	u->have_hasher = 0;
	hasher_free(&u->h, u->sha);
	if (u->opts->expected_size >= 0 && (uint64_t)u->opts->expected_size != u->total)
		return blob_result_set(u->res, BLOB_BAD_INPUT, "body size differs from "
		    "the expected size; nothing committed");
	snprintf(u->size_str, sizeof u->size_str, "%llu", (unsigned long long)u->total);
	hex_lower(u->sha, sizeof u->sha, u->sha_hex);
	return BLOB_OK;
}

/* The caller's last word before the committing call. */
static int
upload_may_commit(struct upload *u)
{
	if (u->opts->before_commit != NULL && u->opts->before_commit(u->opts->commit_ctx) != 0)
		return blob_result_set(u->res, BLOB_ABORTED, "the caller stopped the upload "
		    "before its commit; nothing committed");
	return BLOB_OK;
}

/* The whole body is in slot 0 and fits one Put Blob.  Nothing is in
 * flight and the hasher thread was never started: hash it right here. */
static int
upload_put_single(struct upload *u, struct blob_upload_info *info)
{
	struct upload_slot *s = &u->slots[0];
	struct blob_request *r = &s->req;
	int rc;

	hasher_publish(&u->h, s, 1);
	if (u->h.failed)
		return blob_result_set(u->res, BLOB_FAILED, "hashing failed");
	if ((rc = upload_seal(u)) != BLOB_OK || (rc = upload_may_commit(u)) != BLOB_OK)
		return rc;
	blob_request_free(r);
	blob_request_init(r, "PUT");
	r->body = s->data;
	r->body_len = s->len;
	r->has_body = 1;
	if (blob_request_path_blob(u->c, r, u->name) != 0 ||
	    blob_request_header(r, "x-ms-blob-type", "BlockBlob") != 0 ||
	    md5_header(r, r->body, r->body_len, s->md5) != 0 ||
	    creating_headers(r, u->opts, u->create_only, 1, u->size_str,
	    u->sha_hex) != 0)
		return blob_result_nomem(u->res);
	rc = blob_exec_run(u->c, r, u->res);
	if (rc == BLOB_OK)
		blob_copy_field(info->etag, sizeof info->etag, r->rh.etag,
		    strlen(r->rh.etag));
	return rc;
}

/* Staging: report the accepted blocks that are next in order, freeing
 * their buffers. */
static int
upload_report(struct upload *u)
{
	const struct blob_stage_opts *o = u->stage;
	struct blob_staged b;
	struct upload_slot *s;
	unsigned i;

	for (i = 0; i < u->nslots; i++) {
		s = &u->slots[i];
		if (s->state != SLOT_SENT || s->index != u->reported)
			continue;
		b.id_b64 = u->idtext.ptr + (size_t)s->index * (u->idlen + 1);
		b.len = s->len;
		memcpy(b.md5, s->md5, sizeof b.md5);
		b.sha = &s->sha;
		if (o->accepted != NULL && o->accepted(o->ctx, &b) != 0)
			return blob_result_set(u->res, BLOB_ABORTED, "the caller stopped staging");
		s->state = SLOT_FREE;
		u->reported++;
		i = (unsigned)-1;	/* the next in order may sit in any slot */
	}
	return BLOB_OK;
}

/* A block whose transfer finished frees its buffer (staging: once it is
 * reported, in order); a failed one ends the upload with its result. */
static int
upload_collect_sent(struct upload *u, int64_t *next_retry, int *progressed)
{
	struct blob_request *done;
	struct upload_slot *s;

	while ((done = blob_exec_collect(u->c, next_retry)) != NULL) {
		if (done->res.status != BLOB_OK) {
			*u->res = done->res;
			return u->res->status;
		}
		if ((s = slot_of(u->slots, u->nslots, done)) == NULL)
			return blob_result_set(u->res, BLOB_FAILED, "lost a block transfer");
		s->state = u->stage != NULL ? SLOT_SENT : SLOT_FREE;
		*progressed = 1;
	}
	return u->stage != NULL ? upload_report(u) : BLOB_OK;
}

/* A hashed block goes out as a Put Block with its Content-MD5. */
static int
upload_send_hashed(struct upload *u, int *progressed)
{
	struct upload_slot *s;
	unsigned i, hashed;
	int failed;

	hasher_progress(&u->h, &hashed, &failed);
	if (failed)
		return blob_result_set(u->res, BLOB_FAILED, "hashing failed");
	for (i = 0; i < u->nslots; i++) {
		s = &u->slots[i];
		if (s->state != SLOT_HASHING || s->index >= hashed)
			continue;
		blob_request_free(&s->req);
		if (put_block_req(u->c, &s->req, u->name,
		    u->idtext.ptr + (size_t)s->index * (u->idlen + 1), s->data,
		    s->len, s->md5) != 0 || blob_exec_start(u->c, &s->req) != 0)
			return blob_result_nomem(u->res);
		s->state = SLOT_SENDING;
		*progressed = 1;
	}
	return BLOB_OK;
}

/* A block is read to its end: give it the next id (all ids of one length,
 * as Put Block List wants) and queue it for hashing.  An empty last block
 * only frees its buffer. */
static int
upload_block_read(struct upload *u, struct upload_slot *s)
{
	if (s->len == 0) {
		s->state = SLOT_FREE;
		return BLOB_OK;
	}
	if (u->first + u->nblocks >= MAX_BLOCKS)
		return blob_result_set(u->res, BLOB_BAD_INPUT, "body needs more "
		    "than 50000 blocks: raise block_size");
	block_id(u->token, u->first + u->nblocks, &u->id);
	if (u->id.len == 0 || (u->idlen && u->id.len != u->idlen) ||
	    buf_append(&u->idtext, u->id.ptr, u->id.len + 1) != BUF_OK)
		return blob_result_nomem(u->res);
	u->idlen = u->id.len;
	s->index = u->nblocks++;
	s->state = SLOT_HASHING;
	hasher_publish(&u->h, s, 1);
	return BLOB_OK;
}

/* One more chunk into the block being read, taking a free buffer for it if
 * need be: one chunk at a time, so curl moves between chunks, and each
 * chunk handed to the hasher as it lands. */
static int
upload_fill(struct upload *u, int *progressed)
{
	struct upload_slot *s = u->filling;
	size_t had;
	unsigned i;
	int rc;

	if (s == NULL && !u->eof) {
		for (i = 0; i < u->nslots && s == NULL; i++)
			if (u->slots[i].state == SLOT_FREE)
				s = &u->slots[i];
		if (s != NULL) {
			if (slot_map(u, s, 1) != 0)
				return blob_result_nomem(u->res);
			s->len = s->avail = s->hashed_len = 0;
			s->want = block_want(u);
			s->sealed = 0;
			s->state = SLOT_READING;
			u->filling = s;
		}
	}
	if (s != NULL && !u->eof && s->len < s->want) {
		had = s->len;
		if ((rc = upload_read_chunk(u, s, u->res)) != BLOB_OK && u->stage == NULL)
			return rc;
		if (rc != BLOB_OK) {
			/* Staging keeps what was read whole: the blocks
			 * before this one still go out and are reported. */
			u->read_err = *u->res;
			u->eof = 1;
			s->state = SLOT_FREE;
			u->filling = NULL;
			return BLOB_OK;
		}
		if (s->len > had && s->len < s->want && s->len - s->avail >= PUBLISH_MIN)
			hasher_publish(&u->h, s, 0);
		*progressed = 1;
	}
	if (s != NULL && (u->eof || s->len == s->want)) {
		if ((rc = upload_block_read(u, s)) != BLOB_OK)
			return rc;
		u->filling = NULL;
		*progressed = 1;
	}
	return BLOB_OK;
}

/* Staged upload: the pipeline described above, until the body is read and
 * every block is staged. */
static int
upload_stage_blocks(struct upload *u)
{
	unsigned i;
	int rc;

	hasher_start(&u->h);
	u->filling = &u->slots[0];
	for (;;) {
		int64_t next_retry;
		int progressed = 0, busy = 0;

		if ((rc = upload_collect_sent(u, &next_retry, &progressed)) != BLOB_OK ||
		    (rc = upload_send_hashed(u, &progressed)) != BLOB_OK ||
		    (rc = upload_fill(u, &progressed)) != BLOB_OK)
			return rc;
		for (i = 0; i < u->nslots; i++)
			busy |= u->slots[i].state == SLOT_HASHING ||
			    u->slots[i].state == SLOT_SENDING || u->slots[i].state == SLOT_SENT;
		if (u->eof && u->filling == NULL && !busy)
			break;
		/* Nothing to do until a socket, the hasher or a retry
		 * timer calls. */
		if (!progressed)
			blob_exec_poll(u->c, next_retry, 1000);
	}
	if (u->read_err.status != BLOB_OK) {
		*u->res = u->read_err;
		return u->res->status;
	}
	return BLOB_OK;
}

/* Every block is staged: Put Block List commits them, in order, as the
 * blob.  The buffers go first; the commit needs none of them. */
static int
upload_commit_blocks(struct upload *u, struct blob_upload_info *info)
{
	struct blob_request commit;
	const char **ids;
	unsigned i;
	int rc;

	if ((rc = upload_seal(u)) != BLOB_OK || (rc = upload_may_commit(u)) != BLOB_OK)
		return rc;
	ids = calloc(u->nblocks ? u->nblocks : 1, sizeof *ids);
	if (ids == NULL)
		return blob_result_nomem(u->res);
	for (i = 0; i < u->nblocks; i++)
		ids[i] = u->idtext.ptr + (size_t)i * (u->idlen + 1);
	for (i = 0; i < u->nslots; i++)
		slot_unmap(u, &u->slots[i]);
	rc = commit_block_list(u->c, u->name, ids, u->nblocks, u->opts,
	    u->create_only, u->size_str, u->sha_hex, &commit, u->res);
	if (rc == BLOB_OK)
		blob_copy_field(info->etag, sizeof info->etag, commit.rh.etag,
		    strlen(commit.rh.etag));
	blob_request_free(&commit);
	free(ids);
	return rc;
}

/* How long a failed upload waits for its blocks already on the wire. */
#define SETTLE_MS 2000

/*
 * A failed upload's other Put Blocks may already be on the wire: cut off
 * now, the service still stores a block whose bytes all arrived, and one
 * that lands after the caller's compensation has purged the staged blocks
 * leaves uncommitted blocks no registry row names.  So what is in flight
 * is let finish first, for at most SETTLE_MS (retries are not waited for:
 * a request waiting to retry is on no wire).
 */
static void
upload_settle(struct upload *u)
{
	int64_t until = clock_now_ms() + SETTLE_MS, next_retry;
	struct blob_request *done;
	struct upload_slot *s;
	unsigned i;
	int sending;

	for (;;) {
		while ((done = blob_exec_collect(u->c, &next_retry)) != NULL)
			if ((s = slot_of(u->slots, u->nslots, done)) != NULL)
				s->state = SLOT_FREE;
		sending = 0;
		for (i = 0; i < u->nslots; i++)
			sending |= u->slots[i].state == SLOT_SENDING &&
			    u->slots[i].req.state == BLOB_REQUEST_RUNNING;
		if (!sending || clock_now_ms() >= until)
			return;
		blob_exec_poll(u->c, -1, 50);
	}
}

/* Join the hasher before any buffer it may be reading goes away, let the
 * blocks on the wire land, then cancel what is left and free the rest. */
static void
upload_end(struct upload *u)
{
	unsigned i;

	if (u->have_hasher)
		hasher_free(&u->h, NULL);
	if (u->slots != NULL)
		upload_settle(u);
	for (i = 0; u->slots != NULL && i < u->nslots; i++) {
		if (u->slots[i].state == SLOT_SENDING)
			blob_exec_cancel(u->c, &u->slots[i].req);
		blob_request_free(&u->slots[i].req);
		slot_unmap(u, &u->slots[i]);
	}
	free(u->slots);
	buf_free(&u->idtext);
	buf_free(&u->id);
}

/* Read, hash and send one body: one Put Blob when the first block is the
 * whole body and fits single_put_max, else the staged pipeline and a Put
 * Block List. */
int
blob_upload_stream(struct blob_client *c, const char *name,
    const struct blob_upload_opts *opts, blob_read_fn read_fn, void *ctx,
    struct blob_upload_info *info, struct blob_result *res, int create_only)
{
	static const struct blob_upload_opts none = { NULL, NULL, 0, -1, NULL, NULL, NULL, 0 };
	struct upload u;
	int rc;

	blob_result_clear(res);
	memset(info, 0, sizeof *info);
	if (opts == NULL)
		opts = &none;
	if (!blob_name_ok(name) || read_fn == NULL || !blob_tags_ok(opts->tags, opts->ntags) ||
	    !blob_meta_ok(opts->meta, opts->nmeta))
		return blob_result_set(res, BLOB_BAD_INPUT, "bad blob name, reader, tags or metadata");
	if (blob_deadline_passed(c))
		return blob_result_set(res, BLOB_DEADLINE, "deadline passed before the call");
	upload_init(&u, c, name, read_fn, ctx, res);
	u.opts = opts;
	u.create_only = create_only;
	if ((rc = upload_begin(&u)) != BLOB_OK)
		goto out;
	/* The first block decides between one Put Blob and staged blocks;
	 * nothing is in flight yet, so it is read straight through. */
	while (!u.eof && u.slots[0].len < u.slots[0].want)
		if ((rc = upload_read_chunk(&u, &u.slots[0], res)) != BLOB_OK)
			goto out;
	if (u.eof && u.slots[0].len <= c->single_put_max)
		rc = upload_put_single(&u, info);
	else if ((rc = upload_stage_blocks(&u)) == BLOB_OK)
		rc = upload_commit_blocks(&u, info);
	/* A refused create read and hashed the whole body too: the caller
	 * needs size and hash to tell its own earlier try from someone
	 * else's blob (BLOB_EXISTS_MAYBE_OURS, an idempotent resume). */
	if (rc == BLOB_OK || rc == BLOB_EXISTS || rc == BLOB_EXISTS_MAYBE_OURS) {
		info->size = u.total;
		memcpy(info->sha256, u.sha, sizeof u.sha);
		memcpy(info->sha256_hex, u.sha_hex, sizeof u.sha_hex);
	}
out:
	upload_end(&u);
	return rc;
}

int
blob_upload_create(struct blob_client *c, const char *name,
    const struct blob_upload_opts *opts, blob_read_fn read_fn, void *ctx,
    struct blob_upload_info *info, struct blob_result *res)
{
	return blob_upload_stream(c, name, opts, read_fn, ctx, info, res, 1);
}

int
blob_stage_stream(struct blob_client *c, const char *name, const struct blob_stage_opts *opts,
    blob_read_fn read_fn, void *ctx, struct blob_result *res)
{
	struct upload u;
	int rc;

	blob_result_clear(res);
	if (!blob_name_ok(name) || read_fn == NULL || opts == NULL)
		return blob_result_set(res, BLOB_BAD_INPUT, "bad blob name, reader or options");
	if (blob_deadline_passed(c))
		return blob_result_set(res, BLOB_DEADLINE, "deadline passed before the call");
	upload_init(&u, c, name, read_fn, ctx, res);
	u.stage = opts;
	u.first = opts->first_index;
	if (opts->block_size > 0 && opts->block_size < c->block_size)
		u.bsize = opts->block_size;
	if ((rc = upload_begin(&u)) == BLOB_OK)
		rc = upload_stage_blocks(&u);
	upload_end(&u);
	return rc;
}

int
blob_purge_uncommitted(struct blob_client *c, const char *name,
    struct blob_result *res)
{
	const struct blob_tag pending[] = { { TAG_STATE_KEY, tag_state_name(TAG_STATE_PENDING) } };
	struct blob_upload_opts o = { NULL, pending, 1, 0, NULL, NULL, NULL, 0 };
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
