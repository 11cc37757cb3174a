/* tus_concat.c - see tus_concat.h and doc/design.md ("Resumable uploads: concatenation"). */
#include <string.h>

#include <nettle/md5.h>
#include <nettle/sha2.h>

#include "base/alloc.h"
#include "base/failpoint.h"
#include "base/log.h"
#include "base/rand.h"
#include "base/sha256_state.h"
#include "protocol/tus_concat.h"
#include "protocol/tus_internal.h"
#include "registry/concat_db.h"
#include "storage/sign.h"

/* One Put Block From URL copies at most this much: few calls for a large
 * partial, well below the service's 4000 MiB, and each call within a
 * request_deadline on a slow account. */
#define CONCAT_BLOCK ((uint64_t)64 << 20)
#define MAX_BLOCKS 50000u

/* A final at work: its partials as read, the MD5 of each range it copies,
 * and the blocks it staged. */
struct final_run {
	struct patch_run p;
	const struct tus_final *req;
	struct upload_row *parts;	/* req->n of them, in order */
	unsigned char (*md5)[16];	/* one per range, in copy order */
	size_t nranges;
	struct upload_block *blocks;
	size_t nblocks, cap;
};

/* How many CONCAT_BLOCK ranges a partial of len bytes is copied in. */
static size_t
ranges_of(uint64_t len)
{
	return (size_t)(len / CONCAT_BLOCK + (len % CONCAT_BLOCK != 0));
}

/* Read each partial and check it may be claimed by the caller; *final_id
 * receives the final that already claimed them all ("" when none has). */
static enum proto_result
read_partials(struct final_run *f, char *final_id, size_t final_len, uint64_t *length)
{
	struct services *s = f->p.s;
	enum proto_result pr;
	size_t i, claimed = 0;

	*length = 0;
	final_id[0] = '\0';
	for (i = 0; i < f->req->n; i++) {
		struct upload_row *u = &f->parts[i];

		if ((pr = tus_read_upload(s, f->req->owner, f->req->ids[i], u)) != PROTO_OK)
			return pr;
		if (u->purpose != PURPOSE_PARTIAL)
			return PROTO_NOT_PARTIAL;
		if (u->state != REGISTRY_PENDING)
			return PROTO_NOT_FOUND;
		if (u->partial_etag[0] == '\0')
			return PROTO_PARTIAL_INCOMPLETE;
		if (u->final_id[0]) {
			if (claimed > 0 && strcmp(final_id, u->final_id) != 0)
				return PROTO_PARTIAL_CLAIMED;
			if (copy_cstr(final_id, final_len, u->final_id) != 0)
				return PROTO_FAILED;
			claimed++;
		}
		if (u->length > s->cfg->max_upload - *length)
			return PROTO_TOO_LARGE;
		*length += u->length;
	}
	/* Some claimed and some not: not one final's partials. */
	return claimed == 0 || claimed == f->req->n ? PROTO_OK : PROTO_PARTIAL_CLAIMED;
}

/* The ids in order, space-separated: the final's record of what it named. */
static int
partials_text(const struct tus_final *req, char *out, size_t outlen)
{
	struct buf b = BUF_INIT(UPLOAD_PARTIALS_MAX - 1);
	size_t i;
	int rc = -1;

	for (i = 0; i < req->n; i++)
		if (buf_appendf(&b, "%s%s", i ? " " : "", req->ids[i]) != BUF_OK)
			goto out;
	rc = copy_cstr(out, outlen, buf_cstr(&b));
out:
	buf_free(&b);
	return rc;
}

