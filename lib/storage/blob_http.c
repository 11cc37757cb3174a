/*
 * blob_http.c - the HTTP engine of the Blob REST client, over one libcurl
 * multi handle: client lifecycle, request building and signing, the
 * easy-handle pool, execution, retries with backoff, answer headers and
 * results.  Its internal interface (blob_request_*, blob_exec_*,
 * blob_result_*) is in blob_internal.h.
 *
 * Every request is a struct blob_request: method, encoded path and query,
 * headers, an optional in-memory body, and where the answer goes.  All
 * requests, serial or parallel, run through the client's multi handle, so
 * they share its connection cache (keep-alive) and the retry logic.
 */
#define _GNU_SOURCE	/* memmem */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <ctype.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <gnutls/gnutls.h>
#include <gnutls/crypto.h>

#include "base/clock.h"
#include "base/counters.h"
#include "base/log.h"
#include "storage/blob.h"
#include "storage/blob_internal.h"
#include "storage/sign.h"

#define ANSWER_MAX	((size_t)32 * 1024 * 1024)	/* one XML page or error body */
/* curl's smallest upload buffer.  Each easy handle keeps one, so it counts
 * blocks_in_flight times: curl's default of 64 KiB cost 192 KiB more private
 * memory at four blocks in flight and bought no speed we could measure (the
 * responder's CPU for a 256 MiB create: 1.04-1.17 s with 64 KiB, 1.08-1.20 s
 * with 16 KiB); 256 KiB to 2 MiB bought none on loopback either. */
#define UPLOAD_BUFSIZE	(16L * 1024)
#define DOWNLOAD_BUFSIZE (256L * 1024)
/* The receive buffer of every request but a GET: its answer is headers and
 * at most a short error body.  Kept by each easy handle, like the upload
 * buffer; curl's default is 16 KiB. */
#define ANSWER_BUFSIZE	(4L * 1024)
#define BACKOFF_BASE_MS	200
#define BACKOFF_CAP_MS	10000
#define RETRY_AFTER_CAP_MS 60000
#define CLOCK_SKEW_NOTE_S 300	/* a Date this far from ours is worth a word */

static const char *const status_names[] = {
	"BLOB_OK", "BLOB_EXISTS", "BLOB_EXISTS_MAYBE_OURS",
	"BLOB_CONDITION_NOT_MET", "BLOB_NOT_FOUND", "BLOB_AUTH_FAILED",
	"BLOB_TRANSIENT", "BLOB_NOT_SUPPORTED", "BLOB_DEADLINE", "BLOB_ABORTED",
	"BLOB_BAD_INPUT", "BLOB_NOMEM", "BLOB_FAILED", "BLOB_REJECTED",
	"BLOB_CREDENTIAL",
};

const char *
blob_status_name(enum blob_status s)
{
	if ((unsigned)s < ARRAY_LEN(status_names))
		return status_names[s];
	return "BLOB_?";
}

void
blob_log_failure(const char *step, const char *name, const struct blob_result *r)
{
	log_warn("%s %s: %s (HTTP %ld %s, request id %s): %s", step, name,
	    blob_status_name(r->status), r->http_status, r->code,
	    r->request_id[0] ? r->request_id : "none", r->message);
}

void
blob_result_clear(struct blob_result *res)
{
	memset(res, 0, sizeof *res);
}

int
blob_result_set(struct blob_result *res, enum blob_status st, const char *msg)
{
	res->status = st;
	if (msg != NULL && copy_cstr(res->message, sizeof res->message, msg) != 0) {
		/* truncated messages are acceptable */
	}
	return st;
}

int
blob_result_nomem(struct blob_result *res)
{
	return blob_result_set(res, BLOB_NOMEM, "out of memory");
}

/* ---- requests ---------------------------------------------------------- */

void
blob_request_init(struct blob_request *r, const char *method)
{
	memset(r, 0, sizeof *r);
	r->method = method;
	buf_init(&r->path, 8192);
	buf_init(&r->query, 64 * 1024);
	buf_init(&r->answer, ANSWER_MAX);
	buf_init(&r->bearer, 20 * 1024);
}

void
blob_request_free(struct blob_request *r)
{
	size_t i;

	for (i = 0; i < r->nhdr; i++) {
		free(r->hdr_value[i]);
		free(r->hdr_name[i]);
		r->hdr_name[i] = NULL;
	}
	r->nhdr = 0;
	buf_free(&r->path);
	buf_free(&r->query);
	buf_free(&r->answer);
	if (r->bearer.ptr != NULL)
		explicit_bzero(r->bearer.ptr, r->bearer.len);
	buf_free(&r->bearer);
	/* The list holds the Authorization line too. */
	curl_slist_free_all(r->slist);
	r->slist = NULL;
}

/* name is a literal; value is copied.  Replaces an existing header. */
int
blob_request_header(struct blob_request *r, const char *name, const char *value)
{
	size_t i;
	char *v = strdup(value);

	if (v == NULL)
		return -1;
	for (i = 0; i < r->nhdr; i++) {
		if (strcasecmp(r->hdr[i].name, name) == 0) {
			free(r->hdr_value[i]);
			r->hdr_value[i] = v;
			r->hdr[i].value = v;
			return 0;
		}
	}
	assert(r->nhdr < BLOB_REQUEST_MAX_HEADERS);
	r->hdr[r->nhdr].name = name;
	r->hdr[r->nhdr].value = v;
	r->hdr_value[r->nhdr] = v;
	r->hdr_name[r->nhdr] = NULL;
	r->nhdr++;
	return 0;
}

int
blob_request_meta(struct blob_request *r, const char *name, const char *value)
{
	char hname[80];
	char *owned;
	int n = snprintf(hname, sizeof hname, "x-ms-meta-%s", name);

	if (n < 0 || (size_t)n >= sizeof hname || (owned = strdup(hname)) == NULL)
		return -1;
	if (blob_request_header(r, owned, value) != 0) {
		free(owned);
		return -1;
	}
	/* The header just added (or replaced: then its old name stays its own). */
	if (r->hdr[r->nhdr - 1].name == owned)
		r->hdr_name[r->nhdr - 1] = owned;
	else
		free(owned);
	return 0;
}

