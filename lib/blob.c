/*
 * blob.c - the Blob REST client over one libcurl multi handle.
 *
 * Every request is a struct blob_req: method, encoded path and query,
 * headers, an optional in-memory body, and where the answer goes.  All
 * requests, serial or parallel, run through the client's multi handle, so
 * they share its connection cache (keep-alive) and the retry logic.
 */
#define _GNU_SOURCE	/* memmem */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <pthread.h>
#include <sys/mman.h>

#include <curl/curl.h>
#include <gnutls/gnutls.h>
#include <gnutls/crypto.h>

#include "alloc.h"
#include "blob.h"
#include "blob_internal.h"
#include "sign.h"

#define MAX_HEADERS	24
#define ANSWER_MAX	((size_t)32 * 1024 * 1024)	/* one XML page or error body */
#define READ_CHUNK	((size_t)256 * 1024)
/* curl's own default.  Each easy handle keeps one, so it counts
 * blocks_in_flight times; 256 KiB to 2 MiB bought no measurable speed on
 * loopback and cost up to 8 MiB of RSS. */
#define UPLOAD_BUFSIZE	(64L * 1024)
#define MAX_BLOCKS	50000u		/* Put Block List limit */
#define BLOCK_ID_RAW	16		/* 12 random bytes + 4-byte index */
#define BATCH_MAX	256
#define BACKOFF_BASE_MS	200
#define BACKOFF_CAP_MS	10000
#define RETRY_AFTER_CAP_MS 60000

enum req_state { REQ_IDLE, REQ_RUNNING, REQ_WAITING, REQ_DONE };

struct resp_headers {
	char etag[128];
	char error_code[64];
	char content_type[256];
	char content_md5[32];
	char blob_content_md5[32];
	char meta_sha256[65];
	char last_modified[64];
	int64_t meta_size;
	int64_t content_length;
	int64_t range_total;
	unsigned tag_count;
	long retry_after_ms;
};

struct blob_req {
	const char *method;
	struct buf path;		/* encoded, with the endpoint's prefix */
	struct buf query;		/* encoded, without '?' or the SAS */
	struct sign_header hdr[MAX_HEADERS];
	char *hdr_value[MAX_HEADERS];	/* owned copies of hdr[].value */
	size_t nhdr;
	const char *body;		/* borrowed */
	size_t body_len, body_off;
	int has_body, retry_safe, create_only;

	long status;
	struct resp_headers rh;
	struct buf answer;		/* error or XML body */
	int answer_overflow;

	blob_headers_fn on_headers;
	blob_data_fn on_data;
	void *cb_ctx;
	int headers_delivered, cb_aborted;
	uint64_t delivered;

	enum req_state state;
	CURL *easy;
	struct curl_slist *slist;
	unsigned attempt;
	int ambiguous;			/* an earlier try may have taken effect */
	int64_t retry_at;
	struct blob_result res;
};

struct blob_client {
	char *url_base;		/* scheme://host[:port] */
	char *path_prefix;	/* "" or "/devstoreaccount1" */
	char *account;
	char *container;
	char *sas;		/* NULL with a key */
	unsigned char key[128];
	size_t keylen;
	int https;
	size_t block_size, single_put_max;
	unsigned in_flight, max_retries, page_size;
	long connect_timeout_ms, low_speed_time_s;
	int64_t deadline_ms;
	CURLM *multi;
	CURL **easy;		/* pool of in_flight handles, made lazily */
	int *easy_busy;
	struct blob_req **active;	/* requests started and not yet collected */
	unsigned nactive;
};

static const char *const status_names[] = {
	"BLOB_OK", "BLOB_EXISTS", "BLOB_EXISTS_MAYBE_OURS",
	"BLOB_CONDITION_NOT_MET", "BLOB_NOT_FOUND", "BLOB_AUTH_FAILED",
	"BLOB_TRANSIENT", "BLOB_NOT_SUPPORTED", "BLOB_DEADLINE", "BLOB_ABORTED",
	"BLOB_BAD_INPUT", "BLOB_NOMEM", "BLOB_FAILED",
};

const char *
blob_status_name(enum blob_status s)
{
	if ((unsigned)s < ARRAY_LEN(status_names))
		return status_names[s];
	return "BLOB_?";
}

int64_t
blob_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
result_clear(struct blob_result *res)
{
	memset(res, 0, sizeof *res);
}

static int
result_set(struct blob_result *res, enum blob_status st, const char *msg)
{
	res->status = st;
	if (msg != NULL && copy_cstr(res->message, sizeof res->message, msg) != 0) {
		/* truncated messages are acceptable */
	}
	return st;
}

static int
result_nomem(struct blob_result *res)
{
	return result_set(res, BLOB_NOMEM, "out of memory");
}

/* ---- requests ---------------------------------------------------------- */

static void
req_init(struct blob_req *r, const char *method)
{
	memset(r, 0, sizeof *r);
	r->method = method;
	buf_init(&r->path, 8192);
	buf_init(&r->query, 64 * 1024);
	buf_init(&r->answer, ANSWER_MAX);
	r->retry_safe = 1;
}

static void
req_free(struct blob_req *r)
{
	size_t i;

	for (i = 0; i < r->nhdr; i++)
		free(r->hdr_value[i]);
	r->nhdr = 0;
	buf_free(&r->path);
	buf_free(&r->query);
	buf_free(&r->answer);
	curl_slist_free_all(r->slist);
	r->slist = NULL;
}

/* name is a literal; value is copied.  Replaces an existing header. */
static int
req_header(struct blob_req *r, const char *name, const char *value)
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
	assert(r->nhdr < MAX_HEADERS);
	r->hdr[r->nhdr].name = name;
	r->hdr[r->nhdr].value = v;
	r->hdr_value[r->nhdr] = v;
	r->nhdr++;
	return 0;
}

static int
req_query_param(struct blob_req *r, const char *name, const char *value)
{
	if (buf_appendf(&r->query, "%s%s=", r->query.len ? "&" : "", name) != BUF_OK)
		return -1;
	if (sign_percent_encode(value, strlen(value), 0, &r->query) != SIGN_OK)
		return -1;
	return 0;
}

static int
req_path_container(struct blob_client *c, struct blob_req *r)
{
	if (buf_append_cstr(&r->path, c->path_prefix) != BUF_OK ||
	    buf_append(&r->path, "/", 1) != BUF_OK ||
	    sign_percent_encode(c->container, strlen(c->container), 0,
	    &r->path) != SIGN_OK)
		return -1;
	return 0;
}

static int
req_path_blob(struct blob_client *c, struct blob_req *r, const char *name)
{
	if (req_path_container(c, r) != 0 || buf_append(&r->path, "/", 1) != BUF_OK ||
	    sign_percent_encode(name, strlen(name), 1, &r->path) != SIGN_OK)
		return -1;
	return 0;
}

/* Blob names: 1..1024 characters (REST reference, "Naming and referencing
 * containers, blobs, and metadata"). */
static int
name_ok(const char *name)
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
	struct blob_req *r = ud;
	size_t n = size * nmemb, left = r->body_len - r->body_off;

	if (n > left)
		n = left;
	if (n)
		memcpy(dst, r->body + r->body_off, n);
	r->body_off += n;
	return n;
}

static int64_t
parse_i64(const char *s, size_t n)
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

/* Retry-After is delay-seconds or an HTTP-date (RFC 9110, 10.2.3); the
 * wait in milliseconds, capped, or -1 when the value is neither. */
