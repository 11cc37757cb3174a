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
#include "protocol/tus_concat.h"

#define TUS_RESUMABLE "Tus-Resumable: 1.0.0\r\n"
#define TUS_EXTENSIONS "creation,creation-with-upload,termination,checksum,expiration,concatenation"
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

/* The next space-separated word of *rest (1), or none left (0). */
static int
next_word(struct span *rest, struct span *word)
{
	while (rest->len && rest->ptr[0] == ' ') {
		rest->ptr++;
		rest->len--;
	}
	if (rest->len == 0)
		return 0;
	word->ptr = rest->ptr;
	word->len = 0;
	while (word->len < rest->len && rest->ptr[word->len] != ' ')
		word->len++;
	rest->ptr += word->len;
	rest->len -= word->len;
	return 1;
}

/* Upload-Concat of an upload that is a partial or a final (tus
 * concatenation): a final's partials as URLs of this server. */
static int
concat_header(const struct request *r, const struct tus_state *st, struct buf *out)
{
	struct span rest = span_from_cstr(st->partials), id;

	if (st->concat == TUS_CONCAT_PARTIAL)
		return buf_append_cstr(out, "Upload-Concat: partial\r\n") == BUF_OK ? 0 : -1;
	if (st->concat != TUS_CONCAT_FINAL)
		return 0;
	if (buf_append_cstr(out, "Upload-Concat: final;") != BUF_OK)
		return -1;
	while (next_word(&rest, &id))
		if ((out->len && out->ptr[out->len - 1] != ';' && buf_append_cstr(out, " ") != BUF_OK) ||
		    buf_append_span(out, r->prefix) != BUF_OK || buf_append_cstr(out, "/uploads/") != BUF_OK ||
		    buf_append_span(out, id) != BUF_OK)
			return -1;
	return buf_append_cstr(out, "\r\n") == BUF_OK ? 0 : -1;
}

/* A final's Upload-Concat names up to UPLOAD_CONCAT_MAX partials, each
 * "PREFIX/uploads/" and 32 hex digits and a space; the other headers fit
 * in the first 1 KiB. */
#define HEAD_EXTRA_MAX(prefix_len) (1024 + UPLOAD_CONCAT_MAX * ((prefix_len) + sizeof "/uploads/" + 33))

