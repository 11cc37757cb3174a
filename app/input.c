/* input.c - see input.h. */
#include <assert.h>
#include <string.h>

#include "admit.h"
#include "base/log.h"
#include "input.h"
#include "parse/http_parse.h"
#include "render.h"

void
input_too_large(struct request *r)
{
	resp_error(r, 413, "too_large", "the document is larger than the upload limit");
}

int
input_writer(struct request *r)
{
	if (r->owner)
		return 1;
	req_drain(r, 0);
	if (r->token_rejected)
		resp_error(r, 401, "unauthorized", "the bearer token is not valid");
	else
		resp_error(r, 401, "unauthorized", "writes need a bearer token or web server authentication");
	return 0;
}

int
input_wants_page(const struct request *r)
{
	return span_starts_with_cstr(req_param(r, "HTTP_ACCEPT"), "text/html");
}

int
input_form_may_authenticate(const struct request *r)
{
	return r->owner == NULL && req_param(r, "HTTP_AUTHORIZATION").len == 0 &&
	       span_starts_with_cstr(req_param(r, "CONTENT_TYPE"), "multipart/form-data");
}

int
input_form_caller(struct app *app, struct request *r, struct span token)
{
	assert(r->owner == NULL);
	if (token.len)
		r->owner = config_token_owner(app->cfg, token.ptr, token.len);
	r->token_rejected = token.len && r->owner == NULL;
	if (!input_writer(r))
		return 0;
	if (!admit_same_origin(app, r)) {
		r->owner = NULL;
		log_warn("req=%s refused: cross-site form post with a token", r->id);
		resp_error(r, 403, "forbidden", "a form from another site cannot upload here");
		return 0;
	}
	return 1;
}

int
input_reader(struct app *app, struct request *r)
{
	if (!app->cfg->reads_need_auth || r->owner)
		return 1;
	if (r->token_rejected)
		resp_error(r, 401, "unauthorized", "the bearer token is not valid");
	else
		resp_error(r, 401, "unauthorized", "reads need a bearer token or web server authentication");
	return 0;
}

int
input_refused_early(struct app *app, struct request *r)
{
	uint64_t limit = app->cfg->max_upload;

	switch (r->route.id) {
	case ROUTE_DOCUMENTS_CREATE:
		r->back_to_page = input_wants_page(r);
		if (span_starts_with_cstr(req_param(r, "CONTENT_TYPE"), "multipart/form-data"))
			limit += INPUT_FORM_OVERHEAD;
		/* A form may name its caller in a field: the handler reads that
		 * far (and no further) before it knows whether to refuse. */
		if (!input_form_may_authenticate(r) && !input_writer(r))
			return 1;
		if (r->content_length >= 0 && (uint64_t)r->content_length > limit) {
			input_too_large(r);
			return 1;
		}
		return 0;
	case ROUTE_CONTENT_PUT:
		if (!input_writer(r))
			return 1;
		if (r->content_length >= 0 && (uint64_t)r->content_length > limit) {
			input_too_large(r);
			return 1;
		}
		return 0;
	case ROUTE_DOCUMENT_DELETE:
	case ROUTE_DOCUMENTS_DIRECT:
	case ROUTE_DOCUMENT_FINALIZE:
		return !input_writer(r);
	case ROUTE_DOCUMENTS_LIST:
	case ROUTE_DOCUMENT_GET:
	case ROUTE_CONTENT_GET:
		return !input_reader(app, r);
	case ROUTE_METRICS:
		/* Off, the route does not exist; on, it is a writer's view of
		 * the backlog, narrowed to one caller when [metrics] owner says. */
		if (!app->cfg->metrics_enabled) {
			resp_error(r, 404, "not_found", "no such route");
			return 1;
		}
		if (!r->owner) {
			resp_error(r, 401, "unauthorized", r->token_rejected ? "the bearer token is not valid" :
				   "the metrics need a bearer token or web server authentication"
				   " ([metrics] owner, else any caller who may write)");
			return 1;
		}
		if (app->cfg->metrics_owner && strcmp(r->owner, app->cfg->metrics_owner) != 0) {
			resp_error(r, 403, "forbidden", "this caller may not read the metrics");
			return 1;
		}
		return 0;
	default:
		return 0;
	}
}

