/*
 * test_routes.c - the v1 API's route table (app/routes.c): every route,
 * every refused spelling of a path, HEAD as GET, 405 with Allow.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "app/routes.h"
#include "base/counters.h"
#include "tap.h"

static void
test_route(void)
{
	static const struct {
		const char *method, *path;
		enum route_id want;
		uint64_t id;
		const char *allow;
		int head;
	} cases[] = {
		{ "GET", "/", ROUTE_INDEX, 0, "GET, HEAD", 0 },
		{ "HEAD", "/", ROUTE_INDEX, 0, "GET, HEAD", 1 },
		{ "POST", "/", ROUTE_METHOD_NOT_ALLOWED, 0, "GET, HEAD", 0 },
		{ "GET", "/healthz", ROUTE_HEALTHZ, 0, "GET, HEAD", 0 },
		{ "GET", "/page.js", ROUTE_PAGE_SCRIPT, 0, "GET, HEAD", 0 },
		{ "HEAD", "/page.js", ROUTE_PAGE_SCRIPT, 0, "GET, HEAD", 1 },
		{ "POST", "/page.js", ROUTE_METHOD_NOT_ALLOWED, 0, "GET, HEAD", 0 },
		{ "GET", "/page.js/x", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "GET", "/favicon.ico", ROUTE_FAVICON, 0, "GET, HEAD", 0 },
		{ "HEAD", "/favicon.ico", ROUTE_FAVICON, 0, "GET, HEAD", 1 },
		{ "POST", "/favicon.ico", ROUTE_METHOD_NOT_ALLOWED, 0, "GET, HEAD", 0 },
		{ "DELETE", "/healthz", ROUTE_METHOD_NOT_ALLOWED, 0, "GET, HEAD", 0 },
		{ "GET", "/metrics", ROUTE_METRICS, 0, "GET, HEAD", 0 },
		{ "HEAD", "/metrics", ROUTE_METRICS, 0, "GET, HEAD", 1 },
		{ "POST", "/metrics", ROUTE_METHOD_NOT_ALLOWED, 0, "GET, HEAD", 0 },
		{ "GET", "/metrics/x", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "GET", "/documents", ROUTE_DOCUMENTS_LIST, 0, "GET, HEAD, POST", 0 },
		{ "POST", "/documents", ROUTE_DOCUMENTS_CREATE, 0, "GET, HEAD, POST", 0 },
		{ "PUT", "/documents", ROUTE_METHOD_NOT_ALLOWED, 0, "GET, HEAD, POST", 0 },
		{ "HEAD", "/documents", ROUTE_DOCUMENTS_LIST, 0, "GET, HEAD, POST", 1 },
		{ "GET", "/documents/1", ROUTE_DOCUMENT_GET, 1, "GET, HEAD, DELETE", 0 },
		{ "DELETE", "/documents/42", ROUTE_DOCUMENT_DELETE, 42, "GET, HEAD, DELETE", 0 },
		{ "PUT", "/documents/42", ROUTE_METHOD_NOT_ALLOWED, 42, "GET, HEAD, DELETE", 0 },
		{ "POST", "/documents/42", ROUTE_METHOD_NOT_ALLOWED, 42, "GET, HEAD, DELETE", 0 },
		{ "GET", "/documents/18446744073709551615", ROUTE_DOCUMENT_GET, UINT64_MAX,
		  "GET, HEAD, DELETE", 0 },
		{ "GET", "/documents/7/content", ROUTE_CONTENT_GET, 7, "GET, HEAD, PUT", 0 },
		{ "PUT", "/documents/7/content", ROUTE_CONTENT_PUT, 7, "GET, HEAD, PUT", 0 },
		{ "HEAD", "/documents/7/content", ROUTE_CONTENT_GET, 7, "GET, HEAD, PUT", 1 },
		{ "DELETE", "/documents/7/content", ROUTE_METHOD_NOT_ALLOWED, 7, "GET, HEAD, PUT", 0 },
		{ "get", "/documents", ROUTE_METHOD_NOT_ALLOWED, 0, "GET, HEAD, POST", 0 },
		{ "GET", "/documents/0", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "GET", "/documents/01", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "GET", "/documents/-1", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "GET", "/documents/+1", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "GET", "/documents/1a", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "GET", "/documents/18446744073709551616", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "GET", "/documents/%31", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "GET", "/documents/", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "GET", "/documents/1/", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "GET", "/documents/1/content/", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "GET", "/documents/1/content/x", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "GET", "/documents/1/contents", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "GET", "/documents/1/2/3/4/5", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "GET", "//documents", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "GET", "/documents//1", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "GET", "//", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "GET", "/./documents", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "GET", "/documents/.", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "GET", "/documents/1/../2", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "GET", "/x/../documents", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "GET", "/..", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "GET", "/healthz/", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "GET", "/Documents", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "GET", "/index.html", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "GET", "documents", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "GET", "", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "GET", "/documents?limit=1", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "POST", "/documents/direct", ROUTE_DOCUMENTS_DIRECT, 0, "POST", 0 },
		{ "GET", "/documents/direct", ROUTE_METHOD_NOT_ALLOWED, 0, "POST", 0 },
		{ "POST", "/documents/7/finalize", ROUTE_DOCUMENT_FINALIZE, 7, "POST", 0 },
		{ "GET", "/documents/7/finalize", ROUTE_METHOD_NOT_ALLOWED, 7, "POST", 0 },
		{ "POST", "/documents/x/finalize", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "POST", "/documents/direct/finalize", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "OPTIONS", "/uploads", ROUTE_UPLOADS_OPTIONS, 0, "OPTIONS, POST", 0 },
		{ "POST", "/uploads", ROUTE_UPLOADS_CREATE, 0, "OPTIONS, POST", 0 },
		{ "GET", "/uploads", ROUTE_METHOD_NOT_ALLOWED, 0, "OPTIONS, POST", 0 },
		{ "PATCH", "/uploads", ROUTE_METHOD_NOT_ALLOWED, 0, "OPTIONS, POST", 0 },
		{ "GET", "/uploads/", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "GET", "/uploads/0123456789ABCDEF0123456789abcdef", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "PATCH", "/uploads/0123456789abcdef0123456789abcde", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "PATCH", "/uploads/0123456789abcdef0123456789abcdef0", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "PATCH", "/uploads/0123456789abcdef0123456789abcdeg", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "PATCH", "/uploads/0123456789abcdef0123456789abcdef/x", ROUTE_NOT_FOUND, 0, NULL, 0 },
		{ "PATCH", "/uploads/1", ROUTE_NOT_FOUND, 0, NULL, 0 },
	};
	static const struct {
		const char *method;
		enum route_id want;
		int head;
	} upload[] = {
		{ "HEAD", ROUTE_UPLOAD_HEAD, 1 },
		{ "PATCH", ROUTE_UPLOAD_PATCH, 0 },
		{ "DELETE", ROUTE_UPLOAD_DELETE, 0 },
		{ "GET", ROUTE_METHOD_NOT_ALLOWED, 0 },
		{ "POST", ROUTE_METHOD_NOT_ALLOWED, 0 },
	};
	static const char uid[] = "0123456789abcdef0123456789abcdef";
	struct route_match m;
	enum route_id r;
	size_t i;

	for (i = 0; i < ARRAY_LEN(cases); i++) {
		r = route_request(span_from_cstr(cases[i].method), span_from_cstr(cases[i].path), &m);
		tap_ok(r == cases[i].want && m.id == r && m.doc_id == cases[i].id &&
		    m.head == cases[i].head &&
		    (cases[i].allow ? m.allow && strcmp(m.allow, cases[i].allow) == 0 : !m.allow),
		    "%s %s -> route %d", cases[i].method, cases[i].path, (int)r);
	}
	for (i = 0; i < ARRAY_LEN(upload); i++) {
		r = route_request(span_from_cstr(upload[i].method),
				  SPAN_LIT("/uploads/0123456789abcdef0123456789abcdef"), &m);
		tap_ok(r == upload[i].want && m.head == upload[i].head && m.doc_id == 0 &&
		    strcmp(m.upload_id, uid) == 0 && m.allow && strcmp(m.allow, "HEAD, PATCH, DELETE") == 0,
		    "%s /uploads/{id} -> route %d", upload[i].method, (int)r);
	}
	r = route_request(SPAN_LIT("GET"), SPAN_LIT("/documents/5"), &m);
	tap_ok(r == ROUTE_DOCUMENT_GET && m.upload_id[0] == '\0', "a document route has no upload id");
	r = route_request(SPAN_LIT("GET"), (struct span){ "/documents/1\0", 13 }, &m);
	tap_ok(r == ROUTE_NOT_FOUND, "NUL in a path");
	r = route_request(SPAN_LIT("GET"), (struct span){ "/\0", 2 }, &m);
	tap_ok(r == ROUTE_NOT_FOUND, "NUL after /");
	r = route_request(SPAN_NULL, SPAN_LIT("/"), &m);
	tap_ok(r == ROUTE_METHOD_NOT_ALLOWED, "empty method");
}

/* The metrics' route label: a template for every route, no two alike,
 * and the label's method and path route back to the same id; the table
 * fits the shared counters' request table. */
