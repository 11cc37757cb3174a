/* protocol.c - see protocol.h and doc/design.md ("Create", "The claim and the fence", "Replace, delete and the outbox"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/crypto.h>

#include "base/clock.h"
#include "base/counters.h"
#include "base/failpoint.h"
#include "base/log.h"
#include "protocol/admission.h"
#include "protocol/protocol.h"
#include "protocol/protocol_internal.h"
#include "base/rand.h"
#include "registry/blobs_db.h"
#include "registry/docs_db.h"
#include "registry/idem_db.h"
#include "registry/sweep_db.h"
#include "protocol/stamp.h"
#include "protocol/stray.h"

int
proto_new_blob_name(const struct bindery_config *cfg, char *out, size_t outlen)
{
	char hex[33];

	if (rand_hex(hex, sizeof hex, 16) != 0)
		return -1;
	return (size_t)snprintf(out, outlen, "%s%s", cfg->storage_prefix, hex) < outlen ? 0 : -1;
}

int
proto_held_intent_init(struct held_intent *hi, uint64_t doc_id, const char *blob_name)
{
	hi->doc_id = doc_id;
	hi->extras = READY_ALL;
	hi->written_etag[0] = '\0';
	hi->leased_ms = clock_now_ms();	/* callers write the lease right after */
	if (copy_cstr(hi->blob_name, sizeof hi->blob_name, blob_name) != 0)
		return -1;
	return rand_hex(hi->holder, sizeof hi->holder, 16);
}

/* The lease every write of hi's row takes: now + sweep_cutoff (doc/design.md, "Leases"). */
static struct lease
lease_of(const struct services *s, const struct held_intent *hi)
{
	struct lease l = { hi->holder, s->cfg->sweep_cutoff, 0 };

	return l;
}

uint64_t
proto_reservation(const struct services *s, int64_t declared)
{
	return declared >= 0 ? (uint64_t)declared : s->cfg->max_upload;
}

enum proto_result
proto_from_db(enum db_err e)
{
	switch (e) {
	case DB_OK: return PROTO_OK;
	case DB_NOT_FOUND: return PROTO_NOT_FOUND;
	case DB_UNAVAILABLE: case DB_RETRY: return PROTO_UNAVAILABLE;
	case DB_QUOTA: return PROTO_QUOTA;
	default: return PROTO_FAILED;
	}
}

/*
 * Only the body is the client's: reading it failed (ABORTED) or it was not
 * the size it declared (BAD_INPUT).  A request storage refused was built by
 * bindery, whatever the service's code says (I6: a failed dependency is a
 * 5xx).
 */
enum proto_result
proto_from_blob(const struct blob_result *r)
{
	switch (r->status) {
	case BLOB_OK: return PROTO_OK;
	case BLOB_ABORTED: case BLOB_BAD_INPUT: return PROTO_BODY_ERROR;
	case BLOB_REJECTED: return PROTO_STORAGE_ERROR;
	case BLOB_DEADLINE: return PROTO_DEADLINE;
	case BLOB_NOT_FOUND: case BLOB_AUTH_FAILED: case BLOB_FAILED: case BLOB_NOMEM:
		return PROTO_FAILED;
	default: return PROTO_UNAVAILABLE;
	}
}

void
proto_start_deadline(struct services *s)
{
	blob_client_set_deadline(s->blob, clock_now_ms() + (int64_t)s->cfg->request_deadline * 1000);
}

/*
 * A streaming upload's lease (doc/design.md "Create" step 5, "Leases").  The
 * body is read through lease_read: after each heartbeat seconds of progress
 * it renews the row's lease (fenced by holder), and every storage call
 * that follows gets request_deadline from now, so a slow client that keeps
 * sending is never cut by the deadline (its silence is body_idle_timeout's
 * business).  No storage call starts once this attempt's own view of the
 * lease is older than sweep_cutoff - request_deadline - heartbeat: the
 * sweeper takes the row only after sweep_cutoff.
 */
struct lease_body {
	struct services *s;
	struct held_intent *hi;
	blob_read_fn read;	/* the request body's own reader */
	void *ctx;
	int lost;		/* a renewal touched zero rows: the row is not ours */
	int failed;		/* a renewal could not reach the database */
};

static void
lease_deadline(struct services *s, const struct held_intent *hi)
{
	const struct bindery_config *cfg = s->cfg;
	int64_t now = clock_now_ms();
	int64_t deadline = now + (int64_t)cfg->request_deadline * 1000;
	int64_t last_start = hi->leased_ms + ((int64_t)cfg->sweep_cutoff - cfg->request_deadline -
					      cfg->heartbeat) * 1000;

	blob_client_set_deadline(s->blob, deadline < last_start ? deadline : last_start);
}

/* What a renewal of hi's lease found (doc/design.md "The claim and the fence"): a caller that
 * did not get LEASE_RENEWED stops before its next storage call. */
enum lease_result {
	LEASE_RENEWED,		/* expires_at pushed; this attempt's view reset */
	LEASE_LOST,		/* zero rows: a resume or the sweeper holds the row */
	LEASE_UNREACHABLE,	/* the database did not answer */
};

/* Renew hi's lease, fenced by its holder; lb->lost or lb->failed says why not. */
static BINDERY_NODISCARD enum lease_result
lease_renew(struct lease_body *lb)
{
	struct lease l = lease_of(lb->s, lb->hi);
	int64_t before = clock_now_ms();
	enum db_err e;

	e = blobs_renew_held(lb->s->db, lb->hi->blob_name, &l);
	if (e == DB_OK) {
		lb->hi->leased_ms = before;
		lease_deadline(lb->s, lb->hi);
		return LEASE_RENEWED;
	}
	if (e == DB_CONFLICT) {
		log_info("intent %s was taken over; stopping its upload", lb->hi->blob_name);
		lb->lost = 1;
		return LEASE_LOST;
	}
	log_warn("lease on %s not renewed: %s", lb->hi->blob_name, db_err_name(e));
	lb->failed = 1;
	return LEASE_UNREACHABLE;
}