/* The final's intent and the claim of its partials; *id receives its upload id. */
static enum proto_result
write_intent(struct final_run *f, const char *partials, uint64_t length, char *id)
{
	struct services *s = f->p.s;
	char blob_name[DOC_BLOB_NAME_MAX], hash[SHA256_STATE_TEXT_MAX];
	struct upload_new u = { id, blob_name, f->req->owner, length, f->req->content_type, f->req->name,
				0, 0, hash, s->cfg->upload_expiry };
	const char **ids = NULL, **names = NULL;
	struct concat_final_new fn;
	struct sha256_ctx ctx;
	uint64_t doc_id = 0;
	enum proto_result pr = PROTO_FAILED;
	enum db_err e;
	size_t i;

	sha256_init(&ctx);
	if (rand_hex(id, UPLOAD_ID_MAX, 16) != 0 || proto_new_blob_name(s->cfg, blob_name, sizeof blob_name) != 0 ||
	    sha256_state_save(&ctx, hash, sizeof hash) != 0)
		goto out;
	ids = alloc_calloc(f->req->n, sizeof *ids);
	names = alloc_calloc(f->req->n, sizeof *names);
	if (ids == NULL || names == NULL)
		goto out;
	for (i = 0; i < f->req->n; i++) {
		ids[i] = f->parts[i].id;
		names[i] = f->parts[i].blob_name;
	}
	fn = (struct concat_final_new){ &u, partials, ids, names, f->req->n, tus_takeover_ms(s->cfg) };
	e = concat_db_final_intent(s->db, &fn, &doc_id);
	if (e == DB_DUPLICATE)
		pr = PROTO_NAME_TAKEN;
	else if (e == DB_CONFLICT)
		pr = PROTO_PARTIAL_CLAIMED;	/* another final took one meanwhile */
	else
		pr = proto_from_db(e);
out:
	alloc_free(ids);
	alloc_free(names);
	return pr;
}

/* A partial as it is read back: the whole's SHA-256 (NULL for the first
 * partial, whose bytes the recorded state already holds) and the MD5 of
 * each CONCAT_BLOCK range, into md5[0 ..]. */
struct readback {
	struct sha256_ctx *sha;
	struct md5_ctx md5;
	unsigned char (*out)[16];	/* ranges_of(length) digests */
	uint64_t off;			/* bytes of the partial read so far */
	uint64_t length;		/* its recorded length: no more may come */
};

static int
readback_data(void *ctx, const char *data, size_t len)
{
	struct readback *rb = ctx;
	uint64_t room;
	size_t n;

	if (len > rb->length - rb->off)
		return -1;	/* not the blob its commit recorded; out[] has no room */
	if (rb->sha != NULL)
		sha256_update(rb->sha, len, (const uint8_t *)data);
	while (len > 0) {
		room = CONCAT_BLOCK - rb->off % CONCAT_BLOCK;
		n = len < room ? len : (size_t)room;
		md5_update(&rb->md5, n, (const uint8_t *)data);
		rb->off += n;
		data += n;
		len -= n;
		if (rb->off % CONCAT_BLOCK == 0)	/* a range ends: md5_digest starts the next */
			md5_digest(&rb->md5, 16, rb->out[rb->off / CONCAT_BLOCK - 1]);
	}
	return 0;
}

/*
 * What the copies and the committing call need from the partials' bytes,
 * read back once from storage (pinned to the ETags their commits
 * answered), in bounded memory: the whole's SHA-256, which the committing
 * call stamps (SHA-256 cannot join digests of parts, but the first
 * partial's recorded state is exactly the state after its bytes, so it
 * is hashed from the second on), and the MD5 of every range, which each
 * Put Block From URL carries: storage then checks that what it copied is
 * what was hashed, and Azurite skips its CRC64 of every copied byte,
 * which costs more than this read.
 */
