/*
 * blobtool - a tiny CLI over the blob client for shell tests and the
 * benchmark.  Settings come from BINDERY_TEST_BLOB_ENDPOINT, _ACCOUNT, _KEY
 * and BLOBTOOL_CONTAINER; BLOBTOOL_BLOCK_SIZE / BLOBTOOL_IN_FLIGHT tune
 * uploads.  Never prints the key.
 *
 *   blobtool mkcontainer | rmcontainer
 *   blobtool put NAME FILE [key=value ...]   create-only, "-" is stdin
 *   blobtool sas NAME PERMS SECONDS [DISPOSITION [CONTENT-TYPE]]
 *   blobtool account-sas PERMS SECONDS   an account SAS query (blob service, srt=sco)
 *   blobtool stat NAME                      size=, sha256=, ..., etag= on one line
 *   blobtool snapshots NAME                 how many snapshots NAME has
 *   blobtool rm NAME
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <time.h>

#include "storage/blob.h"
#include "storage/blob_internal.h"
#include "storage/sign.h"
#include "tools/blob_helpers.h"
#include "base/buf.h"

static int
fail(const char *what, const struct blob_result *r)
{
	fprintf(stderr, "blobtool: %s: %s (HTTP %ld %s) %s\n", what,
	    blob_status_name(r->status), r->http_status, r->code, r->message);
	return 1;
}

/* Print an account SAS for the blob service (what a SAS-only bindery.conf
 * carries): the query string, without '?'. */
static int
account_sas(const struct blob_settings *s, const char *perms, long long seconds)
{
	struct sas_account_fields f;
	struct buf key = BUF_INIT(128), q = BUF_INIT(1024);
	char expiry[24];
	int rc = 1;

	memset(&f, 0, sizeof f);
	sign_time_iso8601(time(NULL) + (time_t)seconds, expiry);
	f.permissions = perms;
	f.services = "b";
	f.resource_types = "sco";
	f.expiry = expiry;
	if (sign_base64_decode(s->key_b64, strlen(s->key_b64), &key) == SIGN_OK &&
	    sas_sign_account((const unsigned char *)key.ptr, key.len, s->account, &f, &q) == SIGN_OK) {
		printf("%s\n", buf_cstr(&q));
		rc = 0;
	} else {
		fprintf(stderr, "blobtool: cannot sign an account SAS\n");
	}
	buf_free(&key);
	buf_free(&q);
	return rc;
}

int
main(int argc, char **argv)
{
	struct blob_settings s;
	struct blob_client *c = NULL;
	struct blob_result r;
	int rc = 2;

	if (!settings_from_env(&s) || argc < 2) {
		fprintf(stderr, "usage: blobtool mkcontainer|rmcontainer|put|sas|stat|snapshots ... "
		    "(with BINDERY_TEST_BLOB_* and BLOBTOOL_CONTAINER set)\n");
		return 2;
	}
	if (blob_client_new(&s, &c, &r) != BLOB_OK)
		return fail("client", &r);
	if (strcmp(argv[1], "mkcontainer") == 0) {
		rc = blob_container_create(c, &r) == BLOB_OK ? 0 : fail("mkcontainer", &r);
	} else if (strcmp(argv[1], "rmcontainer") == 0) {
		rc = container_delete(c, &r) == BLOB_OK ? 0 : fail("rmcontainer", &r);
	} else if (strcmp(argv[1], "put") == 0 && argc >= 4) {
		struct blob_tag tags[BLOB_MAX_TAGS];
		struct blob_upload_opts o = { NULL, tags, 0, -1, NULL, NULL, NULL, 0 };
		struct blob_upload_info info;
		FILE *f = strcmp(argv[3], "-") == 0 ? stdin : fopen(argv[3], "rb");
		int i;

		for (i = 4; i < argc && o.ntags < BLOB_MAX_TAGS; i++) {
			char *eq = strchr(argv[i], '=');

			if (eq == NULL)
				continue;
			*eq = '\0';
			tags[o.ntags].key = argv[i];
			tags[o.ntags].value = eq + 1;
			o.ntags++;
		}
		if (f == NULL) {
			perror(argv[3]);
			rc = 1;
		} else if (blob_upload_create(c, argv[2], &o, file_read, f, &info,
		    &r) != BLOB_OK)
			rc = fail("put", &r);
		else {
			printf("%llu %s %s\n", (unsigned long long)info.size,
			    info.sha256_hex, info.etag);
			rc = 0;
		}
		if (f != NULL && f != stdin)
			fclose(f);
	} else if (strcmp(argv[1], "sas") == 0 && argc >= 5) {
		struct buf url = BUF_INIT(16384);

		if (blob_sas_url(c, argv[2], argv[3], strtoll(argv[4], NULL, 10),
		    argc >= 6 ? argv[5] : NULL, argc >= 7 ? argv[6] : NULL, &url,
		    &r) != BLOB_OK)
			rc = fail("sas", &r);
		else {
			printf("%s\n", buf_cstr(&url));
			rc = 0;
		}
		buf_free(&url);
	} else if (strcmp(argv[1], "account-sas") == 0 && argc >= 4) {
		rc = account_sas(&s, argv[2], strtoll(argv[3], NULL, 10));
	} else if (strcmp(argv[1], "stat") == 0 && argc >= 3) {
		struct blob_props p;

		if (blob_get_properties(c, argv[2], &p, &r) != BLOB_OK)
			rc = fail("stat", &r);
		else {
			printf("size=%llu sha256=%s meta_size=%lld tags=%u type=%s"
			    " meta=%u md5=%s kind=%s copied=%d extras=%d etag=%s\n",
			    (unsigned long long)p.size, p.meta_sha256,
			    (long long)p.meta_size, p.tag_count, p.content_type,
			    p.meta_count, p.content_md5[0] ? p.content_md5 : "-",
			    p.blob_type, p.copied, p.content_extras, p.etag);
			rc = 0;
		}
	} else if (strcmp(argv[1], "snapshots") == 0 && argc >= 3) {
		unsigned n;

		if (blob_count_snapshots(c, argv[2], &n, &r) != BLOB_OK)
			rc = fail("snapshots", &r);
		else {
			printf("%u\n", n);
			rc = 0;
		}
	} else if (strcmp(argv[1], "rm") == 0 && argc >= 3) {
		rc = blob_delete(c, argv[2], NULL, NULL, &r) == BLOB_OK ? 0 : fail("rm", &r);
	} else
		fprintf(stderr, "blobtool: bad command\n");
	blob_client_free(c);
	return rc;
}
