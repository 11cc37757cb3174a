/* audit.c - see audit.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gnutls/crypto.h>

#include "protocol/audit.h"
#include "registry/blobs_db.h"
#include "base/failpoint.h"
#include "base/http_date.h"
#include "base/log.h"
#include "protocol/protocol.h"
#include "protocol/stamp.h"
#include "registry/audit_db.h"

/* One blob as the listing showed it. */
struct listed {
	char *name;		/* owned */
	char *etag;		/* owned */
	uint64_t size;
	char sha256[65];
	char last_modified[64];	/* an HTTP-date; "" if unknown */
	char state[16];		/* the state tag's value; "" without one; "?" if odd */
	int has_state;
	enum tag_state tag;
	int seen;		/* a registry row or document names it */
	int stamped;		/* its stamp names this installation and a document */
};

struct listing {
	struct listed *v;
	size_t n, cap;
	int oom;
	const char *install;	/* this installation's id, or NULL when unreadable */
};

/* Record one of a blob's tags; only the state tag matters here. */
static void
listed_tag(struct listed *x, const char *key, const char *value)
{
	if (strcmp(key, TAG_STATE_KEY) != 0)
		return;
	x->has_state = 1;
	x->tag = tag_state_from_name(value);
	if (copy_cstr(x->state, sizeof x->state, value) != 0)
		snprintf(x->state, sizeof x->state, "?");
}

static int
on_listed(void *ctx, const struct blob_list_item *it)
{
	struct listing *l = ctx;
	struct listed *x;
	size_t i;

	if (l->n == l->cap) {
		size_t ncap = l->cap ? 2 * l->cap : 1024;
		struct listed *nv = realloc(l->v, ncap * sizeof *nv);

		if (nv == NULL)
			goto oom;
		l->v = nv;
		l->cap = ncap;
	}
	x = &l->v[l->n];
	memset(x, 0, sizeof *x);
	x->name = strdup(it->name);
	x->etag = strdup(it->etag);
	if (x->name == NULL || x->etag == NULL) {
		free(x->name);
		free(x->etag);
		goto oom;
	}
	x->size = it->size;
	if (copy_cstr(x->sha256, sizeof x->sha256, it->meta_sha256) != 0)
		x->sha256[0] = '\0';
	if (copy_cstr(x->last_modified, sizeof x->last_modified, it->last_modified) != 0)
		x->last_modified[0] = '\0';
	for (i = 0; i < it->ntags; i++)
		listed_tag(x, it->tags[i].key, it->tags[i].value);
	{
		struct stamp st;

		/* Without the installation's id every stamp counts as ours: the
		 * repair must never delete what could be an acknowledged document. */
		x->stamped = stamp_decode(it->meta, it->nmeta, &st) &&
			     (l->install == NULL || strcmp(st.install, l->install) == 0);
	}
	l->n++;
	return 0;
oom:
	l->oom = 1;
	return 1;
}

static int
cmp_listed(const void *a, const void *b)
{
	return strcmp(((const struct listed *)a)->name, ((const struct listed *)b)->name);
}

static struct listed *
find_listed(struct listing *l, const char *name)
{
	struct listed key;

	memset(&key, 0, sizeof key);
	key.name = (char *)name;
	return bsearch(&key, l->v, l->n, sizeof *l->v, cmp_listed);
}

struct rows {
	struct audit_row *v;
	size_t n, cap;
	int oom;
};

static int
on_row(void *ctx, const struct audit_row *r)
{
	struct rows *rs = ctx;

	if (rs->n == rs->cap) {
		size_t ncap = rs->cap ? 2 * rs->cap : 1024;
		struct audit_row *nv = realloc(rs->v, ncap * sizeof *nv);

		if (nv == NULL) {
			rs->oom = 1;
			return 1;
		}
		rs->v = nv;
		rs->cap = ncap;
	}
	rs->v[rs->n++] = *r;
	return 0;
}

