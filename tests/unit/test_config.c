/*
 * Unit tests for config.c: every key, defaults, connection strings, the
 * file:line: key message for each kind of mistake, every mistake of a file
 * at once, and the sample's @NAME@ placeholders refused.  Secrets must never be
 * echoed in an error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "parse/config.h"
#include "tap.h"

static char path[] = "/tmp/bindery-test-config-XXXXXX";

static int
load_text(const char *text, struct bindery_config **cfg, char *err, size_t errlen,
	  char *warn, size_t warnlen)
{
	FILE *fp = fopen(path, "w");

	if (fp == NULL)
		tap_bail("cannot write %s", path);
	fputs(text, fp);
	fclose(fp);
	return config_load(path, cfg, err, errlen, warn, warnlen);
}

#define BASE "[database]\nsocket = /tmp/s.sock\nuser = u\npassword = hunter2-secret\nname = bindery\n" \
	"[storage]\nconnection_string = UseDevelopmentStorage=true\ncontainer = documents\n"

/* Storage by SAS alone: no account key, no database password, no tokens. */
#define SAS_ONLY "[database]\nsocket = /s\nuser = u\nname = n\n[storage]\ncontainer = c\n" \
	"endpoint = https://acct.blob.core.windows.net\naccount = acct\n" \
	"sas = sv=2025-11-05&ss=b&srt=sco&sp=rwdlacupitfx&se=2030-01-01T00:00:00Z&sig=abc%2Bdef\n"

/* [events]: receivers in order, each key after its url its own. */
static void
test_events(void)
{
	static const struct {
		const char *text, *want;
	} bad[] = {
		{ BASE "[events]\nsecret_file = /s\n", "belongs to a receiver: put it after its url line" },
		{ BASE "[events]\nurl = http://hooks.example.org/x?token=SECRET\nsecret_file = /s\n",
		  "receiver 1: url must be https://" },
		{ BASE "[events]\nurl = https://h.example/a\n", "receiver 1: needs its secret_file" },
		{ BASE "[events]\nurl = https://h.example/a\nsecret_file = /s\nurl = https://h.example/a\n"
		  "secret_file = /t\n", "receiver 2: its url is receiver 1's too" },
		{ BASE "[events]\nurl = https://h.example/a\nsecret_file = /s\ntimeout = 0\n", "timeout" },
	};
	struct bindery_config *cfg = NULL;
	char err[1024];
	size_t i;

	tap_ok(load_text(BASE "[events]\nretention = 60\nbackoff_max = 5\nurl = https://h.example/a\n"
			 "secret_file = /s\ntimeout = 3\nurl = http://127.0.0.1:9/b\nsecret_file = /t\n"
			 "max_age = 10\n", &cfg, err, sizeof err, NULL, 0) == 0,
	       "two receivers load: %s", cfg ? "" : err);
	if (cfg) {
		tap_ok(cfg->nevents == 2 && cfg->events[0].timeout == 3 && cfg->events[0].max_age == 86400 &&
		       cfg->events[1].timeout == 2 && cfg->events[1].max_age == 10 &&
		       strcmp(cfg->events[1].secret_file, "/t") == 0,
		       "... each key after a url is that receiver's, the rest default");
		tap_ok(cfg->events_retention == 60 && cfg->events_backoff_max == 5, "... retention, backoff_max");
		config_free(cfg);
		cfg = NULL;
	}
	tap_ok(load_text(BASE, &cfg, err, sizeof err, NULL, 0) == 0 && cfg->nevents == 0 &&
	       cfg->events_retention == 7 * 86400 && cfg->events_backoff_max == 3600,
	       "no [events]: no receiver; a week's retention, an hour's backoff cap by default");
	config_free(cfg);
	cfg = NULL;
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int rc = load_text(bad[i].text, &cfg, err, sizeof err, NULL, 0);

		tap_ok(rc == -1 && strstr(err, bad[i].want) != NULL && strstr(err, "SECRET") == NULL,
		       "events case %zu refused, quoting no url: '%s' in '%s'", i, bad[i].want,
		       rc == -1 ? err : "(loaded)");
		if (rc == 0) {
			config_free(cfg);
			cfg = NULL;
		}
	}
}

/* [upload] allowed_types and content_type, [quota], [scan]: what loads,
 * the defaults that keep bindery as it was, and each refusal at its line. */
