/*
 * page.c - GET /: the HTML page.  It lists ready documents newest first (or
 * oldest first, ?order=oldest), a page at a time (?after= is the list's
 * keyset cursor in that order, ?prefix= filters by the start of the name),
 * with how many there are in all, and uploads with a plain form whose token
 * field the create reads: all of that works without JavaScript (the create
 * answers 303 back here, with ?created=ID to highlight the new row or
 * ?error=CODE for a message of this file's own words).  With
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
#include "app/favicon_ico.h"	/* generated from app/favicon.ico (mk/app.mk) */

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
	"grid-template-columns:minmax(8rem,1fr) 14rem minmax(8rem,1fr) auto;gap:.6rem;align-items:center;padding:.2rem 0}\n"
	"#up label{margin-right:1rem}#uploads progress{width:100%}.err{color:#b00020}.done{color:#137333}\n"
	"nav.pager{display:flex;gap:1rem;margin:1rem 0}.muted{color:#666}\n"
	".sr{position:absolute;left:-9999px}tr.new td{background:#fff4c2}.badge{font-size:.8em;"
	"margin-left:.4rem;padding:0 .3rem;border-radius:.2rem;background:#137333;color:#fff}\n"
	"#uploads li.batch{display:block;font-weight:600;margin-top:.4rem}.rowerr{display:block}\n"
	"p.bar{display:flex;gap:1rem;flex-wrap:wrap;align-items:baseline}\n"
	"</style>\n";

/* The upload form is the no-JavaScript path too: a plain multipart POST,
 * whose token and name fields must come before the file (doc/api.md
 * "Uploads and names": the create takes neither after it; a token read
 * before the file means no byte is stored for an unknown caller), so the
 * fields keep this order.  It follows the form's opening up to its
 * action's mount prefix (page_head). */
static const char page_forms[] =
	"/documents\" enctype=\"multipart/form-data\">\n"
	"<fieldset><legend>Upload</legend>\n"
	"<p><label>Token <input id=\"token\" name=\"token\" type=\"password\" autocomplete=\"off\"></label></p>\n"
	"<p><label>Name (optional) <input name=\"name\" maxlength=\"255\"></label>\n"
	"<label>File <input id=\"file\" type=\"file\" name=\"file\" required></label>\n"
	"<button id=\"send\">Upload</button></p>\n"
	"<div id=\"drop\" hidden>Drop files here, or choose several above</div>\n"
	"<ul id=\"uploads\" aria-live=\"polite\" aria-label=\"Uploads\"></ul>\n"
	"<p id=\"msg\" role=\"status\">";

/* After the message a form post came back with (page_message). */
static const char page_forms_end[] = "</p>\n</fieldset></form>\n";

static const char page_table_head[] =
	"<table><caption class=\"sr\">Documents</caption><thead><tr><th scope=\"col\">Name</th>"
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
	uint64_t created;	/* ?created=: the row to highlight, 0 for none */
	uint64_t last_seq;	/* the cursor of the next page */
	unsigned n;
	int failed;
};

/*
 * What a form post that failed hears, by the error code the create's 303
 * carried back (?error=CODE): words of the page's own, never the query's
 * text, so nothing a link carries is ever shown.  NULL ends the table; an
 * unknown code gets its last line.
 */
static const struct {
	const char *code;
	const char *text;
} page_errors[] = {
	{ "unauthorized", "The upload did not start: the token is missing or not valid. Type your token and"
			  " choose the file again." },
	{ "forbidden", "The upload did not start: you may not upload here." },
	{ "name_taken", "A document with this name already exists. Choose another name." },
	{ "too_large", "The file is larger than this server accepts." },
	{ "bad_name", "That name cannot be used. Choose another name." },
	{ "missing_file", "Choose a file to upload." },
	{ "bad_content_type", "The file's type was not accepted." },
	{ "bad_body", "The upload was cut off or garbled on the way. Try again." },
	{ "body_timeout", "The upload came in too slowly and was stopped. Try again." },
	{ "interrupted", "The upload was interrupted. Try again." },
	{ "unavailable", "The service is not available just now. Try again in a minute." },
	{ NULL, "The upload did not go through. Try again." },
};

