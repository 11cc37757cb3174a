/*
 * handlers.c - the document API (doc/openapi.yaml): create, get, list,
 * replace, delete.  Each handler checks its input (input.h), calls
 * lib/protocol/ for the operation, and answers (answer.h).  Nothing here
 * decides protocol order.  The bytes are download.c's; health and metrics
 * health.c's; tus and direct uploads tus.c's and direct.c's.
 */
#include <stdio.h>
#include <string.h>

#include "answer.h"
#include "app.h"
#include "input.h"
#include "parse/form_reader.h"
#include "parse/http_parse.h"
#include "parse/multipart.h"
#include "protocol/protocol.h"
#include "protocol/reads.h"
#include "render.h"

#define LIST_DEFAULT 50

/* Why reading a body stopped, so a failed upload gets the right 4xx. */
enum body_fault {
	BODY_FINE = 0,
	BODY_TOO_LARGE,		/* 413 */
	BODY_SHORT,		/* ended before Content-Length */
	BODY_BAD_FORM,		/* malformed multipart */
	BODY_FIELD_ORDER,	/* a name field after the file */
	BODY_SECOND_FILE,
};

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

/* The answer for a failed create or replace: why its body could not be
 * read, when that was the trouble, else the table's. */
static void
reply_failure(struct request *r, enum proto_result pr, enum body_fault fault)
{
	if (pr != PROTO_BODY_ERROR || fault == BODY_FINE)
		answer_failure(r, ANSWER_DOCUMENTS, pr, 0);
	else if (fault == BODY_TOO_LARGE && !r->body_timeout && !r->body_interrupted)
		input_too_large(r);
	else
		answer_body_unread(r, body_fault_message(fault), "the upload was abandoned");
}

/* A browser form post (no JavaScript) lands back on the page, which
 * highlights the document it names (?created=ID). */
