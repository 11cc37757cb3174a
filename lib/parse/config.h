/*
 * config.h - bindery.conf, the INI file both programs read.
 *
 * config_load() parses the whole file into a struct bindery_config, applying
 * defaults first, and fails with every problem of the file, one a line, each
 * naming the file, the line and the key (the caller exits 78, EX_CONFIG).
 * Unknown sections and keys are errors, not silently ignored, so a typo
 * cannot turn a safety setting off; so is a value still a sample's
 * "@NAME@" placeholder.  The
 * storage connection string is split into endpoint/account/key here so the rest
 * of bindery never sees it.  Secrets live only in this struct; nothing in this
 * module prints them.
 */
#ifndef BINDERY_CONFIG_H
#define BINDERY_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/compat.h"
#include "base/log.h"
#include "parse/mime_list.h"
#include "parse/origin.h"

#define CONFIG_EX_CONFIG 78	/* sysexits.h EX_CONFIG */
/* Room for config_load's message: every problem of a file, one a line
 * (what does not fit is counted on a last line). */
#define CONFIG_ERRORS_MAX 4096
/*
 * Seconds a failed upload may spend compensating (deleting its own pending
 * blob and rows) after its request deadline; the protocol layer's budget,
 * and a term of the sweep_cutoff relation below.
 */
#define CONFIG_COMPENSATION_BUDGET_S 5
/* The longest [upload] direct_sas_lifetime accepted (sql/013 assumes it). */
#define CONFIG_DIRECT_SAS_LIFETIME_MAX 86400
#define CONFIG_MAX_TOKENS 32
#define CONFIG_MAX_PROXIES 16
/* [database] host: at most this many servers (a Galera cluster's nodes). */
#define CONFIG_MAX_DB_HOSTS 8
#define CONFIG_DB_HOST_MAX 255	/* a DNS name's length */

enum download_mode { DOWNLOAD_PROXY, DOWNLOAD_REDIRECT };
/* [storage] auth: what requests to storage carry.  DEFAULT becomes KEY
 * with a key and SAS without one once the file is read. */
enum storage_auth { STORAGE_AUTH_DEFAULT, STORAGE_AUTH_KEY, STORAGE_AUTH_SAS, STORAGE_AUTH_ENTRA };
/* [storage] token_cache's default: each user's Entra tokens and delegation
 * keys in a directory of its own under it (storage/secret_cache.h). */
#define CONFIG_TOKEN_CACHE_DEFAULT "/var/cache/bindery/entra"
enum config_db_tls { CONFIG_DB_TLS_OFF, CONFIG_DB_TLS_ON, CONFIG_DB_TLS_VERIFY };

struct config_token {
	char *owner;
	char *token;
};

/* [events]: one receiver of webhooks; its keys follow its url line. */
#define CONFIG_MAX_EVENT_ENDPOINTS 8
struct config_event_endpoint {
	char *url;			/* https://..., or http:// on the loopback */
	char *secret_file;		/* "whsec_" + base64 of the HMAC key */
	char *ca_file;			/* CAs for an https url, or NULL: the system's */
	unsigned timeout;		/* seconds an attempt may take (default 2) */
	unsigned max_age;		/* seconds an event is retried before it is dead (default 1 day) */
};

/* [upload] content_type: the type a document is recorded and served with.
 * DEFAULT stays after config_load, so a caller can tell that the file did
 * not choose; config_upload_content_type() says what applies then. */
enum config_content_type {
	CONFIG_CONTENT_TYPE_DEFAULT,
	CONFIG_CONTENT_TYPE_SNIFFED,	/* what libmagic reads in the first bytes */
	CONFIG_CONTENT_TYPE_DECLARED,	/* what the client's request said */
};

/* [scan] clamd: where clamd listens (clamd.conf LocalSocket, or TCPAddr
 * and TCPSocket). */
#define CONFIG_UNIX_PATH_MAX 107	/* sockaddr_un's sun_path less its NUL */
enum config_clamd_kind { CONFIG_CLAMD_NONE, CONFIG_CLAMD_UNIX, CONFIG_CLAMD_TCP };
struct config_clamd {
	enum config_clamd_kind kind;	/* NONE: no [scan] clamd, nothing is scanned */
	char path[CONFIG_UNIX_PATH_MAX + 1];	/* UNIX: an absolute path */
	char host[CONFIG_DB_HOST_MAX + 1];	/* TCP: a name or address (IPv6 without brackets) */
	unsigned port;				/* TCP: 1 to 65535 */
};
/* [scan] on_scanner_error: what an upload gets when clamd cannot answer. */
enum config_scan_on_error {
	CONFIG_SCAN_REFUSE,	/* 503, the intent left for a retry (the default) */
	CONFIG_SCAN_ADMIT,	/* admitted unscanned, with a log line */
};

/* One server of [database] host: a name or address, and its port. */
struct config_db_host {
	char name[CONFIG_DB_HOST_MAX + 1];
	unsigned port;
};