int
blob_request_query(struct blob_request *r, const char *name, const char *value)
{
	if (buf_appendf(&r->query, "%s%s=", r->query.len ? "&" : "", name) != BUF_OK)
		return -1;
	if (sign_percent_encode(value, strlen(value), 0, &r->query) != SIGN_OK)
		return -1;
	return 0;
}

int
blob_request_path_container(struct blob_client *c, struct blob_request *r)
{
	if (buf_append_cstr(&r->path, c->path_prefix) != BUF_OK ||
	    buf_append(&r->path, "/", 1) != BUF_OK ||
	    sign_percent_encode(c->container, strlen(c->container), 0,
	    &r->path) != SIGN_OK)
		return -1;
	return 0;
}

int
blob_request_path_blob(struct blob_client *c, struct blob_request *r, const char *name)
{
	if (blob_request_path_container(c, r) != 0 || buf_append(&r->path, "/", 1) != BUF_OK ||
	    sign_percent_encode(name, strlen(name), 1, &r->path) != SIGN_OK)
		return -1;
	return 0;
}

/* Blob names: 1..1024 characters (REST reference, "Naming and referencing
 * containers, blobs, and metadata"). */
int
blob_name_ok(const char *name)
{
	size_t n;

	if (name == NULL)
		return 0;
	n = strlen(name);
	return n >= 1 && n <= 1024;
}

/* ---- curl callbacks ------------------------------------------------------ */

static size_t
read_body(char *dst, size_t size, size_t nmemb, void *ud)
{
	struct blob_request *r = ud;
	size_t n = size * nmemb, left = r->body_len - r->body_off;

	if (n > left)
		n = left;
	if (n)
		memcpy(dst, r->body + r->body_off, n);
	r->body_off += n;
	return n;
}

/*
 * When a kept-alive connection dies under a request (the service closed it
 * as the request went out, or answered early and reset it: Azurite does so
 * on a full disk), curl sends the request again on a new connection, which
 * needs the body from its start.  Without this it cannot, and the request
 * failed with CURLE_SEND_FAIL_REWIND, a 500 to the client where a retry
 * would have done (tests/e2e/faults.sh, "reused").
 */
static int
seek_body(void *ud, curl_off_t offset, int origin)
{
	struct blob_request *r = ud;

	if (origin != SEEK_SET || offset < 0 || (uint64_t)offset > r->body_len)
		return CURL_SEEKFUNC_FAIL;
	r->body_off = (size_t)offset;
	return CURL_SEEKFUNC_OK;
}

int64_t
blob_parse_decimal(const char *s, size_t n)
{
	char tmp[32];
	char *end;
	long long v;

	if (n == 0 || n >= sizeof tmp)
		return -1;
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	errno = 0;
	v = strtoll(tmp, &end, 10);
	if (errno || end == tmp || *end != '\0' || v < 0)
		return -1;
	return v;
}

/* An HTTP-date as unix seconds, or -1. */
static int64_t
http_date_seconds(const char *v, size_t n)
{
	char tmp[64];
	time_t when;

	if (n == 0 || n >= sizeof tmp)
		return -1;
	memcpy(tmp, v, n);
	tmp[n] = '\0';
	when = curl_getdate(tmp, NULL);
	return when == (time_t)-1 ? -1 : (int64_t)when;
}

/* Retry-After is delay-seconds or an HTTP-date (RFC 9110, 10.2.3); the
 * wait in milliseconds, capped, or -1 when the value is neither. */
static long
retry_after_ms(const char *v, size_t n, time_t now)
{
	char tmp[64];
	int64_t s = blob_parse_decimal(v, n);
	time_t when;

	if (s < 0) {
		if (n == 0 || n >= sizeof tmp)
			return -1;
		memcpy(tmp, v, n);
		tmp[n] = '\0';
		if ((when = curl_getdate(tmp, NULL)) == (time_t)-1)
			return -1;
		s = when > now ? (int64_t)(when - now) : 0;
	}
	return (long)(s > RETRY_AFTER_CAP_MS / 1000 ? RETRY_AFTER_CAP_MS : s * 1000);
}

void
blob_copy_field(char *dst, size_t dstsize, const char *v, size_t n)
{
	struct span s = { v, n };

	if (copy_span(dst, dstsize, s) != 0)
		dst[0] = '\0';	/* an oversize value is as good as absent */
}

/* Nothing known yet: the numbers that may be absent are -1. */
static void
answer_headers_reset(struct blob_answer_headers *rh)
{
	memset(rh, 0, sizeof *rh);
	rh->meta_size = rh->content_length = rh->range_total = rh->date = -1;
	rh->retry_after_ms = -1;
}

/* Keep one x-ms-meta-* entry, name (lower-cased, as the service compares
 * them) and value, while there is room. */
static void
answer_meta_keep(struct blob_answer_headers *rh, const char *name, size_t nlen, const char *v,
    size_t n)
{
	size_t at = rh->meta_len, i;

	if (rh->meta_n == BLOB_LIST_META || at + nlen + n + 2 > sizeof rh->meta_text)
		return;
	for (i = 0; i < nlen; i++)
		rh->meta_text[at + i] = (char)tolower((unsigned char)name[i]);
	rh->meta_text[at + nlen] = '\0';
	memcpy(rh->meta_text + at + nlen + 1, v, n);
	rh->meta_text[at + nlen + 1 + n] = '\0';
	rh->meta_at[rh->meta_n][0] = at;
	rh->meta_at[rh->meta_n][1] = at + nlen + 1;
	rh->meta_n++;
	rh->meta_len = at + nlen + n + 2;
}