static void
reply_created(struct request *r, const struct proto_answer *a)
{
	if (input_wants_page(r)) {
		struct buf extra = BUF_INIT(512);

		if (req_location_append(r, &extra, "/?created=%llu", (unsigned long long)a->doc.id) != BUF_OK ||
		    (a->replayed && buf_append_cstr(&extra, ANSWER_REPLAYED_HEADER) != BUF_OK))
			resp_error(r, 500, "internal", "out of memory");
		else
			resp_begin(r, 303, "text/plain", 0, buf_cstr(&extra));
		buf_free(&extra);
		return;
	}
	/* A replay renders the recorded fields exactly as the first answer did. */
	answer_document(r, a->replayed && a->replay_status ? (int)a->replay_status : 201, &a->doc, a->replayed);
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

/* ---- create ---- */

/*
 * A form's input.  Before the caller is known (a token field may name it)
 * at most `left` bytes are read: the fields before the file are small, and
 * an unknown caller must not make the responder read a large body.
 */
struct form_input {
	struct request *r;
	int bounded;
	uint64_t left;
};

/* One create request's body, whichever way it came. */
struct upload {
	struct proto_body body;
	struct span name;
	struct raw_body raw;
	struct form_input in;
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
	struct form_input *in = ctx;
	long n;

	if (in->bounded) {
		if (in->left == 0)
			return -1;
		if (len > in->left)
			len = (size_t)in->left;
	}
	n = req_read(in->r, buf, len);
	if (n > 0 && in->bounded)
		in->left -= (uint64_t)n;
	return n;
}

/* A form: parse up to the file part, whose name and type decide the
 * document, and, for a form that names its caller in a token field
 * (input_form_may_authenticate), who that is: nothing is stored for a
 * caller not known by then.  1 when the upload can start, 0 when r has
 * been answered. */
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
	u->in = (struct form_input){ r, r->owner == NULL, INPUT_FORM_OVERHEAD };
	if (form_reader_new(boundary, &limits, request_input, &u->in, &u->form) != MP_OK) {
		resp_error(r, 500, "internal", "out of memory");
		return 0;
	}
	fault = form_reader_start(u->form);
	if (r->owner == NULL) {
		int known = input_form_caller(app, r, fault == FORM_FINE ? form_reader_token(u->form) : SPAN_NULL);

		form_reader_forget_token(u->form);
		if (!known)
			return 0;
		u->in.bounded = 0;
	}
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
	if (!input_name(r, u->name))
		return 0;
	ftype = form_reader_content_type(u->form);
	u->body.content_type = "application/octet-stream";
	if (ftype.len && (!input_content_type_ok(ftype) || copy_span(u->ctbuf, sizeof u->ctbuf, ftype))) {
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
	if (!input_name(r, u->name))
		return 0;
	if (ctype.len == 0) {
		u->body.content_type = "application/octet-stream";
	} else if (!input_content_type_ok(ctype) || copy_span(u->ctbuf, sizeof u->ctbuf, ctype)) {
		resp_error(r, 400, "bad_content_type", "the Content-Type is not acceptable");
		return 0;
	} else {
		u->body.content_type = u->ctbuf;
	}
	if (r->content_length > 0 && (uint64_t)r->content_length > app->cfg->max_upload) {
		input_too_large(r);
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
	char key[INPUT_IDEM_KEY_MAX + 1];
	enum proto_result pr;
	int has_key = 0;

	memset(&ans, 0, sizeof ans);
	up.body.expected_size = -1;
	r->back_to_page = input_wants_page(r);
	if (!input_form_may_authenticate(r) && !input_writer(r))
		goto out;
	if (input_idempotency_key(r, key, sizeof key, &has_key) != 0) {
		resp_error(r, 400, "bad_idempotency_key", "Idempotency-Key must be 1-255 visible ASCII characters");
		goto out;
	}
	/* Refuse before reading a byte when the declared size is already too big. */
	if (r->content_length >= 0 &&
	    (uint64_t)r->content_length > app->cfg->max_upload + INPUT_FORM_OVERHEAD) {
		input_too_large(r);
		goto out;
	}
	if (!upload_open(app, r, &up))
		goto out;
	pr = proto_create(app->svc, up.name, r->owner, &up.body, has_key ? key : NULL, &ans);
	if (pr == PROTO_OK)
		reply_created(r, &ans);
	else if (pr == PROTO_NAME_TAKEN)
		answer_name_taken(app, r, ANSWER_DOCUMENTS, up.name);
	else
		reply_failure(r, pr, upload_fault(&up));
out:
	form_reader_free(up.form);
	buf_free(&up.qname);
}

/* ---- reads ---- */

void
handle_get(struct app *app, struct request *r)
{
	enum proto_result pr;
	struct doc d;

	if (!input_reader(app, r))
		return;
	if ((pr = reads_get(app->svc, r->route.doc_id, &d)) == PROTO_OK)
		answer_document(r, 200, &d, 0);
	else
		answer_failure(r, ANSWER_READ, pr, 0);
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
	enum proto_result pr;

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
	if (http_query_get(r->query, "order", &scratch) != HTTP_QUERY_NOT_FOUND) {
		resp_error(r, 400, "bad_order", "order does not combine with name: a name matches at"
			   " most one document");
		goto out;
	}
	if (!input_name(r, name))
		goto out;
	pr = reads_by_name(app->svc, name, &d);
	if (pr != PROTO_OK && pr != PROTO_NOT_FOUND) {
		answer_failure(r, ANSWER_READ, pr, 0);
		goto out;
	}
	docs = json_array();
	if (pr == PROTO_OK)
		json_array_append_new(docs, render_doc_json(&d));
	resp_json(r, 200, json_pack("{s:O, s:o}", "documents", docs, "next", json_null()), NULL);
out:
	json_decref(docs);
	buf_free(&scratch);
}

void
handle_list(struct app *app, struct request *r)
{
	struct buf v = BUF_INIT(4 * DOCUMENT_NAME_MAX);
	struct input_list lq = { 0, 0, BUF_INIT(4 * DOCUMENT_NAME_MAX), DOC_ORDER_OLDEST };
	struct list_ctx lc = { NULL, 0, 0 };
	enum http_query_result q;
	enum proto_result pr;
	char next[24];

	if (!input_reader(app, r))
		goto out;
	q = http_query_get(r->query, "name", &v);
	if (q != HTTP_QUERY_NOT_FOUND) {
		list_by_name(app, r, q, buf_span(&v));
		goto out;
	}
	if (!input_list(r, LIST_DEFAULT, &lq))
		goto out;
	lc.docs = json_array();
	pr = reads_list(app->svc, lq.order, lq.after, buf_span(&lq.prefix), (unsigned)lq.limit, list_one, &lc);
	if (pr != PROTO_OK) {
		answer_failure(r, ANSWER_READ, pr, 0);
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

/* ---- replace and delete ---- */

void
handle_content_put(struct app *app, struct request *r)
{
	struct span ctype = req_param(r, "CONTENT_TYPE");
	struct span if_match = req_param(r, "HTTP_IF_MATCH");
	struct proto_precondition pre = { input_if_match_holds, &if_match };
	struct proto_answer ans;
	struct proto_body body;
	struct raw_body raw;
	char ctbuf[DOC_CTYPE_MAX];
	enum proto_result pr;

	memset(&ans, 0, sizeof ans);
	if (!input_writer(r))
		return;
	if (r->content_length >= 0 && (uint64_t)r->content_length > app->cfg->max_upload) {
		input_too_large(r);
		return;
	}
	memset(&body, 0, sizeof body);
	if (ctype.len == 0) {
		body.content_type = "application/octet-stream";
	} else if (span_starts_with_cstr(ctype, "multipart/")) {
		resp_error(r, 415, "unsupported_media_type", "replace takes the raw bytes");
		return;
	} else if (!input_content_type_ok(ctype) || copy_span(ctbuf, sizeof ctbuf, ctype)) {
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
		answer_document(r, 200, &ans.doc, 0);
	else
		reply_failure(r, pr, raw.fault);
}

void
handle_delete(struct app *app, struct request *r)
{
	struct span if_match = req_param(r, "HTTP_IF_MATCH");
	struct proto_precondition pre = { input_if_match_holds, &if_match };
	enum proto_result pr;

	if (!input_writer(r))
		return;
	/* As for a replace: "*" holds for any current version. */
	pr = proto_delete(app->svc, r->route.doc_id, r->owner,
			  if_match.len && !http_if_match_any(if_match) ? &pre : NULL);
	if (pr == PROTO_OK)
		resp_begin(r, 204, NULL, -1, NULL);
	else
		reply_failure(r, pr, BODY_FINE);
}
