/* audit.c - see audit.h. */
#define _GNU_SOURCE	/* strptime, timegm */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gnutls/crypto.h>

#include "protocol/audit.h"
#include "registry/docs_db.h"
#include "base/log.h"
#include "protocol/protocol.h"
#include "registry/audit_db.h"

/* One blob as the listing showed it. */
struct listed {
	char *name;		/* owned */
	char *etag;		/* owned */
	uint64_t size;
	char sha256[65];
	char state[16];		/* the state tag's value; "" without one; "?" if odd */
	int has_state;
	enum tag_state tag;
	int seen;		/* a registry row or document names it */
};

struct listing {
	struct listed *v;
	size_t n, cap;
	int oom;
};

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
	for (i = 0; i < it->ntags; i++) {
		if (strcmp(it->tags[i].key, TAG_STATE_KEY) != 0)
			continue;
		x->has_state = 1;
		x->tag = tag_state_from_name(it->tags[i].value);
		if (copy_cstr(x->state, sizeof x->state, it->tags[i].value) != 0)
			snprintf(x->state, sizeof x->state, "?");
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

static time_t
parse_http_date(const char *s)
{
	struct tm tm;
	const char *end;

	memset(&tm, 0, sizeof tm);
	end = strptime(s, "%a, %d %b %Y %H:%M:%S GMT", &tm);
	if (end == NULL || *end != '\0')
		return (time_t)-1;
	return timegm(&tm);
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
	time_t t;
	int referenced = 1;
	enum db_err e;

	if (blob_get_properties(s->blob, x->name, &p, &r) != 0) {
		snprintf(why, whylen, "%s", r.status == BLOB_NOT_FOUND ? "gone already" : "unreadable");
		return r.status == BLOB_NOT_FOUND ? 1 : -1;
	}
	t = parse_http_date(p.last_modified);
	if (t == (time_t)-1 || time(NULL) - t < (time_t)o->min_age) {
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
	if (blob_set_tags(s->blob, x->name, committed, 1, x->has_state ? guard : NULL, &r) != 0) {
		snprintf(why, whylen, "re-tag refused: %s (HTTP %ld %s)", blob_status_name(r.status),
			 r.http_status, r.code);
		return -1;
	}
	snprintf(why, whylen, "tagged committed");
	return 1;
}

static int
still_missing(struct services *s, const char *name)
{
	struct blob_props p;
	struct blob_result r;

	/* The listing is not a snapshot: a replace may have landed behind its cursor. */
	return blob_get_properties(s->blob, name, &p, &r) != 0 && r.status == BLOB_NOT_FOUND;
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
	if (blob_get(s->blob, row->name, 0, 0, NULL, rehash_data, &rh, &r) != 0) {
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

static void
check_row(struct services *s, const struct audit_opts *o, struct listing *l,
	  const struct audit_row *row, struct audit_report *rep)
{
	struct listed *x = find_listed(l, row->name);
	int ready = row->doc_id && row->doc_status == DOC_STATUS_READY;
	char detail[256], why[200];
	json_t *f;
	int rc;

	if (x)
		x->seen = 1;
	if (ready && !row->has_registry) {
		rep->unregistered++;
		(void)finding(rep, "unregistered", row->name, row->doc_id,
			      "a ready document's blob has no registry row");
	}
	if (ready) {
		if (x == NULL) {
			if (still_missing(s, row->name)) {
				rep->dangling++;
				(void)finding(rep, "dangling", row->name, row->doc_id,
					      "ready document, blob missing");
			}
			return;
		}
		if (x->size != row->doc_size ||
		    (x->sha256[0] && row->doc_sha256[0] && strcmp(x->sha256, row->doc_sha256) != 0)) {
			snprintf(detail, sizeof detail, "ready document says %llu bytes sha256 %.12s...,"
				 " blob has %llu bytes sha256 %.12s...", (unsigned long long)row->doc_size,
				 row->doc_sha256, (unsigned long long)x->size,
				 x->sha256[0] ? x->sha256 : "(none)");
			rep->dangling++;
			(void)finding(rep, "dangling", row->name, row->doc_id, detail);
			return;
		}
		if (o->deep) {
			rc = deep_matches(s, row, detail, sizeof detail);
			rep->deep_checked++;
			if (rc == 0) {
				rep->dangling++;
				(void)finding(rep, "dangling", row->name, row->doc_id, detail);
				return;
			}
			if (rc < 0) {
				rep->unreadable++;
				(void)finding(rep, "unreadable", row->name, row->doc_id, detail);
			}
		}
		if (x->tag != TAG_STATE_COMMITTED) {
			snprintf(detail, sizeof detail, "ready document's blob tagged %s",
				 x->has_state ? x->state : "(no state tag)");
			f = finding(rep, "tag_mismatch", row->name, row->doc_id, detail);
			if (o->repair) {
				rc = repair_tag(s, x, why, sizeof why);
				mark_repaired(f, rc == 1);
				if (f)
					json_object_set_new(f, "repair", json_string(why));
				if (rc == 1)
					rep->retagged++;
				else if (rc < 0)
					rep->repair_failed++;
			}
			rep->tag_mismatches++;
		}
		return;
	}
	if (!row->has_registry)
		return;	/* a pending document without a registry row: the sweep's drop left it? */
	if ((row->state == REGISTRY_PENDING || row->state == REGISTRY_SWEEPING) &&
	    row->age >= (int64_t)o->stale_cutoff) {
		struct blob_block_counts bc;
		struct blob_result r;

		snprintf(detail, sizeof detail, "%s %s intent idle %llds", registry_state_name(row->state),
			 intent_purpose_name(row->purpose), (long long)row->age);
		rep->stale_pending++;
		(void)finding(rep, "stale_pending", row->name, row->doc_id, detail);
		/* Staged blocks are visible to Get Block List only, and only matter
		 * on a name without a committed blob. */
		if (x == NULL && blob_get_block_list(s->blob, row->name, &bc, &r) == 0 &&
		    bc.uncommitted > 0) {
			snprintf(detail, sizeof detail, "%u staged uncommitted blocks, no blob",
				 bc.uncommitted);
			rep->uncommitted++;
			(void)finding(rep, "uncommitted_blocks", row->name, row->doc_id, detail);
		}
		return;
	}
	if (row->state == REGISTRY_COMMITTED && x && x->tag == TAG_STATE_COMMITTED) {
		rep->committed_unreferenced++;
		(void)finding(rep, "committed_unreferenced", row->name, row->doc_id,
			      "committed blob and registry row, but no ready document points at it");
	}
}

static void
check_orphan(struct services *s, const struct audit_opts *o, const struct listed *x,
	     struct audit_report *rep)
{
	char detail[256], why[200];
	json_t *f;
	int rc;

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
		rc = l.oom ? AUDIT_FAILED : AUDIT_STORAGE_UNAVAILABLE;
		goto out;
	}
	rep->listed = l.n;
	qsort(l.v, l.n, sizeof *l.v, cmp_listed);
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
	return rep->orphans - rep->orphans_deleted + rep->dangling + rep->tag_mismatches -
	       rep->retagged + rep->committed_unreferenced + rep->unregistered + rep->stale_pending +
	       rep->uncommitted + rep->unreadable;
}
