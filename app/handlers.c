/*
 * handlers.c - the document API (doc/openapi.yaml).  Each
 * handler checks its input, calls lib/ (protocol.c for anything that
 * writes), and renders JSON.  Nothing here decides protocol order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "storage/blob.h"
#include "registry/docs_db.h"
#include "registry/migrate.h"
#include "registry/status_db.h"
#include "parse/http_parse.h"
#include "parse/disposition.h"
#include "base/log.h"
#include "parse/form_reader.h"
#include "parse/multipart.h"
#include "protocol/protocol.h"
#include "protocol/tus.h"
#include "render.h"
#include "status_render.h"

/* A multipart form may exceed the document limit by this much framing. */
#define FORM_OVERHEAD (64 * 1024)
#define IDEM_KEY_MAX 255
#define LIST_DEFAULT 50
#define LIST_MAX 1000
#define RETRY_AFTER 5

/* Why reading a body stopped, so a failed upload gets the right 4xx. */
enum body_fault {
	BODY_FINE = 0,
	BODY_TOO_LARGE,		/* 413 */
	BODY_SHORT,		/* ended before Content-Length */
	BODY_BAD_FORM,		/* malformed multipart */
	BODY_FIELD_ORDER,	/* a name field after the file */
	BODY_SECOND_FILE,
};

void
reply_body_unread(struct request *r, const char *message, const char *kept)
{
	char text[256];

	if (r->body_timeout) {
		snprintf(text, sizeof text, "the request body arrived too slowly; %s", kept);
		resp_error(r, 408, "body_timeout", text);
	} else if (r->body_interrupted) {
		snprintf(text, sizeof text, "the responder was interrupted while it read the body;"
			 " %s; send it again", kept);
		resp_error_retry(r, 503, "interrupted", text, 1);
	} else {
		resp_error(r, 400, "bad_body", message);
	}
}

static const char *
body_fault_message(enum body_fault f)
{
	switch (f) {
	case BODY_TOO_LARGE: return "the document is larger than the upload limit";
	case BODY_SHORT: return "the request body ended before Content-Length bytes";
	case BODY_BAD_FORM: return "the multipart/form-data body is malformed";
	case BODY_FIELD_ORDER: return "the name field must come before the file field";
	case BODY_SECOND_FILE: return "only one file per request";
	default: return "the request body could not be read";
	}
}

int
require_writer(struct request *r)
{
	if (r->owner)
		return 1;
	req_drain(r, 0);
	resp_error(r, 401, "unauthorized", "writes need a bearer token or web server authentication");
	return 0;
}

int
content_type_ok(struct span ct)
{
	size_t i;

	if (ct.len == 0 || ct.len >= DOC_CTYPE_MAX)
		return 0;
	for (i = 0; i < ct.len; i++)
		if ((unsigned char)ct.ptr[i] < 0x20 || (unsigned char)ct.ptr[i] > 0x7e)
			return 0;
	return 1;
}

/* Reply for a protocol failure (everything but PROTO_OK). */
static void
reply_failure(struct request *r, enum proto_result pr, enum body_fault fault)
{
	switch (pr) {
	case PROTO_NAME_TAKEN:
		resp_error(r, 409, "name_taken", "a document with this name exists");
		break;
	case PROTO_NOT_FOUND:
		resp_error(r, 404, "not_found", "no such document");
		break;
	case PROTO_FORBIDDEN:
		resp_error(r, 403, "forbidden", "the document belongs to another owner");
		break;
	case PROTO_STALE:
		resp_error(r, 412, "precondition_failed", "If-Match does not match the document's ETag");
		break;
	case PROTO_BODY_ERROR:
		if (fault == BODY_TOO_LARGE && !r->body_timeout && !r->body_interrupted)
			resp_error(r, 413, "too_large", body_fault_message(fault));
		else
			reply_body_unread(r, body_fault_message(fault), "the upload was abandoned");
		break;
	case PROTO_IDEM_IN_PROGRESS:
		resp_error_retry(r, 409, "idempotency_in_progress",
				 "a request with this Idempotency-Key is in progress", 1);
		break;
	case PROTO_IDEM_MISMATCH:
		resp_error(r, 422, "idempotency_mismatch",
			   "this Idempotency-Key was used for a different request");
		break;
	case PROTO_DEADLINE:
		resp_error_retry(r, 503, "deadline_exceeded", "the request ran out of time", RETRY_AFTER);
		break;
	case PROTO_UNAVAILABLE:
		resp_error_retry(r, 503, "unavailable", "a dependency is unavailable; try again",
				 RETRY_AFTER);
		break;
	case PROTO_STORAGE_ERROR:
		/* The log names the service's code and request id; the client
		 * learns only that storage, not its request, was at fault. */
		resp_error(r, 502, "storage_error", "storage refused the request; nothing was stored");
		break;
	default:
		resp_error(r, 500, "internal", "internal error");
		break;
	}
}