/* Append {kind, name, detail[, document_id]} to the findings; returns it (borrowed). */
static json_t *
finding(struct audit_report *rep, const char *kind, const char *name, uint64_t doc_id,
	const char *detail)
{
	json_t *f = json_pack("{s:s, s:s, s:s}", "kind", kind, "name", name, "detail", detail);

	if (f == NULL)
		return NULL;
	if (doc_id) {
		char id[24];

		snprintf(id, sizeof id, "%llu", (unsigned long long)doc_id);
		json_object_set_new(f, "document_id", json_string(id));
	}
	if (json_array_append_new(rep->findings, f) != 0)
		return NULL;
	return f;
}

static void
mark_repaired(json_t *f, int ok)
{
	if (f)
		json_object_set_new(f, "repaired", json_boolean(ok));
}

/*
 * Repair one orphan: old enough, still unknown to the database right now,
 * and still the very blob the listing showed (If-Match) with the tag it
 * showed (x-ms-if-tags) where it had one.
 */
static int
repair_orphan(struct services *s, const struct audit_opts *o, const struct listed *x,
	      char *why, size_t whylen)
{
	struct blob_props p;
	struct blob_result r;
	struct blob_row row;
	char guard[64];
	int64_t t;
	int referenced = 1;
	enum db_err e;

	if (blob_get_properties(s->blob, x->name, &p, &r) != 0) {
		snprintf(why, whylen, "%s", r.status == BLOB_NOT_FOUND ? "gone already" : "unreadable");
		return r.status == BLOB_NOT_FOUND ? 1 : -1;
	}
	if (http_date_parse(p.last_modified, strlen(p.last_modified), &t) != 0 ||
	    time(NULL) - t < (int64_t)o->min_age) {
		snprintf(why, whylen, "younger than --min-age %us (or no date); left", o->min_age);
		return 0;
	}
	e = blobs_get(s->db, x->name, &row);
	if (e == DB_OK || (e == DB_NOT_FOUND && blobs_is_referenced(s->db, x->name, &referenced) != DB_OK)) {
		snprintf(why, whylen, "the database knows it now; left");
		return 0;
	}
	if (e != DB_NOT_FOUND || referenced) {
		snprintf(why, whylen, "%s; left", referenced ? "a document references it" : db_err_name(e));
		return 0;
	}
	if (x->has_state &&
	    (x->state[0] == '?' || tag_guard_for_value(x->state, guard, sizeof guard) != 0)) {
		snprintf(why, whylen, "odd state tag; left");
		return 0;
	}
	if (blob_delete(s->blob, x->name, x->has_state ? guard : NULL, x->etag, &r) != 0 &&
	    r.status != BLOB_NOT_FOUND) {
		snprintf(why, whylen, "delete refused: %s (HTTP %ld %s)", blob_status_name(r.status),
			 r.http_status, r.code);
		return -1;
	}
	snprintf(why, whylen, "deleted");
	return 1;
}

/* Only toward the database's truth: a ready document's blob becomes committed. */
static int
repair_tag(struct services *s, const struct listed *x, char *why, size_t whylen)
{
	const struct blob_tag committed[] = { { TAG_STATE_KEY, tag_state_name(TAG_STATE_COMMITTED) } };
	struct blob_result r;
	char guard[64];

	if (x->has_state &&
	    (x->state[0] == '?' || tag_guard_for_value(x->state, guard, sizeof guard) != 0)) {
		snprintf(why, whylen, "odd state tag; left");
		return 0;
	}
	/* A retired tag is a delete or replace that committed: the row is
	 * older than that (a restore from a backup), and a user's delete
	 * stands.  --adopt decides it; nothing tags it committed again. */
	if (x->has_state && x->tag == TAG_STATE_RETIRED) {
		snprintf(why, whylen, "retired: deleted or replaced after a restored backup?"
			 " audit --repair --adopt; left");
		return 0;
	}
	if (blob_set_tags(s->blob, x->name, committed, 1, x->has_state ? guard : NULL, &r) != 0) {
		snprintf(why, whylen, "re-tag refused: %s (HTTP %ld %s)", blob_status_name(r.status),
			 r.http_status, r.code);
		return -1;
	}
	snprintf(why, whylen, "tagged committed");
	return 1;
}

