/*
 * blob.c - the Blob REST operations other than streaming uploads:
 * properties, get, delete, undelete, tags, container creation, block
 * lists, listing (whose paging also serves Find Blobs by Tags), Blob
 * Batch, service properties and SAS URLs, with the pure parse step of
 * each XML answer.  The simple ones are a static struct blob_call each,
 * run by blob_call().  Requests run on the engine of blob_http.c
 * (blob_internal.h); uploads are in blob_upload.c.
 */
#define _GNU_SOURCE	/* memmem */
#include <assert.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gnutls/gnutls.h>
#include <gnutls/crypto.h>

#include "base/alloc.h"
#include "storage/blob.h"
#include "storage/blob_internal.h"
#include "storage/sign.h"

#define BATCH_MAX	256

/* ---- simple calls ---------------------------------------------------------- */

static int
call_path(struct blob_client *c, const struct blob_call *call, const char *name,
    struct blob_request *r)
{
	switch (call->target) {
	case BLOB_CALL_BLOB:
		return blob_request_path_blob(c, r, name);
	case BLOB_CALL_CONTAINER:
		return blob_request_path_container(c, r);
	case BLOB_CALL_SERVICE:
		return buf_appendf(&r->path, "%s/", c->path_prefix) == BUF_OK ? 0 : -1;
	}
	return -1;
}

static int
call_headers(const struct blob_call *call, const struct blob_call_args *a,
    struct blob_request *r)
{
	size_t i;

	if ((call->header[0] != NULL &&
	    blob_request_header(r, call->header[0], call->header[1]) != 0) ||
	    (a->body != NULL && call->content_type != NULL &&
	    blob_request_header(r, "Content-Type", call->content_type) != 0) ||
	    (a->if_tags != NULL && blob_request_header(r, "x-ms-if-tags", a->if_tags) != 0) ||
	    (a->if_match != NULL && blob_request_header(r, "If-Match", a->if_match) != 0))
		return -1;
	for (i = 0; i < a->n_headers; i++)
		if (blob_request_header(r, a->headers[i][0], a->headers[i][1]) != 0)
			return -1;
	return 0;
}

int
blob_call(struct blob_client *c, const struct blob_call *call,
    const struct blob_call_args *a, struct blob_result *res)
{
	struct blob_request r;
	enum blob_xml_err xe;
	size_t i;
	int rc;

	blob_result_clear(res);
	if (call->target == BLOB_CALL_BLOB && !blob_name_ok(a->name))
		return blob_result_set(res, BLOB_BAD_INPUT, "bad blob name");
	blob_request_init(&r, call->method);
	if (call_path(c, call, a->name, &r) != 0)
		goto nomem;
	for (i = 0; i < ARRAY_LEN(call->query) && call->query[i][0] != NULL; i++)
		if (blob_request_query(&r, call->query[i][0], call->query[i][1]) != 0)
			goto nomem;
	if (call_headers(call, a, &r) != 0)
		goto nomem;
	if (a->body != NULL) {
		r.body = buf_cstr(a->body);
		r.body_len = a->body->len;
	}
	r.has_body = a->body != NULL || call->empty_body;
	rc = blob_exec_run(c, &r, res);
	if (rc == BLOB_FAILED && call->ok_code != NULL &&
	    res->http_status == call->ok_http && strcmp(res->code, call->ok_code) == 0) {
		blob_result_clear(res);
		res->http_status = call->ok_http;
		rc = BLOB_OK;
	} else if (rc == BLOB_OK && call->read_headers != NULL)
		call->read_headers(&r.rh, a->out);
	else if (rc == BLOB_OK && call->read_body != NULL &&
	    (xe = call->read_body(r.answer.ptr ? r.answer.ptr : "", r.answer.len,
	    a->out)) != BLOB_XML_OK)
		rc = xe == BLOB_XML_NOMEM ? blob_result_nomem(res) :
		    blob_result_set(res, BLOB_FAILED, call->malformed);
	goto out;
nomem:
	rc = blob_result_nomem(res);
out:
	blob_request_free(&r);
	return rc;
}

/* ---- properties, get, delete, undelete -------------------------------------- */

static void
props_read(const struct blob_answer_headers *rh, void *out)
{
	blob_props_from_answer(rh, out);
}

/* Get Blob Properties: a HEAD whose answer is all headers. */
static const struct blob_call get_properties_call = {
	.method = "HEAD", .target = BLOB_CALL_BLOB, .read_headers = props_read,
};

int
blob_get_properties(struct blob_client *c, const char *name,
    struct blob_props *out, struct blob_result *res)
{
	struct blob_call_args a = { .name = name, .out = out };

	memset(out, 0, sizeof *out);
	out->meta_size = -1;
	return blob_call(c, &get_properties_call, &a, res);
}

