/*
 * entra.h - Microsoft Entra ID access tokens for Azure Storage, with no
 * account key on the host.
 *
 * One credential per process: a client secret, a client certificate (a
 * client-assertion JWT, storage/jwt.h), a federated token file (workload
 * identity: the file's token is the assertion) or the managed identity of
 * the machine (IMDS).  entra_token() hands out a bearer token for
 * https://storage.azure.com/.default that is valid for at least the refresh
 * margin: from memory, from the user's cache file (storage/secret_cache.h),
 * or fetched from the authority, which is asked before the token expires,
 * never because a request failed.  Tokens are never logged; errors name the
 * credential and the authority's own error code (AADSTS...), never a
 * secret.  See doc/design.md, "Storage client rules" (key-free storage).
 */
#ifndef BINDERY_ENTRA_H
#define BINDERY_ENTRA_H

#include <stddef.h>
#include <stdint.h>

#include "base/compat.h"

enum entra_kind {
	ENTRA_CLIENT_SECRET,
	ENTRA_CLIENT_CERTIFICATE,
	ENTRA_FEDERATED_TOKEN,
	ENTRA_MANAGED_IDENTITY,
};

/* The scope every token is asked for, and the cache keys' resource. */
#define ENTRA_STORAGE_SCOPE "https://storage.azure.com/.default"
#define ENTRA_AUTHORITY_DEFAULT "https://login.microsoftonline.com"
#define ENTRA_IMDS_DEFAULT "http://169.254.169.254/metadata/identity/oauth2/token"

struct entra_settings {		/* all borrowed; copied by entra_credential_new */
	enum entra_kind kind;
	const char *authority;	/* NULL: ENTRA_AUTHORITY_DEFAULT */
	const char *tenant_id;	/* not for a managed identity */
	const char *client_id;	/* a managed identity's: NULL for the system-assigned */
	const char *secret_file;	/* ENTRA_CLIENT_SECRET */
	const char *certificate;	/* ENTRA_CLIENT_CERTIFICATE: PEM, certificate and key */
	const char *federated_token_file; /* ENTRA_FEDERATED_TOKEN */
	const char *imds_endpoint;	/* NULL: ENTRA_IMDS_DEFAULT */
	const char *cache_dir;	/* NULL: memory only */
	const char *ca_file, *ca_path;	/* for an https authority; NULL: the system's */
};

enum entra_err {
	ENTRA_OK = 0,
	ENTRA_NOMEM,
	ENTRA_BAD_SETTINGS,	/* an impossible combination (configuration checks it first) */
	ENTRA_CREDENTIAL_FILE,	/* the secret, certificate or token file cannot be used */
	ENTRA_UNREACHABLE,	/* no answer: refused connection, name, TLS, timeout */
	ENTRA_REFUSED,		/* the authority said no (4xx): a wrong secret, an unknown client */
	ENTRA_FAILED,		/* the authority failed (5xx) or answered what is not a token */
};

struct entra_error {
	enum entra_err err;
	long http_status;	/* 0: no answer */
	char code[64];		/* the authority's error ("invalid_client") and AADSTS code */
	char message[320];	/* a sentence naming the credential; never a secret */
};

/* The enumerator's name ("ENTRA_REFUSED"). */
const char *entra_err_name(enum entra_err);
/* "client secret", "client certificate", "federated token", "managed identity". */
const char *entra_kind_name(enum entra_kind);

struct entra_credential;

/* Check and copy the settings; a certificate is loaded now (a bad one is
 * ENTRA_CREDENTIAL_FILE).  Nothing is fetched until entra_token. */
BINDERY_NODISCARD enum entra_err entra_credential_new(const struct entra_settings *,
    struct entra_credential **out, struct entra_error *why);
/* Wipe and free; NULL is a no-op. */
void entra_credential_free(struct entra_credential *);

/* Seconds before expiry at which a token is renewed (or half its
 * lifetime, when that is shorter). */
#define ENTRA_REFRESH_MARGIN_S 300

/*
 * A bearer token valid for more than the refresh margin past now.  *token
 * is the credential's own copy, valid until the next call or the free;
 * *expires is its expiry (Unix seconds).  timeout_ms bounds a fetch (0:
 * 10 s).  A fetch that fails leaves the last good token unused.
 */
BINDERY_NODISCARD enum entra_err entra_token(struct entra_credential *, int64_t now,
    long timeout_ms, const char **token, int64_t *expires, struct entra_error *why);

/* A name for what the cache keys hold this credential's secrets under
 * (authority, tenant, client): delegation keys are cached beside tokens. */
const char *entra_identity(const struct entra_credential *);
/* The credential's kind. */
enum entra_kind entra_kind(const struct entra_credential *);
/* The cache in use, or NULL when secrets stay in memory. */
struct secret_cache *entra_cache(struct entra_credential *);

struct entra_stats {
	unsigned long fetched;		/* tokens fetched from the authority */
	unsigned long from_cache;	/* tokens read from the cache file */
	unsigned long failed;		/* fetches that failed */
	int64_t expires;		/* the current token's expiry, 0 without one */
};
void entra_stats(const struct entra_credential *, struct entra_stats *out);

#endif