/* The heartbeat: a renewal once heartbeat seconds of progress have passed
 * since the last one.  LEASE_RENEWED also when none was due. */
static BINDERY_NODISCARD enum lease_result
lease_heartbeat(struct lease_body *lb)
{
	int64_t heartbeat_ms = (int64_t)lb->s->cfg->heartbeat * 1000;
	enum lease_result lr;

	if (clock_now_ms() - lb->hi->leased_ms < heartbeat_ms)
		return LEASE_RENEWED;
	lr = lease_renew(lb);
	if (lr == LEASE_RENEWED && FAILPOINT("lease.after_heartbeat")) {
		lb->failed = 1;
		return LEASE_UNREACHABLE;
	}
	return lr;
}

/* blob_read_fn over the request body: renews the lease as bytes arrive. */
static long
lease_read(void *arg, char *buf, size_t len)
{
	struct lease_body *lb = arg;
	long got;

	if (lb->lost || lb->failed)
		return -1;
	got = lb->read(lb->ctx, buf, len);
	if (got > 0) {
		switch (lease_heartbeat(lb)) {
		case LEASE_RENEWED:
			break;
		case LEASE_LOST:
		case LEASE_UNREACHABLE:
			return -1;
		}
	}
	if (got >= 0)
		lease_deadline(lb->s, lb->hi);
	return got;
}

/* blob_upload_opts.before_commit: renew right before Put Blob / Put Block
 * List (the storage layer's callback type: 0 lets the commit go ahead). */
static int
lease_before_commit(void *arg)
{
	struct lease_body *lb = arg;

	switch (lease_renew(lb)) {
	case LEASE_RENEWED:
		if (FAILPOINT("lease.before_commit")) {
			lb->failed = 1;
			return -1;
		}
		return 0;
	case LEASE_LOST:
	case LEASE_UNREACHABLE:
		break;
	}
	return -1;
}

/* The value of the blob's one tag when that tag is its state (NULL otherwise). */
static const char *
sole_state_tag(const struct blob_tag_set *t)
{
	return t->n == 1 && strcmp(t->key[0], TAG_STATE_KEY) == 0 ? t->value[0] : NULL;
}

/*
 * Compensation that lost the claim: a resume or the sweeper holds the row
 * (and whatever is at the name may be theirs), or the row is gone: a forced
 * sweep or a lapsed lease dropped it while this attempt still uploaded.
 * Then nothing but this attempt will ever look at what it wrote, so it
 * removes that itself (doc/design.md "The claim and the fence"), guarded by
 * the pending tag and the ETag it wrote; or, having written no blob, the
 * blocks it staged.  stray_remove and the purge leave anything a row names
 * or anything committed alone.
 */
static void
fenced_out(struct services *s, const struct held_intent *hi)
{
	const char *blob_name = hi->blob_name;
	int wrote = hi->written_etag[0] != '\0';

	blob_client_set_deadline(s->blob, clock_now_ms() + COMPENSATION_BUDGET_MS);
	switch (wrote ? stray_remove(s, blob_name, hi->written_etag) : stray_purge_blocks(s, blob_name)) {
	case STRAY_REMOVED:
		log_info("intent %s: its rows are gone; %s", blob_name,
			 wrote ? "the pending blob it wrote was removed" : "the blocks it staged were purged");
		break;
	case STRAY_NAMED:
		log_info("intent %s was taken over; compensation touches nothing", blob_name);
		break;
	case STRAY_CHANGED:
		log_info("intent %s: a blob it did not write (or no longer pending) is there; left",
			 blob_name);
		break;
	case STRAY_FAILED:
		log_warn("intent %s: its pending bytes could not be removed now; the sweep removes "
			 "them after sweep_cutoff", blob_name);
		break;
	}
}

/*
 * Failure before the tag flip.  First the claim: pending -> sweeping, only
 * while this attempt still holds the row.  Losing it means a resume or the
 * sweeper owns the name now, with its own upload perhaps under way there,
 * so we touch nothing (not even a pending blob: it may be theirs).  Having
 * won, the blob (if any) still says pending, and a delete guarded by that
 * tag can only remove unfinished bytes.  Blob first, then the rows; anything
 * that fails here is left to the sweeper, which takes the claim over once
 * its lease ends.  The request's deadline no longer applies, only the
 * compensation budget.
 */
enum proto_result
proto_compensate_pending(struct services *s, const struct held_intent *hi)
{
	const char *blob_name = hi->blob_name;
	struct blob_result r;
	enum db_err e;

	if (FAILPOINT("compensate.before_claim"))
		return PROTO_UNAVAILABLE;
	e = blobs_claim_held(s->db, blob_name, hi->holder, s->cfg->sweep_lease);
	if (e == DB_CONFLICT) {
		fenced_out(s, hi);
		return PROTO_NOT_FOUND;
	}
	if (e != DB_OK) {
		log_warn("intent %s left for the sweeper: %s", blob_name, db_err_name(e));
		return proto_from_db(e);
	}
	blob_client_set_deadline(s->blob, clock_now_ms() + COMPENSATION_BUDGET_MS);
	if (FAILPOINT("compensate.before_delete"))
		return PROTO_UNAVAILABLE;
	if (blob_delete(s->blob, blob_name, tag_state_guard(TAG_STATE_PENDING), NULL, &r) != 0 &&
	    r.status == BLOB_NOT_FOUND) {
		/* Nothing committed; staged blocks may remain from a cut upload. */
		if (blob_purge_uncommitted(s->blob, blob_name, &r) != 0 && r.status == BLOB_NOT_FOUND)
			r.status = BLOB_OK;
	}
	if (r.status != BLOB_OK) {
		/* Give the claim back (pending, still ours to lose), so the
		 * sweeper resolves it after sweep_cutoff as before, not only
		 * once the lease ends: a tag already committed (the failure
		 * came after the flip) is rolled forward there. */
		blob_log_failure("compensating delete left for the sweeper:", blob_name, &r);
		if ((e = sweep_db_release(s->db, hi->holder, blob_name)) != DB_OK)
			log_warn("claim on %s kept until its lease ends (%s)", blob_name, db_err_name(e));
		return proto_from_blob(&r) == PROTO_OK ? PROTO_FAILED : proto_from_blob(&r);
	}
	e = docs_abandon_intent(s->db, hi->doc_id, blob_name, hi->holder);
	if (e != DB_OK)
		log_warn("intent %s left for the sweeper: %s", blob_name, db_err_name(e));
	return proto_from_db(e);
}

