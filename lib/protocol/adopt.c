/* adopt.c - see adopt.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/failpoint.h"
#include "base/http_date.h"
#include "base/log.h"
#include "protocol/adopt.h"
#include "protocol/stamp.h"
#include "registry/adopt_db.h"
#include "registry/audit_db.h"
#include "registry/docs_db.h"

enum adopt_action
adopt_decide(const struct adopt_facts *f)
{
	if (!f->row_found) {
		if (!f->winner)
			return ADOPT_KEEP;
		return f->name_held ? ADOPT_NAME_TAKEN : ADOPT_CREATE;
	}
	if (f->winner && !f->same_document)
		return ADOPT_ID_TAKEN;
	if (!f->row_ready)
		return ADOPT_KEEP;	/* an intent: the sweep's to resolve */
	if (f->winner && f->winner_version > f->row_version)
		return ADOPT_REPLACE;
	if (f->row_blob != ADOPT_BLOB_LIVE)
		return ADOPT_DELETE;
	return ADOPT_KEEP;
}

const char *
adopt_action_name(enum adopt_action a)
{
	switch (a) {
	case ADOPT_KEEP: return "keep";
	case ADOPT_CREATE: return "create";
	case ADOPT_REPLACE: return "replace";
	case ADOPT_DELETE: return "delete";
	case ADOPT_NAME_TAKEN: return "name_taken";
	case ADOPT_ID_TAKEN: return "id_taken";
	}
	return "?";
}

/* ---- what storage shows ---------------------------------------------------- */

struct entry {
	char *name;		/* owned */
	char *etag;		/* owned */
	uint64_t size;
	enum tag_state tag;
	int64_t written;	/* Last-Modified, seconds; 0 unknown */
	struct stamp *st;	/* owned; NULL: no stamp of this installation */
	int named;		/* a registry row or a document names it */
};

struct scan {
	const char *install;
	struct entry *v;
	size_t n, cap;
	int oom;
};

static int
on_listed(void *ctx, const struct blob_list_item *it)
{
	struct scan *sc = ctx;
	struct entry *x;
	struct stamp st;
	size_t i;

	if (it->snapshot[0] != '\0')
		return 0;
	if (sc->n == sc->cap) {
		size_t ncap = sc->cap ? 2 * sc->cap : 1024;
		struct entry *nv = realloc(sc->v, ncap * sizeof *nv);

		if (nv == NULL)
			goto oom;
		sc->v = nv;
		sc->cap = ncap;
	}
	x = &sc->v[sc->n];
	memset(x, 0, sizeof *x);
	x->tag = TAG_STATE_UNKNOWN;
	x->name = strdup(it->name);
	x->etag = strdup(it->etag);
	if (x->name == NULL || x->etag == NULL)
		goto oom_entry;
	x->size = it->size;
	for (i = 0; i < it->ntags; i++)
		if (strcmp(it->tags[i].key, TAG_STATE_KEY) == 0)
			x->tag = tag_state_from_name(it->tags[i].value);
	if (http_date_parse(it->last_modified, strlen(it->last_modified), &x->written) != 0)
		x->written = 0;
	if (stamp_decode(it->meta, it->nmeta, &st) && strcmp(st.install, sc->install) == 0) {
		if ((x->st = malloc(sizeof *x->st)) == NULL)
			goto oom_entry;
		*x->st = st;
	}
	sc->n++;
	return 0;
oom_entry:
	free(x->name);
	free(x->etag);
oom:
	sc->oom = 1;
	return 1;
}

static int
cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

static struct entry *
find_entry(struct scan *sc, const char *name)
{
	struct entry key;

	memset(&key, 0, sizeof key);
	key.name = (char *)name;
	return bsearch(&key, sc->v, sc->n, sizeof *sc->v, cmp_entry);
}

/* ---- what the database shows ---------------------------------------------- */

struct ids {
	uint64_t *v;
	size_t n, cap;
	int oom;
};

