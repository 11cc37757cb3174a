/* sign.c - see sign.h. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <gnutls/gnutls.h>
#include <gnutls/crypto.h>

#include "base/base64.h"
#include "base/http_date.h"
#include "storage/sign.h"

#define CANON_MAX	(1024 * 1024)	/* a string-to-sign never needs more */

static enum sign_err
from_buf(enum buf_err e)
{
	return e == BUF_OK ? SIGN_OK : SIGN_NOMEM;
}

enum sign_err
sign_hmac_sha256(const void *key, size_t keylen, const void *msg, size_t msglen,
    unsigned char mac[32])
{
	if (gnutls_hmac_fast(GNUTLS_MAC_SHA256, key, keylen, msg, msglen, mac) < 0)
		return SIGN_CRYPTO;
	return SIGN_OK;
}

/* Both base64 directions are lib/base/base64's strict codec; these keep the
 * signer's error type for its callers. */
enum sign_err
sign_base64_encode(const void *p, size_t n, struct buf *out)
{
	return base64_encode(p, n, out) == BASE64_OK ? SIGN_OK : SIGN_NOMEM;
}

enum sign_err
sign_base64_decode(const char *s, size_t n, struct buf *out)
{
	switch (base64_decode((struct span){ s, n }, out)) {
	case BASE64_OK:
		return SIGN_OK;
	case BASE64_BAD:
		return SIGN_BAD_INPUT;
	default:
		return SIGN_NOMEM;
	}
}

enum sign_err
sign_percent_encode(const char *s, size_t n, int keep_slash, struct buf *out)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t i;
	char esc[3];

	if (buf_reserve(out, n) != BUF_OK)
		return SIGN_NOMEM;
	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (isalnum(ch) || ch == '-' || ch == '_' || ch == '.' ||
		    ch == '~' || (keep_slash && ch == '/')) {
			if (buf_append(out, &s[i], 1) != BUF_OK)
				return SIGN_NOMEM;
			continue;
		}
		esc[0] = '%';
		esc[1] = hex[ch >> 4];
		esc[2] = hex[ch & 15];
		if (buf_append(out, esc, 3) != BUF_OK)
			return SIGN_NOMEM;
	}
	return SIGN_OK;
}

static int
hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* Query values are URL-decoded before signing; '+' means a space, as the
 * service reads form-encoded queries. A malformed escape stays literal. */
static enum sign_err
percent_decode(const char *s, size_t n, struct buf *out)
{
	size_t i;

	for (i = 0; i < n; i++) {
		char ch = s[i];

		if (ch == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 &&
		    hexval(s[i + 2]) >= 0) {
			ch = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
			i += 2;
		} else if (ch == '+')
			ch = ' ';
		if (buf_append(out, &ch, 1) != BUF_OK)
			return SIGN_NOMEM;
	}
	return SIGN_OK;
}

/* x-ms-date is an HTTP date; out stays "" for a time no request carries. */
void
sign_time_rfc1123(time_t t, char out[32])
{
	if (http_date_format((int64_t)t, out, 32) != 0)
		out[0] = '\0';
}