int
proto_blob_matches(struct services *s, const char *blob_name, struct blob_upload_info *info)
{
	struct blob_props p;
	struct blob_result r;

	if (blob_get_properties(s->blob, blob_name, &p, &r) != 0)
		return 0;
	if (p.size != info->size || p.meta_size != (int64_t)info->size ||
	    strcmp(p.meta_sha256, info->sha256_hex) != 0)
		return 0;
	memcpy(info->etag, p.etag, sizeof info->etag);	/* the ETag reads are pinned to */
	return 1;
}

/* Step 3: the tag flip, guarded by pending; an earlier attempt's flip counts. */
enum proto_result
proto_commit_tag_flip(struct services *s, const char *blob_name)
{
	const struct blob_tag committed[] = { { TAG_STATE_KEY, tag_state_name(TAG_STATE_COMMITTED) } };
	struct blob_tag_set tags;
	struct blob_result r;

	if (blob_set_tags(s->blob, blob_name, committed, 1, tag_state_guard(TAG_STATE_PENDING), &r) != 0) {
		enum proto_result pr = proto_from_blob(&r) == PROTO_OK ? PROTO_FAILED : proto_from_blob(&r);

		if (r.status == BLOB_CONDITION_NOT_MET) {
			/* The pending guard refused: read what the tag is now
			 * (into a result of its own, so a successful read
			 * cannot pass for a successful flip). */
			struct blob_result read;
			enum tag_state now = TAG_STATE_UNKNOWN;

			if (blob_get_tags(s->blob, blob_name, &tags, &read) == 0)
				now = tag_state_from_name(sole_state_tag(&tags));
			pr = proto_tag_flip_refused(now);
		}
		if (pr != PROTO_OK)
			blob_log_failure("tag flip", blob_name, &r);
		return pr;
	}
	return PROTO_OK;
}

/*
 * Steps 2 and 3: create-only upload tagged pending, then the tag flip.
 * A name that already holds exactly these bytes (our own earlier try)
 * counts as uploaded.  Right before the flip the row's heartbeat is renewed
 * by holder: an attempt that lost its row stops there, before it commits
 * anything (its compensation then loses the claim too and touches nothing).
 */
/* An operation's two failpoints in upload_and_commit_tag, named where the operation calls it. */
struct upload_failpoints {
	const char *after_upload;
	const char *after_tag;
};

static enum proto_result
upload_and_commit_tag(struct services *s, struct held_intent *hi, const struct proto_body *body,
		      const struct stamp *st, const struct upload_failpoints *fp, int resuming,
		      struct blob_upload_info *info)
{
	const char *blob_name = hi->blob_name;
	const struct blob_tag pending[] = { { TAG_STATE_KEY, tag_state_name(TAG_STATE_PENDING) } };
	struct lease_body lb = { s, hi, body->read, body->ctx, 0, 0 };
	struct blob_upload_opts opts = { body->content_type, pending, 1, body->expected_size,
					 lease_before_commit, &lb, NULL, 0 };
	struct stamp_meta sm;
	struct blob_result r;
	enum proto_result pr;

	(void)fp;	/* only failpoint builds look at it */
	memset(info, 0, sizeof *info);
	if (stamp_encode(st, &sm) != 0)
		return PROTO_FAILED;
	opts.meta = sm.v;
	opts.nmeta = STAMP_NMETA;
	lease_deadline(s, hi);
	if (blob_upload_create(s->blob, blob_name, &opts, lease_read, &lb, info, &r) != 0 &&
	    (r.status == BLOB_EXISTS || r.status == BLOB_EXISTS_MAYBE_OURS)) {
		pr = proto_create_upload_refused(resuming, proto_blob_matches(s, blob_name, info));
		if (pr != PROTO_OK)
			return pr;
		r.status = BLOB_OK;
	}
	if (lb.lost || lb.failed)
		return PROTO_UNAVAILABLE;	/* the renewal said why; nothing committed */
	if (r.status != BLOB_OK) {
		blob_log_failure("upload", blob_name, &r);
		return proto_from_blob(&r);
	}
	/* A fenced-out compensation deletes this blob, and only this one. */
	if (copy_cstr(hi->written_etag, sizeof hi->written_etag, info->etag) != 0)
		hi->written_etag[0] = '\0';	/* no ETag to guard with: the sweep's pass */
	if (FAILPOINT(fp->after_upload))
		return PROTO_UNAVAILABLE;
	switch (lease_renew(&lb)) {
	case LEASE_RENEWED:
		break;
	case LEASE_LOST:
	case LEASE_UNREACHABLE:
		return PROTO_UNAVAILABLE;
	}
	if (FAILPOINT("lease.before_flip"))
		return PROTO_UNAVAILABLE;
	/* Admission: stored, not yet committed; the sweeper never rolls a
	 * pending-tagged blob forward, so a refusal here leaves nothing that
	 * could become ready. */
	if ((pr = admission_verdict(body->admit)) != PROTO_OK)
		return pr;

