/* direct.c - see direct.h and doc/design.md ("Direct uploads", "Leases", "Conditional reads"). */
#include <string.h>
#include <time.h>

#include <nettle/md5.h>
#include <nettle/sha2.h>

#include "base/base64.h"
#include "base/counters.h"
#include "base/failpoint.h"
#include "base/log.h"
#include "base/rand.h"
#include "protocol/admission.h"
#include "protocol/direct.h"
#include "protocol/protocol_internal.h"
#include "protocol/stamp.h"
#include "registry/direct_db.h"
#include "registry/quota_db.h"
#include "registry/docs_db.h"
#include "registry/idem_db.h"
#include "storage/sign.h"

/* ---- create ---------------------------------------------------------------- */

/* The lease of a direct intent: it ends only after its SAS could no longer
 * create the blob (expiry + skew) and a sweep_cutoff more, so a finalize
 * under way when the SAS expires is not swept from under it. */
static unsigned
direct_lease_seconds(const struct services *s)
{
	return s->cfg->direct_sas_lifetime + DIRECT_SAS_SKEW_S + s->cfg->sweep_cutoff;
}

/* A grant signed now: recorded with the intent before it is handed out. */
static struct direct_sas_grant
grant_now(const struct services *s)
{
	struct direct_sas_grant g;

	g.signed_at = (int64_t)time(NULL);
	g.expires = g.signed_at + (int64_t)s->cfg->direct_sas_lifetime;
	return g;
}

/*
 * The create-only SAS URL of a recorded grant.  Signing is deterministic:
 * the same grant gives the same URL, so a replay answers with the one
 * handed out before, never a new one.
 */
static enum proto_result
sign_grant(struct services *s, const char *blob_name, const struct direct_sas_grant *g, struct buf *url,
	   struct direct_grant *out)
{
	struct blob_result r;

	if (blob_sas_url_at(s->blob, blob_name, "c", g->signed_at, g->expires - g->signed_at, NULL, NULL,
			    url, &r) != BLOB_OK) {
		blob_log_failure("direct SAS", blob_name, &r);
		return PROTO_FAILED;
	}
	out->expires_unix = g->expires;
	sign_time_iso8601((time_t)g->expires, out->expires);
	return PROTO_OK;
}

/*
 * A retry with the key of an earlier create: the same intent, if the key
 * started a direct upload of this name, type and size.  A pending one gets
 * a fresh SAS, recorded first with a lease that outlives it (fenced by the
 * intent's holder: a sweeper that claimed it since wins).  A finished one
 * (finalized, and perhaps replaced or deleted since: its row is still in
 * the outbox) gets the answer it got before, the URL signed at the
 * recorded time: no new SAS for a name that holds, or held, a document.
 * Once the row is gone (the outbox deleted the blob after every grant had
 * expired, or the sweeper dropped an abandoned intent) the key is spent.
 */
static enum proto_result
replay(struct services *s, const struct direct_request *req, const struct idem_row *k, struct buf *url,
       struct direct_grant *out)
{
	struct direct_sas_grant g;
	struct direct_row row;
	struct lease l;
	enum db_err e;

	if (k->route != UPLOAD_VIA_DIRECT || !span_eq_cstr(req->name, k->doc_name) ||
	    (k->content_type[0] != '\0' && strcmp(k->content_type, req->content_type) != 0))
		return PROTO_IDEM_MISMATCH;
	if ((e = direct_db_get(s->db, k->blob_name, &row)) != DB_OK)
		return e == DB_NOT_FOUND ? PROTO_GONE : proto_from_db(e);
	if (row.route != UPLOAD_VIA_DIRECT || row.declared_size != req->size)
		return PROTO_IDEM_MISMATCH;
	out->doc_id = row.document_id;
	out->replayed = 1;
	switch (row.state) {
	case REGISTRY_PENDING:
		g = grant_now(s);
		l.holder = row.holder;
		l.seconds = direct_lease_seconds(s);
		if ((e = direct_db_renew_grant(s->db, row.blob_name, &l, &g)) != DB_OK)
			return e == DB_CONFLICT ? PROTO_UNAVAILABLE : proto_from_db(e);
		return sign_grant(s, row.blob_name, &g, url, out);
	case REGISTRY_COMMITTED:
	case REGISTRY_RETIRED:
	case REGISTRY_DELETING:
		if (row.grant.signed_at == 0 || row.grant.expires <= row.grant.signed_at)
			return PROTO_GONE;
		return sign_grant(s, row.blob_name, &row.grant, url, out);
	case REGISTRY_SWEEPING:
		return PROTO_UNAVAILABLE;	/* a sweeper holds it for a moment */
	case REGISTRY_STATE_UNKNOWN:
		break;
	}
	return PROTO_FAILED;
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
		return proto_from_db(e);
	if (k.expired) {
		/* A finished key past its TTL is forgotten: try once more as new. */
		if ((e = idem_drop_expired(s->db, req->owner, req->idem_key, s->cfg->idempotency_ttl)) != DB_OK)
			return proto_from_db(e);
		*again = 1;
		return PROTO_OK;
	}
	return replay(s, req, &k, url, out);
}