int
blob_get(struct blob_client *c, const char *name, uint64_t range_start,
    uint64_t range_len, const char *if_match, blob_headers_fn on_headers,
    blob_data_fn on_data, void *ctx, struct blob_result *res)
{
	struct blob_request r;
	char range[64];
	int rc;

	blob_result_clear(res);
	if (!blob_name_ok(name) || on_data == NULL)
		return blob_result_set(res, BLOB_BAD_INPUT, "bad blob name or callback");
	blob_request_init(&r, "GET");
	r.on_headers = on_headers;
	r.on_data = on_data;
	r.cb_ctx = ctx;
	if (blob_request_path_blob(c, &r, name) != 0 ||
	    (if_match && if_match[0] && blob_request_header(&r, "If-Match", if_match) != 0)) {
		rc = blob_result_nomem(res);
		goto out;
	}
	if (range_start > 0 || range_len > 0) {
		if (range_len > 0)
			snprintf(range, sizeof range, "bytes=%llu-%llu",
			    (unsigned long long)range_start,
			    (unsigned long long)(range_start + range_len - 1));
		else
			snprintf(range, sizeof range, "bytes=%llu-",
			    (unsigned long long)range_start);
		if (blob_request_header(&r, "x-ms-range", range) != 0) {
			rc = blob_result_nomem(res);
			goto out;
		}
	}
	rc = blob_exec_run(c, &r, res);
	/* An empty body never reaches on_body; the headers are still due. */
	if (rc == BLOB_OK && !r.headers_delivered && blob_request_deliver_headers(&r) != 0)
		rc = blob_result_set(res, BLOB_ABORTED, "stopped by the caller");
out:
	blob_request_free(&r);
	return rc;
}

/* Delete Blob, its snapshots with it. */
static const struct blob_call delete_call = {
	.method = "DELETE", .target = BLOB_CALL_BLOB,
	.header = { "x-ms-delete-snapshots", "include" },
};

int
blob_delete(struct blob_client *c, const char *name, const char *if_tags,
    const char *if_match, struct blob_result *res)
{
	struct blob_call_args a = { .name = name, .if_tags = if_tags,
	    .if_match = if_match };

	return blob_call(c, &delete_call, &a, res);
}

/* Undelete Blob: an empty PUT. */
static const struct blob_call undelete_call = {
	.method = "PUT", .target = BLOB_CALL_BLOB,
	.query = { { "comp", "undelete" } }, .empty_body = 1,
};

int
blob_undelete(struct blob_client *c, const char *name, struct blob_result *res)
{
	struct blob_call_args a = { .name = name };

	return blob_call(c, &undelete_call, &a, res);
}

/* ---- metadata and content headers ------------------------------------------- */

/* A header value we send as given: visible ASCII and spaces, bounded. */
static int
blob_header_value_ok(const char *v)
{
	size_t i;

	for (i = 0; v[i] != '\0'; i++)
		if (i >= 1024 || v[i] < ' ' || v[i] > '~')
			return 0;
	return 1;
}

/* The ETag a successful set answered with. */
static void
etag_read(const struct blob_answer_headers *rh, void *out)
{
	blob_copy_field(out, 128, rh->etag, strlen(rh->etag));
}

static const struct blob_call set_metadata_call = {
	.method = "PUT", .target = BLOB_CALL_BLOB, .query = { { "comp", "metadata" } },
	.empty_body = 1, .read_headers = etag_read,
};

/* A metadata name: a C identifier ("Set Blob Metadata"), short. */
static int
meta_name_ok(const char *name)
{
	size_t i;

	if (name == NULL || !(isalpha((unsigned char)name[0]) || name[0] == '_'))
		return 0;
	for (i = 0; name[i] != '\0'; i++)
		if (i >= 64 || !(isalnum((unsigned char)name[i]) || name[i] == '_'))
			return 0;
	return 1;
}

int
blob_meta_ok(const struct blob_meta *meta, size_t n)
{
	size_t i, j, total = 0;

	if (n > BLOB_MAX_META || (n > 0 && meta == NULL))
		return 0;
	for (i = 0; i < n; i++) {
		const char *v = meta[i].value;

		if (!meta_name_ok(meta[i].name) || v == NULL)
			return 0;
		for (j = 0; v[j] != '\0'; j++)
			if (j >= BLOB_META_VALUE_MAX || v[j] < ' ' || v[j] > '~')
				return 0;
		total += strlen(meta[i].name) + j;
	}
	return total <= 8192;
}

int
blob_set_metadata(struct blob_client *c, const char *name,
    const struct blob_meta *meta, size_t n, const char *if_match,
    char *new_etag, struct blob_result *res)
{
	char names[BLOB_MAX_META][80];
	const char *hdr[BLOB_MAX_META][2];
	struct blob_call_args a = { .name = name, .if_match = if_match,
	    .headers = hdr, .n_headers = n, .out = new_etag };
	size_t i;

	blob_result_clear(res);
	new_etag[0] = '\0';
	if (n > BLOB_MAX_META || if_match == NULL || if_match[0] == '\0')
		return blob_result_set(res, BLOB_BAD_INPUT, "bad metadata or no ETag");
	if (!blob_meta_ok(meta, n))
		return blob_result_set(res, BLOB_BAD_INPUT, "bad metadata");
	for (i = 0; i < n; i++) {
		snprintf(names[i], sizeof names[i], "x-ms-meta-%s", meta[i].name);
		hdr[i][0] = names[i];
		hdr[i][1] = meta[i].value;
	}
	return blob_call(c, &set_metadata_call, &a, res);
}