void
reply_proto_failure(struct request *r, enum proto_result pr)
{
	reply_failure(r, pr, BODY_FINE);
}

void
reply_document(struct request *r, int status, const struct doc *d)
{
	struct buf extra = BUF_INIT(512);
	char etag[64];

	render_doc_etag(d, etag, sizeof etag);
	if (buf_appendf(&extra, "ETag: %s\r\n", etag) != BUF_OK ||
	    (status == 201 &&
	     req_location_append(r, &extra, "/documents/%llu", (unsigned long long)d->id) != BUF_OK)) {
		resp_error(r, 500, "internal", "out of memory");
		goto out;
	}
	resp_json(r, status, render_doc_json(d), buf_cstr(&extra));
out:
	buf_free(&extra);
}

/* A browser form post (no JavaScript) wants to land back on the page. */
static int
wants_html(const struct request *r)
{
	struct span accept = req_param(r, "HTTP_ACCEPT");

	return span_starts_with_cstr(accept, "text/html");
}

static void
reply_created(struct request *r, const struct proto_answer *a)
{
	if (wants_html(r)) {
		struct buf extra = BUF_INIT(512);

		if (req_location_append(r, &extra, "/") != BUF_OK)
			resp_error(r, 500, "internal", "out of memory");
		else
			resp_begin(r, 303, "text/plain", 0, buf_cstr(&extra));
		buf_free(&extra);
		return;
	}
	/* A replay renders the recorded fields exactly as the first answer did. */
	reply_document(r, a->replayed && a->replay_status ? (int)a->replay_status : 201, &a->doc);
}

void
reply_name_taken(struct app *app, struct request *r, struct span name)
{
	char id[UPLOAD_ID_MAX];
	struct buf upload = BUF_INIT(512);

	/* doc/design.md: a name held by the caller's own resumable upload says which. */
	if (r->owner == NULL || tus_find_pending(app->svc, name, r->owner, id, sizeof id) != PROTO_OK ||
	    id[0] == '\0') {
		reply_failure(r, PROTO_NAME_TAKEN, BODY_FINE);
		goto out;
	}
	if (req_url_append(r, &upload, "/uploads/%s", id) != BUF_OK) {
		resp_error(r, 500, "internal", "out of memory");
		goto out;
	}
	resp_json(r, 409, json_pack("{s:s, s:s, s:s}", "error", "name_taken", "message",
				    "your upload of this name is under way", "upload", buf_cstr(&upload)), NULL);
out:
	buf_free(&upload);
}

/* ---- raw bodies ---- */

struct raw_body {
	struct request *r;
	uint64_t max;
	uint64_t got;
	enum body_fault fault;
};

static long
raw_read(void *ctx, char *buf, size_t len)
{
	struct raw_body *b = ctx;
	long n = req_read(b->r, buf, len);

	if (n < 0) {
		b->fault = BODY_SHORT;
		return -1;
	}
	b->got += (uint64_t)n;
	if (b->got > b->max) {
		b->fault = BODY_TOO_LARGE;
		return -1;
	}
	return n;
}

int
idempotency_key_of(struct request *r, char *out, size_t outlen, int *present)
{
	struct span k = req_param(r, "HTTP_IDEMPOTENCY_KEY");
	size_t i;

	*present = k.len > 0;
	if (!*present)
		return 0;
	if (k.len > IDEM_KEY_MAX)
		return -1;
	for (i = 0; i < k.len; i++)
		if ((unsigned char)k.ptr[i] <= 0x20 || (unsigned char)k.ptr[i] > 0x7e)
			return -1;
	return copy_span(out, outlen, k);
}

int
check_name(struct request *r, struct span name)
{
	enum document_name_err e = document_name_check(name);

	if (e == DOCNAME_OK)
		return 1;
	req_drain(r, 0);
	resp_error(r, 400, "bad_name", document_name_err_string(e));
	return 0;
}

/* ---- create ---- */

/* One create request's body, whichever way it came. */
struct upload {
	struct proto_body body;
	struct span name;
	struct raw_body raw;
	struct form_reader *form;	/* multipart/form-data only */
	struct buf qname;		/* raw only: ?name= decoded */
	char ctbuf[DOC_CTYPE_MAX];
};

static enum body_fault
body_fault_of_form(enum form_fault f)
{
	switch (f) {
	case FORM_FINE: return BODY_FINE;
	case FORM_TOO_LARGE: return BODY_TOO_LARGE;
	case FORM_INPUT_FAILED: return BODY_SHORT;
	case FORM_FIELD_ORDER: return BODY_FIELD_ORDER;
	case FORM_SECOND_FILE: return BODY_SECOND_FILE;
	default: return BODY_BAD_FORM;
	}
}

