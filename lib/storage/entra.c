/* entra.c - see entra.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>
#include <jansson.h>

#include "base/buf.h"
#include "base/counters.h"
#include "base/log.h"
#include "storage/entra.h"
#include "storage/jwt.h"
#include "storage/secret_cache.h"

/* An access token is a JWT of a few KiB; an answer past this is not one. */
#define ANSWER_MAX (64 * 1024)
#define TOKEN_MAX (16 * 1024)
#define FILE_MAX (16 * 1024)

struct entra_credential {
	enum entra_kind kind;
	char *token_url;	/* the authority's token endpoint, or IMDS's */
	char *tenant_id, *client_id;
	char *secret_file, *federated_token_file;
	char *ca_file, *ca_path;
	char *identity;		/* cache key: authority, tenant, client */
	char cache_name[80];
	struct jwt_signer *signer;	/* ENTRA_CLIENT_CERTIFICATE */
	struct secret_cache *cache;	/* NULL: memory only */
	CURL *easy;
	char *token;		/* the current token, or NULL */
	int64_t expires;	/* its expiry */
	int64_t renew_at;	/* when it is to be renewed: before expires */
	struct entra_stats stats;
};

const char *
entra_err_name(enum entra_err e)
{
	static const char *const names[] = {
		"ENTRA_OK", "ENTRA_NOMEM", "ENTRA_BAD_SETTINGS", "ENTRA_CREDENTIAL_FILE",
		"ENTRA_UNREACHABLE", "ENTRA_REFUSED", "ENTRA_FAILED",
	};

	return (size_t)e < sizeof names / sizeof names[0] ? names[e] : "ENTRA_?";
}

const char *
entra_kind_name(enum entra_kind k)
{
	switch (k) {
	case ENTRA_CLIENT_SECRET: return "client secret";
	case ENTRA_CLIENT_CERTIFICATE: return "client certificate";
	case ENTRA_FEDERATED_TOKEN: return "federated token";
	case ENTRA_MANAGED_IDENTITY: return "managed identity";
	}
	return "credential";
}

static enum entra_err
fail(struct entra_error *why, enum entra_err e, long status, const char *code,
    const char *fmt, ...) BINDERY_PRINTF(5, 6);

static enum entra_err
fail(struct entra_error *why, enum entra_err e, long status, const char *code,
    const char *fmt, ...)
{
	va_list ap;

	why->err = e;
	why->http_status = status;
	snprintf(why->code, sizeof why->code, "%s", code ? code : "");
	va_start(ap, fmt);
	vsnprintf(why->message, sizeof why->message, fmt, ap);
	va_end(ap);
	return e;
}

static char *
dup_or_null(const char *s, int *nomem)
{
	char *d;

	if (s == NULL)
		return NULL;
	d = strdup(s);
	if (d == NULL)
		*nomem = 1;
	return d;
}

