/*
 * jwt.h - the client assertion with which Microsoft Entra ID's
 * client-credentials grant authenticates an application by certificate.
 *
 * A signer is one certificate and its RSA private key, loaded once from one
 * PEM file; an assertion is a compact JWS (RFC 7515) signed PS256: RSASSA-PSS
 * with SHA-256, MGF1-SHA-256 and a 32-byte salt (RFC 7518 section 3.5), every
 * part base64url without padding.  Its header names the certificate by
 * "x5t#S256", the SHA-256 of its DER (RFC 7515 section 4.1.8), which is how
 * Entra picks the registered certificate to verify with.  Reference:
 * "Microsoft identity platform application authentication certificate
 * credentials".
 *
 * The private key never leaves the signer: no message, no return value and
 * no log line carries it, and jwt_signer_free() wipes it.
 */
#ifndef BINDERY_JWT_H
#define BINDERY_JWT_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/compat.h"

/* How long an assertion holds: Entra refuses one whose lifetime is longer
 * than ten minutes, and a fresh one is made for every token request. */
#define JWT_ASSERTION_SECONDS 600

/* A certificate and its private key; opaque. */
struct jwt_signer;

enum jwt_err {
	JWT_OK = 0,
	JWT_NOMEM,		/* an allocation or an output buffer failed */
	JWT_BAD_FILE,		/* unreadable, not PEM, no certificate, no
				 * (unencrypted) key, not RSA, or the key is
				 * not the certificate's */
	JWT_CRYPTO,		/* GnuTLS refused (signing, hashing, random) */
	JWT_BAD_INPUT,		/* client_id or audience empty or not UTF-8
				 * (JSON strings must be) */
};

/*
 * Load the certificate and private key from the PEM file at pem_path.  The
 * file holds one "CERTIFICATE" and one unencrypted "PRIVATE KEY" (PKCS#8) or
 * "RSA PRIVATE KEY" (PKCS#1), in either order; the first certificate is the
 * one used.  The key must be RSA (PS256) and must be the certificate's own
 * (their public keys compared).  On JWT_OK *out is a new signer for
 * jwt_signer_free(); otherwise *out is NULL and why[whylen] holds one
 * sentence naming the path and the cause, never key material.
 */
BINDERY_NODISCARD enum jwt_err jwt_signer_load(const char *pem_path,
    struct jwt_signer **out, char *why, size_t whylen);

/* Free the signer and wipe its key.  NULL is allowed. */
void jwt_signer_free(struct jwt_signer *signer);

/*
 * Append a signed client assertion to out: header {"alg":"PS256",
 * "typ":"JWT","x5t#S256":thumbprint}, payload {"aud":audience,
 * "iss":client_id,"sub":client_id,"jti":a fresh random UUID v4,"nbf":now,
 * "iat":now,"exp":now + JWT_ASSERTION_SECONDS}.  audience is the token
 * endpoint's URL ("https://login.microsoftonline.com/TENANT/oauth2/v2.0/token");
 * now is Unix seconds.  The signer may be shared by threads.  On failure out
 * holds what it held before.
 */
BINDERY_NODISCARD enum jwt_err jwt_client_assertion(const struct jwt_signer *signer,
    const char *client_id, const char *audience, int64_t now, struct buf *out);

/* The certificate's "x5t#S256": base64url of the SHA-256 of its DER, 43
 * characters.  Borrowed; lives as long as the signer. */
const char *jwt_signer_thumbprint(const struct jwt_signer *signer);

/* The certificate's notAfter, Unix seconds: after it Entra refuses every
 * assertion, so a caller may warn ahead of it. */
int64_t jwt_signer_not_after(const struct jwt_signer *signer);

#endif
