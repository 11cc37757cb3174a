/* Unit tests for the Entra ID pieces that need no network: the secret cache
 * (a directory of the user's own, whole files of mode 0600, expiry and
 * margin, a directory another user could swap or a planted link refused),
 * the parse of Get User Delegation Key's answer, and the credential's
 * refusals of impossible settings.  The token fetch itself is proven
 * against tests/tools/fake_entra.py in tests/e2e/entra.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/blob.h"
#include "storage/blob_internal.h"
#include "storage/entra.h"
#include "storage/secret_cache.h"
#include "tap.h"

static char dir[] = "/tmp/bindery-entra-XXXXXX";

static void
test_cache(void)
{
	struct secret_cache *c = NULL;
	struct buf got = BUF_INIT(SECRET_CACHE_MAX);
	char why[256], base[300], name[80], path[512];
	const char *parts[2] = { "authority\ntenant\nclient", "https://storage.azure.com/.default" };
	const char *swapped[2] = { "authority\ntenant", "client\nhttps://storage.azure.com/.default" };
	char other[80];
	struct stat st;
	int64_t exp;

	snprintf(base, sizeof base, "%s/cache", dir);
	tap_ok(secret_cache_open(base, &c, why, sizeof why) == SECRET_CACHE_OK, "a missing cache directory is made: %s",
	       c ? secret_cache_path(c) : why);
	if (c == NULL)
		return;
	tap_ok(stat(secret_cache_path(c), &st) == 0 && (st.st_mode & 0777) == 0700 && st.st_uid == geteuid(),
	       "DIR/<uid> is the user's own, mode 0700");
	tap_ok(stat(base, &st) == 0 && (st.st_mode & 07777) == 01733, "DIR itself is sticky 1733");
	secret_cache_name(parts, 2, ".token", name);
	secret_cache_name(swapped, 2, ".token", other);
	tap_ok(strlen(name) == 38 && strcmp(name, other) != 0, "names keep their parts apart (%s)", name);
	tap_ok(secret_cache_put(c, name, "tok-1", 5, 1000) == SECRET_CACHE_OK, "a secret is stored");
	snprintf(path, sizeof path, "%s/%s", secret_cache_path(c), name);
	tap_ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "... in a file of mode 0600");
	tap_ok(secret_cache_get(c, name, 900, 50, &got, &exp) == SECRET_CACHE_OK && got.len == 5 &&
	       memcmp(got.ptr, "tok-1", 5) == 0 && exp == 1000, "... and read back while it has the margin left");
	tap_ok(secret_cache_get(c, name, 960, 50, &got, &exp) == SECRET_CACHE_MISS,
	       "... not once less than the margin is left");
	tap_ok(secret_cache_put(c, name, "tok-2", 5, 2000) == SECRET_CACHE_OK &&
	       secret_cache_get(c, name, 960, 50, &got, &exp) == SECRET_CACHE_OK && exp == 2000 &&
	       memcmp(got.ptr, "tok-2", 5) == 0, "a new secret replaces the old whole");
	tap_ok(chmod(path, 0644) == 0 && secret_cache_get(c, name, 0, 0, &got, &exp) == SECRET_CACHE_MISS,
	       "a file others may read is not taken");
	unlink(path);
	tap_ok(symlink("/etc/hostname", path) == 0 && secret_cache_get(c, name, 0, 0, &got, &exp) ==
	       SECRET_CACHE_MISS, "a planted symbolic link is not followed");
	unlink(path);
	secret_cache_free(c);
	c = NULL;

	/* DIR writable by others without the sticky bit: anyone could swap DIR/<uid>. */
	tap_ok(chmod(base, 0777) == 0 && secret_cache_open(base, &c, why, sizeof why) == SECRET_CACHE_UNSAFE &&
	       c == NULL && strstr(why, "another user") != NULL, "a DIR others may write, not sticky, is refused: %s",
	       why);
	chmod(base, 01733);
	/* DIR/<uid> a link to somewhere else. */
	snprintf(path, sizeof path, "%s/%u", base, (unsigned)geteuid());
	snprintf(why, sizeof why, "%s.real", path);
	tap_ok(rename(path, why) == 0 && symlink(why, path) == 0, "(DIR/<uid> replaced by a link)");
	tap_ok(secret_cache_open(base, &c, why, sizeof why) == SECRET_CACHE_UNSAFE && c == NULL,
	       "a DIR/<uid> that is a link is refused: %s", why);
	tap_ok(secret_cache_open("relative/dir", &c, why, sizeof why) == SECRET_CACHE_UNSAFE,
	       "a relative directory is refused");
	buf_free(&got);
}