static void
wipe_free(char *s)
{
	if (s != NULL) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

void
entra_credential_free(struct entra_credential *c)
{
	if (c == NULL)
		return;
	if (c->easy != NULL) {
		curl_easy_cleanup(c->easy);
		curl_global_cleanup();
	}
	jwt_signer_free(c->signer);
	secret_cache_free(c->cache);
	wipe_free(c->token);
	free(c->token_url);
	free(c->tenant_id);
	free(c->client_id);
	free(c->secret_file);
	free(c->federated_token_file);
	free(c->ca_file);
	free(c->ca_path);
	free(c->identity);
	free(c);
}

enum entra_err
entra_credential_new(const struct entra_settings *s, struct entra_credential **out,
    struct entra_error *why)
{
	struct entra_credential *c = NULL;
	struct buf url = BUF_INIT(4096), id = BUF_INIT(4096);
	const char *authority = s->authority ? s->authority : ENTRA_AUTHORITY_DEFAULT;
	const char *parts[2];
	char jwhy[256], cwhy[256];
	int nomem = 0;
	enum entra_err e;

	*out = NULL;
	memset(why, 0, sizeof *why);
	if (s->kind != ENTRA_MANAGED_IDENTITY && (s->tenant_id == NULL || s->client_id == NULL)) {
		e = fail(why, ENTRA_BAD_SETTINGS, 0, NULL, "tenant_id and client_id are required");
		goto out;
	}
	if ((s->kind == ENTRA_CLIENT_SECRET && s->secret_file == NULL) ||
	    (s->kind == ENTRA_CLIENT_CERTIFICATE && s->certificate == NULL) ||
	    (s->kind == ENTRA_FEDERATED_TOKEN && s->federated_token_file == NULL)) {
		e = fail(why, ENTRA_BAD_SETTINGS, 0, NULL, "the %s needs its file",
		    entra_kind_name(s->kind));
		goto out;
	}
	c = calloc(1, sizeof *c);
	if (c == NULL)
		goto nomem;
	c->kind = s->kind;
	if (s->kind == ENTRA_MANAGED_IDENTITY) {
		if (buf_append_cstr(&url, s->imds_endpoint ? s->imds_endpoint : ENTRA_IMDS_DEFAULT) != BUF_OK ||
		    buf_appendf(&id, "imds\n%s\n%s", buf_cstr(&url),
		    s->client_id ? s->client_id : "(system-assigned)") != BUF_OK)
			goto nomem;
	} else {
		/* {authority}/{tenant}/oauth2/v2.0/token: the v2 endpoint takes a scope. */
		if (buf_appendf(&url, "%s%s%s/oauth2/v2.0/token", authority,
		    authority[0] && authority[strlen(authority) - 1] == '/' ? "" : "/",
		    s->tenant_id) != BUF_OK ||
		    buf_appendf(&id, "%s\n%s\n%s", authority, s->tenant_id, s->client_id) != BUF_OK)
			goto nomem;
	}
	c->token_url = buf_take(&url);
	c->identity = buf_take(&id);
	c->tenant_id = dup_or_null(s->tenant_id, &nomem);
	c->client_id = dup_or_null(s->client_id, &nomem);
	c->secret_file = dup_or_null(s->secret_file, &nomem);
	c->federated_token_file = dup_or_null(s->federated_token_file, &nomem);
	c->ca_file = dup_or_null(s->ca_file, &nomem);
	c->ca_path = dup_or_null(s->ca_path, &nomem);
	if (nomem || c->token_url == NULL || c->identity == NULL)
		goto nomem;
	parts[0] = c->identity;
	parts[1] = ENTRA_STORAGE_SCOPE;
	secret_cache_name(parts, 2, ".token", c->cache_name);
	if (s->kind == ENTRA_CLIENT_CERTIFICATE &&
	    jwt_signer_load(s->certificate, &c->signer, jwhy, sizeof jwhy) != JWT_OK) {
		e = fail(why, ENTRA_CREDENTIAL_FILE, 0, NULL, "client certificate: %s", jwhy);
		goto out;
	}
	if (s->cache_dir != NULL &&
	    secret_cache_open(s->cache_dir, &c->cache, cwhy, sizeof cwhy) != SECRET_CACHE_OK)
		/* Correct without it, only each process fetches its own. */
		log_warn("token cache not used: %s; tokens stay in this process's memory", cwhy);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		e = fail(why, ENTRA_FAILED, 0, NULL, "curl_global_init failed");
		goto out;
	}
	c->easy = curl_easy_init();
	if (c->easy == NULL) {
		curl_global_cleanup();
		goto nomem;
	}
	*out = c;
	c = NULL;
	e = ENTRA_OK;
	goto out;
nomem:
	e = fail(why, ENTRA_NOMEM, 0, NULL, "out of memory");
out:
	buf_free(&url);
	buf_free(&id);
	entra_credential_free(c);
	return e;
}

const char *
entra_identity(const struct entra_credential *c)
{
	return c->identity;
}

