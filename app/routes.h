/*
 * routes.h - the v1 API's route table: which (method, path) reaches which
 * handler.  The path is split by http_path_split(), so every spelling the
 * parser refuses (dot segments, "//", NUL) is simply not found here.
 */
#ifndef BINDERY_ROUTES_H
#define BINDERY_ROUTES_H

#include <stdint.h>

#include "base/buf.h"

enum route_id {
	ROUTE_NOT_FOUND = 0,
	ROUTE_METHOD_NOT_ALLOWED,
	ROUTE_INDEX,		/* GET / */
	ROUTE_PAGE_SCRIPT,	/* GET /page.js (the page's script, so its CSP needs no inline) */
	ROUTE_FAVICON,		/* GET /favicon.ico (the page's icon) */
	ROUTE_HEALTHZ,		/* GET /healthz */
	ROUTE_METRICS,		/* GET /metrics (Prometheus; [metrics] enabled) */
	ROUTE_DOCUMENTS_LIST,	/* GET /documents */
	ROUTE_DOCUMENTS_CREATE,	/* POST /documents */
	ROUTE_DOCUMENTS_DIRECT,	/* POST /documents/direct (a direct upload's intent) */
	ROUTE_DOCUMENT_FINALIZE,/* POST /documents/{id}/finalize */
	ROUTE_DOCUMENT_GET,	/* GET /documents/{id} */
	ROUTE_DOCUMENT_DELETE,	/* DELETE /documents/{id} */
	ROUTE_CONTENT_GET,	/* GET /documents/{id}/content */
	ROUTE_CONTENT_PUT,	/* PUT /documents/{id}/content */
	ROUTE_UPLOADS_OPTIONS,	/* OPTIONS /uploads (tus discovery) */
	ROUTE_UPLOADS_CREATE,	/* POST /uploads */
	ROUTE_UPLOAD_HEAD,	/* HEAD /uploads/{upload} */
	ROUTE_UPLOAD_PATCH,	/* PATCH /uploads/{upload} */
	ROUTE_UPLOAD_DELETE,	/* DELETE /uploads/{upload} */
};

#define ROUTE_UPLOAD_ID_LEN 32	/* an upload id: 32 lower-case hex digits */

struct route_match {
	enum route_id id;
	uint64_t doc_id;	/* > 0 for the /documents/{id} routes, else 0 */
	char upload_id[ROUTE_UPLOAD_ID_LEN + 1];	/* the /uploads/{upload} routes, else "" */
	const char *allow;	/* Allow header value for the path; NULL on NOT_FOUND */
	int head;		/* the method was HEAD, routed as GET: send no body */
};

/*
 * Route a request.  path is the request path with the query already
 * stripped; {id} is a canonical decimal uint64 > 0 (http_parse_id).  HEAD is
 * routed like GET with head set (a path without GET may route HEAD itself).
 * {upload} is 32 lower-case hex digits.  A path that matches no route, or that
 * http_path_split() refuses, is NOT_FOUND; a known path with another method
 * is METHOD_NOT_ALLOWED with allow set.  Returns out->id.
 */
enum route_id route_request(struct span method, struct span path, struct route_match *out);

/*
 * The route as a template, "GET /documents/{id}" (HEAD is GET's), for a
 * metric's label: one of a fixed set, never a client's path.  "unmatched"
 * for NOT_FOUND (no route, or a request refused before routing) and
 * "method_not_allowed".
 */
const char *route_name(enum route_id id);

/* One more than the highest route id (the counters' table is this wide). */
#define ROUTE_COUNT (ROUTE_UPLOAD_DELETE + 1)

#endif