static const struct blob_call set_properties_call = {
	.method = "PUT", .target = BLOB_CALL_BLOB, .query = { { "comp", "properties" } },
	.empty_body = 1, .read_headers = etag_read,
};

int
blob_set_content_headers(struct blob_client *c, const char *name,
    const char *content_type, const char *content_md5_b64, const char *if_match,
    char *new_etag, struct blob_result *res)
{
	const char *hdr[2][2] = { { "x-ms-blob-content-type", content_type },
	    { "x-ms-blob-content-md5", content_md5_b64 } };
	struct blob_call_args a = { .name = name, .if_match = if_match,
	    .headers = hdr, .n_headers = content_md5_b64 ? 2 : 1, .out = new_etag };

	blob_result_clear(res);
	new_etag[0] = '\0';
	if (content_type == NULL || !blob_header_value_ok(content_type) ||
	    (content_md5_b64 && !blob_header_value_ok(content_md5_b64)) ||
	    if_match == NULL || if_match[0] == '\0')
		return blob_result_set(res, BLOB_BAD_INPUT, "bad content headers or no ETag");
	return blob_call(c, &set_properties_call, &a, res);
}

struct snapshot_count {
	const char *name;
	unsigned n;
};

static int
count_snapshot(void *ctx, const struct blob_list_item *it)
{
	struct snapshot_count *sc = ctx;

	if (it->snapshot[0] != '\0' && strcmp(it->name, sc->name) == 0)
		sc->n++;
	return 0;
}

int
blob_count_snapshots(struct blob_client *c, const char *name, unsigned *count,
    struct blob_result *res)
{
	struct snapshot_count sc = { name, 0 };
	int rc;

	*count = 0;
	blob_result_clear(res);
	if (!blob_name_ok(name))
		return blob_result_set(res, BLOB_BAD_INPUT, "bad blob name");
	/* The prefix also lists longer names; only this one's count. */
	rc = blob_list(c, name, BLOB_LIST_SNAPSHOTS, count_snapshot, &sc, res);
	if (rc == BLOB_OK)
		*count = sc.n;
	return rc;
}

/* ---- tags ------------------------------------------------------------------- */

/* Tag keys 1..128 and values 0..256 of [A-Za-z0-9 +-./:=_] ("Set Blob
 * Tags"); at most ten. */
int
blob_tags_ok(const struct blob_tag *tags, size_t n)
{
	static const char allowed[] = " +-./:=_";
	size_t i, j, kl, vl;

	if (n > BLOB_MAX_TAGS || (n > 0 && tags == NULL))
		return 0;
	for (i = 0; i < n; i++) {
		if (tags[i].key == NULL || tags[i].value == NULL)
			return 0;
		kl = strlen(tags[i].key);
		vl = strlen(tags[i].value);
		if (kl < 1 || kl > 128 || vl > 256)
			return 0;
		for (j = 0; j < kl + vl; j++) {
			unsigned char ch = (unsigned char)(j < kl ? tags[i].key[j] :
			    tags[i].value[j - kl]);

			if (!(ch < 128 && (isalnum(ch) || strchr(allowed, ch))) ||
			    ch == '\0')
				return 0;
		}
	}
	return 1;
}

/* The Set Blob Tags body: <Tags><TagSet><Tag><Key/><Value/></Tag>... */
static int
tags_body(const struct blob_tag *tags, size_t n, struct buf *body)
{
	size_t i;

	if (buf_append_cstr(body, "<?xml version=\"1.0\" encoding=\"utf-8\"?>"
	    "<Tags><TagSet>") != BUF_OK)
		return -1;
	for (i = 0; i < n; i++)
		if (buf_append_cstr(body, "<Tag><Key>") != BUF_OK ||
		    blob_xml_escape(body, tags[i].key) != BUF_OK ||
		    buf_append_cstr(body, "</Key><Value>") != BUF_OK ||
		    blob_xml_escape(body, tags[i].value) != BUF_OK ||
		    buf_append_cstr(body, "</Value></Tag>") != BUF_OK)
			return -1;
	return buf_append_cstr(body, "</TagSet></Tags>") == BUF_OK ? 0 : -1;
}

static const struct blob_call set_tags_call = {
	.method = "PUT", .target = BLOB_CALL_BLOB, .query = { { "comp", "tags" } },
	.content_type = "application/xml; charset=utf-8",
};

int
blob_set_tags(struct blob_client *c, const char *name,
    const struct blob_tag *tags, size_t n, const char *if_tags,
    struct blob_result *res)
{
	struct buf body = BUF_INIT(64 * 1024);
	struct blob_call_args a = { .name = name, .if_tags = if_tags, .body = &body };
	int rc;

	blob_result_clear(res);
	if (!blob_name_ok(name) || !blob_tags_ok(tags, n))
		return blob_result_set(res, BLOB_BAD_INPUT, "bad blob name or tags");
	if (tags_body(tags, n, &body) != 0)
		rc = blob_result_nomem(res);
	else
		rc = blob_call(c, &set_tags_call, &a, res);
	buf_free(&body);
	return rc;
}

struct tags_parse {
	struct blob_tag_set *set;
	int overflow;
};

