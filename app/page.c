/*
 * page.c - GET /: a small HTML page.  It lists ready documents, uploads with
 * a plain form (works without JavaScript: the create answers 303 back here)
 * and, with JavaScript, shows upload progress and offers delete.  Every value
 * from the database is HTML-escaped.  The script is served apart, as
 * GET /page.js, so the page's CSP allows no inline script at all: markup that
 * slipped through escaping could not run, and no uploaded document may frame
 * the page (DESIGN.md "Serving user content").
 */
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "registry/docs_db.h"
#include "parse/http_parse.h"

#define PAGE_MAX (4 * 1024 * 1024)
#define PAGE_DOCS 200

static const char page_head[] =
	"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	"<title>bindery</title>\n<style>\n"
	"body{font:15px/1.4 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}\n"
	"table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.3rem .5rem;"
	"border-bottom:1px solid #ddd}.n{text-align:right}progress{width:20rem}\n"
	"</style></head><body>\n<h1>bindery</h1>\n"
	"<form id=\"up\" method=\"post\" action=\"/documents\" enctype=\"multipart/form-data\">\n"
	"<p><label>Name (optional) <input name=\"name\" maxlength=\"255\"></label>\n"
	"<input type=\"file\" name=\"file\" required>\n<button>Upload</button>\n"
	"<label>Token <input id=\"token\" type=\"password\" autocomplete=\"off\"></label></p>\n"
	"<p><progress id=\"bar\" max=\"100\" value=\"0\" hidden></progress> <span id=\"msg\"></span></p>\n"
	"</form>\n<table><thead><tr><th>Name</th><th class=\"n\">Size</th><th>Created</th><th></th></tr></thead><tbody>\n";

static const char page_tail[] =
	"</tbody></table>\n<script src=\"/page.js\"></script>\n</body></html>\n";

static const char page_script[] =
	"const $=id=>document.getElementById(id);\n"
	"const auth=()=>$('token').value?{'Authorization':'Bearer '+$('token').value}:{};\n"
	/* The page reloads after each change: keep the token for this tab only. */
	"$('token').value=sessionStorage.getItem('bindery-token')||'';\n"
	"$('token').addEventListener('input',()=>sessionStorage.setItem('bindery-token',$('token').value));\n"
	"$('up').addEventListener('submit',e=>{e.preventDefault();\n"
	" const x=new XMLHttpRequest();x.open('POST','/documents');\n"
	" for(const [k,v] of Object.entries(auth()))x.setRequestHeader(k,v);\n"
	" x.setRequestHeader('Accept','application/json');\n"
	" $('bar').hidden=false;x.upload.onprogress=p=>{if(p.lengthComputable)$('bar').value=100*p.loaded/p.total};\n"
	" x.onload=()=>{if(x.status==201)location.reload();else{let m=x.status;"
	"try{m=JSON.parse(x.responseText).message}catch(_){}$('msg').textContent=m}};\n"
	" x.onerror=()=>{$('msg').textContent='upload failed'};x.send(new FormData($('up')));});\n"
	"document.querySelectorAll('button[data-id]').forEach(b=>b.addEventListener('click',async()=>{\n"
	" const r=await fetch('/documents/'+b.dataset.id,{method:'DELETE',headers:auth()});\n"
	" if(r.status==204)location.reload();else $('msg').textContent=(await r.json()).message;}));\n";

/* Scripts only from our own origin (page.js), never inline; no plugins, no
 * <base> rewriting, forms post only here, and nobody may frame the page. */
#define PAGE_CSP "Content-Security-Policy: default-src 'self'; script-src 'self'; " \
	"style-src 'unsafe-inline'; object-src 'none'; base-uri 'none'; form-action 'self'; " \
	"frame-ancestors 'none'\r\n"

struct page_ctx {
	struct buf *out;
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

static int
page_row(void *ctx, const struct doc *d)
{
	struct page_ctx *pc = ctx;
	struct buf *b = pc->out;
	char size[32];
	/* created_at is RFC 3339 UTC: show "2026-12-02 15:48 UTC", keep the rest in a tooltip */
	struct span date = { d->created_at, strlen(d->created_at) > 16 ? 10 : 0 };
	struct span hhmm = { d->created_at + 11, date.len ? 5 : 0 };

	human_size(d->size, size, sizeof size);
	if (buf_appendf(b, "<tr><td><a href=\"/documents/%llu/content\">", (unsigned long long)d->id) ||
	    html_escape(span_from_cstr(d->name), b) ||
	    buf_appendf(b, "</a></td><td class=\"n\" title=\"%llu bytes\">%s</td><td title=\"",
			(unsigned long long)d->size, size) ||
	    html_escape(span_from_cstr(d->created_at), b) || buf_append_cstr(b, "\">") ||
	    html_escape(date, b) || buf_append_cstr(b, " ") || html_escape(hhmm, b) ||
	    buf_append_cstr(b, " UTC") ||
	    buf_appendf(b, "</td><td><button type=\"button\" data-id=\"%llu\">Delete</button></td></tr>\n",
			(unsigned long long)d->id)) {
		pc->failed = 1;
		return 1;
	}
	return 0;
}

void
handle_index(struct app *app, struct request *r)
{
	struct buf page = BUF_INIT(PAGE_MAX);
	struct page_ctx pc = { &page, 0 };

	if (app->cfg->reads_need_auth && r->owner == NULL) {
		resp_error(r, 401, "unauthorized", "reads need authentication");
		return;
	}
	if (buf_append(&page, page_head, sizeof page_head - 1) != BUF_OK) {
		resp_error(r, 500, "internal", "out of memory");
		goto out;
	}
	if (docs_list_ready(app->svc->db, 0, PAGE_DOCS, page_row, &pc) != DB_OK) {
		resp_error_retry(r, 503, "unavailable", "the database is unavailable", 5);
		goto out;
	}
	if (pc.failed || buf_append(&page, page_tail, sizeof page_tail - 1) != BUF_OK) {
		resp_error(r, 500, "internal", "page too large");
		goto out;
	}
	resp_begin(r, 200, "text/html; charset=utf-8", (int64_t)page.len,
		   PAGE_CSP "X-Content-Type-Options: nosniff\r\n");
	(void)req_write(r, page.ptr, page.len);
out:
	buf_free(&page);
}

/* Static code, no secret in it: served without authentication or the
 * database, so the script is there whenever the page is.  no-cache makes the
 * browser ask again each time, so a new release's script comes with its page. */
void
handle_page_script(struct app *app, struct request *r)
{
	(void)app;
	resp_begin(r, 200, "text/javascript; charset=utf-8", (int64_t)(sizeof page_script - 1),
		   "Cache-Control: no-cache\r\nX-Content-Type-Options: nosniff\r\n");
	(void)req_write(r, page_script, sizeof page_script - 1);
}