static size_t
on_header_line(char *line, size_t size, size_t nmemb, void *ud)
{
	struct blob_request *r = ud;
	size_t n = size * nmemb, nlen;
	const char *colon, *v;
	struct blob_answer_headers *rh = &r->rh;
	struct span name;

	if (n >= 5 && memcmp(line, "HTTP/", 5) == 0) {
		const char *sp = memchr(line, ' ', n);

		/* A new status line (after 100 Continue, too) resets what we
		 * know about the answer. */
		answer_headers_reset(rh);
		r->status = sp ? strtol(sp + 1, NULL, 10) : 0;
		return n;
	}
	colon = memchr(line, ':', n);
	if (colon == NULL)
		return n;
	nlen = (size_t)(colon - line);
	name.ptr = line;
	name.len = nlen;
	v = colon + 1;
	while (v < line + n && (*v == ' ' || *v == '\t'))
		v++;
	n = (size_t)(line + n - v);
	while (n > 0 && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' '))
		n--;
	if (nlen > 10 && strncasecmp(line, "x-ms-meta-", 10) == 0) {
		rh->meta_count++;
		answer_meta_keep(rh, line + 10, nlen - 10, v, n);
	}
	if (span_eq_nocase_cstr(name, "ETag"))
		blob_copy_field(rh->etag, sizeof rh->etag, v, n);
	else if (span_eq_nocase_cstr(name, "x-ms-error-code"))
		blob_copy_field(rh->error_code, sizeof rh->error_code, v, n);
	else if (span_eq_nocase_cstr(name, "x-ms-request-id"))
		blob_copy_field(rh->request_id, sizeof rh->request_id, v, n);
	else if (span_eq_nocase_cstr(name, "Content-Type"))
		blob_copy_field(rh->content_type, sizeof rh->content_type, v, n);
	else if (span_eq_nocase_cstr(name, "Content-MD5"))
		blob_copy_field(rh->content_md5, sizeof rh->content_md5, v, n);
	else if (span_eq_nocase_cstr(name, "x-ms-blob-content-md5"))
		blob_copy_field(rh->blob_content_md5, sizeof rh->blob_content_md5, v, n);
	else if (span_eq_nocase_cstr(name, "x-ms-blob-type"))
		blob_copy_field(rh->blob_type, sizeof rh->blob_type, v, n);
	else if (span_eq_nocase_cstr(name, "x-ms-copy-id") ||
	    span_eq_nocase_cstr(name, "x-ms-copy-status"))
		rh->copied = 1;
	else if (span_eq_nocase_cstr(name, "Content-Encoding") ||
	    span_eq_nocase_cstr(name, "Content-Language") ||
	    span_eq_nocase_cstr(name, "Content-Disposition") ||
	    span_eq_nocase_cstr(name, "Cache-Control"))
		rh->content_extras = 1;
	else if (span_eq_nocase_cstr(name, "x-ms-meta-sha256"))
		blob_copy_field(rh->meta_sha256, sizeof rh->meta_sha256, v, n);
	else if (span_eq_nocase_cstr(name, "x-ms-meta-bindery_installation"))
		blob_copy_field(rh->meta_installation, sizeof rh->meta_installation, v, n);
	else if (span_eq_nocase_cstr(name, "Last-Modified"))
		blob_copy_field(rh->last_modified, sizeof rh->last_modified, v, n);
	else if (span_eq_nocase_cstr(name, "Date"))
		rh->date = http_date_seconds(v, n);
	else if (span_eq_nocase_cstr(name, "x-ms-meta-size"))
		rh->meta_size = blob_parse_decimal(v, n);
	else if (span_eq_nocase_cstr(name, "Content-Length"))
		rh->content_length = blob_parse_decimal(v, n);
	else if (span_eq_nocase_cstr(name, "x-ms-tag-count")) {
		int64_t count = blob_parse_decimal(v, n);

		rh->tag_count = (unsigned)(count > 0 ? count : 0);
	} else if (span_eq_nocase_cstr(name, "Content-Range")) {
		const char *slash = memchr(v, '/', n);

		if (slash != NULL)
			rh->range_total = blob_parse_decimal(slash + 1,
			    (size_t)(v + n - slash - 1));
	} else if (span_eq_nocase_cstr(name, "x-ms-retry-after-ms")) {
		int64_t ms = blob_parse_decimal(v, n);

		if (ms >= 0)
			rh->retry_after_ms = (long)(ms > RETRY_AFTER_CAP_MS ?
			    RETRY_AFTER_CAP_MS : ms);
	} else if (span_eq_nocase_cstr(name, "Retry-After") &&
	    rh->retry_after_ms < 0) {
		rh->retry_after_ms = retry_after_ms(v, n, time(NULL));
	}
	return size * nmemb;
}

void
blob_props_from_answer(const struct blob_answer_headers *rh, struct blob_props *p)
{
	memset(p, 0, sizeof *p);
	p->size = (uint64_t)(rh->range_total >= 0 ? rh->range_total :
	    rh->content_length >= 0 ? rh->content_length : 0);
	blob_copy_field(p->content_type, sizeof p->content_type, rh->content_type,
	    strlen(rh->content_type));
	blob_copy_field(p->etag, sizeof p->etag, rh->etag, strlen(rh->etag));
	if (rh->blob_content_md5[0])
		blob_copy_field(p->content_md5, sizeof p->content_md5,
		    rh->blob_content_md5, strlen(rh->blob_content_md5));
	else if (rh->range_total < 0)
		blob_copy_field(p->content_md5, sizeof p->content_md5, rh->content_md5,
		    strlen(rh->content_md5));
	blob_copy_field(p->meta_sha256, sizeof p->meta_sha256, rh->meta_sha256,
	    strlen(rh->meta_sha256));
	blob_copy_field(p->meta_installation, sizeof p->meta_installation,
	    rh->meta_installation, strlen(rh->meta_installation));
	p->meta_size = rh->meta_size;
	blob_copy_field(p->last_modified, sizeof p->last_modified, rh->last_modified,
	    strlen(rh->last_modified));
	p->tag_count = rh->tag_count;
	p->meta_count = rh->meta_count;
	memcpy(p->meta_text, rh->meta_text, rh->meta_len);
	memcpy(p->meta_at, rh->meta_at, sizeof p->meta_at);
	p->meta_n = rh->meta_n;
	blob_copy_field(p->blob_type, sizeof p->blob_type, rh->blob_type,
	    strlen(rh->blob_type));
	p->copied = rh->copied;
	p->content_extras = rh->content_extras;
}

int
blob_request_deliver_headers(struct blob_request *r)
{
	struct blob_props p;

	r->headers_delivered = 1;
	if (r->on_headers == NULL)
		return 0;
	blob_props_from_answer(&r->rh, &p);
	return r->on_headers(r->cb_ctx, &p, p.size);
}

