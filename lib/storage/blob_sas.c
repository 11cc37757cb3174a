/*
 * blob_sas.c - the SAS links the client hands out (a download's, a direct
 * upload's): a service SAS signed with the account key, or with Entra a
 * user delegation SAS signed with a key storage lends.
 *
 * A user delegation key is a signing key storage lends to an Entra
 * identity for at most seven days ("Get User Delegation Key"); a SAS
 * signed with it names the key (skoid, sktid, skt, ske, sks, skv) and dies
 * with it.  So a SAS is signed only with a key that outlives the SAS's own
 * expiry: the key held (in memory, or in the user's cache file beside the
 * tokens) is renewed when it would not.  Keys are secrets like tokens:
 * never logged, wiped when dropped.
 */
#define _GNU_SOURCE	/* strptime, timegm */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base64.h"
#include "base/clock.h"
#include "base/counters.h"
#include "base/log.h"
#include "storage/blob.h"
#include "storage/blob_internal.h"
#include "storage/secret_cache.h"
#include "storage/sign.h"

/* A delegation key is asked for this long (or longer, when a SAS needs
 * it): a day's key renewed daily costs one call a day per host. */
#define UDK_LIFETIME_S (24 * 3600)
/* The service lends a key for at most seven days from now. */
#define UDK_LIFETIME_MAX_S (7 * 24 * 3600 - 600)
/* Keys start this far back, as SAS links do (sign_time_iso8601 callers):
 * a clock a little ahead of storage's must not make a key not yet valid. */
#define UDK_SKEW_S 900
/* A SAS is signed only with a key that outlives it by this much. */
#define UDK_MARGIN_S 300

/* "2026-12-06T10:00:00Z", with or without a fraction of a second, as Unix
 * seconds; -1 when it is not that. */
static int64_t
iso8601_seconds(const char *s)
{
	struct tm tm;
	const char *p;
	time_t t;

	memset(&tm, 0, sizeof tm);
	p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (p == NULL)
		return -1;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			;
	if (strcmp(p, "Z") != 0)
		return -1;
	t = timegm(&tm);
	return t == (time_t)-1 ? -1 : (int64_t)t;
}

struct udk_walk {
	struct blob_delegation_key *k;
	unsigned seen;		/* a bit per element */
	int bad;
};

static int
udk_end(void *ctx, const char *path, const char *text, size_t len)
{
	static const struct {
		const char *path;
		size_t off, size;
	} fields[] = {
		{ "/UserDelegationKey/SignedOid", offsetof(struct blob_delegation_key, oid), 64 },
		{ "/UserDelegationKey/SignedTid", offsetof(struct blob_delegation_key, tid), 64 },
		{ "/UserDelegationKey/SignedStart", offsetof(struct blob_delegation_key, start), 32 },
		{ "/UserDelegationKey/SignedExpiry", offsetof(struct blob_delegation_key, expiry), 32 },
		{ "/UserDelegationKey/SignedService", offsetof(struct blob_delegation_key, service), 8 },
		{ "/UserDelegationKey/SignedVersion", offsetof(struct blob_delegation_key, version), 16 },
	};
	struct udk_walk *w = ctx;
	size_t i, n;

	if (strcmp(path, "/UserDelegationKey/Value") == 0) {
		if (base64_decode_into((struct span){ text, len }, w->k->value, sizeof w->k->value,
		    &n) != BASE64_OK || n == 0)
			w->bad = 1;
		w->k->value_len = n;
		w->seen |= 1u << 6;
		return 0;
	}
	for (i = 0; i < sizeof fields / sizeof fields[0]; i++) {
		if (strcmp(path, fields[i].path) != 0)
			continue;
		/* Each field goes into a SAS query and string-to-sign as is:
		 * empty, over-long or with a control character is no key. */
		if (len == 0 || copy_span((char *)w->k + fields[i].off, fields[i].size,
		    (struct span){ text, len }) != 0 || memchr(text, '\n', len) != NULL)
			w->bad = 1;
		w->seen |= 1u << i;
	}
	return 0;
}

enum blob_xml_err
blob_parse_delegation_key_answer(const char *xml, size_t len, struct blob_delegation_key *out)
{
	struct udk_walk w = { out, 0, 0 };
	struct blob_xml_walk walk = { &w, NULL, udk_end };
	enum blob_xml_err e;

	memset(out, 0, sizeof *out);
	e = blob_xml_walk(xml, len, &walk);
	if (e == BLOB_XML_OK && (w.bad || w.seen != 0x7f ||
	    (out->expires = iso8601_seconds(out->expiry)) <= 0))
		e = BLOB_XML_MALFORMED;
	if (e != BLOB_XML_OK)
		explicit_bzero(out, sizeof *out);
	return e;
}

static enum blob_xml_err
udk_read(const char *xml, size_t len, void *out)
{
	return blob_parse_delegation_key_answer(xml, len, out);
}

static const struct blob_call delegation_key_call = {
	.method = "POST", .target = BLOB_CALL_SERVICE,
	.query = { { "restype", "service" }, { "comp", "userdelegationkey" } },
	.content_type = "application/xml",
	.read_body = udk_read, .malformed = "malformed user delegation key",
};