static enum body_fault
upload_fault(const struct upload *u)
{
	return u->form ? body_fault_of_form(form_reader_fault(u->form)) : u->raw.fault;
}

static long
request_input(void *ctx, char *buf, size_t len)
{
	return req_read(ctx, buf, len);
}

/* A form: parse up to the file part, whose name and type decide the document.
 * 1 when the upload can start, 0 when r has been answered. */
static int
upload_from_form(struct app *app, struct request *r, struct span ctype, struct upload *u)
{
	const struct form_limits limits = { app->cfg->max_upload, 4 * DOCUMENT_NAME_MAX, DOC_CTYPE_MAX };
	struct span boundary, ftype;
	enum form_fault fault;

	if (multipart_boundary(ctype, &boundary) != MP_OK) {
		resp_error(r, 400, "bad_body", "multipart/form-data without a valid boundary");
		return 0;
	}
	if (form_reader_new(boundary, &limits, request_input, r, &u->form) != MP_OK) {
		resp_error(r, 500, "internal", "out of memory");
		return 0;
	}
	fault = form_reader_start(u->form);
	if (fault == FORM_NO_FILE) {
		resp_error(r, 400, "missing_file", "the form has no file field");
		return 0;
	}
	if (fault != FORM_FINE) {
		reply_failure(r, PROTO_BODY_ERROR, body_fault_of_form(fault));
		return 0;
	}
	/* An empty or absent name field means: use the file's name. */
	u->name = form_reader_name(u->form);
	if (u->name.len == 0)
		u->name = form_reader_filename(u->form);
	if (!check_name(r, u->name))
		return 0;
	ftype = form_reader_content_type(u->form);
	u->body.content_type = "application/octet-stream";
	if (ftype.len && (!content_type_ok(ftype) || copy_span(u->ctbuf, sizeof u->ctbuf, ftype))) {
		resp_error(r, 400, "bad_content_type", "the file's Content-Type is not acceptable");
		return 0;
	}
	if (ftype.len)
		u->body.content_type = u->ctbuf;
	u->body.read = form_reader_read;
	u->body.ctx = u->form;
	return 1;
}

/* The raw bytes with ?name=.  1 when the upload can start, 0 when answered. */
static int
upload_from_raw(struct app *app, struct request *r, struct span ctype, struct upload *u)
{
	enum http_query_result q = http_query_get(r->query, "name", &u->qname);

	if (q == HTTP_QUERY_NOT_FOUND) {
		resp_error(r, 400, "missing_name", "a raw upload needs ?name=");
		return 0;
	}
	if (q != HTTP_QUERY_FOUND) {
		resp_error(r, 400, "bad_name", "the name parameter is malformed");
		return 0;
	}
	u->name = buf_span(&u->qname);
	if (!check_name(r, u->name))
		return 0;
	if (ctype.len == 0) {
		u->body.content_type = "application/octet-stream";
	} else if (!content_type_ok(ctype) || copy_span(u->ctbuf, sizeof u->ctbuf, ctype)) {
		resp_error(r, 400, "bad_content_type", "the Content-Type is not acceptable");
		return 0;
	} else {
		u->body.content_type = u->ctbuf;
	}
	if (r->content_length > 0 && (uint64_t)r->content_length > app->cfg->max_upload) {
		resp_error(r, 413, "too_large", body_fault_message(BODY_TOO_LARGE));
		return 0;
	}
	u->raw = (struct raw_body){ r, app->cfg->max_upload, 0, BODY_FINE };
	u->body.read = raw_read;
	u->body.ctx = &u->raw;
	u->body.expected_size = r->content_length;
	return 1;
}

/* Which body a create carries, and is it one we take?  1 go on, 0 answered. */
static int
upload_open(struct app *app, struct request *r, struct upload *u)
{
	struct span ctype = req_param(r, "CONTENT_TYPE");

	if (span_starts_with_cstr(ctype, "multipart/form-data"))
		return upload_from_form(app, r, ctype, u);
	if (span_starts_with_cstr(ctype, "multipart/") ||
	    span_starts_with_cstr(ctype, "application/x-www-form-urlencoded")) {
		/* curl --data-binary says x-www-form-urlencoded unless told otherwise:
		 * storing a file under a form encoding's type would be a lie. */
		resp_error(r, 415, "unsupported_media_type",
			   "send multipart/form-data with a file field, or the raw bytes with ?name= and"
			   " their real Content-Type");
		return 0;
	}
	return upload_from_raw(app, r, ctype, u);
}

