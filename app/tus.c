/*
 * tus.c - resumable uploads at /uploads: the tus 1.0.0 protocol
 * (https://tus.io/protocols/resumable-upload) with the extensions
 * creation, creation-with-upload, termination, checksum and expiration.
 * Headers in, lib/protocol/tus.c out; nothing here decides protocol order.
 */
#include <stdio.h>
#include <string.h>

#include "answer.h"
#include "app.h"
#include "input.h"
#include "base/log.h"
#include "parse/http_parse.h"
#include "parse/tus_headers.h"
#include "protocol/tus.h"

#define TUS_RESUMABLE "Tus-Resumable: 1.0.0\r\n"
#define TUS_EXTENSIONS "creation,creation-with-upload,termination,checksum,expiration"
#define OFFSET_STREAM "application/offset+octet-stream"

/* Every answer carries Tus-Resumable; a request without the version we speak gets 412. */
static int
tus_admit(struct request *r)
{
	r->always = TUS_RESUMABLE;
	if (tus_resumable_ok(req_param(r, "HTTP_TUS_RESUMABLE")))
		return 1;
	resp_json(r, 412, json_pack("{s:s, s:s}", "error", "tus_version",
				    "message", "this server speaks Tus-Resumable: 1.0.0"),
		  "Tus-Version: 1.0.0\r\n");
	return 0;
}

void
handle_uploads_options(struct app *app, struct request *r)
{
	char extra[512];

	snprintf(extra, sizeof extra,
		 TUS_RESUMABLE "Tus-Version: 1.0.0\r\nTus-Max-Size: %llu\r\n"
		 "Tus-Extension: " TUS_EXTENSIONS "\r\nTus-Checksum-Algorithm: sha1,sha256\r\n",
		 (unsigned long long)app->cfg->max_upload);
	resp_begin(r, 204, NULL, -1, extra);
}

/* The body of a PATCH (or of a creation with upload), read through the pace bounds. */
static long
body_read(void *ctx, char *buf, size_t len)
{
	return req_read(ctx, buf, len);
}

/* Upload-Offset, Upload-Expires and, once ready, Location of the document. */
static int
state_headers(const struct request *r, const struct tus_state *st, struct buf *out)
{
	char date[64];

	if (buf_appendf(out, "Upload-Offset: %llu\r\n", (unsigned long long)st->offset) != BUF_OK)
		return -1;
	if (st->expires > 0 && (tus_http_date(st->expires, date, sizeof date) != TUS_OK ||
				buf_appendf(out, "Upload-Expires: %s\r\n", date) != BUF_OK))
		return -1;
	if (st->document_id &&
	    req_location_append(r, out, "/documents/%llu", (unsigned long long)st->document_id) != BUF_OK)
		return -1;
	return 0;
}

void
handle_upload_head(struct app *app, struct request *r)
{
	struct buf extra = BUF_INIT(1024);
	struct tus_state st;
	enum proto_result pr;

	if (!tus_admit(r) || !input_writer(r))
		goto out;
	pr = tus_head(app->svc, r->owner, r->route.upload_id, &st);
	if (pr != PROTO_OK) {
		answer_failure(r, ANSWER_TUS, pr, 0);
		goto out;
	}
	if (state_headers(r, &st, &extra) != 0 ||
	    buf_appendf(&extra, "Upload-Length: %llu\r\nCache-Control: no-store\r\n",
			(unsigned long long)st.length) != BUF_OK) {
		resp_error(r, 500, "internal", "out of memory");
		goto out;
	}
	/* 204, which tus allows for HEAD: a CGI server (Apache) turns a 200
	 * carrying Location into a redirect (RFC 3875 6.2.2-6.2.3). */
	resp_begin(r, 204, NULL, -1, buf_cstr(&extra));
out:
	buf_free(&extra);
}