/* The cache file's name for this identity's keys on this account. */
static void
udk_cache_name(const struct blob_client *c, char name[80])
{
	const char *parts[3] = { entra_identity(c->entra), c->url_base, c->path_prefix };

	secret_cache_name(parts, 3, ".udk", name);
}

/* The key as text for the cache: its six fields and its value, a line each. */
static int
udk_to_text(const struct blob_delegation_key *k, struct buf *out)
{
	return buf_appendf(out, "%s\n%s\n%s\n%s\n%s\n%s\n", k->oid, k->tid, k->start, k->expiry,
	    k->service, k->version) == BUF_OK &&
	    base64_encode(k->value, k->value_len, out) == BASE64_OK ? 0 : -1;
}

static int
udk_from_text(const struct buf *text, struct blob_delegation_key *k)
{
	char *f[7], *p, *nl;
	size_t sizes[6] = { sizeof k->oid, sizeof k->tid, sizeof k->start, sizeof k->expiry,
	    sizeof k->service, sizeof k->version };
	char *dst[6] = { k->oid, k->tid, k->start, k->expiry, k->service, k->version };
	size_t i;

	memset(k, 0, sizeof *k);
	p = text->ptr;
	for (i = 0; i < 7; i++) {
		f[i] = p;
		nl = i < 6 ? strchr(p, '\n') : NULL;
		if (i < 6 && nl == NULL)
			return -1;
		if (nl != NULL) {
			*nl = '\0';
			p = nl + 1;
		}
	}
	for (i = 0; i < 6; i++)
		if (f[i][0] == '\0' || copy_cstr(dst[i], sizes[i], f[i]) != 0)
			return -1;
	if (base64_decode_into(span_from_cstr(f[6]), k->value, sizeof k->value, &k->value_len) !=
	    BASE64_OK || k->value_len == 0)
		return -1;
	k->expires = iso8601_seconds(k->expiry);
	return k->expires > 0 ? 0 : -1;
}

/* Hold a delegation key valid until at least need_until: the one held, the
 * cache's, or a new one from storage. */
static int
udk_ensure(struct blob_client *c, int64_t now, int64_t need_until, struct blob_result *res)
{
	struct secret_cache *cache = entra_cache(c->entra);
	struct blob_delegation_key k;
	struct blob_call_args a = { .out = &k };
	struct buf body = BUF_INIT(1024), text = BUF_INIT(4096);
	char name[80], start[24], expiry[24];
	int64_t lifetime, cexp;
	int rc;

	if (c->udk.expires >= need_until + UDK_MARGIN_S)
		return BLOB_OK;
	udk_cache_name(c, name);
	if (cache != NULL &&
	    secret_cache_get(cache, name, now, need_until + UDK_MARGIN_S - now, &text, &cexp) ==
	    SECRET_CACHE_OK && udk_from_text(&text, &k) == 0 &&
	    k.expires >= need_until + UDK_MARGIN_S) {
		c->udk = k;
		rc = BLOB_OK;
		goto out;
	}
	lifetime = need_until + UDK_MARGIN_S - now;
	if (lifetime < UDK_LIFETIME_S)
		lifetime = UDK_LIFETIME_S;
	if (lifetime > UDK_LIFETIME_MAX_S) {
		rc = blob_result_set(res, BLOB_BAD_INPUT, "a SAS that outlives seven days cannot be "
		    "signed with a user delegation key");
		goto out;
	}
	sign_time_iso8601((time_t)(now - UDK_SKEW_S), start);
	sign_time_iso8601((time_t)(now + lifetime), expiry);
	if (buf_appendf(&body, "<?xml version=\"1.0\" encoding=\"utf-8\"?><KeyInfo><Start>%s</Start>"
	    "<Expiry>%s</Expiry></KeyInfo>", start, expiry) != BUF_OK) {
		rc = blob_result_nomem(res);
		goto out;
	}
	a.body = &body;
	rc = blob_call(c, &delegation_key_call, &a, res);
	if (rc != BLOB_OK) {
		c->udk_failed++;
		counters_add(COUNTER_DELEGATION_KEY_FAILURES, 1);
		goto out;
	}
	if (k.expires < need_until + UDK_MARGIN_S) {
		c->udk_failed++;
		counters_add(COUNTER_DELEGATION_KEY_FAILURES, 1);
		rc = blob_result_set(res, BLOB_FAILED, "storage lent a user delegation key that "
		    "expires before the SAS it is to sign");
		goto out;
	}
	c->udk = k;
	c->udk_fetched++;
	counters_add(COUNTER_DELEGATION_KEYS, 1);
	buf_reset(&text);
	if (cache != NULL && (udk_to_text(&k, &text) != 0 ||
	    secret_cache_put(cache, name, text.ptr, text.len, k.expires) != SECRET_CACHE_OK))
		log_warn("could not write the delegation key cache in %s", secret_cache_path(cache));
	rc = BLOB_OK;
out:
	explicit_bzero(&k, sizeof k);
	if (text.ptr != NULL)
		explicit_bzero(text.ptr, text.len);
	buf_free(&text);
	buf_free(&body);
	return rc;
}

