/* routes.c - see routes.h. */
#include <string.h>

#include "parse/http_parse.h"
#include "routes.h"

#define ID_SEGMENT "{id}"	/* a pattern segment that takes a document id */
#define UPLOAD_SEGMENT "{upload}"	/* ... and one that takes an upload id */

/* One path of the API: its segments, the methods it answers (HEAD is GET's)
 * and the Allow header a 405 names. */
struct route_path {
	const char *pattern[HTTP_PATH_MAX_SEGMENTS];
	size_t nseg;
	const char *allow;
	struct {
		const char *method;
		enum route_id id;
	} methods[3];
};

static const struct route_path table[] = {
	{ { NULL }, 0, "GET, HEAD", { { "GET", ROUTE_INDEX } } },
	{ { "page.js" }, 1, "GET, HEAD", { { "GET", ROUTE_PAGE_SCRIPT } } },
	{ { "favicon.ico" }, 1, "GET, HEAD", { { "GET", ROUTE_FAVICON } } },
	{ { "healthz" }, 1, "GET, HEAD", { { "GET", ROUTE_HEALTHZ } } },
	{ { "metrics" }, 1, "GET, HEAD", { { "GET", ROUTE_METRICS } } },
	{ { "documents" }, 1, "GET, HEAD, POST",
	  { { "GET", ROUTE_DOCUMENTS_LIST }, { "POST", ROUTE_DOCUMENTS_CREATE } } },
	/* Before {id}: "direct" is no id, but the first match wins. */
	{ { "documents", "direct" }, 2, "POST", { { "POST", ROUTE_DOCUMENTS_DIRECT } } },
	{ { "documents", ID_SEGMENT }, 2, "GET, HEAD, DELETE",
	  { { "GET", ROUTE_DOCUMENT_GET }, { "DELETE", ROUTE_DOCUMENT_DELETE } } },
	{ { "documents", ID_SEGMENT, "finalize" }, 3, "POST", { { "POST", ROUTE_DOCUMENT_FINALIZE } } },
	{ { "documents", ID_SEGMENT, "content" }, 3, "GET, HEAD, PUT",
	  { { "GET", ROUTE_CONTENT_GET }, { "PUT", ROUTE_CONTENT_PUT } } },
	{ { "uploads" }, 1, "OPTIONS, POST",
	  { { "OPTIONS", ROUTE_UPLOADS_OPTIONS }, { "POST", ROUTE_UPLOADS_CREATE } } },
	{ { "uploads", UPLOAD_SEGMENT }, 2, "HEAD, PATCH, DELETE",
	  { { "HEAD", ROUTE_UPLOAD_HEAD }, { "PATCH", ROUTE_UPLOAD_PATCH },
	    { "DELETE", ROUTE_UPLOAD_DELETE } } },
};

static const char *const names[] = {
	[ROUTE_NOT_FOUND] = "unmatched",
	[ROUTE_METHOD_NOT_ALLOWED] = "method_not_allowed",
	[ROUTE_INDEX] = "GET /",
	[ROUTE_PAGE_SCRIPT] = "GET /page.js",
	[ROUTE_FAVICON] = "GET /favicon.ico",
	[ROUTE_HEALTHZ] = "GET /healthz",
	[ROUTE_METRICS] = "GET /metrics",
	[ROUTE_DOCUMENTS_LIST] = "GET /documents",
	[ROUTE_DOCUMENTS_CREATE] = "POST /documents",
	[ROUTE_DOCUMENTS_DIRECT] = "POST /documents/direct",
	[ROUTE_DOCUMENT_FINALIZE] = "POST /documents/{id}/finalize",
	[ROUTE_DOCUMENT_GET] = "GET /documents/{id}",
	[ROUTE_DOCUMENT_DELETE] = "DELETE /documents/{id}",
	[ROUTE_CONTENT_GET] = "GET /documents/{id}/content",
	[ROUTE_CONTENT_PUT] = "PUT /documents/{id}/content",
	[ROUTE_UPLOADS_OPTIONS] = "OPTIONS /uploads",
	[ROUTE_UPLOADS_CREATE] = "POST /uploads",
	[ROUTE_UPLOAD_HEAD] = "HEAD /uploads/{upload}",
	[ROUTE_UPLOAD_PATCH] = "PATCH /uploads/{upload}",
	[ROUTE_UPLOAD_DELETE] = "DELETE /uploads/{upload}",
};

const char *
route_name(enum route_id id)
{
	return (unsigned)id < ARRAY_LEN(names) && names[id] != NULL ? names[id] : "unmatched";
}

/* An upload id segment: exactly 32 lower-case hex digits. */
static int
upload_id_ok(struct span seg)
{
	size_t i;

	if (seg.len != ROUTE_UPLOAD_ID_LEN)
		return 0;
	for (i = 0; i < seg.len; i++)
		if (!((seg.ptr[i] >= '0' && seg.ptr[i] <= '9') || (seg.ptr[i] >= 'a' && seg.ptr[i] <= 'f')))
			return 0;
	return 1;
}

/* Whether path's segments fit rp's pattern; the id segment's value to out. */
static int
path_matches(const struct route_path *rp, const struct http_path *path, struct route_match *out)
{
	size_t i;

	if (path->nseg != rp->nseg)
		return 0;
	for (i = 0; i < rp->nseg; i++) {
		if (strcmp(rp->pattern[i], ID_SEGMENT) == 0) {
			if (!http_parse_id(path->seg[i], &out->doc_id))
				return 0;
		} else if (strcmp(rp->pattern[i], UPLOAD_SEGMENT) == 0) {
			if (!upload_id_ok(path->seg[i]))
				return 0;
			memcpy(out->upload_id, path->seg[i].ptr, ROUTE_UPLOAD_ID_LEN);
			out->upload_id[ROUTE_UPLOAD_ID_LEN] = '\0';
		} else if (!span_eq_cstr(path->seg[i], rp->pattern[i])) {
			return 0;
		}
	}
	return 1;
}

enum route_id
route_request(struct span method, struct span path, struct route_match *out)
{
	const struct route_path *rp = NULL;
	struct http_path split;
	int head = span_eq_cstr(method, "HEAD");
	size_t i;

	memset(out, 0, sizeof *out);
	out->id = ROUTE_NOT_FOUND;
	if (http_path_split(path, &split) != 0)
		return out->id;
	for (i = 0; i < ARRAY_LEN(table) && rp == NULL; i++) {
		if (path_matches(&table[i], &split, out)) {
			rp = &table[i];
		} else {	/* a partial match may have filled an id */
			out->doc_id = 0;
			out->upload_id[0] = '\0';
		}
	}
	if (rp == NULL)
		return out->id;
	out->allow = rp->allow;
	out->id = ROUTE_METHOD_NOT_ALLOWED;
	for (i = 0; i < ARRAY_LEN(rp->methods) && rp->methods[i].method; i++) {
		if (span_eq_cstr(method, rp->methods[i].method) ||
		    (head && strcmp(rp->methods[i].method, "GET") == 0)) {
			out->id = rp->methods[i].id;
			out->head = head;
		}
	}
	return out->id;
}