static void
test_admission(void)
{
	static const struct {
		const char *text, *want;
	} bad[] = {
		{ BASE "[upload]\nallowed_types = application/pdf, bogus\n",
		  ":10: [upload] allowed_types: 'bogus' is not type/subtype" },
		{ BASE "[upload]\nallowed_types = text/plain; charset=utf-8\n",
		  ":10: [upload] allowed_types: 'text/plain;' carries a parameter" },
		{ BASE "[upload]\nallowed_types = */*\n", "'*/*' does not name a type" },
		{ BASE "[upload]\ncontent_type = magic\n", ":10: [upload] content_type: invalid value" },
		{ BASE "[upload]\ncontent_type = Sniffed\n", "[upload] content_type: invalid value" },
		{ BASE "[quota]\nbytes_per_owner = lots\n", ":10: [quota] bytes_per_owner: invalid value" },
		{ BASE "[quota]\nbytes_per_owner = -1\n", "[quota] bytes_per_owner: invalid value" },
		{ BASE "[quota]\ndocuments_per_owner = many\n", "[quota] documents_per_owner: invalid value" },
		{ BASE "[quota]\ndocuments_per_owner = -1\n", "[quota] documents_per_owner: invalid value" },
		{ BASE "[quota]\npending_per_owner = 1.5\n", "[quota] pending_per_owner: invalid value" },
		{ BASE "[quota]\nbytes_per_owner = 1M\n", ":10: [quota] bytes_per_owner must be 0 (no limit) or"
		  " at least [limits] max_upload (67108864)" },
		{ BASE "[scan]\nclamd = /run/clamav/clamd.ctl\n", ":10: [scan] clamd: expected unix:/PATH or"
		  " HOST:PORT" },
		{ BASE "[scan]\nclamd = unix:run/clamd.ctl\n", "[scan] clamd: unix: needs an absolute path" },
		{ BASE "[scan]\nclamd = localhost\n", "[scan] clamd: expected unix:/PATH or HOST:PORT" },
		{ BASE "[scan]\nclamd = localhost:0\n", "[scan] clamd: expected" },
		{ BASE "[scan]\nclamd = localhost:65536\n", "[scan] clamd: expected" },
		{ BASE "[scan]\nclamd = localhost:33x\n", "[scan] clamd: expected" },
		{ BASE "[scan]\nclamd = ::1:3310\n", "[scan] clamd: expected" },
		{ BASE "[scan]\nclamd = :3310\n", "[scan] clamd: expected" },
		{ BASE "[scan]\nclamd = unix:/run/clamd.ctl\ntimeout = 0\n", ":11: [scan] timeout: invalid value" },
		{ BASE "[scan]\nclamd = unix:/run/clamd.ctl\non_scanner_error = ignore\n",
		  ":11: [scan] on_scanner_error: invalid value" },
		{ BASE "[scan]\ntimeout = 10\n", ":10: [scan] timeout and on_scanner_error apply with clamd" },
		{ BASE "[scan]\non_scanner_error = admit\n", ":10: [scan] timeout and on_scanner_error apply" },
		{ BASE "[scan]\nclamd = unix:/run/clamd.ctl\ntimeout = 301\n",
		  ":11: [scan] timeout must be at most [limits] request_deadline (300)" },
	};
	struct bindery_config *cfg = NULL;
	char err[1024], text[1024], longpath[CONFIG_UNIX_PATH_MAX + 2];
	size_t i;

	tap_ok(load_text(BASE, &cfg, err, sizeof err, NULL, 0) == 0, "none of it set: loads");
	if (cfg) {
		tap_ok(cfg->upload_allowed_types.n == 0 && cfg->upload_content_type == CONFIG_CONTENT_TYPE_DEFAULT &&
		       config_upload_content_type(cfg) == CONFIG_CONTENT_TYPE_DECLARED && !config_upload_sniffs(cfg),
		       "... no type check, the declared type, no sniffing");
		tap_ok(cfg->quota_bytes_per_owner == 0 && cfg->quota_documents_per_owner == 0 &&
		       cfg->quota_pending_per_owner == 0, "... no quota");
		tap_ok(cfg->scan_clamd.kind == CONFIG_CLAMD_NONE && cfg->scan_timeout == 30 &&
		       cfg->scan_on_error == CONFIG_SCAN_REFUSE, "... no scanner; 30 s and refuse by default");
		config_free(cfg);
		cfg = NULL;
	}
	tap_ok(load_text(BASE "[upload]\nallowed_types = application/pdf, Image/*\n", &cfg, err, sizeof err,
			 NULL, 0) == 0, "allowed_types loads: %s", cfg ? "" : err);
	if (cfg) {
		tap_ok(cfg->upload_allowed_types.n == 2 &&
		       strcmp(cfg->upload_allowed_types.items[1].type, "image") == 0 &&
		       mime_list_allows(&cfg->upload_allowed_types, SPAN_LIT("image/png")),
		       "... two patterns, matched");
		tap_ok(cfg->upload_content_type == CONFIG_CONTENT_TYPE_DEFAULT &&
		       config_upload_content_type(cfg) == CONFIG_CONTENT_TYPE_SNIFFED && config_upload_sniffs(cfg),
		       "... content_type not chosen, sniffed applies");
		config_free(cfg);
		cfg = NULL;
	}
	tap_ok(load_text(BASE "[upload]\nallowed_types = application/pdf\ncontent_type = declared\n", &cfg, err,
			 sizeof err, NULL, 0) == 0 && cfg->upload_content_type == CONFIG_CONTENT_TYPE_DECLARED &&
	       config_upload_content_type(cfg) == CONFIG_CONTENT_TYPE_DECLARED && config_upload_sniffs(cfg),
	       "allowed_types with content_type = declared: checked by content, the declared type kept");
	config_free(cfg);
	cfg = NULL;
	tap_ok(load_text(BASE "[upload]\ncontent_type = sniffed\n", &cfg, err, sizeof err, NULL, 0) == 0 &&
	       cfg->upload_allowed_types.n == 0 && config_upload_content_type(cfg) == CONFIG_CONTENT_TYPE_SNIFFED &&
	       config_upload_sniffs(cfg), "content_type = sniffed alone: every type, recorded as sniffed");
	config_free(cfg);
	cfg = NULL;
	tap_ok(load_text(BASE "[upload]\nallowed_types = image/png\nallowed_types =\n", &cfg, err, sizeof err,
			 NULL, 0) == 0 && cfg->upload_allowed_types.n == 0 && !config_upload_sniffs(cfg),
	       "an empty allowed_types (a later line replaces an earlier one): no check");
	config_free(cfg);
	cfg = NULL;

	tap_ok(load_text(BASE "[quota]\nbytes_per_owner = 10G\ndocuments_per_owner = 1000\n"
			 "pending_per_owner = 5\n", &cfg, err, sizeof err, NULL, 0) == 0 &&
	       cfg->quota_bytes_per_owner == 10ULL << 30 && cfg->quota_documents_per_owner == 1000 &&
	       cfg->quota_pending_per_owner == 5, "[quota] loads: %s", cfg ? "" : err);
	config_free(cfg);
	cfg = NULL;
	tap_ok(load_text(BASE "[quota]\nbytes_per_owner = 64M\ndocuments_per_owner = 0\npending_per_owner = 0\n",
			 &cfg, err, sizeof err, NULL, 0) == 0 && cfg->quota_bytes_per_owner == 64ULL << 20 &&
	       cfg->quota_documents_per_owner == 0, "a quota of exactly max_upload; 0 is no limit: %s",
	       cfg ? "" : err);
	config_free(cfg);
	cfg = NULL;
	tap_ok(load_text(BASE "[limits]\nmax_upload = 1M\n[quota]\nbytes_per_owner = 1M\n", &cfg, err,
			 sizeof err, NULL, 0) == 0, "... measured against the max_upload set");
	config_free(cfg);
	cfg = NULL;

	tap_ok(load_text(BASE "[scan]\nclamd = unix:/run/clamav/clamd.ctl\ntimeout = 10\non_scanner_error = admit\n",
			 &cfg, err, sizeof err, NULL, 0) == 0 && cfg->scan_clamd.kind == CONFIG_CLAMD_UNIX &&
	       strcmp(cfg->scan_clamd.path, "/run/clamav/clamd.ctl") == 0 && cfg->scan_timeout == 10 &&
	       cfg->scan_on_error == CONFIG_SCAN_ADMIT, "clamd on a unix socket, timeout, admit: %s",
	       cfg ? "" : err);
	config_free(cfg);
	cfg = NULL;
	tap_ok(load_text(BASE "[scan]\nclamd = 127.0.0.1:3310\non_scanner_error = refuse\n", &cfg, err, sizeof err,
			 NULL, 0) == 0 && cfg->scan_clamd.kind == CONFIG_CLAMD_TCP &&
	       strcmp(cfg->scan_clamd.host, "127.0.0.1") == 0 && cfg->scan_clamd.port == 3310 &&
	       cfg->scan_on_error == CONFIG_SCAN_REFUSE, "clamd over TCP");
	config_free(cfg);
	cfg = NULL;
	tap_ok(load_text(BASE "[scan]\nclamd = [::1]:65535\n", &cfg, err, sizeof err, NULL, 0) == 0 &&
	       strcmp(cfg->scan_clamd.host, "::1") == 0 && cfg->scan_clamd.port == 65535,
	       "clamd on an IPv6 address, port 65535");
	config_free(cfg);
	cfg = NULL;
	tap_ok(load_text(BASE "[limits]\nrequest_deadline = 10\n", &cfg, err, sizeof err, NULL, 0) == 0,
	       "a request_deadline below the scan timeout's default is fine without clamd: %s", cfg ? "" : err);
	config_free(cfg);
	cfg = NULL;
	longpath[0] = '/';
	memset(longpath + 1, 'p', CONFIG_UNIX_PATH_MAX - 1);
	longpath[CONFIG_UNIX_PATH_MAX] = '\0';
	snprintf(text, sizeof text, BASE "[scan]\nclamd = unix:%s\n", longpath);
	tap_ok(load_text(text, &cfg, err, sizeof err, NULL, 0) == 0 &&
	       strlen(cfg->scan_clamd.path) == CONFIG_UNIX_PATH_MAX, "a socket path of %d bytes fits",
	       CONFIG_UNIX_PATH_MAX);
	config_free(cfg);
	cfg = NULL;
	longpath[CONFIG_UNIX_PATH_MAX] = 'p';
	longpath[CONFIG_UNIX_PATH_MAX + 1] = '\0';
	snprintf(text, sizeof text, BASE "[scan]\nclamd = unix:%s\n", longpath);
	tap_ok(load_text(text, &cfg, err, sizeof err, NULL, 0) == -1 &&
	       strstr(err, ":10: [scan] clamd: a unix socket's path is at most 107 bytes") != NULL,
	       "one more is refused: %s", cfg ? "(loaded)" : err);
	config_free(cfg);
	cfg = NULL;

	for (i = 0; i < ARRAY_LEN(bad); i++) {
		int rc = load_text(bad[i].text, &cfg, err, sizeof err, NULL, 0);

		tap_ok(rc == -1 && strstr(err, bad[i].want) != NULL, "admission case %zu refused: '%s' in '%s'",
		       i, bad[i].want, rc == -1 ? err : "(loaded)");
		if (rc == 0) {
			config_free(cfg);
			cfg = NULL;
		}
	}
}