void
handle_upload_head(struct app *app, struct request *r)
{
	struct buf extra = BUF_INIT(HEAD_EXTRA_MAX(r->prefix.len));
	struct tus_state st;
	enum proto_result pr;

	if (!tus_admit(r) || !input_writer(r))
		goto out;
	pr = tus_head(app->svc, r->owner, r->route.upload_id, &st);
	if (pr != PROTO_OK) {
		answer_failure(r, ANSWER_TUS, pr, 0);
		goto out;
	}
	if (state_headers(r, &st, &extra) != 0 || concat_header(r, &st, &extra) != 0 ||
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
	int final;			/* Upload-Concat: final */
	const char *ids[UPLOAD_CONCAT_MAX];	/* ... its partials */
	char idbuf[UPLOAD_CONCAT_MAX][UPLOAD_ID_MAX];
	size_t nids;
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
	if (c->req.concat == TUS_CONCAT_PARTIAL) {
		/* A partial has no name: the final carries the metadata. */
		c->req.content_type = "application/octet-stream";
		return 1;
	}
	if (tus_metadata_get(&c->md, "replaces", &replaces) == TUS_OK) {
		if (c->final) {
			resp_error(r, 400, "bad_metadata", "a final upload creates a document; replaces is not taken");
			return 0;
		}
		return creation_replace(r, c, replaces);
	}
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

/* The upload id a partial's URL names: absolute or relative, its path's
 * last "/uploads/" then 32 hex digits.  0 when it names none. */
static int
partial_id(struct span url, char *id, size_t idlen)
{
	static const char mark[] = "/uploads/";
	size_t i, at = url.len, m = sizeof mark - 1;

	for (i = 0; i + m <= url.len; i++)
		if (memcmp(url.ptr + i, mark, m) == 0)
			at = i + m;
	if (at == url.len || url.len - at != UPLOAD_ID_MAX - 1)
		return 0;
	for (i = at; i < url.len; i++)
		if (!((url.ptr[i] >= '0' && url.ptr[i] <= '9') || (url.ptr[i] >= 'a' && url.ptr[i] <= 'f')))
			return 0;
	return copy_span(id, idlen, (struct span){ url.ptr + at, url.len - at }) == 0;
}

/* Upload-Concat (tus concatenation): "partial", or "final;" and the
 * partials' URLs, space-separated.  1 go on, 0 answered. */
static int
creation_concat(struct request *r, struct creation *c)
{
	struct span h = req_param(r, "HTTP_UPLOAD_CONCAT"), list, url;
	static const char final[] = "final;";

	if (h.len == 0)
		return 1;
	if (span_eq_cstr(h, "partial")) {
		c->req.concat = TUS_CONCAT_PARTIAL;
		return 1;
	}
	if (h.len < sizeof final - 1 || memcmp(h.ptr, final, sizeof final - 1) != 0) {
		resp_error(r, 400, "bad_concat", "Upload-Concat must be partial, or final; and the partial uploads' URLs");
		return 0;
	}
	c->final = 1;
	list = (struct span){ h.ptr + sizeof final - 1, h.len - (sizeof final - 1) };
	while (next_word(&list, &url)) {
		if (c->nids == UPLOAD_CONCAT_MAX ||
		    !partial_id(url, c->idbuf[c->nids], sizeof c->idbuf[0])) {
			resp_error(r, 400, "bad_concat", c->nids == UPLOAD_CONCAT_MAX
				   ? "Upload-Concat: final names too many partial uploads"
				   : "Upload-Concat: final names something that is not an upload of this server");
			return 0;
		}
		c->ids[c->nids] = c->idbuf[c->nids];
		c->nids++;
	}
	if (c->nids == 0) {
		resp_error(r, 400, "bad_concat", "Upload-Concat: final names no partial upload");
		return 0;
	}
	if (req_param(r, "HTTP_UPLOAD_LENGTH").len || r->content_length > 0) {
		resp_error(r, 400, "bad_concat", "a final upload carries neither Upload-Length nor a body");
		return 0;
	}
	return 1;
}

/* 201 for a new upload: Location is the upload's (HEAD names the document). */
static void
answer_created(struct request *r, struct tus_state *st)
{
	struct buf extra = BUF_INIT(1024);

	st->document_id = 0;
	if (req_location_append(r, &extra, "/uploads/%s", st->id) != BUF_OK ||
	    state_headers(r, st, &extra) != 0)
		resp_error(r, 500, "internal", "out of memory");
	else
		resp_begin(r, 201, NULL, 0, buf_cstr(&extra));
	buf_free(&extra);
}

/* The final: assembled from its partials; 201 once its document is ready. */
static void
create_final(struct app *app, struct request *r, struct creation *c)
{
	struct tus_final f = { r->owner, c->req.name, c->req.content_type, c->ids, c->nids };
	struct tus_state st;
	enum proto_result pr;

	pr = tus_concat_final(app->svc, &f, &st);
	if (pr == PROTO_NAME_TAKEN)
		answer_name_taken(app, r, ANSWER_TUS, c->req.name);
	else if (pr == PROTO_TOO_LARGE)	/* the table's words are a PATCH's */
		resp_error(r, 413, "too_large",
			   "the partial uploads together are larger than the upload limit (Tus-Max-Size)");
	else if (pr != PROTO_OK)
		answer_failure(r, ANSWER_TUS, pr, st.retry_after);
	else
		answer_created(r, &st);
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
	enum proto_result pr;
	int with_body = 0;

	memset(&c, 0, sizeof c);
	c.req.owner = r->owner;
	if (!tus_admit(r) || !input_writer(r) || !creation_concat(r, &c))
		goto out;
	if (c.final) {
		if (creation_metadata(r, &c))
			create_final(app, r, &c);
		goto out;
	}
	if (!creation_length(app, r, &c, &with_body) || !creation_metadata(r, &c))
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
	if (!r->headers_sent)
		answer_created(r, &st);
out:
	tus_metadata_free(&c.md);
}