struct rehash {
	gnutls_hash_hd_t h;
	uint64_t bytes;
};

static int
rehash_data(void *ctx, const char *data, size_t len)
{
	struct rehash *rh = ctx;

	rh->bytes += len;
	return gnutls_hash(rh->h, data, len) != 0;
}

/*
 * --deep: read the blob back and hash it.  The service checked each block's
 * MD5 on the way in, but x-ms-blob-content-md5 on a block list is stored,
 * not checked, and metadata can be rewritten: only the bytes themselves
 * prove a ready document is what its row says.  1 match, 0 differ, -1 the
 * read failed (reported, not counted as dangling).
 */
static int
deep_matches(struct services *s, const struct audit_row *row, char *detail, size_t detaillen)
{
	struct rehash rh = { NULL, 0 };
	struct blob_result r;
	unsigned char digest[32];
	char hex[65];
	size_t i;

	if (gnutls_hash_init(&rh.h, GNUTLS_DIG_SHA256) != 0)
		return -1;
	if (blob_get(s->blob, row->name, 0, 0, NULL, NULL, rehash_data, &rh, &r) != 0) {
		gnutls_hash_deinit(rh.h, NULL);
		snprintf(detail, detaillen, "re-reading the blob failed: %s", blob_status_name(r.status));
		return -1;
	}
	gnutls_hash_deinit(rh.h, digest);
	for (i = 0; i < sizeof digest; i++)
		snprintf(hex + 2 * i, 3, "%02x", digest[i]);
	if (rh.bytes == row->doc_size && strcmp(hex, row->doc_sha256) == 0)
		return 1;
	snprintf(detail, detaillen, "ready document says %llu bytes sha256 %.12s..., its bytes are %llu"
		 " bytes sha256 %.12s...", (unsigned long long)row->doc_size, row->doc_sha256,
		 (unsigned long long)rh.bytes, hex);
	return 0;
}

/* ---- what a name shows, and whether it still does ----------------------- */

/* The findings one name can give, as a set. */
enum {
	F_UNREGISTERED = 1 << 0,	/* a ready document's blob has no registry row */
	F_DANGLING_MISSING = 1 << 1,	/* a ready document's blob is not there */
	F_DANGLING_DIFFERS = 1 << 2,	/* ... or not of the document's size or hash, or
					 * not the blob committed (another ETag) */
	F_TAG_MISMATCH = 1 << 3,	/* ... or not tagged committed */
	F_STALE = 1 << 4,		/* a pending or sweeping intent idle past the cutoff */
	F_COMMITTED_UNREFERENCED = 1 << 5,
	F_ORPHAN = 1 << 6,		/* a blob no row and no document knows */
};

/* The ETag's value without its quotes: a listing gives 0x8D..., a header "0x8D...". */
static struct span
etag_value(const char *etag)
{
	struct span v = span_from_cstr(etag);

	if (v.len >= 2 && v.ptr[0] == '"' && v.ptr[v.len - 1] == '"') {
		v.ptr++;
		v.len -= 2;
	}
	return v;
}

/* Is the listed blob another one than the committed blob the document pins (ETag)? */
static int
etag_moved(const struct listed *x, const struct audit_row *row)
{
	struct span a, b;

	if (row->doc_etag[0] == '\0' || x->etag == NULL)
		return 0;	/* not pinned (ready before 008) */
	a = etag_value(x->etag);
	b = etag_value(row->doc_etag);
	return a.len != b.len || memcmp(a.ptr, b.ptr, a.len) != 0;
}