void
sign_time_iso8601(time_t t, char out[24])
{
	struct tm tm;

	gmtime_r(&t, &tm);
	if (strftime(out, 24, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		out[0] = '\0';
}

static const char *
header_value(const struct sign_header *h, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcasecmp(h[i].name, name) == 0)
			return h[i].value ? h[i].value : "";
	return "";
}

static int
cmp_header_name(const void *a, const void *b)
{
	const struct sign_header *x = a, *y = b;

	return strcasecmp(x->name, y->name);
}

/* Lower-case name, ':', value with leading/trailing whitespace dropped and
 * inner runs of whitespace folded to one space, '\n'. */
static enum sign_err
append_canonical_header(struct buf *out, const struct sign_header *h)
{
	const char *v = h->value ? h->value : "";
	size_t i, n = strlen(h->name);
	int pending_space = 0;

	for (i = 0; i < n; i++) {
		char ch = (char)tolower((unsigned char)h->name[i]);

		if (buf_append(out, &ch, 1) != BUF_OK)
			return SIGN_NOMEM;
	}
	if (buf_append(out, ":", 1) != BUF_OK)
		return SIGN_NOMEM;
	while (*v == ' ' || *v == '\t')
		v++;
	for (; *v; v++) {
		if (*v == ' ' || *v == '\t' || *v == '\r' || *v == '\n') {
			pending_space = 1;
			continue;
		}
		if (pending_space && buf_append(out, " ", 1) != BUF_OK)
			return SIGN_NOMEM;
		pending_space = 0;
		if (buf_append(out, v, 1) != BUF_OK)
			return SIGN_NOMEM;
	}
	return from_buf(buf_append(out, "\n", 1));
}

struct query_param {
	char *name;	/* lower-cased, decoded */
	char *value;	/* decoded */
};

static int
cmp_query_param(const void *a, const void *b)
{
	const struct query_param *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : strcmp(x->value, y->value);
}

/* "\nname:v1,v2" for each distinct parameter name, in sorted order. */
static enum sign_err
append_canonical_query(struct buf *out, const char *query)
{
	struct query_param *params = NULL;
	size_t n = 0, i, j;
	const char *p = query;
	enum sign_err e = SIGN_OK;

	for (i = 0; query[i]; i++)
		if (query[i] == '&')
			n++;
	params = calloc(n + 1, sizeof *params);
	if (params == NULL)
		return SIGN_NOMEM;
	n = 0;
	while (*p) {
		const char *amp = strchr(p, '&'), *eq;
		size_t len = amp ? (size_t)(amp - p) : strlen(p);
		struct buf name = BUF_INIT(CANON_MAX), value = BUF_INIT(CANON_MAX);

		eq = memchr(p, '=', len);
		if (len > 0) {
			size_t nlen = eq ? (size_t)(eq - p) : len;

			if ((e = percent_decode(p, nlen, &name)) != SIGN_OK ||
			    (e = (eq ? percent_decode(eq + 1, len - nlen - 1, &value) :
			    from_buf(buf_append(&value, "", 0)))) != SIGN_OK ||
			    buf_append(&name, "", 0) != BUF_OK) {
				buf_free(&name);
				buf_free(&value);
				e = e ? e : SIGN_NOMEM;
				goto out;
			}
			for (j = 0; j < name.len; j++)
				name.ptr[j] = (char)tolower((unsigned char)name.ptr[j]);
			params[n].name = buf_take(&name);
			params[n].value = buf_take(&value);
			if (params[n].name == NULL || params[n].value == NULL) {
				n++;
				e = SIGN_NOMEM;
				goto out;
			}
			n++;
		}
		p += len;
		if (*p == '&')
			p++;
	}
	qsort(params, n, sizeof *params, cmp_query_param);
	for (i = 0; i < n; i++) {
		enum buf_err be;

		if (i > 0 && strcmp(params[i].name, params[i - 1].name) == 0)
			be = buf_appendf(out, ",%s", params[i].value);
		else
			be = buf_appendf(out, "\n%s:%s", params[i].name,
			    params[i].value);
		if (be != BUF_OK) {
			e = SIGN_NOMEM;
			goto out;
		}
	}
out:
	for (i = 0; i < n; i++) {
		free(params[i].name);
		free(params[i].value);
	}
	free(params);
	return e;
}

enum sign_err
sign_shared_key_string(const char *method, const char *account,
    const char *path, const char *query, const struct sign_header *headers,
    size_t nheaders, struct buf *out)
{
	/* The order is fixed by "Authorize with Shared Key", version 2009-09-19
	 * and later. */
	static const char *const standard[] = { "Content-Encoding",
	    "Content-Language", "Content-Length", "Content-MD5", "Content-Type",
	    "Date", "If-Modified-Since", "If-Match", "If-None-Match",
	    "If-Unmodified-Since", "Range" };
	struct sign_header *xms = NULL;
	size_t i, nx = 0;
	enum sign_err e = SIGN_OK;

	if (method == NULL || account == NULL || path == NULL)
		return SIGN_BAD_INPUT;
	if (buf_appendf(out, "%s\n", method) != BUF_OK)
		return SIGN_NOMEM;
	for (i = 0; i < ARRAY_LEN(standard); i++) {
		const char *v = header_value(headers, nheaders, standard[i]);

		if (i == 2 && strcmp(v, "0") == 0)
			v = "";
		if (buf_appendf(out, "%s\n", v) != BUF_OK)
			return SIGN_NOMEM;
	}
	xms = calloc(nheaders + 1, sizeof *xms);
	if (xms == NULL)
		return SIGN_NOMEM;
	for (i = 0; i < nheaders; i++)
		if (strncasecmp(headers[i].name, "x-ms-", 5) == 0)
			xms[nx++] = headers[i];
	qsort(xms, nx, sizeof *xms, cmp_header_name);
	for (i = 0; i < nx; i++)
		if ((e = append_canonical_header(out, &xms[i])) != SIGN_OK)
			goto out;
	if (buf_appendf(out, "/%s%s", account, path[0] ? path : "/") != BUF_OK) {
		e = SIGN_NOMEM;
		goto out;
	}
	if (query != NULL && query[0] != '\0')
		e = append_canonical_query(out, query);
out:
	free(xms);
	return e;
}

/* HMAC the string-to-sign and append its base64 form to out. */
static enum sign_err
append_signature(const unsigned char *key, size_t keylen, const struct buf *sts,
    struct buf *out)
{
	unsigned char mac[32];
	enum sign_err e;

	e = sign_hmac_sha256(key, keylen, sts->ptr ? sts->ptr : "", sts->len, mac);
	if (e != SIGN_OK)
		return e;
	e = sign_base64_encode(mac, sizeof mac, out);
	memset(mac, 0, sizeof mac);
	return e;
}

enum sign_err
sign_shared_key(const unsigned char *key, size_t keylen, const char *method,
    const char *account, const char *path, const char *query,
    const struct sign_header *headers, size_t nheaders, struct buf *authorization)
{
	struct buf sts = BUF_INIT(CANON_MAX);
	enum sign_err e;

	e = sign_shared_key_string(method, account, path, query, headers,
	    nheaders, &sts);
	if (e != SIGN_OK)
		goto out;
	if (buf_appendf(authorization, "SharedKey %s:", account) != BUF_OK) {
		e = SIGN_NOMEM;
		goto out;
	}
	e = append_signature(key, keylen, &sts, authorization);
out:
	buf_free(&sts);
	return e;
}

static const char *
nz(const char *s)
{
	return s ? s : "";
}

enum sign_err
sas_service_string_to_sign(const struct sas_service_fields *f,
    const char *account, const char *container, const char *blob,
    struct buf *out)
{
	int is_blob = f->resource && strcmp(f->resource, "b") == 0;
	enum buf_err be;

	if (account == NULL || container == NULL || (is_blob && blob == NULL))
		return SIGN_BAD_INPUT;
	be = buf_appendf(out, "%s\n%s\n%s\n/blob/%s/%s%s%s\n%s\n%s\n%s\n%s\n%s\n"
	    "%s\n%s\n%s\n%s\n%s\n%s\n%s", nz(f->permissions), nz(f->start),
	    nz(f->expiry), account, container, is_blob ? "/" : "",
	    is_blob ? blob : "", nz(f->identifier), nz(f->ip), nz(f->protocol),
	    f->version ? f->version : SIGN_VERSION, nz(f->resource),
	    nz(f->snapshot), nz(f->encryption_scope), nz(f->cache_control),
	    nz(f->content_disposition), nz(f->content_encoding),
	    nz(f->content_language), nz(f->content_type));
	return from_buf(be);
}

/* Append "&name=value" (no '&' right after the start offset) when value is
 * set. */
static enum sign_err
append_param(struct buf *query, size_t start, const char *name, const char *value)
{
	enum sign_err e;

	if (value == NULL || value[0] == '\0')
		return SIGN_OK;
	if (buf_appendf(query, "%s%s=", query->len > start ? "&" : "", name) != BUF_OK)
		return SIGN_NOMEM;
	e = sign_percent_encode(value, strlen(value), 0, query);
	return e;
}

static enum sign_err
append_sig_param(const unsigned char *key, size_t keylen, const struct buf *sts,
    struct buf *query)
{
	struct buf sig = BUF_INIT(128);
	enum sign_err e;

	e = append_signature(key, keylen, sts, &sig);
	if (e == SIGN_OK)
		e = append_param(query, 0, "sig", buf_cstr(&sig));
	buf_free(&sig);
	return e;
}

/*
 * The user delegation SAS string-to-sign ("Create a user delegation SAS",
 * versions 2025-07-05 and later): the service SAS's first four lines, then
 * the signing key's six fields (skoid, sktid, skt, ske, sks, skv), five
 * lines bindery leaves empty (saoid, suoid, scid, skdutid, sduoid), and
 * the rest of the service SAS without its signed identifier.
 */
enum sign_err
sas_user_delegation_string_to_sign(const struct sas_service_fields *f,
    const struct sas_delegation_fields *k, const char *account,
    const char *container, const char *blob, struct buf *out)
{
	int is_blob = f->resource && strcmp(f->resource, "b") == 0;
	enum buf_err be;

	if (account == NULL || container == NULL || (is_blob && blob == NULL) ||
	    k->object_id == NULL || k->tenant_id == NULL || k->start == NULL ||
	    k->expiry == NULL || k->service == NULL || k->version == NULL)
		return SIGN_BAD_INPUT;
	be = buf_appendf(out, "%s\n%s\n%s\n/blob/%s/%s%s%s\n%s\n%s\n%s\n%s\n%s\n%s\n"
	    "\n\n\n\n\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s",
	    nz(f->permissions), nz(f->start), nz(f->expiry), account, container,
	    is_blob ? "/" : "", is_blob ? blob : "", k->object_id, k->tenant_id,
	    k->start, k->expiry, k->service, k->version, nz(f->ip), nz(f->protocol),
	    f->version ? f->version : SIGN_VERSION, nz(f->resource),
	    nz(f->snapshot), nz(f->encryption_scope), nz(f->cache_control),
	    nz(f->content_disposition), nz(f->content_encoding),
	    nz(f->content_language), nz(f->content_type));
	return from_buf(be);
}

/* The query of a blob or container SAS, service (k NULL: signed with the
 * account key) or user delegation (signed with the delegation key). */
static enum sign_err
sign_blob_sas(const unsigned char *key, size_t keylen, const char *account,
    const char *container, const char *blob, const struct sas_service_fields *f,
    const struct sas_delegation_fields *k, struct buf *query)
{
	struct buf sts = BUF_INIT(CANON_MAX);
	enum sign_err e;
	size_t start = query->len;

	if (f->permissions == NULL || f->expiry == NULL || f->resource == NULL ||
	    (k != NULL && f->identifier != NULL)) {
		e = SIGN_BAD_INPUT;
		goto out;
	}
	e = k ? sas_user_delegation_string_to_sign(f, k, account, container, blob, &sts)
	      : sas_service_string_to_sign(f, account, container, blob, &sts);
	if (e != SIGN_OK)
		goto out;
	/* A caller's existing text gets one '&' before ours. */
	if (start > 0 && buf_append(query, "&", 1) != BUF_OK) {
		e = SIGN_NOMEM;
		goto out;
	}
	start = query->len;
	if ((e = append_param(query, start, "sv", f->version ? f->version : SIGN_VERSION)) ||
	    (e = append_param(query, start, "st", f->start)) ||
	    (e = append_param(query, start, "se", f->expiry)) ||
	    (e = append_param(query, start, "sr", f->resource)) ||
	    (e = append_param(query, start, "sp", f->permissions)) ||
	    (e = append_param(query, start, "si", f->identifier)))
		goto out;
	if (k != NULL &&
	    ((e = append_param(query, start, "skoid", k->object_id)) ||
	     (e = append_param(query, start, "sktid", k->tenant_id)) ||
	     (e = append_param(query, start, "skt", k->start)) ||
	     (e = append_param(query, start, "ske", k->expiry)) ||
	     (e = append_param(query, start, "sks", k->service)) ||
	     (e = append_param(query, start, "skv", k->version))))
		goto out;
	if ((e = append_param(query, start, "sip", f->ip)) ||
	    (e = append_param(query, start, "spr", f->protocol)) ||
	    (e = append_param(query, start, "ses", f->encryption_scope)) ||
	    (e = append_param(query, start, "rscc", f->cache_control)) ||
	    (e = append_param(query, start, "rscd", f->content_disposition)) ||
	    (e = append_param(query, start, "rsce", f->content_encoding)) ||
	    (e = append_param(query, start, "rscl", f->content_language)) ||
	    (e = append_param(query, start, "rsct", f->content_type)))
		goto out;
	e = append_sig_param(key, keylen, &sts, query);
out:
	buf_free(&sts);
	return e;
}

enum sign_err
sas_sign_service(const unsigned char *key, size_t keylen, const char *account,
    const char *container, const char *blob, const struct sas_service_fields *f,
    struct buf *query)
{
	return sign_blob_sas(key, keylen, account, container, blob, f, NULL, query);
}

enum sign_err
sas_sign_user_delegation(const unsigned char *udk, size_t udklen, const char *account,
    const char *container, const char *blob, const struct sas_service_fields *f,
    const struct sas_delegation_fields *k, struct buf *query)
{
	if (k == NULL)
		return SIGN_BAD_INPUT;
	return sign_blob_sas(udk, udklen, account, container, blob, f, k, query);
}

enum sign_err
sas_account_string_to_sign(const struct sas_account_fields *f,
    const char *account, struct buf *out)
{
	if (account == NULL)
		return SIGN_BAD_INPUT;
	return from_buf(buf_appendf(out, "%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n",
	    account, nz(f->permissions), nz(f->services), nz(f->resource_types),
	    nz(f->start), nz(f->expiry), nz(f->ip), nz(f->protocol),
	    f->version ? f->version : SIGN_VERSION, nz(f->encryption_scope)));
}

enum sign_err
sas_sign_account(const unsigned char *key, size_t keylen, const char *account,
    const struct sas_account_fields *f, struct buf *query)
{
	struct buf sts = BUF_INIT(CANON_MAX);
	enum sign_err e;
	size_t start;

	if (f->permissions == NULL || f->services == NULL ||
	    f->resource_types == NULL || f->expiry == NULL) {
		e = SIGN_BAD_INPUT;
		goto out;
	}
	e = sas_account_string_to_sign(f, account, &sts);
	if (e != SIGN_OK)
		goto out;
	if (query->len > 0 && buf_append(query, "&", 1) != BUF_OK) {
		e = SIGN_NOMEM;
		goto out;
	}
	start = query->len;
	if ((e = append_param(query, start, "sv", f->version ? f->version : SIGN_VERSION)) ||
	    (e = append_param(query, start, "ss", f->services)) ||
	    (e = append_param(query, start, "srt", f->resource_types)) ||
	    (e = append_param(query, start, "sp", f->permissions)) ||
	    (e = append_param(query, start, "st", f->start)) ||
	    (e = append_param(query, start, "se", f->expiry)) ||
	    (e = append_param(query, start, "sip", f->ip)) ||
	    (e = append_param(query, start, "spr", f->protocol)) ||
	    (e = append_param(query, start, "ses", f->encryption_scope)))
		goto out;
	e = append_sig_param(key, keylen, &sts, query);
out:
	buf_free(&sts);
	return e;
}
