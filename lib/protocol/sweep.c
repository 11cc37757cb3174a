/* sweep.c - see sweep.h and doc/design.md ("The claim and the fence", "What a crash leaves", "Replace, delete and the outbox"). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gnutls/crypto.h>

#include "base/clock.h"
#include "base/failpoint.h"
#include "base/log.h"
#include "protocol/protocol.h"
#include "protocol/stray.h"
#include "protocol/sweep.h"
#include "registry/events_db.h"
#include "registry/sweep_db.h"

/* ---- the decision -------------------------------------------------------- */

static const char *const action_names[] = {
	"drop", "purge-then-drop", "delete-pending-then-drop", "roll-forward", "roll-back", "leave",
	"direct-roll-forward", "delete-if-match-then-drop",
};

const char *
sweep_action_name(enum sweep_action a)
{
	return (size_t)a < ARRAY_LEN(action_names) ? action_names[a] : "?";
}

/*
 * doc/design.md's "What a crash leaves" as a function.  A name some other document
 * points at is never the sweeper's to delete or to re-point (I2), whatever
 * storage says.  Only a blob tagged pending is ever deleted directly; a
 * committed one is rolled forward (create) or goes through the outbox,
 * which re-tags it retired first (replace).
 */
enum sweep_action
sweep_decide(const struct sweep_facts *f)
{
	if (f->referenced)
		return SWEEP_LEAVE;
	if (!f->blob_exists)
		return f->uncommitted_blocks ? SWEEP_PURGE_THEN_DROP : SWEEP_DROP;
	/* A direct intent's tags are the client's: only finalize's record of
	 * the bytes, still in place, makes it a document (doc/design.md "Direct
	 * uploads"). */
	if (f->direct)
		return f->recorded && f->etag_matches ? SWEEP_DIRECT_ROLL_FORWARD
						      : SWEEP_DELETE_IF_MATCH_THEN_DROP;
	switch (f->tag) {
	case TAG_STATE_PENDING:
		/* Staged blocks on the name go with the blob. */
		return SWEEP_DELETE_PENDING_THEN_DROP;
	case TAG_STATE_COMMITTED:
		if (f->purpose == PURPOSE_REPLACE)
			return SWEEP_ROLL_BACK;
		/* Bytes whose recorded size and hash do not hold are not a
		 * document we can vouch for; a human looks. */
		return f->metadata_matches ? SWEEP_ROLL_FORWARD : SWEEP_LEAVE;
	case TAG_STATE_RETIRED:
		/* A replace's blob some earlier rollback already re-tagged. */
		return f->purpose == PURPOSE_REPLACE ? SWEEP_ROLL_BACK : SWEEP_LEAVE;
	case TAG_STATE_NONE:
	case TAG_STATE_UNKNOWN:
		break;
	}
	return SWEEP_LEAVE;
}

/* ---- one item ------------------------------------------------------------ */

static void
report_add(struct sweep_report *to, const struct sweep_report *from)
{
	to->dropped += from->dropped;
	to->deleted += from->deleted;
	to->purged += from->purged;
	to->rolled_forward += from->rolled_forward;
	to->rolled_back += from->rolled_back;
	to->outbox += from->outbox;
	to->taken_over += from->taken_over;
	to->keys_expired += from->keys_expired;
	to->strays += from->strays;
	to->problems += from->problems;
	to->deferred += from->deferred;
	to->lease_expired += from->lease_expired;
	to->unavailable |= from->unavailable;
	to->temporary |= from->temporary;
	to->refused |= from->refused;
	if (to->cause[0] == '\0' && copy_cstr(to->cause, sizeof to->cause, from->cause)) {
		/* a cut cause still says what failed */
	}
}

