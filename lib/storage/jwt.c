/* jwt.c - see jwt.h. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gnutls/abstract.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <jansson.h>

#include "base/alloc.h"
#include "base/base64.h"
#include "base/rand.h"
#include "storage/jwt.h"

/* A certificate and its key are a few KiB; a PEM file much larger than a
 * long chain is not one we were meant to read. */
#define JWT_PEM_MAX	(256 * 1024)
#define THUMBPRINT_LEN	43	/* base64url of 32 bytes, unpadded */

struct jwt_signer {
	gnutls_privkey_t key;
	int64_t not_after;
	char thumbprint[THUMBPRINT_LEN + 1];
};

/*
 * Read the whole file into one allocation of its size, so the key's text
 * is in exactly one place for the caller to wipe (a growing buffer would
 * leave copies behind in what realloc freed).
 */
static enum jwt_err
read_pem(const char *path, char **text, size_t *len, char *why, size_t whylen)
{
	struct stat st;
	enum jwt_err e = JWT_BAD_FILE;
	char *p = NULL;
	size_t size = 0, got = 0;
	ssize_t n;
	int fd;

	*text = NULL;
	*len = 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		snprintf(why, whylen, "cannot open %s: %s", path, strerror(errno));
		return JWT_BAD_FILE;
	}
	if (fstat(fd, &st) != 0) {
		snprintf(why, whylen, "cannot stat %s: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, whylen, "%s is not a regular file", path);
		goto out;
	}
	if (st.st_size <= 0 || st.st_size > JWT_PEM_MAX) {
		snprintf(why, whylen, "%s is %s (a certificate and key are a few KiB)",
		    path, st.st_size <= 0 ? "empty" : "larger than 256 KiB");
		goto out;
	}
	size = (size_t)st.st_size;
	if ((p = alloc_malloc(size)) == NULL) {
		snprintf(why, whylen, "out of memory reading %s", path);
		e = JWT_NOMEM;
		goto out;
	}
	while (got < size) {
		n = read(fd, p + got, size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(why, whylen, "cannot read %s: %s", path, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;	/* shrank while we read: parse what is there */
		got += (size_t)n;
	}
	*text = p;
	*len = got;
	p = NULL;
	e = JWT_OK;
out:
	if (p != NULL) {
		explicit_bzero(p, size);
		alloc_free(p);
	}
	close(fd);
	return e;
}

/* The key belongs to the certificate when their SubjectPublicKeyInfo (DER)
 * are the same bytes. */
static enum jwt_err
key_matches_certificate(gnutls_privkey_t key, gnutls_x509_crt_t crt, int *match)
{
	gnutls_pubkey_t from_key = NULL, from_crt = NULL;
	gnutls_datum_t a = { NULL, 0 }, b = { NULL, 0 };
	enum jwt_err e = JWT_CRYPTO;

	*match = 0;
	if (gnutls_pubkey_init(&from_key) < 0 || gnutls_pubkey_init(&from_crt) < 0) {
		e = JWT_NOMEM;
		goto out;
	}
	if (gnutls_pubkey_import_privkey(from_key, key, 0, 0) < 0 ||
	    gnutls_pubkey_import_x509(from_crt, crt, 0) < 0 ||
	    gnutls_pubkey_export2(from_key, GNUTLS_X509_FMT_DER, &a) < 0 ||
	    gnutls_pubkey_export2(from_crt, GNUTLS_X509_FMT_DER, &b) < 0)
		goto out;
	*match = a.size == b.size && memcmp(a.data, b.data, a.size) == 0;
	e = JWT_OK;
out:
	gnutls_free(a.data);
	gnutls_free(b.data);
	if (from_key != NULL)
		gnutls_pubkey_deinit(from_key);
	if (from_crt != NULL)
		gnutls_pubkey_deinit(from_crt);
	return e;
}

enum jwt_err
jwt_signer_load(const char *pem_path, struct jwt_signer **out, char *why,
    size_t whylen)
{
	struct jwt_signer *s = NULL;
	gnutls_x509_crt_t crt = NULL;
	gnutls_datum_t pem = { NULL, 0 };
	unsigned char digest[32];
	size_t digestlen = sizeof digest, pemlen = 0;
	struct buf tp = BUF_INIT(64);
	char *text = NULL;
	unsigned bits = 0;
	time_t expiry;
	int pk, rc, match;
	enum jwt_err e;

	assert(pem_path != NULL && out != NULL && why != NULL && whylen > 0);
	*out = NULL;
	why[0] = '\0';
	if ((e = read_pem(pem_path, &text, &pemlen, why, whylen)) != JWT_OK)
		goto out;
	pem.data = (unsigned char *)text;
	pem.size = (unsigned)pemlen;

	e = JWT_NOMEM;
	if ((s = alloc_calloc(1, sizeof *s)) == NULL ||
	    gnutls_x509_crt_init(&crt) < 0 || gnutls_privkey_init(&s->key) < 0) {
		snprintf(why, whylen, "out of memory loading %s", pem_path);
		goto out;
	}
	/* Both importers look for their own PEM label anywhere in the text, so
	 * the certificate and the key may come in either order. */
	e = JWT_BAD_FILE;
	if ((rc = gnutls_x509_crt_import(crt, &pem, GNUTLS_X509_FMT_PEM)) < 0) {
		snprintf(why, whylen, "%s holds no readable PEM certificate (%s)",
		    pem_path, gnutls_strerror(rc));
		goto out;
	}
	/* GNUTLS_PKCS_PLAIN: an encrypted key would need a password no
	 * configuration gives; say so rather than ask. */
	if ((rc = gnutls_privkey_import_x509_raw(s->key, &pem, GNUTLS_X509_FMT_PEM,
	    NULL, GNUTLS_PKCS_PLAIN)) < 0) {
		snprintf(why, whylen, "%s holds no readable unencrypted private key "
		    "(PRIVATE KEY or RSA PRIVATE KEY; %s)", pem_path, gnutls_strerror(rc));
		goto out;
	}
	pk = gnutls_privkey_get_pk_algorithm(s->key, &bits);
	if (pk != GNUTLS_PK_RSA) {
		snprintf(why, whylen, "%s: the private key is %s; an RSA key is "
		    "required (PS256)", pem_path, pk < 0 ? "of an unknown kind" :
		    gnutls_pk_get_name((gnutls_pk_algorithm_t)pk));
		goto out;
	}
	if ((e = key_matches_certificate(s->key, crt, &match)) != JWT_OK) {
		snprintf(why, whylen, "%s: cannot compare the key with the "
		    "certificate's public key", pem_path);
		goto out;
	}
	if (!match) {
		e = JWT_BAD_FILE;
		snprintf(why, whylen, "%s: the private key is not the certificate's "
		    "(their public keys differ)", pem_path);
		goto out;
	}
#if GNUTLS_VERSION_NUMBER >= 0x030707
	/* PS256 fixes the salt at the digest's 32 bytes (RFC 7518 section 3.5);
	 * pin it rather than trust the library's default for a plain RSA key. */
	gnutls_privkey_set_flags(s->key, GNUTLS_PRIVKEY_FLAG_RSA_PSS_FIXED_SALT_LENGTH);
#endif

	/* The fingerprint is the hash of the certificate's DER, as x5t#S256
	 * wants (RFC 7515 section 4.1.8). */
	e = JWT_CRYPTO;
	if (gnutls_x509_crt_get_fingerprint(crt, GNUTLS_DIG_SHA256, digest,
	    &digestlen) < 0 || digestlen != sizeof digest) {
		snprintf(why, whylen, "%s: cannot hash the certificate", pem_path);
		goto out;
	}
	if (base64url_encode(digest, digestlen, &tp) != BASE64_OK ||
	    copy_span(s->thumbprint, sizeof s->thumbprint, buf_span(&tp)) != 0) {
		e = JWT_NOMEM;
		snprintf(why, whylen, "out of memory loading %s", pem_path);
		goto out;
	}
	if ((expiry = gnutls_x509_crt_get_expiration_time(crt)) == (time_t)-1) {
		e = JWT_BAD_FILE;
		snprintf(why, whylen, "%s: the certificate has no readable notAfter",
		    pem_path);
		goto out;
	}
	s->not_after = (int64_t)expiry;
	*out = s;
	s = NULL;
	e = JWT_OK;
out:
	if (text != NULL) {
		explicit_bzero(text, pemlen);
		alloc_free(text);
	}
	buf_free(&tp);
	if (crt != NULL)
		gnutls_x509_crt_deinit(crt);
	jwt_signer_free(s);
	return e;
}

void
jwt_signer_free(struct jwt_signer *signer)
{
	if (signer == NULL)
		return;
	/* The x509 key's deinit clears its numbers before freeing them. */
	if (signer->key != NULL)
		gnutls_privkey_deinit(signer->key);
	explicit_bzero(signer, sizeof *signer);
	alloc_free(signer);
}

const char *
jwt_signer_thumbprint(const struct jwt_signer *signer)
{
	return signer->thumbprint;
}

int64_t
jwt_signer_not_after(const struct jwt_signer *signer)
{
	return signer->not_after;
}

/* A client id is a GUID and the audience a URL: printable ASCII both, which
 * also keeps them valid JSON strings (json_string would refuse bad UTF-8 as
 * if memory had run out). */
static int
printable_ascii(const char *s)
{
	if (*s == '\0')
		return 0;
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			return 0;
	return 1;
}

/* A random (version 4) UUID, RFC 9562 section 5.4: 122 random bits, the
 * version nibble 4 and the variant bits 10. */
static enum jwt_err
uuid_v4(char out[37])
{
	static const char variant[] = "89ab";
	char hex[33];
	int v;

	if (rand_hex(hex, sizeof hex, 16) != 0)
		return JWT_CRYPTO;
	hex[12] = '4';
	v = hex[16] >= 'a' ? hex[16] - 'a' + 10 : hex[16] - '0';
	hex[16] = variant[v & 3];
	if (snprintf(out, 37, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12,
	    hex + 16, hex + 20) != 36)
		return JWT_CRYPTO;
	return JWT_OK;
}

/* Append base64url(JSON text of obj) to out; obj is consumed. */
static enum jwt_err
append_json_part(json_t *obj, struct buf *out)
{
	char *text = NULL;
	enum jwt_err e = JWT_NOMEM;

	if (obj == NULL)
		goto out;
	if ((text = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER)) == NULL)
		goto out;
	if (base64url_encode(text, strlen(text), out) != BASE64_OK)
		goto out;
	e = JWT_OK;
out:
	free(text);
	json_decref(obj);
	return e;
}

static json_t *
header_new(const struct jwt_signer *signer)
{
	return json_pack("{s:s, s:s, s:s}", "alg", "PS256", "typ", "JWT",
	    "x5t#S256", signer->thumbprint);
}

/* json_pack's "I" takes a json_int_t (long long); the claims are int64_t. */
static json_t *
payload_new(const char *client_id, const char *audience, const char *jti,
    int64_t now)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:I}", "aud", audience,
	    "iss", client_id, "sub", client_id, "jti", jti,
	    "nbf", (json_int_t)now, "iat", (json_int_t)now,
	    "exp", (json_int_t)(now + JWT_ASSERTION_SECONDS));
}