enum entra_kind
entra_kind(const struct entra_credential *c)
{
	return c->kind;
}

struct secret_cache *
entra_cache(struct entra_credential *c)
{
	return c->cache;
}

void
entra_stats(const struct entra_credential *c, struct entra_stats *out)
{
	*out = c->stats;
	out->expires = c->token ? c->expires : 0;
}

/* Read a small secret file whole, trailing newlines dropped. */
static enum entra_err
read_secret_file(const char *path, const char *what, struct buf *out, struct entra_error *why)
{
	FILE *f = fopen(path, "re");
	char chunk[4096];
	size_t n;
	enum entra_err e = ENTRA_OK;

	buf_reset(out);
	if (f == NULL)
		return fail(why, ENTRA_CREDENTIAL_FILE, 0, NULL, "%s: cannot read %s: %s", what, path,
		    strerror(errno));
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
		if (buf_append(out, chunk, n) != BUF_OK) {
			e = fail(why, ENTRA_CREDENTIAL_FILE, 0, NULL, "%s: %s is larger than %d bytes",
			    what, path, FILE_MAX);
			break;
		}
	explicit_bzero(chunk, sizeof chunk);
	fclose(f);
	while (e == ENTRA_OK && out->len > 0 &&
	    (out->ptr[out->len - 1] == '\n' || out->ptr[out->len - 1] == '\r'))
		out->ptr[--out->len] = '\0';
	if (e == ENTRA_OK && out->len == 0)
		e = fail(why, ENTRA_CREDENTIAL_FILE, 0, NULL, "%s: %s is empty", what, path);
	return e;
}

/* Append value percent-encoded (as a form or query wants it) to out. */
static int
escape_append(CURL *easy, struct buf *out, const char *value)
{
	char *enc = curl_easy_escape(easy, value, 0);
	int rc;

	if (enc == NULL)
		return -1;
	rc = buf_append_cstr(out, enc) == BUF_OK ? 0 : -1;
	explicit_bzero(enc, strlen(enc));
	curl_free(enc);
	return rc;
}

/* Append "&name=value" (the first without '&'), value form-encoded. */
static int
form_add(CURL *easy, struct buf *body, const char *name, const char *value)
{
	if (buf_appendf(body, "%s%s=", body->len ? "&" : "", name) != BUF_OK)
		return -1;
	return escape_append(easy, body, value);
}

/* The token request's body for the client-credentials grant. */
static enum entra_err
grant_body(struct entra_credential *c, int64_t now, struct buf *body, struct entra_error *why)
{
	struct buf secret = BUF_INIT(FILE_MAX);
	const char *assertion_type = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
	enum entra_err e = ENTRA_OK;

	if (form_add(c->easy, body, "client_id", c->client_id) != 0 ||
	    form_add(c->easy, body, "scope", ENTRA_STORAGE_SCOPE) != 0 ||
	    form_add(c->easy, body, "grant_type", "client_credentials") != 0)
		goto nomem;
	switch (c->kind) {
	case ENTRA_CLIENT_SECRET:
		/* Read at each fetch: a rotated secret needs no restart. */
		e = read_secret_file(c->secret_file, "client secret", &secret, why);
		if (e == ENTRA_OK && form_add(c->easy, body, "client_secret", buf_cstr(&secret)) != 0)
			goto nomem;
		break;
	case ENTRA_FEDERATED_TOKEN:
		/* The platform rewrites the file before its token expires. */
		e = read_secret_file(c->federated_token_file, "federated token", &secret, why);
		if (e == ENTRA_OK && (form_add(c->easy, body, "client_assertion_type", assertion_type) != 0 ||
		    form_add(c->easy, body, "client_assertion", buf_cstr(&secret)) != 0))
			goto nomem;
		break;
	case ENTRA_CLIENT_CERTIFICATE:
		/* The assertion's audience is the token endpoint itself. */
		if (jwt_client_assertion(c->signer, c->client_id, c->token_url, now, &secret) != JWT_OK)
			e = fail(why, ENTRA_CREDENTIAL_FILE, 0, NULL,
			    "client certificate: cannot sign the client assertion");
		else if (form_add(c->easy, body, "client_assertion_type", assertion_type) != 0 ||
		    form_add(c->easy, body, "client_assertion", buf_cstr(&secret)) != 0)
			goto nomem;
		break;
	case ENTRA_MANAGED_IDENTITY:
		e = fail(why, ENTRA_BAD_SETTINGS, 0, NULL, "a managed identity has no grant body");
		break;
	}
	goto out;
nomem:
	e = fail(why, ENTRA_NOMEM, 0, NULL, "out of memory");
out:
	if (secret.ptr != NULL)
		explicit_bzero(secret.ptr, secret.len);
	buf_free(&secret);
	return e;
}