static size_t
on_body(char *data, size_t size, size_t nmemb, void *ud)
{
	struct blob_request *r = ud;
	size_t n = size * nmemb;

	if (r->on_data != NULL && r->status >= 200 && r->status < 300) {
		if (!r->headers_delivered && blob_request_deliver_headers(r) != 0) {
			r->cb_aborted = 1;
			return 0;
		}
		if (n == 0)
			return 0;
		r->delivered += n;
		if (r->on_data(r->cb_ctx, data, n) != 0) {
			r->cb_aborted = 1;
			return 0;
		}
		return n;
	}
	if (buf_append(&r->answer, data, n) != BUF_OK) {
		r->answer_overflow = 1;
		return 0;
	}
	return n;
}

/* ---- the client ------------------------------------------------------------ */

void
blob_client_set_deadline(struct blob_client *c, int64_t deadline_ms)
{
	c->deadline_ms = deadline_ms;
}

int
blob_client_new(const struct blob_settings *s, struct blob_client **out,
    struct blob_result *res)
{
	struct blob_client *c = NULL;
	struct buf key = BUF_INIT(sizeof c->key);
	const char *hoststart, *slash;
	size_t plen;
	int rc;

	*out = NULL;
	blob_result_clear(res);
	if (s == NULL || s->endpoint == NULL || s->account == NULL ||
	    s->container == NULL || s->account[0] == '\0' ||
	    s->container[0] == '\0' ||
	    (s->key_b64 != NULL) + (s->sas != NULL) + (s->entra != NULL) != 1) {
		rc = blob_result_set(res, BLOB_BAD_INPUT, "endpoint, account, container "
		    "and exactly one of key, SAS or Entra are required");
		goto out;
	}
	/* Storage refuses a bearer token over plain HTTP, and so do we. */
	if (s->entra != NULL && strncmp(s->endpoint, "https://", 8) != 0) {
		rc = blob_result_set(res, BLOB_BAD_INPUT, "Entra ID tokens need an https:// endpoint");
		goto out;
	}
	if (strncmp(s->endpoint, "https://", 8) == 0)
		hoststart = s->endpoint + 8;
	else if (strncmp(s->endpoint, "http://", 7) == 0)
		hoststart = s->endpoint + 7;
	else {
		rc = blob_result_set(res, BLOB_BAD_INPUT, "endpoint must be http:// or https://");
		goto out;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		rc = blob_result_set(res, BLOB_FAILED, "curl_global_init failed");
		goto out;
	}
	c = calloc(1, sizeof *c);
	if (c == NULL) {
		curl_global_cleanup();
		rc = blob_result_nomem(res);
		goto out;
	}
	c->https = hoststart - s->endpoint == 8;
	slash = strchr(hoststart, '/');
	c->url_base = slash ? span_dup((struct span){ s->endpoint,
	    (size_t)(slash - s->endpoint) }) : strdup(s->endpoint);
	plen = slash ? strlen(slash) : 0;
	while (plen > 0 && slash[plen - 1] == '/')
		plen--;
	c->path_prefix = span_dup((struct span){ slash ? slash : "", plen });
	c->account = strdup(s->account);
	c->container = strdup(s->container);
	c->sas = s->sas ? strdup(s->sas[0] == '?' ? s->sas + 1 : s->sas) : NULL;
	c->ca_file = s->ca_file ? strdup(s->ca_file) : NULL;
	c->ca_path = s->ca_path ? strdup(s->ca_path) : NULL;
	c->in_flight = s->blocks_in_flight ? s->blocks_in_flight : 4;
	if (c->in_flight > 64)
		c->in_flight = 64;
	c->block_size = s->block_size ? s->block_size : 4 * 1024 * 1024;
	c->single_put_max = s->single_put_max ? s->single_put_max : 4 * 1024 * 1024;
	if (c->single_put_max > c->block_size)
		c->single_put_max = c->block_size;
	c->connect_timeout_ms = s->connect_timeout_ms > 0 ? s->connect_timeout_ms : 10000;
	c->low_speed_time_s = s->low_speed_time_s > 0 ? s->low_speed_time_s : 30;
	c->max_retries = s->max_retries;
	c->multi = curl_multi_init();
	c->easy = calloc(c->in_flight, sizeof *c->easy);
	c->easy_busy = calloc(c->in_flight, sizeof *c->easy_busy);
	c->active = calloc(c->in_flight, sizeof *c->active);
	if (c->url_base == NULL || c->path_prefix == NULL || c->account == NULL ||
	    c->container == NULL || (s->sas && c->sas == NULL) ||
	    (s->ca_file && c->ca_file == NULL) || (s->ca_path && c->ca_path == NULL) ||
	    c->multi == NULL || c->easy == NULL || c->easy_busy == NULL ||
	    c->active == NULL) {
		rc = blob_result_nomem(res);
		goto out;
	}
	if (c->block_size > (size_t)4000 * 1024 * 1024) {
		rc = blob_result_set(res, BLOB_BAD_INPUT, "block_size above the service's 4000 MiB");
		goto out;
	}
	if (s->key_b64 != NULL) {
		if (sign_base64_decode(s->key_b64, strlen(s->key_b64), &key) != SIGN_OK ||
		    key.len == 0) {
			/* Never echo the key, not even a bad one. */
			rc = blob_result_set(res, BLOB_BAD_INPUT, "account key is not valid base64");
			goto out;
		}
		memcpy(c->key, key.ptr, key.len);
		c->keylen = key.len;
	}
	if (s->entra != NULL) {
		struct entra_settings es = *s->entra;
		struct entra_error why;

		/* The authority is trusted as storage is, unless told otherwise. */
		if (es.ca_file == NULL && es.ca_path == NULL) {
			es.ca_file = s->ca_file;
			es.ca_path = s->ca_path;
		}
		if (entra_credential_new(&es, &c->entra, &why) != ENTRA_OK) {
			rc = blob_result_set(res, why.err == ENTRA_NOMEM ? BLOB_NOMEM : BLOB_BAD_INPUT,
			    why.message);
			goto out;
		}
	}
	curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS, (long)c->in_flight + 1);
	*out = c;
	c = NULL;
	rc = BLOB_OK;
out:
	if (key.ptr != NULL)
		memset(key.ptr, 0, key.len);
	buf_free(&key);
	blob_client_free(c);
	return rc;
}