/* Storage by Entra ID: no key, no SAS; ENTRA_OK then one credential. */
#define ENTRA_HEAD "[database]\nsocket = /s\nuser = u\nname = n\n[storage]\ncontainer = c\n" \
	"endpoint = https://acct.blob.core.windows.net\naccount = acct\nauth = entra\n"
#define ENTRA_OK ENTRA_HEAD "tenant_id = t\nclient_id = c\n"

/* [storage] auth = entra: what loads, and each refusal with its words. */
static void
test_entra(void)
{
	static const struct {
		const char *text, *want;
	} bad[] = {
		{ ENTRA_OK "client_secret_file = /s\nkey = Zm9v\n", "auth = entra holds no account key or sas" },
		{ ENTRA_OK, "needs exactly one of client_certificate" },
		{ ENTRA_OK "client_secret_file = /s\nclient_certificate = /c.pem\n", "needs exactly one of" },
		{ ENTRA_HEAD "client_secret_file = /s\n", "needs tenant_id and client_id" },
		{ ENTRA_OK "client_secret_file = s\n", "must be an absolute path" },
		{ ENTRA_OK "client_secret_file = /s\nauthority = http://login.example\n",
		  "authority must be an https:// URL (http:// only on the loopback)" },
		{ ENTRA_OK "client_secret_file = /s\nauthority = https://u@login.example\n", "authority must be" },
		{ ENTRA_OK "managed_identity = yes\nimds_endpoint = http://10.0.0.1/token\n",
		  "imds_endpoint must be on 169.254.169.254 or the loopback" },
		{ ENTRA_OK "client_secret_file = /s\ntoken_cache = /tmp/cache\n", "outside /tmp" },
		{ "[database]\nsocket = /s\nuser = u\nname = n\n[storage]\ncontainer = c\n"
		  "endpoint = http://127.0.0.1:10000/acct\naccount = acct\nauth = entra\ntenant_id = t\n"
		  "client_id = c\nclient_secret_file = /s\n", "needs an https:// endpoint" },
		{ BASE "tenant_id = t\n", "apply with auth = entra" },
		{ BASE "auth = sas\n", "auth = sas needs a sas" },
	};
	struct bindery_config *cfg = NULL;
	char err[1024];
	size_t i;

	tap_ok(load_text(ENTRA_OK "client_secret_file = /etc/s\n[download]\nmode = redirect\n[upload]\n"
			 "direct = true\n", &cfg, err, sizeof err, NULL, 0) == 0,
	       "auth = entra with a secret file loads, with redirect downloads and direct uploads: %s",
	       cfg ? "" : err);
	if (cfg) {
		tap_ok(cfg->storage_auth == STORAGE_AUTH_ENTRA && cfg->storage_key == NULL &&
		       cfg->storage_sas == NULL, "... no key, no SAS");
		tap_ok(cfg->entra_token_cache && strcmp(cfg->entra_token_cache, CONFIG_TOKEN_CACHE_DEFAULT) == 0,
		       "... the token cache defaults to %s", CONFIG_TOKEN_CACHE_DEFAULT);
		config_free(cfg);
		cfg = NULL;
	}
	tap_ok(load_text(ENTRA_HEAD "managed_identity = yes\ntoken_cache = none\n"
			 "imds_endpoint = http://127.0.0.1:9/metadata/identity/oauth2/token\n"
			 "authority = http://[::1]:8/\n", &cfg, err, sizeof err, NULL, 0) == 0,
	       "a system-assigned managed identity needs no tenant or client; loopback endpoints: %s",
	       cfg ? "" : err);
	if (cfg) {
		tap_ok(cfg->entra_token_cache == NULL, "... token_cache = none: memory only");
		config_free(cfg);
		cfg = NULL;
	}
	tap_ok(load_text(BASE, &cfg, err, sizeof err, NULL, 0) == 0 && cfg->storage_auth == STORAGE_AUTH_KEY,
	       "a key means auth = key by default");
	config_free(cfg);
	cfg = NULL;
	tap_ok(load_text(SAS_ONLY, &cfg, err, sizeof err, NULL, 0) == 0 && cfg->storage_auth == STORAGE_AUTH_SAS,
	       "a SAS alone means auth = sas");
	config_free(cfg);
	cfg = NULL;
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int rc = load_text(bad[i].text, &cfg, err, sizeof err, NULL, 0);

		tap_ok(rc == -1 && strstr(err, bad[i].want) != NULL, "entra case %zu refused: '%s' in '%s'", i,
		       bad[i].want, rc == -1 ? err : "(loaded)");
		if (rc == 0) {
			config_free(cfg);
			cfg = NULL;
		}
	}
}