/*
 * Is the comparison by ETag possible?  Then it decides alone: the same ETag
 * is the same bytes, and a sha256 in metadata is not bindery's word on a
 * direct upload (its client set it; finalize hashed the bytes instead).
 */
static int
etag_pinned(const struct listed *x, const struct audit_row *row)
{
	return row->doc_etag[0] != '\0' && x->etag != NULL;
}

/*
 * What a blob (x, NULL when there is none) and the rows of its name (row,
 * NULL when there is neither a registry row nor a document) show, as F_*.
 * Pure: the audit's first reads and its re-read go through the same rules.
 */
static unsigned
findings_of(const struct listed *x, const struct audit_row *row, unsigned stale_cutoff)
{
	unsigned f = 0;

	if (row == NULL)
		return x ? F_ORPHAN : 0;
	if (row->doc_id && row->doc_status == DOC_STATUS_READY) {
		if (!row->has_registry)
			f |= F_UNREGISTERED;
		if (x == NULL)
			return f | F_DANGLING_MISSING;
		if (x->size != row->doc_size || etag_moved(x, row) ||
		    (!etag_pinned(x, row) && x->sha256[0] && row->doc_sha256[0] &&
		     strcmp(x->sha256, row->doc_sha256) != 0))
			return f | F_DANGLING_DIFFERS;
		return x->tag != TAG_STATE_COMMITTED ? f | F_TAG_MISMATCH : f;
	}
	if (!row->has_registry)
		return 0;	/* a pending document without a registry row: the sweep's drop left it? */
	/* A resumable upload may rest for a day under its lease: idle is
	 * not stale while the lease holds. */
	if ((row->state == REGISTRY_PENDING || row->state == REGISTRY_SWEEPING) &&
	    row->age >= (int64_t)stale_cutoff && !row->lease_live)
		return F_STALE;
	if (row->state == REGISTRY_COMMITTED && x && x->tag == TAG_STATE_COMMITTED)
		return F_COMMITTED_UNREFERENCED;
	return 0;
}

/* One name read again: its blob, then its rows (the audit's own order). */
struct fresh {
	struct listed x;		/* x.name and x.etag point into this struct */
	char name[1025];		/* the service's longest blob name, 1024 */
	char etag[128];
	int blob_exists;
	struct audit_row row;
	int row_exists;
};

/* 0 with fr filled, or -1 when a read failed. */
static BINDERY_NODISCARD int
reread(struct services *s, const char *name, struct fresh *fr)
{
	struct blob_tag_set tags;
	struct blob_props p;
	struct blob_result r;
	enum db_err e;
	size_t i;

	memset(fr, 0, sizeof *fr);
	if (copy_cstr(fr->name, sizeof fr->name, name) != 0)
		return -1;
	fr->x.name = fr->name;
	fr->x.etag = fr->etag;
	if (blob_get_properties(s->blob, name, &p, &r) == 0 &&
	    blob_get_tags(s->blob, name, &tags, &r) == 0) {
		fr->blob_exists = 1;
		fr->x.size = p.size;
		if (copy_cstr(fr->x.sha256, sizeof fr->x.sha256, p.meta_sha256) != 0 ||
		    copy_cstr(fr->etag, sizeof fr->etag, p.etag) != 0 ||
		    copy_cstr(fr->x.last_modified, sizeof fr->x.last_modified, p.last_modified) != 0)
			return -1;
		for (i = 0; i < tags.n; i++)
			listed_tag(&fr->x, tags.key[i], tags.value[i]);
	} else if (r.status != BLOB_NOT_FOUND) {
		return -1;
	}
	e = audit_db_reread(s->db, name, &fr->row);
	if (e != DB_OK && e != DB_NOT_FOUND)
		return -1;
	fr->row_exists = e == DB_OK;
	return 0;
}