static void
ids_add(struct ids *ids, uint64_t id)
{
	if (ids->n == ids->cap) {
		size_t ncap = ids->cap ? 2 * ids->cap : 256;
		uint64_t *nv = realloc(ids->v, ncap * sizeof *nv);

		if (nv == NULL) {
			ids->oom = 1;
			return;
		}
		ids->v = nv;
		ids->cap = ncap;
	}
	ids->v[ids->n++] = id;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

struct walk {
	struct scan *sc;
	struct ids *ids;
};

/* Mark every name a row holds; a ready document whose blob the listing did
 * not show, or showed retired, is a document to decide on. */
static int
on_row(void *ctx, const struct audit_row *r)
{
	struct walk *w = ctx;
	struct entry *x = find_entry(w->sc, r->name);

	if (x != NULL)
		x->named = 1;
	if (r->doc_id && r->doc_status == DOC_STATUS_READY &&
	    (x == NULL || x->tag == TAG_STATE_RETIRED))
		ids_add(w->ids, r->doc_id);
	return w->ids->oom;
}

/* ---- one document ----------------------------------------------------------- */

/* A blob no row names, stamped as a document of this installation. */
static int
unnamed_stamped(const struct entry *x)
{
	return x->st != NULL && !x->named &&
	       (x->tag == TAG_STATE_COMMITTED || x->tag == TAG_STATE_RETIRED);
}

/* Is a a newer claim than b?  The version first, then the later written. */
static int
newer(const struct entry *a, const struct entry *b)
{
	if (a->st->version != b->st->version)
		return a->st->version > b->st->version;
	return a->written > b->written;
}

/* Where the row's blob is: the listing's word for LIVE or RETIRED, Get
 * Blob Properties' for GONE (and for a name the listing did not show).
 * -1 when storage could not tell. */
static int
row_blob_of(struct services *s, struct scan *sc, const char *name, enum adopt_row_blob *out)
{
	struct entry *x = find_entry(sc, name);
	struct blob_tag_set tags;
	struct blob_props p;
	struct blob_result r;
	size_t i;

	if (x != NULL && x->tag != TAG_STATE_RETIRED) {
		*out = ADOPT_BLOB_LIVE;
		return 0;
	}
	if (blob_get_properties(s->blob, name, &p, &r) != 0) {
		if (r.status != BLOB_NOT_FOUND)
			return -1;
		*out = ADOPT_BLOB_GONE;
		return 0;
	}
	if (blob_get_tags(s->blob, name, &tags, &r) != 0)
		return r.status == BLOB_NOT_FOUND ? (*out = ADOPT_BLOB_GONE, 0) : -1;
	*out = ADOPT_BLOB_LIVE;
	for (i = 0; i < tags.n; i++)
		if (strcmp(tags.key[i], TAG_STATE_KEY) == 0 &&
		    tag_state_from_name(tags.value[i]) == TAG_STATE_RETIRED)
			*out = ADOPT_BLOB_RETIRED;
	return 0;
}

struct run {
	struct services *s;
	const struct adopt_opts *o;
	FILE *out;
	struct adopt_report *rep;
	struct scan *sc;
};

/* The winner's fields for the rows, its ETag as storage reports it now:
 * the bytes the rows will be pinned to.  -1 when it is not there or moved. */
static int
adopt_blob_of(struct run *ru, const struct entry *w, char *etag, size_t etaglen,
	      struct adopt_blob *b)
{
	struct blob_props p;
	struct blob_result r;

	if (blob_get_properties(ru->s->blob, w->name, &p, &r) != 0 ||
	    copy_cstr(etag, etaglen, p.etag) != 0 || w->st->sha256[0] == '\0' || w->st->size < 0 ||
	    (uint64_t)w->st->size != p.size)
		return -1;
	memset(b, 0, sizeof *b);
	b->blob_name = w->name;
	b->etag = etag;
	b->size = p.size;
	b->sha256 = w->st->sha256;
	b->doc_id = w->st->doc_id;
	b->version = w->st->version;
	b->owner = w->st->owner;
	b->name = w->st->name;
	b->content_type = w->st->content_type;
	b->created_at = w->st->created_at;
	return 0;
}

static void
step_done(struct run *ru, enum db_err e, uint64_t *count, const char *what, uint64_t id)
{
	if (e == DB_OK) {
		(*count)++;
		/* Tests crash the repair here, half-way, and run it again. */
		(void)FAILPOINT("adopt.after_step");
		return;
	}
	ru->rep->failed++;
	fprintf(ru->out, "adopt: document %llu: %s failed (%s); run the repair again\n",
		(unsigned long long)id, what, db_err_name(e));
}

/* The other blobs of the id no row names go through the outbox. */
static void
retire_rest(struct run *ru, struct entry **c, size_t nc, const struct entry *keep,
	    const struct entry *twin)
{
	size_t i;

	for (i = 0; i < nc; i++) {
		if (c[i] == keep || c[i] == twin)
			continue;
		fprintf(ru->out, "adopt: document %llu: blob %s (version %llu, %s) %s the outbox\n",
			(unsigned long long)c[i]->st->doc_id, c[i]->name,
			(unsigned long long)c[i]->st->version, tag_state_name(c[i]->tag),
			ru->o->dry_run ? "would enter" : "enters");
		if (ru->o->dry_run)
			ru->rep->retired++;
		else
			step_done(ru, adopt_db_retire(ru->s->db, c[i]->name, c[i]->st->doc_id,
						      ru->s->cfg->retire_grace),
				  &ru->rep->retired, "the outbox", c[i]->st->doc_id);
	}
}

static void
one_document(struct run *ru, uint64_t id, struct entry **c, size_t nc)
{
	struct adopt_facts f;
	struct entry *w = NULL, *twin = NULL;
	struct adopt_blob b;
	char etag[128];
	struct doc d;
	enum adopt_action a;
	enum db_err e;
	uint64_t holder = 0;
	size_t i;
	const char *dry = ru->o->dry_run ? "would " : "";

	memset(&f, 0, sizeof f);
	for (i = 0; i < nc; i++) {
		if (c[i]->tag != TAG_STATE_COMMITTED)
			continue;
		if (w == NULL || newer(c[i], w)) {
			twin = w != NULL && w->st->version == c[i]->st->version ? w : NULL;
			w = c[i];
		} else if (c[i]->st->version == w->st->version) {
			twin = c[i];
		}
	}
	if (twin != NULL && twin->st->version != w->st->version)
		twin = NULL;
	e = docs_get(ru->s->db, id, &d);
	if (e != DB_OK && e != DB_NOT_FOUND) {
		ru->rep->failed++;
		return;
	}
	f.row_found = e == DB_OK;
	f.winner = w != NULL;
	f.winner_version = w ? w->st->version : 0;
	if (f.row_found) {
		f.row_ready = d.status == DOC_STATUS_READY;
		f.row_version = d.version;
		f.same_document = w == NULL || (strcmp(d.owner, w->st->owner) == 0 &&
						strcmp(d.name, w->st->name) == 0 &&
						strcmp(d.created_at, w->st->created_at) == 0);
		if (f.row_ready && row_blob_of(ru->s, ru->sc, d.blob_name, &f.row_blob) != 0) {
			fprintf(ru->out, "adopt: document %llu: its blob %s could not be read; left\n",
				(unsigned long long)id, d.blob_name);
			ru->rep->failed++;
			return;
		}
	} else if (w != NULL) {
		e = adopt_db_name_holder(ru->s->db, w->st->name, &holder);
		if (e != DB_OK && e != DB_NOT_FOUND) {
			ru->rep->failed++;
			return;
		}
		f.name_held = e == DB_OK && holder != id;
	}
	a = adopt_decide(&f);
	if (twin != NULL) {
		fprintf(ru->out, "adopt: document %llu: blobs %s and %s both claim version %llu;"
			" the later written, %s, wins; %s is left for a human\n", (unsigned long long)id,
			w->name, twin->name, (unsigned long long)w->st->version, w->name, twin->name);
		ru->rep->conflicts++;
	}
	switch (a) {
	case ADOPT_CREATE:
	case ADOPT_REPLACE:
		if (adopt_blob_of(ru, w, etag, sizeof etag, &b) != 0) {
			fprintf(ru->out, "adopt: document %llu: blob %s changed or went; left\n",
				(unsigned long long)id, w->name);
			ru->rep->failed++;
			return;
		}
		if (a == ADOPT_CREATE) {
			fprintf(ru->out, "adopt: document %llu \"%s\" (owner %s): %smake it again on blob %s"
				" (version %llu)\n", (unsigned long long)id, w->st->name, w->st->owner, dry,
				w->name, (unsigned long long)w->st->version);
			if (ru->o->dry_run)
				ru->rep->created++;
			else
				step_done(ru, adopt_db_create(ru->s->db, &b), &ru->rep->created, "create", id);
		} else {
			fprintf(ru->out, "adopt: document %llu \"%s\": %smove from blob %s (version %llu) to"
				" blob %s (version %llu), replaced after the backup\n", (unsigned long long)id,
				d.name, dry, d.blob_name, (unsigned long long)d.version, w->name,
				(unsigned long long)w->st->version);
			if (ru->o->dry_run)
				ru->rep->replaced++;
			else
				step_done(ru, adopt_db_replace(ru->s->db, d.blob_name, &b,
							       ru->s->cfg->retire_grace),
					  &ru->rep->replaced, "replace", id);
		}
		retire_rest(ru, c, nc, w, twin);
		return;
	case ADOPT_DELETE:
		fprintf(ru->out, "adopt: document %llu \"%s\": %sdelete it: its blob %s is %s,"
			" deleted after the backup\n", (unsigned long long)id, d.name, dry, d.blob_name,
			f.row_blob == ADOPT_BLOB_GONE ? "gone" : "tagged retired");
		if (ru->o->dry_run)
			ru->rep->deleted++;
		else
			step_done(ru, adopt_db_delete(ru->s->db, id, d.blob_name, ru->s->cfg->retire_grace),
				  &ru->rep->deleted, "delete", id);
		retire_rest(ru, c, nc, NULL, twin);
		return;
	case ADOPT_NAME_TAKEN:
		fprintf(ru->out, "adopt: document %llu: blob %s names \"%s\", which document %llu now has;"
			" not adopted, left for a human\n", (unsigned long long)id, w->name, w->st->name,
			(unsigned long long)holder);
		ru->rep->conflicts++;
		return;
	case ADOPT_ID_TAKEN:
		fprintf(ru->out, "adopt: document %llu: blob %s names a document of owner %s, \"%s\","
			" created %s; the id is \"%s\" of %s, created %s: not adopted, left for a human\n",
			(unsigned long long)id, w->name, w->st->owner, w->st->name, w->st->created_at,
			d.name, d.owner, d.created_at);
		ru->rep->conflicts++;
		return;
	case ADOPT_KEEP:
		if (f.row_found && !f.row_ready)
			return;	/* an intent and its blobs: the sweep's */
		retire_rest(ru, c, nc, NULL, twin);
		return;
	}
}

/* ---- the run ----------------------------------------------------------------- */

static int
cmp_by_doc(const void *a, const void *b)
{
	const struct entry *x = *(const struct entry *const *)a, *y = *(const struct entry *const *)b;

	return x->st->doc_id < y->st->doc_id ? -1 : x->st->doc_id > y->st->doc_id;
}

int
adopt_run(struct services *s, const struct adopt_opts *o, FILE *out, struct adopt_report *rep)
{
	struct scan sc;
	struct ids ids;
	struct walk w;
	struct run ru = { s, o, out, rep, &sc };
	struct entry **c = NULL;
	struct blob_result r;
	size_t i, nc = 0, lo, hi, k;
	enum db_err e;
	int rc = -1;

	memset(rep, 0, sizeof *rep);
	memset(&sc, 0, sizeof sc);
	memset(&ids, 0, sizeof ids);
	if ((sc.install = services_install_id(s)) == NULL) {
		fprintf(out, "adopt: the installation's id could not be read\n");
		goto out;
	}
	if (blob_list(s->blob, o->prefix, BLOB_LIST_TAGS | BLOB_LIST_METADATA, on_listed, &sc, &r) != 0) {
		blob_log_failure("listing the container", o->prefix, &r);
		goto out;
	}
	qsort(sc.v, sc.n, sizeof *sc.v, cmp_entry);
	w.sc = &sc;
	w.ids = &ids;
	if ((e = audit_db_walk(s->db, o->prefix, on_row, &w)) != DB_OK || ids.oom) {
		log_error("walking the registry: %s", ids.oom ? "out of memory" : db_err_name(e));
		goto out;
	}
	if ((c = calloc(sc.n ? sc.n : 1, sizeof *c)) == NULL)
		goto out;
	for (i = 0; i < sc.n; i++) {
		if (sc.v[i].st == NULL)
			continue;
		if (sc.v[i].st->doc_id > rep->id_floor)
			rep->id_floor = sc.v[i].st->doc_id;	/* every surviving stamp, adopted or not */
		if (unnamed_stamped(&sc.v[i])) {
			c[nc++] = &sc.v[i];
			ids_add(&ids, sc.v[i].st->doc_id);
		}
	}
	if (ids.oom)
		goto out;
	qsort(c, nc, sizeof *c, cmp_by_doc);
	qsort(ids.v, ids.n, sizeof *ids.v, cmp_u64);
	for (i = 0, lo = 0; i < ids.n; i++) {
		if (i > 0 && ids.v[i] == ids.v[i - 1])
			continue;
		while (lo < nc && c[lo]->st->doc_id < ids.v[i])
			lo++;
		for (hi = lo; hi < nc && c[hi]->st->doc_id == ids.v[i]; hi++)
			;
		blob_client_set_deadline(s->blob, 0);
		one_document(&ru, ids.v[i], c + lo, hi - lo);
	}
	if (rep->id_floor > 0) {
		fprintf(out, "adopt: %sthe id sequence past %llu, the highest id a blob names\n",
			o->dry_run ? "would move " : "moved ", (unsigned long long)rep->id_floor);
		if (!o->dry_run && (e = adopt_db_id_floor(s->db, rep->id_floor)) != DB_OK) {
			fprintf(out, "adopt: moving the id sequence failed (%s); run the repair again\n",
				db_err_name(e));
			rep->failed++;
		}
	}
	rc = 0;
out:
	for (k = 0; k < sc.n; k++) {
		free(sc.v[k].name);
		free(sc.v[k].etag);
		free(sc.v[k].st);
	}
	free(sc.v);
	free(ids.v);
	free(c);
	return rc;
}