	if ((pr = proto_commit_tag_flip(s, blob_name)) != PROTO_OK)
		return pr;
	if (FAILPOINT(fp->after_tag))
		return PROTO_UNAVAILABLE;
	return PROTO_OK;
}

/* Hash a body we will not store: a finished request's retry must carry the same bytes. */
static enum proto_result
hash_body(const struct proto_body *body, char hex[65])
{
	gnutls_hash_hd_t h = NULL;
	unsigned char digest[32];
	char chunk[65536];
	long n;
	size_t i;

	if (gnutls_hash_init(&h, GNUTLS_DIG_SHA256) != 0)
		return PROTO_FAILED;
	while ((n = body->read(body->ctx, chunk, sizeof chunk)) > 0)
		gnutls_hash(h, chunk, (size_t)n);
	gnutls_hash_deinit(h, digest);
	if (n < 0)
		return PROTO_BODY_ERROR;
	for (i = 0; i < sizeof digest; i++)
		snprintf(hex + 2 * i, 3, "%02x", digest[i]);
	return PROTO_OK;
}

/* The stamp of document doc_id as it now is, committed as version (the
 * paths that did not just write the document read it). */
static enum proto_result
stamp_read_doc(struct services *s, uint64_t doc_id, uint64_t version, struct stamp *st)
{
	const char *install = services_install_id(s);
	struct doc d;
	enum db_err e;

	if (install == NULL)
		return PROTO_UNAVAILABLE;
	if ((e = docs_get(s->db, doc_id, &d)) != DB_OK)
		return proto_from_db(e);
	return stamp_of_doc(st, install, &d, version) == 0 ? PROTO_OK : PROTO_FAILED;
}

/*
 * Steps 2-4 for an intent we hold (fresh or resumed).  An Idempotency-Key's
 * answer needs no step here: step 4 records it in its own transaction, and
 * so does the sweeper's roll forward.
 */
static enum proto_result
finish_create(struct services *s, struct held_intent *hi, const struct stamp *st,
	      const struct proto_body *body, int resuming, struct proto_answer *out)
{
	uint64_t doc_id = hi->doc_id;
	const char *blob_name = hi->blob_name;
	struct blob_upload_info info;
	enum proto_result pr;
	enum db_err e;

	static const struct upload_failpoints fp = { "create.after_upload", "create.after_tag" };

	pr = upload_and_commit_tag(s, hi, body, st, &fp, resuming, &info);
	if (pr != PROTO_OK) {
		/* Before the flip (or a flip that did not happen: the guard
		 * refuses a committed blob) compensation is safe, if we still
		 * hold the row; a resumed intent whose bytes differ belongs to
		 * the earlier request. */
		if (pr == PROTO_SCAN_UNAVAILABLE && (hi->extras & READY_KEY)) {
			/* A scanner that could not answer: the intent is left for
			 * the retry with its key, which resumes it at once. */
			if (blobs_let_go(s->db, blob_name, hi->holder) != DB_OK)
				log_warn("intent %s stays held until its lease ends", blob_name);
		} else if (pr != PROTO_IDEM_MISMATCH) {
			(void)proto_compensate_pending(s, hi);	/* what it leaves, the sweeper finishes */
		}
		return pr;
	}
	/* Step 4.  From here on, never compensate: the blob is committed. */
	e = docs_mark_ready(s->db, doc_id, blob_name, hi->holder, info.size, info.sha256_hex, info.etag,
			    hi->extras, &out->doc);
	if (e == DB_CONFLICT) {
		/* A resume or the sweeper took the row; if the document is
		 * ready on our blob (rolled forward, or finished by the
		 * resume), we succeeded. */
		if (docs_get(s->db, doc_id, &out->doc) == DB_OK &&
		    out->doc.status == DOC_STATUS_READY && strcmp(out->doc.blob_name, blob_name) == 0)
			return PROTO_OK;
		return PROTO_UNAVAILABLE;
	}
	if (e != DB_OK)
		return proto_from_db(e);
	counters_add(COUNTER_DOCUMENTS_CREATED, 1);
	events_after_commit(s->events, s->db, doc_id);
	if (FAILPOINT("create.after_ready"))
		return PROTO_UNAVAILABLE;
	return PROTO_OK;	/* out->doc: the row as the ready transaction committed it */
}

static enum proto_result
replay(struct services *s, const struct idem_row *k, const struct proto_body *body,
       struct proto_answer *out)
{
	char hex[65];
	enum proto_result pr = hash_body(body, hex);
	enum db_err e;

	if (pr != PROTO_OK)
		return pr;
	if (strcmp(hex, k->sha256) != 0)
		return PROTO_IDEM_MISMATCH;
	if (k->has_answer) {
		out->doc = k->answer;
		out->replay_status = (unsigned)k->status_code;
	} else if ((e = docs_get(s->db, k->document_id, &out->doc)) != DB_OK) {
		/* No recorded fields (an older bindery kept the answer as
		 * JSON that did not convert) and the document is gone: the
		 * same 404 every time, never a second document. */
		return e == DB_NOT_FOUND ? PROTO_NOT_FOUND : PROTO_UNAVAILABLE;
	}
	out->replayed = 1;
	return PROTO_OK;
}

/* ---- the create/resume decision ------------------------------------------ */

/*
 * I4 as a function: a key's retry never makes a second document and never
 * overwrites bytes.  A finished key answers what it answered (after the body
 * proved to be the same); an unfinished one follows its intent's registry
 * row: committed means done but unrecorded, pending means resumable once
 * its owner is gone, a sweeper's claim means wait, no row means the sweeper
 * dropped it and the key may start over.  A retired or deleting row is a
 * replaced or deleted document's: not this request's to touch.
 */