static size_t
collect(char *p, size_t size, size_t n, void *ctx)
{
	struct buf *b = ctx;

	return buf_append(b, p, size * n) == BUF_OK ? size * n : 0;
}

/* A token goes into an HTTP header: only the characters of a JWT. */
static int
token_chars_ok(const char *t, size_t n)
{
	size_t i;

	if (n == 0 || n > TOKEN_MAX)
		return 0;
	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)t[i];

		if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
		    (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.' ||
		    ch == '~' || ch == '+' || ch == '/' || ch == '='))
			return 0;
	}
	return 1;
}

/* A JSON number or a numeric string ("3599", as IMDS sends). */
static int
json_seconds(json_t *v, int64_t *out)
{
	char *end;
	long long n;

	if (json_is_integer(v)) {
		*out = (int64_t)json_integer_value(v);
		return 0;
	}
	if (!json_is_string(v))
		return -1;
	errno = 0;
	n = strtoll(json_string_value(v), &end, 10);
	if (errno != 0 || end == json_string_value(v) || *end != '\0')
		return -1;
	*out = (int64_t)n;
	return 0;
}

/* The authority's refusal: its error and the first sentence of its
 * description (which carries the AADSTS code, then trace ids). */
static enum entra_err
answer_error(struct entra_credential *c, long status, json_t *root, struct entra_error *why)
{
	const char *err = json_string_value(json_object_get(root, "error"));
	const char *desc = json_string_value(json_object_get(root, "error_description"));
	char first[200] = "";
	size_t n;

	if (desc != NULL) {
		n = strcspn(desc, "\r\n");
		if (n >= sizeof first)
			n = sizeof first - 1;
		memcpy(first, desc, n);
		first[n] = '\0';
	}
	return fail(why, status >= 500 ? ENTRA_FAILED : ENTRA_REFUSED, status, err ? err : "",
	    "%s %s: %s answered %ld%s%s%s%s", entra_kind_name(c->kind),
	    c->client_id ? c->client_id : "(system-assigned)",
	    c->kind == ENTRA_MANAGED_IDENTITY ? "the managed identity endpoint" : "the authority",
	    status, err ? " " : "", err ? err : "", first[0] ? ": " : "", first);
}