enum proto_result
direct_create(struct services *s, const struct direct_request *req, struct buf *upload_url,
	      struct direct_grant *out)
{
	char blob_name[DOC_BLOB_NAME_MAX], holder[DOC_HOLDER_MAX], created_at[DOC_TIME_MAX];
	struct direct_new n;
	enum proto_result pr;
	enum db_err e;
	int tries, again = 1;

	memset(out, 0, sizeof *out);
	proto_start_deadline(s);
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
		n.lease.reserve = req->size;
		/* The clock is read before the lease is written: the SAS
		 * can only expire earlier than the lease assumes. */
		n.grant = grant_now(s);
		e = direct_db_create_intent(s->db, &n, &out->doc_id, created_at);
		if (e == DB_OK)
			break;
		if (e != DB_DUPLICATE)
			return proto_from_db(e);
		if ((pr = create_refused(s, req, upload_url, out, &again)) != PROTO_OK || !again)
			return pr;
	}
	if (e != DB_OK)
		return PROTO_NAME_TAKEN;
	if (FAILPOINT("direct.after_intent"))
		return PROTO_UNAVAILABLE;
	return sign_grant(s, blob_name, &n.grant, upload_url, out);
}

enum proto_result
direct_find_pending_of(struct services *s, struct span name, const char *owner, uint64_t *doc_id)
{
	return proto_from_db(direct_db_find_pending(s->db, name, owner, doc_id));
}

/* ---- finalize -------------------------------------------------------------- */

/* Concurrent finalizes of one intent each change the blob at most twice
 * (metadata, then content headers), so a finalize that lost a race to
 * another's change needs at most a couple more looks before all is done. */
#define FINALIZE_TRIES 4

/* What finalize learnt of the bytes at the name. */
struct verified {
	uint64_t size;
	char sha256_hex[DOC_SHA256_HEX];
	char md5_b64[32];
	char etag[DOC_ETAG_MAX];	/* the ETag to record and pin reads to */
};

struct hashing {
	struct sha256_ctx sha;
	struct md5_ctx md5;
	uint64_t bytes;
	struct admission *adm;	/* the same read, for admission (NULL: none) */
};

static int
hash_data(void *ctx, const char *data, size_t len)
{
	struct hashing *h = ctx;

	sha256_update(&h->sha, len, (const uint8_t *)data);
	md5_update(&h->md5, len, (const uint8_t *)data);
	admission_stored_data(h->adm, data, len);
	h->bytes += len;
	return 0;
}

/*
 * The blob is exactly what the SAS is for: one Put Blob (or one block
 * list) of a block blob, made by the client itself.  `sp=c` also lets a
 * client create a page or append blob, copy another blob of the account
 * into the name (Azure's Copy Blob needs no source credential within one
 * account; on Azure the copy may still be running) or take snapshots that
 * bindery would never know about: none of those is a document.
 */
static enum proto_result
check_shape(struct services *s, const char *blob_name, const struct blob_props *p)
{
	struct blob_result r;
	unsigned snapshots = 0;

	if (strcmp(p->blob_type, "BlockBlob") != 0 || p->copied)
		return PROTO_NOT_ONE_PUT;
	if (blob_count_snapshots(s->blob, blob_name, &snapshots, &r) != BLOB_OK) {
		blob_log_failure("direct finalize snapshots", blob_name, &r);
		return proto_from_blob(&r) == PROTO_OK ? PROTO_FAILED : proto_from_blob(&r);
	}
	return snapshots == 0 ? PROTO_OK : PROTO_NOT_ONE_PUT;
}

/*
 * The bytes at the name, read under If-Match on the ETag just read (so
 * what is hashed is what that ETag names), against what the client
 * declared and, once finalize recorded a triple, what it recorded.
 */