enum create_action
proto_create_decide(const struct create_facts *f)
{
	if (!f->key_found)
		return f->name_taken ? CREATE_NAME_TAKEN : CREATE_NEW_INTENT;
	if (!f->same_name || !f->same_type || !f->same_route)
		return CREATE_KEY_MISMATCH;
	if (f->key_finished)
		return CREATE_REPLAY_RECORD;
	if (!f->row_found)
		return CREATE_RESTART;
	switch (f->row_state) {
	case REGISTRY_COMMITTED:
		return CREATE_REPLAY_COMMITTED;
	case REGISTRY_PENDING:
		return CREATE_RESUME;
	case REGISTRY_SWEEPING:
		return CREATE_SWEEPER_OWNS;
	case REGISTRY_RETIRED:
	case REGISTRY_DELETING:
	case REGISTRY_STATE_UNKNOWN:
		break;
	}
	return CREATE_KEY_MISMATCH;
}

/* Only committed means an earlier attempt of ours flipped it; any other
 * tag (retired, none, a read that failed) is someone else's move: 503, and
 * the intent stays pending for the sweeper. */
enum proto_result
proto_tag_flip_refused(enum tag_state now)
{
	return now == TAG_STATE_COMMITTED ? PROTO_OK : PROTO_UNAVAILABLE;
}

/* On a fresh random name only our own earlier try can be there; on a
 * resumed intent, the earlier request's.  Same bytes = done. */
enum proto_result
proto_create_upload_refused(int resuming, int same_bytes)
{
	if (same_bytes)
		return PROTO_OK;
	return resuming ? PROTO_IDEM_MISMATCH : PROTO_FAILED;
}

/* ---- create -------------------------------------------------------------- */

/* One create request: what it asked for and what it found. */
struct create_req {
	struct span name;
	const char *owner;
	const struct proto_body *body;
	const char *idem_key;		/* NULL without one */
	struct idem_row key;		/* the key's record, when facts.key_found */
	struct blob_row row;		/* the record's registry row, when facts.row_found */
	struct create_facts facts;
};

/* The facts behind the key's record, read only as far as the decision needs them. */
static enum proto_result
read_key_facts(struct services *s, struct create_req *c)
{
	struct create_facts *f = &c->facts;
	enum db_err e;

	f->same_name = span_eq_cstr(c->name, c->key.doc_name);
	f->same_type = c->key.content_type[0] == '\0' ||
		       strcmp(c->key.content_type, c->body->content_type) == 0;
	/* A direct intent's bytes are the client's, written under a SAS: a
	 * server create never resumes one, nor answers with its document. */
	f->same_route = c->key.route == UPLOAD_VIA_SERVER;
	f->key_finished = c->key.status_code != 0;
	if (!f->same_name || !f->same_type || !f->same_route || f->key_finished)
		return PROTO_OK;
	e = blobs_get(s->db, c->key.blob_name, &c->row);
	if (e == DB_NOT_FOUND)
		return PROTO_OK;
	if (e != DB_OK)
		return proto_from_db(e);
	f->row_found = 1;
	f->row_state = c->row.state;
	return PROTO_OK;
}

/* Look the key up (if one came); PROTO_OK whether or not it has a record. */
static enum proto_result
lookup_key(struct services *s, struct create_req *c)
{
	enum db_err e;

	c->facts.key_found = 0;
	if (c->idem_key == NULL)
		return PROTO_OK;
	e = idem_get(s->db, c->owner, c->idem_key, s->cfg->idempotency_ttl, &c->key);
	if (e == DB_OK && c->key.expired) {
		/* Past the TTL the key is free again: this is a new request. */
		if ((e = idem_drop_expired(s->db, c->owner, c->idem_key, s->cfg->idempotency_ttl)) != DB_OK)
			return proto_from_db(e);
		return PROTO_OK;
	}
	if (e == DB_NOT_FOUND)
		return PROTO_OK;
	if (e != DB_OK)
		return proto_from_db(e);
	c->facts.key_found = 1;
	return read_key_facts(s, c);
}

/* Take over a pending intent whose owner is gone and finish it. */
static enum proto_result
resume(struct services *s, struct create_req *c, struct proto_answer *out)
{
	struct held_intent hi;
	struct stamp st;
	struct lease l;
	enum proto_result pr;
	enum db_err e;

	if (proto_held_intent_init(&hi, c->key.document_id, c->key.blob_name) != 0)
		return PROTO_FAILED;
	/* Pending: alive while its holder's lease lasts.  Taking it over makes
	 * us its holder; the earlier attempt, if it still runs, learns it lost
	 * at its next transition and touches nothing. */
	l = lease_of(s, &hi);
	e = blobs_take_over_stale(s->db, hi.blob_name, &l);
	if (e == DB_CONFLICT)
		return PROTO_IDEM_IN_PROGRESS;
	if (e != DB_OK)
		return proto_from_db(e);
	if (FAILPOINT("resume.after_claim"))
		return PROTO_UNAVAILABLE;
	log_info("resuming create of %s onto %s", c->key.doc_name, c->key.blob_name);
	if ((pr = stamp_read_doc(s, hi.doc_id, 1, &st)) != PROTO_OK)
		return pr;	/* the row stays ours until its lease ends: the sweeper's */
	return finish_create(s, &hi, &st, c->body, 1, out);
}