void
handle_create(struct app *app, struct request *r)
{
	struct upload up = { .qname = BUF_INIT(4 * DOCUMENT_NAME_MAX) };
	struct proto_answer ans;
	char key[IDEM_KEY_MAX + 1];
	enum proto_result pr;
	int has_key = 0;

	memset(&ans, 0, sizeof ans);
	up.body.expected_size = -1;
	if (!require_writer(r))
		goto out;
	if (idempotency_key_of(r, key, sizeof key, &has_key) != 0) {
		resp_error(r, 400, "bad_idempotency_key", "Idempotency-Key must be 1-255 visible ASCII characters");
		goto out;
	}
	/* Refuse before reading a byte when the declared size is already too big. */
	if (r->content_length >= 0 &&
	    (uint64_t)r->content_length > app->cfg->max_upload + FORM_OVERHEAD) {
		resp_error(r, 413, "too_large", body_fault_message(BODY_TOO_LARGE));
		goto out;
	}
	if (!upload_open(app, r, &up))
		goto out;
	pr = proto_create(app->svc, up.name, r->owner, &up.body, has_key ? key : NULL, &ans);
	if (pr == PROTO_OK)
		reply_created(r, &ans);
	else if (pr == PROTO_NAME_TAKEN)
		reply_name_taken(app, r, up.name);
	else
		reply_failure(r, pr, upload_fault(&up));
out:
	form_reader_free(up.form);
	buf_free(&up.qname);
}

/* ---- reads ---- */

static int
require_reader(struct app *app, struct request *r)
{
	if (!app->cfg->reads_need_auth || r->owner)
		return 1;
	resp_error(r, 401, "unauthorized", "reads need a bearer token or web server authentication");
	return 0;
}

/* The ready document r->route.doc_id, or an error answer and 0. */
static int
load_ready(struct app *app, struct request *r, struct doc *d)
{
	enum db_err e = docs_get(app->svc->db, r->route.doc_id, d);

	if (e == DB_OK && d->status == DOC_STATUS_READY)
		return 1;
	if (e == DB_OK || e == DB_NOT_FOUND)
		resp_error(r, 404, "not_found", "no such document");
	else
		resp_error_retry(r, 503, "unavailable", "the database is unavailable", RETRY_AFTER);
	return 0;
}

void
handle_get(struct app *app, struct request *r)
{
	struct doc d;

	if (require_reader(app, r) && load_ready(app, r, &d))
		reply_document(r, 200, &d);
}

struct list_ctx {
	json_t *docs;
	uint64_t last_seq;	/* the cursor: the last one's place in the list */
	unsigned n;
};

static int
list_one(void *ctx, const struct doc *d)
{
	struct list_ctx *lc = ctx;

	json_array_append_new(lc->docs, render_doc_json(d));
	lc->last_seq = d->ready_seq;
	lc->n++;
	return 0;
}

/*
 * GET /documents?name=EXACT: the ready document of that name as a list of
 * one (or none), so any client, a tus client above all, can find what it
 * stored by the name it chose.  The name is compared exactly, as stored.
 * A name picks at most one document, so limit or after beside it is a
 * mistake the client should hear about rather than have ignored.
 */
static void
list_by_name(struct app *app, struct request *r, enum http_query_result q, struct span name)
{
	struct buf scratch = BUF_INIT(32);
	json_t *docs = NULL;
	struct doc d;
	enum db_err e;

	/* First: a malformed query would make limit and after look present. */
	if (q != HTTP_QUERY_FOUND) {
		resp_error(r, 400, "bad_name", "the name parameter is malformed");
		goto out;
	}
	if (http_query_get(r->query, "limit", &scratch) != HTTP_QUERY_NOT_FOUND) {
		resp_error(r, 400, "bad_limit", "limit does not combine with name: a name matches at most"
			   " one document");
		goto out;
	}
	if (http_query_get(r->query, "after", &scratch) != HTTP_QUERY_NOT_FOUND) {
		resp_error(r, 400, "bad_cursor", "after does not combine with name: a name matches at most"
			   " one document");
		goto out;
	}
	if (http_query_get(r->query, "prefix", &scratch) != HTTP_QUERY_NOT_FOUND) {
		resp_error(r, 400, "bad_prefix", "prefix does not combine with name: a name matches at"
			   " most one document");
		goto out;
	}
	if (!check_name(r, name))
		goto out;
	e = docs_find_ready_by_name(app->svc->db, name, &d);
	if (e != DB_OK && e != DB_NOT_FOUND) {
		resp_error_retry(r, 503, "unavailable", "the database is unavailable", RETRY_AFTER);
		goto out;
	}
	docs = json_array();
	if (e == DB_OK)
		json_array_append_new(docs, render_doc_json(&d));
	resp_json(r, 200, json_pack("{s:O, s:o}", "documents", docs, "next", json_null()), NULL);
out:
	json_decref(docs);
	buf_free(&scratch);
}

