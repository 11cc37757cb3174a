/*
 * Unit tests for jwt.c: Entra's client assertion, checked by someone else.
 *
 * openssl(1) makes the certificates and keys at run time (nothing binary is
 * committed), computes the certificate's SHA-256 from its DER on its own and
 * verifies the PS256 signature (PSS, SHA-256, salt 32) over the bytes this
 * test writes to a file; a salt of any other length and a changed payload
 * must fail that same verification.  Loading refuses a key that is not the
 * certificate's, an EC key, a missing file, a file without a key.  openssl
 * runs by fork and exec with argument vectors: no shell, no quoting.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/alloc.h"
#include "base/base64.h"
#include "base/buf.h"
#include "storage/jwt.h"
#include "tap.h"

#define CLIENT_ID "0b6c2f4e-1d2a-4c3b-9e8f-7a6b5c4d3e2f"
#define AUDIENCE "https://login.microsoftonline.com/tenant-x/oauth2/v2.0/token"

static char dir[256];

/* dir/name into out[outlen]; bails when it does not fit. */
static const char *
path_in(char *out, size_t outlen, const char *name)
{
	if ((size_t)snprintf(out, outlen, "%s/%s", dir, name) >= outlen)
		tap_bail("path too long: %s/%s", dir, name);
	return out;
}

/* Run argv (argv[0] looked up in PATH) with stdout and stderr to /dev/null;
 * its exit status, or -1 when it did not exit normally. */