static enum proto_result
read_back(struct final_run *f)
{
	struct patch_run *p = &f->p;
	struct readback rb;
	struct blob_result r;
	size_t i, k = 0;

	if (sha256_state_load(span_from_cstr(f->parts[0].hash_state), &p->sha) != 0)
		return PROTO_FAILED;
	for (i = 0; i < f->req->n; i++)
		f->nranges += ranges_of(f->parts[i].length);
	if (f->nranges > MAX_BLOCKS)
		return PROTO_CHUNK_TOO_SMALL;
	if (f->nranges > 0 && (f->md5 = alloc_calloc(f->nranges, sizeof *f->md5)) == NULL)
		return PROTO_FAILED;
	for (i = 0; i < f->req->n; i++) {
		const struct upload_row *u = &f->parts[i];

		if (u->length == 0)
			continue;
		memset(&rb, 0, sizeof rb);
		rb.sha = i == 0 ? NULL : &p->sha;
		rb.out = f->md5 + k;
		rb.length = u->length;
		md5_init(&rb.md5);
		proto_start_deadline(p->s);
		if (blob_get(p->s->blob, u->blob_name, 0, 0, u->partial_etag, NULL, readback_data, &rb, &r) !=
		    BLOB_OK) {
			blob_log_failure("read of a partial upload", u->blob_name, &r);
			return proto_from_blob(&r) == PROTO_OK ? PROTO_FAILED : proto_from_blob(&r);
		}
		if (rb.off != u->length) {
			log_error("partial upload %s: read back %llu bytes of %llu", u->id,
				  (unsigned long long)rb.off, (unsigned long long)u->length);
			return PROTO_FAILED;
		}
		if (rb.off % CONCAT_BLOCK != 0)		/* the last, shorter range */
			md5_digest(&rb.md5, 16, rb.out[rb.off / CONCAT_BLOCK]);
		k += ranges_of(u->length);
		if (tus_renew(p) != 0)
			return PROTO_UNAVAILABLE;
	}
	return PROTO_OK;
}

/* The block id of index i of this attempt, into b. */
static int
block_id(const struct patch_run *p, uint32_t i, struct upload_block *b)
{
	unsigned char raw[16];
	struct buf b64 = BUF_INIT(UPLOAD_BLOCK_ID_MAX - 1);
	int rc = -1;

	if (tus_block_id_prefix(p->hi.holder, raw) != 0)
		goto out;
	raw[12] = (unsigned char)(i >> 24);
	raw[13] = (unsigned char)(i >> 16);
	raw[14] = (unsigned char)(i >> 8);
	raw[15] = (unsigned char)i;
	if (sign_base64_encode(raw, sizeof raw, &b64) == SIGN_OK && copy_cstr(b->id, sizeof b->id, buf_cstr(&b64)) == 0)
		rc = 0;
out:
	buf_free(&b64);
	return rc;
}

static enum proto_result
add_block(struct final_run *f, uint64_t size, struct upload_block **out)
{
	struct upload_block *more;
	size_t cap;

	if (f->nblocks == MAX_BLOCKS)
		return PROTO_CHUNK_TOO_SMALL;
	if (f->nblocks == f->cap) {
		cap = f->cap ? 2 * f->cap : 16;
		if ((more = alloc_realloc(f->blocks, cap * sizeof *more)) == NULL)
			return PROTO_FAILED;
		f->blocks = more;
		f->cap = cap;
	}
	*out = &f->blocks[f->nblocks++];
	memset(*out, 0, sizeof **out);
	(*out)->size = size;	/* md5 "": storage copied the bytes, none travelled */
	return block_id(&f->p, (uint32_t)(f->nblocks - 1), *out) == 0 ? PROTO_OK : PROTO_FAILED;
}

/* Stage items[n] (blocks of the final, ranges of partials) at once, at
 * most blocks_in_flight on the wire, then renew the final's hold and its
 * partials'.  A crash after a group is the crash matrix's mid-assembly. */
static enum proto_result
stage_group(struct final_run *f, const struct blob_from_url *items, size_t n)
{
	struct patch_run *p = &f->p;
	struct blob_result r;

	proto_start_deadline(p->s);
	if (blob_put_blocks_from_url(p->s->blob, p->u.blob_name, items, n, &r) != BLOB_OK) {
		blob_log_failure("put block from url", p->u.blob_name, &r);
		return proto_from_blob(&r) == PROTO_OK ? PROTO_FAILED : proto_from_blob(&r);
	}
	if (FAILPOINT("tus.concat_mid_assembly"))
		return PROTO_UNAVAILABLE;
	if (tus_renew(p) != 0 || concat_db_hold(p->s->db, p->u.id, p->s->cfg->upload_expiry) != DB_OK)
		return PROTO_UNAVAILABLE;
	return PROTO_OK;
}