void
blob_client_free(struct blob_client *c)
{
	unsigned i;

	if (c == NULL)
		return;
	for (i = 0; c->easy && i < c->in_flight; i++)
		if (c->easy[i] != NULL)
			curl_easy_cleanup(c->easy[i]);
	if (c->multi)
		curl_multi_cleanup(c->multi);
	free(c->easy);
	free(c->easy_busy);
	free(c->active);
	free(c->url_base);
	free(c->path_prefix);
	free(c->account);
	free(c->container);
	free(c->ca_file);
	free(c->ca_path);
	if (c->sas) {
		memset(c->sas, 0, strlen(c->sas));
		free(c->sas);
	}
	memset(c->key, 0, sizeof c->key);
	entra_credential_free(c->entra);
	explicit_bzero(&c->udk, sizeof c->udk);
	free(c);
	curl_global_cleanup();
}

/* ---- execution ------------------------------------------------------------- */

/* Milliseconds a token fetch may take: what is left of the deadline, at
 * most ten seconds. */
static long
fetch_timeout_ms(const struct blob_client *c)
{
	int64_t left;

	if (c->deadline_ms <= 0)
		return 10000;
	left = c->deadline_ms - clock_now_ms();
	return left < 1 ? 1 : left > 10000 ? 10000 : (long)left;
}

int
blob_entra_authorization(struct blob_client *c, struct buf *out, struct blob_result *res)
{
	struct entra_error why;
	const char *token;
	int64_t expires;

	buf_reset(out);
	if (entra_token(c->entra, (int64_t)time(NULL), fetch_timeout_ms(c), &token, &expires,
	    &why) != ENTRA_OK) {
		blob_result_clear(res);
		(void)blob_result_set(res, why.err == ENTRA_NOMEM ? BLOB_NOMEM : BLOB_CREDENTIAL,
		    why.message);
		/* The code is set only for a refusal, so a caller can tell a
		 * credential the authority refused (fix it) from an authority
		 * out of reach (try again).  Both are 64 bytes: it fits. */
		if (why.err != ENTRA_REFUSED ||
		    copy_cstr(res->code, sizeof res->code, why.code[0] ? why.code : "refused") != 0)
			res->code[0] = '\0';
		return res->status;
	}
	if (buf_appendf(out, "Bearer %s", token) != BUF_OK)
		return blob_result_nomem(res);
	return BLOB_OK;
}


int
blob_deadline_passed(const struct blob_client *c)
{
	return c->deadline_ms > 0 && clock_now_ms() >= c->deadline_ms;
}

/* The service's error text must never carry a credential back to a caller
 * or a log; Azure's own messages do not, but an echo of the request might. */
static void
scrub_message(const struct blob_client *c, struct blob_result *res)
{
	const char *sig = c->sas ? strstr(c->sas, "sig=") : NULL;
	size_t siglen = 0;

	if (sig != NULL) {
		sig += 4;
		siglen = strcspn(sig, "&");
	}
	if (strstr(res->message, "SharedKey") != NULL ||
	    strstr(res->message, "Bearer ") != NULL ||
	    strstr(res->message, "sig=") != NULL ||
	    (siglen >= 8 && memmem(res->message, strlen(res->message), sig,
	    siglen) != NULL))
		(void)blob_result_set(res, res->status, "(service message withheld: it "
		    "quoted request credentials)");
}

static int
slist_add(struct curl_slist **l, const char *name, const char *value)
{
	struct buf line = BUF_INIT(64 * 1024);
	struct curl_slist *n;
	int rc = -1;

	if (buf_appendf(&line, "%s: %s", name, value) != BUF_OK)
		goto out;
	n = curl_slist_append(*l, buf_cstr(&line));
	if (n == NULL)
		goto out;
	*l = n;
	rc = 0;
out:
	buf_free(&line);
	return rc;
}

/* Point easy handle e at r: url (copied by curl), r's headers, limits and
 * callbacks, and how the method and body go out. */
static void
attempt_configure(struct blob_client *c, struct blob_request *r, CURL *e,
    const char *url)
{
	int64_t left_ms;

	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->slist);
	curl_easy_setopt(e, CURLOPT_PRIVATE, r);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, c->low_speed_time_s);
	/* A stalled service must not hold a request past its deadline: each
	 * attempt gets at most the time that is left (0: no limit). */
	left_ms = c->deadline_ms - clock_now_ms();
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, c->deadline_ms > 0 ?
	    (long)(left_ms > 1 ? left_ms : 1) : 0L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	/* TLS verification stays on for https; only where the trusted CAs
	 * come from can be chosen. */
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
	if (c->ca_file != NULL)
		curl_easy_setopt(e, CURLOPT_CAINFO, c->ca_file);
	if (c->ca_path != NULL)
		curl_easy_setopt(e, CURLOPT_CAPATH, c->ca_path);
	r->curl_err[0] = '\0';
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->curl_err);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header_line);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
	/* A download hands its bytes on in pieces of this size: large ones
	 * cost the responder fewer system calls on both sides (req_write).
	 * Every other answer is headers and at most a short error body. */
	curl_easy_setopt(e, CURLOPT_BUFFERSIZE, strcmp(r->method, "GET") == 0 ? DOWNLOAD_BUFSIZE :
	    ANSWER_BUFSIZE);
	if (strcmp(r->method, "HEAD") == 0)
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	else if (strcmp(r->method, "GET") == 0)
		curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
	else if (r->has_body) {
		curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, UPLOAD_BUFSIZE);
		curl_easy_setopt(e, CURLOPT_READFUNCTION, read_body);
		curl_easy_setopt(e, CURLOPT_READDATA, r);
		curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, seek_body);
		curl_easy_setopt(e, CURLOPT_SEEKDATA, r);
		curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)r->body_len);
		if (strcmp(r->method, "PUT") != 0)
			curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method);
	} else
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method);
}

