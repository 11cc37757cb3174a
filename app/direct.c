/*
 * direct.c - direct uploads (doc/design.md "Direct uploads"):
 * POST /documents/direct hands out a create-only SAS URL for one blob,
 * POST /documents/{id}/finalize verifies the bytes and makes the document
 * ready.  JSON in, lib/protocol/direct out.
 */
#include <stdio.h>
#include <string.h>

#include "answer.h"
#include "app.h"
#include "input.h"
#include "base/buf.h"
#include "parse/http_parse.h"
#include "protocol/direct.h"
#include "render.h"

/* A create's JSON is a name, a type, a size and a hash: far below this. */
#define DIRECT_BODY_MAX 8192

/* The headers the client must send with its Put Blob, exactly. */
static json_t *
upload_headers(const char *content_type)
{
	return json_pack("{s:s, s:s, s:s, s:s}", "x-ms-blob-type", "BlockBlob", "x-ms-tags",
			 "state=pending", "If-None-Match", "*", "Content-Type", content_type);
}

static int
direct_enabled(struct app *app, struct request *r)
{
	if (app->cfg->upload_direct)
		return 1;
	req_drain(r, 0);
	resp_error(r, 404, "direct_disabled", "direct uploads are off ([upload] direct = false)");
	return 0;
}

/* The body, whole, into buf (NUL-terminated); 0 or an error answered. */
static int
read_json_body(struct request *r, char *buf, size_t cap, size_t *len)
{
	long n;

	*len = 0;
	if (r->content_length > (int64_t)cap - 1) {
		req_drain(r, 0);
		resp_error(r, 413, "too_large", "the request's JSON is too large");
		return -1;
	}
	while (*len < cap - 1 && (n = req_read(r, buf + *len, cap - 1 - *len)) > 0)
		*len += (size_t)n;
	if (n < 0) {
		answer_body_unread(r, "the request body could not be read", "nothing was changed");
		return -1;
	}
	if (*len == cap - 1 && req_read(r, buf, 1) > 0) {
		req_drain(r, 0);
		resp_error(r, 413, "too_large", "the request's JSON is too large");
		return -1;
	}
	buf[*len] = '\0';
	return 0;
}

static int
sha256_hex_ok(const char *s, char *lower)
{
	size_t i;

	for (i = 0; i < 64; i++) {
		char c = s[i];

		if (c >= 'A' && c <= 'F')
			c = (char)(c - 'A' + 'a');
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return 0;
		lower[i] = c;
	}
	lower[64] = '\0';
	return s[64] == '\0';
}

/* The create's fields, checked; 0, or an error answered. */
struct direct_fields {
	struct span name;
	const char *content_type;
	json_int_t size;
	char sha256[65];
	int has_sha256;
};

static int
parse_fields(struct request *r, json_t *j, struct direct_fields *f)
{
	json_t *name = json_object_get(j, "name"), *size = json_object_get(j, "size");
	json_t *ct = json_object_get(j, "content_type"), *sha = json_object_get(j, "sha256");

	memset(f, 0, sizeof *f);
	if (!json_is_object(j) || !json_is_string(name) || !json_is_integer(size) ||
	    (ct && !json_is_string(ct)) || (sha && !json_is_string(sha) && !json_is_null(sha))) {
		resp_error(r, 400, "bad_json", "expected {\"name\": string, \"size\": integer,"
			   " \"content_type\": string, optional \"sha256\": hex}");
		return -1;
	}
	f->name = (struct span){ json_string_value(name), json_string_length(name) };
	f->size = json_integer_value(size);
	f->content_type = ct ? json_string_value(ct) : "application/octet-stream";
	if (f->size < 0) {
		resp_error(r, 400, "bad_json", "size must not be negative");
		return -1;
	}
	if (!input_content_type_ok(span_from_cstr(f->content_type))) {
		resp_error(r, 400, "bad_content_type", "content_type must be visible ASCII, under 256 bytes");
		return -1;
	}
	if (json_is_string(sha)) {
		if (json_string_length(sha) != 64 || !sha256_hex_ok(json_string_value(sha), f->sha256)) {
			resp_error(r, 400, "bad_sha256", "sha256 must be 64 hex digits");
			return -1;
		}
		f->has_sha256 = 1;
	}
	return 0;
}

/* Size limits: max_upload for every document, single_put_max for one Put Blob. */
static int
size_ok(struct app *app, struct request *r, uint64_t size)
{
	if (size > app->cfg->max_upload) {
		resp_error(r, 413, "too_large", "the document is larger than the upload limit");
		return 0;
	}
	if (size > app->cfg->single_put_max) {
		resp_error(r, 413, "too_large", "a direct upload is one Put Blob, at most [limits]"
			   " single_put_max bytes: use /uploads (tus) for larger files");
		return 0;
	}
	return 1;
}