struct bindery_config {
	char *path;			/* the file this came from */

	/* [database] */
	char *db_socket;		/* unix socket, or NULL for host/port */
	char *db_host;			/* as written; db_hosts holds it parsed */
	unsigned db_port;		/* for the hosts that name no port */
	struct config_db_host db_hosts[CONFIG_MAX_DB_HOSTS];
	size_t ndb_hosts;		/* 0 with a socket */
	char *db_user;
	char *db_password;
	char *db_name;
	enum config_db_tls db_tls;	/* over TCP only */
	char *db_tls_ca;		/* CA file for verify, or NULL for the system's */

	/* [storage]; connection_string is parsed into these */
	char *storage_endpoint;		/* no trailing slash */
	char *storage_account;
	char *storage_key;		/* base64 account key, or NULL */
	char *storage_sas;		/* SAS query string without '?', or NULL */
	char *storage_container;
	char *storage_prefix;		/* blob name prefix, "" by default */
	char *storage_ca_file;		/* CAs for an https endpoint, or NULL: the system's */
	char *storage_ca_path;		/* a directory of CAs (c_rehash), or NULL */
	enum storage_auth storage_auth;	/* never DEFAULT after config_load */
	/* auth = entra: the tenant and application, and exactly one credential */
	char *entra_tenant_id;
	char *entra_client_id;		/* a managed identity's may be NULL (system-assigned) */
	char *entra_client_certificate;	/* PEM path: certificate and private key */
	char *entra_client_secret_file;
	char *entra_federated_token_file;
	int entra_managed_identity;
	char *entra_authority;		/* NULL: https://login.microsoftonline.com */
	char *entra_imds_endpoint;	/* NULL: http://169.254.169.254/... */
	char *entra_token_cache;	/* a directory; NULL after "none": memory only */

	/* [limits] */
	uint64_t max_upload;		/* bytes of a document */
	uint64_t block_size;
	unsigned blocks_in_flight;
	uint64_t single_put_max;	/* one Put Blob up to this size */
	unsigned request_deadline;	/* seconds each wait on storage or the database may take */
	unsigned sweep_cutoff;		/* seconds of a lease; >= config_sweep_cutoff_min() */
	unsigned heartbeat;		/* seconds of body progress between lease renewals */
	unsigned upload_expiry;		/* seconds a resumable upload lives without progress */
	unsigned retire_grace;		/* seconds an old blob outlives its document */
	unsigned idempotency_ttl;	/* seconds from its first request a finished
					 * Idempotency-Key answers retries */
	unsigned body_idle_timeout;	/* seconds a client may send no body byte (408) */
	uint64_t body_min_rate;		/* bytes/s a body must average; 0: no minimum */
	unsigned body_min_rate_grace;	/* seconds before body_min_rate applies */

	/* [auth] */
	struct config_token tokens[CONFIG_MAX_TOKENS];
	size_t ntokens;
	int reads_need_auth;
	/* The CSRF check for REMOTE_USER callers (origin.h): the origin clients
	 * address when it is not the request's own scheme and Host (behind a
	 * load balancer), and the peers whose X-Forwarded-Host/-Proto count. */
	struct origin public_origin;
	int has_public_origin;
	struct origin_net trusted_proxies[CONFIG_MAX_PROXIES];
	size_t ntrusted_proxies;

	/* [upload] */
	int upload_direct;		/* browsers may upload straight to storage */
	unsigned direct_sas_lifetime;	/* seconds the create-only SAS of a direct upload lives */
	struct mime_list upload_allowed_types;	/* by content; n == 0: no check */
	enum config_content_type upload_content_type;	/* DEFAULT unless the file says */

	/* [quota]: per owner; 0 is no limit (the default) */
	uint64_t quota_bytes_per_owner;		/* >= max_upload when set */
	unsigned quota_documents_per_owner;
	unsigned quota_pending_per_owner;

	/* [scan] */
	struct config_clamd scan_clamd;
	unsigned scan_timeout;		/* seconds a wait on clamd may take; <= request_deadline */
	enum config_scan_on_error scan_on_error;	/* REFUSE unless the file says */

	/* [events] */
	struct config_event_endpoint events[CONFIG_MAX_EVENT_ENDPOINTS];
	size_t nevents;
	unsigned events_retention;	/* seconds delivered events are kept (default 7 days) */
	unsigned events_backoff_max;	/* the retry backoff's cap, seconds (default 1 h) */

	/* [download] */
	enum download_mode download_mode;
	int serve_active_types;		/* serve script/HTML/XML types as stored */
	unsigned sas_lifetime;		/* seconds */

	/* [sweep] */
	unsigned sweep_batch;
	unsigned sweep_parallel;
	unsigned sweep_lease;		/* seconds a claim is held */
	unsigned sweep_late_after;	/* seconds without an ok sweep before it counts as late */
	unsigned sweep_history_days;	/* days of sweep_runs kept */