struct bad_case {
	const char *text;
	const char *want;	/* substring of the message */
};

static const struct bad_case bad_cases[] = {
	{ BASE "[limits]\nmax_upload = lots\n", ":10: [limits] max_upload: invalid value" },
	{ BASE "[limits]\nblocks_in_flight = 0\n", "blocks_in_flight: invalid value" },
	{ BASE "[limits]\nidempotency_ttl = 0\n", "idempotency_ttl: invalid value" },
	{ BASE "[limitz]\nmax_upload = 1M\n", ":10: a key in an unknown section; the sections are [database]" },
	{ BASE "[limits]\nmax_uplod = 1M\n", ":10: [limits]: unknown key; the keys of [limits] are max_upload," },
	{ BASE "[database]\nport = 70000\n", "port: invalid value" },
	{ BASE "[auth]\ntoken = nocolon\n", "token: expected OWNER:TOKEN" },
	{ BASE "[auth]\nreads_need_auth = maybe\n", "reads_need_auth: invalid value" },
	{ BASE "[log]\nsink = journal\n", ":10: [log] sink: invalid value" },
	{ BASE "[database]\ntls = yes\n", ":10: [database] tls: invalid value" },
	{ BASE "[database]\ntls = verify\n", "[database] tls and tls_ca apply to host connections, not socket" },
	{ BASE "[auth]\ntoken = " "owner-of-more-than-128-characters-owner-of-more-than-128-characters-"
	  "owner-of-more-than-128-characters-owner-of-more-than-128-characters:0123456789abcdef\n",
	  ":10: [auth] token: the owner before ':' must be 1 to 128 characters" },
	{ BASE "[auth]\ntoken = caf\xe9:0123456789abcdef\n", ":10: [auth] token: the owner before ':'" },
	{ BASE "[auth]\npublic_origin = https://docs.example.com/path\n", "public_origin: invalid value" },
	{ BASE "[auth]\npublic_origin = docs.example.com\n", "public_origin: invalid value" },
	{ BASE "[auth]\ntrusted_proxies = 10.0.0.0/8, proxy.example\n", "trusted_proxies: invalid value" },
	{ BASE "[auth]\ntrusted_proxies = 10.0.0.0/33\n", "trusted_proxies: invalid value" },
	{ BASE "[download]\nmode = teleport\n", "mode: invalid value" },
	{ BASE "[limits]\nrequest_deadline = 600\nsweep_cutoff = 900\n", "at least twice" },
	/* Twice the deadline alone is not enough: the heartbeat, the body's
	 * idle time and the compensation budget count too
	 * (2 x (30 + 300 + 30) + 5 = 725). */
	{ BASE "[limits]\nrequest_deadline = 300\nsweep_cutoff = 724\n",
	  "sweep_cutoff must be at least twice (heartbeat + request_deadline + body_idle_timeout)"
	  " plus 5s of compensation: 725" },
	{ BASE "[limits]\nrequest_deadline = 60\nsweep_cutoff = 200\nbody_idle_timeout = 40\n",
	  "compensation: 265" },
	/* The heartbeat is a term of its own: 2 x (5 + 60 + 30) + 5 = 195. */
	{ BASE "[limits]\nrequest_deadline = 60\nsweep_cutoff = 194\nheartbeat = 5\n",
	  "compensation: 195" },
	{ BASE "[limits]\nheartbeat = 0\n", "[limits] heartbeat: invalid value" },
	{ BASE "[limits]\nbody_idle_timeout = 0\n", "[limits] body_idle_timeout: invalid value" },
	{ BASE "[limits]\nbody_idle_timeout = soon\n", "[limits] body_idle_timeout: invalid value" },
	{ BASE "[limits]\nbody_min_rate = fast\n", "[limits] body_min_rate: invalid value" },
	{ BASE "[limits]\nbody_min_rate = -1\n", "[limits] body_min_rate: invalid value" },
	{ BASE "[limits]\nbody_min_rate_grace = 0\n", "[limits] body_min_rate_grace: invalid value" },
	{ "[database]\nsocket = /s\nuser = u\nname = n\n[storage]\ncontainer = c\n"
	  "connection_string = AccountName=a;BlobEndpoint=http://x\n", "neither AccountKey" },
	{ "[database]\nuser = u\nname = n\n", "needs socket or host" },
	{ BASE "this is not ini\n", "syntax error" },
	{ SAS_ONLY "[download]\nmode = redirect\n", "mode = redirect needs [storage] key" },
	{ SAS_ONLY "[upload]\ndirect = true\n", "direct = true needs [storage] key" },
	{ BASE "[upload]\ndirect = maybe\n", "[upload] direct: invalid value" },
	{ BASE "[upload]\ndirect_sas_lifetime = 0\n", "[upload] direct_sas_lifetime: invalid value" },
	{ BASE "[upload]\ndirect_sas_lifetime = 86401\n", "direct_sas_lifetime = 86401 is over 86400 seconds" },
};

/*
 * Secrets on lines that went wrong: each message must name
 * the file, the line and the key, and hold no byte of the secret.  inih takes
 * the text before a line's first '=' or ':' as a key's name, so an unindented
 * piece of a key or SAS became a "key" named after the secret, and the
 * message used to quote it.
 */
struct secret_case {
	const char *text;
	const char *want;	/* substring of the message */
	const char *secret;	/* must not appear */
};

