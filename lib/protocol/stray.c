/* stray.c - see stray.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "protocol/stray.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/failpoint.h"
#include "base/http_date.h"
#include "base/log.h"
#include "base/state.h"
#include "registry/blobs_db.h"

/* Does a registry row or a document name blob_name?  STRAY_NAMED, or
 * STRAY_REMOVED for no (nothing removed yet), or STRAY_FAILED. */
static enum stray_result
named(struct services *s, const char *blob_name)
{
	struct blob_row row;
	int referenced = 1;
	enum db_err e;

	e = blobs_get(s->db, blob_name, &row);
	if (e == DB_OK)
		return STRAY_NAMED;
	if (e != DB_NOT_FOUND || blobs_is_referenced(s->db, blob_name, &referenced) != DB_OK)
		return STRAY_FAILED;
	return referenced ? STRAY_NAMED : STRAY_REMOVED;
}

enum stray_result
stray_remove(struct services *s, const char *blob_name, const char *etag)
{
	struct blob_result r;
	enum stray_result sr = named(s, blob_name);

	if (sr != STRAY_REMOVED)
		return sr;
	if (FAILPOINT("stray.before_delete"))
		return STRAY_FAILED;
	if (blob_delete(s->blob, blob_name, tag_state_guard(TAG_STATE_PENDING), etag, &r) != 0) {
		if (r.status == BLOB_NOT_FOUND)
			return STRAY_REMOVED;
		if (r.status == BLOB_CONDITION_NOT_MET)
			return STRAY_CHANGED;
		blob_log_failure("deleting a stray", blob_name, &r);
		return STRAY_FAILED;
	}
	return STRAY_REMOVED;
}

enum stray_result
stray_purge_blocks(struct services *s, const char *blob_name)
{
	struct blob_result r;
	enum stray_result sr = named(s, blob_name);

	if (sr != STRAY_REMOVED)
		return sr;
	if (blob_purge_uncommitted(s->blob, blob_name, &r) != 0 && r.status != BLOB_NOT_FOUND) {
		if (r.status == BLOB_EXISTS)
			return STRAY_CHANGED;
		blob_log_failure("purging a stray's blocks", blob_name, &r);
		return STRAY_FAILED;
	}
	return STRAY_REMOVED;
}

/* Last written (an HTTP-date) more than cutoff seconds before now?  No
 * date: not proven old. */
static int
old_enough(const char *last_modified, int64_t now, unsigned cutoff)
{
	int64_t t;

	if (http_date_parse(last_modified, strlen(last_modified), &t) != 0)
		return 0;
	return now - t > (int64_t)cutoff;
}

/* The names Find Blobs by Tags gave that this installation could have
 * written (its configured prefix, then the 32 hex digits every intent
 * draws) and that start with the sweep's own prefix. */
struct candidates {
	const char *own;	/* the configured prefix */
	size_t own_len;
	const char *prefix;	/* the sweep's: own, or narrower */
	size_t prefix_len;
	char **v;
	size_t n, limit;
	int more, oom;
};

static int
own_name(const struct candidates *c, const char *name)
{
	size_t i, len = strlen(name);

	if (len != c->own_len + 32 || strncmp(name, c->own, c->own_len) != 0 ||
	    strncmp(name, c->prefix, c->prefix_len) != 0)
		return 0;
	for (i = c->own_len; i < len; i++)
		if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
			return 0;
	return 1;
}

static int
on_candidate(void *ctx, const char *name)
{
	struct candidates *c = ctx;

	if (!own_name(c, name))
		return 0;
	if (c->n == c->limit) {
		c->more = 1;
		return 1;	/* a batch is enough for one run */
	}
	if ((c->v[c->n] = strdup(name)) == NULL) {
		c->oom = 1;
		return 1;
	}
	c->n++;
	return 0;
}

int
stray_sweep(struct services *s, const char *prefix, unsigned cutoff, unsigned limit, FILE *plan,
	    struct stray_sweep *out)
{
	char where[64];
	struct candidates c;
	struct blob_result r;
	struct blob_props p;
	const char *install;
	int64_t now = (int64_t)time(NULL);
	int rc = -1;
	size_t i;

	memset(out, 0, sizeof *out);
	memset(&c, 0, sizeof c);
	install = services_install_id(s);
	c.own = s->cfg->storage_prefix;
	c.own_len = strlen(c.own);
	c.prefix = prefix;
	c.prefix_len = strlen(prefix);
	c.limit = limit ? limit : 1;
	if ((c.v = calloc(c.limit, sizeof *c.v)) == NULL)
		return -1;
	snprintf(where, sizeof where, "%s", tag_state_guard(TAG_STATE_PENDING));
	blob_client_set_deadline(s->blob, clock_now_ms() + (int64_t)s->cfg->request_deadline * 1000);
	if (blob_find_by_tags(s->blob, where, on_candidate, &c, &r) != 0 &&
	    !(r.status == BLOB_ABORTED && !c.oom)) {
		/* A SAS without the filter permission (f) cannot search. */
		out->refused = r.status == BLOB_AUTH_FAILED;
		blob_log_failure("finding pending blobs", prefix, &r);
		goto out;
	}
	out->more = c.more;
	for (i = 0; i < c.n; i++) {
		/* Each candidate its own deadline: a backlog of 1000 takes a while. */
		blob_client_set_deadline(s->blob, clock_now_ms() + (int64_t)s->cfg->request_deadline * 1000);
		/* The index lags: what the blob is now decides, not what it was. */
		if (blob_get_properties(s->blob, c.v[i], &p, &r) != 0) {
			if (r.status != BLOB_NOT_FOUND)
				out->failed++;
			continue;
		}
		if (!old_enough(p.last_modified, now, cutoff))
			continue;	/* a live upload's, or one its writer may still remove */
		/* Another installation's, sharing the container (its names may
		 * have our shape): its own sweep decides. */
		if (p.meta_installation[0] != '\0' &&
		    (install == NULL || strcmp(p.meta_installation, install) != 0))
			continue;
		switch (plan ? named(s, c.v[i]) : stray_remove(s, c.v[i], p.etag)) {
		case STRAY_REMOVED:
			if (plan)
				fprintf(plan, "would remove %s (pending, no row names it, last written %s)\n",
					c.v[i], p.last_modified);
			else
				log_info("removed %s: pending, no row names it, last written %s", c.v[i],
					 p.last_modified);
			out->removed++;
			break;
		case STRAY_NAMED:
			break;	/* an intent's: the claims handle it */
		case STRAY_CHANGED:
			out->left++;
			break;
		case STRAY_FAILED:
			out->failed++;
			break;
		}
	}
	rc = 0;
out:
	for (i = 0; i < c.n; i++)
		free(c.v[i]);
	free(c.v);
	return rc;
}
