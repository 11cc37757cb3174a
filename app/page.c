/*
 * page.c - GET /: the HTML page.  It lists ready documents in the order they
 * became ready, a page at a time (?after= is the list's cursor, ?prefix=
 * filters by the start of the name), and uploads with a plain form: all of
 * that works without JavaScript (the create answers 303 back here).  With
 * JavaScript (app/page.js, compiled into the binary and served as
 * GET /page.js) it adds drag and drop of several files with a progress bar
 * each, resumable tus uploads for large files, direct uploads to storage
 * when [upload] direct is on, replace and delete.  Every value from the
 * database is HTML-escaped, and the page's CSP allows no inline script at
 * all: markup that slipped through escaping could not run, and no uploaded
 * document may frame the page (doc/design.md "Serving user content").
 */
#include <stdio.h>
#include <string.h>

#include "answer.h"
#include "app.h"
#include "input.h"
#include "base/rand.h"
#include "render.h"
#include "protocol/reads.h"
#include "parse/http_parse.h"
#include "parse/origin.h"
#include "app/page_js.h"	/* generated from app/page.js (mk/app.mk) */

#define PAGE_MAX (4 * 1024 * 1024)
#define PAGE_DOCS 100		/* rows a page shows unless ?limit= says otherwise */
#define PAGE_HEADERS_MAX 1024
/* The page script's tus chunk: small enough for a web server's request cap
 * (doc/deploying.md "tus through the web server": keep chunks well under
 * FcgidMaxRequestLen). */
#define PAGE_TUS_CHUNK (8u * 1024 * 1024)

static const char page_style[] =
	"<style>\n"
	"body{font:15px/1.45 system-ui,sans-serif;max-width:64rem;margin:2rem auto;padding:0 1rem;color:#222}\n"
	"h1{margin:0 0 1rem}fieldset{border:1px solid #ccc;border-radius:.4rem;margin:0 0 1rem;padding:.6rem 1rem}\n"
	"table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.35rem .5rem;"
	"border-bottom:1px solid #ddd;vertical-align:middle}.n{text-align:right;white-space:nowrap}\n"
	"a,button,input,label.btn{font:inherit}button,label.btn{cursor:pointer;padding:.15rem .6rem}\n"
	":focus-visible{outline:3px solid #1a73e8;outline-offset:2px}\n"
	"#drop{border:2px dashed #999;border-radius:.5rem;padding:1.2rem;text-align:center;margin:.6rem 0}\n"
	"#drop.over{border-color:#1a73e8;background:#eef4fd}\n"
	"#uploads{list-style:none;padding:0;margin:0}#uploads li{display:grid;"
	"grid-template-columns:minmax(8rem,1fr) 14rem minmax(8rem,1fr);gap:.6rem;align-items:center;padding:.2rem 0}\n"
	"#up label{margin-right:1rem}#uploads progress{width:100%}.err{color:#b00020}.done{color:#137333}\n"
	"nav.pager{display:flex;gap:1rem;margin:1rem 0}.muted{color:#666}\n"
	".sr{position:absolute;left:-9999px}\n"
	"</style>\n";

/* The upload form is the no-JavaScript path too: a plain multipart POST,
 * whose name field must come before the file (doc/api.md "Uploads and names": the API refuses a
 * name after it), so the fields keep this order.  It follows the form's
 * opening up to its action's mount prefix (page_head). */
static const char page_forms[] =
	"/documents\" enctype=\"multipart/form-data\">\n"
	"<fieldset><legend>Upload</legend>\n"
	"<p><label>Token <input id=\"token\" type=\"password\" autocomplete=\"off\"></label></p>\n"
	"<p><label>Name (optional) <input name=\"name\" maxlength=\"255\"></label>\n"
	"<label>File <input id=\"file\" type=\"file\" name=\"file\" required></label>\n"
	"<button id=\"send\">Upload</button></p>\n"
	"<div id=\"drop\" hidden>Drop files here, or choose several above</div>\n"
	"<ul id=\"uploads\" aria-live=\"polite\" aria-label=\"Uploads\"></ul>\n"
	"<p id=\"msg\" role=\"status\"></p>\n"
	"</fieldset></form>\n";

static const char page_table_head[] =
	"<section id=\"list\" aria-label=\"Documents\">\n<table><caption class=\"sr\">Documents</caption><thead><tr><th scope=\"col\">Name</th>"
	"<th scope=\"col\" class=\"n\">Size</th><th scope=\"col\">Created</th>"
	"<th scope=\"col\">Actions</th></tr></thead><tbody id=\"docs\">\n";

/* After "<script nonce=\"N\" src=\"" and the mount prefix. */
static const char page_tail[] = "/page.js\"></script>\n</body></html>\n";

