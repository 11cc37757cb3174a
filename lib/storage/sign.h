/*
 * sign.h - Azure Storage request signing: HMAC-SHA256, base64, Shared Key
 * canonicalisation and shared access signatures (service and account).
 *
 * Everything here is pure: it builds a string-to-sign from its inputs and
 * HMACs it with the account key, so the unit tests can pin every byte.  The
 * key is only ever an input; nothing here logs or stores it.
 *
 * References: "Authorize with Shared Key", "Create a service SAS" and
 * "Create an account SAS" in the Azure Storage REST reference.  bindery signs
 * with SIGN_VERSION, whose service-SAS string-to-sign has 16 fields.
 */
#ifndef BINDERY_SIGN_H
#define BINDERY_SIGN_H

#include <stddef.h>
#include <time.h>

#include "base/buf.h"
#include "base/compat.h"

/* The x-ms-version sent on every request and the signed version (sv). */
#define SIGN_VERSION "2025-11-05"

enum sign_err {
	SIGN_OK = 0,
	SIGN_NOMEM,		/* an output buffer could not grow */
	SIGN_BAD_INPUT,		/* malformed base64, missing required field */
	SIGN_CRYPTO,		/* GnuTLS refused */
};

/* One request header as the signer sees it; both strings borrowed. */
struct sign_header {
	const char *name;
	const char *value;
};

/* HMAC-SHA256 of msg under key into mac. */
BINDERY_NODISCARD enum sign_err sign_hmac_sha256(const void *key, size_t keylen,
    const void *msg, size_t msglen, unsigned char mac[32]);

/* Append the standard (padded) base64 form of p[n] to out. */
BINDERY_NODISCARD enum sign_err sign_base64_encode(const void *p, size_t n,
    struct buf *out);
/* Append the bytes that the base64 text s[n] encodes to out;
 * SIGN_BAD_INPUT when s is not valid base64. */
BINDERY_NODISCARD enum sign_err sign_base64_decode(const char *s, size_t n,
    struct buf *out);

/* Append s[n] percent-encoded (RFC 3986: everything but unreserved
 * characters, and '/' too unless keep_slash) to out. */
BINDERY_NODISCARD enum sign_err sign_percent_encode(const char *s, size_t n,
    int keep_slash, struct buf *out);

/* Format t (UTC) as RFC 1123 ("Tue, 01 Dec 2026 10:00:00 GMT", for
 * x-ms-date) or ISO 8601 ("2026-12-01T10:00:00Z", for SAS st/se). */
void sign_time_rfc1123(time_t t, char out[32]);
void sign_time_iso8601(time_t t, char out[24]);

/*
 * The Shared Key string-to-sign for one request: VERB, the eleven standard
 * headers (Content-Length "0" signs as empty), the canonicalised x-ms-*
 * headers (lower-cased, sorted, values trimmed with runs of whitespace
 * folded), and the canonicalised resource "/" account path, followed by each
 * query parameter lower-cased, sorted and URL-decoded as "\nname:value".
 * path is the URL path exactly as sent (percent-encoded), so for path-style
 * endpoints such as Azurite it already starts with "/<account>".  query is
 * the encoded query string without '?' (NULL or "" for none).
 */
BINDERY_NODISCARD enum sign_err sign_shared_key_string(const char *method,
    const char *account, const char *path, const char *query,
    const struct sign_header *headers, size_t nheaders, struct buf *out);

/* Append the Authorization header value "SharedKey account:signature" for
 * the request described as for sign_shared_key_string. */
BINDERY_NODISCARD enum sign_err sign_shared_key(const unsigned char *key,
    size_t keylen, const char *method, const char *account, const char *path,
    const char *query, const struct sign_header *headers, size_t nheaders,
    struct buf *authorization);

/* The signed fields of a service SAS; NULL means empty.  resource is "b"
 * (blob) or "c" (container); version defaults to SIGN_VERSION. */