enum jwt_err
jwt_client_assertion(const struct jwt_signer *signer, const char *client_id,
    const char *audience, int64_t now, struct buf *out)
{
	gnutls_datum_t data, sig = { NULL, 0 };
	size_t start;
	char jti[37];
	enum jwt_err e;

	assert(signer != NULL && client_id != NULL && audience != NULL && out != NULL);
	assert(now >= 0 && now <= INT64_MAX - JWT_ASSERTION_SECONDS);
	start = out->len;
	if (!printable_ascii(client_id) || !printable_ascii(audience)) {
		e = JWT_BAD_INPUT;
		goto out;
	}
	if ((e = uuid_v4(jti)) != JWT_OK)
		goto out;
	if ((e = append_json_part(header_new(signer), out)) != JWT_OK)
		goto out;
	e = JWT_NOMEM;
	if (buf_append(out, ".", 1) != BUF_OK)
		goto out;
	if ((e = append_json_part(payload_new(client_id, audience, jti, now), out)) != JWT_OK)
		goto out;
	/* The JWS signing input is the two encoded parts and their dot
	 * (RFC 7515 section 5.1); the RSAE code point is PSS with an ordinary
	 * rsaEncryption key, which is what an Entra certificate holds. */
	data.data = (unsigned char *)out->ptr + start;
	data.size = (unsigned)(out->len - start);
	e = JWT_CRYPTO;
	if (gnutls_privkey_sign_data2(signer->key, GNUTLS_SIGN_RSA_PSS_RSAE_SHA256,
	    0, &data, &sig) < 0)
		goto out;
	e = JWT_NOMEM;
	if (buf_append(out, ".", 1) != BUF_OK ||
	    base64url_encode(sig.data, sig.size, out) != BASE64_OK)
		goto out;
	e = JWT_OK;
out:
	gnutls_free(sig.data);
	if (e != JWT_OK && out->ptr != NULL) {
		out->len = start;
		out->ptr[start] = '\0';
	}
	return e;
}