/* Upload-Checksum, when sent: 1 go on, 0 answered. */
static int
read_checksum(struct request *r, struct tus_patch *p)
{
	struct span h = req_param(r, "HTTP_UPLOAD_CHECKSUM");
	enum tus_err e;

	if (h.len == 0)
		return 1;
	e = tus_checksum_parse(h, &p->alg, p->digest, &p->digest_len);
	if (e == TUS_OK) {
		p->has_checksum = 1;
		return 1;
	}
	req_drain(r, 0);
	if (e == TUS_UNSUPPORTED)
		resp_error(r, 400, "unsupported_checksum", "Upload-Checksum algorithm must be sha1 or sha256");
	else
		resp_error(r, 400, "bad_checksum", "Upload-Checksum is malformed");
	return 0;
}

/* The PATCH's framing: its Content-Type, Upload-Offset and Upload-Checksum.  1 go on, 0 answered. */
static int
patch_request(struct request *r, struct tus_patch *p)
{
	struct span ctype = req_param(r, "CONTENT_TYPE");

	memset(p, 0, sizeof *p);
	p->owner = r->owner;
	p->id = r->route.upload_id;
	p->content_length = r->content_length;
	p->read = body_read;
	p->ctx = r;
	if (!span_eq_cstr(ctype, OFFSET_STREAM)) {
		resp_error(r, 415, "unsupported_media_type", "a PATCH carries " OFFSET_STREAM);
		return 0;
	}
	if (tus_parse_u64(req_param(r, "HTTP_UPLOAD_OFFSET"), &p->offset) != TUS_OK) {
		resp_error(r, 400, "bad_offset", "Upload-Offset must be a non-negative integer");
		return 0;
	}
	return read_checksum(r, p);
}

/* 204 with the upload's state. */
static void
reply_patched(struct request *r, const struct tus_state *st)
{
	struct buf extra = BUF_INIT(1024);

	if (state_headers(r, st, &extra) != 0)
		resp_error(r, 500, "internal", "out of memory");
	else
		resp_begin(r, 204, NULL, -1, buf_cstr(&extra));
	buf_free(&extra);
}

void
handle_upload_patch(struct app *app, struct request *r)
{
	struct tus_patch p;
	struct tus_state st;
	enum proto_result pr;

	if (!tus_admit(r) || !input_writer(r) || !patch_request(r, &p))
		return;
	pr = tus_patch(app->svc, &p, &st);
	if (pr == PROTO_OK)
		reply_patched(r, &st);
	else
		answer_failure(r, ANSWER_TUS, pr, st.retry_after);
}

void
handle_upload_delete(struct app *app, struct request *r)
{
	enum proto_result pr;
	unsigned retry_after;

	if (!tus_admit(r) || !input_writer(r))
		return;
	pr = tus_terminate(app->svc, r->owner, r->route.upload_id, &retry_after);
	if (pr == PROTO_OK)
		resp_begin(r, 204, NULL, -1, NULL);
	else
		answer_failure(r, ANSWER_TUS, pr, retry_after);
}

/* ---- creation ---- */

/* What a POST /uploads asks for, from its headers. */
struct creation {
	struct tus_new req;
	struct tus_metadata md;
	struct span if_match;
	struct proto_precondition pre;
	char ctbuf[DOC_CTYPE_MAX];
};

/* Upload-Metadata's replaces and if_match: 1 go on, 0 answered. */
static int
creation_replace(struct request *r, struct creation *c, struct span replaces)
{
	if (!http_parse_id(replaces, &c->req.replaces)) {
		resp_error(r, 400, "bad_metadata", "replaces must be a document id");
		return 0;
	}
	if (tus_metadata_get(&c->md, "if_match", &c->if_match) == TUS_OK && c->if_match.len &&
	    !http_if_match_any(c->if_match)) {
		c->pre = (struct proto_precondition){ input_if_match_holds, &c->if_match };
		c->req.pre = &c->pre;
	}
	return 1;
}