/*
 * The final's blob as uncommitted blocks, each a range of a partial's
 * committed blob copied by storage (Put Block From URL, blocks_in_flight
 * at a time, each group within a request_deadline of its own), then
 * recorded at once with the whole's hash state: every byte recorded, as
 * after an upload's last PATCH.  The partials' leases follow the final's.
 */
static enum proto_result
assemble(struct final_run *f)
{
	struct patch_run *p = &f->p;
	unsigned group = p->s->cfg->blocks_in_flight ? p->s->cfg->blocks_in_flight : 1;
	struct blob_from_url *items = NULL;
	struct upload_block *b;
	enum proto_result pr;
	uint64_t off, len, total = 0;
	size_t i, n = 0, first = 0, range = 0;

	if ((pr = read_back(f)) != PROTO_OK)
		return pr;
	if ((items = alloc_calloc(group, sizeof *items)) == NULL)
		return PROTO_FAILED;
	for (i = 0; i < f->req->n; i++) {
		const struct upload_row *u = &f->parts[i];

		for (off = 0; off < u->length; off += len) {
			len = u->length - off < CONCAT_BLOCK ? u->length - off : CONCAT_BLOCK;
			if ((pr = add_block(f, len, &b)) != PROTO_OK)
				goto out;
			items[n++] = (struct blob_from_url){ NULL, u->blob_name, off, len, f->md5[range++] };
			total += len;
			if (n < group)
				continue;
			/* Ids only now: add_block may have moved the blocks. */
			for (n = 0; n < group; n++)
				items[n].id_b64 = f->blocks[first + n].id;
			if ((pr = stage_group(f, items, n)) != PROTO_OK)
				goto out;
			first += n;
			n = 0;
		}
	}
	if (n > 0) {
		size_t k;

		for (k = 0; k < n; k++)
			items[k].id_b64 = f->blocks[first + k].id;
		if ((pr = stage_group(f, items, n)) != PROTO_OK)
			goto out;
	}
	pr = f->nblocks == 0 ? PROTO_OK	/* no bytes at all: an empty block list commits */
			     : tus_record(p, f->blocks, f->nblocks, total, 1);
out:
	alloc_free(items);
	return pr;
}

/*
 * The final is ready: its partials' blobs go, each only while it is the
 * blob their commit answered (If-Match) and still tagged pending, and
 * their rows are marked consumed.  Best effort: what is left, the sweeper
 * deletes once the partial's lease ends (tagged pending, no document).
 */
static void
consume_partials(struct final_run *f, const char *final_id)
{
	struct services *s = f->p.s;
	struct blob_result r;
	enum db_err e;
	size_t i;

	for (i = 0; i < f->req->n; i++) {
		const struct upload_row *u = &f->parts[i];

		if (u->consumed)
			continue;
		proto_start_deadline(s);
		if (blob_delete(s->blob, u->blob_name, tag_state_guard(TAG_STATE_PENDING), u->partial_etag, &r) != 0 &&
		    r.status != BLOB_NOT_FOUND) {
			blob_log_failure("delete of a consumed partial upload (left for the sweeper)", u->blob_name,
					 &r);
			continue;
		}
		if ((e = concat_db_consume(s->db, u->id, u->blob_name, final_id)) != DB_OK)
			log_warn("partial upload %s: consumed, not marked (%s)", u->id, db_err_name(e));
	}
}

