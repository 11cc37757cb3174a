/*
 * download.c - GET and HEAD /documents/{id}/content: a ready document's
 * bytes, whole or one range, streamed from storage through
 * lib/protocol/reads.h (pinned to the bytes that were committed), or a
 * redirect to a signed link when [download] mode = redirect.
 */
#include <stdio.h>

#include "answer.h"
#include "app.h"
#include "base/log.h"
#include "input.h"
#include "parse/disposition.h"
#include "parse/http_parse.h"
#include "protocol/reads.h"
#include "render.h"

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
/* A signed link is at most this long (a SAS on a 1 KiB blob name). */
#define LINK_MAX 8192

struct download {
	struct request *r;
	const struct doc *d;
	const char *type;	/* served_content_type() */
	int status;
	uint64_t start, len;
};

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

/* [download] mode = redirect: storage serves the bytes on its own origin,
 * but a browser still must not render them, so the link makes storage send
 * our disposition and type (rscd, rsct) instead of whatever the blob carries. */
static void
redirect(struct app *app, struct request *r, const struct doc *d)
{
	struct buf url = BUF_INIT(LINK_MAX), disposition = BUF_INIT(DISPOSITION_MAX(DOC_NAME_MAX));
	struct buf extra = BUF_INIT(LINK_MAX + 64);
	enum proto_result pr = PROTO_FAILED;

	if (disposition_attachment(span_from_cstr(d->name), &disposition) == BUF_OK)
		pr = reads_link(app->svc, d, buf_cstr(&disposition), served_content_type(app, d), &url);
	if (pr != PROTO_OK) {
		answer_failure(r, ANSWER_DOWNLOAD, pr, 0);
		goto out;
	}
	if (buf_appendf(&extra, "Location: %s\r\nCache-Control: no-store\r\n", buf_cstr(&url)) != BUF_OK) {
		resp_error(r, 500, "internal", "out of memory");
		goto out;
	}
	resp_begin(r, 302, "text/plain", 0, buf_cstr(&extra));
out:
	buf_free(&extra);
	buf_free(&disposition);
	buf_free(&url);
}

/*
 * RFC 9110 13.1.2 and 13.2.2: If-None-Match naming the current ETag (by
 * the weak comparison) or "*" turns a GET or HEAD into 304 with the ETag
 * and no body, before Range is looked at; a malformed one is ignored.
 * Nonzero when it answered.
 */
static int
not_modified(struct request *r, const struct doc *d)
{
	struct span inm = req_param(r, "HTTP_IF_NONE_MATCH");
	char etag[64], extra[96];

	if (inm.len == 0)
		return 0;
	render_doc_etag(d, etag, sizeof etag);
	if (http_etag_none_match(inm, span_from_cstr(etag)) != HTTP_ETAG_MATCH)
		return 0;
	snprintf(extra, sizeof extra, "ETag: %s\r\n", etag);
	resp_begin(r, 304, NULL, -1, extra);
	return 1;
}

void
handle_content_get(struct app *app, struct request *r)
{
	struct span range = req_param(r, "HTTP_RANGE");
	struct download dl;
	enum proto_result pr;
	struct doc d;
	char extra[64];

	if (!input_reader(app, r))
		return;
	if ((pr = reads_get(app->svc, r->route.doc_id, &d)) != PROTO_OK) {
		answer_failure(r, ANSWER_READ, pr, 0);
		return;
	}
	if (not_modified(r, &d))
		return;
	if (app->cfg->download_mode == DOWNLOAD_REDIRECT) {
		redirect(app, r, &d);
		return;
	}
	dl = (struct download){ r, &d, served_content_type(app, &d), 200, 0, d.size };
	if (range.len && d.size > 0) {
		switch (http_parse_range(range, d.size, &dl.start, &dl.len)) {
		case HTTP_RANGE_OK:
			dl.status = 206;
			break;
		case HTTP_RANGE_UNSATISFIABLE:
			snprintf(extra, sizeof extra, "Content-Range: bytes */%llu\r\n",
				 (unsigned long long)d.size);
			resp_json(r, 416, json_pack("{s:s, s:s}", "error", "bad_range", "message",
						    "the range is outside the document"), extra);
			return;
		default:
			break;
		}
	}
	if (r->head_only) {
		/* The headers come from the database; no need to fetch the bytes. */
		(void)download_headers(&dl, NULL, d.size);
		return;
	}
	pr = reads_download(app->svc, &d, dl.start, dl.status == 206 ? dl.len : 0, download_headers,
			    download_data, &dl);
	if (pr == PROTO_OK)
		return;
	if (r->headers_sent)
		/* Too late for a status: the short body tells the client. */
		log_warn("download of document %llu cut after its headers", (unsigned long long)d.id);
	else
		answer_failure(r, ANSWER_DOWNLOAD, pr, 0);
}
