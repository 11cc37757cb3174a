/* direct.c - see direct.h and DESIGN.md ("Direct uploads", "Leases", "Reads are conditional"). */
#include <string.h>
#include <time.h>

#include <nettle/sha2.h>

#include "base/failpoint.h"
#include "base/log.h"
#include "base/rand.h"
#include "protocol/direct.h"
#include "protocol/protocol_internal.h"
#include "registry/direct_db.h"

/* ---- create ---------------------------------------------------------------- */

/* The lease of a direct intent: it ends only after its SAS could no longer
 * create the blob (expiry + skew) and a sweep_cutoff more, so a finalize
 * under way when the SAS expires is not swept from under it. */
static unsigned
direct_lease_seconds(const struct services *s)
{
	return s->cfg->direct_sas_lifetime + DIRECT_SAS_SKEW_S + s->cfg->sweep_cutoff;
}

/* Sign the create-only SAS of blob_name, expiring now + direct_sas_lifetime. */
static enum proto_result
grant_sas(struct services *s, const char *blob_name, int64_t now, struct buf *url, struct direct_grant *out)
{
	struct blob_result r;

	if (blob_sas_url_at(s->blob, blob_name, "c", now, (int64_t)s->cfg->direct_sas_lifetime, NULL, NULL,
			    url, &r) != BLOB_OK) {
		log_blob("direct SAS", blob_name, &r);
		return PROTO_FAILED;
	}
	out->expires_unix = now + (int64_t)s->cfg->direct_sas_lifetime;
	return PROTO_OK;
}

/*
 * A retry with the key of an earlier create: the same intent, if the key
 * started a direct upload of this name and type.  A pending one gets a
 * fresh SAS and, first, a lease that outlives it (fenced by the intent's
 * holder: a sweeper that claimed it since wins).  A finalized one gets a
 * SAS too, which can create nothing at a name that holds a blob.
 */
static enum proto_result
replay(struct services *s, const struct direct_request *req, const struct idem_row *k, struct buf *url,
       struct direct_grant *out)
{
	int64_t now = (int64_t)time(NULL);
	struct direct_row row;
	struct lease l;
	enum db_err e;

	if (!span_eq_cstr(req->name, k->doc_name) ||
	    (k->content_type[0] != '\0' && strcmp(k->content_type, req->content_type) != 0))
		return PROTO_IDEM_MISMATCH;
	if ((e = direct_get(s->db, k->blob_name, &row)) != DB_OK)
		return e == DB_NOT_FOUND ? PROTO_IDEM_MISMATCH : from_db(e);
	if (row.route != UPLOAD_VIA_DIRECT || row.declared_size != req->size)
		return PROTO_IDEM_MISMATCH;
	if (row.state == REGISTRY_PENDING) {
		l.holder = row.holder;
		l.seconds = direct_lease_seconds(s);
		if ((e = blobs_renew_held(s->db, row.blob_name, &l)) != DB_OK)
			return e == DB_CONFLICT ? PROTO_UNAVAILABLE : from_db(e);
	} else if (row.state != REGISTRY_COMMITTED) {
		return PROTO_UNAVAILABLE;	/* the sweeper has it */
	}
	out->doc_id = row.document_id;
	out->replayed = 1;
	return grant_sas(s, row.blob_name, now, url, out);
}

/* The name or the key was taken: whose? */
static enum proto_result
create_refused(struct services *s, const struct direct_request *req, struct buf *url, struct direct_grant *out,
	       int *again)
{
	struct idem_row k;
	enum db_err e;

	*again = 0;
	if (req->idem_key == NULL)
		return PROTO_NAME_TAKEN;
	e = idem_get(s->db, req->owner, req->idem_key, s->cfg->idempotency_ttl, &k);
	if (e == DB_NOT_FOUND)
		return PROTO_NAME_TAKEN;
	if (e != DB_OK)
		return from_db(e);
	if (k.expired) {
		/* A finished key past its TTL is forgotten: try once more as new. */
		if ((e = idem_drop_expired(s->db, req->owner, req->idem_key, s->cfg->idempotency_ttl)) != DB_OK)
			return from_db(e);
		*again = 1;
		return PROTO_OK;
	}
	return replay(s, req, &k, url, out);
}