static int
entra_sign_sas(struct blob_client *c, const char *name, const struct sas_service_fields *f,
    int64_t expires_at, struct buf *query, struct blob_result *res)
{
	struct sas_delegation_fields k;
	int rc;

	rc = udk_ensure(c, (int64_t)time(NULL), expires_at, res);
	if (rc != BLOB_OK)
		return rc;
	k = (struct sas_delegation_fields){ c->udk.oid, c->udk.tid, c->udk.start, c->udk.expiry,
	    c->udk.service, c->udk.version };
	if (sas_sign_user_delegation(c->udk.value, c->udk.value_len, c->account, c->container,
	    name, f, &k, query) != SIGN_OK)
		return blob_result_nomem(res);
	return BLOB_OK;
}

int
blob_sas_url(struct blob_client *c, const char *name, const char *perms,
    int64_t lifetime_s, const char *content_disposition,
    const char *content_type, struct buf *out, struct blob_result *res)
{
	return blob_sas_url_at(c, name, perms, (int64_t)time(NULL), lifetime_s,
	    content_disposition, content_type, out, res);
}

int
blob_sas_url_at(struct blob_client *c, const char *name, const char *perms,
    int64_t now, int64_t lifetime_s, const char *content_disposition,
    const char *content_type, struct buf *out, struct blob_result *res)
{
	struct sas_service_fields f;
	struct blob_request r;
	struct buf q = BUF_INIT(8192);
	char start[24], expiry[24];
	int rc;

	blob_result_clear(res);
	if (!blob_name_ok(name) || perms == NULL || perms[0] == '\0' || lifetime_s <= 0)
		return blob_result_set(res, BLOB_BAD_INPUT, "bad name, permissions or lifetime");
	if (c->keylen == 0 && c->entra == NULL)
		return blob_result_set(res, BLOB_BAD_INPUT, "a SAS needs the account key or Entra");
	memset(&f, 0, sizeof f);
	sign_time_iso8601((time_t)now - 300, start);
	sign_time_iso8601((time_t)(now + lifetime_s), expiry);
	f.permissions = perms;
	f.start = start;
	f.expiry = expiry;
	f.protocol = c->https ? "https" : "https,http";
	f.resource = "b";
	f.content_disposition = content_disposition;
	f.content_type = content_type;
	blob_request_init(&r, "GET");
	if (blob_request_path_blob(c, &r, name) != 0)
		rc = blob_result_nomem(res);
	else if (c->entra != NULL &&
	    (rc = entra_sign_sas(c, name, &f, now + lifetime_s, &q, res)) != BLOB_OK)
		;	/* res says why */
	else if ((c->entra == NULL && sas_sign_service(c->key, c->keylen, c->account,
	    c->container, name, &f, &q) != SIGN_OK) ||
	    buf_appendf(out, "%s%s?%s", c->url_base, buf_cstr(&r.path),
	    buf_cstr(&q)) != BUF_OK)
		rc = blob_result_nomem(res);
	else
		rc = BLOB_OK;
	blob_request_free(&r);
	buf_free(&q);
	return rc;
}

int
blob_entra_ready(struct blob_client *c, int64_t valid_for_s, struct blob_result *res)
{
	struct buf bearer = BUF_INIT(20 * 1024);
	int rc;

	blob_result_clear(res);
	if (c->entra == NULL)
		return blob_result_set(res, BLOB_BAD_INPUT, "not configured for Entra ID");
	rc = blob_entra_authorization(c, &bearer, res);
	if (rc == BLOB_OK)
		rc = udk_ensure(c, (int64_t)time(NULL), (int64_t)time(NULL) + valid_for_s, res);
	if (bearer.ptr != NULL)
		explicit_bzero(bearer.ptr, bearer.len);
	buf_free(&bearer);
	return rc;
}

const char *
blob_auth_mode_name(enum blob_auth_mode m)
{
	switch (m) {
	case BLOB_AUTH_KEY: return "key";
	case BLOB_AUTH_SAS: return "sas";
	case BLOB_AUTH_ENTRA: return "entra";
	}
	return "?";
}

void
blob_auth_info(const struct blob_client *c, struct blob_auth_info *out)
{
	struct entra_stats st;

	memset(out, 0, sizeof *out);
	out->credential = "";
	if (c->entra == NULL) {
		out->mode = c->sas != NULL ? BLOB_AUTH_SAS : BLOB_AUTH_KEY;
		return;
	}
	out->mode = BLOB_AUTH_ENTRA;
	entra_stats(c->entra, &st);
	out->credential = entra_kind_name(entra_kind(c->entra));
	out->token_cache = entra_cache(c->entra) ? secret_cache_path(entra_cache(c->entra)) : NULL;
	out->token_expires = st.expires;
	out->delegation_key_expires = c->udk.expires;
	out->tokens_fetched = st.fetched;
	out->tokens_from_cache = st.from_cache;
	out->token_failures = st.failed;
	out->delegation_keys_fetched = c->udk_fetched;
	out->delegation_key_failures = c->udk_failed;
}