static int
tags_end(void *ctx, const char *path, const char *text, size_t len)
{
	struct tags_parse *tp = ctx;
	struct blob_tag_set *s = tp->set;
	struct span sp = { text, len };

	if (strcmp(path, "/Tags/TagSet/Tag") == 0) {
		if (s->n < BLOB_MAX_TAGS)
			s->n++;
		else
			tp->overflow = 1;
	} else if (strcmp(path, "/Tags/TagSet/Tag/Key") == 0 && s->n < BLOB_MAX_TAGS) {
		if (copy_span(s->key[s->n], sizeof s->key[s->n], sp) != 0)
			tp->overflow = 1;
	} else if (strcmp(path, "/Tags/TagSet/Tag/Value") == 0 &&
	    s->n < BLOB_MAX_TAGS) {
		if (copy_span(s->value[s->n], sizeof s->value[s->n], sp) != 0)
			tp->overflow = 1;
	}
	return 0;
}

enum blob_xml_err
blob_parse_tags_answer(const char *xml, size_t len, struct blob_tag_set *out)
{
	struct tags_parse tp = { out, 0 };
	struct blob_xml_walk w = { &tp, NULL, tags_end };
	enum blob_xml_err e;

	memset(out, 0, sizeof *out);
	e = blob_xml_walk(xml, len, &w);
	return e == BLOB_XML_OK && tp.overflow ? BLOB_XML_MALFORMED : e;
}

static enum blob_xml_err
tags_read(const char *xml, size_t len, void *out)
{
	return blob_parse_tags_answer(xml, len, out);
}

static const struct blob_call get_tags_call = {
	.method = "GET", .target = BLOB_CALL_BLOB, .query = { { "comp", "tags" } },
	.read_body = tags_read, .malformed = "malformed tag answer",
};

int
blob_get_tags(struct blob_client *c, const char *name, struct blob_tag_set *out,
    struct blob_result *res)
{
	struct blob_call_args a = { .name = name, .out = out };

	memset(out, 0, sizeof *out);
	return blob_call(c, &get_tags_call, &a, res);
}

/* ---- containers -------------------------------------------------------------- */

/* Create Container; one that is already there is what the caller wanted. */
static const struct blob_call container_create_call = {
	.method = "PUT", .target = BLOB_CALL_CONTAINER,
	.query = { { "restype", "container" } }, .empty_body = 1,
	.ok_http = 409, .ok_code = "ContainerAlreadyExists",
};

int
blob_container_create(struct blob_client *c, struct blob_result *res)
{
	struct blob_call_args a = { .name = NULL };

	return blob_call(c, &container_create_call, &a, res);
}

/* ---- block lists ------------------------------------------------------------- */

static int
block_list_end(void *ctx, const char *path, const char *text, size_t len)
{
	struct blob_block_counts *out = ctx;

	(void)text;
	(void)len;
	if (strcmp(path, "/BlockList/CommittedBlocks/Block") == 0)
		out->committed++;
	else if (strcmp(path, "/BlockList/UncommittedBlocks/Block") == 0)
		out->uncommitted++;
	return 0;
}

enum blob_xml_err
blob_parse_block_list_answer(const char *xml, size_t len, struct blob_block_counts *out)
{
	struct blob_xml_walk w = { out, NULL, block_list_end };

	memset(out, 0, sizeof *out);
	return blob_xml_walk(xml, len, &w);
}

static enum blob_xml_err
block_list_read(const char *xml, size_t len, void *out)
{
	return blob_parse_block_list_answer(xml, len, out);
}

static const struct blob_call get_block_list_call = {
	.method = "GET", .target = BLOB_CALL_BLOB,
	.query = { { "comp", "blocklist" }, { "blocklisttype", "all" } },
	.read_body = block_list_read, .malformed = "malformed block list answer",
};

int
blob_get_block_list(struct blob_client *c, const char *name,
    struct blob_block_counts *out, struct blob_result *res)
{
	struct blob_call_args a = { .name = name, .out = out };

	memset(out, 0, sizeof *out);
	return blob_call(c, &get_block_list_call, &a, res);
}

/* ---- listing -------------------------------------------------------------- */

struct list_parse {
	struct buf name;
	char etag[128];
	char sha[65];
	char snapshot[64];
	char last_modified[64];
	uint64_t size;
	struct blob_tag_set tags;
	struct blob_tag tagv[BLOB_MAX_TAGS];
	/* Metadata: names and values packed in meta_text, at the offsets in
	 * meta_at (pointers are made once the blob is whole). */
	struct buf meta_text;
	size_t meta_at[BLOB_LIST_META][2];
	size_t nmeta;
	struct blob_meta metav[BLOB_LIST_META];
	struct buf *marker;
	blob_list_fn on_item;
	int (*on_name)(void *, const char *);
	void *ctx;
	int stopped;
	int nomem;
};

static int
list_start(void *ctx, const char *path)
{
	struct list_parse *lp = ctx;

	if (strcmp(path, "/EnumerationResults/Blobs/Blob") == 0) {
		buf_reset(&lp->name);
		lp->etag[0] = lp->sha[0] = lp->snapshot[0] = lp->last_modified[0] = '\0';
		lp->size = 0;
		/* A Tag without Key or Value must not inherit the last blob's. */
		memset(&lp->tags, 0, sizeof lp->tags);
		buf_reset(&lp->meta_text);
		lp->nmeta = 0;
	}
	return 0;
}