enum proto_result
direct_create(struct services *s, const struct direct_request *req, struct buf *upload_url,
	      struct direct_grant *out)
{
	char blob_name[DOC_BLOB_NAME_MAX], holder[DOC_HOLDER_MAX];
	struct direct_new n;
	enum proto_result pr;
	int64_t now;
	enum db_err e;
	int tries, again = 1;

	memset(out, 0, sizeof *out);
	start_deadline(s);
	for (tries = 0; tries < 2 && again; tries++) {
		if (proto_new_blob_name(s->cfg, blob_name, sizeof blob_name) != 0 ||
		    rand_hex(holder, sizeof holder, 16) != 0)
			return PROTO_FAILED;
		memset(&n, 0, sizeof n);
		n.name = req->name;
		n.owner = req->owner;
		n.content_type = req->content_type;
		n.blob_name = blob_name;
		n.size = req->size;
		n.sha256 = req->sha256;
		n.idem_key = req->idem_key;
		n.lease.holder = holder;
		n.lease.seconds = direct_lease_seconds(s);
		/* The clock is read before the lease is written: the SAS
		 * can only expire earlier than the lease assumes. */
		now = (int64_t)time(NULL);
		e = direct_create_intent(s->db, &n, &out->doc_id);
		if (e == DB_OK)
			break;
		if (e != DB_DUPLICATE)
			return from_db(e);
		if ((pr = create_refused(s, req, upload_url, out, &again)) != PROTO_OK || !again)
			return pr;
	}
	if (e != DB_OK)
		return PROTO_NAME_TAKEN;
	if (FAILPOINT("direct.after_intent"))
		return PROTO_UNAVAILABLE;
	return grant_sas(s, blob_name, now, upload_url, out);
}

enum proto_result
direct_find_pending_of(struct services *s, struct span name, const char *owner, uint64_t *doc_id)
{
	return from_db(direct_find_pending(s->db, name, owner, doc_id));
}

/* ---- finalize -------------------------------------------------------------- */

struct hashing {
	struct sha256_ctx sha;
	uint64_t bytes;
};

static int
hash_data(void *ctx, const char *data, size_t len)
{
	struct hashing *h = ctx;

	sha256_update(&h->sha, len, (const uint8_t *)data);
	h->bytes += len;
	return 0;
}

/*
 * The bytes at the name, read under If-Match on the ETag just read (so
 * what is hashed is what that ETag names), against what the client
 * declared.  sha256_hex receives their digest.
 */
static enum proto_result
verify_bytes(struct services *s, const struct direct_row *row, const struct blob_props *p, char *sha256_hex)
{
	unsigned char digest[SHA256_DIGEST_SIZE];
	struct hashing h;
	struct blob_result r;

	if (p->size != row->declared_size)
		return PROTO_SIZE_MISMATCH;
	memset(&h, 0, sizeof h);
	sha256_init(&h.sha);
	if (blob_get(s->blob, row->blob_name, 0, 0, p->etag, NULL, hash_data, &h, &r) != BLOB_OK) {
		log_blob("direct finalize read", row->blob_name, &r);
		/* Another ETag now: the bytes changed under the read. */
		return r.status == BLOB_CONDITION_NOT_MET ? PROTO_UNAVAILABLE : from_blob(&r);
	}
	if (h.bytes != p->size)
		return PROTO_UNAVAILABLE;
	sha256_digest(&h.sha, sizeof digest, digest);
	hex_lower(digest, sizeof digest, sha256_hex);
	if (row->declared_sha256[0] != '\0' && strcmp(row->declared_sha256, sha256_hex) != 0)
		return PROTO_DIGEST_MISMATCH;
	return PROTO_OK;
}