/* Upload-Metadata: filename (the name), filetype, replaces, if_match.  1 go on, 0 answered. */
static int
creation_metadata(struct request *r, struct creation *c)
{
	struct span type = SPAN_NULL, replaces = SPAN_NULL;
	enum tus_err e = tus_metadata_parse(req_param(r, "HTTP_UPLOAD_METADATA"), &c->md);

	if (e == TUS_NOMEM) {
		resp_error(r, 500, "internal", "out of memory");
		return 0;
	}
	if (e != TUS_OK) {
		resp_error(r, 400, "bad_metadata", "Upload-Metadata is malformed");
		return 0;
	}
	c->req.content_type = "application/octet-stream";
	if (tus_metadata_get(&c->md, "filetype", &type) == TUS_OK && type.len) {
		if (!input_content_type_ok(type) || copy_span(c->ctbuf, sizeof c->ctbuf, type) != 0) {
			resp_error(r, 400, "bad_content_type", "filetype is not an acceptable Content-Type");
			return 0;
		}
		c->req.content_type = c->ctbuf;
	}
	if (tus_metadata_get(&c->md, "replaces", &replaces) == TUS_OK)
		return creation_replace(r, c, replaces);
	if (tus_metadata_get(&c->md, "filename", &c->req.name) != TUS_OK) {
		resp_error(r, 400, "missing_name", "Upload-Metadata needs filename (the document's name)");
		return 0;
	}
	return input_name(r, c->req.name);
}

/* Upload-Length and the body's framing.  1 go on, 0 answered; *with_body for creation-with-upload. */
static int
creation_length(struct app *app, struct request *r, struct creation *c, int *with_body)
{
	struct span ctype = req_param(r, "CONTENT_TYPE");

	if (req_param(r, "HTTP_UPLOAD_DEFER_LENGTH").len) {
		resp_error(r, 400, "bad_upload_length", "Upload-Defer-Length is not supported");
		return 0;
	}
	if (tus_parse_u64(req_param(r, "HTTP_UPLOAD_LENGTH"), &c->req.length) != TUS_OK) {
		resp_error(r, 400, "bad_upload_length", "Upload-Length must be a non-negative integer");
		return 0;
	}
	if (c->req.length > app->cfg->max_upload) {
		resp_error(r, 413, "too_large", "Upload-Length is larger than the upload limit (Tus-Max-Size)");
		return 0;
	}
	*with_body = span_eq_cstr(ctype, OFFSET_STREAM);
	if (!*with_body && r->content_length > 0) {
		resp_error(r, 415, "unsupported_media_type", "a creation with upload carries " OFFSET_STREAM);
		return 0;
	}
	return 1;
}

/* creation-with-upload: the body goes in as a PATCH at offset 0 would. */
static void
creation_body(struct app *app, struct request *r, struct tus_state *st)
{
	struct tus_patch p = { r->owner, st->id, 0, r->content_length, body_read, r, 0, TUS_SHA256,
			       { 0 }, 0 };
	struct tus_state after;
	enum proto_result pr;

	if (!read_checksum(r, &p))
		return;
	pr = tus_patch(app->svc, &p, &after);
	/* The upload exists either way: 201 with what was kept (the spec's rule). */
	if (pr == PROTO_OK || tus_head(app->svc, r->owner, st->id, &after) == PROTO_OK)
		*st = after;
	else
		log_warn("req=%s upload %s created, its first bytes not kept", r->id, st->id);
}

void
handle_uploads_create(struct app *app, struct request *r)
{
	struct creation c;
	struct tus_state st;
	struct buf extra = BUF_INIT(1024);
	enum proto_result pr;
	int with_body = 0;

	memset(&c, 0, sizeof c);
	c.req.owner = r->owner;
	if (!tus_admit(r) || !input_writer(r) || !creation_length(app, r, &c, &with_body) ||
	    !creation_metadata(r, &c))
		goto out;
	pr = tus_create(app->svc, &c.req, &st);
	if (pr == PROTO_NAME_TAKEN) {
		answer_name_taken(app, r, ANSWER_TUS, c.req.name);
		goto out;
	}
	if (pr != PROTO_OK) {
		answer_failure(r, ANSWER_TUS, pr, 0);
		goto out;
	}
	if (with_body)
		creation_body(app, r, &st);
	if (r->headers_sent)
		goto out;
	st.document_id = 0;	/* Location is the upload's here; HEAD names the document */
	if (req_location_append(r, &extra, "/uploads/%s", st.id) != BUF_OK ||
	    state_headers(r, &st, &extra) != 0) {
		resp_error(r, 500, "internal", "out of memory");
		goto out;
	}
	resp_begin(r, 201, NULL, 0, buf_cstr(&extra));
out:
	tus_metadata_free(&c.md);
	buf_free(&extra);
}