/* Keep one metadata entry (name, then text); past BLOB_LIST_META, or past
 * the capped buffer, the rest are left out (the service allows 8 KiB).  A
 * failed allocation stops the walk: a listing that silently lost an entry
 * could make a blob look like it names no document. */
static int
list_meta(struct list_parse *lp, const char *name, const char *text, size_t len)
{
	size_t at = lp->meta_text.len;
	enum buf_err e;

	if (lp->nmeta == BLOB_LIST_META)
		return 0;
	e = buf_append(&lp->meta_text, name, strlen(name) + 1);
	if (e == BUF_OK)
		e = buf_append(&lp->meta_text, text, len);
	if (e == BUF_OK)
		e = buf_append(&lp->meta_text, "", 1);
	if (e != BUF_OK) {
		lp->meta_text.len = at;
		if (e == BUF_NOMEM) {
			lp->nomem = 1;
			return 1;
		}
		return 0;
	}
	lp->meta_at[lp->nmeta][0] = at;
	lp->meta_at[lp->nmeta][1] = at + strlen(name) + 1;
	lp->nmeta++;
	return 0;
}

/* Nonzero (stop the walk) when text does not fit in b. */
static int
list_append(struct list_parse *lp, struct buf *b, const char *text, size_t len)
{
	enum buf_err e = buf_append(b, text, len);

	if (e == BUF_NOMEM)
		lp->nomem = 1;
	return e != BUF_OK;
}

static int
list_end(void *ctx, const char *path, const char *text, size_t len)
{
	struct list_parse *lp = ctx;
	static const char blob[] = "/EnumerationResults/Blobs/Blob";
	struct span sp = { text, len };
	const char *rest;
	size_t i;

	if (strcmp(path, "/EnumerationResults/NextMarker") == 0) {
		buf_reset(lp->marker);
		return list_append(lp, lp->marker, text, len);
	}
	if (strncmp(path, blob, sizeof blob - 1) != 0)
		return 0;
	rest = path + sizeof blob - 1;
	if (strcmp(rest, "/Name") == 0) {
		buf_reset(&lp->name);
		return list_append(lp, &lp->name, text, len);
	} else if (strcmp(rest, "/Properties/Content-Length") == 0) {
		int64_t v = blob_parse_decimal(text, len);

		lp->size = v > 0 ? (uint64_t)v : 0;
	} else if (strcmp(rest, "/Snapshot") == 0)
		blob_copy_field(lp->snapshot, sizeof lp->snapshot, text, len);
	else if (strcmp(rest, "/Properties/Etag") == 0)
		blob_copy_field(lp->etag, sizeof lp->etag, text, len);
	else if (strcmp(rest, "/Properties/Last-Modified") == 0)
		blob_copy_field(lp->last_modified, sizeof lp->last_modified, text, len);
	else if (strncmp(rest, "/Metadata/", 10) == 0 && rest[10] != '\0' &&
	    strchr(rest + 10, '/') == NULL) {
		if (strcmp(rest + 10, "sha256") == 0)
			blob_copy_field(lp->sha, sizeof lp->sha, text, len);
		return list_meta(lp, rest + 10, text, len);
	}
	else if (strcmp(rest, "/Tags/TagSet/Tag") == 0) {
		if (lp->tags.n < BLOB_MAX_TAGS)
			lp->tags.n++;
	} else if (strcmp(rest, "/Tags/TagSet/Tag/Key") == 0) {
		if (lp->tags.n < BLOB_MAX_TAGS && copy_span(lp->tags.key[lp->tags.n],
		    sizeof lp->tags.key[0], sp) != 0)
			lp->tags.key[lp->tags.n][0] = '\0';
	} else if (strcmp(rest, "/Tags/TagSet/Tag/Value") == 0) {
		if (lp->tags.n < BLOB_MAX_TAGS && copy_span(lp->tags.value[lp->tags.n],
		    sizeof lp->tags.value[0], sp) != 0)
			lp->tags.value[lp->tags.n][0] = '\0';
	} else if (rest[0] == '\0') {
		if (lp->on_name != NULL) {
			if (lp->on_name(lp->ctx, buf_cstr(&lp->name)) != 0)
				lp->stopped = 1;
		} else {
			struct blob_list_item it;

			for (i = 0; i < lp->tags.n; i++) {
				lp->tagv[i].key = lp->tags.key[i];
				lp->tagv[i].value = lp->tags.value[i];
			}
			it.name = buf_cstr(&lp->name);
			it.size = lp->size;
			it.etag = lp->etag;
			it.meta_sha256 = lp->sha;
			it.snapshot = lp->snapshot;
			it.last_modified = lp->last_modified;
			it.tags = lp->tagv;
			it.ntags = lp->tags.n;
			for (i = 0; i < lp->nmeta; i++) {
				lp->metav[i].name = lp->meta_text.ptr + lp->meta_at[i][0];
				lp->metav[i].value = lp->meta_text.ptr + lp->meta_at[i][1];
			}
			it.meta = lp->metav;
			it.nmeta = lp->nmeta;
			if (lp->on_item(lp->ctx, &it) != 0)
				lp->stopped = 1;
		}
		return lp->stopped;
	}
	return 0;
}

