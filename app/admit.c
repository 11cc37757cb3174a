/* admit.c - see admit.h. */
#include <string.h>

#include "admit.h"
#include "base/log.h"
#include "parse/http_parse.h"
#include "parse/origin.h"

/* Reads change nothing (RFC 9110 9.2.1), so a cross-site GET may pass: it
 * can make the browser fetch, never read the answer (no CORS here). */
static int
state_changing(struct span method)
{
	return !span_eq_cstr(method, "GET") && !span_eq_cstr(method, "HEAD") &&
	       !span_eq_cstr(method, "OPTIONS");
}

/* The scheme the server was reached by (RFC 3875 leaves it to servers:
 * Apache and lighttpd set HTTPS=on and REQUEST_SCHEME). */
static int
request_https(const struct request *r)
{
	struct span on = req_param(r, "HTTPS");

	return span_eq_nocase_cstr(on, "on") || span_eq_cstr(on, "1") ||
	       span_eq_nocase_cstr(req_param(r, "REQUEST_SCHEME"), "https");
}

/*
 * The origin the client addressed: [auth] public_origin when set; else the
 * request's scheme and Host, where X-Forwarded-Proto/-Host stand in only
 * when the peer is a trusted proxy (anyone else could name any host).
 * 0 when it cannot be worked out (no Host).
 */
static int
expected_origin(const struct app *app, const struct request *r, struct origin *out)
{
	const struct bindery_config *cfg = app->cfg;
	struct span host = req_param(r, "HTTP_HOST");
	int https = request_https(r);

	if (cfg->has_public_origin) {
		*out = cfg->public_origin;
		return 1;
	}
	if (origin_addr_in(req_param(r, "REMOTE_ADDR"), cfg->trusted_proxies,
			   cfg->ntrusted_proxies)) {
		struct span fhost = origin_last_element(req_param(r, "HTTP_X_FORWARDED_HOST"));
		struct span fproto = origin_last_element(req_param(r, "HTTP_X_FORWARDED_PROTO"));

		if (fhost.len)
			host = fhost;
		if (fproto.len)
			https = span_eq_nocase_cstr(fproto, "https");
	}
	return origin_from_host(host, https, out) == ORIGIN_PARSE_OK;
}

int
admit_same_origin(const struct app *app, const struct request *r)
{
	struct origin expected;
	struct origin_headers h;
	int known = expected_origin(app, r, &expected);

	h.sec_fetch_site = req_param(r, "HTTP_SEC_FETCH_SITE");
	h.origin = req_param(r, "HTTP_ORIGIN");
	h.referer = req_param(r, "HTTP_REFERER");
	return origin_check(&h, known ? &expected : NULL) != ORIGIN_CROSS;
}

int
admit_request(struct app *app, struct request *r)
{
	struct span user = req_param(r, "REMOTE_USER");
	enum owner_name_err e;

	if (user.len == 0)
		return 1;	/* anonymous, or a bearer token: nothing ambient */
	if ((e = owner_name_check(user)) != OWNER_NAME_OK) {
		/* Stored as given it would fail (strict SQL) or be cut short into
		 * another name (lax SQL): refuse before anything is stored. */
		log_warn("req=%s refused: REMOTE_USER unusable (%s)", r->id, owner_name_err_string(e));
		resp_error(r, 403, "forbidden", owner_name_err_string(e));
		return 0;
	}
	if (state_changing(r->method) && !admit_same_origin(app, r)) {
		log_warn("req=%s refused: cross-site %.*s for a web-server-authenticated caller", r->id,
			 (int)(r->method.len > 16 ? 16 : r->method.len), r->method.ptr);
		resp_error(r, 403, "forbidden",
			   "a cross-site request cannot use the web server's authentication");
		return 0;
	}
	return 1;
}