#define STORAGE_HEAD "[database]\nsocket = /s\nuser = u\nname = n\n[storage]\ncontainer = c\n"
static const struct secret_case secret_cases[] = {
	/* the account key's second half lost its indentation */
	{ STORAGE_HEAD "connection_string = DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Zm9v\n"
	  "QmFyU2VjcmV0S2V5UGFydFR3bw==;\n",
	  ":8: [storage]: unknown key; the keys of [storage] are connection_string, endpoint, account, key,"
	  " sas, container, prefix, ca_file, ca_path, auth, tenant_id, client_id, client_certificate,"
	  " client_secret_file, federated_token_file, managed_identity, authority, imds_endpoint, token_cache"
	  " (if this line continues [storage] connection_string from line 7, indent it)",
	  "QmFyU2VjcmV0S2V5UGFydFR3bw" },
	/* the SAS signature on a line of its own */
	{ STORAGE_HEAD "endpoint = https://acct.blob.core.windows.net\naccount = acct\n"
	  "sas = sv=2025-11-05&ss=b&srt=sco&sp=rwdlac&se=2030-01-01T00:00:00Z&sig=\n"
	  "U2lnbmF0dXJlU2VjcmV0%2B=\n",
	  ":10: [storage]: unknown key; the keys of [storage] are", "U2lnbmF0dXJlU2VjcmV0" },
	/* ... or with no '=' in it at all */
	{ STORAGE_HEAD "endpoint = https://acct.blob.core.windows.net\naccount = acct\n"
	  "sas = sv=2025-11-05&ss=b&srt=sco&sp=rwdlac&se=2030-01-01T00:00:00Z&sig=\n"
	  "U2lnbmF0dXJlU2VjcmV0%2B\n",
	  ":10: syntax error (expected [section] or key = value) (if this line continues [storage] sas"
	  " from line 9, indent it)", "U2lnbmF0dXJlU2VjcmV0" },
	/* a password continued on an indented line used to load, keeping only the piece */
	{ "[database]\nsocket = /s\nuser = u\nname = n\npassword = hunter2-first\n  Half-Two-Secret\n",
	  ":6: [database] password: an indented line; only connection_string and sas go on",
	  "Half-Two-Secret" },
	/* a token's secret after an unindented break */
	{ BASE "[auth]\ntoken = alice:0123456789abcdef\nTokenSecretPiece0123=\n",
	  ":11: [auth]: unknown key; the keys of [auth] are token, reads_need_auth, public_origin,"
	  " trusted_proxies (if this line continues [auth] token from line 10, indent it)",
	  "TokenSecretPiece0123" },
	{ BASE "[auth]\ntoken = alice:0123456789abcdef0123\n  TokenSecretPiece0123\n",
	  ":11: [auth] token: an indented line", "TokenSecretPiece0123" },
	/* a secret-looking key in a section that does not exist */
	{ BASE "[stoarge]\nS3cretSectionKey==\n", ":10: a key in an unknown section", "S3cretSectionKey" },
};

#define DB_HOST_REST "user = u\nname = n\n[storage]\nconnection_string = UseDevelopmentStorage=true\n" \
	"container = c\n"

/* [database] host as a list (a Galera cluster's nodes). */
static void
test_db_hosts(struct bindery_config **cfg, char *err, size_t errlen)
{
	static const char *const bad[] = {
		"", " ", "a,", ",a", "a,,b", "a:", "a:0", "a:65536", "a:3306x", "a b", "::1",
		"[::1", "[]:3306", "[::1]3306", "a:-1", "1,2,3,4,5,6,7,8,9",
	};
	struct config_db_host h[CONFIG_MAX_DB_HOSTS];
	char longname[CONFIG_DB_HOST_MAX + 2];
	size_t n = 99, i;

	tap_ok(config_parse_db_hosts("db.example", 3306, h, CONFIG_MAX_DB_HOSTS, &n) == 0 && n == 1 &&
	       strcmp(h[0].name, "db.example") == 0 && h[0].port == 3306, "one host takes the default port");
	tap_ok(config_parse_db_hosts("127.0.0.1:3306, 127.0.0.1:3307,\t10.0.0.3 ,[::1]:3310, [fe80::1]",
				     4000, h, CONFIG_MAX_DB_HOSTS, &n) == 0 && n == 5 &&
	       strcmp(h[0].name, "127.0.0.1") == 0 && h[0].port == 3306 &&
	       strcmp(h[1].name, "127.0.0.1") == 0 && h[1].port == 3307 &&
	       strcmp(h[2].name, "10.0.0.3") == 0 && h[2].port == 4000 &&
	       strcmp(h[3].name, "::1") == 0 && h[3].port == 3310 &&
	       strcmp(h[4].name, "fe80::1") == 0 && h[4].port == 4000,
	       "a list, in order: ports where given, blanks trimmed, IPv6 in brackets");
	tap_ok(config_parse_db_hosts("a:1,b:65535,c,d,e,f,g,h", 3306, h, CONFIG_MAX_DB_HOSTS, &n) == 0 &&
	       n == CONFIG_MAX_DB_HOSTS && h[0].port == 1 && h[1].port == 65535,
	       "CONFIG_MAX_DB_HOSTS hosts; ports 1 and 65535");
	for (i = 0; i < ARRAY_LEN(bad); i++)
		tap_ok(config_parse_db_hosts(bad[i], 3306, h, CONFIG_MAX_DB_HOSTS, &n) == -1,
		       "host list refused: \"%s\"", bad[i]);
	memset(longname, 'a', sizeof longname - 1);
	longname[sizeof longname - 1] = '\0';
	tap_ok(config_parse_db_hosts(longname, 3306, h, CONFIG_MAX_DB_HOSTS, &n) == -1,
	       "a name over CONFIG_DB_HOST_MAX refused");
	longname[sizeof longname - 2] = '\0';
	tap_ok(config_parse_db_hosts(longname, 3306, h, CONFIG_MAX_DB_HOSTS, &n) == 0 && n == 1,
	       "a name of CONFIG_DB_HOST_MAX accepted");

	tap_ok(load_text("[database]\nhost = 10.0.0.1:3306, 10.0.0.2\nport = 3307\n" DB_HOST_REST,
			 cfg, err, errlen, NULL, 0) == 0 && (*cfg)->ndb_hosts == 2 &&
	       (*cfg)->db_hosts[0].port == 3306 && (*cfg)->db_hosts[1].port == 3307 &&
	       strcmp((*cfg)->db_hosts[1].name, "10.0.0.2") == 0,
	       "host list loads; port applies to the hosts without one (after host in the file)");
	config_free(*cfg);
	*cfg = NULL;
	tap_ok(load_text("[database]\nport = 3310\nhost = db\n" DB_HOST_REST, cfg, err, errlen, NULL, 0) == 0 &&
	       (*cfg)->ndb_hosts == 1 && (*cfg)->db_hosts[0].port == 3310,
	       "one host with port still works");
	config_free(*cfg);
	*cfg = NULL;
	tap_ok(load_text("[database]\nhost = a:3306,,b\n" DB_HOST_REST, cfg, err, errlen, NULL, 0) == -1 &&
	       strstr(err, "[database] host: not a list of HOST[:PORT]") != NULL,
	       "a bad list is a load error naming the key");
	tap_ok(load_text("[database]\nsocket = /s\n" DB_HOST_REST, cfg, err, errlen, NULL, 0) == 0 &&
	       (*cfg)->ndb_hosts == 0, "a socket: no host list");
	config_free(*cfg);
	*cfg = NULL;
}