static int
is_sha256_hex(const char *s)
{
	size_t i;

	for (i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return s[64] == '\0';
}

/* The committing call wrote x-ms-meta-size and -sha256; the service's own
 * Content-Length must agree, and so must the intent where it knows them. */
static int
metadata_matches(const struct sweep_item *it, const struct blob_props *p)
{
	if (p->meta_size < 0 || (uint64_t)p->meta_size != p->size || !is_sha256_hex(p->meta_sha256))
		return 0;
	if (it->has_size && it->size != p->size)
		return 0;
	return it->sha256[0] == '\0' || strcmp(it->sha256, p->meta_sha256) == 0;
}

static int
item_referenced(const struct sweep_item *it)
{
	if (it->ref_doc_id == 0)
		return 0;
	/* A create intent's own pending document is the one we may drop. */
	return !(it->purpose == PURPOSE_CREATE && it->ref_doc_id == it->document_id &&
		 it->ref_doc_status == DOC_STATUS_PENDING);
}

static enum tag_state
state_tag(const struct blob_tag_set *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (strcmp(t->key[i], TAG_STATE_KEY) == 0)
			return tag_state_from_name(t->value[i]);
	return TAG_STATE_NONE;
}

/* The first trouble of a run, for the report's cause. */
static void
note_cause_storage(struct sweep_report *rep, const char *name, const struct blob_result *r)
{
	/* Bounded pieces: a long name cannot push out the service's words. */
	if (rep->cause[0] == '\0')
		snprintf(rep->cause, sizeof rep->cause, "storage, at %.100s: %.32s (HTTP %ld%s%s)%s%.120s",
			 name, blob_status_name(r->status), r->http_status, r->code[0] ? " " : "", r->code,
			 r->message[0] ? ": " : "", r->message);
}

static void
note_cause_db(struct sweep_report *rep, struct db *db, enum db_err e)
{
	if (e == DB_UNAVAILABLE || e == DB_FAILED)
		rep->refused |= db_last_refused(db);
	if (rep->cause[0] == '\0')
		snprintf(rep->cause, sizeof rep->cause, "database %s%s%s", db_err_name(e),
			 e == DB_UNAVAILABLE || e == DB_FAILED ? ": " : "",
			 e == DB_UNAVAILABLE || e == DB_FAILED ? db_last_error(db) : "");
}

/* Storage trouble: refused credentials (77); a connection that never
 * answered means the service is down (69); anything else is worth retrying
 * on the next run (75). */
static void
note_trouble(struct sweep_report *rep, const char *name, const struct blob_result *r)
{
	note_cause_storage(rep, name, r);
	if (r->status == BLOB_AUTH_FAILED)
		rep->refused = 1;
	else if (r->status == BLOB_TRANSIENT && r->http_status == 0)
		rep->unavailable = 1;
	else
		rep->temporary = 1;
}

/*
 * Read what storage holds at the name, without changing it.  Returns 0 with
 * f and p filled, or -1 with r saying what failed.
 */
static int
probe_blob(struct blob_client *b, const struct sweep_item *it, struct sweep_facts *f,
	   struct blob_props *p, struct blob_result *r)
{
	struct blob_tag_set tags;
	struct blob_block_counts bc;

	if (blob_get_tags(b, it->name, &tags, r) != 0) {
		if (r->status != BLOB_NOT_FOUND)
			return -1;
		f->blob_exists = 0;
		f->tag = TAG_STATE_NONE;
		if (blob_get_block_list(b, it->name, &bc, r) != 0)
			return r->status == BLOB_NOT_FOUND ? 0 : -1;
		f->uncommitted_blocks = bc.uncommitted > 0;
		return 0;
	}
	f->blob_exists = 1;
	f->tag = state_tag(&tags);
	if (f->direct) {
		if (blob_get_properties(b, it->name, p, r) != 0) {
			if (r->status != BLOB_NOT_FOUND)
				return -1;
			f->blob_exists = 0;	/* gone since the tags were read */
			return 0;
		}
		f->etag_matches = f->recorded && strcmp(it->etag, p->etag) == 0;
		return 0;
	}
	if (f->tag == TAG_STATE_COMMITTED && f->purpose == PURPOSE_CREATE) {
		if (blob_get_properties(b, it->name, p, r) != 0)
			return -1;
		f->metadata_matches = metadata_matches(it, p);
	}
	return 0;
}

static void
init_facts(const struct sweep_item *it, struct sweep_facts *f)
{
	memset(f, 0, sizeof *f);
	f->purpose = it->purpose == PURPOSE_REPLACE ? PURPOSE_REPLACE : PURPOSE_CREATE;
	f->referenced = item_referenced(it);
	f->direct = it->route == UPLOAD_VIA_DIRECT;
	f->recorded = f->direct && it->etag[0] != '\0' && it->has_size && is_sha256_hex(it->sha256);
}

static void
release(struct services *w, const char *claimer, const struct sweep_item *it, struct sweep_report *rep)
{
	enum db_err e = sweep_db_release(w->db, claimer, it->name);

	if (e != DB_OK)
		log_warn("claim on %s kept until its lease ends (%s)", it->name, db_err_name(e));
	rep->deferred++;
}

static void
drop_rows(struct services *w, const char *claimer, const struct sweep_item *it, uint64_t *counter,
	  struct sweep_report *rep)
{
	/* A deadlock or a lost certification runs the whole transaction
	 * again in there (DB_IN_TX). */
	enum db_err e = sweep_db_drop_intent(w->db, claimer, it);

	if (e == DB_OK) {
		(*counter)++;
		return;
	}
	/* The blob is gone; the rows stay claimed until the lease ends, and
	 * whoever takes them over finds nothing in storage and drops them. */
	log_warn("intent %s: storage done, rows left for a later run (%s)", it->name, db_err_name(e));
	note_cause_db(rep, w->db, e);
	rep->deferred++;
	if (e == DB_UNAVAILABLE)
		rep->unavailable = 1;
	else
		rep->temporary = 1;
}

static void
leave(const struct sweep_item *it, const struct sweep_facts *f, const char *why,
      struct sweep_report *rep)
{
	log_error("intent %s (%s, document %llu) left for a human: %s", it->name,
		  intent_purpose_name(it->purpose),
		  (unsigned long long)it->document_id,
		  why ? why : f->referenced ? "another document points at the name"
		  : f->tag == TAG_STATE_COMMITTED ? "committed blob whose size or SHA-256 metadata"
						    " does not match"
						  : "blob carries no state tag bindery wrote");
	rep->problems++;
}

/* The blob is committed and tagged so: its document becomes ready with
 * this size, SHA-256 and ETag (the last step of a roll-forward). */
static void
mark_rolled_forward(struct services *w, const char *claimer, const struct sweep_item *it,
		    const struct sweep_facts *f, uint64_t size, const char *sha256, const char *etag,
		    struct sweep_report *rep)
{
	enum db_err e = sweep_db_roll_forward(w->db, claimer, it, size, sha256, etag);

	if (e == DB_OK) {
		log_info("rolled %s forward: document %llu is ready", it->name,
			 (unsigned long long)it->document_id);
		rep->rolled_forward++;
	} else if (e == DB_CONFLICT) {
		leave(it, f, "no pending document of this intent to roll forward", rep);
	} else {
		log_warn("roll forward of %s: %s", it->name, db_err_name(e));
		release(w, claimer, it, rep);
		rep->temporary = 1;
	}
}

/*
 * Finalize recorded the bytes and they are still there: what it did not
 * finish, done the same way.  The tag goes first (doc/design.md,
 * "Create": why the tag flips before the row), set whole whatever the client put there; the document is pinned
 * to the recorded ETag, which the probe just found on the blob.
 */
static void
direct_roll_forward(struct services *w, const char *claimer, const struct sweep_item *it,
		    const struct sweep_facts *f, struct sweep_report *rep)
{
	const struct blob_tag committed[] = { { TAG_STATE_KEY, tag_state_name(TAG_STATE_COMMITTED) } };
	struct blob_result r;

	if (blob_set_tags(w->blob, it->name, committed, 1, NULL, &r) != 0) {
		log_warn("tag of direct upload %s: %s (HTTP %ld %s)", it->name, blob_status_name(r.status),
			 r.http_status, r.code);
		note_trouble(rep, it->name, &r);
		release(w, claimer, it, rep);
		return;
	}
	mark_rolled_forward(w, claimer, it, f, it->size, it->sha256, it->etag, rep);
}

/* A direct intent that is no document: its blob goes with If-Match on the
 * ETag just read, so bytes that changed since are looked at again by a
 * later run, never deleted unseen; then its rows. */
static void
direct_delete(struct services *w, const char *claimer, const struct sweep_item *it,
	      const struct blob_props *p, struct sweep_report *rep)
{
	struct blob_result r;

	if (blob_delete(w->blob, it->name, NULL, p->etag, &r) != 0 && r.status != BLOB_NOT_FOUND) {
		log_warn("delete of direct upload %s: %s (HTTP %ld %s)", it->name, blob_status_name(r.status),
			 r.http_status, r.code);
		if (r.status != BLOB_CONDITION_NOT_MET)
			note_trouble(rep, it->name, &r);
		release(w, claimer, it, rep);
		return;
	}
	drop_rows(w, claimer, it, &rep->deleted, rep);
}

/* Carry out the decision for a claimed intent whose facts are known. */
static void
act(struct services *w, const char *claimer, const struct sweep_item *it,
    const struct sweep_facts *f, const struct blob_props *p, struct sweep_report *rep)
{
	struct blob_result r;
	enum proto_result pr;
	enum db_err e;

	switch (sweep_decide(f)) {
	case SWEEP_DROP:
		drop_rows(w, claimer, it, &rep->dropped, rep);
		return;
	case SWEEP_PURGE_THEN_DROP:
		if (blob_purge_uncommitted(w->blob, it->name, &r) != 0 && r.status != BLOB_NOT_FOUND) {
			log_warn("purge of staged blocks on %s: %s (HTTP %ld %s)", it->name,
				 blob_status_name(r.status), r.http_status, r.code);
			if (r.status != BLOB_EXISTS)
				note_trouble(rep, it->name, &r);
			release(w, claimer, it, rep);
			return;
		}
		drop_rows(w, claimer, it, &rep->purged, rep);
		return;
	case SWEEP_DELETE_PENDING_THEN_DROP:
		if (blob_delete(w->blob, it->name, tag_state_guard(TAG_STATE_PENDING), NULL, &r) != 0 &&
		    r.status != BLOB_NOT_FOUND) {
			/* Refused by the guard: the tag moved since the probe,
			 * and the next run decides again from what it finds. */
			if (r.status != BLOB_CONDITION_NOT_MET) {
				log_warn("guarded delete of pending %s: %s (HTTP %ld %s); released for a later run",
					 it->name, blob_status_name(r.status), r.http_status, r.code);
				note_trouble(rep, it->name, &r);
			}
			release(w, claimer, it, rep);
			return;
		}
		drop_rows(w, claimer, it, &rep->deleted, rep);
		return;
	case SWEEP_ROLL_FORWARD:
		mark_rolled_forward(w, claimer, it, f, p->size, p->meta_sha256, p->etag, rep);
		return;
	case SWEEP_ROLL_BACK:
		/* One path for every blob that must go once committed: the outbox. */
		e = sweep_db_retire_claimed(w->db, claimer, it->name);
		if (e != DB_OK) {
			log_warn("roll back of %s: %s", it->name, db_err_name(e));
			rep->deferred++;
			rep->temporary = 1;
			return;
		}
		pr = proto_drain_retired(w, it->name, claimer);
		if (pr == PROTO_OK)
			rep->rolled_back++;
		else if (pr == PROTO_FAILED)
			rep->problems++;
		else if (pr != PROTO_NOT_FOUND) {
			rep->deferred++;
			rep->temporary = 1;
		}
		return;
	case SWEEP_LEAVE:
		leave(it, f, NULL, rep);
		return;
	case SWEEP_DIRECT_ROLL_FORWARD:
		direct_roll_forward(w, claimer, it, f, rep);
		return;
	case SWEEP_DELETE_IF_MATCH_THEN_DROP:
		direct_delete(w, claimer, it, p, rep);
		return;
	}
}

/*
 * The claim is a lease, and a batch can outlast it: once an item's lease has
 * run out, another sweeper may take it over and act on it, so the item is
 * ours to touch only if we can still renew it.  Renewing right before its
 * storage steps gives the item a whole lease, and the client's deadline
 * (measured from before the renewal, so never later than the lease's end)
 * keeps any call, retries included, from starting after it.  1: go on.
 */
static int
lease_hold(struct services *w, const char *claimer, const struct sweep_item *it,
	   struct sweep_report *rep)
{
	int64_t start = clock_now_ms();
	enum db_err e = sweep_db_renew_claim(w->db, claimer, it->name, w->cfg->sweep_lease);

	if (e == DB_OK) {
		blob_client_set_deadline(w->blob, start + (int64_t)w->cfg->sweep_lease * 1000);
		return 1;
	}
	if (e == DB_CONFLICT) {
		log_warn("intent %s: its lease ran out before its turn; not touched (a batch outlasting"
			 " [sweep] lease: lower --batch or raise the lease)", it->name);
		rep->lease_expired++;
		return 0;
	}
	log_warn("intent %s: renewing the lease: %s; left for a later run", it->name, db_err_name(e));
	note_cause_db(rep, w->db, e);
	rep->deferred++;
	if (e == DB_UNAVAILABLE)
		rep->unavailable = 1;
	else
		rep->temporary = 1;
	return 0;
}

/*
 * A claimed stale intent.  The first storage call is the guarded delete
 * itself: sweep_decide answers delete-pending for every unreferenced name
 * that holds a blob tagged pending, and the service refuses it for any
 * other tag, so trying it first is the decision taken speculatively and
 * saves a round trip on the common case.
 */
static void
sweep_intent(struct services *w, const char *claimer, const struct sweep_item *it,
	     struct sweep_report *rep)
{
	struct sweep_facts f;
	struct blob_props p;
	struct blob_result r;

	/* Tests hold an item here, between its claim and its storage steps, as
	 * a slow batch would. */
	(void)FAILPOINT("sweep.before_item");
	if (!lease_hold(w, claimer, it, rep))
		return;
	init_facts(it, &f);
	memset(&p, 0, sizeof p);
	if (f.referenced) {
		act(w, claimer, it, &f, &p, rep);
		return;
	}
	/* Not for a direct intent: its client tagged the blob pending, and
	 * finalize may have verified it (roll forward). */
	if (!f.direct &&
	    blob_delete(w->blob, it->name, tag_state_guard(TAG_STATE_PENDING), NULL, &r) == 0) {
		drop_rows(w, claimer, it, &rep->deleted, rep);
		return;
	}
	if (!f.direct && r.status != BLOB_NOT_FOUND && r.status != BLOB_CONDITION_NOT_MET) {
		log_warn("intent %s: %s (HTTP %ld %s); released for a later run", it->name,
			 blob_status_name(r.status), r.http_status, r.code);
		note_trouble(rep, it->name, &r);
		release(w, claimer, it, rep);
		return;
	}
	if (probe_blob(w->blob, it, &f, &p, &r) != 0) {
		log_warn("intent %s: %s (HTTP %ld %s); released for a later run", it->name,
			 blob_status_name(r.status), r.http_status, r.code);
		note_trouble(rep, it->name, &r);
		release(w, claimer, it, rep);
		return;
	}
	act(w, claimer, it, &f, &p, rep);
}

static void
drain_one(struct services *w, const char *claimer, const char *name, struct sweep_report *rep)
{
	enum proto_result pr;

	/* proto_drain_retired claims the row with a fresh lease after this:
	 * a deadline from now ends no later than that lease. */
	blob_client_set_deadline(w->blob, clock_now_ms() + (int64_t)w->cfg->sweep_lease * 1000);
	pr = proto_drain_retired(w, name, claimer);

	switch (pr) {
	case PROTO_OK:
		rep->outbox++;
		break;
	case PROTO_NOT_FOUND:	/* another sweeper or the responder had it */
		break;
	case PROTO_FAILED:
		rep->problems++;
		break;
	default:
		log_warn("outbox %s: database or storage unavailable; left for a later run", name);
		rep->deferred++;
		rep->temporary = 1;
		break;
	}
}

/* ---- the run ------------------------------------------------------------- */

struct work {
	struct sweep_item *items;
	size_t nitems, capitems;
	char (*names)[DOC_BLOB_NAME_MAX];
	size_t nnames, capnames;
	char last_time[DOC_TIME_MAX];	/* outbox keyset */
	char last_name[DOC_BLOB_NAME_MAX];
	size_t next;			/* the next index to hand out */
	pthread_mutex_t mu;
	char claimer[96];		/* this round's */
	const char *run_id;
	const char *prefix;		/* "" for all names */
	int oom;
};

struct worker {
	struct work *work;
	struct services *svc;
	struct sweep_report rep;
	pthread_t tid;
};

static int
collect_item(void *arg, const struct sweep_item *it)
{
	struct work *wk = arg;

	if (wk->nitems == wk->capitems) {
		size_t ncap = wk->capitems ? 2 * wk->capitems : 64;
		struct sweep_item *n = realloc(wk->items, ncap * sizeof *n);

		if (n == NULL) {
			wk->oom = 1;
			return 1;
		}
		wk->items = n;
		wk->capitems = ncap;
	}
	wk->items[wk->nitems++] = *it;
	return 0;
}

static int
collect_name(void *arg, const char *name, const char *retire_after)
{
	struct work *wk = arg;

	if (wk->nnames == wk->capnames) {
		size_t ncap = wk->capnames ? 2 * wk->capnames : 64;
		char (*n)[DOC_BLOB_NAME_MAX] = realloc(wk->names, ncap * sizeof *n);

		if (n == NULL) {
			wk->oom = 1;
			return 1;
		}
		wk->names = n;
		wk->capnames = ncap;
	}
	if (copy_cstr(wk->names[wk->nnames], DOC_BLOB_NAME_MAX, name) != 0 ||
	    copy_cstr(wk->last_name, sizeof wk->last_name, name) != 0 ||
	    copy_cstr(wk->last_time, sizeof wk->last_time, retire_after) != 0)
		return 1;
	wk->nnames++;
	return 0;
}

static void *
worker_main(void *arg)
{
	struct worker *wr = arg;
	struct work *wk = wr->work;
	size_t i;

	for (;;) {
		pthread_mutex_lock(&wk->mu);
		i = wk->next++;
		pthread_mutex_unlock(&wk->mu);
		if (i < wk->nitems)
			sweep_intent(wr->svc, wk->claimer, &wk->items[i], &wr->rep);
		else if (i < wk->nitems + wk->nnames)
			drain_one(wr->svc, wk->run_id, wk->names[i - wk->nitems], &wr->rep);
		else
			break;
		blob_client_set_deadline(wr->svc->blob, 0);	/* each item sets its own */
	}
	return NULL;
}

/* Hand the round's items to the workers and wait for them all. */
static void
dispatch(struct work *wk, struct worker *ws, size_t nw, struct sweep_report *rep)
{
	size_t i, started = 0;

	wk->next = 0;
	for (i = 0; i < nw; i++) {
		memset(&ws[i].rep, 0, sizeof ws[i].rep);
		ws[i].work = wk;
		if (nw > 1 && pthread_create(&ws[i].tid, NULL, worker_main, &ws[i]) == 0)
			started++;
	}
	if (started == 0)
		(void)worker_main(&ws[0]);	/* one worker, or no threads to be had */
	for (i = 0; i < started; i++)
		pthread_join(ws[i].tid, NULL);
	for (i = 0; i < nw; i++)
		report_add(rep, &ws[i].rep);
}

static void
make_run_id(char *out, size_t outlen)
{
	unsigned char rnd[4] = { 0, 0, 0, 0 };
	char host[33];

	if (gethostname(host, sizeof host) != 0)
		host[0] = '\0';
	host[sizeof host - 1] = '\0';
	if (gnutls_rnd(GNUTLS_RND_NONCE, rnd, sizeof rnd) != 0)
		log_warn("no randomness for the run id; host and pid only");
	snprintf(out, outlen, "%s:%ld:%02x%02x%02x%02x", host, (long)getpid(), rnd[0], rnd[1], rnd[2],
		 rnd[3]);
}

/* A claim statement, retried a few times when InnoDB picked it as a deadlock victim. */
static enum db_err
with_retry(enum db_err (*fn)(struct db *, const char *, const char *, unsigned, int64_t, unsigned,
			     uint64_t *),
	   struct db *db, const char *claimer, const char *prefix, unsigned a, int64_t b, unsigned c,
	   uint64_t *n)
{
	enum db_err e = DB_RETRY;
	int tries;

	for (tries = 0; tries < 5 && e == DB_RETRY; tries++)
		e = fn(db, claimer, prefix, a, b, c, n);
	return e;
}

static enum db_err
take_over3(struct db *db, const char *claimer, const char *prefix, unsigned lease, int64_t unused,
	   unsigned limit, uint64_t *n)
{
	(void)unused;
	return sweep_db_take_over(db, claimer, prefix, lease, limit, n);
}

static enum db_err
claim_round(struct services *s, const struct sweep_opts *o, struct work *wk,
	    struct sweep_report *rep, uint64_t *claimed)
{
	uint64_t taken = 0, fresh = 0;
	enum db_err e;

	e = with_retry(take_over3, s->db, wk->claimer, wk->prefix, s->cfg->sweep_lease, 0, o->batch,
		       &taken);
	if (e == DB_OK && taken < o->batch)
		e = with_retry(sweep_db_claim_stale, s->db, wk->claimer, wk->prefix, s->cfg->sweep_lease,
			       o->cutoff, o->batch - (unsigned)taken, &fresh);
	if (e != DB_OK)
		return e;
	rep->taken_over += taken;
	*claimed = taken + fresh;
	wk->nitems = 0;
	if (*claimed == 0)
		return DB_OK;
	e = sweep_db_list_claimed(s->db, wk->claimer, collect_item, wk);
	return wk->oom ? DB_NOMEM : e;
}

static void
note_db(struct sweep_report *rep, struct db *db, enum db_err e)
{
	log_error("sweep stopped: database %s", db_err_name(e));
	note_cause_db(rep, db, e);
	if (e == DB_UNAVAILABLE)
		rep->unavailable = 1;
	else
		rep->temporary = 1;
}

/*
 * Finished idempotency keys past the TTL go in batches, each one short
 * statement; a deadlock victim's batch is tried again.  Unfinished keys
 * are not touched: they follow their intent (sweep_db_drop_intent).
 */
static void
prune_keys(struct services *s, const struct sweep_opts *o, const char *prefix,
	   struct sweep_report *rep)
{
	uint64_t n = 0;
	enum db_err e;
	int retries = 0;

	for (;;) {
		e = sweep_db_prune_keys(s->db, prefix, s->cfg->idempotency_ttl, o->batch, &n);
		if (e == DB_RETRY && ++retries < 3)
			continue;
		if (e != DB_OK) {
			note_db(rep, s->db, e);
			return;
		}
		rep->keys_expired += n;
		if (n < o->batch)
			return;
	}
}

/* --dry-run: how many keys prune_keys would forget. */
static void
dry_run_keys(struct services *s, const struct sweep_opts *o, const char *prefix,
	     struct sweep_report *rep)
{
	enum db_err e = sweep_db_count_expired_keys(s->db, prefix, s->cfg->idempotency_ttl,
						    &rep->keys_expired);

	if (e != DB_OK) {
		note_db(rep, s->db, e);
		return;
	}
	if (rep->keys_expired)
		fprintf(o->plan, "would forget %llu finished idempotency keys older than %us\n",
			(unsigned long long)rep->keys_expired, s->cfg->idempotency_ttl);
}

/* Pending blobs looked at per run: a backlog is worked off run by run. */
#define STRAY_BATCH 1000u

/*
 * Pending blobs no row names (stray.h): only names this installation writes
 * now, under the configured prefix or --prefix's narrower one (a run without
 * --prefix sweeps rows under any earlier prefix too, but a blob with no row
 * says nothing about whose it is); older than sweep_cutoff, whatever
 * --older-than says, since a fenced-out writer removes its own blob within
 * its compensation budget and a live upload always has its row.
 */
static void
sweep_strays(struct services *s, const struct sweep_opts *o, struct sweep_report *rep)
{
	const char *prefix = o->prefix && o->prefix[0] ? o->prefix : s->cfg->storage_prefix;
	struct stray_sweep st;

	if (stray_sweep(s, prefix, s->cfg->sweep_cutoff, STRAY_BATCH, o->dry_run ? o->plan : NULL,
			&st) != 0) {
		/* Refused: a credential that may not search by tags.  The
		 * lifecycle policy is then the backstop; not a run to repeat. */
		if (st.refused)
			log_warn("sweep: storage refused Find Blobs by Tags; pending blobs no row names "
				 "are left to the lifecycle policy (a SAS needs the f permission)");
		else
			rep->deferred++;
		return;
	}
	rep->strays += st.removed;
	rep->deferred += st.failed;
	if (st.more)
		log_info("sweep: more than %u pending blobs found; the next run goes on", STRAY_BATCH);
}

/* --dry-run: read everything, decide everything, change nothing. */
static enum sweep_err
dry_run(struct services *s, const struct sweep_opts *o, struct work *wk, struct sweep_report *rep)
{
	char after[DOC_BLOB_NAME_MAX] = "";
	struct sweep_facts f;
	struct blob_props p;
	struct blob_result r;
	enum sweep_action a;
	enum db_err e;
	size_t i;

	for (;;) {
		wk->nitems = 0;
		e = sweep_db_list_candidates(s->db, wk->prefix, o->cutoff, after, o->batch, collect_item,
					     wk);
		if (e != DB_OK || wk->oom) {
			note_db(rep, s->db, wk->oom ? DB_NOMEM : e);
			return SWEEP_OK;
		}
		for (i = 0; i < wk->nitems; i++) {
			const struct sweep_item *it = &wk->items[i];

			if (it->state == REGISTRY_DELETING) {
				fprintf(o->plan, "would return %s to the outbox (expired lease)\n", it->name);
				rep->taken_over++;
				continue;
			}
			init_facts(it, &f);
			if (!f.referenced && probe_blob(s->blob, it, &f, &p, &r) != 0) {
				fprintf(o->plan, "would retry %s later: %s (HTTP %ld %s)\n", it->name,
					blob_status_name(r.status), r.http_status, r.code);
				note_trouble(rep, it->name, &r);
				rep->deferred++;
				continue;
			}
			a = sweep_decide(&f);
			fprintf(o->plan, "would %s %s (%s intent, %s, idle %llds)\n", sweep_action_name(a),
				it->name, intent_purpose_name(it->purpose), registry_state_name(it->state),
				(long long)it->age);
			if (it->state == REGISTRY_SWEEPING)
				rep->taken_over++;
			switch (a) {
			case SWEEP_DROP: rep->dropped++; break;
			case SWEEP_PURGE_THEN_DROP: rep->purged++; break;
			case SWEEP_DELETE_PENDING_THEN_DROP: rep->deleted++; break;
			case SWEEP_ROLL_FORWARD: rep->rolled_forward++; break;
			case SWEEP_ROLL_BACK: rep->rolled_back++; break;
			case SWEEP_LEAVE: rep->problems++; break;
			case SWEEP_DIRECT_ROLL_FORWARD: rep->rolled_forward++; break;
			case SWEEP_DELETE_IF_MATCH_THEN_DROP: rep->deleted++; break;
			}
		}
		if (wk->nitems < o->batch)
			break;
		if (copy_cstr(after, sizeof after, wk->items[wk->nitems - 1].name) != 0)
			break;
	}
	for (;;) {
		wk->nnames = 0;
		e = sweep_db_list_due_retired(s->db, wk->prefix, wk->last_time, wk->last_name, o->batch,
					      collect_name, wk);
		if (e != DB_OK || wk->oom) {
			note_db(rep, s->db, wk->oom ? DB_NOMEM : e);
			return SWEEP_OK;
		}
		for (i = 0; i < wk->nnames; i++)
			fprintf(o->plan, "would delete retired blob %s (outbox)\n", wk->names[i]);
		rep->outbox += wk->nnames;
		if (wk->nnames < o->batch)
			break;
	}
	dry_run_keys(s, o, wk->prefix, rep);
	sweep_strays(s, o, rep);
	return SWEEP_OK;
}

/*
 * The events no responder delivered (a receiver down, a responder gone
 * between its commit and its post): every due one of this configuration's
 * receivers, under the run's prefix, in each document's order; then the
 * delivered ones past [events] retention are forgotten.
 */
static void
sweep_events(struct services *s, const char *prefix, struct sweep_report *rep)
{
	struct events_report er = { 0 };
	enum db_err e;

	if (s->events == NULL)
		return;
	e = events_deliver(s->events, s->db, 0, prefix, 0, &er);
	rep->events_delivered = er.delivered;
	rep->events_retried = er.retried;
	rep->events_dead = er.dead;
	if (e == DB_OK)
		e = events_db_prune(s->db, s->cfg->events_retention, &rep->events_pruned);
	if (e != DB_OK)
		note_db(rep, s->db, e);
}

enum sweep_err
sweep_run(struct services *s, const struct sweep_opts *o, struct sweep_report *rep)
{
	struct worker *ws = NULL;
	struct work wk;
	char run_id[64], err[256];
	size_t nw = o->parallel ? o->parallel : 1, i, opened = 0;
	uint64_t claimed = 0, released = 0;
	unsigned round = 0;
	int pending_done = 0, outbox_done = 0;
	enum sweep_err rc = SWEEP_FAILED;
	enum db_err e;

	memset(rep, 0, sizeof *rep);
	memset(&wk, 0, sizeof wk);
	pthread_mutex_init(&wk.mu, NULL);
	if (o->claimer)
		snprintf(run_id, sizeof run_id, "%s", o->claimer);
	else
		make_run_id(run_id, sizeof run_id);
	wk.run_id = run_id;
	wk.prefix = o->prefix ? o->prefix : "";
	if ((e = db_ensure(s->db)) != DB_OK) {
		log_error("database: %s", db_err_name(e));
		note_cause_db(rep, s->db, e);
		rc = e == DB_UNAVAILABLE ? SWEEP_UNAVAILABLE : SWEEP_FAILED;
		goto out;
	}
	if (o->dry_run) {
		rc = dry_run(s, o, &wk, rep);
		goto out;
	}
	/* One set of connections per worker: neither a blob client nor a
	 * MariaDB connection may be shared between threads.  They connect
	 * here, in one thread, because the client library's first-use
	 * initialisation is not thread-safe. */
	ws = calloc(nw, sizeof *ws);
	if (ws == NULL)
		goto out;
	for (i = 0; i < nw; i++) {
		if (services_open(s->cfg, &ws[i].svc, err, sizeof err) != 0) {
			log_error("worker %zu: %s", i, err);
			snprintf(rep->cause, sizeof rep->cause, "worker %zu: %s", i, err);
			goto out;
		}
		opened++;
		if ((e = db_ensure(ws[i].svc->db)) != DB_OK) {
			log_error("database: %s", db_err_name(e));
			note_cause_db(rep, ws[i].svc->db, e);
			rc = e == DB_UNAVAILABLE ? SWEEP_UNAVAILABLE : SWEEP_FAILED;
			goto out;
		}
	}
	/* Claims abandoned in the outbox by a crashed run go back to it. */
	do {
		e = sweep_db_release_expired_deleting(s->db, wk.prefix, o->batch, &released);
		rep->taken_over += released;
	} while (e == DB_OK && released == o->batch);
	if (e != DB_OK) {
		note_db(rep, s->db, e);
		rc = SWEEP_OK;
		goto out;
	}
	while (!(pending_done && outbox_done) && !rep->unavailable && !rep->temporary) {
		round++;
		snprintf(wk.claimer, sizeof wk.claimer, "%s/%u", run_id, round);
		wk.nitems = wk.nnames = 0;
		if (!pending_done) {
			e = claim_round(s, o, &wk, rep, &claimed);
			if (e != DB_OK) {
				note_db(rep, s->db, e);
				break;
			}
			pending_done = claimed == 0;
		}
		if (!outbox_done) {
			e = sweep_db_list_due_retired(s->db, wk.prefix, wk.last_time, wk.last_name,
						      o->batch, collect_name, &wk);
			if (e != DB_OK || wk.oom) {
				note_db(rep, s->db, wk.oom ? DB_NOMEM : e);
				break;
			}
			outbox_done = wk.nnames < o->batch;
		}
		if (wk.nitems + wk.nnames > 0)
			dispatch(&wk, ws, nw, rep);
	}
	/* A key is pruned by its age alone, storage or not. */
	prune_keys(s, o, wk.prefix, rep);
	sweep_strays(s, o, rep);
	sweep_events(s, wk.prefix, rep);
	rc = SWEEP_OK;
out:
	for (i = 0; i < opened; i++)
		services_free(ws[i].svc);
	free(ws);
	free(wk.items);
	free(wk.names);
	pthread_mutex_destroy(&wk.mu);
	return rc;
}