/*
 * ?prefix=P: the names that begin with P.  A prefix follows a name's rules
 * (a valid name is a valid prefix), except that "." and ".." are fine: they
 * begin ".profile".  Empty means no filter, as an empty form field sends it.
 */
static int
list_prefix_parse(struct request *r, struct list_query *lq)
{
	enum http_query_result q = http_query_get(r->query, "prefix", &lq->prefix);
	enum document_name_err e;

	if (q == HTTP_QUERY_NOT_FOUND || (q == HTTP_QUERY_FOUND && lq->prefix.len == 0))
		return 1;
	e = q == HTTP_QUERY_FOUND ? document_name_check(buf_span(&lq->prefix)) : DOCNAME_BAD_UTF8;
	if (e == DOCNAME_OK || e == DOCNAME_DOT_NAME)
		return 1;
	resp_error(r, 400, "bad_prefix", q == HTTP_QUERY_FOUND ? document_name_err_string(e) :
		   "the prefix parameter is malformed");
	return 0;
}

int
list_query_parse(struct request *r, unsigned default_limit, struct list_query *lq)
{
	struct buf v = BUF_INIT(32);
	enum http_query_result q;
	int ok = 0;

	lq->limit = default_limit;
	lq->after = 0;
	q = http_query_get(r->query, "limit", &v);
	if ((q == HTTP_QUERY_FOUND && (http_parse_uint(buf_span(&v), LIST_MAX, &lq->limit) != HTTP_UINT_OK ||
				       lq->limit == 0)) ||
	    (q != HTTP_QUERY_FOUND && q != HTTP_QUERY_NOT_FOUND)) {
		resp_error(r, 400, "bad_limit", "limit must be an integer from 1 to 1000");
		goto out;
	}
	q = http_query_get(r->query, "after", &v);
	if ((q == HTTP_QUERY_FOUND && http_parse_uint(buf_span(&v), UINT64_MAX, &lq->after) != HTTP_UINT_OK) ||
	    (q != HTTP_QUERY_FOUND && q != HTTP_QUERY_NOT_FOUND)) {
		resp_error(r, 400, "bad_cursor", "after must be a cursor from a previous answer");
		goto out;
	}
	ok = list_prefix_parse(r, lq);
out:
	buf_free(&v);
	return ok;
}

void
handle_list(struct app *app, struct request *r)
{
	struct buf v = BUF_INIT(4 * DOCUMENT_NAME_MAX);
	struct list_query lq = { 0, 0, BUF_INIT(4 * DOCUMENT_NAME_MAX) };
	struct list_ctx lc = { NULL, 0, 0 };
	enum http_query_result q;
	enum db_err e;
	char next[24];

	if (!require_reader(app, r))
		goto out;
	q = http_query_get(r->query, "name", &v);
	if (q != HTTP_QUERY_NOT_FOUND) {
		list_by_name(app, r, q, buf_span(&v));
		goto out;
	}
	if (!list_query_parse(r, LIST_DEFAULT, &lq))
		goto out;
	lc.docs = json_array();
	e = docs_list_ready(app->svc->db, lq.after, buf_span(&lq.prefix), (unsigned)lq.limit, list_one, &lc);
	if (e != DB_OK) {
		resp_error_retry(r, 503, "unavailable", "the database is unavailable", RETRY_AFTER);
		goto out;
	}
	snprintf(next, sizeof next, "%llu", (unsigned long long)lc.last_seq);
	resp_json(r, 200, json_pack("{s:O, s:o}", "documents", lc.docs,
				    "next", lc.n == lq.limit ? json_string(next) : json_null()), NULL);
out:
	json_decref(lc.docs);
	buf_free(&lq.prefix);
	buf_free(&v);
}

struct download {
	struct request *r;
	const struct doc *d;
	const char *type;	/* served_content_type() */
	int status;
	uint64_t start, len;
};

/*
 * Uploaded bytes are hostile to the origin that serves them (doc/design.md
 * "Serving user content"): an HTML or SVG document rendered here could read
 * the page's token.  So every answer carrying a document's bytes is a
 * download (attachment), is never sniffed into something executable, and
 * if a browser renders it anyway it runs sandboxed with nothing allowed.
 */
#define CONTENT_SAFETY_HEADERS \
	"X-Content-Type-Options: nosniff\r\n" \
	"Content-Security-Policy: sandbox; default-src 'none'\r\n"
/* ETag, Accept-Ranges, Content-Range and the two above fit in 512 bytes. */
#define DOWNLOAD_HEADERS_MAX (512 + sizeof "Content-Disposition: \r\n" + \
			      DISPOSITION_MAX(DOC_NAME_MAX))