/*
 * The tag is the server's, whatever the client sent with its Put Blob:
 * Set Blob Tags replaces the whole set with state=committed.  Unguarded on
 * purpose (the client chose the tags there now); the blob it lands on is
 * the one verified, since the SAS cannot overwrite and tags leave the ETag
 * as it is.
 */
static enum proto_result
tag_committed(struct services *s, const char *blob_name)
{
	const struct blob_tag committed[] = { { TAG_STATE_KEY, tag_state_name(TAG_STATE_COMMITTED) } };
	struct blob_result r;

	if (blob_set_tags(s->blob, blob_name, committed, 1, NULL, &r) != BLOB_OK) {
		log_blob("direct tag flip", blob_name, &r);
		return from_blob(&r) == PROTO_OK ? PROTO_FAILED : from_blob(&r);
	}
	return PROTO_OK;
}

/* A direct document of owner's, and its registry row. */
static enum proto_result
load_intent(struct services *s, uint64_t doc_id, const char *owner, struct doc *d, struct direct_row *row)
{
	enum db_err e;

	if ((e = docs_get(s->db, doc_id, d)) != DB_OK)
		return from_db(e);
	/* Another owner's document is as absent as none (no probing of ids). */
	if (strcmp(d->owner, owner) != 0)
		return PROTO_NOT_FOUND;
	if ((e = direct_get(s->db, d->blob_name, row)) != DB_OK)
		return from_db(e);
	return row->route == UPLOAD_VIA_DIRECT && row->document_id == doc_id ? PROTO_OK : PROTO_NOT_FOUND;
}

/* Record, flip, mark ready: the steps after the bytes proved themselves. */
static enum proto_result
commit_direct(struct services *s, const struct direct_row *row, const struct blob_props *p,
	      const char *sha256_hex)
{
	enum db_err e;
	enum proto_result pr;

	e = direct_record(s->db, row->blob_name, row->holder, p->etag, p->size, sha256_hex);
	if (e != DB_OK)
		return e == DB_CONFLICT ? PROTO_UNAVAILABLE : from_db(e);
	if (FAILPOINT("direct.after_record"))
		return PROTO_UNAVAILABLE;
	if ((pr = tag_committed(s, row->blob_name)) != PROTO_OK)
		return pr;
	if (FAILPOINT("direct.after_tag"))
		return PROTO_UNAVAILABLE;
	/* The request that made the intent may have carried a key. */
	e = docs_mark_ready(s->db, row->document_id, row->blob_name, row->holder, p->size, sha256_hex,
			    p->etag, READY_ALL);
	return e == DB_CONFLICT ? PROTO_UNAVAILABLE : from_db(e);
}

enum proto_result
direct_finalize(struct services *s, uint64_t doc_id, const char *owner, struct doc *out)
{
	char sha256_hex[DOC_SHA256_HEX];
	struct direct_row row;
	struct blob_props p;
	struct blob_result r;
	enum proto_result pr;
	enum db_err e;

	start_deadline(s);
	if ((pr = load_intent(s, doc_id, owner, out, &row)) != PROTO_OK)
		return pr;
	if (out->status == DOC_STATUS_READY)
		return PROTO_OK;	/* finalized before: the same answer */
	if (row.state != REGISTRY_PENDING)
		return PROTO_UNAVAILABLE;	/* the sweeper holds it */
	if (blob_get_properties(s->blob, row.blob_name, &p, &r) != BLOB_OK) {
		if (r.status == BLOB_NOT_FOUND)
			return PROTO_NOT_UPLOADED;
		log_blob("direct finalize properties", row.blob_name, &r);
		return from_blob(&r);
	}
	if ((pr = verify_bytes(s, &row, &p, sha256_hex)) != PROTO_OK)
		return pr;
	pr = commit_direct(s, &row, &p, sha256_hex);
	/* A finalize that lost a race with another finalize of the same
	 * intent answers as that one did. */
	if ((e = docs_get(s->db, doc_id, out)) != DB_OK)
		return pr == PROTO_OK ? from_db(e) : pr;
	return out->status == DOC_STATUS_READY ? PROTO_OK : (pr == PROTO_OK ? PROTO_FAILED : pr);
}