static const char *
page_error_text(struct span code)
{
	size_t i;

	for (i = 0; page_errors[i].code; i++)
		if (span_eq_cstr(code, page_errors[i].code))
			break;
	return page_errors[i].text;
}

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
 * unhides them once it has a token or the server knows the caller
 * (without either they could do nothing).  is_new marks the row a form
 * upload just created.  prefix is a safe path (http_mount_split), escaped
 * all the same. */
static enum buf_err
page_row_append(struct buf *b, struct span prefix, const struct doc *d, int is_new)
{
	char size[32], etag[64];
	unsigned long long id = (unsigned long long)d->id;
	/* created_at is RFC 3339 UTC: "2026-12-02 15:48 UTC"; the script shows local time */
	struct span date = { d->created_at, strlen(d->created_at) > 16 ? 10 : 0 };
	struct span hhmm = { d->created_at + 11, date.len ? 5 : 0 };
	enum buf_err e;

	human_size(d->size, size, sizeof size);
	render_doc_etag(d, etag, sizeof etag);
	e = buf_appendf(b, "<tr data-id=\"%llu\"%s data-etag=\"", id, is_new ? " class=\"new\"" : "");
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
	if (e == BUF_OK && is_new)
		e = buf_append_cstr(b, "</a><span class=\"badge\">just uploaded</span>");
	else if (e == BUF_OK)
		e = buf_append_cstr(b, "</a>");
	if (e == BUF_OK)
		e = buf_appendf(b, "</td><td class=\"n\" title=\"%llu bytes\">%s</td>"
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

	if (page_row_append(pc->out, pc->prefix, d, pc->created != 0 && d->id == pc->created) != BUF_OK) {
		pc->failed = 1;
		return 1;
	}
	pc->last_seq = d->ready_seq;
	pc->n++;
	return 0;
}

/* "&prefix=P&limit=L" (and "&order=oldest" when with_order and the list is
 * not newest first) as the query carried them, for the page's links. */
static enum buf_err
page_query_tail(struct buf *b, const struct input_list *lq, int with_order)
{
	enum buf_err e = BUF_OK;

	if (with_order && lq->order == DOC_ORDER_OLDEST)
		e = buf_append_cstr(b, "&amp;order=oldest");
	if (e == BUF_OK && lq->prefix.len) {
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
			e = page_query_tail(b, lq, 1);
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
			e = page_query_tail(b, lq, 1);
		if (e == BUF_OK)
			e = buf_append_cstr(b, "\">Next page</a>");
	}
	if (e == BUF_OK)
		e = buf_append_cstr(b, "</nav>\n</section>\n");
	return e;
}

/* 1429 as "1,429": a count a person reads at a glance. */
static enum buf_err
page_count_append(struct buf *b, uint64_t n)
{
	char digits[24];
	int len = snprintf(digits, sizeof digits, "%llu", (unsigned long long)n), i;
	enum buf_err e = BUF_OK;

	for (i = 0; i < len && e == BUF_OK; i++) {
		if (i > 0 && (len - i) % 3 == 0)
			e = buf_append_cstr(b, ",");
		if (e == BUF_OK)
			e = buf_append(b, digits + i, 1);
	}
	return e;
}

/*
 * Above the table: how many ready documents the filter holds in all, and
 * the sort as two plain links (the current one marked, not a link), each
 * back to the first page: a cursor belongs to one direction.
 */
static enum buf_err
page_list_bar(struct buf *b, struct span prefix, const struct input_list *lq, uint64_t total)
{
	static const struct {
		enum doc_order order;
		const char *query, *label;
	} sorts[] = {
		{ DOC_ORDER_NEWEST, "/?order=newest", "Newest first" },
		{ DOC_ORDER_OLDEST, "/?order=oldest", "Oldest first" },
	};
	enum buf_err e;
	size_t i;

	e = buf_append_cstr(b, "<p class=\"bar\"><span id=\"count\">");
	if (e == BUF_OK)
		e = page_count_append(b, total);
	if (e == BUF_OK)
		e = buf_append_cstr(b, total == 1 ? " document" : " documents");
	if (e == BUF_OK && lq->prefix.len) {
		e = buf_append_cstr(b, " whose names start with \u201c");
		if (e == BUF_OK)
			e = html_escape(buf_span(&lq->prefix), b);
		if (e == BUF_OK)
			e = buf_append_cstr(b, "\u201d");
	}
	if (e == BUF_OK)
		e = buf_append_cstr(b, "</span> <span id=\"sort\">Sort:");
	for (i = 0; i < ARRAY_LEN(sorts) && e == BUF_OK; i++) {
		if (sorts[i].order == lq->order) {
			e = buf_appendf(b, " <strong aria-current=\"true\">%s</strong>", sorts[i].label);
			continue;
		}
		e = buf_append_cstr(b, " <a href=\"");
		if (e == BUF_OK)
			e = html_escape(prefix, b);
		if (e == BUF_OK)
			e = buf_append_cstr(b, sorts[i].query);
		if (e == BUF_OK)
			e = page_query_tail(b, lq, 0);
		if (e == BUF_OK)
			e = buf_appendf(b, "\">%s</a>", sorts[i].label);
	}
	if (e == BUF_OK)
		e = buf_append_cstr(b, "</span></p>\n");
	return e;
}

/* What the page says when a form post came back to it: the document it
 * created (by name, escaped), or the words for the error code it failed
 * with (page_errors); nothing otherwise. */
struct page_message {
	const struct doc *created;	/* NULL: none, or no longer there */
	int created_asked;		/* ?created= came, even if not found */
	int has_error;
	struct span error;		/* ?error=: the code, looked up, never shown */
};

static enum buf_err
page_message_append(struct buf *b, const struct page_message *m)
{
	enum buf_err e = BUF_OK;

	if (m->has_error) {
		e = buf_append_cstr(b, "<span class=\"err\">");
		if (e == BUF_OK)
			e = buf_append_cstr(b, page_error_text(m->error));
		if (e == BUF_OK)
			e = buf_append_cstr(b, "</span>");
	} else if (m->created) {
		e = buf_append_cstr(b, "<span class=\"done\">Uploaded \u201c");
		if (e == BUF_OK)
			e = html_escape(span_from_cstr(m->created->name), b);
		if (e == BUF_OK)
			e = buf_append_cstr(b, "\u201d.</span>");
	} else if (m->created_asked) {
		e = buf_append_cstr(b, "<span class=\"done\">Uploaded.</span>");
	}
	return e;
}

/*
 * The page's head up to the table.  What the script needs travels as data-
 * attributes on <body>, never as inline script: the app's mount prefix
 * (every URL it builds starts with it), whether the server already knows
 * the caller (web server authentication: the script then offers Replace
 * and Delete without a token), whether direct uploads are on and
 * the largest file they take (one Put Blob: single_put_max, as POST
 * /documents/direct has it), the tus chunk and the size from which a file
 * goes through tus when they are off.  The page's own links and forms are
 * absolute paths under the prefix, not relative ones and no <base> (its CSP
 * says base-uri 'none'): "/docs" and "/docs/" are both the page.
 */
static enum buf_err
page_head(struct buf *b, const struct request *r, const struct bindery_config *cfg,
	  const struct input_list *lq, const struct page_message *m)
{
	struct span prefix = r->prefix;
	enum buf_err e;

	e = buf_append_cstr(b, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
			    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
			    "<title>bindery</title>\n<link rel=\"icon\" href=\"");
	if (e == BUF_OK)
		e = html_escape(prefix, b);
	if (e == BUF_OK)
		e = buf_append_cstr(b, "/favicon.ico\">\n");
	if (e == BUF_OK)
		e = buf_append_cstr(b, page_style);
	if (e == BUF_OK)
		e = buf_appendf(b, "</head><body data-direct=\"%d\" data-direct-max=\"%llu\""
				" data-tus-chunk=\"%u\" data-tus-min=\"%llu\" data-auth=\"%d\" data-prefix=\"",
				cfg->upload_direct ? 1 : 0, (unsigned long long)cfg->single_put_max,
				PAGE_TUS_CHUNK, (unsigned long long)cfg->single_put_max, r->owner ? 1 : 0);
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
		e = page_message_append(b, m);
	if (e == BUF_OK)
		e = buf_append_cstr(b, page_forms_end);
	if (e == BUF_OK)
		e = buf_append_cstr(b, "<form method=\"get\" action=\"");
	if (e == BUF_OK)
		e = html_escape(prefix, b);
	if (e == BUF_OK)
		e = buf_append_cstr(b, "/\" role=\"search\"><p>");
	if (e == BUF_OK && lq->order == DOC_ORDER_OLDEST)
		e = buf_append_cstr(b, "<input type=\"hidden\" name=\"order\" value=\"oldest\">");
	if (e == BUF_OK)
		e = buf_append_cstr(b, "<label>Names starting with <input id=\"prefix\" name=\"prefix\""
				    " maxlength=\"255\" value=\"");
	if (e == BUF_OK)
		e = html_escape(buf_span(&lq->prefix), b);
	if (e == BUF_OK)
		e = buf_append_cstr(b, "\"></label> <button>Filter</button> <a href=\"");
	if (e == BUF_OK)
		e = html_escape(prefix, b);
	if (e == BUF_OK)
		e = buf_append_cstr(b, "/\">All documents</a></p></form>\n"
				    "<section id=\"list\" aria-label=\"Documents\">\n");
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

/*
 * ?created=ID and ?error=CODE, which a form post's 303 carries back
 * (handlers.c): anything malformed is as if absent, as a page must render
 * whatever link it is given.  The created document is looked up to name
 * it; the error code only picks one of page_errors' lines.
 */
static void
page_message_read(struct app *app, struct request *r, struct buf *scratch, struct doc *d,
		  struct page_message *m, uint64_t *created)
{
	size_t i;

	memset(m, 0, sizeof *m);
	*created = 0;
	if (http_query_get(r->query, "created", scratch) == HTTP_QUERY_FOUND &&
	    http_parse_uint(buf_span(scratch), UINT64_MAX, created) == HTTP_UINT_OK && *created) {
		m->created_asked = 1;
		if (reads_get(app->svc, *created, d) == PROTO_OK)
			m->created = d;
	}
	if (http_query_get(r->query, "error", scratch) != HTTP_QUERY_FOUND || scratch->len == 0 ||
	    scratch->len > 32)
		return;
	for (i = 0; i < scratch->len; i++)
		if (!((scratch->ptr[i] >= 'a' && scratch->ptr[i] <= 'z') || scratch->ptr[i] == '_'))
			return;
	m->has_error = 1;
	m->error = buf_span(scratch);
	m->created_asked = 0;
	m->created = NULL;
}

void
handle_index(struct app *app, struct request *r)
{
	struct buf page = BUF_INIT(PAGE_MAX), headers = BUF_INIT(PAGE_HEADERS_MAX);
	struct buf scratch = BUF_INIT(64);
	char nonce[PAGE_NONCE_MAX];
	struct input_list lq = { 0, 0, BUF_INIT(4 * DOCUMENT_NAME_MAX), DOC_ORDER_NEWEST };
	struct page_ctx pc = { &page, r->prefix, 0, 0, 0, 0 };
	struct page_message msg;
	enum proto_result pr;
	uint64_t total = 0;
	struct doc created;

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
	page_message_read(app, r, &scratch, &created, &msg, &pc.created);
	if (page_head(&page, r, app->cfg, &lq, &msg) != BUF_OK ||
	    page_headers(&headers, app->cfg, nonce) != BUF_OK) {
		resp_error(r, 500, "internal", "out of memory");
		goto out;
	}
	pr = reads_count(app->svc, buf_span(&lq.prefix), &total);
	if (pr != PROTO_OK) {
		answer_failure(r, ANSWER_READ, pr, 0);
		goto out;
	}
	if (page_list_bar(&page, r->prefix, &lq, total) != BUF_OK ||
	    buf_append_cstr(&page, page_table_head) != BUF_OK) {
		resp_error(r, 500, "internal", "out of memory");
		goto out;
	}
	pr = reads_list(app->svc, lq.order, lq.after, buf_span(&lq.prefix), (unsigned)lq.limit, page_row, &pc);
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
	buf_free(&scratch);
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

/* The page's icon, static like its script; browsers ask for /favicon.ico
 * on every site whatever the page links, so it is cached for a day
 * (a new icon with a release may take that long to show). */
void
handle_favicon(struct app *app, struct request *r)
{
	(void)app;
	resp_begin(r, 200, "image/vnd.microsoft.icon", (int64_t)sizeof favicon_ico,
		   "Cache-Control: public, max-age=86400\r\nX-Content-Type-Options: nosniff\r\n");
	(void)req_write(r, (const char *)favicon_ico, sizeof favicon_ico);
}