/* The count of '\n'-separated lines of s ("" has none). */
static size_t
count_lines(const char *s)
{
	size_t n = *s != '\0';

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/*
 * Every problem of a file at once, each on a line of its own with the
 * file's name and its line, in the order of the file; a missing required
 * key names the file and its section.
 */
static void
test_every_problem(void)
{
	struct bindery_config *cfg = NULL;
	char err[CONFIG_ERRORS_MAX], want[1024], small[200];
	int rc;

	/* 1 [database], 2 socket, 3 user, 4 name, 5 prot, 6 [limits],
	 * 7 max_upload, 8 junk, 9 [storage], 10 connection_string, 11 junk */
	rc = load_text("[database]\nsocket = /s\nuser = u\nname = n\nprot = 3306\n[limits]\n"
		       "max_upload = lots\nthis is not ini\n[storage]\n"
		       "connection_string = UseDevelopmentStorage=true\nnor is this\n",
		       &cfg, err, sizeof err, NULL, 0);
	tap_ok(rc == -1 && cfg == NULL, "a file with five mistakes is refused");
	TAP_EQ_INT(count_lines(err), 5, "... with five lines, one a problem");
	snprintf(want, sizeof want, "%s:5: [database]: unknown key", path);
	tap_ok(strncmp(err, want, strlen(want)) == 0, "... the unknown key first, at its line: %s", err);
	snprintf(want, sizeof want, "\n%s:7: [limits] max_upload: invalid value\n", path);
	tap_ok(strstr(err, want) != NULL, "... the bad value at its line");
	snprintf(want, sizeof want, "\n%s:8: syntax error", path);
	tap_ok(strstr(err, want) != NULL, "... a syntax error at its line");
	snprintf(want, sizeof want, "\n%s:11: syntax error", path);
	tap_ok(strstr(err, want) != NULL, "... and the next one too (inih reports only its first)");
	snprintf(want, sizeof want, "\n%s: [storage] container is required", path);
	tap_ok(strstr(err, want) != NULL && strstr(err, want) > strstr(err, ":11: "),
	       "... the missing key last, naming the file and the section");
	tap_ok(err[strlen(err) - 1] != '\n', "... no newline after the last");
	config_free(cfg);
	cfg = NULL;

	/* Each required key, each missing, each said. */
	rc = load_text("[database]\n[storage]\n", &cfg, err, sizeof err, NULL, 0);
	snprintf(want, sizeof want, "%s: [database] name is required\n%s: [database] user is required\n"
		 "%s: [database] needs socket or host\n"
		 "%s: [storage] needs connection_string, or endpoint and account\n"
		 "%s: [storage] needs a key, a sas, or auth = entra\n%s: [storage] container is required",
		 path, path, path, path, path, path);
	tap_ok(rc == -1 && strcmp(err, want) == 0, "every missing key at once: %s", err);

	/* The placeholders of conf/bindery.conf.sample. */
	rc = load_text("[database]\nsocket = @DB_SOCKET@\nuser = bindery\npassword = @DB_PASSWORD@\n"
		       "name = bindery\n[storage]\nendpoint = @STORAGE_ENDPOINT@\naccount = @STORAGE_ACCOUNT@\n"
		       "key = @STORAGE_KEY@\ncontainer = documents\n[auth]\ntoken = demo:@DEMO_TOKEN@\n",
		       &cfg, err, sizeof err, NULL, 0);
	snprintf(want, sizeof want, "%s:2: [database] socket is still the placeholder @DB_SOCKET@\n"
		 "%s:4: [database] password is still the placeholder @DB_PASSWORD@\n"
		 "%s:7: [storage] endpoint is still the placeholder @STORAGE_ENDPOINT@\n"
		 "%s:8: [storage] account is still the placeholder @STORAGE_ACCOUNT@\n"
		 "%s:9: [storage] key is still the placeholder @STORAGE_KEY@\n"
		 "%s:12: [auth] token is still the placeholder @DEMO_TOKEN@", path, path, path, path,
		 path, path);
	tap_ok(rc == -1 && strcmp(err, want) == 0,
	       "every placeholder refused at its line, and nothing else said: %s", err);
	config_free(cfg);
	cfg = NULL;
	rc = load_text(BASE "[database]\npassword = @lower@\n[auth]\ntoken = demo:p@ssword-0123456789@\n",
		       &cfg, err, sizeof err, NULL, 0);
	tap_ok(rc == 0 && strcmp(cfg->db_password, "@lower@") == 0,
	       "a value that only looks like one is a value: %s", err);
	config_free(cfg);
	cfg = NULL;
	rc = load_text(BASE "[database]\npassword = @@\n", &cfg, err, sizeof err, NULL, 0);
	tap_ok(rc == 0, "'@@' is no placeholder: %s", err);
	config_free(cfg);
	cfg = NULL;

	/* A relation between keys, at the line of the key it names. */
	rc = load_text(BASE "[limits]\nsweep_cutoff = 100\nupload_expiry = 50\n", &cfg, err, sizeof err,
		       NULL, 0);
	snprintf(want, sizeof want, "%s:10: [limits] sweep_cutoff must be at least twice", path);
	tap_ok(rc == -1 && strncmp(err, want, strlen(want)) == 0, "a relation names its key's line: %s",
	       err);
	snprintf(want, sizeof want, "\n%s:11: [limits] upload_expiry must be at least sweep_cutoff", path);
	tap_ok(strstr(err, want) != NULL, "... and every broken relation is said");

	/* More than the buffer holds: whole lines, then how many are left out. */
	rc = load_text("[database]\na = 1\nb = 2\nc = 3\nd = 4\ne = 5\nf = 6\n", &cfg, small,
		       sizeof small, NULL, 0);
	tap_ok(rc == -1 && strstr(small, "\n... and 11 more problems not shown") != NULL &&
	       strncmp(small, path, strlen(path)) == 0, "a small buffer: the first problems, then a count: %s",
	       small);
	config_free(cfg);
}

int
main(void)
{
	struct bindery_config *cfg = NULL;
	char err[1024], warn[512];
	size_t i;
	int fd = mkstemp(path);

	if (fd < 0)
		tap_bail("mkstemp");
	close(fd);

	tap_ok(load_text(BASE, &cfg, err, sizeof err, warn, sizeof warn) == 0, "minimal config loads");
	if (cfg) {
		tap_ok(strcmp(cfg->storage_account, "devstoreaccount1") == 0, "dev storage account");
		tap_ok(strcmp(cfg->storage_endpoint, "http://127.0.0.1:10000/devstoreaccount1") == 0,
		       "dev storage endpoint");
		TAP_EQ_INT(cfg->max_upload, 64ULL << 20, "default max_upload");
		TAP_EQ_INT(cfg->request_deadline, 300, "default deadline");
		tap_ok(cfg->sweep_cutoff >= 2 * cfg->request_deadline, "default cutoff >= 2 x deadline");
		tap_ok(cfg->retire_grace >= cfg->sas_lifetime, "grace covers the SAS lifetime");
		tap_ok(cfg->download_mode == DOWNLOAD_PROXY, "default download mode");
		tap_ok(cfg->log_sink == LOG_SINK_STDERR, "default log sink: stderr");
		TAP_EQ_INT(cfg->idempotency_ttl, 86400, "default idempotency_ttl: a day");
		TAP_EQ_INT(cfg->body_idle_timeout, 30, "default body_idle_timeout");
		TAP_EQ_INT(cfg->body_min_rate, 1024, "default body_min_rate");
		TAP_EQ_INT(cfg->body_min_rate_grace, 60, "default body_min_rate_grace");
		TAP_EQ_INT(cfg->heartbeat, 30, "default heartbeat");
		tap_ok(cfg->upload_direct == 0, "direct uploads are off by default");
		tap_ok(cfg->storage_ca_file == NULL && cfg->storage_ca_path == NULL,
		       "no ca_file or ca_path by default: the system's CA store");
		TAP_EQ_INT(cfg->direct_sas_lifetime, 900, "default direct_sas_lifetime");
		TAP_EQ_INT(config_sweep_cutoff_min(cfg), 725, "default minimum cutoff 2 x (30 + 300 + 30) + 5");
		tap_ok(cfg->sweep_cutoff >= config_sweep_cutoff_min(cfg), "the default cutoff meets it");
		config_free(cfg);
		cfg = NULL;
	}

	chmod(path, 0600);
	tap_ok(load_text(BASE "[limits]\nmax_upload = 1G\nblock_size = 8M\nidempotency_ttl = 3600\n"
			 "[auth]\ntoken = alice:0123456789abcdef0123\ntoken = bob:fedcba9876543210fedc\n"
			 "reads_need_auth = yes\n[download]\nmode = redirect\n[log]\nlevel = debug\nsink = syslog\n",
			 &cfg, err, sizeof err, warn, sizeof warn) == 0, "full config loads");
	if (cfg) {
		TAP_EQ_INT(cfg->max_upload, 1ULL << 30, "1G parsed");
		TAP_EQ_INT(cfg->block_size, 8ULL << 20, "8M parsed");
		TAP_EQ_INT(cfg->idempotency_ttl, 3600, "idempotency_ttl parsed");
		TAP_EQ_INT(cfg->ntokens, 2, "two tokens");
		tap_ok(cfg->reads_need_auth == 1, "reads_need_auth yes");
		tap_ok(cfg->download_mode == DOWNLOAD_REDIRECT, "redirect mode");
		tap_ok(cfg->log_sink == LOG_SINK_SYSLOG, "sink = syslog");
		tap_ok(config_token_owner(cfg, "fedcba9876543210fedc", 20) &&
		       strcmp(config_token_owner(cfg, "fedcba9876543210fedc", 20), "bob") == 0,
		       "token maps to its owner");
		tap_ok(config_token_owner(cfg, "fedcba9876543210fedd", 20) == NULL, "wrong token refused");
		tap_ok(config_token_owner(cfg, "fedcba9876543210fed", 19) == NULL, "prefix refused");
		tap_ok(warn[0] == '\0', "no warning for a 0600 file");
		config_free(cfg);
		cfg = NULL;
	}

	tap_ok(load_text(BASE "[storage]\nca_file = /etc/ssl/a.pem\nca_path = /etc/ssl/cas\n", &cfg, err,
			 sizeof err, NULL, 0) == 0 && cfg->storage_ca_file && cfg->storage_ca_path &&
	       strcmp(cfg->storage_ca_file, "/etc/ssl/a.pem") == 0 &&
	       strcmp(cfg->storage_ca_path, "/etc/ssl/cas") == 0, "[storage] ca_file and ca_path are read");
	config_free(cfg);
	cfg = NULL;
	chmod(path, 0644);
	tap_ok(load_text(BASE, &cfg, err, sizeof err, warn, sizeof warn) == 0 &&
	       strstr(warn, "world-readable") != NULL, "world-readable file with a key warns");
	config_free(cfg);
	cfg = NULL;
	tap_ok(load_text(SAS_ONLY, &cfg, err, sizeof err, warn, sizeof warn) == 0 &&
	       strstr(warn, "world-readable") != NULL, "world-readable file with only a SAS warns");
	config_free(cfg);
	cfg = NULL;
	tap_ok(load_text(SAS_ONLY "[download]\nmode = proxy\n", &cfg, err, sizeof err, NULL, 0) == 0,
	       "a SAS-only configuration serves downloads by proxy");
	config_free(cfg);
	cfg = NULL;

	tap_ok(load_text("[database]\nsocket=/s\nuser=u\nname=n\n[storage]\ncontainer=c\n"
			 "connection_string = DefaultEndpointsProtocol=https;AccountName=acct;"
			 "AccountKey=a2V5;EndpointSuffix=core.windows.net\n",
			 &cfg, err, sizeof err, NULL, 0) == 0, "production connection string");
	if (cfg) {
		tap_ok(strcmp(cfg->storage_endpoint, "https://acct.blob.core.windows.net") == 0,
		       "endpoint derived from account and suffix");
		tap_ok(strcmp(cfg->storage_key, "a2V5") == 0, "key taken");
		config_free(cfg);
		cfg = NULL;
	}

	tap_ok(load_text("[database]\nsocket=/s\nuser=u\nname=n\n[storage]\ncontainer=c\n"
			 "connection_string = DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;\n"
			 "  AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;\n"
			 "  BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;\n"
			 "sas = sv=2025-11-05&ss=b&srt=sco&sp=rwdlacupitfx\n  &se=2030-01-01T00:00:00Z&sig=abc%2Bdef\n",
			 &cfg, err, sizeof err, NULL, 0) == 0, "values continued over indented lines: %s", err);
	if (cfg) {
		tap_ok(strcmp(cfg->storage_key, "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==") == 0,
		       "continued connection string joined");
		tap_ok(strcmp(cfg->storage_sas, "sv=2025-11-05&ss=b&srt=sco&sp=rwdlacupitfx&se=2030-01-01T00:00:00Z&sig=abc%2Bdef") == 0,
		       "continued SAS joined");
		config_free(cfg);
		cfg = NULL;
	}
	{
		char text[1024];
		char longv[300];

		memset(longv, 'k', sizeof longv - 1);
		longv[sizeof longv - 1] = '\0';
		snprintf(text, sizeof text, BASE "[storage]\nkey = %s\n", longv);
		tap_ok(load_text(text, &cfg, err, sizeof err, NULL, 0) == -1 &&
		       strstr(err, ":10: line longer than") != NULL, "an overlong line is refused, not cut: %s", err);
		config_free(cfg);
		cfg = NULL;
	}

	tap_ok(load_text("[database]\nsocket=/s\nuser=u\nname=n\n[storage]\ncontainer=c\n"
			 "endpoint = https://acct.blob.core.windows.net//\naccount = acct\nkey = a2V5\n",
			 &cfg, err, sizeof err, NULL, 0) == 0 &&
	       strcmp(cfg->storage_endpoint, "https://acct.blob.core.windows.net") == 0,
	       "an endpoint's trailing slashes are dropped");
	config_free(cfg);
	cfg = NULL;

	tap_ok(load_text(BASE "[limits]\nrequest_deadline = 60\nsweep_cutoff = 195\nbody_idle_timeout = 30\n"
			 "heartbeat = 5\nbody_min_rate = 0\nbody_min_rate_grace = 5\n", &cfg, err, sizeof err,
			 NULL, 0) == 0,
	       "a cutoff of exactly 2 x (5 + 60 + 30) + 5 loads: %s", err);
	if (cfg) {
		TAP_EQ_INT(cfg->body_min_rate, 0, "body_min_rate = 0 turns the minimum off");
		TAP_EQ_INT(cfg->body_min_rate_grace, 5, "body_min_rate_grace parsed");
		config_free(cfg);
		cfg = NULL;
	}
	tap_ok(load_text(BASE "[limits]\nbody_idle_timeout = 3\nbody_min_rate = 4K\n", &cfg, err, sizeof err,
			 NULL, 0) == 0 && cfg->body_idle_timeout == 3 && cfg->body_min_rate == 4096,
	       "body_idle_timeout = 3, body_min_rate = 4K: %s", err);
	config_free(cfg);
	cfg = NULL;

	for (i = 0; i < ARRAY_LEN(bad_cases); i++) {
		int rc = load_text(bad_cases[i].text, &cfg, err, sizeof err, NULL, 0);

		tap_ok(rc == -1 && strstr(err, bad_cases[i].want) != NULL && strstr(err, path) != NULL,
		       "bad case %zu: '%s' in '%s'", i, bad_cases[i].want, err);
		tap_ok(strstr(err, "hunter2") == NULL && strstr(err, "Eby8vdM0") == NULL,
		       "bad case %zu: no secret in the message", i);
		config_free(cfg);
		cfg = NULL;
	}
	for (i = 0; i < ARRAY_LEN(secret_cases); i++) {
		int rc = load_text(secret_cases[i].text, &cfg, err, sizeof err, NULL, 0);

		tap_ok(rc == -1 && strstr(err, secret_cases[i].want) != NULL && strstr(err, path) != NULL,
		       "secret case %zu: '%s' in '%s'", i, secret_cases[i].want, err);
		tap_ok(strstr(err, secret_cases[i].secret) == NULL, "secret case %zu: the secret is not in"
		       " the message", i);
		config_free(cfg);
		cfg = NULL;
	}
	tap_ok(load_text(BASE "[auth]\npublic_origin = HTTPS://Docs.Example.com:443/\n"
			 "trusted_proxies = 10.0.0.0/8 ,192.0.2.7\t::1\n", &cfg, err, sizeof err, NULL, 0) == 0,
	       "public_origin and trusted_proxies load");
	if (cfg) {
		struct origin want;

		tap_ok(origin_parse(SPAN_LIT("https://docs.example.com"), 0, &want) == ORIGIN_PARSE_OK &&
		       cfg->has_public_origin && origin_equal(&cfg->public_origin, &want),
		       "public_origin normalised (case, default port, trailing '/')");
		TAP_EQ_INT(cfg->ntrusted_proxies, 3, "three trusted proxies");
		tap_ok(origin_addr_in(SPAN_LIT("10.1.2.3"), cfg->trusted_proxies, cfg->ntrusted_proxies) &&
		       origin_addr_in(SPAN_LIT("::1"), cfg->trusted_proxies, cfg->ntrusted_proxies) &&
		       !origin_addr_in(SPAN_LIT("192.0.2.8"), cfg->trusted_proxies, cfg->ntrusted_proxies),
		       "... matched as networks");
		config_free(cfg);
		cfg = NULL;
	}
	tap_ok(load_text("[database]\nhost = db.example\nuser = u\nname = n\ntls = verify\n"
			 "tls_ca = /etc/bindery/db-ca.pem\n[storage]\nconnection_string = UseDevelopmentStorage=true\n"
			 "container = c\n", &cfg, err, sizeof err, NULL, 0) == 0 &&
	       cfg->db_tls == CONFIG_DB_TLS_VERIFY && strcmp(cfg->db_tls_ca, "/etc/bindery/db-ca.pem") == 0,
	       "tls = verify with tls_ca over TCP");
	config_free(cfg);
	cfg = NULL;
	test_db_hosts(&cfg, err, sizeof err);
	test_every_problem();
	tap_ok(config_load("/nonexistent/bindery.conf", &cfg, err, sizeof err, NULL, 0) == -1 &&
	       strstr(err, "/nonexistent/bindery.conf: cannot read") != NULL, "unreadable file named");

	{
		uint64_t v = 0;
		tap_ok(config_parse_size("10K", &v) == 0 && v == 10240, "10K");
		tap_ok(config_parse_size("3MiB", &v) == 0 && v == 3ULL << 20, "3MiB");
		tap_ok(config_parse_size("-1", &v) == -1, "negative refused");
		tap_ok(config_parse_size("99999999999T", &v) == -1, "overflow refused");
		tap_ok(config_parse_size("12Q", &v) == -1, "bad suffix refused");
	}
	test_entra();
	test_events();
	test_admission();
	unlink(path);
	return tap_done();
}