/* 128 random bits, hex: what the page's one script element carries. */
#define PAGE_NONCE_BYTES 16
#define PAGE_NONCE_MAX (2 * PAGE_NONCE_BYTES + 1)

/*
 * Only the script element this answer wrote runs: script-src names a nonce
 * fresh for each page, never 'self'.  'self' would also run any document
 * of ours served with a script type from an injected <script src>, since
 * downloads come from this origin.  No plugins, no <base> rewriting, forms
 * post only here, and nobody may frame the page.
 */
#define PAGE_CSP_SCRIPT "Content-Security-Policy: default-src 'self'; script-src 'nonce-"
#define PAGE_CSP_REST "'; style-src 'unsafe-inline'; object-src 'none'; base-uri 'none';" \
	" form-action 'self'; frame-ancestors 'none'"

struct page_ctx {
	struct buf *out;
	struct span prefix;	/* the app's mount (request.h), "" at the root */
	uint64_t last_seq;	/* the cursor of the next page */
	unsigned n;
	int failed;
};

/* "18 B", "244.1 KiB", "3.0 GiB": what a person scanning the list wants. */
static void
human_size(uint64_t n, char *out, size_t outlen)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
	double v = (double)n;
	size_t u = 0;

	if (n < 1024) {
		snprintf(out, outlen, "%llu B", (unsigned long long)n);
		return;
	}
	v /= 1024;
	while (v >= 1024 && u + 1 < ARRAY_LEN(units)) {
		v /= 1024;
		u++;
	}
	snprintf(out, outlen, "%.1f %s", v, units[u]);
}

/*
 * Percent-encode s for a query value (RFC 3986 2.1): everything but the
 * unreserved characters, so the result needs no further HTML escaping.
 */
static enum buf_err
query_escape(struct span s, struct buf *out)
{
	static const char hex[] = "0123456789ABCDEF";
	enum buf_err e = BUF_OK;
	size_t i;

	for (i = 0; i < s.len && e == BUF_OK; i++) {
		unsigned char c = (unsigned char)s.ptr[i];

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '.' || c == '_' || c == '~')
			e = buf_append(out, s.ptr + i, 1);
		else
			e = buf_appendf(out, "%%%c%c", hex[c >> 4], hex[c & 15]);
	}
	return e;
}

/* One row: the name downloads; Replace and Delete need the script, which
 * unhides them (without it they could do nothing).  prefix is a safe path
 * (http_mount_split), escaped all the same. */
static enum buf_err
page_row_append(struct buf *b, struct span prefix, const struct doc *d)
{
	char size[32], etag[64];
	unsigned long long id = (unsigned long long)d->id;
	/* created_at is RFC 3339 UTC: "2026-12-02 15:48 UTC"; the script shows local time */
	struct span date = { d->created_at, strlen(d->created_at) > 16 ? 10 : 0 };
	struct span hhmm = { d->created_at + 11, date.len ? 5 : 0 };
	enum buf_err e;

	human_size(d->size, size, sizeof size);
	render_doc_etag(d, etag, sizeof etag);
	e = buf_appendf(b, "<tr data-id=\"%llu\" data-etag=\"", id);
	if (e == BUF_OK)
		e = html_escape(span_from_cstr(etag), b);
	if (e == BUF_OK)
		e = buf_append_cstr(b, "\"><td><a class=\"dl\" href=\"");
	if (e == BUF_OK)
		e = html_escape(prefix, b);
	if (e == BUF_OK)
		e = buf_appendf(b, "/documents/%llu/content\">", id);
	if (e == BUF_OK)
		e = html_escape(span_from_cstr(d->name), b);
	if (e == BUF_OK)
		e = buf_appendf(b, "</a></td><td class=\"n\" title=\"%llu bytes\">%s</td>"
				"<td><time datetime=\"", (unsigned long long)d->size, size);
	if (e == BUF_OK)
		e = html_escape(span_from_cstr(d->created_at), b);
	if (e == BUF_OK)
		e = buf_append_cstr(b, "\">");
	if (e == BUF_OK)
		e = html_escape(date, b);
	if (e == BUF_OK)
		e = buf_append_cstr(b, " ");
	if (e == BUF_OK)
		e = html_escape(hhmm, b);
	if (e == BUF_OK)
		e = buf_append_cstr(b, " UTC</time></td><td><a href=\"");
	if (e == BUF_OK)
		e = html_escape(prefix, b);
	if (e == BUF_OK)
		e = buf_appendf(b, "/documents/%llu/content\" download>"
				"Download</a> <button type=\"button\" class=\"replace\" hidden>Replace</button>"
				" <button type=\"button\" class=\"delete\" hidden>Delete</button></td></tr>\n", id);
	return e;
}