enum blob_xml_err
blob_parse_list_answer(const char *xml, size_t len, blob_list_fn on_item,
    int (*on_name)(void *, const char *), void *ctx, struct buf *next_marker)
{
	struct blob_xml_walk w = { NULL, list_start, list_end };
	struct list_parse *lp;
	enum blob_xml_err e;

	assert((on_item == NULL) != (on_name == NULL));
	buf_reset(next_marker);
	lp = alloc_calloc(1, sizeof *lp);
	if (lp == NULL)
		return BLOB_XML_NOMEM;
	buf_init(&lp->name, 4096);
	buf_init(&lp->meta_text, 16384);
	lp->marker = next_marker;
	lp->on_item = on_item;
	lp->on_name = on_name;
	lp->ctx = ctx;
	w.ctx = lp;
	e = blob_xml_walk(xml, len, &w);
	if (lp->stopped)
		e = BLOB_XML_STOPPED;
	else if (e == BLOB_XML_STOPPED)	/* a name or marker did not fit */
		e = lp->nomem ? BLOB_XML_NOMEM : BLOB_XML_MALFORMED;
	buf_free(&lp->name);
	buf_free(&lp->meta_text);
	alloc_free(lp);
	return e;
}

int
blob_list_pages(struct blob_client *c, const char *comp, const char *prefix,
    const char *include, const char *where, blob_list_fn on_item,
    int (*on_name)(void *, const char *), void *ctx, struct blob_result *res)
{
	struct blob_request r;
	struct buf marker = BUF_INIT(4096);
	char maxres[16];
	int rc = BLOB_OK;
	enum blob_xml_err xe;

	do {
		blob_request_init(&r, "GET");
		snprintf(maxres, sizeof maxres, "%u", c->page_size);
		if (blob_request_path_container(c, &r) != 0 ||
		    blob_request_query(&r, "restype", "container") != 0 ||
		    blob_request_query(&r, "comp", comp) != 0 ||
		    (prefix && prefix[0] && blob_request_query(&r, "prefix", prefix) != 0) ||
		    (include && include[0] && blob_request_query(&r, "include", include) != 0) ||
		    (where && blob_request_query(&r, "where", where) != 0) ||
		    (c->page_size && blob_request_query(&r, "maxresults", maxres) != 0) ||
		    (marker.len && blob_request_query(&r, "marker",
		    buf_cstr(&marker)) != 0)) {
			blob_request_free(&r);
			rc = blob_result_nomem(res);
			break;
		}
		buf_reset(&marker);
		rc = blob_exec_run(c, &r, res);
		if (rc == BLOB_OK) {
			xe = blob_parse_list_answer(r.answer.ptr ? r.answer.ptr : "",
			    r.answer.len, on_item, on_name, ctx, &marker);
			if (xe == BLOB_XML_STOPPED)
				rc = blob_result_set(res, BLOB_ABORTED, "stopped by the caller");
			else if (xe == BLOB_XML_NOMEM)
				rc = blob_result_nomem(res);
			else if (xe != BLOB_XML_OK)
				rc = blob_result_set(res, BLOB_FAILED, "malformed listing");
		}
		blob_request_free(&r);
	} while (rc == BLOB_OK && marker.len > 0);
	buf_free(&marker);
	return rc;
}

int
blob_list(struct blob_client *c, const char *prefix, unsigned include,
    blob_list_fn on_item, void *ctx, struct blob_result *res)
{
	char inc[64];

	blob_result_clear(res);
	if (on_item == NULL)
		return blob_result_set(res, BLOB_BAD_INPUT, "no callback");
	snprintf(inc, sizeof inc, "%s%s%s%s",
	    include & BLOB_LIST_TAGS ? "tags," : "",
	    include & BLOB_LIST_METADATA ? "metadata," : "",
	    include & BLOB_LIST_UNCOMMITTED ? "uncommittedblobs," : "",
	    include & BLOB_LIST_SNAPSHOTS ? "snapshots," : "");
	if (inc[0])
		inc[strlen(inc) - 1] = '\0';
	return blob_list_pages(c, "list", prefix, inc, NULL, on_item, NULL, ctx, res);
}

int
blob_find_by_tags(struct blob_client *c, const char *where, int (*on_name)(void *, const char *),
    void *ctx, struct blob_result *res)
{
	blob_result_clear(res);
	if (on_name == NULL || where == NULL)
		return blob_result_set(res, BLOB_BAD_INPUT, "no callback or expression");
	return blob_list_pages(c, "blobs", NULL, NULL, where, NULL, on_name, ctx, res);
}

/* ---- Blob Batch ------------------------------------------------------------ */

/* One sub-request of a batch: "DELETE <path> HTTP/1.1" with its own date and
 * signature ("Blob Batch" in the REST reference). */