/* Sign and configure one attempt of r on easy handle e. */
static int
attempt_prepare(struct blob_client *c, struct blob_request *r, CURL *e)
{
	struct buf url = BUF_INIT(128 * 1024), auth = BUF_INIT(256);
	char date[32], lenstr[32];
	size_t i;
	int rc = -1;

	curl_easy_reset(e);
	curl_slist_free_all(r->slist);
	r->slist = NULL;
	sign_time_rfc1123(time(NULL), date);
	if (blob_request_header(r, "x-ms-date", date) != 0 ||
	    blob_request_header(r, "x-ms-version", SIGN_VERSION) != 0)
		goto out;
	if (r->has_body) {
		snprintf(lenstr, sizeof lenstr, "%zu", r->body_len);
		if (blob_request_header(r, "Content-Length", lenstr) != 0)
			goto out;
	}
	if (buf_appendf(&url, "%s%s", c->url_base, buf_cstr(&r->path)) != BUF_OK)
		goto out;
	if (r->query.len && buf_appendf(&url, "?%s", buf_cstr(&r->query)) != BUF_OK)
		goto out;
	if (c->sas != NULL) {
		if (buf_appendf(&url, "%s%s", r->query.len ? "&" : "?", c->sas) != BUF_OK)
			goto out;
	} else if (c->entra != NULL) {
		/* attempt_launch fetched the token into r->bearer. */
		if (slist_add(&r->slist, "Authorization", buf_cstr(&r->bearer)) != 0)
			goto out;
	} else {
		if (sign_shared_key(c->key, c->keylen, r->method, c->account,
		    buf_cstr(&r->path), buf_cstr(&r->query), r->hdr, r->nhdr,
		    &auth) != SIGN_OK)
			goto out;
		if (slist_add(&r->slist, "Authorization", buf_cstr(&auth)) != 0)
			goto out;
	}
	for (i = 0; i < r->nhdr; i++) {
		/* curl writes Content-Length itself from INFILESIZE. */
		if (strcasecmp(r->hdr[i].name, "Content-Length") == 0)
			continue;
		if (slist_add(&r->slist, r->hdr[i].name, r->hdr[i].value) != 0)
			goto out;
	}
	/* No 100-continue round trip: bodies are bounded by block_size. */
	if (slist_add(&r->slist, "Expect", "") != 0)
		goto out;
	r->status = 0;
	r->body_off = 0;
	r->answer_overflow = 0;
	buf_reset(&r->answer);
	answer_headers_reset(&r->rh);
	attempt_configure(c, r, e, buf_cstr(&url));
	rc = 0;
out:
	/* CURLOPT_URL copies the string; the buffers can go. */
	buf_free(&url);
	if (auth.ptr != NULL)
		memset(auth.ptr, 0, auth.len);
	buf_free(&auth);
	return rc;
}

static int
easy_acquire(struct blob_client *c, CURL **out)
{
	unsigned i;

	for (i = 0; i < c->in_flight; i++) {
		if (c->easy_busy[i])
			continue;
		if (c->easy[i] == NULL && (c->easy[i] = curl_easy_init()) == NULL)
			return -1;
		c->easy_busy[i] = 1;
		*out = c->easy[i];
		return 0;
	}
	return -1;
}

static void
easy_release(struct blob_client *c, CURL *e)
{
	unsigned i;

	/* The error buffer is the request's, which may be gone before the
	 * handle's next use: curl must not keep a pointer into it. */
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, NULL);
	for (i = 0; i < c->in_flight; i++)
		if (c->easy[i] == e)
			c->easy_busy[i] = 0;
}

/* A call's end that means storage failed us (not an answer the protocol
 * expects, such as 404 or a condition not met): /metrics counts these. */
static int
storage_failure(enum blob_status st)
{
	switch (st) {
	case BLOB_AUTH_FAILED:
	case BLOB_CREDENTIAL:
	case BLOB_TRANSIENT:
	case BLOB_DEADLINE:
	case BLOB_FAILED:
	case BLOB_REJECTED:
		return 1;
	default:
		return 0;
	}
}

static void
request_done(struct blob_client *c, struct blob_request *r)
{
	r->state = BLOB_REQUEST_DONE;
	if (r->res.status == BLOB_EXISTS && r->ambiguous)
		r->res.status = BLOB_EXISTS_MAYBE_OURS;
	scrub_message(c, &r->res);
	if (storage_failure(r->res.status))
		counters_add(COUNTER_STORAGE_ERRORS, 1);
}

/* Launch one attempt, or finish r with BLOB_DEADLINE past the deadline. */
static void
attempt_launch(struct blob_client *c, struct blob_request *r)
{
	if (blob_deadline_passed(c)) {
		if (r->attempt == 0) {
			blob_result_clear(&r->res);
			(void)blob_result_set(&r->res, BLOB_DEADLINE,
			    "deadline passed before the call");
		} else {
			/* The last attempt's cause is what the caller needs
			 * (a refused connection, a 503): the deadline only
			 * says why there was no further try. */
			char m[sizeof r->res.message + 48];	/* blob_result_set cuts it to fit */

			snprintf(m, sizeof m, "%s (no retry: the deadline came first)",
			    r->res.message[0] ? r->res.message : "the last attempt failed");
			(void)blob_result_set(&r->res, r->res.status, m);
		}
		request_done(c, r);
		return;
	}
	/* A token is had before a handle is taken: fetching it may take the
	 * authority's time, and failing it sends nothing to storage. */
	if (c->entra != NULL && blob_entra_authorization(c, &r->bearer, &r->res) != BLOB_OK) {
		request_done(c, r);
		return;
	}
	if (easy_acquire(c, &r->easy) != 0) {
		(void)blob_result_set(&r->res, BLOB_NOMEM, "no transfer handle");
		request_done(c, r);
		return;
	}
	if (attempt_prepare(c, r, r->easy) != 0 ||
	    curl_multi_add_handle(c->multi, r->easy) != CURLM_OK) {
		easy_release(c, r->easy);
		r->easy = NULL;
		(void)blob_result_nomem(&r->res);
		request_done(c, r);
		return;
	}
	r->state = BLOB_REQUEST_RUNNING;
}

static int
curl_transient(CURLcode cc)
{
	switch (cc) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_SSL_CONNECT_ERROR:
		return 1;
	default:
		return 0;
	}
}

/*
 * The status for an HTTP answer; pure, so the mapping is in one place.
 * Every request is built here, from input the callers checked, so a 400
 * (or 411, 413, 416) is the service refusing what this client sent --
 * Md5Mismatch on bytes damaged on the way, InvalidBlockList, a header it
 * will not take -- and never the end user's input: BLOB_REJECTED.
 */