	/* [metrics] */
	int metrics_enabled;		/* GET /metrics answers (else 404) */
	char *metrics_owner;		/* only this caller may read it; NULL: any writer */
	char *metrics_counters_file;	/* the counters every process shares (lib/base/counters.h);
					 * an absolute path, CONFIG_COUNTERS_FILE_DEFAULT unless set */

	/* [log] */
	enum log_level log_level;
	enum log_sink log_sink;		/* the responder's; the CLI chooses its own */
};

/*
 * The file read when neither -c nor $BINDERY_CONFIG names one.  The build
 * passes configure's --sysconfdir as SYSCONFDIR; "/etc" only serves builds
 * without configure (tests/fuzz/run.sh).
 */
#ifndef SYSCONFDIR
#define SYSCONFDIR "/etc"
#endif
#define CONFIG_DEFAULT_PATH SYSCONFDIR "/bindery/bindery.conf"
/* Where the counters live unless [metrics] counters_file says: a directory
 * the web server's user owns, cleared at boot (the counters start over). */
#define CONFIG_COUNTERS_FILE_DEFAULT "/run/bindery/counters"

/*
 * Load path (NULL: $BINDERY_CONFIG, then CONFIG_DEFAULT_PATH).
 * On success *out owns a new config (free with config_free) and 0 is returned.
 * On failure -1 is returned and errbuf holds every problem found, one a
 * line, in the order of the file: "FILE:LINE: [section] key: problem" for
 * what a line holds (an unknown key, a bad value, a placeholder, a syntax
 * error), "FILE: [section] ..." for a required key the file lacks; a
 * relation between keys ("sweep_cutoff must be at least ...") is checked
 * once every line reads well, at the line of the key it names.
 * CONFIG_ERRORS_MAX bytes hold them all but for pathological files.
 * warnbuf (may be NULL) receives a warning that is not fatal, e.g. a
 * world-readable file that holds a key; empty when there is none.
 */
BINDERY_NODISCARD int config_load(const char *path, struct bindery_config **out,
				  char *errbuf, size_t errlen, char *warnbuf, size_t warnlen);
/*
 * The same from an open stream (a file, or fmemopen(3) for tests and the
 * fuzz harness); name stands for the file in messages and cfg->path.  fp is
 * read to its end, not closed.  The world-readable warning needs fp to be a
 * real file.
 */
BINDERY_NODISCARD int config_load_stream(FILE *fp, const char *name, struct bindery_config **out,
					 char *errbuf, size_t errlen, char *warnbuf, size_t warnlen);
void config_free(struct bindery_config *cfg);

/* Log a config_load message with log_error, a log line per problem, each
 * after prefix ("" for none). */
void config_log_errors(const char *prefix, const char *errors);

/*
 * The shortest sweep_cutoff that keeps the sweeper clear of a live upload
 * (doc/design.md "Leases"): 2 x (heartbeat +
 * request_deadline + body_idle_timeout) + CONFIG_COMPENSATION_BUDGET_S.  A
 * live upload renews its lease (now + sweep_cutoff) after at most heartbeat
 * seconds of progress, may then wait request_deadline on storage or the
 * database and body_idle_timeout on its client before it notices it has
 * to give up, then compensates; doubling leaves a margin for clocks and a
 * slow first step.
 */
uint64_t config_sweep_cutoff_min(const struct bindery_config *cfg);

/*
 * Parse [database] host: "HOST[:PORT], HOST[:PORT], ..." (an IPv6 address
 * in brackets: "[::1]:3306"); a HOST without a port gets default_port.
 * Commas separate, blanks around them are ignored; an empty item, a bad
 * port, a name over CONFIG_DB_HOST_MAX or more than cap servers is an
 * error.  0 on success (*n servers in out[]), -1 otherwise.  Pure: no
 * lookups.
 */
BINDERY_NODISCARD int config_parse_db_hosts(const char *list, unsigned default_port,
					    struct config_db_host *out, size_t cap, size_t *n);

/*
 * [upload] content_type as it applies: the file's choice, else SNIFFED when
 * allowed_types lists a type and DECLARED when it does not (so a file that
 * sets neither records what clients declare, as bindery always did).
 */
enum config_content_type config_upload_content_type(const struct bindery_config *cfg);

/*
 * Whether uploads are sniffed at all: allowed_types lists a type, or the
 * type recorded is the sniffed one.  When not, nothing may load libmagic
 * (protocol/sniff.h), so an installation that asks for none of this pays
 * nothing for it.
 */
int config_upload_sniffs(const struct bindery_config *cfg);

/* Parse a size with an optional K/M/G/T suffix (powers of 1024). 0 on success. */
BINDERY_NODISCARD int config_parse_size(const char *s, uint64_t *out);

/* The owner a bearer token belongs to (constant-time compare), or NULL. */
const char *config_token_owner(const struct bindery_config *cfg, const char *token, size_t len);

#endif
