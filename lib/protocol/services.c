/* services.c - see services.h. */
#include <stdio.h>
#include <stdlib.h>

#include "protocol/services.h"
#include "registry/quota_db.h"

/*
 * db_wait: seconds each wait on the database may take, 0 for db.h's
 * defaults.  Connecting takes the smaller of db_wait and the default
 * connect timeout: a server that is down answers that quickly anyway.
 */
static int
open_services(const struct bindery_config *cfg, unsigned db_wait, struct services **out, char *err,
	      size_t errlen)
{
	struct services *s = calloc(1, sizeof *s);
	struct entra_settings es = {
		.kind = cfg->entra_managed_identity ? ENTRA_MANAGED_IDENTITY
		      : cfg->entra_client_certificate ? ENTRA_CLIENT_CERTIFICATE
		      : cfg->entra_federated_token_file ? ENTRA_FEDERATED_TOKEN : ENTRA_CLIENT_SECRET,
		.authority = cfg->entra_authority,
		.tenant_id = cfg->entra_tenant_id,
		.client_id = cfg->entra_client_id,
		.secret_file = cfg->entra_client_secret_file,
		.certificate = cfg->entra_client_certificate,
		.federated_token_file = cfg->entra_federated_token_file,
		.imds_endpoint = cfg->entra_imds_endpoint,
		.cache_dir = cfg->entra_token_cache,
	};
	int entra = cfg->storage_auth == STORAGE_AUTH_ENTRA;
	struct blob_settings bs = {
		.endpoint = cfg->storage_endpoint,
		.account = cfg->storage_account,
		.key_b64 = cfg->storage_auth == STORAGE_AUTH_KEY ? cfg->storage_key : NULL,
		.sas = cfg->storage_auth == STORAGE_AUTH_SAS ? cfg->storage_sas : NULL,
		.entra = entra ? &es : NULL,
		.container = cfg->storage_container,
		.block_size = (size_t)cfg->block_size,
		.blocks_in_flight = cfg->blocks_in_flight,
		.single_put_max = (size_t)(cfg->single_put_max < cfg->block_size ? cfg->single_put_max
										  : cfg->block_size),
		.connect_timeout_ms = 5000,
		.low_speed_time_s = 30,
		.ca_file = cfg->storage_ca_file,
		.ca_path = cfg->storage_ca_path,
		.max_retries = 3,
	};
	struct db_host hosts[DB_MAX_HOSTS];
	struct db_settings ds = {
		.socket = cfg->db_socket,
		.host = cfg->db_host,
		.port = cfg->db_port,
		.hosts = hosts,
		.nhosts = cfg->ndb_hosts < DB_MAX_HOSTS ? cfg->ndb_hosts : DB_MAX_HOSTS,
		.user = cfg->db_user,
		.password = cfg->db_password,
		.name = cfg->db_name,
		.tls = cfg->db_tls == CONFIG_DB_TLS_VERIFY ? DB_TLS_VERIFY
		     : cfg->db_tls == CONFIG_DB_TLS_ON ? DB_TLS_ON : DB_TLS_OFF,
		.tls_ca = cfg->db_tls_ca,
		.connect_timeout = db_wait < DB_CONNECT_TIMEOUT_DEFAULT ? db_wait : DB_CONNECT_TIMEOUT_DEFAULT,
		.io_timeout = db_wait,
	};
	struct blob_result res;
	size_t i;
	int rc = -1;

	*out = NULL;
	if (s == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	s->cfg = cfg;
	for (i = 0; i < ds.nhosts; i++)
		hosts[i] = (struct db_host){ cfg->db_hosts[i].name, cfg->db_hosts[i].port };
	if (db_new(&ds, &s->db) != DB_OK) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (blob_client_new(&bs, &s->blob, &res) != 0) {
		snprintf(err, errlen, "storage settings: %s", res.message);
		goto out;
	}
	if (events_sender_new(cfg, &s->events, err, errlen) != 0)
		goto out;
	{
		/* One configuration per process, as for [events]. */
		struct quota_limits ql = { cfg->quota_bytes_per_owner, cfg->quota_documents_per_owner,
					   cfg->quota_pending_per_owner };

		quota_db_configure(&ql);
	}
	*out = s;
	s = NULL;
	rc = 0;
out:
	services_free(s);
	return rc;
}

int
services_open(const struct bindery_config *cfg, struct services **out, char *err, size_t errlen)
{
	return open_services(cfg, 0, out, err, errlen);
}

int
services_open_responder(const struct bindery_config *cfg, struct services **out, char *err,
			size_t errlen)
{
	return open_services(cfg, cfg->request_deadline, out, err, errlen);
}

void
services_free(struct services *s)
{
	if (s == NULL)
		return;
	db_free(s->db);
	blob_client_free(s->blob);
	events_sender_free(s->events);
	free(s);
}

int
services_db_ready(struct services *s)
{
	return db_ensure(s->db) == DB_OK ? 0 : -1;
}

void
services_shed_caches(struct services *s)
{
	db_forget_statements(s->db);
}

const char *
services_install_id(struct services *s)
{
	enum db_err e;

	if (s->install_id[0] != '\0')
		return s->install_id;
	if ((e = install_id_get(s->db, s->install_id, sizeof s->install_id)) != DB_OK) {
		s->install_id[0] = '\0';
		return NULL;
	}
	return s->install_id;
}