static void
test_route_names(void)
{
	static const char *const fill[] = { "{id}", "7", "{upload}", "0123456789abcdef0123456789abcdef" };
	struct route_match m;
	char path[128];
	int id, other, bad = 0;

	tap_ok(ROUTE_COUNT <= COUNTERS_ROUTES, "%d routes fit the counters' %d", ROUTE_COUNT, COUNTERS_ROUTES);
	tap_ok(strcmp(route_name(ROUTE_NOT_FOUND), "unmatched") == 0 &&
	       strcmp(route_name((enum route_id)ROUTE_COUNT), "unmatched") == 0, "no route is unmatched");
	for (id = ROUTE_INDEX; id < ROUTE_COUNT; id++) {
		const char *name = route_name((enum route_id)id), *sp = strchr(name, ' ');
		size_t i;

		for (other = 0; other < id; other++)
			bad += strcmp(route_name((enum route_id)other), name) == 0;
		if (sp == NULL || snprintf(path, sizeof path, "%s", sp + 1) >= (int)sizeof path) {
			bad++;
			continue;
		}
		for (i = 0; i < ARRAY_LEN(fill); i += 2) {
			char *at = strstr(path, fill[i]), rest[128];

			if (at == NULL)
				continue;
			snprintf(rest, sizeof rest, "%s", at + strlen(fill[i]));
			snprintf(at, sizeof path - (size_t)(at - path), "%s%s", fill[i + 1], rest);
		}
		if (route_request((struct span){ name, (size_t)(sp - name) }, span_from_cstr(path), &m) !=
		    (enum route_id)id) {
			tap_diag("%s does not route back to %d", name, id);
			bad++;
		}
	}
	tap_ok(bad == 0, "every route's label is unique and routes back to it");
}

int
main(void)
{
	test_route();
	test_route_names();
	return tap_done();
}