static enum proto_result
verify_bytes(struct services *s, const struct direct_row *row, const struct blob_props *p,
	     struct admission *adm, struct verified *v)
{
	unsigned char digest[SHA256_DIGEST_SIZE], md5[MD5_DIGEST_SIZE];
	struct buf b64 = BUF_INIT(sizeof v->md5_b64);
	struct hashing h;
	struct blob_result r;
	enum proto_result pr = PROTO_OK;

	if (p->size != row->declared_size)
		return PROTO_SIZE_MISMATCH;
	memset(&h, 0, sizeof h);
	sha256_init(&h.sha);
	md5_init(&h.md5);
	h.adm = adm;
	if (blob_get(s->blob, row->blob_name, 0, 0, p->etag, NULL, hash_data, &h, &r) != BLOB_OK) {
		blob_log_failure("direct finalize read", row->blob_name, &r);
		/* Another ETag now: the blob changed under the read. */
		return r.status == BLOB_CONDITION_NOT_MET ? PROTO_RETRY : proto_from_blob(&r);
	}
	if (h.bytes != p->size)
		return PROTO_RETRY;
	sha256_digest(&h.sha, sizeof digest, digest);
	md5_digest(&h.md5, sizeof md5, md5);
	hex_lower(digest, sizeof digest, v->sha256_hex);
	v->size = h.bytes;
	if ((row->declared_sha256[0] != '\0' && strcmp(row->declared_sha256, v->sha256_hex) != 0) ||
	    (row->etag[0] != '\0' && strcmp(row->sha256, v->sha256_hex) != 0))
		return PROTO_DIGEST_MISMATCH;
	if (base64_encode(md5, sizeof md5, &b64) != BASE64_OK ||
	    copy_cstr(v->md5_b64, sizeof v->md5_b64, buf_cstr(&b64)) != 0)
		pr = PROTO_FAILED;
	buf_free(&b64);
	return pr;
}

/* The blob describes itself as a server upload's does: metadata size,
 * sha256 and the stamp (stamp.h) exactly, the intent's Content-Type, the
 * MD5 of its bytes, and no other content header.  Every stamp entry is
 * compared: a client can write any metadata with its Put Blob, and
 * adoption after a restore trusts only the stamp finalize wrote. */
static int
server_headers_hold(const struct blob_props *p, const struct stamp *want, const struct verified *v)
{
	struct blob_meta meta[BLOB_LIST_META];
	size_t n = blob_props_meta(p, meta, BLOB_LIST_META);
	struct stamp got;

	return p->meta_count == 2 + STAMP_NMETA && n == p->meta_count && stamp_decode(meta, n, &got) &&
	       got.size == (int64_t)v->size && strcmp(got.sha256, v->sha256_hex) == 0 &&
	       strcmp(got.install, want->install) == 0 && got.doc_id == want->doc_id &&
	       got.version == want->version && strcmp(got.owner, want->owner) == 0 &&
	       strcmp(got.name, want->name) == 0 && strcmp(got.content_type, want->content_type) == 0 &&
	       strcmp(got.created_at, want->created_at) == 0 &&
	       strcmp(p->content_type, want->content_type) == 0 && !p->content_extras &&
	       strcmp(p->content_md5, v->md5_b64) == 0;
}

/*
 * Replace the client's metadata and content headers with the server's,
 * each step under If-Match on the ETag before it, so the bytes stay the
 * ones just hashed.  Both steps change the ETag: v->etag receives the last,
 * which is what finalize records (after this, never before).  Only a blob
 * that does not hold the server's values already is changed, so concurrent
 * finalizes change it at most twice between them and all end on one ETag.
 * PROTO_RETRY: another finalize changed it first.
 */
static enum proto_result
rewrite_headers(struct services *s, const char *blob_name, const struct doc *d,
		const struct blob_props *p, struct verified *v)
{
	char size[24], mid_etag[DOC_ETAG_MAX];
	const char *install = services_install_id(s);
	struct blob_meta meta[2 + STAMP_NMETA];
	struct stamp_meta sm;
	struct stamp st;
	struct blob_result r;
	size_t i;

	if (install == NULL)
		return PROTO_UNAVAILABLE;
	/* A direct upload only creates: version 1. */
	if (stamp_of_doc(&st, install, d, 1) != 0 || stamp_encode(&st, &sm) != 0)
		return PROTO_FAILED;
	if (server_headers_hold(p, &st, v))
		return copy_cstr(v->etag, sizeof v->etag, p->etag) == 0 ? PROTO_OK : PROTO_FAILED;
	snprintf(size, sizeof size, "%llu", (unsigned long long)v->size);
	meta[0] = (struct blob_meta){ "size", size };
	meta[1] = (struct blob_meta){ "sha256", v->sha256_hex };
	for (i = 0; i < STAMP_NMETA; i++)
		meta[2 + i] = sm.v[i];
	if (blob_set_metadata(s->blob, blob_name, meta, ARRAY_LEN(meta), p->etag, mid_etag, &r) != BLOB_OK ||
	    blob_set_content_headers(s->blob, blob_name, d->content_type, v->md5_b64, mid_etag, v->etag,
				     &r) != BLOB_OK) {
		if (r.status == BLOB_CONDITION_NOT_MET)
			return PROTO_RETRY;
		blob_log_failure("direct finalize headers", blob_name, &r);
		return proto_from_blob(&r) == PROTO_OK ? PROTO_FAILED : proto_from_blob(&r);
	}
	return v->etag[0] != '\0' ? PROTO_OK : PROTO_FAILED;
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
		blob_log_failure("direct tag flip", blob_name, &r);
		return proto_from_blob(&r) == PROTO_OK ? PROTO_FAILED : proto_from_blob(&r);
	}
	return PROTO_OK;
}