static void
test_delegation_key_answer(void)
{
	static const char good[] = "<?xml version=\"1.0\" encoding=\"utf-8\"?><UserDelegationKey>"
		"<SignedOid>6ffb1483-79f9-55e0-a92b-2a60a854c279</SignedOid><SignedTid>tid</SignedTid>"
		"<SignedStart>2026-12-06T08:00:00Z</SignedStart><SignedExpiry>2026-12-07T08:00:00.0000000Z"
		"</SignedExpiry><SignedService>b</SignedService><SignedVersion>2026-06-06</SignedVersion>"
		"<Value>a2V5LWJ5dGVz</Value></UserDelegationKey>";
	struct blob_delegation_key k;
	char bad[sizeof good + 32];

	tap_ok(blob_parse_delegation_key_answer(good, sizeof good - 1, &k) == BLOB_XML_OK &&
	       strcmp(k.oid, "6ffb1483-79f9-55e0-a92b-2a60a854c279") == 0 && strcmp(k.version, "2026-06-06") == 0 &&
	       k.value_len == 9 && memcmp(k.value, "key-bytes", 9) == 0, "a delegation key parses");
	TAP_EQ_INT(k.expires, 1796630400, "... its expiry, a fraction of a second and all, in Unix seconds");
	/* Without its Value. */
	snprintf(bad, sizeof bad, "%.*s</UserDelegationKey>", (int)(strstr(good, "<Value>") - good), good);
	tap_ok(blob_parse_delegation_key_answer(bad, strlen(bad), &k) == BLOB_XML_MALFORMED && k.value_len == 0,
	       "without its Value it is malformed, and nothing is kept");
	tap_ok(blob_parse_delegation_key_answer("<UserDelegationKey><SignedOid>o</SignedOid></UserDelegationKey>",
						63, &k) == BLOB_XML_MALFORMED, "a key missing fields is malformed");
}

static void
test_credential_settings(void)
{
	struct entra_settings s = { .kind = ENTRA_CLIENT_SECRET, .tenant_id = "t", .client_id = "c" };
	struct entra_credential *c = NULL;
	struct entra_error why;

	tap_ok(entra_credential_new(&s, &c, &why) == ENTRA_BAD_SETTINGS && c == NULL &&
	       strstr(why.message, "client secret needs its file") != NULL, "a secret credential needs its file");
	s.kind = ENTRA_CLIENT_CERTIFICATE;
	s.certificate = "/nonexistent/entra.pem";
	tap_ok(entra_credential_new(&s, &c, &why) == ENTRA_CREDENTIAL_FILE && c == NULL &&
	       strstr(why.message, "/nonexistent/entra.pem") != NULL,
	       "a certificate that cannot be read is named at start: %s", why.message);
	s = (struct entra_settings){ .kind = ENTRA_MANAGED_IDENTITY };
	tap_ok(entra_credential_new(&s, &c, &why) == ENTRA_OK && c != NULL &&
	       strstr(entra_identity(c), "169.254.169.254") != NULL,
	       "a system-assigned managed identity needs nothing more");
	entra_credential_free(c);
}

int
main(void)
{
	char cmd[300];

	if (mkdtemp(dir) == NULL)
		tap_bail("mkdtemp");
	test_cache();
	test_delegation_key_answer();
	test_credential_settings();
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		tap_diag("could not remove %s", dir);
	return tap_done();
}