static long
retry_after_ms(const char *v, size_t n, time_t now)
{
	char tmp[64];
	int64_t s = parse_i64(v, n);
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

static void
set_field(char *dst, size_t dstsize, const char *v, size_t n)
{
	struct span s = { v, n };

	if (copy_span(dst, dstsize, s) != 0)
		dst[0] = '\0';	/* an oversize value is as good as absent */
}

static size_t
on_header_line(char *line, size_t size, size_t nmemb, void *ud)
{
	struct blob_req *r = ud;
	size_t n = size * nmemb, nlen;
	const char *colon, *v;
	struct resp_headers *rh = &r->rh;
	struct span name;

	if (n >= 5 && memcmp(line, "HTTP/", 5) == 0) {
		const char *sp = memchr(line, ' ', n);

		/* A new status line (after 100 Continue, too) resets what we
		 * know about the answer. */
		memset(rh, 0, sizeof *rh);
		rh->meta_size = rh->content_length = rh->range_total = -1;
		rh->retry_after_ms = -1;
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
	if (span_eq_nocase_cstr(name, "ETag"))
		set_field(rh->etag, sizeof rh->etag, v, n);
	else if (span_eq_nocase_cstr(name, "x-ms-error-code"))
		set_field(rh->error_code, sizeof rh->error_code, v, n);
	else if (span_eq_nocase_cstr(name, "Content-Type"))
		set_field(rh->content_type, sizeof rh->content_type, v, n);
	else if (span_eq_nocase_cstr(name, "Content-MD5"))
		set_field(rh->content_md5, sizeof rh->content_md5, v, n);
	else if (span_eq_nocase_cstr(name, "x-ms-blob-content-md5"))
		set_field(rh->blob_content_md5, sizeof rh->blob_content_md5, v, n);
	else if (span_eq_nocase_cstr(name, "x-ms-meta-sha256"))
		set_field(rh->meta_sha256, sizeof rh->meta_sha256, v, n);
	else if (span_eq_nocase_cstr(name, "Last-Modified"))
		set_field(rh->last_modified, sizeof rh->last_modified, v, n);
	else if (span_eq_nocase_cstr(name, "x-ms-meta-size"))
		rh->meta_size = parse_i64(v, n);
	else if (span_eq_nocase_cstr(name, "Content-Length"))
		rh->content_length = parse_i64(v, n);
	else if (span_eq_nocase_cstr(name, "x-ms-tag-count"))
		rh->tag_count = (unsigned)(parse_i64(v, n) > 0 ? parse_i64(v, n) : 0);
	else if (span_eq_nocase_cstr(name, "Content-Range")) {
		const char *slash = memchr(v, '/', n);

		if (slash != NULL)
			rh->range_total = parse_i64(slash + 1,
			    (size_t)(v + n - slash - 1));
	} else if (span_eq_nocase_cstr(name, "x-ms-retry-after-ms")) {
		int64_t ms = parse_i64(v, n);

		if (ms >= 0)
			rh->retry_after_ms = (long)(ms > RETRY_AFTER_CAP_MS ?
			    RETRY_AFTER_CAP_MS : ms);
	} else if (span_eq_nocase_cstr(name, "Retry-After") &&
	    rh->retry_after_ms < 0) {
		rh->retry_after_ms = retry_after_ms(v, n, time(NULL));
	}
	return size * nmemb;
}

static void
props_from_headers(const struct resp_headers *rh, struct blob_props *p)
{
	memset(p, 0, sizeof *p);
	p->size = (uint64_t)(rh->range_total >= 0 ? rh->range_total :
	    rh->content_length >= 0 ? rh->content_length : 0);
	set_field(p->content_type, sizeof p->content_type, rh->content_type,
	    strlen(rh->content_type));
	set_field(p->etag, sizeof p->etag, rh->etag, strlen(rh->etag));
	if (rh->blob_content_md5[0])
		set_field(p->content_md5, sizeof p->content_md5,
		    rh->blob_content_md5, strlen(rh->blob_content_md5));
	else if (rh->range_total < 0)
		set_field(p->content_md5, sizeof p->content_md5, rh->content_md5,
		    strlen(rh->content_md5));
	set_field(p->meta_sha256, sizeof p->meta_sha256, rh->meta_sha256,
	    strlen(rh->meta_sha256));
	p->meta_size = rh->meta_size;
	set_field(p->last_modified, sizeof p->last_modified, rh->last_modified,
	    strlen(rh->last_modified));
	p->tag_count = rh->tag_count;
}

static int
deliver_headers(struct blob_req *r)
{
	struct blob_props p;

	r->headers_delivered = 1;
	if (r->on_headers == NULL)
		return 0;
	props_from_headers(&r->rh, &p);
	return r->on_headers(r->cb_ctx, &p, p.size);
}

static size_t
on_body(char *data, size_t size, size_t nmemb, void *ud)
{
	struct blob_req *r = ud;
	size_t n = size * nmemb;

	if (r->on_data != NULL && r->status >= 200 && r->status < 300) {
		if (!r->headers_delivered && deliver_headers(r) != 0) {
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

void
blob_client_set_page_size(struct blob_client *c, unsigned maxresults)
{
	c->page_size = maxresults;
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
	result_clear(res);
	if (s == NULL || s->endpoint == NULL || s->account == NULL ||
	    s->container == NULL || s->account[0] == '\0' ||
	    s->container[0] == '\0' ||
	    (s->key_b64 == NULL) == (s->sas == NULL)) {
		rc = result_set(res, BLOB_BAD_INPUT, "endpoint, account, container "
		    "and exactly one of key or SAS are required");
		goto out;
	}
	if (strncmp(s->endpoint, "https://", 8) == 0)
		hoststart = s->endpoint + 8;
	else if (strncmp(s->endpoint, "http://", 7) == 0)
		hoststart = s->endpoint + 7;
	else {
		rc = result_set(res, BLOB_BAD_INPUT, "endpoint must be http:// or https://");
		goto out;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		rc = result_set(res, BLOB_FAILED, "curl_global_init failed");
		goto out;
	}
	c = calloc(1, sizeof *c);
	if (c == NULL) {
		curl_global_cleanup();
		rc = result_nomem(res);
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
	    c->multi == NULL || c->easy == NULL || c->easy_busy == NULL ||
	    c->active == NULL) {
		rc = result_nomem(res);
		goto out;
	}
	if (c->block_size > (size_t)4000 * 1024 * 1024) {
		rc = result_set(res, BLOB_BAD_INPUT, "block_size above the service's 4000 MiB");
		goto out;
	}
	if (s->key_b64 != NULL) {
		if (sign_base64_decode(s->key_b64, strlen(s->key_b64), &key) != SIGN_OK ||
		    key.len == 0) {
			/* Never echo the key, not even a bad one. */
			rc = result_set(res, BLOB_BAD_INPUT, "account key is not valid base64");
			goto out;
		}
		memcpy(c->key, key.ptr, key.len);
		c->keylen = key.len;
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
	if (c->sas) {
		memset(c->sas, 0, strlen(c->sas));
		free(c->sas);
	}
	memset(c->key, 0, sizeof c->key);
	free(c);
	curl_global_cleanup();
}

/* ---- execution ------------------------------------------------------------- */

static int
deadline_passed(const struct blob_client *c)
{
	return c->deadline_ms > 0 && blob_now_ms() >= c->deadline_ms;
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
	    strstr(res->message, "sig=") != NULL ||
	    (siglen >= 8 && memmem(res->message, strlen(res->message), sig,
	    siglen) != NULL))
		(void)result_set(res, res->status, "(service message withheld: it "
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

/* Sign and configure one attempt of r on easy handle e. */
static int
attempt_prepare(struct blob_client *c, struct blob_req *r, CURL *e)
{
	struct buf url = BUF_INIT(128 * 1024), auth = BUF_INIT(256);
	char date[32], lenstr[32];
	size_t i;
	int rc = -1;

	curl_easy_reset(e);
	curl_slist_free_all(r->slist);
	r->slist = NULL;
	sign_time_rfc1123(time(NULL), date);
	if (req_header(r, "x-ms-date", date) != 0 ||
	    req_header(r, "x-ms-version", SIGN_VERSION) != 0)
		goto out;
	if (r->has_body) {
		snprintf(lenstr, sizeof lenstr, "%zu", r->body_len);
		if (req_header(r, "Content-Length", lenstr) != 0)
			goto out;
	}
	if (buf_appendf(&url, "%s%s", c->url_base, buf_cstr(&r->path)) != BUF_OK)
		goto out;
	if (r->query.len && buf_appendf(&url, "?%s", buf_cstr(&r->query)) != BUF_OK)
		goto out;
	if (c->sas != NULL) {
		if (buf_appendf(&url, "%s%s", r->query.len ? "&" : "?", c->sas) != BUF_OK)
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
	memset(&r->rh, 0, sizeof r->rh);
	r->rh.meta_size = r->rh.content_length = r->rh.range_total = -1;
	r->rh.retry_after_ms = -1;

	curl_easy_setopt(e, CURLOPT_URL, buf_cstr(&url));
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
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, c->deadline_ms > 0 ?
	    (long)(c->deadline_ms - blob_now_ms() > 1 ? c->deadline_ms - blob_now_ms() : 1) : 0L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	/* TLS verification stays at libcurl's default (on) for https. */
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header_line);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
	if (strcmp(r->method, "HEAD") == 0)
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	else if (strcmp(r->method, "GET") == 0)
		curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
	else if (r->has_body) {
		curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, UPLOAD_BUFSIZE);
		curl_easy_setopt(e, CURLOPT_READFUNCTION, read_body);
		curl_easy_setopt(e, CURLOPT_READDATA, r);
		curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)r->body_len);
		if (strcmp(r->method, "PUT") != 0)
			curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method);
	} else
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method);
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

	for (i = 0; i < c->in_flight; i++)
		if (c->easy[i] == e)
			c->easy_busy[i] = 0;
}

static void
req_done(struct blob_client *c, struct blob_req *r)
{
	r->state = REQ_DONE;
	if (r->res.status == BLOB_EXISTS && r->ambiguous)
		r->res.status = BLOB_EXISTS_MAYBE_OURS;
	scrub_message(c, &r->res);
}

/* Launch one attempt, or finish r with BLOB_DEADLINE past the deadline. */
static void
attempt_launch(struct blob_client *c, struct blob_req *r)
{
	if (deadline_passed(c)) {
		if (r->attempt == 0) {
			result_clear(&r->res);
			(void)result_set(&r->res, BLOB_DEADLINE,
			    "deadline passed before the call");
		} else
			(void)result_set(&r->res, r->res.status,
			    "deadline passed before a retry");
		req_done(c, r);
		return;
	}
	if (easy_acquire(c, &r->easy) != 0) {
		(void)result_set(&r->res, BLOB_NOMEM, "no transfer handle");
		req_done(c, r);
		return;
	}
	if (attempt_prepare(c, r, r->easy) != 0 ||
	    curl_multi_add_handle(c->multi, r->easy) != CURLM_OK) {
		easy_release(c, r->easy);
		r->easy = NULL;
		(void)result_nomem(&r->res);
		req_done(c, r);
		return;
	}
	r->state = REQ_RUNNING;
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

/* The status for an HTTP answer; pure, so the mapping is in one place. */
static enum blob_status
status_for_http(long http, const char *code, int create_only)
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
		return BLOB_BAD_INPUT;
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

/* An attempt ended: decide the result, or schedule a retry. */
static void
attempt_finish(struct blob_client *c, struct blob_req *r, CURLcode cc)
{
	struct blob_result *res = &r->res;
	int ambiguous_now = 0;
	long delay;

	result_clear(res);
	res->curl_code = (int)cc;
	res->http_status = r->status;
	if (r->cb_aborted) {
		(void)result_set(res, BLOB_ABORTED, "stopped by the caller");
		req_done(c, r);
		return;
	}
	if (cc != CURLE_OK) {
		if (r->answer_overflow)
			(void)result_set(res, BLOB_FAILED, "answer too large");
		else
			(void)result_set(res, curl_transient(cc) ? BLOB_TRANSIENT :
			    BLOB_FAILED, curl_easy_strerror(cc));
		ambiguous_now = cc != CURLE_COULDNT_CONNECT &&
		    cc != CURLE_COULDNT_RESOLVE_HOST;
	} else {
		if (copy_cstr(res->code, sizeof res->code, r->rh.error_code) != 0)
			res->code[0] = '\0';
		if (r->status >= 300 && r->answer.len > 0)
			blob_xml_error(r->answer.ptr, r->answer.len, res->code,
			    sizeof res->code, res->message, sizeof res->message);
		res->status = status_for_http(r->status, res->code, r->create_only);
		if (res->status == BLOB_NOT_SUPPORTED)
			(void)result_set(res, BLOB_NOT_SUPPORTED,
			    "not supported by this endpoint");
		if (res->status == BLOB_OK)
			res->message[0] = res->code[0] = '\0';
		else if (res->message[0] == '\0') {
			char m[128];

			snprintf(m, sizeof m, "HTTP %ld%s%s", r->status,
			    res->code[0] ? " " : "", res->code);
			(void)result_set(res, res->status, m);
		}
		ambiguous_now = res->status == BLOB_TRANSIENT;
	}
	if (res->status != BLOB_TRANSIENT || !r->retry_safe ||
	    r->attempt >= c->max_retries || r->delivered > 0 ||
	    r->headers_delivered) {
		req_done(c, r);
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
	if (c->deadline_ms > 0 && blob_now_ms() + delay >= c->deadline_ms) {
		req_done(c, r);
		return;
	}
	r->ambiguous |= ambiguous_now;
	r->attempt++;
	r->retry_at = blob_now_ms() + delay;
	r->state = REQ_WAITING;
}

static int
active_add(struct blob_client *c, struct blob_req *r)
{
	if (c->nactive >= c->in_flight)
		return -1;
	c->active[c->nactive++] = r;
	return 0;
}

static void
active_remove(struct blob_client *c, struct blob_req *r)
{
	unsigned i;

	for (i = 0; i < c->nactive; i++) {
		if (c->active[i] == r) {
			c->active[i] = c->active[--c->nactive];
			return;
		}
	}
}

/* Move finished transfers out of curl; non-blocking. */
static void
exec_pump(struct blob_client *c)
{
	CURLMsg *m;
	int running, left;

	curl_multi_perform(c->multi, &running);
	while ((m = curl_multi_info_read(c->multi, &left)) != NULL) {
		struct blob_req *r = NULL;

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
static int
exec_start(struct blob_client *c, struct blob_req *r)
{
	r->attempt = 0;
	r->ambiguous = 0;
	r->delivered = 0;
	r->headers_delivered = r->cb_aborted = 0;
	result_clear(&r->res);
	if (active_add(c, r) != 0)
		return -1;
	attempt_launch(c, r);
	return 0;
}

/* Launch the retries that are due, move curl along, and return one finished
 * request (retries included) without blocking; NULL when none is.
 * *next_retry is the earliest pending retry time (-1: none). */
static struct blob_req *
exec_collect(struct blob_client *c, int64_t *next_retry)
{
	int64_t now = blob_now_ms(), next = -1;
	unsigned i;

	*next_retry = -1;
	if (c->nactive == 0)
		return NULL;
	for (i = 0; i < c->nactive; i++) {
		struct blob_req *r = c->active[i];

		if (r->state == REQ_WAITING) {
			if (r->retry_at <= now)
				attempt_launch(c, r);
			else if (next < 0 || r->retry_at < next)
				next = r->retry_at;
		}
		if (r->state == REQ_DONE) {
			active_remove(c, r);
			return r;
		}
	}
	exec_pump(c);
	for (i = 0; i < c->nactive; i++) {
		struct blob_req *r = c->active[i];

		if (r->state == REQ_DONE) {
			active_remove(c, r);
			return r;
		}
	}
	*next_retry = next;
	return NULL;
}

/* Sleep until a socket needs curl, curl_multi_wakeup() is called, the next
 * retry is due, or max_ms pass. */
static void
exec_poll(struct blob_client *c, int64_t next_retry, int max_ms)
{
	int64_t now = blob_now_ms();
	int timeout = max_ms;

	if (next_retry >= 0 && next_retry - now < timeout)
		timeout = (int)(next_retry - now > 0 ? next_retry - now : 0);
	curl_multi_poll(c->multi, NULL, 0, timeout, NULL);
}

/* Block until some started request is finished (retries included) and
 * return it; NULL when nothing is active. */
static struct blob_req *
exec_wait_any(struct blob_client *c)
{
	struct blob_req *r;
	int64_t next;

	for (;;) {
		if (c->nactive == 0)
			return NULL;
		if ((r = exec_collect(c, &next)) != NULL)
			return r;
		exec_poll(c, next, 1000);
	}
}

/* Abandon r wherever it is. */
static void
exec_cancel(struct blob_client *c, struct blob_req *r)
{
	if (r->state == REQ_RUNNING && r->easy != NULL) {
		curl_multi_remove_handle(c->multi, r->easy);
		easy_release(c, r->easy);
		r->easy = NULL;
	}
	r->state = REQ_DONE;
	active_remove(c, r);
}

/* Run one request to its end; copies its result to res. */
static int
exec_one(struct blob_client *c, struct blob_req *r, struct blob_result *res)
{
	struct blob_req *done;

	if (exec_start(c, r) != 0)
		return result_set(res, BLOB_FAILED, "too many requests in flight");
	do {
		done = exec_wait_any(c);
	} while (done != NULL && done != r);
	*res = r->res;
	return res->status;
}

/* ---- small operations -------------------------------------------------------- */

int
blob_get_properties(struct blob_client *c, const char *name,
    struct blob_props *out, struct blob_result *res)
{
	struct blob_req r;
	int rc;

	result_clear(res);
	memset(out, 0, sizeof *out);
	out->meta_size = -1;
	if (!name_ok(name))
		return result_set(res, BLOB_BAD_INPUT, "bad blob name");
	req_init(&r, "HEAD");
	if (req_path_blob(c, &r, name) != 0) {
		rc = result_nomem(res);
		goto out;
	}
	rc = exec_one(c, &r, res);
	if (rc == BLOB_OK)
		props_from_headers(&r.rh, out);
out:
	req_free(&r);
	return rc;
}

int
blob_get(struct blob_client *c, const char *name, uint64_t range_start,
    uint64_t range_len, blob_headers_fn on_headers, blob_data_fn on_data,
    void *ctx, struct blob_result *res)
{
	struct blob_req r;
	char range[64];
	int rc;

	result_clear(res);
	if (!name_ok(name) || on_data == NULL)
		return result_set(res, BLOB_BAD_INPUT, "bad blob name or callback");
	req_init(&r, "GET");
	r.on_headers = on_headers;
	r.on_data = on_data;
	r.cb_ctx = ctx;
	if (req_path_blob(c, &r, name) != 0) {
		rc = result_nomem(res);
		goto out;
	}
	if (range_start > 0 || range_len > 0) {
		if (range_len > 0)
			snprintf(range, sizeof range, "bytes=%llu-%llu",
			    (unsigned long long)range_start,
			    (unsigned long long)(range_start + range_len - 1));
		else
			snprintf(range, sizeof range, "bytes=%llu-",
			    (unsigned long long)range_start);
		if (req_header(&r, "x-ms-range", range) != 0) {
			rc = result_nomem(res);
			goto out;
		}
	}
	rc = exec_one(c, &r, res);
	/* An empty body never reaches on_body; the headers are still due. */
	if (rc == BLOB_OK && !r.headers_delivered && deliver_headers(&r) != 0)
		rc = result_set(res, BLOB_ABORTED, "stopped by the caller");
out:
	req_free(&r);
	return rc;
}

int
blob_delete(struct blob_client *c, const char *name, const char *if_tags,
    const char *if_match, struct blob_result *res)
{
	struct blob_req r;
	int rc;

	result_clear(res);
	if (!name_ok(name))
		return result_set(res, BLOB_BAD_INPUT, "bad blob name");
	req_init(&r, "DELETE");
	if (req_path_blob(c, &r, name) != 0 ||
	    req_header(&r, "x-ms-delete-snapshots", "include") != 0 ||
	    (if_tags && req_header(&r, "x-ms-if-tags", if_tags) != 0) ||
	    (if_match && req_header(&r, "If-Match", if_match) != 0)) {
		rc = result_nomem(res);
		goto out;
	}
	rc = exec_one(c, &r, res);
out:
	req_free(&r);
	return rc;
}

/* Tag keys 1..128 and values 0..256 of [A-Za-z0-9 +-./:=_] ("Set Blob
 * Tags"); at most ten. */
static int
tags_ok(const struct blob_tag *tags, size_t n)
{
	static const char allowed[] = " +-./:=_";
	size_t i, j, kl, vl;

	if (n > BLOB_MAX_TAGS || (n > 0 && tags == NULL))
		return 0;
	for (i = 0; i < n; i++) {
		if (tags[i].key == NULL || tags[i].value == NULL)
			return 0;
		kl = strlen(tags[i].key);
		vl = strlen(tags[i].value);
		if (kl < 1 || kl > 128 || vl > 256)
			return 0;
		for (j = 0; j < kl + vl; j++) {
			unsigned char ch = (unsigned char)(j < kl ? tags[i].key[j] :
			    tags[i].value[j - kl]);

			if (!(ch < 128 && (isalnum(ch) || strchr(allowed, ch))) ||
			    ch == '\0')
				return 0;
		}
	}
	return 1;
}

int
blob_set_tags(struct blob_client *c, const char *name,
    const struct blob_tag *tags, size_t n, const char *if_tags,
    struct blob_result *res)
{
	struct blob_req r;
	struct buf body = BUF_INIT(64 * 1024);
	size_t i;
	int rc;

	result_clear(res);
	if (!name_ok(name) || !tags_ok(tags, n))
		return result_set(res, BLOB_BAD_INPUT, "bad blob name or tags");
	req_init(&r, "PUT");
	if (buf_append_cstr(&body, "<?xml version=\"1.0\" encoding=\"utf-8\"?>"
	    "<Tags><TagSet>") != BUF_OK)
		goto nomem;
	for (i = 0; i < n; i++)
		if (buf_append_cstr(&body, "<Tag><Key>") != BUF_OK ||
		    blob_xml_escape(&body, tags[i].key) != BUF_OK ||
		    buf_append_cstr(&body, "</Key><Value>") != BUF_OK ||
		    blob_xml_escape(&body, tags[i].value) != BUF_OK ||
		    buf_append_cstr(&body, "</Value></Tag>") != BUF_OK)
			goto nomem;
	if (buf_append_cstr(&body, "</TagSet></Tags>") != BUF_OK ||
	    req_path_blob(c, &r, name) != 0 ||
	    req_query_param(&r, "comp", "tags") != 0 ||
	    req_header(&r, "Content-Type", "application/xml; charset=utf-8") != 0 ||
	    (if_tags && req_header(&r, "x-ms-if-tags", if_tags) != 0))
		goto nomem;
	r.body = buf_cstr(&body);
	r.body_len = body.len;
	r.has_body = 1;
	rc = exec_one(c, &r, res);
	goto out;
nomem:
	rc = result_nomem(res);
out:
	req_free(&r);
	buf_free(&body);
	return rc;
}

struct tags_parse {
	struct blob_tag_set *set;
	int overflow;
};

static int
tags_end(void *ctx, const char *path, const char *text, size_t len)
{
	struct tags_parse *tp = ctx;
	struct blob_tag_set *s = tp->set;
	struct span sp = { text, len };

	if (strcmp(path, "/Tags/TagSet/Tag") == 0) {
		if (s->n < BLOB_MAX_TAGS)
			s->n++;
		else
			tp->overflow = 1;
	} else if (strcmp(path, "/Tags/TagSet/Tag/Key") == 0 && s->n < BLOB_MAX_TAGS) {
		if (copy_span(s->key[s->n], sizeof s->key[s->n], sp) != 0)
			tp->overflow = 1;
	} else if (strcmp(path, "/Tags/TagSet/Tag/Value") == 0 &&
	    s->n < BLOB_MAX_TAGS) {
		if (copy_span(s->value[s->n], sizeof s->value[s->n], sp) != 0)
			tp->overflow = 1;
	}
	return 0;
}

enum blob_xml_err
blob_parse_tags_answer(const char *xml, size_t len, struct blob_tag_set *out)
{
	struct tags_parse tp = { out, 0 };
	struct blob_xml_walk w = { &tp, NULL, tags_end };
	enum blob_xml_err e;

	memset(out, 0, sizeof *out);
	e = blob_xml_walk(xml, len, &w);
	return e == BLOB_XML_OK && tp.overflow ? BLOB_XML_MALFORMED : e;
}

int
blob_get_tags(struct blob_client *c, const char *name, struct blob_tag_set *out,
    struct blob_result *res)
{
	struct blob_req r;
	enum blob_xml_err xe;
	int rc;

	result_clear(res);
	memset(out, 0, sizeof *out);
	if (!name_ok(name))
		return result_set(res, BLOB_BAD_INPUT, "bad blob name");
	req_init(&r, "GET");
	if (req_path_blob(c, &r, name) != 0 || req_query_param(&r, "comp", "tags") != 0) {
		rc = result_nomem(res);
		goto out;
	}
	rc = exec_one(c, &r, res);
	if (rc == BLOB_OK && (xe = blob_parse_tags_answer(r.answer.ptr ? r.answer.ptr : "",
	    r.answer.len, out)) != BLOB_XML_OK)
		rc = xe == BLOB_XML_NOMEM ? result_nomem(res) :
		    result_set(res, BLOB_FAILED, "malformed tag answer");
out:
	req_free(&r);
	return rc;
}

int
blob_container_create(struct blob_client *c, struct blob_result *res)
{
	struct blob_req r;
	int rc;

	result_clear(res);
	req_init(&r, "PUT");
	r.has_body = 1;	/* an empty PUT still says Content-Length: 0 */
	if (req_path_container(c, &r) != 0 ||
	    req_query_param(&r, "restype", "container") != 0) {
		rc = result_nomem(res);
		goto out;
	}
	rc = exec_one(c, &r, res);
	if (rc == BLOB_FAILED && res->http_status == 409 &&
	    strcmp(res->code, "ContainerAlreadyExists") == 0) {
		result_clear(res);
		res->http_status = 409;
		rc = BLOB_OK;
	}
out:
	req_free(&r);
	return rc;
}

int
blob_container_delete(struct blob_client *c, struct blob_result *res)
{
	struct blob_req r;
	int rc;

	result_clear(res);
	req_init(&r, "DELETE");
	if (req_path_container(c, &r) != 0 ||
	    req_query_param(&r, "restype", "container") != 0) {
		rc = result_nomem(res);
		goto out;
	}
	rc = exec_one(c, &r, res);
out:
	req_free(&r);
	return rc;
}

int
blob_undelete(struct blob_client *c, const char *name, struct blob_result *res)
{
	struct blob_req r;
	int rc;

	result_clear(res);
	if (!name_ok(name))
		return result_set(res, BLOB_BAD_INPUT, "bad blob name");
	req_init(&r, "PUT");
	r.has_body = 1;
	if (req_path_blob(c, &r, name) != 0 ||
	    req_query_param(&r, "comp", "undelete") != 0) {
		rc = result_nomem(res);
		goto out;
	}
	rc = exec_one(c, &r, res);
out:
	req_free(&r);
	return rc;
}

struct block_counts_parse {
	struct blob_block_counts *out;
};

static int
block_list_end(void *ctx, const char *path, const char *text, size_t len)
{
	struct blob_block_counts *out = ctx;

	(void)text;
	(void)len;
	if (strcmp(path, "/BlockList/CommittedBlocks/Block") == 0)
		out->committed++;
	else if (strcmp(path, "/BlockList/UncommittedBlocks/Block") == 0)
		out->uncommitted++;
	return 0;
}

enum blob_xml_err
blob_parse_block_list_answer(const char *xml, size_t len, struct blob_block_counts *out)
{
	struct blob_xml_walk w = { out, NULL, block_list_end };

	memset(out, 0, sizeof *out);
	return blob_xml_walk(xml, len, &w);
}

int
blob_get_block_list(struct blob_client *c, const char *name,
    struct blob_block_counts *out, struct blob_result *res)
{
	struct blob_req r;
	enum blob_xml_err xe;
	int rc;

	result_clear(res);
	memset(out, 0, sizeof *out);
	if (!name_ok(name))
		return result_set(res, BLOB_BAD_INPUT, "bad blob name");
	req_init(&r, "GET");
	if (req_path_blob(c, &r, name) != 0 ||
	    req_query_param(&r, "comp", "blocklist") != 0 ||
	    req_query_param(&r, "blocklisttype", "all") != 0) {
		rc = result_nomem(res);
		goto out;
	}
	rc = exec_one(c, &r, res);
	if (rc == BLOB_OK && (xe = blob_parse_block_list_answer(r.answer.ptr ?
	    r.answer.ptr : "", r.answer.len, out)) != BLOB_XML_OK)
		rc = xe == BLOB_XML_NOMEM ? result_nomem(res) :
		    result_set(res, BLOB_FAILED, "malformed block list answer");
out:
	req_free(&r);
	return rc;
}

/* ---- uploads ------------------------------------------------------------- */

/* "k=v&k2=v2", percent-encoded, for x-ms-tags. */
static int
tags_header(const struct blob_tag *tags, size_t n, struct buf *out)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if ((i > 0 && buf_append(out, "&", 1) != BUF_OK) ||
		    sign_percent_encode(tags[i].key, strlen(tags[i].key), 0,
		    out) != SIGN_OK || buf_append(out, "=", 1) != BUF_OK ||
		    sign_percent_encode(tags[i].value, strlen(tags[i].value), 0,
		    out) != SIGN_OK)
			return -1;
	}
	return 0;
}

/* The headers every creating call carries: condition, tags, content type,
 * and (when known) the size and SHA-256 metadata. */
static int
creating_headers(struct blob_req *r, const struct blob_upload_opts *o,
    int create_only, int type_header_is_blob, const char *size,
    const char *sha_hex)
{
	struct buf tags = BUF_INIT(8192);
	int rc = -1;
	const char *ct = o->content_type && o->content_type[0] ?
	    o->content_type : "application/octet-stream";

	if (create_only && req_header(r, "If-None-Match", "*") != 0)
		goto out;
	r->create_only = create_only;
	if (o->ntags > 0) {
		if (tags_header(o->tags, o->ntags, &tags) != 0 ||
		    req_header(r, "x-ms-tags", buf_cstr(&tags)) != 0)
			goto out;
	}
	if (req_header(r, type_header_is_blob ? "x-ms-blob-content-type" :
	    "Content-Type", ct) != 0)
		goto out;
	if (size && req_header(r, "x-ms-meta-size", size) != 0)
		goto out;
	if (sha_hex && req_header(r, "x-ms-meta-sha256", sha_hex) != 0)
		goto out;
	rc = 0;
out:
	buf_free(&tags);
	return rc;
}

/* Content-MD5 for data[len]; known is the digest when the caller already
 * computed it on the way in. */
static int
md5_header(struct blob_req *r, const void *data, size_t len,
    const unsigned char *known)
{
	unsigned char md5[16];
	struct buf b64 = BUF_INIT(64);
	int rc = -1;

	if (known != NULL)
		memcpy(md5, known, sizeof md5);
	else if (gnutls_hash_fast(GNUTLS_DIG_MD5, data, len, md5) < 0)
		goto out;
	if (sign_base64_encode(md5, sizeof md5, &b64) != SIGN_OK ||
	    req_header(r, "Content-MD5", buf_cstr(&b64)) != 0)
		goto out;
	rc = 0;
out:
	buf_free(&b64);
	return rc;
}

/* Set up (not start) a Put Block request for data[len]. */
static int
put_block_req(struct blob_client *c, struct blob_req *r, const char *name,
    const char *id_b64, const void *data, size_t len, const unsigned char *md5)
{
	req_init(r, "PUT");
	r->body = data;
	r->body_len = len;
	r->has_body = 1;
	if (req_path_blob(c, r, name) != 0 ||
	    req_query_param(r, "comp", "block") != 0 ||
	    req_query_param(r, "blockid", id_b64) != 0 ||
	    md5_header(r, data, len, md5) != 0)
		return -1;
	return 0;
}

int
blob_put_block(struct blob_client *c, const char *name, const char *block_id_b64,
    const void *data, size_t len, struct blob_result *res)
{
	struct blob_req r;
	int rc;

	result_clear(res);
	if (!name_ok(name) || block_id_b64 == NULL || block_id_b64[0] == '\0' ||
	    strlen(block_id_b64) > 88 || (len > 0 && data == NULL))
		return result_set(res, BLOB_BAD_INPUT, "bad blob name or block");
	if (put_block_req(c, &r, name, block_id_b64, data, len, NULL) != 0)
		rc = result_nomem(res);
	else
		rc = exec_one(c, &r, res);
	req_free(&r);
	return rc;
}

static int
block_list_body(const char *const *ids, size_t nids, struct buf *body)
{
	size_t i;

	if (buf_append_cstr(body, "<?xml version=\"1.0\" encoding=\"utf-8\"?>"
	    "<BlockList>") != BUF_OK)
		return -1;
	for (i = 0; i < nids; i++)
		if (buf_append_cstr(body, "<Latest>") != BUF_OK ||
		    blob_xml_escape(body, ids[i]) != BUF_OK ||
		    buf_append_cstr(body, "</Latest>") != BUF_OK)
			return -1;
	return buf_append_cstr(body, "</BlockList>") == BUF_OK ? 0 : -1;
}

/* Put Block List with the creating headers. */
static int
commit_block_list(struct blob_client *c, const char *name,
    const char *const *ids, size_t nids, const struct blob_upload_opts *o,
    int create_only, const char *size, const char *sha_hex,
    struct blob_req *r, struct blob_result *res)
{
	struct buf body = BUF_INIT((size_t)MAX_BLOCKS * 128 + 256);
	int rc;

	req_init(r, "PUT");
	if (block_list_body(ids, nids, &body) != 0 ||
	    req_path_blob(c, r, name) != 0 ||
	    req_query_param(r, "comp", "blocklist") != 0 ||
	    creating_headers(r, o, create_only, 1, size, sha_hex) != 0 ||
	    req_header(r, "Content-Type", "application/xml; charset=utf-8") != 0) {
		rc = result_nomem(res);
		goto out;
	}
	r->body = buf_cstr(&body);
	r->body_len = body.len;
	r->has_body = 1;
	rc = exec_one(c, r, res);
out:
	buf_free(&body);
	return rc;
}

int
blob_put_block_list_create(struct blob_client *c, const char *name,
    const char *const *ids, size_t nids, const struct blob_upload_opts *opts,
    struct blob_result *res)
{
	static const struct blob_upload_opts none = { NULL, NULL, 0, -1 };
	struct blob_req r;
	int rc;

	result_clear(res);
	if (opts == NULL)
		opts = &none;
	if (!name_ok(name) || nids > MAX_BLOCKS || (nids > 0 && ids == NULL) ||
	    !tags_ok(opts->tags, opts->ntags))
		return result_set(res, BLOB_BAD_INPUT, "bad blob name, ids or tags");
	rc = commit_block_list(c, name, ids, nids, opts, 1, NULL, NULL, &r, res);
	req_free(&r);
	return rc;
}

/*
 * A streamed upload is a pipeline over in_flight block buffers.  The
 * caller's thread reads a block from read_fn one chunk at a time, moving
 * curl along between chunks; a hashing thread then takes the block's MD5
 * (its Content-MD5) and feeds it to the body's SHA-256, blocks in order;
 * then the caller's thread starts its Put Block.  Hashing costs about
 * 0.6 s of CPU per 256 MiB (GnuTLS: MD5 ~550 MiB/s, SHA-256 ~1.4 GiB/s);
 * done on the thread that drives curl it stalled the transfers in flight.
 *
 * The hashing thread touches only the block buffers queued to it and the
 * two hash handles, and publishes each digest under hasher.mu before it
 * wakes curl_multi_poll; the caller's thread leaves a queued buffer alone
 * until then.  The thread lives for one upload and is joined on every
 * path.  If it cannot be started, blocks are hashed inline.
 */
enum slot_state { SLOT_FREE, SLOT_READING, SLOT_HASHING, SLOT_SENDING };

struct upload_slot {
	char *data;		/* block_size bytes, mapped on first use */
	size_t len;
	unsigned index;		/* the block's number in the body */
	unsigned char md5[16];	/* written by the hasher before it publishes */
	enum slot_state state;
	struct blob_req req;
};

struct hasher {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thread;
	int started, stop, failed;
	struct upload_slot **queue;	/* ring of cap; FIFO keeps SHA-256 in order */
	unsigned cap, head, count;
	unsigned hashed;		/* blocks hashed so far (they go in order) */
	gnutls_hash_hd_t sha, md5;
	CURLM *wake;
};

struct upload {
	struct blob_client *c;
	blob_read_fn read;
	void *ctx;
	uint64_t total;
	int eof;
};

static int
hash_block(struct hasher *h, struct upload_slot *s)
{
	if (gnutls_hash(h->md5, s->data, s->len) < 0 ||
	    gnutls_hash(h->sha, s->data, s->len) < 0)
		return -1;
	gnutls_hash_output(h->md5, s->md5);	/* also resets it for the next */
	return 0;
}

static void *
hasher_main(void *arg)
{
	struct hasher *h = arg;

	pthread_mutex_lock(&h->mu);
	for (;;) {
		struct upload_slot *s;
		int failed;

		while (h->count == 0 && !h->stop)
			pthread_cond_wait(&h->cv, &h->mu);
		if (h->stop)
			break;
		s = h->queue[h->head];
		pthread_mutex_unlock(&h->mu);
		failed = hash_block(h, s) != 0;
		pthread_mutex_lock(&h->mu);
		h->head = (h->head + 1) % h->cap;
		h->count--;
		if (failed)
			h->failed = 1;
		else
			h->hashed++;
		curl_multi_wakeup(h->wake);
		if (failed)
			break;
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

/* Hash handles and queue; the thread itself is started by hasher_start. */
static int
hasher_init(struct hasher *h, unsigned cap, CURLM *wake)
{
	memset(h, 0, sizeof *h);
	h->cap = cap;
	h->wake = wake;
	if ((h->queue = calloc(cap, sizeof *h->queue)) == NULL)
		return -1;
	if (gnutls_hash_init(&h->sha, GNUTLS_DIG_SHA256) < 0) {
		h->sha = NULL;
		return -1;
	}
	if (gnutls_hash_init(&h->md5, GNUTLS_DIG_MD5) < 0) {
		h->md5 = NULL;
		return -1;
	}
	if (pthread_mutex_init(&h->mu, NULL) != 0)
		return -1;
	if (pthread_cond_init(&h->cv, NULL) != 0) {
		pthread_mutex_destroy(&h->mu);
		return -1;
	}
	h->started = -1;	/* sync objects exist, thread not yet */
	return 0;
}

static void
hasher_start(struct hasher *h)
{
	if (pthread_create(&h->thread, NULL, hasher_main, h) == 0)
		h->started = 1;
}

/* Queue s (whose bytes are final) for hashing; inline without a thread. */
static void
hasher_submit(struct hasher *h, struct upload_slot *s)
{
	if (h->started != 1) {
		if (h->failed || hash_block(h, s) != 0)
			h->failed = 1;
		else
			h->hashed++;
		return;
	}
	pthread_mutex_lock(&h->mu);
	assert(h->count < h->cap);
	h->queue[(h->head + h->count) % h->cap] = s;
	h->count++;
	pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->mu);
}

static void
hasher_progress(struct hasher *h, unsigned *hashed, int *failed)
{
	if (h->started == 1)
		pthread_mutex_lock(&h->mu);
	*hashed = h->hashed;
	*failed = h->failed;
	if (h->started == 1)
		pthread_mutex_unlock(&h->mu);
}

/* Stop and join the thread (it finishes the block in hand); idempotent. */
static void
hasher_stop(struct hasher *h)
{
	if (h->started != 1)
		return;
	pthread_mutex_lock(&h->mu);
	h->stop = 1;
	pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->mu);
	pthread_join(h->thread, NULL);
	h->started = -1;
}

/* Join, then free; sha_out (may be NULL) receives the body's SHA-256. */
static void
hasher_free(struct hasher *h, unsigned char *sha_out)
{
	hasher_stop(h);
	if (h->sha != NULL)
		gnutls_hash_deinit(h->sha, sha_out);
	if (h->md5 != NULL)
		gnutls_hash_deinit(h->md5, NULL);
	h->sha = h->md5 = NULL;
	if (h->started == -1) {
		pthread_cond_destroy(&h->cv);
		pthread_mutex_destroy(&h->mu);
	}
	h->started = 0;
	free(h->queue);
	h->queue = NULL;
}

/* Read one chunk from the caller onto the end of s. */
static int
upload_read_chunk(struct upload *u, struct upload_slot *s, struct blob_result *res)
{
	size_t n = u->c->block_size - s->len;
	long got;

	if (n > READ_CHUNK)
		n = READ_CHUNK;
	got = u->read(u->ctx, s->data + s->len, n);
	if (got < 0 || (size_t)got > n)
		return result_set(res, BLOB_ABORTED, "the body could not be read");
	if (got == 0)
		u->eof = 1;
	s->len += (size_t)got;
	u->total += (uint64_t)got;
	return BLOB_OK;
}

/* Block buffers are mapped, not malloc'd: glibc would serve 8 MiB from the
 * heap once one such chunk was freed (its mmap threshold adapts) and keep
 * it after the upload; munmap gives it back at once. */
static int
slot_map(struct blob_client *c, struct upload_slot *s)
{
	void *p;

	if (s->data != NULL)
		return 0;
	p = mmap(NULL, c->block_size, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	s->data = p;
	return 0;
}

static void
slot_unmap(struct blob_client *c, struct upload_slot *s)
{
	if (s->data != NULL)
		munmap(s->data, c->block_size);
	s->data = NULL;
}

static void
block_id(const unsigned char token[12], unsigned idx, struct buf *out)
{
	unsigned char raw[BLOCK_ID_RAW];

	memcpy(raw, token, 12);
	raw[12] = (unsigned char)(idx >> 24);
	raw[13] = (unsigned char)(idx >> 16);
	raw[14] = (unsigned char)(idx >> 8);
	raw[15] = (unsigned char)idx;
	buf_reset(out);
	if (sign_base64_encode(raw, sizeof raw, out) != SIGN_OK)
		buf_reset(out);
}

static struct upload_slot *
slot_of(struct upload_slot *slots, unsigned n, const struct blob_req *r)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if (&slots[i].req == r)
			return &slots[i];
	return NULL;
}

static void
sha_hex_of(const unsigned char sha[32], char hex[65])
{
	static const char digits[] = "0123456789abcdef";
	unsigned i;

	for (i = 0; i < 32; i++) {
		hex[2 * i] = digits[sha[i] >> 4];
		hex[2 * i + 1] = digits[sha[i] & 15];
	}
	hex[64] = '\0';
}

static int
upload_common(struct blob_client *c, const char *name,
    const struct blob_upload_opts *opts, blob_read_fn read_fn, void *ctx,
    struct blob_upload_info *info, struct blob_result *res, int create_only)
{
	static const struct blob_upload_opts none = { NULL, NULL, 0, -1 };
	struct upload u;
	struct hasher h;
	struct upload_slot *slots = NULL, *filling = NULL;
	struct buf idtext = BUF_INIT((size_t)MAX_BLOCKS * 32), id = BUF_INIT(64);
	const char **ids = NULL;
	struct blob_req commit;
	unsigned char token[12], sha[32];
	char size_str[32], sha_hex[65];
	unsigned i, nslots = c->in_flight, nblocks = 0;
	size_t idlen = 0;
	int rc, have_hasher = 0, commit_used = 0;

	result_clear(res);
	memset(info, 0, sizeof *info);
	memset(&u, 0, sizeof u);
	if (opts == NULL)
		opts = &none;
	if (!name_ok(name) || read_fn == NULL || !tags_ok(opts->tags, opts->ntags))
		return result_set(res, BLOB_BAD_INPUT, "bad blob name, reader or tags");
	if (deadline_passed(c))
		return result_set(res, BLOB_DEADLINE, "deadline passed before the call");
	u.c = c;
	u.read = read_fn;
	u.ctx = ctx;
	slots = calloc(nslots, sizeof *slots);
	if (slots == NULL || hasher_init(&h, nslots, c->multi) != 0) {
		if (slots != NULL)
			hasher_free(&h, NULL);
		free(slots);
		return result_set(res, BLOB_NOMEM, "out of memory");
	}
	have_hasher = 1;
	for (i = 0; i < nslots; i++)
		req_init(&slots[i].req, "PUT");
	if (gnutls_rnd(GNUTLS_RND_NONCE, token, sizeof token) < 0 ||
	    slot_map(c, &slots[0]) != 0) {
		rc = result_nomem(res);
		goto out;
	}
	/* The first block decides between one Put Blob and staged blocks;
	 * nothing is in flight yet, so it is read straight through. */
	while (!u.eof && slots[0].len < c->block_size)
		if ((rc = upload_read_chunk(&u, &slots[0], res)) != BLOB_OK)
			goto out;

	if (u.eof && slots[0].len <= c->single_put_max) {
		/* One Put Blob: the whole body is in slot 0. */
		hasher_submit(&h, &slots[0]);
		if (h.failed) {
			rc = result_set(res, BLOB_FAILED, "hashing failed");
			goto out;
		}
		have_hasher = 0;
		hasher_free(&h, sha);
		goto single;
	}

	hasher_start(&h);
	filling = &slots[0];
	for (;;) {
		struct blob_req *done;
		struct upload_slot *s;
		int64_t next_retry;
		unsigned hashed;
		int failed, progressed = 0, busy = 0;

		/* A block whose transfer finished frees its buffer. */
		while ((done = exec_collect(c, &next_retry)) != NULL) {
			if (done->res.status != BLOB_OK) {
				*res = done->res;
				rc = res->status;
				goto out;
			}
			if ((s = slot_of(slots, nslots, done)) == NULL) {
				rc = result_set(res, BLOB_FAILED, "lost a block transfer");
				goto out;
			}
			s->state = SLOT_FREE;
			progressed = 1;
		}
		/* A hashed block goes out. */
		hasher_progress(&h, &hashed, &failed);
		if (failed) {
			rc = result_set(res, BLOB_FAILED, "hashing failed");
			goto out;
		}
		for (i = 0; i < nslots; i++) {
			s = &slots[i];
			if (s->state != SLOT_HASHING || s->index >= hashed)
				continue;
			req_free(&s->req);
			if (put_block_req(c, &s->req, name,
			    idtext.ptr + (size_t)s->index * (idlen + 1), s->data,
			    s->len, s->md5) != 0 || exec_start(c, &s->req) != 0) {
				rc = result_nomem(res);
				goto out;
			}
			s->state = SLOT_SENDING;
			progressed = 1;
		}
		/* One more chunk into the block being read, taking a free
		 * buffer for it if need be. */
		if (filling == NULL && !u.eof) {
			for (i = 0; i < nslots && filling == NULL; i++)
				if (slots[i].state == SLOT_FREE)
					filling = &slots[i];
			if (filling != NULL) {
				if (slot_map(c, filling) != 0) {
					rc = result_nomem(res);
					goto out;
				}
				filling->len = 0;
				filling->state = SLOT_READING;
			}
		}
		if (filling != NULL && !u.eof && filling->len < c->block_size) {
			if ((rc = upload_read_chunk(&u, filling, res)) != BLOB_OK)
				goto out;
			progressed = 1;
		}
		if (filling != NULL && (u.eof || filling->len == c->block_size)) {
			if (filling->len == 0) {
				filling->state = SLOT_FREE;
			} else {
				if (nblocks >= MAX_BLOCKS) {
					rc = result_set(res, BLOB_BAD_INPUT, "body needs more "
					    "than 50000 blocks: raise block_size");
					goto out;
				}
				block_id(token, nblocks, &id);
				if (id.len == 0 || (idlen && id.len != idlen) ||
				    buf_append(&idtext, id.ptr, id.len + 1) != BUF_OK) {
					rc = result_nomem(res);
					goto out;
				}
				idlen = id.len;
				filling->index = nblocks++;
				filling->state = SLOT_HASHING;
				hasher_submit(&h, filling);
			}
			filling = NULL;
			progressed = 1;
		}
		for (i = 0; i < nslots; i++)
			busy |= slots[i].state == SLOT_HASHING ||
			    slots[i].state == SLOT_SENDING;
		if (u.eof && filling == NULL && !busy)
			break;
		/* Nothing to do until a socket, the hasher or a retry
		 * timer calls. */
		if (!progressed)
			exec_poll(c, next_retry, 1000);
	}
	have_hasher = 0;
	hasher_free(&h, sha);
	if (opts->expected_size >= 0 && (uint64_t)opts->expected_size != u.total) {
		rc = result_set(res, BLOB_BAD_INPUT, "body size differs from the "
		    "expected size; nothing committed");
		goto out;
	}
	ids = calloc(nblocks ? nblocks : 1, sizeof *ids);
	if (ids == NULL) {
		rc = result_nomem(res);
		goto out;
	}
	for (i = 0; i < nblocks; i++)
		ids[i] = idtext.ptr + (size_t)i * (idlen + 1);
	for (i = 0; i < nslots; i++)
		slot_unmap(c, &slots[i]);
	snprintf(size_str, sizeof size_str, "%llu", (unsigned long long)u.total);
	sha_hex_of(sha, sha_hex);
	commit_used = 1;
	rc = commit_block_list(c, name, ids, nblocks, opts, create_only, size_str,
	    sha_hex, &commit, res);
	if (rc == BLOB_OK)
		set_field(info->etag, sizeof info->etag, commit.rh.etag,
		    strlen(commit.rh.etag));
	goto done;

single:
	if (opts->expected_size >= 0 && (uint64_t)opts->expected_size != u.total) {
		rc = result_set(res, BLOB_BAD_INPUT, "body size differs from the "
		    "expected size; nothing committed");
		goto out;
	}
	snprintf(size_str, sizeof size_str, "%llu", (unsigned long long)u.total);
	sha_hex_of(sha, sha_hex);
	{
		struct blob_req *r = &slots[0].req;

		req_free(r);
		req_init(r, "PUT");
		r->body = slots[0].data;
		r->body_len = slots[0].len;
		r->has_body = 1;
		if (req_path_blob(c, r, name) != 0 ||
		    req_header(r, "x-ms-blob-type", "BlockBlob") != 0 ||
		    md5_header(r, r->body, r->body_len, slots[0].md5) != 0 ||
		    creating_headers(r, opts, create_only, 1, size_str, sha_hex) != 0) {
			rc = result_nomem(res);
			goto out;
		}
		rc = exec_one(c, r, res);
		if (rc == BLOB_OK)
			set_field(info->etag, sizeof info->etag, r->rh.etag,
			    strlen(r->rh.etag));
	}
done:
	/* A refused create read and hashed the whole body too: the caller
	 * needs size and hash to tell its own earlier try from someone
	 * else's blob (BLOB_EXISTS_MAYBE_OURS, an idempotent resume). */
	if (rc == BLOB_OK || rc == BLOB_EXISTS || rc == BLOB_EXISTS_MAYBE_OURS) {
		info->size = u.total;
		memcpy(info->sha256, sha, sizeof sha);
		memcpy(info->sha256_hex, sha_hex, sizeof sha_hex);
	}
out:
	/* Join the hasher before any buffer it may be reading goes away. */
	if (have_hasher)
		hasher_free(&h, NULL);
	for (i = 0; i < nslots; i++) {
		if (slots[i].state == SLOT_SENDING)
			exec_cancel(c, &slots[i].req);
		req_free(&slots[i].req);
		slot_unmap(c, &slots[i]);
	}
	if (commit_used)
		req_free(&commit);
	free(slots);
	free(ids);
	buf_free(&idtext);
	buf_free(&id);
	return rc;
}

int
blob_upload_create(struct blob_client *c, const char *name,
    const struct blob_upload_opts *opts, blob_read_fn read_fn, void *ctx,
    struct blob_upload_info *info, struct blob_result *res)
{
	return upload_common(c, name, opts, read_fn, ctx, info, res, 1);
}

int
blob_upload_overwrite(struct blob_client *c, const char *name,
    const struct blob_upload_opts *opts, blob_read_fn read_fn, void *ctx,
    struct blob_upload_info *info, struct blob_result *res)
{
	return upload_common(c, name, opts, read_fn, ctx, info, res, 0);
}

int
blob_purge_uncommitted(struct blob_client *c, const char *name,
    struct blob_result *res)
{
	static const struct blob_tag pending[] = { { "state", "pending" } };
	struct blob_upload_opts o = { NULL, pending, 1, 0 };
	int rc;

	rc = blob_put_block_list_create(c, name, NULL, 0, &o, res);
	if (rc == BLOB_EXISTS_MAYBE_OURS) {
		/* An earlier try of this very commit may have landed; the
		 * guarded delete below is still safe, because it only removes
		 * a blob tagged pending.  But a committed blob might be there:
		 * refuse and let the caller look again. */
		res->status = BLOB_EXISTS;
		return BLOB_EXISTS;
	}
	if (rc != BLOB_OK)
		return rc;
	return blob_delete(c, name, "\"state\" = 'pending'", NULL, res);
}

/* ---- listing -------------------------------------------------------------- */

struct list_parse {
	struct buf name;
	char etag[128];
	char sha[65];
	uint64_t size;
	struct blob_tag_set tags;
	struct blob_tag tagv[BLOB_MAX_TAGS];
	struct buf *marker;
	blob_list_fn on_item;
	int (*on_name)(void *, const char *);
	void *ctx;
	int stopped;
	int nomem;
};

static int
list_start(void *ctx, const char *path)
{
	struct list_parse *lp = ctx;

	if (strcmp(path, "/EnumerationResults/Blobs/Blob") == 0) {
		buf_reset(&lp->name);
		lp->etag[0] = lp->sha[0] = '\0';
		lp->size = 0;
		/* A Tag without Key or Value must not inherit the last blob's. */
		memset(&lp->tags, 0, sizeof lp->tags);
	}
	return 0;
}

/* Nonzero (stop the walk) when text does not fit in b. */
static int
list_append(struct list_parse *lp, struct buf *b, const char *text, size_t len)
{
	enum buf_err e = buf_append(b, text, len);

	if (e == BUF_NOMEM)
		lp->nomem = 1;
	return e != BUF_OK;
}

static int
list_end(void *ctx, const char *path, const char *text, size_t len)
{
	struct list_parse *lp = ctx;
	static const char blob[] = "/EnumerationResults/Blobs/Blob";
	struct span sp = { text, len };
	const char *rest;
	size_t i;

	if (strcmp(path, "/EnumerationResults/NextMarker") == 0) {
		buf_reset(lp->marker);
		return list_append(lp, lp->marker, text, len);
	}
	if (strncmp(path, blob, sizeof blob - 1) != 0)
		return 0;
	rest = path + sizeof blob - 1;
	if (strcmp(rest, "/Name") == 0) {
		buf_reset(&lp->name);
		return list_append(lp, &lp->name, text, len);
	} else if (strcmp(rest, "/Properties/Content-Length") == 0) {
		int64_t v = parse_i64(text, len);

		lp->size = v > 0 ? (uint64_t)v : 0;
	} else if (strcmp(rest, "/Properties/Etag") == 0)
		set_field(lp->etag, sizeof lp->etag, text, len);
	else if (strcmp(rest, "/Metadata/sha256") == 0)
		set_field(lp->sha, sizeof lp->sha, text, len);
	else if (strcmp(rest, "/Tags/TagSet/Tag") == 0) {
		if (lp->tags.n < BLOB_MAX_TAGS)
			lp->tags.n++;
	} else if (strcmp(rest, "/Tags/TagSet/Tag/Key") == 0) {
		if (lp->tags.n < BLOB_MAX_TAGS && copy_span(lp->tags.key[lp->tags.n],
		    sizeof lp->tags.key[0], sp) != 0)
			lp->tags.key[lp->tags.n][0] = '\0';
	} else if (strcmp(rest, "/Tags/TagSet/Tag/Value") == 0) {
		if (lp->tags.n < BLOB_MAX_TAGS && copy_span(lp->tags.value[lp->tags.n],
		    sizeof lp->tags.value[0], sp) != 0)
			lp->tags.value[lp->tags.n][0] = '\0';
	} else if (rest[0] == '\0') {
		if (lp->on_name != NULL) {
			if (lp->on_name(lp->ctx, buf_cstr(&lp->name)) != 0)
				lp->stopped = 1;
		} else {
			struct blob_list_item it;

			for (i = 0; i < lp->tags.n; i++) {
				lp->tagv[i].key = lp->tags.key[i];
				lp->tagv[i].value = lp->tags.value[i];
			}
			it.name = buf_cstr(&lp->name);
			it.size = lp->size;
			it.etag = lp->etag;
			it.meta_sha256 = lp->sha;
			it.tags = lp->tagv;
			it.ntags = lp->tags.n;
			if (lp->on_item(lp->ctx, &it) != 0)
				lp->stopped = 1;
		}
		return lp->stopped;
	}
	return 0;
}

enum blob_xml_err
blob_parse_list_answer(const char *xml, size_t len, blob_list_fn on_item,
    int (*on_name)(void *, const char *), void *ctx, struct buf *next_marker)
{
	struct blob_xml_walk w = { NULL, list_start, list_end };
	struct list_parse *lp;
	enum blob_xml_err e;

	assert((on_item == NULL) != (on_name == NULL));
	buf_reset(next_marker);
	lp = bx_calloc(1, sizeof *lp);
	if (lp == NULL)
		return BLOB_XML_NOMEM;
	buf_init(&lp->name, 4096);
	lp->marker = next_marker;
	lp->on_item = on_item;
	lp->on_name = on_name;
	lp->ctx = ctx;
	w.ctx = lp;
	e = blob_xml_walk(xml, len, &w);
	if (lp->stopped)
		e = BLOB_XML_STOPPED;
	else if (e == BLOB_XML_STOPPED)	/* a name or marker did not fit */
		e = lp->nomem ? BLOB_XML_NOMEM : BLOB_XML_MALFORMED;
	buf_free(&lp->name);
	bx_free(lp);
	return e;
}

/* Page through a container listing (List Blobs or Find Blobs by Tags). */
static int
list_pages(struct blob_client *c, const char *comp, const char *prefix,
    const char *include, const char *where, blob_list_fn on_item,
    int (*on_name)(void *, const char *), void *ctx, struct blob_result *res)
{
	struct blob_req r;
	struct buf marker = BUF_INIT(4096);
	char maxres[16];
	int rc = BLOB_OK;
	enum blob_xml_err xe;

	do {
		req_init(&r, "GET");
		snprintf(maxres, sizeof maxres, "%u", c->page_size);
		if (req_path_container(c, &r) != 0 ||
		    req_query_param(&r, "restype", "container") != 0 ||
		    req_query_param(&r, "comp", comp) != 0 ||
		    (prefix && prefix[0] && req_query_param(&r, "prefix", prefix) != 0) ||
		    (include && include[0] && req_query_param(&r, "include", include) != 0) ||
		    (where && req_query_param(&r, "where", where) != 0) ||
		    (c->page_size && req_query_param(&r, "maxresults", maxres) != 0) ||
		    (marker.len && req_query_param(&r, "marker",
		    buf_cstr(&marker)) != 0)) {
			req_free(&r);
			rc = result_nomem(res);
			break;
		}
		buf_reset(&marker);
		rc = exec_one(c, &r, res);
		if (rc == BLOB_OK) {
			xe = blob_parse_list_answer(r.answer.ptr ? r.answer.ptr : "",
			    r.answer.len, on_item, on_name, ctx, &marker);
			if (xe == BLOB_XML_STOPPED)
				rc = result_set(res, BLOB_ABORTED, "stopped by the caller");
			else if (xe == BLOB_XML_NOMEM)
				rc = result_nomem(res);
			else if (xe != BLOB_XML_OK)
				rc = result_set(res, BLOB_FAILED, "malformed listing");
		}
		req_free(&r);
	} while (rc == BLOB_OK && marker.len > 0);
	buf_free(&marker);
	return rc;
}

int
blob_list(struct blob_client *c, const char *prefix, unsigned include,
    blob_list_fn on_item, void *ctx, struct blob_result *res)
{
	char inc[64];

	result_clear(res);
	if (on_item == NULL)
		return result_set(res, BLOB_BAD_INPUT, "no callback");
	snprintf(inc, sizeof inc, "%s%s%s",
	    include & BLOB_LIST_TAGS ? "tags," : "",
	    include & BLOB_LIST_METADATA ? "metadata," : "",
	    include & BLOB_LIST_UNCOMMITTED ? "uncommittedblobs," : "");
	if (inc[0])
		inc[strlen(inc) - 1] = '\0';
	return list_pages(c, "list", prefix, inc, NULL, on_item, NULL, ctx, res);
}

int
blob_find_by_tags(struct blob_client *c, const char *where_expr,
    int (*on_name)(void *, const char *), void *ctx, struct blob_result *res)
{
	result_clear(res);
	if (where_expr == NULL || on_name == NULL)
		return result_set(res, BLOB_BAD_INPUT, "no expression or callback");
	return list_pages(c, "blobs", NULL, NULL, where_expr, NULL, on_name, ctx, res);
}

/* ---- Blob Batch ------------------------------------------------------------ */

/* One sub-request of a batch: "DELETE <path> HTTP/1.1" with its own date and
 * signature ("Blob Batch" in the REST reference). */
static int
batch_append_delete(struct blob_client *c, struct buf *body, const char *boundary,
    size_t idx, const char *name, const char *if_tags, const char *date)
{
	struct blob_req sub;
	struct buf auth = BUF_INIT(256);
	size_t i;
	int rc = -1;

	req_init(&sub, "DELETE");
	if (req_path_blob(c, &sub, name) != 0 ||
	    req_header(&sub, "x-ms-date", date) != 0 ||
	    req_header(&sub, "x-ms-delete-snapshots", "include") != 0 ||
	    (if_tags && req_header(&sub, "x-ms-if-tags", if_tags) != 0) ||
	    req_header(&sub, "Content-Length", "0") != 0)
		goto out;
	if (buf_appendf(body, "--%s\r\nContent-Type: application/http\r\n"
	    "Content-Transfer-Encoding: binary\r\nContent-ID: %zu\r\n\r\n"
	    "DELETE %s%s%s HTTP/1.1\r\n", boundary, idx, buf_cstr(&sub.path),
	    c->sas ? "?" : "", c->sas ? c->sas : "") != BUF_OK)
		goto out;
	if (c->sas == NULL) {
		if (sign_shared_key(c->key, c->keylen, "DELETE", c->account,
		    buf_cstr(&sub.path), "", sub.hdr, sub.nhdr, &auth) != SIGN_OK ||
		    buf_appendf(body, "Authorization: %s\r\n", buf_cstr(&auth)) != BUF_OK)
			goto out;
	}
	for (i = 0; i < sub.nhdr; i++)
		if (buf_appendf(body, "%s: %s\r\n", sub.hdr[i].name,
		    sub.hdr[i].value) != BUF_OK)
			goto out;
	if (buf_append_cstr(body, "\r\n") != BUF_OK)
		goto out;
	rc = 0;
out:
	if (auth.ptr != NULL)
		memset(auth.ptr, 0, auth.len);
	buf_free(&auth);
	req_free(&sub);
	return rc;
}

/* Walk the multipart/mixed answer: each part carries "Content-ID: N" and
 * then the sub-response's status line and headers. */
void
blob_parse_batch_answer(const char *p, size_t len, struct blob_result *each, size_t n)
{
	const char *end = p + len, *part = p;

	for (;;) {
		const char *cid = memmem(part, (size_t)(end - part), "Content-ID:", 11);
		const char *http, *next, *code;
		char *stop;
		unsigned long idx;
		long st;

		if (cid == NULL)
			return;
		idx = strtoul(cid + 11, &stop, 10);
		next = memmem(cid + 11, (size_t)(end - cid - 11), "Content-ID:", 11);
		if (next == NULL)
			next = end;
		http = memmem(cid, (size_t)(next - cid), "HTTP/1.1 ", 9);
		part = next;
		if (http == NULL || idx >= n)
			continue;
		st = strtol(http + 9, NULL, 10);
		result_clear(&each[idx]);
		each[idx].http_status = st;
		code = memmem(http, (size_t)(next - http), "x-ms-error-code:", 16);
		if (code != NULL) {
			size_t cl;

			code += 16;
			while (*code == ' ')
				code++;
			cl = strcspn(code, "\r\n");
			set_field(each[idx].code, sizeof each[idx].code, code, cl);
		}
		each[idx].status = status_for_http(st, each[idx].code, 0);
		if (each[idx].status != BLOB_OK) {
			snprintf(each[idx].message, sizeof each[idx].message,
			    "HTTP %ld %s", st, each[idx].code);
		}
		if (next == end)
			return;
	}
}

int
blob_batch_delete(struct blob_client *c, const char *const *names, size_t n,
    const char *if_tags, struct blob_result *each, struct blob_result *res)
{
	struct blob_req r;
	struct buf body = BUF_INIT(4 * 1024 * 1024);
	unsigned char rnd[12];
	char boundary[64], ctype[128], date[32];
	size_t i;
	int rc;

	result_clear(res);
	if (n == 0 || n > BATCH_MAX || names == NULL || each == NULL)
		return result_set(res, BLOB_BAD_INPUT, "a batch holds 1 to 256 names");
	for (i = 0; i < n; i++) {
		result_clear(&each[i]);
		(void)result_set(&each[i], BLOB_FAILED, "no answer for this name");
		if (!name_ok(names[i]))
			return result_set(res, BLOB_BAD_INPUT, "bad blob name");
	}
	if (gnutls_rnd(GNUTLS_RND_NONCE, rnd, sizeof rnd) < 0)
		return result_set(res, BLOB_FAILED, "no randomness");
	snprintf(boundary, sizeof boundary, "batch_");
	for (i = 0; i < sizeof rnd; i++)
		snprintf(boundary + 6 + 2 * i, 3, "%02x", rnd[i]);
	snprintf(ctype, sizeof ctype, "multipart/mixed; boundary=%s", boundary);
	sign_time_rfc1123(time(NULL), date);
	req_init(&r, "POST");
	for (i = 0; i < n; i++)
		if (batch_append_delete(c, &body, boundary, i, names[i], if_tags,
		    date) != 0)
			goto nomem;
	if (buf_appendf(&body, "--%s--\r\n", boundary) != BUF_OK ||
	    req_path_container(c, &r) != 0 ||
	    req_query_param(&r, "restype", "container") != 0 ||
	    req_query_param(&r, "comp", "batch") != 0 ||
	    req_header(&r, "Content-Type", ctype) != 0)
		goto nomem;
	r.body = buf_cstr(&body);
	r.body_len = body.len;
	r.has_body = 1;
	rc = exec_one(c, &r, res);
	if (rc == BLOB_OK)
		blob_parse_batch_answer(buf_cstr(&r.answer), r.answer.len, each, n);
	goto out;
nomem:
	rc = result_nomem(res);
out:
	req_free(&r);
	if (body.ptr != NULL)
		memset(body.ptr, 0, body.len);	/* it held signatures */
	buf_free(&body);
	return rc;
}

/* ---- service properties --------------------------------------------------- */

static int
service_props_end(void *ctx, const char *path, const char *text, size_t len)
{
	struct blob_service_props *p = ctx;
	struct span s = { text, len };

	if (strcmp(path, "/StorageServiceProperties/DeleteRetentionPolicy/Enabled") == 0)
		p->delete_retention_enabled = span_eq_nocase_cstr(s, "true");
	else if (strcmp(path, "/StorageServiceProperties/DeleteRetentionPolicy/Days") == 0)
		p->delete_retention_days = (int)parse_i64(text, len);
	return 0;
}

static int
req_path_service(struct blob_client *c, struct blob_req *r)
{
	if (buf_appendf(&r->path, "%s/", c->path_prefix) != BUF_OK ||
	    req_query_param(r, "restype", "service") != 0 ||
	    req_query_param(r, "comp", "properties") != 0)
		return -1;
	return 0;
}

enum blob_xml_err
blob_parse_service_props_answer(const char *xml, size_t len, struct blob_service_props *out)
{
	struct blob_xml_walk w = { out, NULL, service_props_end };
	enum blob_xml_err e;

	memset(out, 0, sizeof *out);
	e = blob_xml_walk(xml, len, &w);
	if (out->delete_retention_days < 0)
		out->delete_retention_days = 0;
	return e;
}

int
blob_service_properties_get(struct blob_client *c, struct blob_service_props *out,
    struct blob_result *res)
{
	struct blob_req r;
	enum blob_xml_err xe;
	int rc;

	result_clear(res);
	memset(out, 0, sizeof *out);
	req_init(&r, "GET");
	if (req_path_service(c, &r) != 0) {
		rc = result_nomem(res);
		goto out;
	}
	rc = exec_one(c, &r, res);
	if (rc == BLOB_OK && (xe = blob_parse_service_props_answer(r.answer.ptr ?
	    r.answer.ptr : "", r.answer.len, out)) != BLOB_XML_OK)
		rc = xe == BLOB_XML_NOMEM ? result_nomem(res) :
		    result_set(res, BLOB_FAILED, "malformed service properties");
out:
	req_free(&r);
	return rc;
}

int
blob_service_properties_set(struct blob_client *c,
    const struct blob_service_props *p, struct blob_result *res)
{
	struct blob_req r;
	struct buf body = BUF_INIT(4096);
	int rc;

	result_clear(res);
	if (p->delete_retention_enabled && (p->delete_retention_days < 1 ||
	    p->delete_retention_days > 365))
		return result_set(res, BLOB_BAD_INPUT, "retention days must be 1..365");
	req_init(&r, "PUT");
	if (buf_appendf(&body, "<?xml version=\"1.0\" encoding=\"utf-8\"?>"
	    "<StorageServiceProperties><DeleteRetentionPolicy>"
	    "<Enabled>%s</Enabled>", p->delete_retention_enabled ? "true" :
	    "false") != BUF_OK ||
	    (p->delete_retention_enabled && buf_appendf(&body, "<Days>%d</Days>",
	    p->delete_retention_days) != BUF_OK) ||
	    buf_append_cstr(&body, "</DeleteRetentionPolicy>"
	    "</StorageServiceProperties>") != BUF_OK ||
	    req_path_service(c, &r) != 0 ||
	    req_header(&r, "Content-Type", "application/xml; charset=utf-8") != 0) {
		rc = result_nomem(res);
		goto out;
	}
	r.body = buf_cstr(&body);
	r.body_len = body.len;
	r.has_body = 1;
	rc = exec_one(c, &r, res);
out:
	req_free(&r);
	buf_free(&body);
	return rc;
}

/* ---- SAS URLs -------------------------------------------------------------- */

int
blob_sas_url(struct blob_client *c, const char *name, const char *perms,
    int64_t lifetime_s, const char *content_disposition, struct buf *out,
    struct blob_result *res)
{
	struct sas_service_fields f;
	struct blob_req r;
	struct buf q = BUF_INIT(8192);
	char start[24], expiry[24];
	time_t now = time(NULL);
	int rc;

	result_clear(res);
	if (!name_ok(name) || perms == NULL || perms[0] == '\0' || lifetime_s <= 0)
		return result_set(res, BLOB_BAD_INPUT, "bad name, permissions or lifetime");
	if (c->keylen == 0)
		return result_set(res, BLOB_BAD_INPUT, "a SAS needs the account key");
	memset(&f, 0, sizeof f);
	sign_time_iso8601(now - 300, start);
	sign_time_iso8601(now + (time_t)lifetime_s, expiry);
	f.permissions = perms;
	f.start = start;
	f.expiry = expiry;
	f.protocol = c->https ? "https" : "https,http";
	f.resource = "b";
	f.content_disposition = content_disposition;
	req_init(&r, "GET");
	if (req_path_blob(c, &r, name) != 0 ||
	    sas_sign_service(c->key, c->keylen, c->account, c->container, name,
	    &f, &q) != SIGN_OK ||
	    buf_appendf(out, "%s%s?%s", c->url_base, buf_cstr(&r.path),
	    buf_cstr(&q)) != BUF_OK)
		rc = result_nomem(res);
	else
		rc = BLOB_OK;
	req_free(&r);
	buf_free(&q);
	return rc;
}