static void
reply_granted(struct request *r, const struct direct_grant *g, const struct buf *url,
	      const char *content_type)
{
	char id[24];
	struct buf finalize = BUF_INIT(512), extra = BUF_INIT(512);
	json_t *body;

	snprintf(id, sizeof id, "%llu", (unsigned long long)g->doc_id);
	if (req_url_append(r, &finalize, "/documents/%llu/finalize", (unsigned long long)g->doc_id) != BUF_OK ||
	    req_location_append(r, &extra, "/documents/%llu", (unsigned long long)g->doc_id) != BUF_OK ||
	    (g->replayed && buf_append_cstr(&extra, ANSWER_REPLAYED_HEADER) != BUF_OK)) {
		resp_error(r, 500, "internal", "out of memory");
		goto out;
	}
	body = json_pack("{s:s, s:s, s:o, s:s, s:s}", "id", id, "upload_url", buf_cstr(url), "headers",
			 upload_headers(content_type), "expires_at", g->expires, "finalize_url",
			 buf_cstr(&finalize));
	/* A retry with the same Idempotency-Key answers as the first did, and says so. */
	resp_json(r, 201, body, buf_cstr(&extra));
out:
	buf_free(&finalize);
	buf_free(&extra);
}

static void
reply_direct_name_taken(struct app *app, struct request *r, struct span name)
{
	struct buf finalize = BUF_INIT(512);
	uint64_t doc_id = 0;

	/* doc/design.md: a name held by the caller's own pending upload says which. */
	if (direct_find_pending_of(app->svc, name, r->owner, &doc_id) != PROTO_OK || doc_id == 0) {
		answer_name_taken(app, r, ANSWER_DIRECT, name);
		goto out;
	}
	if (req_url_append(r, &finalize, "/documents/%llu/finalize", (unsigned long long)doc_id) != BUF_OK) {
		resp_error(r, 500, "internal", "out of memory");
		goto out;
	}
	resp_json(r, 409, json_pack("{s:s, s:s, s:s}", "error", "name_taken", "message",
				    "your direct upload of this name is under way", "upload",
				    buf_cstr(&finalize)), NULL);
out:
	buf_free(&finalize);
}

void
handle_documents_direct(struct app *app, struct request *r)
{
	char body[DIRECT_BODY_MAX], key[256];
	struct direct_request req;
	struct direct_fields f;
	struct direct_grant g;
	struct buf url = BUF_INIT(16384);
	json_error_t jerr;
	json_t *j = NULL;
	enum proto_result pr;
	size_t len;
	int has_key = 0;

	if (!input_writer(r) || !direct_enabled(app, r) || read_json_body(r, body, sizeof body, &len) != 0)
		goto out;
	if (input_idempotency_key(r, key, sizeof key, &has_key) != 0) {
		resp_error(r, 400, "bad_idempotency_key", "Idempotency-Key must be 1-255 visible ASCII characters");
		goto out;
	}
	if ((j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr)) == NULL) {
		resp_error(r, 400, "bad_json", "the body is not JSON");
		goto out;
	}
	if (parse_fields(r, j, &f) != 0 || !input_name(r, f.name) || !size_ok(app, r, (uint64_t)f.size))
		goto out;
	memset(&req, 0, sizeof req);
	req.name = f.name;
	req.owner = r->owner;
	req.content_type = f.content_type;
	req.size = (uint64_t)f.size;
	req.sha256 = f.has_sha256 ? f.sha256 : NULL;
	req.idem_key = has_key ? key : NULL;
	pr = direct_create(app->svc, &req, &url, &g);
	if (pr == PROTO_OK)
		reply_granted(r, &g, &url, f.content_type);
	else if (pr == PROTO_NAME_TAKEN)
		reply_direct_name_taken(app, r, f.name);
	else
		answer_failure(r, ANSWER_DIRECT, pr, 0);
out:
	json_decref(j);
	buf_free(&url);
}

void
handle_document_finalize(struct app *app, struct request *r)
{
	struct doc d;
	enum proto_result pr;

	if (!input_writer(r) || !direct_enabled(app, r))
		return;
	req_drain(r, DIRECT_BODY_MAX);	/* no body is needed; one is ignored */
	pr = direct_finalize(app->svc, r->route.doc_id, r->owner, &d);
	if (pr == PROTO_OK)
		answer_document(r, 200, &d, 0);
	else
		answer_failure(r, ANSWER_DIRECT, pr, 0);
}