/* A direct document of owner's, and its registry row. */
static enum proto_result
load_intent(struct services *s, uint64_t doc_id, const char *owner, struct doc *d, struct direct_row *row)
{
	enum db_err e;

	if ((e = docs_get(s->db, doc_id, d)) != DB_OK)
		return proto_from_db(e);
	/* Another owner's document is as absent as none (no probing of ids). */
	if (strcmp(d->owner, owner) != 0)
		return PROTO_NOT_FOUND;
	if ((e = direct_db_get(s->db, d->blob_name, row)) != DB_OK)
		return proto_from_db(e);
	return row->route == UPLOAD_VIA_DIRECT && row->document_id == doc_id ? PROTO_OK : PROTO_NOT_FOUND;
}

/* Flip and mark ready: the steps after the triple is recorded.  Both may
 * run again: the tag is set, not guarded, and a lost ready race is read
 * back by the caller. */
static enum proto_result
commit_direct(struct services *s, const struct direct_row *row, const struct verified *v)
{
	enum db_err e;
	enum proto_result pr;

	if (FAILPOINT("direct.after_record"))
		return PROTO_UNAVAILABLE;
	if ((pr = tag_committed(s, row->blob_name)) != PROTO_OK)
		return pr;
	if (FAILPOINT("direct.after_tag"))
		return PROTO_UNAVAILABLE;
	/* The request that made the intent may have carried a key. */
	e = docs_mark_ready(s->db, row->document_id, row->blob_name, row->holder, v->size, v->sha256_hex,
			    v->etag, READY_ALL, NULL);
	if (e == DB_OK) {
		counters_add(COUNTER_DOCUMENTS_CREATED, 1);
		events_after_commit(s->events, s->db, row->document_id);
	}
	return e == DB_CONFLICT ? PROTO_UNAVAILABLE : proto_from_db(e);
}

/* A refused blob (why: for the log) goes at once, its intent stays, so
 * the client may upload again while its SAS lasts; one that changed since
 * it was read is left to the sweeper's If-Match. */
static void
refuse_blob(struct services *s, const char *blob_name, const struct blob_props *p, const char *why)
{
	struct blob_result r;

	if (blob_delete(s->blob, blob_name, NULL, p->etag, &r) != BLOB_OK)
		blob_log_failure("direct refused blob left for the sweeper:", blob_name, &r);
	else
		log_info("direct upload %s refused (%s): deleted", blob_name, why);
}

/*
 * Admission of the bytes verify_bytes just read (doc/design.md,
 * "Admission"), before the triple is recorded: the recorded triple lets the
 * sweeper roll it forward.  Refused: the blob goes at once, guarded by the
 * ETag read, and the intent stays (its SAS may still create the blob; a
 * re-upload is found and swept).  Admitted: the type to record in d and,
 * when it is not the declared one, in the pending row.
 */
static enum proto_result
admit(struct services *s, const struct direct_row *row, const struct blob_props *p, struct admission *adm,
      struct doc *d)
{
	char type[SNIFF_TYPE_MAX];
	enum proto_result pr;
	enum db_err e;

	pr = admission_stored_end(adm, 1, d->content_type, type, sizeof type);
	if (pr == PROTO_TYPE_REFUSED || pr == PROTO_INFECTED) {
		refuse_blob(s, row->blob_name, p, pr == PROTO_INFECTED ? "infected" : "type not allowed");
		return pr;
	}
	if (pr != PROTO_OK || strcmp(type, d->content_type) == 0)
		return pr;
	if ((e = docs_set_pending_type(s->db, d->id, row->blob_name, type)) != DB_OK)
		return e == DB_CONFLICT ? PROTO_RETRY : proto_from_db(e);
	return copy_cstr(d->content_type, sizeof d->content_type, type) == 0 ? PROTO_OK : PROTO_FAILED;
}