static int
page_row(void *ctx, const struct doc *d)
{
	struct page_ctx *pc = ctx;

	if (page_row_append(pc->out, pc->prefix, d) != BUF_OK) {
		pc->failed = 1;
		return 1;
	}
	pc->last_seq = d->ready_seq;
	pc->n++;
	return 0;
}

/* "&prefix=P&limit=L" as the query carried them, for the paging links. */
static enum buf_err
page_query_tail(struct buf *b, const struct input_list *lq)
{
	enum buf_err e = BUF_OK;

	if (lq->prefix.len) {
		e = buf_append_cstr(b, "&amp;prefix=");
		if (e == BUF_OK)
			e = query_escape(buf_span(&lq->prefix), b);
	}
	if (e == BUF_OK && lq->limit != PAGE_DOCS)
		e = buf_appendf(b, "&amp;limit=%llu", (unsigned long long)lq->limit);
	return e;
}

/* Plain links, so paging works without the script: the first page, and the
 * next one when this one is full (the same rule as the API's "next"). */
static enum buf_err
page_pager(struct buf *b, const struct input_list *lq, const struct page_ctx *pc)
{
	enum buf_err e;

	if (pc->n == 0)
		e = buf_append_cstr(b, "</tbody></table>\n<p class=\"muted\">No documents here.</p>\n"
				    "<nav class=\"pager\" aria-label=\"Pages\">");
	else
		e = buf_append_cstr(b, "</tbody></table>\n<nav class=\"pager\" aria-label=\"Pages\">");
	if (e == BUF_OK && lq->after != 0) {
		e = buf_append_cstr(b, "<a id=\"first\" href=\"");
		if (e == BUF_OK)
			e = html_escape(pc->prefix, b);
		if (e == BUF_OK)
			e = buf_append_cstr(b, "/?after=0");
		if (e == BUF_OK)
			e = page_query_tail(b, lq);
		if (e == BUF_OK)
			e = buf_append_cstr(b, "\">First page</a>");
	}
	if (e == BUF_OK && pc->n == lq->limit) {
		e = buf_append_cstr(b, "<a id=\"next\" rel=\"next\" href=\"");
		if (e == BUF_OK)
			e = html_escape(pc->prefix, b);
		if (e == BUF_OK)
			e = buf_appendf(b, "/?after=%llu", (unsigned long long)pc->last_seq);
		if (e == BUF_OK)
			e = page_query_tail(b, lq);
		if (e == BUF_OK)
			e = buf_append_cstr(b, "\">Next page</a>");
	}
	if (e == BUF_OK)
		e = buf_append_cstr(b, "</nav>\n</section>\n");
	return e;
}

/*
 * The page's head up to the table.  What the script needs travels as data-
 * attributes on <body>, never as inline script: the app's mount prefix
 * (every URL it builds starts with it), whether direct uploads are on and
 * the largest file they take (one Put Blob: single_put_max, as POST
 * /documents/direct has it), the tus chunk and the size from which a file
 * goes through tus when they are off.  The page's own links and forms are
 * absolute paths under the prefix, not relative ones and no <base> (its CSP
 * says base-uri 'none'): "/docs" and "/docs/" are both the page.
 */
static enum buf_err
page_head(struct buf *b, struct span prefix, const struct bindery_config *cfg,
	  const struct input_list *lq)
{
	enum buf_err e;

	e = buf_append_cstr(b, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
			    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
			    "<title>bindery</title>\n");
	if (e == BUF_OK)
		e = buf_append_cstr(b, page_style);
	if (e == BUF_OK)
		e = buf_appendf(b, "</head><body data-direct=\"%d\" data-direct-max=\"%llu\""
				" data-tus-chunk=\"%u\" data-tus-min=\"%llu\" data-prefix=\"",
				cfg->upload_direct ? 1 : 0, (unsigned long long)cfg->single_put_max,
				PAGE_TUS_CHUNK, (unsigned long long)cfg->single_put_max);
	if (e == BUF_OK)
		e = html_escape(prefix, b);
	if (e == BUF_OK)
		e = buf_append_cstr(b, "\">\n<h1>bindery</h1>\n");
	if (e == BUF_OK)
		e = buf_append_cstr(b, "<form id=\"up\" method=\"post\" action=\"");
	if (e == BUF_OK)
		e = html_escape(prefix, b);
	if (e == BUF_OK)
		e = buf_append_cstr(b, page_forms);
	if (e == BUF_OK)
		e = buf_append_cstr(b, "<form method=\"get\" action=\"");
	if (e == BUF_OK)
		e = html_escape(prefix, b);
	if (e == BUF_OK)
		e = buf_append_cstr(b, "/\" role=\"search\"><p>"
				    "<label>Names starting with <input id=\"prefix\" name=\"prefix\""
				    " maxlength=\"255\" value=\"");
	if (e == BUF_OK)
		e = html_escape(buf_span(&lq->prefix), b);
	if (e == BUF_OK)
		e = buf_append_cstr(b, "\"></label> <button>Filter</button> <a href=\"");
	if (e == BUF_OK)
		e = html_escape(prefix, b);
	if (e == BUF_OK)
		e = buf_append_cstr(b, "/\">All documents</a></p></form>\n");
	if (e == BUF_OK)
		e = buf_append_cstr(b, page_table_head);
	return e;
}