/* The type a document's bytes are served with: its own, unless that is
 * active content an operator did not allow ([download] serve_active_types). */
static const char *
served_content_type(const struct app *app, const struct doc *d)
{
	if (!app->cfg->serve_active_types && content_type_is_active(span_from_cstr(d->content_type)))
		return "application/octet-stream";
	return d->content_type;
}

static int
download_headers(void *ctx, const struct blob_props *p, uint64_t total)
{
	struct download *dl = ctx;
	struct buf extra = BUF_INIT(DOWNLOAD_HEADERS_MAX);
	char etag[64];
	int rc = 1;

	(void)p;
	render_doc_etag(dl->d, etag, sizeof etag);
	if (buf_appendf(&extra, "ETag: %s\r\nAccept-Ranges: bytes\r\nContent-Disposition: ", etag) ||
	    disposition_attachment(span_from_cstr(dl->d->name), &extra) ||
	    buf_append_cstr(&extra, "\r\n" CONTENT_SAFETY_HEADERS) ||
	    (dl->status == 206 &&
	     buf_appendf(&extra, "Content-Range: bytes %llu-%llu/%llu\r\n",
			 (unsigned long long)dl->start, (unsigned long long)(dl->start + dl->len - 1),
			 (unsigned long long)total))) {
		/* Never send the bytes without their safety headers. */
		resp_error(dl->r, 500, "internal", "out of memory");
		goto out;
	}
	resp_begin(dl->r, dl->status, dl->type, (int64_t)dl->len, buf_cstr(&extra));
	rc = 0;
out:
	buf_free(&extra);
	return rc;
}

static int
download_data(void *ctx, const char *data, size_t len)
{
	struct download *dl = ctx;

	return req_write(dl->r, data, len) == 0 ? 0 : 1;
}

void
handle_content_get(struct app *app, struct request *r)
{
	struct doc d;
	struct download dl;
	struct blob_result res;
	struct span range = req_param(r, "HTTP_RANGE");
	struct buf url = BUF_INIT(8192);
	struct buf disposition = BUF_INIT(DISPOSITION_MAX(DOC_NAME_MAX));

	if (!require_reader(app, r) || !load_ready(app, r, &d))
		goto out;
	if (app->cfg->download_mode == DOWNLOAD_REDIRECT) {
		char extra[8300];

		/* Storage answers on its own origin, but a browser still must not
		 * render the bytes: the SAS makes it send our disposition and type
		 * (rscd, rsct) instead of whatever the blob carries. */
		if (disposition_attachment(span_from_cstr(d.name), &disposition) != BUF_OK ||
		    blob_sas_url(app->svc->blob, d.blob_name, "r", app->cfg->sas_lifetime,
				 buf_cstr(&disposition), served_content_type(app, &d), &url, &res) != 0) {
			resp_error(r, 500, "internal", "cannot sign a download link");
			goto out;
		}
		snprintf(extra, sizeof extra, "Location: %s\r\nCache-Control: no-store\r\n", buf_cstr(&url));
		resp_begin(r, 302, "text/plain", 0, extra);
		goto out;
	}
	dl = (struct download){ r, &d, served_content_type(app, &d), 200, 0, d.size };
	if (range.len && d.size > 0) {
		switch (http_parse_range(range, d.size, &dl.start, &dl.len)) {
		case HTTP_RANGE_OK:
			dl.status = 206;
			break;
		case HTTP_RANGE_UNSATISFIABLE: {
			char extra[64];

			snprintf(extra, sizeof extra, "Content-Range: bytes */%llu\r\n",
				 (unsigned long long)d.size);
			resp_json(r, 416, json_pack("{s:s, s:s}", "error", "bad_range", "message",
						    "the range is outside the document"), extra);
			goto out;
		}
		default:
			break;
		}
	}
	if (r->head_only) {
		/* The headers come from the database; no need to fetch the bytes. */
		(void)download_headers(&dl, NULL, d.size);
		goto out;
	}
	blob_client_set_deadline(app->svc->blob, 0);
	/* Pinned to the bytes committed (doc/design.md "Conditional reads"). */
	if (blob_get(app->svc->blob, d.blob_name, dl.start, dl.status == 206 ? dl.len : 0, d.blob_etag,
		     download_headers, download_data, &dl, &res) != 0) {
		if (r->headers_sent) {
			/* Too late for a status: the short body tells the client. */
			log_warn("download of %s cut: %s", d.blob_name, blob_status_name(res.status));
		} else if (res.status == BLOB_CONDITION_NOT_MET) {
			log_error("document %llu: blob %s is not the one committed (its ETag is no longer"
				  " %s): bytes changed out of band; not served", (unsigned long long)d.id,
				  d.blob_name, d.blob_etag);
			resp_error(r, 500, "bytes_changed", "the document's bytes changed in storage after"
				   " they were committed; they are not served");
		} else if (res.status == BLOB_NOT_FOUND) {
			log_error("ready document %llu has no blob %s", (unsigned long long)d.id, d.blob_name);
			resp_error(r, 500, "internal", "the document's bytes are missing");
		} else if (res.status == BLOB_REJECTED) {
			/* The range came from the row's size: a 416 means the blob
			 * is not what the row says, never the client's range. */
			log_error("download of %s refused: HTTP %ld %s, request id %s", d.blob_name,
				  res.http_status, res.code, res.request_id[0] ? res.request_id : "none");
			resp_error(r, 502, "storage_error", "storage refused the request");
		} else {
			resp_error_retry(r, 503, "unavailable", "storage is unavailable", RETRY_AFTER);
		}
	}
out:
	buf_free(&url);
	buf_free(&disposition);
}