/*
 * The listing and the walk are two reads at two moments, and the protocol
 * moves on between them: a create flips its tag to committed and then its
 * document to ready, a sweep deletes a blob and then drops its rows.  So a
 * finding (seen, a set of F_*) is reported only if a fresh read of that
 * one name still shows it.  Returns the findings that still hold; *fresh_ok
 * says fr holds the state to report them with.  A re-read that fails keeps
 * every finding: a read that did not work must not hide a real problem.
 */
static unsigned
recheck(struct services *s, const struct audit_opts *o, const char *name, unsigned seen,
	struct fresh *fr, int *fresh_ok)
{
	unsigned now;

	*fresh_ok = 0;
	if (FAILPOINT("audit.before_recheck") || reread(s, name, fr) != 0) {
		log_warn("audit: %s could not be read again; reported as first read", name);
		return seen;
	}
	*fresh_ok = 1;
	now = findings_of(fr->blob_exists ? &fr->x : NULL, fr->row_exists ? &fr->row : NULL,
			  o->stale_cutoff);
	if (seen & ~now)
		log_info("audit: %s changed while it was audited (an operation in flight);"
			 " only what still holds is reported", name);
	return seen & now;
}

/* ---- reporting ----------------------------------------------------------- */

/* --deep for a ready document whose blob agrees on size: 0 when its bytes
 * turned out to differ (reported as dangling). */
static int
deep_ok(struct services *s, const struct audit_row *row, struct audit_report *rep)
{
	char detail[256];
	int rc = deep_matches(s, row, detail, sizeof detail);

	rep->deep_checked++;
	if (rc == 0) {
		rep->dangling++;
		(void)finding(rep, "dangling", row->name, row->doc_id, detail);
		return 0;
	}
	if (rc < 0) {
		rep->unreadable++;
		(void)finding(rep, "unreadable", row->name, row->doc_id, detail);
	}
	return 1;
}

static void
report_tag_mismatch(struct services *s, const struct audit_opts *o, const struct listed *x,
		    const struct audit_row *row, struct audit_report *rep)
{
	char detail[256], why[200];
	json_t *f;
	int rc;

	snprintf(detail, sizeof detail, "ready document's blob tagged %s",
		 x->has_state ? x->state : "(no state tag)");
	f = finding(rep, "tag_mismatch", row->name, row->doc_id, detail);
	rep->tag_mismatches++;
	if (!o->repair)
		return;
	rc = repair_tag(s, x, why, sizeof why);
	mark_repaired(f, rc == 1);
	if (f)
		json_object_set_new(f, "repair", json_string(why));
	if (rc == 1)
		rep->retagged++;
	else if (rc < 0)
		rep->repair_failed++;
}

static void
report_stale(struct services *s, const struct listed *x, const struct audit_row *row,
	     struct audit_report *rep)
{
	struct blob_block_counts bc;
	struct blob_result r;
	char detail[256];

	snprintf(detail, sizeof detail, "%s %s intent idle %llds", registry_state_name(row->state),
		 intent_purpose_name(row->purpose), (long long)row->age);
	rep->stale_pending++;
	(void)finding(rep, "stale_pending", row->name, row->doc_id, detail);
	/* Staged blocks are visible to Get Block List only, and only matter
	 * on a name without a committed blob. */
	if (x == NULL && blob_get_block_list(s->blob, row->name, &bc, &r) == 0 && bc.uncommitted > 0) {
		snprintf(detail, sizeof detail, "%u staged uncommitted blocks, no blob", bc.uncommitted);
		rep->uncommitted++;
		(void)finding(rep, "uncommitted_blocks", row->name, row->doc_id, detail);
	}
}