/* Ask the authority (or IMDS) for a token; on success c->token/expires. */
static enum entra_err
fetch(struct entra_credential *c, int64_t now, long timeout_ms, struct entra_error *why)
{
	struct buf body = BUF_INIT(64 * 1024), answer = BUF_INIT(ANSWER_MAX), url = BUF_INIT(8192);
	struct curl_slist *hdr = NULL, *n;
	char errbuf[CURL_ERROR_SIZE] = "";
	json_t *root = NULL;
	json_error_t jerr;
	const char *tok;
	int64_t secs = 0, on = 0;
	long status = 0;
	CURLcode cc;
	enum entra_err e;

	curl_easy_reset(c->easy);
	if (c->kind == ENTRA_MANAGED_IDENTITY) {
		/* IMDS: a GET on the link-local address, with Metadata: true
		 * (which a forwarded request from outside cannot carry). */
		if (buf_appendf(&url, "%s?api-version=2018-02-01&resource=", c->token_url) != BUF_OK ||
		    escape_append(c->easy, &url, "https://storage.azure.com/") != 0 ||
		    (c->client_id != NULL && (buf_append_cstr(&url, "&client_id=") != BUF_OK ||
		    escape_append(c->easy, &url, c->client_id) != 0)))
			goto nomem;
		if ((n = curl_slist_append(hdr, "Metadata: true")) == NULL)
			goto nomem;
		hdr = n;
		curl_easy_setopt(c->easy, CURLOPT_HTTPGET, 1L);
	} else {
		e = grant_body(c, now, &body, why);
		if (e != ENTRA_OK)
			goto out;
		if (buf_append_cstr(&url, c->token_url) != BUF_OK)
			goto nomem;
		if ((n = curl_slist_append(hdr, "Content-Type: application/x-www-form-urlencoded")) == NULL)
			goto nomem;
		hdr = n;
		curl_easy_setopt(c->easy, CURLOPT_POSTFIELDS, buf_cstr(&body));
		curl_easy_setopt(c->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body.len);
	}
	if ((n = curl_slist_append(hdr, "Accept: application/json")) == NULL)
		goto nomem;
	hdr = n;
	curl_easy_setopt(c->easy, CURLOPT_URL, buf_cstr(&url));
	curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(c->easy, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c->easy, CURLOPT_WRITEDATA, &answer);
	curl_easy_setopt(c->easy, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->easy, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 5000 ? timeout_ms : 5000L);
	curl_easy_setopt(c->easy, CURLOPT_TIMEOUT_MS, timeout_ms);
	/* A token endpoint that redirects is not one to follow with a secret. */
	curl_easy_setopt(c->easy, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c->easy, CURLOPT_PROTOCOLS_STR, "http,https");
	if (c->ca_file != NULL)
		curl_easy_setopt(c->easy, CURLOPT_CAINFO, c->ca_file);
	if (c->ca_path != NULL)
		curl_easy_setopt(c->easy, CURLOPT_CAPATH, c->ca_path);
	cc = curl_easy_perform(c->easy);
	if (cc != CURLE_OK) {
		e = fail(why, ENTRA_UNREACHABLE, 0, NULL, "%s %s: %s %s is out of reach: %s",
		    entra_kind_name(c->kind), c->client_id ? c->client_id : "(system-assigned)",
		    c->kind == ENTRA_MANAGED_IDENTITY ? "the managed identity endpoint" : "the authority",
		    c->token_url, errbuf[0] ? errbuf : curl_easy_strerror(cc));
		goto out;
	}
	curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &status);
	root = json_loadb(answer.ptr ? answer.ptr : "", answer.len, 0, &jerr);
	if (status < 200 || status > 299) {
		if (root != NULL && json_is_object(root)) {
			e = answer_error(c, status, root, why);
		} else {
			e = fail(why, status >= 500 || status < 400 ? ENTRA_FAILED : ENTRA_REFUSED, status,
			    NULL, "%s %s: %s answered %ld without an error body",
			    entra_kind_name(c->kind), c->client_id ? c->client_id : "(system-assigned)",
			    c->token_url, status);
		}
		goto out;
	}
	tok = root ? json_string_value(json_object_get(root, "access_token")) : NULL;
	if (tok == NULL || !token_chars_ok(tok, strlen(tok)) ||
	    ((json_seconds(json_object_get(root, "expires_on"), &on) != 0 || on <= now) &&
	     (json_seconds(json_object_get(root, "expires_in"), &secs) != 0 || secs <= 0))) {
		e = fail(why, ENTRA_FAILED, status, NULL, "%s %s: the answer of %s is not a token",
		    entra_kind_name(c->kind), c->client_id ? c->client_id : "(system-assigned)",
		    c->token_url);
		goto out;
	}
	wipe_free(c->token);
	c->token = strdup(tok);
	if (c->token == NULL)
		goto nomem;
	/* expires_in counts from the answer, which came after now. */
	c->expires = on > now ? on : now + secs;
	e = ENTRA_OK;
	goto out;