enum blob_status
blob_status_for_http(long http, const char *code, int create_only)
{
	if (http >= 200 && http < 300)
		return BLOB_OK;
	switch (http) {
	case 304:
	case 412:
		return create_only ? BLOB_EXISTS : BLOB_CONDITION_NOT_MET;
	case 409:
		if (create_only && (code[0] == '\0' ||
		    strcmp(code, "BlobAlreadyExists") == 0))
			return BLOB_EXISTS;
		return BLOB_FAILED;
	case 404:
		return BLOB_NOT_FOUND;
	case 401:
	case 403:
		return BLOB_AUTH_FAILED;
	case 400:
	case 411:
	case 413:
	case 416:
		return BLOB_REJECTED;
	case 501:
		return BLOB_NOT_SUPPORTED;
	case 408:
	case 429:
	case 500:
	case 502:
	case 503:
	case 504:
		return BLOB_TRANSIENT;
	default:
		return BLOB_FAILED;
	}
}

/*
 * A transfer that got no answer, in words that name the cause (a refused
 * certificate, a host name that does not resolve, a refused connection),
 * with libcurl's own detail.  The message never holds a credential: the
 * URL is not in it.
 */
static void
explain_curl(struct blob_result *res, CURLcode cc, const char *detail)
{
	const char *what;
	char m[160 + CURL_ERROR_SIZE];	/* blob_result_set cuts it to fit */

	switch (cc) {
	case CURLE_PEER_FAILED_VERIFICATION:
#if LIBCURL_VERSION_NUM < 0x073e00
	case CURLE_SSL_CACERT:
#endif
		what = "TLS: storage's certificate was refused (an untrusted issuer: set "
		    "[storage] ca_file; or a name that does not match the endpoint's host)";
		break;
	case CURLE_SSL_CONNECT_ERROR:
		what = "TLS: the handshake with storage failed";
		break;
	case CURLE_SSL_CACERT_BADFILE:
		what = "TLS: the CA certificates ([storage] ca_file or ca_path) cannot be read";
		break;
	case CURLE_COULDNT_RESOLVE_HOST:
		what = "DNS: storage's host name does not resolve";
		break;
	case CURLE_COULDNT_CONNECT:
		what = "storage refused the connection or cannot be reached";
		break;
	default:
		what = curl_easy_strerror(cc);
		break;
	}
	snprintf(m, sizeof m, "%s%s%s", what, detail[0] ? ": " : "", detail);
	(void)blob_result_set(res, curl_transient(cc) ? BLOB_TRANSIENT : BLOB_FAILED, m);
}

/* Azure refuses a Shared Key or SAS signed more than 15 minutes away from
 * its own clock, with the same 403 AuthenticationFailed as a wrong key:
 * when the answer's Date says the clocks differ, say so. */
static void
explain_clock(struct blob_result *res, int64_t date)
{
	int64_t skew;
	char m[sizeof res->message + 80];	/* blob_result_set cuts it to fit */

	if (date < 0)
		return;
	skew = date - (int64_t)time(NULL);
	if (skew < CLOCK_SKEW_NOTE_S && skew > -CLOCK_SKEW_NOTE_S)
		return;
	snprintf(m, sizeof m, "%s (storage's clock is %lld s %s ours: check the clock)",
	    res->message, (long long)(skew < 0 ? -skew : skew), skew < 0 ? "behind" : "ahead of");
	(void)blob_result_set(res, res->status, m);
}

/* An attempt ended: decide the result, or schedule a retry. */
static void
attempt_finish(struct blob_client *c, struct blob_request *r, CURLcode cc)
{
	struct blob_result *res = &r->res;
	int ambiguous_now = 0;
	long delay;

	blob_result_clear(res);
	res->curl_code = (int)cc;
	res->http_status = r->status;
	if (r->cb_aborted) {
		(void)blob_result_set(res, BLOB_ABORTED, "stopped by the caller");
		request_done(c, r);
		return;
	}
	if (cc != CURLE_OK) {
		if (r->answer_overflow)
			(void)blob_result_set(res, BLOB_FAILED, "answer too large");
		else
			explain_curl(res, cc, r->curl_err);
		ambiguous_now = cc != CURLE_COULDNT_CONNECT &&
		    cc != CURLE_COULDNT_RESOLVE_HOST;
	} else {
		if (copy_cstr(res->code, sizeof res->code, r->rh.error_code) != 0)
			res->code[0] = '\0';
		if (copy_cstr(res->request_id, sizeof res->request_id, r->rh.request_id) != 0)
			res->request_id[0] = '\0';
		if (r->status >= 300 && r->answer.len > 0)
			blob_xml_error(r->answer.ptr, r->answer.len, res->code,
			    sizeof res->code, res->message, sizeof res->message);
		res->status = blob_status_for_http(r->status, res->code, r->create_only);
		if (res->status == BLOB_NOT_SUPPORTED)
			(void)blob_result_set(res, BLOB_NOT_SUPPORTED,
			    "not supported by this endpoint");
		if (res->status == BLOB_OK)
			res->message[0] = res->code[0] = '\0';
		else if (res->status == BLOB_AUTH_FAILED)
			explain_clock(res, r->rh.date);
		else if (res->message[0] == '\0') {
			char m[128];

			snprintf(m, sizeof m, "HTTP %ld%s%s", r->status,
			    res->code[0] ? " " : "", res->code);
			(void)blob_result_set(res, res->status, m);
		}
		ambiguous_now = res->status == BLOB_TRANSIENT;
	}
	/* Every request this client makes may be repeated: reads, deletes,
	 * tag sets and Put Block are idempotent, and a repeated create-only
	 * is what r->ambiguous tracks.  A download that already handed bytes
	 * or headers to its caller is not. */
	if (res->status != BLOB_TRANSIENT ||
	    r->attempt >= c->max_retries || r->delivered > 0 ||
	    r->headers_delivered) {
		request_done(c, r);
		return;
	}
	/* Exponential backoff with full jitter, never shorter than what the
	 * service asked for. */
	delay = BACKOFF_BASE_MS << (r->attempt < 6 ? r->attempt : 6);
	if (delay > BACKOFF_CAP_MS)
		delay = BACKOFF_CAP_MS;
	{
		unsigned rnd = 0;

		if (gnutls_rnd(GNUTLS_RND_NONCE, &rnd, sizeof rnd) == 0)
			delay = delay / 2 + (long)(rnd % (unsigned)(delay / 2 + 1));
	}
	if (r->rh.retry_after_ms > delay)
		delay = r->rh.retry_after_ms;
	if (c->deadline_ms > 0 && clock_now_ms() + delay >= c->deadline_ms) {
		request_done(c, r);
		return;
	}
	r->ambiguous |= ambiguous_now;
	r->attempt++;
	r->retry_at = clock_now_ms() + delay;
	r->state = BLOB_REQUEST_WAITING;
}