/* ---- replace and delete ---- */

int
if_match_holds(void *ctx, const struct doc *d)
{
	const struct span *if_match = ctx;
	char etag[64];

	render_doc_etag(d, etag, sizeof etag);
	return http_etag_match(*if_match, span_from_cstr(etag)) == HTTP_ETAG_MATCH;
}

void
handle_content_put(struct app *app, struct request *r)
{
	struct span ctype = req_param(r, "CONTENT_TYPE");
	struct span if_match = req_param(r, "HTTP_IF_MATCH");
	struct proto_precondition pre = { if_match_holds, &if_match };
	struct proto_answer ans;
	struct proto_body body;
	struct raw_body raw;
	char ctbuf[DOC_CTYPE_MAX];
	enum proto_result pr;

	memset(&ans, 0, sizeof ans);
	if (!require_writer(r))
		return;
	if (r->content_length >= 0 && (uint64_t)r->content_length > app->cfg->max_upload) {
		resp_error(r, 413, "too_large", body_fault_message(BODY_TOO_LARGE));
		return;
	}
	memset(&body, 0, sizeof body);
	if (ctype.len == 0) {
		body.content_type = "application/octet-stream";
	} else if (span_starts_with_cstr(ctype, "multipart/")) {
		resp_error(r, 415, "unsupported_media_type", "replace takes the raw bytes");
		return;
	} else if (!content_type_ok(ctype) || copy_span(ctbuf, sizeof ctbuf, ctype)) {
		resp_error(r, 400, "bad_content_type", "the Content-Type is not acceptable");
		return;
	} else {
		body.content_type = ctbuf;
	}
	raw = (struct raw_body){ r, app->cfg->max_upload, 0, BODY_FINE };
	body.read = raw_read;
	body.ctx = &raw;
	body.expected_size = r->content_length;
	/* "*" holds for any current version (RFC 9110 13.1.1): a replace under
	 * it must not turn into 412 because another replace landed during the
	 * upload.  proto_replace still requires the document to exist, and a
	 * missing one is 404 as without the header (13.2.1: a failure found
	 * before the precondition takes precedence over it). */
	pr = proto_replace(app->svc, r->route.doc_id, r->owner, &body,
			   if_match.len && !http_if_match_any(if_match) ? &pre : NULL, &ans);
	if (pr == PROTO_OK)
		reply_document(r, 200, &ans.doc);
	else
		reply_failure(r, pr, raw.fault);
}

void
handle_delete(struct app *app, struct request *r)
{
	struct span if_match = req_param(r, "HTTP_IF_MATCH");
	struct proto_precondition pre = { if_match_holds, &if_match };
	enum proto_result pr;

	if (!require_writer(r))
		return;
	/* As for a replace: "*" holds for any current version. */
	pr = proto_delete(app->svc, r->route.doc_id, r->owner,
			  if_match.len && !http_if_match_any(if_match) ? &pre : NULL);
	if (pr == PROTO_OK)
		resp_begin(r, 204, NULL, -1, NULL);
	else
		reply_failure(r, pr, BODY_FINE);
}

/* ---- health ---- */

/*
 * Whether the sweeper is late ([sweep] late_after): a cron that stopped
 * calling `bindery sweep` leaves intents and the outbox to pile up, but
 * every request still works, so it is said here without turning /healthz
 * into a 503 that would take the responder out of a load balancer.  A
 * schema without sweep_runs has no record of a sweep: late.
 */
static const char *
sweeper_health(struct app *app)
{
	struct status_sweep_run last_ok;

	if (status_db_last_ok(app->svc->db, &last_ok) != DB_OK)
		return "late";
	return status_db_sweeper_late(&last_ok, app->cfg->sweep_late_after) ? "late" : "ok";
}