/*
 * The page's headers: its CSP, whose connect-src also names the storage
 * origin when direct uploads are on (doc/design.md "Smaller decisions": the
 * browser PUTs the file to the SAS URL there).  An endpoint that is no
 * origin leaves connect-src at 'self': direct uploads then fail in the
 * browser, and the script falls back to tus.
 */
static enum buf_err
page_headers(struct buf *h, const struct bindery_config *cfg, const char *nonce)
{
	struct origin o;
	enum buf_err e;

	e = buf_appendf(h, PAGE_CSP_SCRIPT "%s" PAGE_CSP_REST, nonce);
	if (e == BUF_OK && cfg->upload_direct && cfg->storage_endpoint &&
	    origin_parse(span_from_cstr(cfg->storage_endpoint), 1, &o) == ORIGIN_PARSE_OK) {
		e = buf_appendf(h, "; connect-src 'self' %s://", o.https ? "https" : "http");
		if (e == BUF_OK)
			e = buf_append(h, o.host, o.host_len);
		if (e == BUF_OK && o.port)
			e = buf_appendf(h, ":%u", o.port);
	}
	if (e == BUF_OK)
		e = buf_append_cstr(h, "\r\nX-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\n");
	return e;
}

void
handle_index(struct app *app, struct request *r)
{
	struct buf page = BUF_INIT(PAGE_MAX), headers = BUF_INIT(PAGE_HEADERS_MAX);
	char nonce[PAGE_NONCE_MAX];
	struct input_list lq = { 0, 0, BUF_INIT(4 * DOCUMENT_NAME_MAX) };
	struct page_ctx pc = { &page, r->prefix, 0, 0, 0 };
	enum proto_result pr;

	if (app->cfg->reads_need_auth && r->owner == NULL) {
		resp_error(r, 401, "unauthorized", "reads need authentication");
		goto out;
	}
	if (!input_list(r, PAGE_DOCS, &lq))
		goto out;
	if (rand_hex(nonce, sizeof nonce, PAGE_NONCE_BYTES) != 0) {
		resp_error(r, 500, "internal", "no randomness for the page's nonce");
		goto out;
	}
	if (page_head(&page, r->prefix, app->cfg, &lq) != BUF_OK ||
	    page_headers(&headers, app->cfg, nonce) != BUF_OK) {
		resp_error(r, 500, "internal", "out of memory");
		goto out;
	}
	pr = reads_list(app->svc, lq.after, buf_span(&lq.prefix), (unsigned)lq.limit, page_row, &pc);
	if (pr != PROTO_OK && !pc.failed) {
		answer_failure(r, ANSWER_READ, pr, 0);
		goto out;
	}
	if (pc.failed || page_pager(&page, &lq, &pc) != BUF_OK ||
	    buf_appendf(&page, "<script nonce=\"%s\" src=\"", nonce) != BUF_OK ||
	    html_escape(r->prefix, &page) != BUF_OK ||
	    buf_append(&page, page_tail, sizeof page_tail - 1) != BUF_OK) {
		resp_error(r, 500, "internal", "page too large");
		goto out;
	}
	resp_begin(r, 200, "text/html; charset=utf-8", (int64_t)page.len, headers.ptr);
	(void)req_write(r, page.ptr, page.len);
out:
	buf_free(&lq.prefix);
	buf_free(&headers);
	buf_free(&page);
}

/* Static code, no secret in it: served without authentication or the
 * database, so the script is there whenever the page is.  no-cache makes the
 * browser ask again each time, so a new release's script comes with its page. */
void
handle_page_script(struct app *app, struct request *r)
{
	(void)app;
	resp_begin(r, 200, "text/javascript; charset=utf-8", (int64_t)sizeof page_js,
		   "Cache-Control: no-cache\r\nX-Content-Type-Options: nosniff\r\n");
	(void)req_write(r, (const char *)page_js, sizeof page_js);
}
