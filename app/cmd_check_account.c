/*
 * cmd_check_account.c - `bindery check-account`: probe the storage account
 * for what the protocol relies on (soft delete, versioning, tag permissions)
 * with throw-away blobs under the configured prefix.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/state.h"
#include "cli.h"
#include "protocol/protocol.h"
#include "base/rand.h"

static int
probe_name(const struct bindery_config *cfg, const char *what, char *out, size_t outlen)
{
	char hex[17];

	if (rand_hex(hex, sizeof hex, 8) != 0)
		return -1;
	return (size_t)snprintf(out, outlen, "%sbindery-check-account-%s-%s", cfg->storage_prefix, what,
				hex) < outlen ? 0 : -1;
}

static long
probe_read(void *ctx, char *buf, size_t len)
{
	int *done = ctx;

	if (*done || len < 5)
		return 0;
	memcpy(buf, "probe", 5);
	*done = 1;
	return 5;
}

static void
say_result(const char *what, const struct blob_result *r)
{
	printf("  %s: %s (HTTP %ld%s%s)%s%s\n", what, blob_status_name(r->status), r->http_status,
	       r->code[0] ? " " : "", r->code, r->message[0] ? ": " : "", r->message);
}

/*
 * Tags: write one on a probe blob of our own (create-only, tagged pending,
 * so the lifecycle backstop and audit know what it is), read it back,
 * change it under a tag condition, and delete it guarded by that tag.
 * Never touches a blob a document uses.
 */
static int
check_tags(struct services *s, int *problems)
{
	const struct blob_tag pending[] = { { TAG_STATE_KEY, tag_state_name(TAG_STATE_PENDING) } };
	const struct blob_tag retired[] = { { TAG_STATE_KEY, tag_state_name(TAG_STATE_RETIRED) } };
	struct blob_upload_opts o = { "text/plain", pending, 1, 5, NULL, NULL, NULL, 0 };
	struct blob_upload_info info;
	struct blob_tag_set tags;
	struct blob_result r;
	char name[DOC_BLOB_NAME_MAX];
	int done = 0, wrote = 0;

	if (probe_name(s->cfg, "tags", name, sizeof name) != 0)
		return EXIT_SOFTWARE;
	if (blob_upload_create(s->blob, name, &o, probe_read, &done, &info, &r) != 0) {
		printf("tags: cannot create a probe blob\n");
		say_result("Put Blob with x-ms-tags", &r);
		(*problems)++;
		/* Refused credentials or no service: nothing further can work. */
		if (r.status == BLOB_AUTH_FAILED || r.status == BLOB_TRANSIENT)
			return cli_storage_failed("bindery check-account", "Put Blob", &r, EXIT_UNAVAILABLE);
		return 0;
	}
	if (blob_get_tags(s->blob, name, &tags, &r) == 0 && tags.n == 1 &&
	    tag_state_from_name(tags.value[0]) == TAG_STATE_PENDING)
		printf("tags: read   ok (Get Blob Tags)\n");
	else {
		printf("tags: read   FAILED\n");
		say_result("Get Blob Tags", &r);
		(*problems)++;
	}
	if (blob_set_tags(s->blob, name, retired, 1, tag_state_guard(TAG_STATE_PENDING), &r) == 0) {
		printf("tags: write  ok (Set Blob Tags with x-ms-if-tags)\n");
		wrote = 1;
	} else {
		printf("tags: write  FAILED: the credential needs the t permission\n");
		say_result("Set Blob Tags", &r);
		(*problems)++;
	}
	if (blob_delete(s->blob, name, wrote ? tag_state_guard(TAG_STATE_RETIRED) : tag_state_guard(TAG_STATE_PENDING), NULL, &r) == 0)
		printf("tags: guard  ok (Delete Blob with x-ms-if-tags)\n");
	else {
		printf("tags: guard  FAILED; probe blob %s left behind\n", name);
		say_result("Delete Blob", &r);
		(*problems)++;
	}
	return 0;
}