static int
run(const char *const argv[])
{
	pid_t pid;
	int status, fd;

	fflush(stdout);
	if ((pid = fork()) < 0)
		tap_bail("fork: %s", strerror(errno));
	if (pid == 0) {
		if ((fd = open("/dev/null", O_WRONLY)) >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			tap_bail("waitpid: %s", strerror(errno));
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void
must_run(const char *const argv[])
{
	if (run(argv) != 0)
		tap_bail("openssl failed: %s %s %s", argv[0], argv[1], argv[2]);
}

static void
slurp(const char *path, struct buf *out)
{
	char chunk[4096];
	FILE *fp;
	size_t n;

	buf_reset(out);
	if ((fp = fopen(path, "rb")) == NULL)
		tap_bail("cannot open %s: %s", path, strerror(errno));
	while ((n = fread(chunk, 1, sizeof chunk, fp)) > 0)
		if (buf_append(out, chunk, n) != BUF_OK)
			tap_bail("%s is too large", path);
	fclose(fp);
}

static void
spit(const char *path, const void *p, size_t n)
{
	FILE *fp;

	if ((fp = fopen(path, "wb")) == NULL || fwrite(p, 1, n, fp) != n ||
	    fclose(fp) != 0)
		tap_bail("cannot write %s", path);
}

/* Write the files a, then b, one after the other into path. */
static void
concat(const char *path, const char *a, const char *b)
{
	struct buf all = BUF_INIT(1 << 20), part = BUF_INIT(1 << 20);

	slurp(a, &part);
	if (buf_append_span(&all, buf_span(&part)) != BUF_OK)
		tap_bail("out of memory");
	slurp(b, &part);
	if (buf_append_span(&all, buf_span(&part)) != BUF_OK)
		tap_bail("out of memory");
	spit(path, all.ptr, all.len);
	buf_free(&all);
	buf_free(&part);
}

/* A self-signed certificate for 30 days and its key (newkey: "rsa:2048" or
 * "ec"), PKCS#8 as openssl 3 writes it. */
static void
make_certificate(const char *newkey, const char *keyname, const char *certname)
{
	char key[300], cert[300];
	const char *const rsa[] = { "openssl", "req", "-x509", "-newkey", newkey,
	    "-nodes", "-keyout", path_in(key, sizeof key, keyname), "-out",
	    path_in(cert, sizeof cert, certname), "-subj", "/CN=bindery-jwt-test",
	    "-days", "30", NULL };
	const char *const ec[] = { "openssl", "req", "-x509", "-newkey", "ec",
	    "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key,
	    "-out", cert, "-subj", "/CN=bindery-jwt-test", "-days", "30", NULL };

	must_run(strcmp(newkey, "ec") == 0 ? ec : rsa);
}

/* Standard base64 from base64url: "+/" back, padding put back; then the
 * strict decoder, which thus also checks there was no padding to begin with
 * (a '=' in the input stays and is refused where it lands). */
static int
decode_url(struct span text, struct buf *out)
{
	struct buf std = BUF_INIT(1 << 20);
	size_t i;
	int ok;

	buf_reset(out);
	for (i = 0; i < text.len; i++) {
		char ch = text.ptr[i] == '-' ? '+' : text.ptr[i] == '_' ? '/' : text.ptr[i];

		if (buf_append(&std, &ch, 1) != BUF_OK)
			tap_bail("out of memory");
	}
	while (std.len % 4 != 0)
		if (buf_append(&std, "=", 1) != BUF_OK)
			tap_bail("out of memory");
	ok = base64_decode(buf_span(&std), out) == BASE64_OK;
	buf_free(&std);
	return ok;
}

static int
is_base64url(struct span s)
{
	size_t i;

	if (s.len == 0)
		return 0;
	for (i = 0; i < s.len; i++) {
		char c = s.ptr[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '_'))
			return 0;
	}
	return 1;
}

/* xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx, lower-case hex. */
static int
is_uuid_v4(const char *s)
{
	size_t i;

	if (strlen(s) != 36 || s[14] != '4' || strchr("89ab", s[19]) == NULL)
		return 0;
	for (i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return 0;
		} else if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	}
	return 1;
}

/* The three parts of a compact JWS, or 0 when it has not exactly three. */
static int
split3(const struct buf *jws, struct span part[3])
{
	const char *p = jws->ptr, *end = jws->ptr + jws->len, *dot;
	int i;

	for (i = 0; i < 3; i++) {
		dot = memchr(p, '.', (size_t)(end - p));
		if ((dot == NULL) != (i == 2))
			return 0;
		if (dot == NULL)
			dot = end;
		part[i] = (struct span){ p, (size_t)(dot - p) };
		p = dot + 1;
	}
	return 1;
}

static json_t *
json_of(struct span part)
{
	struct buf raw = BUF_INIT(1 << 16);
	json_t *j = NULL;

	if (decode_url(part, &raw))
		j = json_loadb(raw.ptr, raw.len, JSON_REJECT_DUPLICATES, NULL);
	buf_free(&raw);
	return j;
}

static const char *
str_field(json_t *obj, const char *key)
{
	const char *s = json_string_value(json_object_get(obj, key));

	return s != NULL ? s : "(absent)";
}

static long long
int_field(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

/* openssl's verdict on sig over the signing input, with the salt length
 * given; 0 means it verifies. */
static int
openssl_verify(const char *input, const char *sig, const char *saltlen)
{
	char pub[300], opt[64];
	const char *const argv[] = { "openssl", "dgst", "-sha256", "-sigopt",
	    "rsa_padding_mode:pss", "-sigopt", opt, "-sigopt", "rsa_mgf1_md:sha256",
	    "-verify", path_in(pub, sizeof pub, "pub.pem"), "-signature", sig,
	    input, NULL };

	snprintf(opt, sizeof opt, "rsa_pss_saltlen:%s", saltlen);
	return run(argv);
}

static void
test_assertion(void)
{
	char pem[300], cert[300], der[300], digest[300], pub[300], input[300],
	    sig[300];
	const char *const to_der[] = { "openssl", "x509", "-in",
	    path_in(cert, sizeof cert, "cert.pem"), "-outform", "DER", "-out",
	    path_in(der, sizeof der, "cert.der"), NULL };
	const char *const hash[] = { "openssl", "dgst", "-sha256", "-binary", "-out",
	    path_in(digest, sizeof digest, "digest.bin"), der, NULL };
	const char *const pubkey[] = { "openssl", "x509", "-in", cert, "-pubkey",
	    "-noout", "-out", path_in(pub, sizeof pub, "pub.pem"), NULL };
	struct jwt_signer *signer = NULL;
	struct buf out = BUF_INIT(1 << 16), raw = BUF_INIT(4096),
	    file = BUF_INIT(4096), again = BUF_INIT(1 << 16);
	struct span part[3], part2[3];
	json_t *header = NULL, *payload = NULL, *payload2 = NULL;
	char why[512];
	int64_t now = (int64_t)time(NULL);

	must_run(to_der);
	must_run(hash);
	must_run(pubkey);
	path_in(pem, sizeof pem, "cert_then_key.pem");
	tap_ok(jwt_signer_load(pem, &signer, why, sizeof why) == JWT_OK,
	    "loads a certificate followed by its PKCS#8 key (%s)", why);
	if (signer == NULL)
		tap_bail("no signer");
	tap_ok(strlen(jwt_signer_thumbprint(signer)) == 43 &&
	    is_base64url(span_from_cstr(jwt_signer_thumbprint(signer))),
	    "the thumbprint is 43 base64url characters");
	tap_ok(jwt_signer_not_after(signer) > now + 30 * 86400 - 600 &&
	    jwt_signer_not_after(signer) < now + 30 * 86400 + 600,
	    "not_after is the certificate's, 30 days from now");

	if (buf_append_cstr(&out, "prefix:") != BUF_OK)
		tap_bail("out of memory");
	tap_ok(jwt_client_assertion(signer, CLIENT_ID, AUDIENCE, now, &out) == JWT_OK,
	    "makes an assertion");
	tap_ok(strncmp(out.ptr, "prefix:", 7) == 0, "appends to what the buffer held");
	memmove(out.ptr, out.ptr + 7, out.len - 7 + 1);
	out.len -= 7;
	tap_ok(split3(&out, part), "three dot-separated parts");
	tap_ok(is_base64url(part[0]) && is_base64url(part[1]) && is_base64url(part[2]),
	    "each part is base64url, no '=' padding");

	header = json_of(part[0]);
	payload = json_of(part[1]);
	tap_ok(header != NULL && json_object_size(header) == 3,
	    "the header is a JSON object of three members");
	TAP_EQ_STR(str_field(header, "alg"), "PS256", "header alg");
	TAP_EQ_STR(str_field(header, "typ"), "JWT", "header typ");
	TAP_EQ_STR(str_field(header, "x5t#S256"), jwt_signer_thumbprint(signer),
	    "header x5t#S256 is the signer's thumbprint");
	slurp(digest, &file);
	tap_ok(file.len == 32 &&
	    decode_url(span_from_cstr(str_field(header, "x5t#S256")), &raw) &&
	    raw.len == 32 && memcmp(raw.ptr, file.ptr, 32) == 0,
	    "x5t#S256 is the SHA-256 of the certificate's DER, as openssl computes it");

	tap_ok(payload != NULL && json_object_size(payload) == 7,
	    "the payload is a JSON object of seven members");
	TAP_EQ_STR(str_field(payload, "aud"), AUDIENCE, "payload aud");
	TAP_EQ_STR(str_field(payload, "iss"), CLIENT_ID, "payload iss");
	TAP_EQ_STR(str_field(payload, "sub"), CLIENT_ID, "payload sub");
	tap_ok(is_uuid_v4(str_field(payload, "jti")), "payload jti is a UUID v4 (%s)",
	    str_field(payload, "jti"));
	TAP_EQ_INT(int_field(payload, "nbf"), now, "payload nbf");
	TAP_EQ_INT(int_field(payload, "iat"), now, "payload iat");
	TAP_EQ_INT(int_field(payload, "exp"), now + 600, "payload exp");

	/* The signature, by openssl over the bytes of "header.payload". */
	spit(path_in(input, sizeof input, "input.bin"), part[0].ptr,
	    part[0].len + 1 + part[1].len);
	tap_ok(decode_url(part[2], &raw) && raw.len == 256,
	    "the signature is 256 bytes (a 2048-bit key)");
	spit(path_in(sig, sizeof sig, "sig.bin"), raw.ptr, raw.len);
	tap_ok(openssl_verify(input, sig, "32") == 0,
	    "openssl verifies it: PSS, SHA-256, MGF1-SHA-256, salt 32");
	tap_ok(openssl_verify(input, sig, "20") != 0 &&
	    openssl_verify(input, sig, "222") != 0,
	    "... and refuses it with a salt of 20 or of the maximum, 222 (the salt is 32)");

	/* Another assertion: a new jti; its payload under the first signature
	 * must not verify. */
	tap_ok(jwt_client_assertion(signer, CLIENT_ID, AUDIENCE, now + 1, &again) ==
	    JWT_OK && split3(&again, part2), "a second assertion");
	payload2 = json_of(part2[1]);
	tap_ok(payload2 != NULL && strcmp(str_field(payload2, "jti"),
	    str_field(payload, "jti")) != 0, "... with a jti of its own");
	buf_reset(&file);
	if (buf_append(&file, part[0].ptr, part[0].len + 1) != BUF_OK ||
	    buf_append_span(&file, part2[1]) != BUF_OK)
		tap_bail("out of memory");
	spit(input, file.ptr, file.len);
	tap_ok(openssl_verify(input, sig, "32") != 0,
	    "a changed payload does not verify under the first signature");

	/* Inputs no JSON string may carry, and the buffer left as it was. */
	buf_reset(&out);
	if (buf_append_cstr(&out, "kept") != BUF_OK)
		tap_bail("out of memory");
	tap_ok(jwt_client_assertion(signer, "", AUDIENCE, now, &out) == JWT_BAD_INPUT &&
	    strcmp(buf_cstr(&out), "kept") == 0, "an empty client_id is BAD_INPUT, out unchanged");
	tap_ok(jwt_client_assertion(signer, CLIENT_ID, "https://x/\n", now, &out) ==
	    JWT_BAD_INPUT && strcmp(buf_cstr(&out), "kept") == 0,
	    "a control character in the audience is BAD_INPUT");
	{
		struct buf tiny = BUF_INIT(100);

		tap_ok(jwt_client_assertion(signer, CLIENT_ID, AUDIENCE, now, &tiny) ==
		    JWT_NOMEM && tiny.len == 0, "an output cap too small is NOMEM, nothing left");
		buf_free(&tiny);
	}

	json_decref(header);
	json_decref(payload);
	json_decref(payload2);
	buf_free(&out);
	buf_free(&again);
	buf_free(&raw);
	buf_free(&file);
	jwt_signer_free(signer);
}

/* The other orders and forms a PEM file comes in. */
static void
test_forms(void)
{
	char pem[300], key[300], rsa[300], cert[300];
	const char *const traditional[] = { "openssl", "rsa", "-traditional", "-in",
	    path_in(key, sizeof key, "key.pem"), "-out",
	    path_in(rsa, sizeof rsa, "key_rsa.pem"), NULL };
	struct jwt_signer *a = NULL, *b = NULL;
	struct buf file = BUF_INIT(1 << 16);
	char why[512];

	must_run(traditional);
	slurp(rsa, &file);
	tap_ok(strstr(buf_cstr(&file), "-----BEGIN RSA PRIVATE KEY-----") != NULL,
	    "openssl wrote a PKCS#1 key");
	concat(path_in(pem, sizeof pem, "key_then_cert.pem"), key,
	    path_in(cert, sizeof cert, "cert.pem"));
	tap_ok(jwt_signer_load(pem, &a, why, sizeof why) == JWT_OK,
	    "loads a PKCS#8 key followed by its certificate (%s)", why);
	concat(path_in(pem, sizeof pem, "rsa_then_cert.pem"), rsa, cert);
	tap_ok(jwt_signer_load(pem, &b, why, sizeof why) == JWT_OK,
	    "loads an RSA PRIVATE KEY followed by its certificate (%s)", why);
	tap_ok(a != NULL && b != NULL && strcmp(jwt_signer_thumbprint(a),
	    jwt_signer_thumbprint(b)) == 0, "... the same thumbprint each way");
	jwt_signer_free(a);
	jwt_signer_free(b);
	buf_free(&file);
}

static void
expect_bad_file(const char *name, const char *cause, const char *what)
{
	struct jwt_signer *s = (struct jwt_signer *)&s;	/* must become NULL */
	char pem[300], why[512];
	enum jwt_err e;

	e = jwt_signer_load(path_in(pem, sizeof pem, name), &s, why, sizeof why);
	tap_ok(e == JWT_BAD_FILE && s == NULL, "%s: BAD_FILE", what);
	tap_ok(strstr(why, pem) != NULL && strstr(why, cause) != NULL,
	    "... why names the file and says \"%s\" (%s)", cause, tap_escape(why));
	tap_ok(strstr(why, "PRIVATE KEY-----") == NULL && strstr(why, "MII") == NULL,
	    "... and quotes nothing of the file");
	if (e == JWT_OK)
		jwt_signer_free(s);
}

/* dst made of a's text, then b's, every name in the test's directory. */
static void
concat_in(const char *dst, const char *a, const char *b)
{
	char p[300], q[300], r[300];

	concat(path_in(p, sizeof p, dst), path_in(q, sizeof q, a),
	    path_in(r, sizeof r, b));
}

static void
test_refusals(void)
{
	char p[300];

	make_certificate("rsa:2048", "other_key.pem", "other_cert.pem");
	concat_in("mismatch.pem", "cert.pem", "other_key.pem");
	expect_bad_file("mismatch.pem", "not the certificate's",
	    "the key of another certificate");

	make_certificate("ec", "ec_key.pem", "ec_cert.pem");
	concat_in("ec.pem", "ec_cert.pem", "ec_key.pem");
	expect_bad_file("ec.pem", "RSA key is required", "an EC key");

	expect_bad_file("no_such.pem", "No such file", "a missing file");
	expect_bad_file("cert.pem", "no readable unencrypted private key",
	    "a certificate without a key");
	expect_bad_file("key.pem", "no readable PEM certificate", "a key without a certificate");
	spit(path_in(p, sizeof p, "empty.pem"), "", 0);
	expect_bad_file("empty.pem", "empty", "an empty file");
}

/* Each allocation of a load that goes through lib/base/alloc fails in
 * turn: NOMEM, no signer, nothing leaked (valgrind or ASan sees to that). */
static void
test_alloc_failures(void)
{
	struct jwt_signer *s;
	char pem[300], why[512];
	long n, before = alloc_count();
	enum jwt_err e;

	if (jwt_signer_load(path_in(pem, sizeof pem, "cert_then_key.pem"), &s, why,
	    sizeof why) != JWT_OK)
		tap_bail("cannot load %s: %s", pem, why);
	jwt_signer_free(s);
	n = alloc_count() - before;
	tap_ok(n >= 3, "a load allocates through the hook (%ld times)", n);
	for (; n > 0; n--) {
		alloc_fail_after(n);
		e = jwt_signer_load(pem, &s, why, sizeof why);
		alloc_fail_after(-1);
		tap_ok(e == JWT_NOMEM && s == NULL && strstr(why, "out of memory") != NULL,
		    "allocation %ld of a load fails: NOMEM (%s)", n, why);
		if (e == JWT_OK)
			jwt_signer_free(s);
	}
}

/* atexit: the directory goes even when a check bails out. */
static void
remove_dir(void)
{
	const char *const rm[] = { "rm", "-rf", dir, NULL };

	(void)run(rm);
}

int
main(void)
{
	const char *tmp = getenv("TMPDIR");
	const char *const version[] = { "openssl", "version", NULL };

	if (run(version) != 0)
		tap_missing("openssl(1) is not installed (it makes and checks the keys)");
	if ((size_t)snprintf(dir, sizeof dir, "%s/test_jwt.XXXXXX",
	    tmp != NULL && *tmp != '\0' ? tmp : "/tmp") >= sizeof dir ||
	    mkdtemp(dir) == NULL)
		tap_bail("cannot make a temporary directory");
	atexit(remove_dir);
	make_certificate("rsa:2048", "key.pem", "cert.pem");
	concat_in("cert_then_key.pem", "cert.pem", "key.pem");

	test_assertion();
	test_forms();
	test_refusals();
	test_alloc_failures();
	return tap_done();
}