/* The sweeper took the old intent: start a new one under the same key. */
static enum proto_result
restart(struct services *s, struct create_req *c, struct proto_answer *out)
{
	char blob_name[DOC_BLOB_NAME_MAX];
	struct held_intent hi;
	struct stamp st;
	struct lease l;
	enum proto_result pr;
	enum db_err e;

	if (proto_new_blob_name(s->cfg, blob_name, sizeof blob_name) ||
	    proto_held_intent_init(&hi, 0, blob_name) != 0)
		return PROTO_FAILED;
	l = lease_of(s, &hi);
	l.reserve = proto_reservation(s, c->body->expected_size);
	e = docs_restart_intent(s->db, c->owner, c->idem_key, c->name, c->body->content_type,
				blob_name, &l, &hi.doc_id);
	if (e == DB_DUPLICATE)
		return PROTO_UNAVAILABLE;	/* the old pending row still holds the name */
	if (e != DB_OK)
		return e == DB_CONFLICT ? PROTO_IDEM_IN_PROGRESS : proto_from_db(e);
	if ((pr = stamp_read_doc(s, hi.doc_id, 1, &st)) != PROTO_OK) {
		(void)proto_compensate_pending(s, &hi);
		return pr;
	}
	return finish_create(s, &hi, &st, c->body, 0, out);
}

/*
 * Step 1 and on, for a request no record answers.  *taken is set when the
 * name (or, from a concurrent request, the key) was already there.
 */
static enum proto_result
start_intent(struct services *s, struct create_req *c, struct proto_answer *out, int *taken)
{
	char blob_name[DOC_BLOB_NAME_MAX];
	const char *install = services_install_id(s);
	struct held_intent hi;
	struct stamp st;
	struct lease l;
	enum db_err e;

	*taken = 0;
	if (install == NULL)
		return PROTO_UNAVAILABLE;	/* a blob must name its installation */
	if (proto_new_blob_name(s->cfg, blob_name, sizeof blob_name) ||
	    proto_held_intent_init(&hi, 0, blob_name) != 0)
		return PROTO_FAILED;
	memset(&st, 0, sizeof st);
	if (copy_cstr(st.install, sizeof st.install, install) != 0 ||
	    copy_span(st.name, sizeof st.name, c->name) != 0 ||
	    copy_cstr(st.owner, sizeof st.owner, c->owner) != 0 ||
	    copy_cstr(st.content_type, sizeof st.content_type, c->body->content_type) != 0)
		return PROTO_FAILED;
	st.version = 1;
	/* Step 1: the database learns the name before any byte is sent. */
	l = lease_of(s, &hi);
	l.reserve = proto_reservation(s, c->body->expected_size);
	e = docs_create_intent(s->db, c->name, c->owner, c->body->content_type, blob_name, &l,
			       c->idem_key, &hi.doc_id, st.created_at);
	if (e == DB_DUPLICATE) {
		*taken = 1;
		return PROTO_OK;
	}
	if (e != DB_OK)
		return proto_from_db(e);
	if (FAILPOINT("create.after_intent"))
		return PROTO_UNAVAILABLE;
	/* A POST or PUT is never a tus upload; it has a key only if it sent one. */
	hi.extras = c->idem_key != NULL ? READY_KEY : 0;
	st.doc_id = hi.doc_id;
	return finish_create(s, &hi, &st, c->body, 0, out);
}

/*
 * The document is ready but its key was never answered (an older bindery
 * recorded the answer in a transaction of its own, after the ready one).
 * Record it now, from the document, and answer from the record: then a
 * retry after the document is replaced or deleted still gets this answer.
 */
static enum proto_result
replay_committed(struct services *s, struct create_req *c, struct proto_answer *out)
{
	struct idem_row done;
	enum db_err e = idem_record_ready(s->db, c->key.blob_name);

	if (e == DB_OK)
		e = idem_get(s->db, c->owner, c->idem_key, s->cfg->idempotency_ttl, &done);
	if (e == DB_OK && done.has_answer)
		return replay(s, &done, c->body, out);
	log_warn("idempotency answer for %s not recorded (%s); answering from the document",
		 c->key.blob_name, db_err_name(e));
	/* Same bytes -> the same document, re-read. */
	done = c->key;
	if (copy_cstr(done.sha256, sizeof done.sha256, c->row.sha256))
		return PROTO_FAILED;
	return replay(s, &done, c->body, out);
}

/* Carry out a decision that does not start a new intent. */
static enum proto_result
act_on_key(struct services *s, enum create_action a, struct create_req *c, struct proto_answer *out)
{
	switch (a) {
	case CREATE_NAME_TAKEN:
		return PROTO_NAME_TAKEN;
	case CREATE_KEY_MISMATCH:
		return PROTO_IDEM_MISMATCH;
	case CREATE_REPLAY_RECORD:
		return replay(s, &c->key, c->body, out);
	case CREATE_REPLAY_COMMITTED:
		return replay_committed(s, c, out);
	case CREATE_RESUME:
		return resume(s, c, out);
	case CREATE_RESTART:
		return restart(s, c, out);
	case CREATE_SWEEPER_OWNS:
		return PROTO_UNAVAILABLE;
	case CREATE_NEW_INTENT:
		break;
	}
	return PROTO_FAILED;	/* a caller bug: a new intent is proto_create's own step */
}

enum proto_result
proto_create(struct services *s, struct span name, const char *owner, const struct proto_body *body,
	     const char *idem_key, struct proto_answer *out)
{
	struct create_req *c;
	struct admission *adm = NULL;
	struct proto_body admitted;
	enum create_action a;
	enum proto_result pr;
	int taken = 0;

	memset(out, 0, sizeof *out);
	c = calloc(1, sizeof *c);	/* the key's record holds a whole answer: not for the stack */
	if (c == NULL)
		return PROTO_FAILED;
	proto_start_deadline(s);
	/* The type is judged before anything is stored. */
	if ((pr = admission_begin(s, body, &admitted, &adm)) != PROTO_OK)
		goto out;
	c->name = name;
	c->owner = owner;
	c->body = &admitted;
	c->idem_key = idem_key;
	if ((pr = lookup_key(s, c)) != PROTO_OK)
		goto out;
	a = proto_create_decide(&c->facts);
	if (a == CREATE_NEW_INTENT) {
		pr = start_intent(s, c, out, &taken);
		if (pr != PROTO_OK || !taken)
			goto out;
		/* The name, or (a concurrent request's) key: decide again. */
		c->facts.name_taken = 1;
		if ((pr = lookup_key(s, c)) != PROTO_OK && c->facts.key_found)
			goto out;	/* the record is there but its row could not be read */
		a = proto_create_decide(&c->facts);
	}
	pr = act_on_key(s, a, c, out);
out:
	blob_client_set_deadline(s->blob, 0);
	admission_free(adm);
	free(c);
	return pr;
}