static int
batch_append_delete(struct blob_client *c, struct buf *body, const char *boundary,
    size_t idx, const char *name, const char *if_tags, const char *date)
{
	struct blob_request sub;
	struct buf auth = BUF_INIT(256);
	size_t i;
	int rc = -1;

	blob_request_init(&sub, "DELETE");
	if (blob_request_path_blob(c, &sub, name) != 0 ||
	    blob_request_header(&sub, "x-ms-date", date) != 0 ||
	    blob_request_header(&sub, "x-ms-delete-snapshots", "include") != 0 ||
	    (if_tags && blob_request_header(&sub, "x-ms-if-tags", if_tags) != 0) ||
	    blob_request_header(&sub, "Content-Length", "0") != 0)
		goto out;
	if (buf_appendf(body, "--%s\r\nContent-Type: application/http\r\n"
	    "Content-Transfer-Encoding: binary\r\nContent-ID: %zu\r\n\r\n"
	    "DELETE %s%s%s HTTP/1.1\r\n", boundary, idx, buf_cstr(&sub.path),
	    c->sas ? "?" : "", c->sas ? c->sas : "") != BUF_OK)
		goto out;
	if (c->entra != NULL) {
		/* Each sub-request is authorized on its own: the same bearer. */
		struct blob_result tr;

		if (blob_entra_authorization(c, &auth, &tr) != BLOB_OK ||
		    buf_appendf(body, "Authorization: %s\r\n", buf_cstr(&auth)) != BUF_OK)
			goto out;
	} else if (c->sas == NULL) {
		if (sign_shared_key(c->key, c->keylen, "DELETE", c->account,
		    buf_cstr(&sub.path), "", sub.hdr, sub.nhdr, &auth) != SIGN_OK ||
		    buf_appendf(body, "Authorization: %s\r\n", buf_cstr(&auth)) != BUF_OK)
			goto out;
	}
	for (i = 0; i < sub.nhdr; i++)
		if (buf_appendf(body, "%s: %s\r\n", sub.hdr[i].name,
		    sub.hdr[i].value) != BUF_OK)
			goto out;
	if (buf_append_cstr(body, "\r\n") != BUF_OK)
		goto out;
	rc = 0;
out:
	if (auth.ptr != NULL)
		memset(auth.ptr, 0, auth.len);
	buf_free(&auth);
	blob_request_free(&sub);
	return rc;
}

/* Walk the multipart/mixed answer: each part carries "Content-ID: N" and
 * then the sub-response's status line and headers. */
void
blob_parse_batch_answer(const char *p, size_t len, struct blob_result *each, size_t n)
{
	const char *end = p + len, *part = p;

	for (;;) {
		const char *cid = memmem(part, (size_t)(end - part), "Content-ID:", 11);
		const char *http, *next, *code;
		char *stop;
		unsigned long idx;
		long st;

		if (cid == NULL)
			return;
		idx = strtoul(cid + 11, &stop, 10);
		next = memmem(cid + 11, (size_t)(end - cid - 11), "Content-ID:", 11);
		if (next == NULL)
			next = end;
		http = memmem(cid, (size_t)(next - cid), "HTTP/1.1 ", 9);
		part = next;
		if (http == NULL || idx >= n)
			continue;
		st = strtol(http + 9, NULL, 10);
		blob_result_clear(&each[idx]);
		each[idx].http_status = st;
		code = memmem(http, (size_t)(next - http), "x-ms-error-code:", 16);
		if (code != NULL) {
			size_t cl;

			code += 16;
			while (*code == ' ')
				code++;
			cl = strcspn(code, "\r\n");
			blob_copy_field(each[idx].code, sizeof each[idx].code, code, cl);
		}
		each[idx].status = blob_status_for_http(st, each[idx].code, 0);
		if (each[idx].status != BLOB_OK) {
			snprintf(each[idx].message, sizeof each[idx].message,
			    "HTTP %ld %s", st, each[idx].code);
		}
		if (next == end)
			return;
	}
}

int
blob_batch_delete(struct blob_client *c, const char *const *names, size_t n,
    const char *if_tags, struct blob_result *each, struct blob_result *res)
{
	struct blob_request r;
	struct buf body = BUF_INIT(4 * 1024 * 1024);
	unsigned char rnd[12];
	char boundary[64], ctype[128], date[32];
	size_t i;
	int rc;

	blob_result_clear(res);
	if (n == 0 || n > BATCH_MAX || names == NULL || each == NULL)
		return blob_result_set(res, BLOB_BAD_INPUT, "a batch holds 1 to 256 names");
	for (i = 0; i < n; i++) {
		blob_result_clear(&each[i]);
		(void)blob_result_set(&each[i], BLOB_FAILED, "no answer for this name");
		if (!blob_name_ok(names[i]))
			return blob_result_set(res, BLOB_BAD_INPUT, "bad blob name");
	}
	if (gnutls_rnd(GNUTLS_RND_NONCE, rnd, sizeof rnd) < 0)
		return blob_result_set(res, BLOB_FAILED, "no randomness");
	snprintf(boundary, sizeof boundary, "batch_");
	for (i = 0; i < sizeof rnd; i++)
		snprintf(boundary + 6 + 2 * i, 3, "%02x", rnd[i]);
	snprintf(ctype, sizeof ctype, "multipart/mixed; boundary=%s", boundary);
	sign_time_rfc1123(time(NULL), date);
	blob_request_init(&r, "POST");
	for (i = 0; i < n; i++)
		if (batch_append_delete(c, &body, boundary, i, names[i], if_tags,
		    date) != 0)
			goto nomem;
	if (buf_appendf(&body, "--%s--\r\n", boundary) != BUF_OK ||
	    blob_request_path_container(c, &r) != 0 ||
	    blob_request_query(&r, "restype", "container") != 0 ||
	    blob_request_query(&r, "comp", "batch") != 0 ||
	    blob_request_header(&r, "Content-Type", ctype) != 0)
		goto nomem;
	r.body = buf_cstr(&body);
	r.body_len = body.len;
	r.has_body = 1;
	rc = blob_exec_run(c, &r, res);
	if (rc == BLOB_OK)
		blob_parse_batch_answer(buf_cstr(&r.answer), r.answer.len, each, n);
	goto out;
nomem:
	rc = blob_result_nomem(res);
out:
	blob_request_free(&r);
	if (body.ptr != NULL)
		memset(body.ptr, 0, body.len);	/* it held signatures */
	buf_free(&body);
	return rc;
}