void
handle_healthz(struct app *app, struct request *r)
{
	struct blob_props props;
	struct blob_result res;
	const char *db = "ok", *storage = "ok", *why = "storage does not answer";
	json_t *j;

	if (db_ping(app->svc->db) != DB_OK)
		db = "unavailable";
	/* A probe for a name that never exists: 404 proves reachability and auth. */
	blob_client_set_deadline(app->svc->blob, blob_now_ms() + 3000);
	if (blob_get_properties(app->svc->blob, ".bindery-healthz", &props, &res) != 0 &&
	    res.status != BLOB_NOT_FOUND) {
		storage = res.status == BLOB_AUTH_FAILED ? "unauthorized" : "unavailable";
		/* The cause in words (a refused certificate, DNS, a clock
		 * off); blob.h keeps credentials out of it. */
		if (res.message[0] != '\0')
			why = res.message;
		log_warn("healthz: storage: %s (HTTP %ld %s): %s", blob_status_name(res.status),
			 res.http_status, res.code, res.message);
	}
	blob_client_set_deadline(app->svc->blob, 0);
	if (strcmp(db, "ok") == 0 && strcmp(storage, "ok") == 0) {
		resp_json(r, 200, json_pack("{s:s, s:s, s:s}", "database", db, "storage", storage,
					    "sweeper", sweeper_health(app)), NULL);
		return;
	}
	j = json_pack("{s:s, s:s, s:s, s:s}", "database", db, "storage", storage, "error",
		      strcmp(db, "ok") ? "database_unavailable" : "storage_unavailable", "message",
		      strcmp(db, "ok") ? "the database does not answer" : why);
	resp_json(r, 503, j, "Retry-After: 5\r\n");
}

/* The Prometheus text format's media type, version 0.0.4. */
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define METRICS_MAX_BYTES (64 * 1024)

/* GET /metrics: the figures of `bindery status` (status_render.h); who may
 * ask was settled before the database (handle_refusal_before_database). */
void
handle_metrics(struct app *app, struct request *r)
{
	struct buf out = BUF_INIT(METRICS_MAX_BYTES);
	struct status_view v;
	enum db_err e;

	if ((e = status_view_fill(app->svc->db, app->cfg, migrate_default_dir(), &v)) != DB_OK) {
		log_warn("metrics: database: %s", db_err_name(e));
		resp_error_retry(r, 503, "unavailable", "the database is unavailable", RETRY_AFTER);
		goto out;
	}
	if (status_render_metrics(&out, &v) != BUF_OK) {
		resp_error(r, 500, "internal", "the metrics did not fit");
		goto out;
	}
	resp_begin(r, 200, METRICS_CONTENT_TYPE, (int64_t)out.len, "Cache-Control: no-store\r\n");
	(void)req_write(r, out.ptr, out.len);
out:
	buf_free(&out);
}

/* ---- refusals before the database ---- */

/*
 * A refused client must cost neither a database connection nor a wait for
 * its body (issue 11, item 4): the caller and the declared length are known
 * from the headers alone.  The handlers check the same again, so each one
 * stays correct on its own.
 */
int
handle_refusal_before_database(struct app *app, struct request *r)
{
	uint64_t limit = app->cfg->max_upload;

	switch (r->route.id) {
	case ROUTE_DOCUMENTS_CREATE:
		if (span_starts_with_cstr(req_param(r, "CONTENT_TYPE"), "multipart/form-data"))
			limit += FORM_OVERHEAD;
		/* FALLTHROUGH */
	case ROUTE_CONTENT_PUT:
		if (!require_writer(r))
			return 1;
		if (r->content_length >= 0 && (uint64_t)r->content_length > limit) {
			resp_error(r, 413, "too_large", body_fault_message(BODY_TOO_LARGE));
			return 1;
		}
		return 0;
	case ROUTE_DOCUMENT_DELETE:
	case ROUTE_DOCUMENTS_DIRECT:
	case ROUTE_DOCUMENT_FINALIZE:
		return !require_writer(r);
	case ROUTE_DOCUMENTS_LIST:
	case ROUTE_DOCUMENT_GET:
	case ROUTE_CONTENT_GET:
		return !require_reader(app, r);
	case ROUTE_METRICS:
		/* Off, the route does not exist; on, it is a writer's view of
		 * the backlog, narrowed to one caller when [metrics] owner says. */
		if (!app->cfg->metrics_enabled) {
			resp_error(r, 404, "not_found", "no such route");
			return 1;
		}
		if (!require_writer(r))
			return 1;
		if (app->cfg->metrics_owner && strcmp(r->owner, app->cfg->metrics_owner) != 0) {
			resp_error(r, 403, "forbidden", "this caller may not read the metrics");
			return 1;
		}
		return 0;
	default:
		return 0;
	}
}