void
proto_mark_retired(struct services *s, const char *blob_name)
{
	const struct blob_tag retired[] = { { TAG_STATE_KEY, tag_state_name(TAG_STATE_RETIRED) } };
	struct blob_result r;

	if (blob_name[0] == '\0' || FAILPOINT("retire.before_tag"))
		return;
	blob_client_set_deadline(s->blob, clock_now_ms() + COMPENSATION_BUDGET_MS);
	if (blob_set_tags(s->blob, blob_name, retired, 1, tag_state_guard(TAG_STATE_COMMITTED), &r) != 0)
		log_info("retired blob %s left for the outbox to tag (%s, HTTP %ld %s)", blob_name,
			 blob_status_name(r.status), r.http_status, r.code);
	blob_client_set_deadline(s->blob, 0);	/* the last step: the next sets its own */
}

/* A replace that will not be committed: its new blob goes through the
 * outbox now, if we still hold its row (else the sweeper rolls it back). */
void
proto_roll_back_replace(struct services *s, const struct held_intent *hi)
{
	enum db_err e = blobs_retire_unreferenced(s->db, hi->blob_name, hi->holder);

	blob_client_set_deadline(s->blob, clock_now_ms() + COMPENSATION_BUDGET_MS);
	if (e != DB_OK || proto_drain_retired(s, hi->blob_name, "responder") != PROTO_OK)
		log_warn("rollback of %s left for the sweeper (%s)", hi->blob_name, db_err_name(e));
}

/* Replace steps 2 to the commit, for the intent hi we hold on document doc_id. */
static enum proto_result
replace_upload_commit(struct services *s, struct held_intent *hi, const struct proto_body *body,
		      const struct stamp *st, uint64_t expected_version, struct proto_answer *out)
{
	static const struct upload_failpoints replace_fp = { "replace.after_upload", "replace.after_tag" };
	char retired[DOC_BLOB_NAME_MAX] = "";
	struct blob_upload_info info;
	struct replace_blob nb;
	enum proto_result pr;
	enum db_err e;
	int stale = 0;

	memset(&nb, 0, sizeof nb);
	pr = upload_and_commit_tag(s, hi, body, st, &replace_fp, 0, &info);
	if (pr != PROTO_OK) {
		(void)proto_compensate_pending(s, hi);	/* what it leaves, the sweeper finishes */
		return pr;
	}
	nb.name = hi->blob_name;
	nb.holder = hi->holder;
	nb.size = info.size;
	nb.sha256_hex = info.sha256_hex;
	nb.etag = info.etag;
	nb.content_type = body->content_type;
	nb.retired = retired;
	e = docs_replace_commit(s->db, hi->doc_id, &nb, expected_version, s->cfg->retire_grace, &stale,
				&out->doc);
	if (e == DB_OK) {
		counters_add(COUNTER_DOCUMENTS_REPLACED, 1);
		events_after_commit(s->events, s->db, hi->doc_id);
		if (FAILPOINT("replace.after_commit"))
			return PROTO_UNAVAILABLE;
		proto_mark_retired(s, retired);
		return PROTO_OK;
	}
	if (e == DB_NOT_FOUND || stale) {
		/* Deleted or changed while we uploaded: the new bytes are nobody's. */
		proto_roll_back_replace(s, hi);
		return stale ? PROTO_STALE : PROTO_NOT_FOUND;
	}
	/* The new blob's row was lost (the sweeper rolls it back) or the database failed. */
	return e == DB_CONFLICT ? PROTO_UNAVAILABLE : proto_from_db(e);
}

enum proto_result
proto_replace_target(struct services *s, uint64_t doc_id, const char *owner,
	       const struct proto_precondition *pre, struct doc *d, uint64_t *expected_version)
{
	enum db_err e = docs_get(s->db, doc_id, d);

	*expected_version = 0;
	if (e != DB_OK || d->status != DOC_STATUS_READY)
		return e == DB_OK ? PROTO_NOT_FOUND : proto_from_db(e);
	if (strcmp(d->owner, owner) != 0)
		return PROTO_FORBIDDEN;
	if (pre) {
		/* Refuse early, before any byte moves; the commit re-checks the version. */
		if (!pre->holds(pre->ctx, d))
			return PROTO_STALE;
		*expected_version = d->version;
	}
	return PROTO_OK;
}