/* ---- service properties --------------------------------------------------- */

static int
service_props_end(void *ctx, const char *path, const char *text, size_t len)
{
	struct blob_service_props *p = ctx;
	struct span s = { text, len };

	if (strcmp(path, "/StorageServiceProperties/DeleteRetentionPolicy/Enabled") == 0)
		p->delete_retention_enabled = span_eq_nocase_cstr(s, "true");
	else if (strcmp(path, "/StorageServiceProperties/DeleteRetentionPolicy/Days") == 0)
		p->delete_retention_days = (int)blob_parse_decimal(text, len);
	return 0;
}

enum blob_xml_err
blob_parse_service_props_answer(const char *xml, size_t len, struct blob_service_props *out)
{
	struct blob_xml_walk w = { out, NULL, service_props_end };
	enum blob_xml_err e;

	memset(out, 0, sizeof *out);
	e = blob_xml_walk(xml, len, &w);
	if (out->delete_retention_days < 0)
		out->delete_retention_days = 0;
	return e;
}

static enum blob_xml_err
service_props_read(const char *xml, size_t len, void *out)
{
	return blob_parse_service_props_answer(xml, len, out);
}

static const struct blob_call service_properties_get_call = {
	.method = "GET", .target = BLOB_CALL_SERVICE,
	.query = { { "restype", "service" }, { "comp", "properties" } },
	.read_body = service_props_read, .malformed = "malformed service properties",
};

int
blob_service_properties_get(struct blob_client *c, struct blob_service_props *out,
    struct blob_result *res)
{
	struct blob_call_args a = { .out = out };

	memset(out, 0, sizeof *out);
	return blob_call(c, &service_properties_get_call, &a, res);
}

static const struct blob_call service_cors_set_call = {
	.method = "PUT", .target = BLOB_CALL_SERVICE,
	.query = { { "restype", "service" }, { "comp", "properties" } },
	.content_type = "application/xml",
};

/* An origin goes into XML text and a comma-separated list: visible ASCII
 * without the characters either would read differently. */
static int
cors_origin_ok(const char *o)
{
	size_t i;

	for (i = 0; o[i] != '\0'; i++)
		if ((unsigned char)o[i] <= 0x20 || (unsigned char)o[i] > 0x7e ||
		    strchr("<>&,'\"", o[i]) != NULL)
			return 0;
	return i > 0 && i <= 256;
}

int
blob_service_cors_set(struct blob_client *c, const char *const *origins, size_t n,
    struct blob_result *res)
{
	struct blob_call_args a = { 0 };
	struct buf xml = BUF_INIT(65536);
	size_t i;
	int rc;

	blob_result_clear(res);
	if (n == 0)
		return blob_result_set(res, BLOB_BAD_INPUT, "no origin");
	for (i = 0; i < n; i++)
		if (!cors_origin_ok(origins[i]))
			return blob_result_set(res, BLOB_BAD_INPUT, "an origin holds a character CORS cannot list");
	/* Only <Cors>: Set Blob Service Properties keeps every element a
	 * request leaves out (soft delete, logging, metrics). */
	if (buf_appendf(&xml, "<?xml version=\"1.0\" encoding=\"utf-8\"?><StorageServiceProperties>"
	    "<Cors><CorsRule><AllowedOrigins>") != BUF_OK)
		return blob_result_nomem(res);
	for (i = 0; i < n; i++)
		if (buf_appendf(&xml, "%s%s", i ? "," : "", origins[i]) != BUF_OK) {
			buf_free(&xml);
			return blob_result_nomem(res);
		}
	if (buf_appendf(&xml, "</AllowedOrigins><AllowedMethods>PUT,OPTIONS</AllowedMethods>"
	    "<MaxAgeInSeconds>3600</MaxAgeInSeconds><ExposedHeaders>etag</ExposedHeaders>"
	    "<AllowedHeaders>x-ms-blob-type,x-ms-tags,if-none-match,content-type</AllowedHeaders>"
	    "</CorsRule></Cors></StorageServiceProperties>") != BUF_OK) {
		buf_free(&xml);
		return blob_result_nomem(res);
	}
	a.body = &xml;
	rc = blob_call(c, &service_cors_set_call, &a, res);
	buf_free(&xml);
	return rc;
}

/* ---- SAS URLs -------------------------------------------------------------- */