/*
 * One look at the intent and its blob, and as far as it can go.
 * PROTO_RETRY: something changed under it (another finalize); look again.
 */
static enum proto_result
finalize_once(struct services *s, uint64_t doc_id, const char *owner, struct doc *d)
{
	struct direct_row row;
	struct admission *adm = NULL;
	struct blob_props p;
	struct blob_result r;
	struct verified v;
	enum proto_result pr;
	enum db_err e;

	if ((pr = load_intent(s, doc_id, owner, d, &row)) != PROTO_OK)
		return pr;
	if (d->status == DOC_STATUS_READY)
		return PROTO_OK;	/* finalized before: the same answer */
	if (row.state != REGISTRY_PENDING)
		return PROTO_UNAVAILABLE;	/* the sweeper holds it */
	if (blob_get_properties(s->blob, row.blob_name, &p, &r) != BLOB_OK) {
		if (r.status == BLOB_NOT_FOUND)
			return PROTO_NOT_UPLOADED;
		blob_log_failure("direct finalize properties", row.blob_name, &r);
		return proto_from_blob(&r);
	}
	memset(&v, 0, sizeof v);
	if (row.etag[0] != '\0' && strcmp(row.etag, p.etag) == 0) {
		/* Recorded by an earlier finalize that did not finish: the
		 * bytes and headers are the ones it verified and wrote. */
		v.size = row.size;
		if (copy_cstr(v.sha256_hex, sizeof v.sha256_hex, row.sha256) != 0 ||
		    copy_cstr(v.etag, sizeof v.etag, row.etag) != 0)
			return PROTO_FAILED;
		return commit_direct(s, &row, &v);
	}
	if ((pr = check_shape(s, row.blob_name, &p)) != PROTO_OK) {
		if (pr == PROTO_NOT_ONE_PUT)
			refuse_blob(s, row.blob_name, &p, p.copied ? "a copy" : p.blob_type);
		return pr;
	}
	if ((pr = admission_stored_begin(s, &adm)) != PROTO_OK)
		return pr;
	pr = verify_bytes(s, &row, &p, adm, &v);
	/* A SAS cannot cap a size: a client may write more than it declared.
	 * Under [quota] those bytes go at once (guarded by the ETag read); the
	 * row and its reservation stay until the lease ends, so a re-upload
	 * under the still-valid SAS is found and swept. */
	if (pr == PROTO_SIZE_MISMATCH && quota_db_enabled())
		refuse_blob(s, row.blob_name, &p, "not the size it declared");
	if (pr == PROTO_OK)
		pr = admit(s, &row, &p, adm, d);
	admission_free(adm);
	if (pr != PROTO_OK || (pr = rewrite_headers(s, row.blob_name, d, &p, &v)) != PROTO_OK)
		return pr;
	e = direct_db_record(s->db, row.blob_name, row.holder, row.etag, v.etag, v.size, v.sha256_hex);
	if (e == DB_CONFLICT)
		return PROTO_RETRY;	/* another triple since, or the sweeper: look again */
	if (e != DB_OK)
		return proto_from_db(e);
	return commit_direct(s, &row, &v);
}

enum proto_result
direct_finalize(struct services *s, uint64_t doc_id, const char *owner, struct doc *out)
{
	enum proto_result pr = PROTO_RETRY;
	enum db_err e;
	int tries;

	proto_start_deadline(s);
	for (tries = 0; tries < FINALIZE_TRIES && pr == PROTO_RETRY; tries++)
		pr = finalize_once(s, doc_id, owner, out);
	if (pr == PROTO_RETRY)
		pr = PROTO_UNAVAILABLE;
	if (pr == PROTO_OK && out->status == DOC_STATUS_READY)
		return PROTO_OK;
	/* A finalize that lost the ready step to another finalize of the same
	 * intent (or to the sweeper's roll forward) answers as that one did. */
	if (pr == PROTO_UNAVAILABLE || pr == PROTO_OK) {
		if ((e = docs_get(s->db, doc_id, out)) != DB_OK)
			return pr == PROTO_OK ? proto_from_db(e) : pr;
		if (out->status == DOC_STATUS_READY)
			return PROTO_OK;
	}
	return pr == PROTO_OK ? PROTO_FAILED : pr;
}