int
input_content_type_ok(struct span ct)
{
	size_t i;

	if (ct.len == 0 || ct.len >= DOC_CTYPE_MAX)
		return 0;
	for (i = 0; i < ct.len; i++)
		if ((unsigned char)ct.ptr[i] < 0x20 || (unsigned char)ct.ptr[i] > 0x7e)
			return 0;
	return 1;
}

int
input_name(struct request *r, struct span name)
{
	enum document_name_err e = document_name_check(name);

	if (e == DOCNAME_OK)
		return 1;
	req_drain(r, 0);
	resp_error(r, 400, "bad_name", document_name_err_string(e));
	return 0;
}

int
input_idempotency_key(struct request *r, char *out, size_t outlen, int *present)
{
	struct span k = req_param(r, "HTTP_IDEMPOTENCY_KEY");
	size_t i;

	*present = k.len > 0;
	if (!*present)
		return 0;
	if (k.len > INPUT_IDEM_KEY_MAX)
		return -1;
	for (i = 0; i < k.len; i++)
		if ((unsigned char)k.ptr[i] <= 0x20 || (unsigned char)k.ptr[i] > 0x7e)
			return -1;
	return copy_span(out, outlen, k);
}

int
input_if_match_holds(void *ctx, const struct doc *d)
{
	const struct span *if_match = ctx;
	char etag[64];

	render_doc_etag(d, etag, sizeof etag);
	return http_etag_match(*if_match, span_from_cstr(etag)) == HTTP_ETAG_MATCH;
}

/*
 * ?prefix=P: the names that begin with P.  A prefix follows a name's rules
 * (a valid name is a valid prefix), except that "." and ".." are fine: they
 * begin ".profile".  Empty means no filter, as an empty form field sends it.
 */
static int
list_prefix(struct request *r, struct input_list *lq)
{
	enum http_query_result q = http_query_get(r->query, "prefix", &lq->prefix);
	enum document_name_err e;

	if (q == HTTP_QUERY_NOT_FOUND || (q == HTTP_QUERY_FOUND && lq->prefix.len == 0))
		return 1;
	e = q == HTTP_QUERY_FOUND ? document_name_check(buf_span(&lq->prefix)) : DOCNAME_BAD_UTF8;
	if (e == DOCNAME_OK || e == DOCNAME_DOT_NAME)
		return 1;
	resp_error(r, 400, "bad_prefix", q == HTTP_QUERY_FOUND ? document_name_err_string(e) :
		   "the prefix parameter is malformed");
	return 0;
}

int
input_list(struct request *r, unsigned default_limit, struct input_list *lq)
{
	struct buf v = BUF_INIT(32);
	enum http_query_result q;
	int ok = 0;

	lq->limit = default_limit;
	lq->after = 0;
	q = http_query_get(r->query, "limit", &v);
	if ((q == HTTP_QUERY_FOUND &&
	     (http_parse_uint(buf_span(&v), INPUT_LIST_MAX, &lq->limit) != HTTP_UINT_OK || lq->limit == 0)) ||
	    (q != HTTP_QUERY_FOUND && q != HTTP_QUERY_NOT_FOUND)) {
		resp_error(r, 400, "bad_limit", "limit must be an integer from 1 to 1000");
		goto out;
	}
	q = http_query_get(r->query, "after", &v);
	if ((q == HTTP_QUERY_FOUND && http_parse_uint(buf_span(&v), UINT64_MAX, &lq->after) != HTTP_UINT_OK) ||
	    (q != HTTP_QUERY_FOUND && q != HTTP_QUERY_NOT_FOUND)) {
		resp_error(r, 400, "bad_cursor", "after must be a cursor from a previous answer");
		goto out;
	}
	q = http_query_get(r->query, "order", &v);
	if (q == HTTP_QUERY_FOUND && span_eq_cstr(buf_span(&v), "newest")) {
		lq->order = DOC_ORDER_NEWEST;
	} else if (q == HTTP_QUERY_FOUND && span_eq_cstr(buf_span(&v), "oldest")) {
		lq->order = DOC_ORDER_OLDEST;
	} else if (q != HTTP_QUERY_NOT_FOUND) {
		resp_error(r, 400, "bad_order", "order must be oldest or newest");
		goto out;
	}
	ok = list_prefix(r, lq);
out:
	buf_free(&v);
	return ok;
}