struct sas_service_fields {
	const char *permissions;	/* sp, in the documented order: racwdxyltmeop */
	const char *start;		/* st, ISO 8601 */
	const char *expiry;		/* se */
	const char *identifier;		/* si */
	const char *ip;			/* sip */
	const char *protocol;		/* spr: "https" or "https,http" */
	const char *version;		/* sv */
	const char *resource;		/* sr */
	const char *snapshot;		/* the snapshot time field */
	const char *encryption_scope;	/* ses */
	const char *cache_control;	/* rscc */
	const char *content_disposition; /* rscd */
	const char *content_encoding;	/* rsce */
	const char *content_language;	/* rscl */
	const char *content_type;	/* rsct */
};

/* The 16-line service SAS string-to-sign (versions 2020-12-06 and later,
 * including 2025-11-05).  The canonicalised resource is
 * "/blob/<account>/<container>[/<blob>]" with the names unencoded; blob is
 * ignored unless resource is "b". */
BINDERY_NODISCARD enum sign_err sas_service_string_to_sign(
    const struct sas_service_fields *f, const char *account,
    const char *container, const char *blob, struct buf *out);

/* Append the service SAS query string (no leading '?'), "sv=...&sig=...",
 * every value percent-encoded, to query. */
BINDERY_NODISCARD enum sign_err sas_sign_service(const unsigned char *key,
    size_t keylen, const char *account, const char *container,
    const char *blob, const struct sas_service_fields *f, struct buf *query);

/* The signing key of a user delegation SAS, as Get User Delegation Key
 * answered it; all required. */
struct sas_delegation_fields {
	const char *object_id;		/* skoid: the identity the key was issued to */
	const char *tenant_id;		/* sktid */
	const char *start;		/* skt, ISO 8601 */
	const char *expiry;		/* ske */
	const char *service;		/* sks: "b" */
	const char *version;		/* skv */
};

/* The user delegation SAS string-to-sign (versions 2025-07-05 and later,
 * including 2025-11-05): f's lines around the key's six fields and five
 * empty ones (authorized/unauthorized user, correlation id, delegated
 * user tenant and object).  f->identifier must be NULL: a stored access
 * policy cannot back a user delegation SAS. */
BINDERY_NODISCARD enum sign_err sas_user_delegation_string_to_sign(
    const struct sas_service_fields *f, const struct sas_delegation_fields *k,
    const char *account, const char *container, const char *blob, struct buf *out);

/* Append the user delegation SAS query string (sv, st, se, sr, sp, skoid,
 * sktid, skt, ske, sks, skv, ..., sig), signed with the decoded user
 * delegation key udk[udklen], to query. */
BINDERY_NODISCARD enum sign_err sas_sign_user_delegation(const unsigned char *udk,
    size_t udklen, const char *account, const char *container, const char *blob,
    const struct sas_service_fields *f, const struct sas_delegation_fields *k,
    struct buf *query);

/* The signed fields of an account SAS; NULL means empty. */
struct sas_account_fields {
	const char *permissions;	/* sp: rwdxylacuptfi subset */
	const char *services;		/* ss: "b" */
	const char *resource_types;	/* srt: any of "sco" */
	const char *start;		/* st */
	const char *expiry;		/* se */
	const char *ip;			/* sip */
	const char *protocol;		/* spr */
	const char *version;		/* sv */
	const char *encryption_scope;	/* ses */
};

/* The account SAS string-to-sign: account, sp, ss, srt, st, se, sip, spr,
 * sv, ses, each followed by a newline. */
BINDERY_NODISCARD enum sign_err sas_account_string_to_sign(
    const struct sas_account_fields *f, const char *account, struct buf *out);
/* Append the account SAS query string (no leading '?'), "sv=...&sig=...",
 * every value percent-encoded, to query. */
BINDERY_NODISCARD enum sign_err sas_sign_account(const unsigned char *key,
    size_t keylen, const char *account, const struct sas_account_fields *f,
    struct buf *query);

#endif