/* Report the findings f of one name, from its blob x (NULL: none) and row. */
static void
report_row(struct services *s, const struct audit_opts *o, const struct listed *x,
	   const struct audit_row *row, unsigned f, struct audit_report *rep)
{
	char detail[256];

	if (f & F_UNREGISTERED) {
		rep->unregistered++;
		(void)finding(rep, "unregistered", row->name, row->doc_id,
			      "a ready document's blob has no registry row");
	}
	if (f & F_DANGLING_MISSING) {
		rep->dangling++;
		(void)finding(rep, "dangling", row->name, row->doc_id, "ready document, blob missing");
		return;
	}
	if (f & F_DANGLING_DIFFERS) {
		snprintf(detail, sizeof detail, "ready document says %llu bytes sha256 %.12s... ETag %s,"
			 " blob has %llu bytes sha256 %.12s... ETag %s", (unsigned long long)row->doc_size,
			 row->doc_sha256, row->doc_etag[0] ? row->doc_etag : "(not recorded)",
			 (unsigned long long)x->size, x->sha256[0] ? x->sha256 : "(none)",
			 x->etag ? x->etag : "(none)");
		rep->dangling++;
		(void)finding(rep, "dangling", row->name, row->doc_id, detail);
		return;
	}
	if (o->deep && x && row->doc_id && row->doc_status == DOC_STATUS_READY && !deep_ok(s, row, rep))
		return;
	if (f & F_TAG_MISMATCH)
		report_tag_mismatch(s, o, x, row, rep);
	if (f & F_STALE)
		report_stale(s, x, row, rep);
	if (f & F_COMMITTED_UNREFERENCED) {
		rep->committed_unreferenced++;
		(void)finding(rep, "committed_unreferenced", row->name, row->doc_id,
			      "committed blob and registry row, but no ready document points at it");
	}
}

static void
check_row(struct services *s, const struct audit_opts *o, struct listing *l,
	  const struct audit_row *walked, struct audit_report *rep)
{
	struct listed *listed = find_listed(l, walked->name);
	const struct listed *x = listed;
	const struct audit_row *row = walked;
	struct fresh fr;
	int fresh_ok = 0;
	unsigned f;

	if (listed)
		listed->seen = 1;
	f = findings_of(listed, walked, o->stale_cutoff);
	if (f != 0) {
		f = recheck(s, o, walked->name, f, &fr, &fresh_ok);
		if (fresh_ok) {
			if (!fr.row_exists)
				return;	/* its rows went: nothing a row shows can hold */
			x = fr.blob_exists ? &fr.x : NULL;
			row = &fr.row;
		}
	}
	report_row(s, o, x, row, f, rep);
}

static void
check_orphan(struct services *s, const struct audit_opts *o, const struct listed *listed,
	     struct audit_report *rep)
{
	const struct listed *x = listed;
	char detail[256], why[200];
	struct fresh fr;
	int fresh_ok = 0, rc;
	json_t *f;
	int64_t written;

	/* Listed before the walk: gone since, or registered since, is no orphan. */
	if (!(recheck(s, o, listed->name, F_ORPHAN, &fr, &fresh_ok) & F_ORPHAN))
		return;
	if (fresh_ok)
		x = &fr.x;
	if (x->has_state && x->tag == TAG_STATE_PENDING &&
	    http_date_parse(x->last_modified, strlen(x->last_modified), &written) == 0 &&
	    (int64_t)time(NULL) - written <= (int64_t)o->stale_cutoff) {
		/* A writer fenced out right now removes it within its
		 * compensation budget, the sweep after the cutoff (stray.h):
		 * not yet anybody's problem, and not the repair's to delete.
		 * Without a date it is not shown young: an orphan. */
		snprintf(detail, sizeof detail, "pending, no row; %llu bytes, last written %s: its "
			 "writer or the sweep after sweep_cutoff removes it",
			 (unsigned long long)x->size, x->last_modified);
		(void)finding(rep, "in_flight", x->name, 0, detail);
		rep->in_flight++;
		return;
	}
	if (listed->stamped && x->has_state && x->tag == TAG_STATE_COMMITTED) {
		/* An acknowledged document the database does not know (a restore
		 * from an older backup): --adopt makes it again; nothing deletes it. */
		snprintf(detail, sizeof detail, "committed, no row, its metadata names a document of this"
			 " installation; %llu bytes: adoptable (audit --repair --adopt)",
			 (unsigned long long)x->size);
		(void)finding(rep, "adoptable", x->name, 0, detail);
		rep->adoptable++;
		return;
	}
	snprintf(detail, sizeof detail, "no registry row or document; %llu bytes, tag %s",
		 (unsigned long long)x->size, x->has_state ? x->state : "(none)");
	f = finding(rep, "orphan", x->name, 0, detail);
	rep->orphans++;
	if (!o->repair)
		return;
	rc = repair_orphan(s, o, x, why, sizeof why);
	mark_repaired(f, rc == 1);
	if (f)
		json_object_set_new(f, "repair", json_string(why));
	if (rc == 1)
		rep->orphans_deleted++;
	else if (rc < 0)
		rep->repair_failed++;
}