nomem:
	e = fail(why, ENTRA_NOMEM, 0, NULL, "out of memory");
out:
	if (root != NULL) {
		/* The token's text inside the parsed tree goes with it. */
		json_decref(root);
	}
	if (answer.ptr != NULL)
		explicit_bzero(answer.ptr, answer.len);
	buf_free(&answer);
	if (body.ptr != NULL)
		explicit_bzero(body.ptr, body.len);
	buf_free(&body);
	buf_free(&url);
	curl_slist_free_all(hdr);
	return e;
}

/* Renew this long before expiry: the margin, or half a short lifetime. */
static int64_t
margin_for(int64_t lifetime)
{
	return lifetime / 2 < ENTRA_REFRESH_MARGIN_S ? lifetime / 2 : ENTRA_REFRESH_MARGIN_S;
}

/*
 * A cache file's expiry is the token's renewal time, so every process
 * renews at the point the fetcher chose; its text is "<expiry>\n<token>".
 */
static int
adopt_cached(struct entra_credential *c, const struct buf *cached, int64_t renew_at)
{
	const char *nl = memchr(cached->ptr, '\n', cached->len);
	char *end, *tok;
	long long exp;

	if (nl == NULL)
		return -1;
	errno = 0;
	exp = strtoll(cached->ptr, &end, 10);
	if (errno != 0 || end != nl || exp < renew_at ||
	    !token_chars_ok(nl + 1, cached->len - (size_t)(nl + 1 - cached->ptr)))
		return -1;
	tok = strdup(nl + 1);
	if (tok == NULL)
		return -1;
	wipe_free(c->token);
	c->token = tok;
	c->expires = (int64_t)exp;
	c->renew_at = renew_at;
	return 0;
}

static void
cache_store(struct entra_credential *c)
{
	struct buf text = BUF_INIT(TOKEN_MAX + 32);

	if (buf_appendf(&text, "%lld\n%s", (long long)c->expires, c->token) != BUF_OK ||
	    secret_cache_put(c->cache, c->cache_name, text.ptr, text.len, c->renew_at) !=
	    SECRET_CACHE_OK)
		log_warn("could not write the token cache in %s", secret_cache_path(c->cache));
	if (text.ptr != NULL)
		explicit_bzero(text.ptr, text.len);
	buf_free(&text);
}

enum entra_err
entra_token(struct entra_credential *c, int64_t now, long timeout_ms, const char **token,
    int64_t *expires, struct entra_error *why)
{
	struct buf cached = BUF_INIT(TOKEN_MAX + 32);
	int64_t renew_at = 0;
	enum entra_err e;

	memset(why, 0, sizeof *why);
	*token = NULL;
	*expires = 0;
	if (timeout_ms <= 0)
		timeout_ms = 10000;
	if (c->token != NULL && now < c->renew_at)
		goto have;
	if (c->cache != NULL &&
	    secret_cache_get(c->cache, c->cache_name, now, 0, &cached, &renew_at) == SECRET_CACHE_OK &&
	    adopt_cached(c, &cached, renew_at) == 0) {
		c->stats.from_cache++;
		goto have;
	}
	e = fetch(c, now, timeout_ms, why);
	if (e != ENTRA_OK) {
		c->stats.failed++;
		counters_add(COUNTER_ENTRA_TOKEN_FAILURES, 1);
		goto out;
	}
	c->renew_at = c->expires - margin_for(c->expires - now);
	c->stats.fetched++;
	counters_add(COUNTER_ENTRA_TOKENS, 1);
	if (c->cache != NULL)
		cache_store(c);
have:
	*token = c->token;
	*expires = c->expires;
	e = ENTRA_OK;
out:
	if (cached.ptr != NULL)
		explicit_bzero(cached.ptr, cached.len);
	buf_free(&cached);
	return e;
}