static int
active_add(struct blob_client *c, struct blob_request *r)
{
	if (c->nactive >= c->in_flight)
		return -1;
	c->active[c->nactive++] = r;
	return 0;
}

static void
active_remove(struct blob_client *c, struct blob_request *r)
{
	unsigned i;

	for (i = 0; i < c->nactive; i++) {
		if (c->active[i] == r) {
			c->active[i] = c->active[--c->nactive];
			return;
		}
	}
}

/* Bytes of in-memory bodies curl has taken so far, over every transfer. */
static size_t
bodies_taken(const struct blob_client *c)
{
	size_t n = 0;
	unsigned i;

	for (i = 0; i < c->nactive; i++)
		n += c->active[i]->body_off;
	return n;
}

/*
 * curl sends at most one upload buffer (UPLOAD_BUFSIZE) of a transfer per
 * curl_multi_perform.  An upload pumps curl between reads of its own body,
 * and a client that trickles that body makes those reads slow: at one
 * buffer a pump, a 1 MiB Put Block took longer than a 5 s deadline
 * (tests/e2e/leases.sh).  So perform again while bodies still move, this
 * many times at most.
 */
#define PUMP_ROUNDS_MAX 64

/* Move finished transfers out of curl; non-blocking. */
static void
exec_pump(struct blob_client *c)
{
	CURLMsg *m;
	int running, left;
	unsigned rounds = 0;
	size_t before;

	do {
		before = bodies_taken(c);
		curl_multi_perform(c->multi, &running);
	} while (bodies_taken(c) != before && ++rounds < PUMP_ROUNDS_MAX);
	while ((m = curl_multi_info_read(c->multi, &left)) != NULL) {
		struct blob_request *r = NULL;

		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
		curl_multi_remove_handle(c->multi, m->easy_handle);
		easy_release(c, m->easy_handle);
		r->easy = NULL;
		attempt_finish(c, r, m->data.result);
	}
}

/* Start r (the caller keeps it alive until it is collected). */
int
blob_exec_start(struct blob_client *c, struct blob_request *r)
{
	r->attempt = 0;
	r->ambiguous = 0;
	r->delivered = 0;
	r->headers_delivered = r->cb_aborted = 0;
	blob_result_clear(&r->res);
	if (active_add(c, r) != 0)
		return -1;
	attempt_launch(c, r);
	return 0;
}

/* Launch the retries that are due, move curl along, and return one finished
 * request (retries included) without blocking; NULL when none is.
 * *next_retry is the earliest pending retry time (-1: none). */
struct blob_request *
blob_exec_collect(struct blob_client *c, int64_t *next_retry)
{
	int64_t now = clock_now_ms(), next = -1;
	unsigned i;

	*next_retry = -1;
	if (c->nactive == 0)
		return NULL;
	for (i = 0; i < c->nactive; i++) {
		struct blob_request *r = c->active[i];

		if (r->state == BLOB_REQUEST_WAITING) {
			if (r->retry_at <= now)
				attempt_launch(c, r);
			else if (next < 0 || r->retry_at < next)
				next = r->retry_at;
		}
		if (r->state == BLOB_REQUEST_DONE) {
			active_remove(c, r);
			return r;
		}
	}
	exec_pump(c);
	for (i = 0; i < c->nactive; i++) {
		struct blob_request *r = c->active[i];

		if (r->state == BLOB_REQUEST_DONE) {
			active_remove(c, r);
			return r;
		}
	}
	*next_retry = next;
	return NULL;
}

/* Sleep until a socket needs curl, curl_multi_wakeup() is called, the next
 * retry is due, or max_ms pass. */
void
blob_exec_poll(struct blob_client *c, int64_t next_retry, int max_ms)
{
	int64_t now = clock_now_ms();
	int timeout = max_ms;

	if (next_retry >= 0 && next_retry - now < timeout)
		timeout = (int)(next_retry - now > 0 ? next_retry - now : 0);
	curl_multi_poll(c->multi, NULL, 0, timeout, NULL);
}

/* Block until some started request is finished (retries included) and
 * return it; NULL when nothing is active. */
static struct blob_request *
exec_wait_any(struct blob_client *c)
{
	struct blob_request *r;
	int64_t next;

	for (;;) {
		if (c->nactive == 0)
			return NULL;
		if ((r = blob_exec_collect(c, &next)) != NULL)
			return r;
		blob_exec_poll(c, next, 1000);
	}
}

/* Abandon r wherever it is. */
void
blob_exec_cancel(struct blob_client *c, struct blob_request *r)
{
	if (r->state == BLOB_REQUEST_RUNNING && r->easy != NULL) {
		curl_multi_remove_handle(c->multi, r->easy);
		easy_release(c, r->easy);
		r->easy = NULL;
	}
	r->state = BLOB_REQUEST_DONE;
	active_remove(c, r);
}

/* Run one request to its end; copies its result to res. */
int
blob_exec_run(struct blob_client *c, struct blob_request *r, struct blob_result *res)
{
	struct blob_request *done;

	if (blob_exec_start(c, r) != 0)
		return blob_result_set(res, BLOB_FAILED, "too many requests in flight");
	do {
		done = exec_wait_any(c);
	} while (done != NULL && done != r);
	*res = r->res;
	return res->status;
}

size_t
blob_props_meta(const struct blob_props *p, struct blob_meta *out, size_t max)
{
	size_t i;

	for (i = 0; i < p->meta_n && i < max; i++) {
		out[i].name = p->meta_text + p->meta_at[i][0];
		out[i].value = p->meta_text + p->meta_at[i][1];
	}
	return i;
}