/* "2026-12-06T10:00:00Z (in 59 min)" */
static void
say_expiry(const char *what, int64_t t)
{
	char when[32];
	time_t tt = (time_t)t;
	struct tm tm;

	if (gmtime_r(&tt, &tm) == NULL || strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(when, sizeof when, "?");
	printf("  %s: expires %s (in %lld min)\n", what, when, (long long)(t - time(NULL)) / 60);
}

/*
 * How requests authenticate.  With Entra: a token and a user delegation
 * key that outlives the longest SAS bindery signs, fetched now, so a
 * credential the authority refuses, or storage's refusal to lend a key,
 * is found here and not by the first download link.
 */
static int
check_auth(struct cli *cli)
{
	const struct bindery_config *cfg = cli->cfg;
	int64_t longest = cfg->sas_lifetime > cfg->direct_sas_lifetime ? cfg->sas_lifetime
									: cfg->direct_sas_lifetime;
	struct blob_auth_info ai;
	struct blob_result r;

	blob_auth_info(cli->svc->blob, &ai);
	if (ai.mode != BLOB_AUTH_ENTRA) {
		printf("auth: %s (%s)\n", blob_auth_mode_name(ai.mode),
		       ai.mode == BLOB_AUTH_KEY ? "Shared Key: the account key is on this host"
						: "a SAS from the configuration: cannot sign download or upload links");
		return 0;
	}
	printf("auth: entra (%s, tenant %s, client %s)\n", ai.credential,
	       cfg->entra_tenant_id ? cfg->entra_tenant_id : "of the machine",
	       cfg->entra_client_id ? cfg->entra_client_id : "system-assigned");
	if (blob_entra_ready(cli->svc->blob, longest, &r) != 0) {
		blob_auth_info(cli->svc->blob, &ai);
		if (ai.token_expires == 0) {
			printf("  token: FAILED\n");
			return cli_storage_failed("bindery check-account", "Entra ID token", &r, EXIT_UNAVAILABLE);
		}
		say_expiry("token", ai.token_expires);
		printf("  delegation key: FAILED (Get User Delegation Key; the identity needs\n"
		       "    Microsoft.Storage/storageAccounts/blobServices/generateUserDelegationKey/action,\n"
		       "    which Storage Blob Data Owner, Contributor and Delegator grant)\n");
		return cli_storage_failed("bindery check-account", "Get User Delegation Key", &r,
					  EXIT_UNAVAILABLE);
	}
	blob_auth_info(cli->svc->blob, &ai);
	say_expiry("token", ai.token_expires);
	say_expiry("delegation key", ai.delegation_key_expires);
	printf("  token cache: %s\n", ai.token_cache ? ai.token_cache : "none (this process's memory)");
	return 0;
}

int
cmd_check_account(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const char synopsis[] = "usage: bindery check-account";
	struct blob_service_props sp;
	struct blob_result r;
	char name[DOC_BLOB_NAME_MAX];
	int c, rc, problems = 0;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'h') {
			printf("%s\n\n"
			       "Reports blob soft delete and its retention, blob versioning where the\n"
			       "data plane can tell, whether the credential can read and write blob\n"
			       "index tags, and whether Undelete Blob is supported.  Exit 0 when all is\n"
			       "as bindery wants it, 1 with warnings, 69 storage does not answer, 77 it\n"
			       "refuses the credential.\n", synopsis);
			return 0;
		}
		return cli_usage_error(synopsis, NULL);
	}
	if (optind != argc)
		return cli_usage_error(synopsis, "bindery check-account: takes no arguments");
	if ((rc = cli_services(cli)) != 0)
		return rc;
	printf("account: %s, container %s, prefix '%s'\n", cli->cfg->storage_account,
	       cli->cfg->storage_container, cli->cfg->storage_prefix);
	if ((rc = check_auth(cli)) != 0)
		return rc;
	if (blob_service_properties_get(cli->svc->blob, &sp, &r) != 0) {
		printf("soft delete: unknown: cannot read the service properties\n");
		say_result("Get Blob Service Properties", &r);
		if (r.status == BLOB_AUTH_FAILED && cli->cfg->storage_auth == STORAGE_AUTH_ENTRA)
			printf("  (refused: with Entra ID, reading service properties may need a role\n"
			       "  beyond the data roles; the rest of bindery does not need it)\n");
		else if (r.status == BLOB_AUTH_FAILED)
			printf("  (a SAS needs an account SAS with ss=b, srt=s and r to read these)\n");
		if (r.status == BLOB_TRANSIENT && r.http_status == 0)
			return cli_storage_failed("bindery check-account", "Get Blob Service Properties", &r,
						  EXIT_UNAVAILABLE);
		problems++;
	} else if (sp.delete_retention_enabled) {
		printf("soft delete: on, %d day(s) retention\n", sp.delete_retention_days);
	} else {
		printf("soft delete: OFF -- warning: a deleted blob cannot be recovered.  Turn on blob\n"
		       "  soft delete (e.g. 7 days) so a mistaken delete can be undone.\n");
		problems++;
	}
	if (sp.versioning_known)
		printf("versioning: %s%s\n", sp.versioning_enabled ? "on" : "off",
		       sp.versioning_enabled ? " (previous versions are kept and billed after a delete)" : "");
	else
		printf("versioning: not knowable from the data plane; check with\n"
		       "  az storage account blob-service-properties show --query isVersioningEnabled\n"
		       "  (with versioning on, a delete keeps a billed previous version)\n");
	if ((rc = check_tags(cli->svc, &problems)) != 0)
		return rc;
	/* A name that never existed: Azure answers 404, an endpoint without
	 * Undelete Blob (Azurite) answers 501. */
	if (probe_name(cli->cfg, "undelete", name, sizeof name) != 0)
		return EXIT_SOFTWARE;
	if (blob_undelete(cli->svc->blob, name, &r) != 0 && r.status == BLOB_NOT_SUPPORTED) {
		printf("undelete: NOT SUPPORTED by this endpoint (HTTP %ld).  This is what Azurite does:\n"
		       "  it stores the soft-delete setting, but deletes are permanent and Undelete\n"
		       "  Blob answers 501.  Real Azure supports it.\n", r.http_status);
		problems++;
	} else if (r.status == BLOB_OK || r.status == BLOB_NOT_FOUND) {
		printf("undelete: supported (Undelete Blob answered HTTP %ld)\n", r.http_status);
	} else {
		say_result("undelete: Undelete Blob", &r);
		problems++;
	}
	return problems ? EXIT_PROBLEMS : 0;
}