/* Under the final's hold: what is not done yet, then the steps of a finish. */
static enum proto_result
complete(struct final_run *f)
{
	struct patch_run *p = &f->p;
	char id[UPLOAD_ID_MAX];
	enum proto_result pr;

	if (FAILPOINT("tus.concat_after_take"))
		return PROTO_UNAVAILABLE;
	/* Read again under the hold: an earlier attempt may have recorded.
	 * (The read clears p->u first: the id is copied out of it.) */
	memcpy(id, p->u.id, sizeof id);
	if ((pr = tus_read_upload(p->s, f->req->owner, id, &p->u)) != PROTO_OK)
		return pr;
	if (p->u.state == REGISTRY_COMMITTED)
		return PROTO_OK;
	if (p->u.recorded < p->u.length || p->u.length == 0) {
		if (p->u.nblocks != 0)
			return PROTO_FAILED;	/* a record is all or nothing */
		/* A repeated final may come after its partials' leases ran out:
		 * hold them again before reading them. */
		if (concat_db_hold(p->s->db, p->u.id, p->s->cfg->upload_expiry) != DB_OK)
			return PROTO_UNAVAILABLE;
		if ((pr = assemble(f)) != PROTO_OK)
			return pr;
	} else if (sha256_state_load(span_from_cstr(p->u.hash_state), &p->sha) != 0) {
		return PROTO_FAILED;
	}
	return tus_finish(p);
}

/* The final id (written now or by an earlier request): take it and finish it. */
static enum proto_result
run_final(struct final_run *f, const char *id)
{
	struct patch_run *p = &f->p;
	enum proto_result pr;

	if ((pr = tus_read_upload(p->s, f->req->owner, id, &p->u)) != PROTO_OK)
		return pr;
	if (p->u.state == REGISTRY_COMMITTED) {
		consume_partials(f, id);	/* a repeat: what the first left */
		return PROTO_OK;
	}
	if ((pr = tus_take(p)) != PROTO_OK)
		return pr;
	pr = complete(f);
	if (pr == PROTO_OK) {
		consume_partials(f, id);
		return PROTO_OK;
	}
	if (!p->lost && uploads_release(p->s->db, p->u.blob_name, p->hi.holder) != DB_OK)
		log_warn("final upload %s stays held until its holder's lease lapses", id);
	return pr;
}

enum proto_result
tus_concat_final(struct services *s, const struct tus_final *req, struct tus_state *out)
{
	char claimed[UPLOAD_ID_MAX], id[UPLOAD_ID_MAX], partials[UPLOAD_PARTIALS_MAX];
	struct upload_row *existing = NULL;
	struct final_run f;
	uint64_t length;
	enum proto_result pr;

	memset(out, 0, sizeof *out);
	memset(&f, 0, sizeof f);
	f.p.s = s;
	f.req = req;
	if (req->n == 0 || req->n > UPLOAD_CONCAT_MAX)
		return PROTO_NOT_PARTIAL;
	proto_start_deadline(s);
	if ((f.parts = alloc_calloc(req->n, sizeof *f.parts)) == NULL ||
	    (existing = alloc_calloc(1, sizeof *existing)) == NULL || partials_text(req, partials, sizeof partials) != 0) {
		pr = PROTO_FAILED;
		goto out;
	}
	if ((pr = read_partials(&f, claimed, sizeof claimed, &length)) != PROTO_OK)
		goto out;
	if (claimed[0]) {
		/* Claimed already: by this same final (a repeat) or by another. */
		if (tus_read_upload(s, req->owner, claimed, existing) != PROTO_OK ||
		    strcmp(existing->partials, partials) != 0) {
			pr = PROTO_PARTIAL_CLAIMED;
			goto out;
		}
		if (copy_cstr(id, sizeof id, claimed) != 0) {
			pr = PROTO_FAILED;
			goto out;
		}
	} else if ((pr = write_intent(&f, partials, length, id)) != PROTO_OK) {
		goto out;
	} else if (FAILPOINT("tus.concat_after_claim")) {
		pr = PROTO_UNAVAILABLE;
		goto out;
	}
	pr = run_final(&f, id);
	out->retry_after = f.p.busy_retry;
	if (pr == PROTO_OK && tus_read_upload(s, req->owner, id, &f.p.u) == PROTO_OK)
		tus_state_of(&f.p.u, out);
	else if (pr == PROTO_OK)
		pr = PROTO_UNAVAILABLE;
out:
	alloc_free(f.parts);
	alloc_free(f.md5);
	alloc_free(f.blocks);
	alloc_free(existing);
	blob_client_set_deadline(s->blob, 0);
	return pr;
}