enum audit_err
audit_run(struct services *s, const struct audit_opts *o, struct audit_report *rep)
{
	struct listing l;
	struct rows rs;
	struct blob_result r;
	enum audit_err rc = AUDIT_FAILED;
	enum db_err e;
	size_t i;

	memset(rep, 0, sizeof *rep);
	memset(&l, 0, sizeof l);
	memset(&rs, 0, sizeof rs);
	rep->findings = json_array();
	if (rep->findings == NULL)
		goto out;
	l.install = services_install_id(s);
	if ((e = db_ensure(s->db)) != DB_OK) {
		rc = e == DB_UNAVAILABLE ? AUDIT_DB_UNAVAILABLE : AUDIT_FAILED;
		goto out;
	}
	/* The listing first, the database after: an intent is registered
	 * before its first byte is sent, so every listed blob that is not an
	 * orphan already has its row by the time the walk reads it. */
	if (blob_list(s->blob, o->prefix, BLOB_LIST_TAGS | BLOB_LIST_METADATA, on_listed,
		      &l, &r) != 0) {
		log_error("listing the container: %s (HTTP %ld %s)", blob_status_name(r.status),
			  r.http_status, r.code);
		rep->listing = r;
		rc = l.oom ? AUDIT_FAILED : AUDIT_STORAGE_UNAVAILABLE;
		goto out;
	}
	rep->listed = l.n;
	qsort(l.v, l.n, sizeof *l.v, cmp_listed);
	/* Tests change a name's state here, between the audit's two reads. */
	(void)FAILPOINT("audit.after_listing");
	e = audit_db_walk(s->db, o->prefix, on_row, &rs);
	if (e != DB_OK || rs.oom) {
		log_error("walking the registry: %s", rs.oom ? "out of memory" : db_err_name(e));
		rc = e == DB_UNAVAILABLE ? AUDIT_DB_UNAVAILABLE : AUDIT_FAILED;
		goto out;
	}
	rep->rows = rs.n;
	for (i = 0; i < rs.n; i++)
		check_row(s, o, &l, &rs.v[i], rep);
	for (i = 0; i < l.n; i++)
		if (!l.v[i].seen)
			check_orphan(s, o, &l.v[i], rep);
	rc = AUDIT_OK;
out:
	for (i = 0; i < l.n; i++) {
		free(l.v[i].name);
		free(l.v[i].etag);
	}
	free(l.v);
	free(rs.v);
	return rc;
}

void
audit_report_clear(struct audit_report *rep)
{
	json_decref(rep->findings);
	memset(rep, 0, sizeof *rep);
}

uint64_t
audit_problems_left(const struct audit_report *rep)
{
	return rep->orphans - rep->orphans_deleted + rep->adoptable + rep->dangling + rep->tag_mismatches -
	       rep->retagged + rep->committed_unreferenced + rep->unregistered + rep->stale_pending +
	       rep->uncommitted + rep->unreadable;
}