enum proto_result
proto_replace(struct services *s, uint64_t doc_id, const char *owner, const struct proto_body *body,
	      const struct proto_precondition *pre, struct proto_answer *out)
{
	char blob_name[DOC_BLOB_NAME_MAX];
	const char *install;
	struct admission *adm = NULL;
	struct proto_body admitted;
	struct held_intent hi;
	struct stamp st;
	struct lease l;
	uint64_t expected_version;
	enum proto_result pr;
	enum db_err e;

	memset(out, 0, sizeof *out);
	proto_start_deadline(s);
	if ((pr = proto_replace_target(s, doc_id, owner, pre, &out->doc, &expected_version)) != PROTO_OK)
		goto out;
	/* The type is judged before anything is stored; a refused replace
	 * leaves the document as it was. */
	if ((pr = admission_begin(s, body, &admitted, &adm)) != PROTO_OK)
		goto out;
	body = &admitted;
	if ((install = services_install_id(s)) == NULL) {
		pr = PROTO_UNAVAILABLE;
		goto out;
	}
	/* The version it expects to commit: a concurrent replace that commits
	 * first makes this one the version after (without If-Match), and the
	 * stamp one behind: adoption takes the highest version per id. */
	if (stamp_of_doc(&st, install, &out->doc, out->doc.version + 1) != 0 ||
	    copy_cstr(st.content_type, sizeof st.content_type, body->content_type) != 0) {
		pr = PROTO_FAILED;
		goto out;
	}
	if (proto_new_blob_name(s->cfg, blob_name, sizeof blob_name) ||
	    proto_held_intent_init(&hi, doc_id, blob_name) != 0) {
		pr = PROTO_FAILED;
		goto out;
	}
	l = lease_of(s, &hi);
	l.reserve = proto_reservation(s, body->expected_size);
	if ((e = docs_replace_intent(s->db, doc_id, blob_name, &l)) != DB_OK) {
		pr = proto_from_db(e);
		goto out;
	}
	if (FAILPOINT("replace.after_intent")) {
		pr = PROTO_UNAVAILABLE;
		goto out;
	}
	pr = replace_upload_commit(s, &hi, body, &st, expected_version, out);
out:
	blob_client_set_deadline(s->blob, 0);
	admission_free(adm);
	return pr;
}

enum proto_result
proto_delete(struct services *s, uint64_t doc_id, const char *owner,
	     const struct proto_precondition *pre)
{
	struct doc d;
	enum db_err e = docs_get(s->db, doc_id, &d);
	int stale;

	if (e != DB_OK || d.status != DOC_STATUS_READY)
		return e == DB_OK ? PROTO_NOT_FOUND : proto_from_db(e);
	if (strcmp(d.owner, owner) != 0)
		return PROTO_FORBIDDEN;
	if (pre && !pre->holds(pre->ctx, &d))
		return PROTO_STALE;
	/* With a precondition, delete only the version it held for. */
	e = docs_delete(s->db, doc_id, pre ? d.version : 0, s->cfg->retire_grace, &stale);
	if (e == DB_CONFLICT && stale)
		return PROTO_STALE;
	if (e != DB_OK)
		return proto_from_db(e);
	counters_add(COUNTER_DOCUMENTS_DELETED, 1);
	events_after_commit(s->events, s->db, doc_id);
	/* The blob stays for the grace period: a download under way or a SAS
	 * link already handed out may still need it.  The outbox deletes it;
	 * the tag says at once that no document holds it any more. */
	if (FAILPOINT("delete.after_commit"))
		return PROTO_UNAVAILABLE;
	proto_mark_retired(s, d.blob_name);
	return PROTO_OK;
}

/* Give the claim back so a later run retries; a failure here only delays that until the lease ends. */
static void
release_claim(struct services *s, const char *blob_name, const char *claimer)
{
	enum db_err e = blobs_release_retired(s->db, blob_name, claimer);

	if (e != DB_OK)
		log_warn("claim on %s kept until its lease ends (%s)", blob_name, db_err_name(e));
}

enum proto_result
proto_drain_retired(struct services *s, const char *blob_name, const char *claimer)
{
	const struct blob_tag retired[] = { { TAG_STATE_KEY, tag_state_name(TAG_STATE_RETIRED) } };
	struct blob_tag_set tags;
	struct blob_result r;
	char guard[300];
	int referenced = 1;
	enum db_err e;

	e = blobs_claim_retired(s->db, blob_name, claimer, s->cfg->sweep_lease);
	if (e == DB_CONFLICT)
		return PROTO_NOT_FOUND;
	if (e != DB_OK)
		return proto_from_db(e);
	e = blobs_is_referenced(s->db, blob_name, &referenced);
	if (e != DB_OK || referenced) {
		if (referenced && e == DB_OK)
			log_error("retired blob %s is still referenced by a document; not deleting",
				  blob_name);
		release_claim(s, blob_name, claimer);
		return e == DB_OK ? PROTO_FAILED : proto_from_db(e);
	}
	if (FAILPOINT("drain.after_claim"))
		goto release;
	if (blob_get_tags(s->blob, blob_name, &tags, &r) != 0) {
		if (r.status == BLOB_NOT_FOUND)
			goto drop;
		goto release;
	}
	if (tag_state_from_name(sole_state_tag(&tags)) != TAG_STATE_RETIRED) {
		/* Conditional on what we just read, so a concurrent change wins. */
		const char *cur = sole_state_tag(&tags);

		if (cur == NULL || tag_guard_for_value(cur, guard, sizeof guard) != 0) {
			log_error("blob %s has unexpected tags; not deleting", blob_name);
			goto release;
		}
		if (blob_set_tags(s->blob, blob_name, retired, 1, guard, &r) != 0 &&
		    r.status != BLOB_NOT_FOUND) {
			blob_log_failure("retire tag", blob_name, &r);
			goto release;
		}
	}
	if (FAILPOINT("drain.after_tag"))
		goto release;
	if (blob_delete(s->blob, blob_name, tag_state_guard(TAG_STATE_RETIRED), NULL, &r) != 0 &&
	    r.status != BLOB_NOT_FOUND) {
		blob_log_failure("outbox delete", blob_name, &r);
		goto release;
	}
	if (FAILPOINT("drain.after_delete"))
		return PROTO_UNAVAILABLE;
drop:
	e = blobs_drop_claimed(s->db, blob_name, claimer);
	return e == DB_OK ? PROTO_OK : proto_from_db(e);
release:
	release_claim(s, blob_name, claimer);
	return PROTO_UNAVAILABLE;
}
