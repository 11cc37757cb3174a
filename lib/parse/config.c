/* config.c - see config.h.  Parsing is inih's; this file only knows the keys. */
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <ini.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "parse/config.h"
#include "parse/http_parse.h"

/* Azurite's published development account (not a secret). */
#define DEVSTORE_ACCOUNT "devstoreaccount1"
#define DEVSTORE_KEY "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
#define DEVSTORE_ENDPOINT "http://127.0.0.1:10000/devstoreaccount1"

enum key_type {
	KEY_STRING,
	KEY_PORT,
	KEY_COUNT,	/* unsigned, >= 1 */
	KEY_COUNT_OR_ZERO,	/* unsigned, where 0 turns the limit off */
	KEY_SECONDS,	/* unsigned, >= 0 */
	KEY_SIZE,
	KEY_SIZE_OR_ZERO,	/* a size where 0 turns the limit off */
	KEY_BOOL,
	KEY_DOWNLOAD_MODE,
	KEY_STORAGE_AUTH,	/* key, sas, entra */
	KEY_EVENT_URL,		/* starts a receiver; the keys below apply to the last */
	KEY_EVENT_SECRET,
	KEY_EVENT_CA,
	KEY_EVENT_TIMEOUT,
	KEY_EVENT_MAX_AGE,
	KEY_LOG_LEVEL,
	KEY_LOG_SINK,
	KEY_CONNECTION_STRING,	/* joined across lines, parsed at the end */
	KEY_SAS,		/* joined across lines */
	KEY_TOKEN,
	KEY_DB_TLS,		/* off, on, verify */
	KEY_ORIGIN,		/* scheme://host[:port] */
	KEY_PROXIES,		/* addresses and networks, space or comma separated */
	KEY_MIME_LIST,		/* media type patterns (mime_list.h) */
	KEY_CONTENT_TYPE,	/* sniffed, declared */
	KEY_CLAMD,		/* unix:PATH or HOST:PORT */
	KEY_SCAN_ON_ERROR,	/* refuse, admit */
};

struct key_def {
	const char *section;
	const char *name;
	enum key_type type;
	size_t offset;
};

#define K(sec, name, type, field) { sec, name, type, offsetof(struct bindery_config, field) }
static const struct key_def keys[] = {
	K("database", "socket", KEY_STRING, db_socket),
	K("database", "host", KEY_STRING, db_host),
	K("database", "port", KEY_PORT, db_port),
	K("database", "user", KEY_STRING, db_user),
	K("database", "password", KEY_STRING, db_password),
	K("database", "name", KEY_STRING, db_name),
	K("database", "tls", KEY_DB_TLS, db_tls),
	K("database", "tls_ca", KEY_STRING, db_tls_ca),
	K("storage", "connection_string", KEY_CONNECTION_STRING, storage_endpoint),
	K("storage", "endpoint", KEY_STRING, storage_endpoint),
	K("storage", "account", KEY_STRING, storage_account),
	K("storage", "key", KEY_STRING, storage_key),
	K("storage", "sas", KEY_SAS, storage_sas),
	K("storage", "container", KEY_STRING, storage_container),
	K("storage", "prefix", KEY_STRING, storage_prefix),
	K("storage", "ca_file", KEY_STRING, storage_ca_file),
	K("storage", "ca_path", KEY_STRING, storage_ca_path),
	K("storage", "auth", KEY_STORAGE_AUTH, storage_auth),
	K("storage", "tenant_id", KEY_STRING, entra_tenant_id),
	K("storage", "client_id", KEY_STRING, entra_client_id),
	K("storage", "client_certificate", KEY_STRING, entra_client_certificate),
	K("storage", "client_secret_file", KEY_STRING, entra_client_secret_file),
	K("storage", "federated_token_file", KEY_STRING, entra_federated_token_file),
	K("storage", "managed_identity", KEY_BOOL, entra_managed_identity),
	K("storage", "authority", KEY_STRING, entra_authority),
	K("storage", "imds_endpoint", KEY_STRING, entra_imds_endpoint),
	K("storage", "token_cache", KEY_STRING, entra_token_cache),
	K("limits", "max_upload", KEY_SIZE, max_upload),
	K("limits", "block_size", KEY_SIZE, block_size),
	K("limits", "blocks_in_flight", KEY_COUNT, blocks_in_flight),
	K("limits", "single_put_max", KEY_SIZE, single_put_max),
	K("limits", "request_deadline", KEY_COUNT, request_deadline),
	K("limits", "sweep_cutoff", KEY_COUNT, sweep_cutoff),
	K("limits", "heartbeat", KEY_COUNT, heartbeat),
	K("limits", "upload_expiry", KEY_COUNT, upload_expiry),
	K("limits", "retire_grace", KEY_SECONDS, retire_grace),
	K("limits", "idempotency_ttl", KEY_COUNT, idempotency_ttl),
	K("limits", "body_idle_timeout", KEY_COUNT, body_idle_timeout),
	K("limits", "body_min_rate", KEY_SIZE_OR_ZERO, body_min_rate),
	K("limits", "body_min_rate_grace", KEY_COUNT, body_min_rate_grace),
	K("auth", "token", KEY_TOKEN, ntokens),
	K("auth", "reads_need_auth", KEY_BOOL, reads_need_auth),
	K("auth", "public_origin", KEY_ORIGIN, public_origin),
	K("auth", "trusted_proxies", KEY_PROXIES, trusted_proxies),
	K("upload", "direct", KEY_BOOL, upload_direct),
	K("upload", "direct_sas_lifetime", KEY_COUNT, direct_sas_lifetime),
	K("upload", "allowed_types", KEY_MIME_LIST, upload_allowed_types),
	K("upload", "content_type", KEY_CONTENT_TYPE, upload_content_type),
	K("quota", "bytes_per_owner", KEY_SIZE_OR_ZERO, quota_bytes_per_owner),
	K("quota", "documents_per_owner", KEY_COUNT_OR_ZERO, quota_documents_per_owner),
	K("quota", "pending_per_owner", KEY_COUNT_OR_ZERO, quota_pending_per_owner),
	K("scan", "clamd", KEY_CLAMD, scan_clamd),
	K("scan", "timeout", KEY_COUNT, scan_timeout),
	K("scan", "on_scanner_error", KEY_SCAN_ON_ERROR, scan_on_error),
	K("events", "retention", KEY_COUNT, events_retention),
	K("events", "backoff_max", KEY_COUNT, events_backoff_max),
	K("events", "url", KEY_EVENT_URL, nevents),
	K("events", "secret_file", KEY_EVENT_SECRET, nevents),
	K("events", "ca_file", KEY_EVENT_CA, nevents),
	K("events", "timeout", KEY_EVENT_TIMEOUT, nevents),
	K("events", "max_age", KEY_EVENT_MAX_AGE, nevents),
	K("download", "mode", KEY_DOWNLOAD_MODE, download_mode),
	K("download", "sas_lifetime", KEY_COUNT, sas_lifetime),
	K("download", "serve_active_types", KEY_BOOL, serve_active_types),
	K("sweep", "batch", KEY_COUNT, sweep_batch),
	K("sweep", "parallel", KEY_COUNT, sweep_parallel),
	K("sweep", "lease", KEY_COUNT, sweep_lease),
	K("sweep", "late_after", KEY_COUNT, sweep_late_after),
	K("sweep", "history_days", KEY_COUNT, sweep_history_days),
	K("metrics", "enabled", KEY_BOOL, metrics_enabled),
	K("metrics", "owner", KEY_STRING, metrics_owner),
	K("metrics", "counters_file", KEY_STRING, metrics_counters_file),
	K("log", "level", KEY_LOG_LEVEL, log_level),
	K("log", "sink", KEY_LOG_SINK, log_sink),
};
#undef K

struct load_state {
	struct bindery_config *cfg;
	const char *name;	/* the file, as messages name it */
	char *err;		/* a helper's detail on the key it refused */
	size_t errlen;
	/* Every problem goes to the caller's errbuf, one "FILE:LINE: ..." a
	 * line, so a file with three mistakes takes one round, not three. */
	char *out;
	size_t outlen, used;
	unsigned nerrors;	/* problems found */
	unsigned unshown;	/* of those, not in out for want of room */
	int first_error_line;	/* 0: none with a line yet */
	int handled_line;	/* the last line inih handed to on_key */
	int key_line[ARRAY_LEN(keys)];	/* where each key last appeared; 0: never */
	unsigned char key_bad[ARRAY_LEN(keys)];	/* it appeared with a refused value */
	struct buf connection_string;	/* joined across continuation lines */
	struct buf sas;
	const int *lineno;		/* the reader's current line */
	const int *indented;		/* the reader's current line starts with blanks */
	int cs_line;			/* where connection_string started */
	const struct key_def *last_def;	/* the key on the last line that held one */
	int last_line;
};

/* Room kept at the end of out for the line that counts what did not fit. */
#define ERRORS_TAIL 64

static void add_error(struct load_state *st, int line, const char *fmt, ...) BINDERY_PRINTF(3, 4);

/*
 * One problem, at line (0: of the file as a whole, such as a required key
 * missing).  The first is always shown, cut if it must be; later ones only
 * whole, leaving ERRORS_TAIL for "N more problems".
 */
static void
add_error(struct load_state *st, int line, const char *fmt, ...)
{
	char msg[768];
	size_t room;
	va_list ap;
	int n;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	st->nerrors++;
	if (line > 0 && (st->first_error_line == 0 || line < st->first_error_line))
		st->first_error_line = line;
	room = st->outlen - st->used;
	if (st->outlen > 2 * ERRORS_TAIL)
		room = room > ERRORS_TAIL ? room - ERRORS_TAIL : 0;
	if (room < 2) {
		st->unshown++;
		return;
	}
	if (line > 0)
		n = snprintf(st->out + st->used, room, "%s:%d: %s\n", st->name, line, msg);
	else
		n = snprintf(st->out + st->used, room, "%s: %s\n", st->name, msg);
	if (n < 0 || (size_t)n >= room) {
		if (st->nerrors > 1) {
			st->out[st->used] = '\0';
			st->unshown++;
			return;
		}
		n = (int)room - 1;	/* cut, but still a line of its own */
		st->out[st->used + (size_t)n - 1] = '\n';
	}
	st->used += (size_t)n;
}

/* The index in keys[] of section/name. */
static size_t
key_index(const char *section, const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_LEN(keys); i++)
		if (strcmp(keys[i].section, section) == 0 && strcmp(keys[i].name, name) == 0)
			return i;
	assert(!"a key the table does not have");
	return 0;
}

/* Where section/name last appeared, 0 when the file does not set it. */
static int
key_line_of(const struct load_state *st, const char *section, const char *name)
{
	return st->key_line[key_index(section, name)];
}

/* The key appeared with a value refused (its own message says so). */
static int
key_was_bad(const struct load_state *st, const char *section, const char *name)
{
	return st->key_bad[key_index(section, name)];
}

/*
 * inih as Debian builds it reads lines of at most 199 characters and would
 * silently cut a longer one -- a truncated account key or SAS.  So we feed
 * it lines ourselves and refuse an overlong one by line number.  Long values
 * (connection strings, SAS tokens) are split over indented continuation
 * lines, which inih hands us one by one and we join.
 */
struct line_reader {
	FILE *fp;
	char *line;
	size_t cap;
	int lineno;
	int overlong;	/* this line was too long (already reported) */
	int indented;	/* this line starts with a space or tab: inih continues the last key */
	struct load_state *st;
};

static void continuation_hint(const struct load_state *st, int line, char *out, size_t outlen);

/*
 * inih reports only the first line it cannot parse, so each line is judged
 * once inih is done with it (when the next one is asked for): text that is
 * no comment, no [section] line and no key on_key saw is a syntax error.
 * These are inih's rules (ini.c, release 55): ';' and '#' start a comment
 * line, a section's ']' must come before an inline " ;" comment.
 */
static void
check_line_parsed(struct line_reader *lr)
{
	const char *p = lr->line, *q;
	char hint[160];

	if (lr->lineno == 0 || lr->overlong || lr->st->handled_line == lr->lineno)
		return;
	if (lr->lineno == 1 && strncmp(p, "\xEF\xBB\xBF", 3) == 0)
		p += 3;
	while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n' || *p == '\v' || *p == '\f')
		p++;
	if (*p == '\0' || *p == ';' || *p == '#')
		return;
	if (*p == '[')
		for (q = p + 1; *q; q++) {
			if (*q == ']')
				return;
			if (*q == ';' && (q[-1] == ' ' || q[-1] == '\t'))
				break;
		}
	continuation_hint(lr->st, lr->lineno, hint, sizeof hint);
	add_error(lr->st, lr->lineno, "syntax error (expected [section] or key = value)%s", hint);
}

static char *
read_line(char *str, int num, void *stream)
{
	struct line_reader *lr = stream;
	ssize_t n;

	check_line_parsed(lr);
	n = getline(&lr->line, &lr->cap, lr->fp);
	if (n < 0)
		return NULL;
	lr->lineno++;
	lr->overlong = 0;
	lr->indented = n > 0 && (lr->line[0] == ' ' || lr->line[0] == '\t');
	while (n > 0 && (lr->line[n - 1] == '\n' || lr->line[n - 1] == '\r'))
		n--;
	if (n >= num - 1) {
		lr->overlong = 1;
		add_error(lr->st, lr->lineno, "line longer than %d characters; split a long value over"
			  " indented continuation lines", num - 2);
		n = 0;	/* hand inih an empty line; the load fails */
	}
	memcpy(str, lr->line, (size_t)n);
	str[n] = '\n';
	str[n + 1] = '\0';
	return str;
}

int
config_parse_size(const char *s, uint64_t *out)
{
	char *end = NULL;
	unsigned long long v;
	unsigned shift = 0;

	if (s == NULL || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0)
		return -1;
	switch (*end) {
	case '\0': break;
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	default: return -1;
	}
	if (*end == 'i' || *end == 'B')
		end += (*end == 'i' && end[1] == 'B') ? 2 : 1;
	if (*end != '\0' || (shift && v > (UINT64_MAX >> shift)))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

static int
parse_unsigned(const char *s, unsigned min, unsigned *out)
{
	char *end = NULL;
	unsigned long v;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || v > 0x7fffffffUL || v < min)
		return -1;
	*out = (unsigned)v;
	return 0;
}

static int
replace_string(char **slot, const char *value, size_t len)
{
	char *copy = span_dup((struct span){ value, len });

	if (copy == NULL)
		return -1;
	free(*slot);
	*slot = copy;
	return 0;
}

/*
 * Split an Azure connection string into endpoint/account/key/sas.
 * Accepts UseDevelopmentStorage=true (Azurite's well-known account on
 * 127.0.0.1:10000).  Returns 0, or -1 with errbuf naming the missing part.
 * The strings are newly allocated into cfg (replacing what was there).
 */
static int
config_parse_connection_string(struct bindery_config *cfg, const char *cs,
			       char *errbuf, size_t errlen)
{
	const char *p = cs;
	char *proto = NULL, *suffix = NULL;
	int dev = 0, rc = -1;

	while (*p) {
		const char *semi = strchr(p, ';');
		size_t seglen = semi ? (size_t)(semi - p) : strlen(p);
		const char *eq = memchr(p, '=', seglen);
		struct span k, v;

		if (seglen == 0) {
			p = semi ? semi + 1 : p + seglen;
			continue;
		}
		if (eq == NULL) {
			snprintf(errbuf, errlen, "a part without '=' (expected Name=Value;...)");
			goto out;
		}
		k = (struct span){ p, (size_t)(eq - p) };
		v = (struct span){ eq + 1, seglen - (size_t)(eq - p) - 1 };
		if (span_eq_nocase_cstr(k, "AccountName")) {
			if (replace_string(&cfg->storage_account, v.ptr, v.len)) goto nomem;
		} else if (span_eq_nocase_cstr(k, "AccountKey")) {
			if (replace_string(&cfg->storage_key, v.ptr, v.len)) goto nomem;
		} else if (span_eq_nocase_cstr(k, "SharedAccessSignature")) {
			if (v.len && v.ptr[0] == '?') { v.ptr++; v.len--; }
			if (replace_string(&cfg->storage_sas, v.ptr, v.len)) goto nomem;
		} else if (span_eq_nocase_cstr(k, "BlobEndpoint")) {
			while (v.len && v.ptr[v.len - 1] == '/')
				v.len--;
			if (replace_string(&cfg->storage_endpoint, v.ptr, v.len)) goto nomem;
		} else if (span_eq_nocase_cstr(k, "DefaultEndpointsProtocol")) {
			if (replace_string(&proto, v.ptr, v.len)) goto nomem;
		} else if (span_eq_nocase_cstr(k, "EndpointSuffix")) {
			if (replace_string(&suffix, v.ptr, v.len)) goto nomem;
		} else if (span_eq_nocase_cstr(k, "UseDevelopmentStorage")) {
			dev = span_eq_nocase_cstr(v, "true");
		}
		/* Queue/Table/File endpoints belong to other services: ignored. */
		p = semi ? semi + 1 : p + seglen;
	}
	if (dev) {
		if ((cfg->storage_account == NULL &&
		     replace_string(&cfg->storage_account, DEVSTORE_ACCOUNT, strlen(DEVSTORE_ACCOUNT))) ||
		    (cfg->storage_key == NULL &&
		     replace_string(&cfg->storage_key, DEVSTORE_KEY, strlen(DEVSTORE_KEY))) ||
		    (cfg->storage_endpoint == NULL &&
		     replace_string(&cfg->storage_endpoint, DEVSTORE_ENDPOINT, strlen(DEVSTORE_ENDPOINT))))
			goto nomem;
	}
	if (cfg->storage_account == NULL) {
		snprintf(errbuf, errlen, "connection string has no AccountName");
		goto out;
	}
	if (cfg->storage_key == NULL && cfg->storage_sas == NULL) {
		snprintf(errbuf, errlen, "connection string has neither AccountKey nor SharedAccessSignature");
		goto out;
	}
	if (cfg->storage_endpoint == NULL) {
		struct buf ep = BUF_INIT(1024);

		if (buf_appendf(&ep, "%s://%s.blob.%s", proto ? proto : "https",
				cfg->storage_account, suffix ? suffix : "core.windows.net") != BUF_OK) {
			buf_free(&ep);
			goto nomem;
		}
		cfg->storage_endpoint = buf_take(&ep);
	}
	rc = 0;
	goto out;
nomem:
	snprintf(errbuf, errlen, "out of memory");
out:
	free(proto);
	free(suffix);
	return rc;
}

/* public_origin: one origin; a trailing '/' is forgiven, a path is not. */
static int
set_origin(struct bindery_config *cfg, const char *value)
{
	struct span v = span_from_cstr(value);

	if (v.len && v.ptr[v.len - 1] == '/')
		v.len--;
	if (origin_parse(v, 0, &cfg->public_origin) != ORIGIN_PARSE_OK)
		return -1;
	cfg->has_public_origin = 1;
	return 0;
}

/* trusted_proxies: "10.0.0.0/8, 192.0.2.7 ::1"; the line replaces any earlier one. */
static int
set_proxies(struct load_state *st, const char *value)
{
	struct bindery_config *cfg = st->cfg;
	const char *p = value;

	cfg->ntrusted_proxies = 0;
	while (*p) {
		size_t n = strcspn(p, ", \t");

		if (n > 0) {
			if (cfg->ntrusted_proxies == CONFIG_MAX_PROXIES) {
				snprintf(st->err, st->errlen, "more than %d addresses", CONFIG_MAX_PROXIES);
				return -2;
			}
			if (origin_net_parse((struct span){ p, n },
					     &cfg->trusted_proxies[cfg->ntrusted_proxies]) != 0)
				return -1;
			cfg->ntrusted_proxies++;
		}
		p += n;
		p += strspn(p, ", \t");
	}
	return 0;
}

/* token = OWNER:TOKEN, one per line. */
static int
set_token(struct load_state *st, const char *value)
{
	struct bindery_config *cfg = st->cfg;
	const char *colon = strchr(value, ':');

	if (colon == NULL || colon == value || strlen(colon + 1) < 16) {
		snprintf(st->err, st->errlen, "expected OWNER:TOKEN with a token of at least 16 characters");
		return -2;
	}
	/* The owner is stored with every document it writes: it must fit
	 * the owner column exactly, as a REMOTE_USER must (admit.c). */
	if (owner_name_check((struct span){ value, (size_t)(colon - value) }) != OWNER_NAME_OK) {
		snprintf(st->err, st->errlen, "the owner before ':' must be 1 to %d characters of"
			 " UTF-8 without controls", OWNER_NAME_MAX);
		return -2;
	}
	if (cfg->ntokens == CONFIG_MAX_TOKENS) {
		snprintf(st->err, st->errlen, "more than %d tokens", CONFIG_MAX_TOKENS);
		return -2;
	}
	cfg->tokens[cfg->ntokens].owner = span_dup((struct span){ value, (size_t)(colon - value) });
	cfg->tokens[cfg->ntokens].token = span_dup(span_from_cstr(colon + 1));
	if (!cfg->tokens[cfg->ntokens].owner || !cfg->tokens[cfg->ntokens].token) {
		free(cfg->tokens[cfg->ntokens].owner);
		free(cfg->tokens[cfg->ntokens].token);
		snprintf(st->err, st->errlen, "out of memory");
		return -2;
	}
	cfg->ntokens++;
	return 0;
}

/* [events] url starts a receiver; secret_file, ca_file, timeout and
 * max_age after it are its own. */
static int
set_event_key(struct load_state *st, enum key_type type, const char *value)
{
	struct bindery_config *cfg = st->cfg;
	struct config_event_endpoint *ep;
	char **field = NULL;
	unsigned *num = NULL;

	if (type == KEY_EVENT_URL) {
		if (cfg->nevents == CONFIG_MAX_EVENT_ENDPOINTS) {
			snprintf(st->err, st->errlen, "more than %d receivers", CONFIG_MAX_EVENT_ENDPOINTS);
			return -2;
		}
		ep = &cfg->events[cfg->nevents];
		if ((ep->url = span_dup(span_from_cstr(value))) == NULL) {
			snprintf(st->err, st->errlen, "out of memory");
			return -2;
		}
		ep->timeout = 2;
		ep->max_age = 86400;
		cfg->nevents++;
		return 0;
	}
	if (cfg->nevents == 0) {
		snprintf(st->err, st->errlen, "belongs to a receiver: put it after its url line");
		return -2;
	}
	ep = &cfg->events[cfg->nevents - 1];
	switch (type) {
	case KEY_EVENT_SECRET: field = &ep->secret_file; break;
	case KEY_EVENT_CA: field = &ep->ca_file; break;
	case KEY_EVENT_TIMEOUT: num = &ep->timeout; break;
	case KEY_EVENT_MAX_AGE: num = &ep->max_age; break;
	default: return -1;
	}
	if (num != NULL)
		return parse_unsigned(value, 1, num) ? -1 : 0;
	free(*field);
	if ((*field = span_dup(span_from_cstr(value))) == NULL) {
		snprintf(st->err, st->errlen, "out of memory");
		return -2;
	}
	return 0;
}

/* [database] tls = off | on | verify */
static int
set_db_tls(struct bindery_config *cfg, const char *value)
{
	if (!strcmp(value, "off"))
		cfg->db_tls = CONFIG_DB_TLS_OFF;
	else if (!strcmp(value, "on"))
		cfg->db_tls = CONFIG_DB_TLS_ON;
	else if (!strcmp(value, "verify"))
		cfg->db_tls = CONFIG_DB_TLS_VERIFY;
	else
		return -1;
	return 0;
}

/* [upload] allowed_types: the whole list, replacing an earlier line's.
 * Type names are no secret, so the message quotes the entry it refuses. */
static int
set_allowed_types(struct load_state *st, const char *value)
{
	struct span bad;
	enum mime_list_err e;
	char entry[4 * 64 + 4];

	e = mime_list_parse(span_from_cstr(value), &st->cfg->upload_allowed_types, &bad);
	if (e == MIME_LIST_OK)
		return 0;
	log_field(bad.ptr, bad.len, 64, entry, sizeof entry);
	snprintf(st->err, st->errlen, "'%s' %s", entry, mime_list_strerror(e));
	return -2;
}

static int parse_db_host(const char *s, size_t len, unsigned default_port, struct config_db_host *out);

/* [scan] clamd = unix:PATH | HOST:PORT; clamd has no default port worth
 * guessing (TCPSocket is commented out in Debian's clamd.conf). */
static int
set_clamd(struct load_state *st, const char *value)
{
	struct config_clamd *c = &st->cfg->scan_clamd;
	struct config_db_host h;

	c->kind = CONFIG_CLAMD_NONE;
	if (strncmp(value, "unix:", 5) == 0) {
		if (value[5] != '/') {
			snprintf(st->err, st->errlen, "unix: needs an absolute path");
			return -2;
		}
		if (copy_cstr(c->path, sizeof c->path, value + 5)) {
			snprintf(st->err, st->errlen, "a unix socket's path is at most %d bytes",
				 CONFIG_UNIX_PATH_MAX);
			return -2;
		}
		c->kind = CONFIG_CLAMD_UNIX;
		return 0;
	}
	if (parse_db_host(value, strlen(value), 0, &h) != 0 || h.port == 0) {
		snprintf(st->err, st->errlen, "expected unix:/PATH or HOST:PORT with a port from 1 to"
			 " 65535 (an IPv6 address in brackets)");
		return -2;
	}
	memcpy(c->host, h.name, sizeof c->host);
	c->port = h.port;
	c->kind = CONFIG_CLAMD_TCP;
	return 0;
}

static int
set_key(struct load_state *st, const struct key_def *def, const char *value)
{
	struct bindery_config *cfg = st->cfg;
	void *field = (char *)cfg + def->offset;
	uint64_t size;
	enum buf_err e = BUF_OK;

	switch (def->type) {
	case KEY_STRING:
		if (replace_string(field, value, strlen(value)))
			goto nomem;
		return 0;
	case KEY_PORT:
		if (parse_unsigned(value, 1, field) || *(unsigned *)field > 65535)
			goto bad;
		return 0;
	case KEY_COUNT:
		return parse_unsigned(value, 1, field) ? -1 : 0;
	case KEY_COUNT_OR_ZERO:
		return parse_unsigned(value, 0, field) ? -1 : 0;
	case KEY_SECONDS:
		return parse_unsigned(value, 0, field) ? -1 : 0;
	case KEY_SIZE:
		if (config_parse_size(value, &size) || size == 0)
			goto bad;
		*(uint64_t *)field = size;
		return 0;
	case KEY_SIZE_OR_ZERO:
		if (config_parse_size(value, &size))
			goto bad;
		*(uint64_t *)field = size;
		return 0;
	case KEY_BOOL:
		if (!strcasecmp(value, "true") || !strcasecmp(value, "yes") || !strcmp(value, "1"))
			*(int *)field = 1;
		else if (!strcasecmp(value, "false") || !strcasecmp(value, "no") || !strcmp(value, "0"))
			*(int *)field = 0;
		else
			goto bad;
		return 0;
	case KEY_DOWNLOAD_MODE:
		if (!strcmp(value, "proxy"))
			cfg->download_mode = DOWNLOAD_PROXY;
		else if (!strcmp(value, "redirect"))
			cfg->download_mode = DOWNLOAD_REDIRECT;
		else
			goto bad;
		return 0;
	case KEY_STORAGE_AUTH:
		if (!strcmp(value, "key"))
			cfg->storage_auth = STORAGE_AUTH_KEY;
		else if (!strcmp(value, "sas"))
			cfg->storage_auth = STORAGE_AUTH_SAS;
		else if (!strcmp(value, "entra"))
			cfg->storage_auth = STORAGE_AUTH_ENTRA;
		else
			goto bad;
		return 0;
	case KEY_LOG_LEVEL:
		if (!strcmp(value, "error")) cfg->log_level = LOG_LEVEL_ERROR;
		else if (!strcmp(value, "warn")) cfg->log_level = LOG_LEVEL_WARN;
		else if (!strcmp(value, "info")) cfg->log_level = LOG_LEVEL_INFO;
		else if (!strcmp(value, "debug")) cfg->log_level = LOG_LEVEL_DEBUG;
		else goto bad;
		return 0;
	case KEY_LOG_SINK:
		if (!strcmp(value, "stderr")) cfg->log_sink = LOG_SINK_STDERR;
		else if (!strcmp(value, "syslog")) cfg->log_sink = LOG_SINK_SYSLOG;
		else goto bad;
		return 0;
	case KEY_CONNECTION_STRING:
		if (st->cs_line == 0)
			st->cs_line = *st->lineno;
		e = buf_append_cstr(&st->connection_string, value);
		goto joined;
	case KEY_SAS:
		if (*value == '?' && st->sas.len == 0)
			value++;
		e = buf_append_cstr(&st->sas, value);
		goto joined;
	case KEY_DB_TLS:
		return set_db_tls(cfg, value);
	case KEY_ORIGIN:
		return set_origin(cfg, value);
	case KEY_PROXIES:
		return set_proxies(st, value);
	case KEY_TOKEN:
		return set_token(st, value);
	case KEY_MIME_LIST:
		return set_allowed_types(st, value);
	case KEY_CONTENT_TYPE:
		if (!strcmp(value, "sniffed"))
			cfg->upload_content_type = CONFIG_CONTENT_TYPE_SNIFFED;
		else if (!strcmp(value, "declared"))
			cfg->upload_content_type = CONFIG_CONTENT_TYPE_DECLARED;
		else
			goto bad;
		return 0;
	case KEY_CLAMD:
		return set_clamd(st, value);
	case KEY_SCAN_ON_ERROR:
		if (!strcmp(value, "refuse"))
			cfg->scan_on_error = CONFIG_SCAN_REFUSE;
		else if (!strcmp(value, "admit"))
			cfg->scan_on_error = CONFIG_SCAN_ADMIT;
		else
			goto bad;
		return 0;
	case KEY_EVENT_URL:
	case KEY_EVENT_SECRET:
	case KEY_EVENT_CA:
	case KEY_EVENT_TIMEOUT:
	case KEY_EVENT_MAX_AGE:
		return set_event_key(st, def->type, value);
	}
joined:
	/* Over the 4096-byte cap is a bad value; out of memory must not read
	 * as one, or the operator hunts a typo that is not there. */
	if (e == BUF_NOMEM)
		goto nomem;
	return e == BUF_OK ? 0 : -1;
bad:
	return -1;
nomem:
	snprintf(st->err, st->errlen, "out of memory");
	return -2;
}

/* The host of an http(s) URL ("[::1]" keeps its brackets) into host;
 * -1 when url is not http:// or https:// followed by a host. */
static int
url_host(const char *url, char *host, size_t hostlen, int *https)
{
	const char *p, *end;

	if (strncmp(url, "https://", 8) == 0) {
		*https = 1;
		p = url + 8;
	} else if (strncmp(url, "http://", 7) == 0) {
		*https = 0;
		p = url + 7;
	} else
		return -1;
	end = *p == '[' ? strchr(p, ']') : p + strcspn(p, ":/?#");
	if (end == NULL)
		return -1;
	if (*p == '[')
		end++;
	if (end == p || strchr(p, '@') != NULL)
		return -1;
	return copy_span(host, hostlen, (struct span){ p, (size_t)(end - p) });
}

static int
host_is_loopback(const char *h)
{
	return !strcmp(h, "localhost") || !strcmp(h, "[::1]") || !strncmp(h, "127.", 4);
}

/* [events]: each receiver with its secret file; http only on the loopback;
 * no url twice (its deliveries are keyed by the url).  Messages name a
 * receiver by its place: a webhook URL often carries a secret of its own. */
static void
check_events(struct load_state *st)
{
	struct bindery_config *cfg = st->cfg;
	int line = key_line_of(st, "events", "url"), https;
	char host[256];
	size_t i, j;

	for (i = 0; i < cfg->nevents; i++) {
		const struct config_event_endpoint *ep = &cfg->events[i];

		if (url_host(ep->url, host, sizeof host, &https) != 0 || (!https && !host_is_loopback(host)))
			add_error(st, line, "[events] receiver %zu: url must be https:// (http:// only on"
				  " the loopback)", i + 1);
		if (ep->secret_file == NULL || ep->secret_file[0] != '/')
			add_error(st, line, "[events] receiver %zu: needs its secret_file (an absolute path)",
				  i + 1);
		for (j = 0; j < i; j++)
			if (strcmp(cfg->events[j].url, ep->url) == 0)
				add_error(st, line, "[events] receiver %zu: its url is receiver %zu's too", i + 1,
					  j + 1);
	}
}

/*
 * [storage] auth: the default from what is configured, and for entra
 * exactly one credential and no account key anywhere (a key left in the
 * file would be a secret the host was meant not to hold).  An authority
 * may be http:// only on the loopback (tests); the managed identity
 * endpoint is plain HTTP by nature, so only IMDS's own link-local address
 * or the loopback.
 */
static void
check_storage_auth(struct load_state *st)
{
	struct bindery_config *cfg = st->cfg;
	int line = key_line_of(st, "storage", "auth"), https, ncred;
	char host[256];

	if (cfg->storage_auth == STORAGE_AUTH_DEFAULT)
		cfg->storage_auth = cfg->storage_key ? STORAGE_AUTH_KEY : STORAGE_AUTH_SAS;
	if (cfg->storage_auth == STORAGE_AUTH_KEY && cfg->storage_key == NULL)
		add_error(st, line, "[storage] auth = key needs a key");
	if (cfg->storage_auth == STORAGE_AUTH_SAS && cfg->storage_sas == NULL)
		add_error(st, line, "[storage] auth = sas needs a sas");
	if (cfg->storage_auth != STORAGE_AUTH_ENTRA) {
		if (cfg->entra_tenant_id || cfg->entra_client_id || cfg->entra_client_certificate ||
		    cfg->entra_client_secret_file || cfg->entra_federated_token_file ||
		    cfg->entra_managed_identity)
			add_error(st, line, "[storage] tenant_id, client_id and the Entra credentials"
				  " apply with auth = entra");
		return;
	}
	if (cfg->storage_key != NULL || cfg->storage_sas != NULL)
		add_error(st, line, "[storage] auth = entra holds no account key or sas: remove it"
			  " (from the connection string too)");
	ncred = (cfg->entra_client_certificate != NULL) + (cfg->entra_client_secret_file != NULL) +
		(cfg->entra_federated_token_file != NULL) + (cfg->entra_managed_identity != 0);
	if (ncred != 1)
		add_error(st, line, "[storage] auth = entra needs exactly one of client_certificate,"
			  " client_secret_file, federated_token_file, managed_identity = yes");
	if (!cfg->entra_managed_identity && (cfg->entra_tenant_id == NULL || cfg->entra_client_id == NULL))
		add_error(st, line, "[storage] auth = entra needs tenant_id and client_id");
	if ((cfg->entra_client_certificate && cfg->entra_client_certificate[0] != '/') ||
	    (cfg->entra_client_secret_file && cfg->entra_client_secret_file[0] != '/') ||
	    (cfg->entra_federated_token_file && cfg->entra_federated_token_file[0] != '/'))
		add_error(st, line, "[storage] the Entra credential's file must be an absolute path");
	if (strncmp(cfg->storage_endpoint, "https://", 8) != 0)
		add_error(st, key_line_of(st, "storage", "endpoint"), "[storage] auth = entra needs an"
			  " https:// endpoint: storage refuses bearer tokens over plain HTTP");
	if (cfg->entra_authority != NULL &&
	    (url_host(cfg->entra_authority, host, sizeof host, &https) != 0 ||
	     (!https && !host_is_loopback(host))))
		add_error(st, key_line_of(st, "storage", "authority"), "[storage] authority must be"
			  " an https:// URL (http:// only on the loopback)");
	if (cfg->entra_imds_endpoint != NULL &&
	    (url_host(cfg->entra_imds_endpoint, host, sizeof host, &https) != 0 ||
	     (strcmp(host, "169.254.169.254") != 0 && !host_is_loopback(host))))
		add_error(st, key_line_of(st, "storage", "imds_endpoint"), "[storage] imds_endpoint"
			  " must be on 169.254.169.254 or the loopback");
	if (cfg->entra_token_cache == NULL) {
		if ((cfg->entra_token_cache = span_dup(SPAN_LIT(CONFIG_TOKEN_CACHE_DEFAULT))) == NULL)
			add_error(st, 0, "out of memory");
	} else if (strcmp(cfg->entra_token_cache, "none") == 0) {
		free(cfg->entra_token_cache);
		cfg->entra_token_cache = NULL;
	} else if (cfg->entra_token_cache[0] != '/' || strncmp(cfg->entra_token_cache, "/tmp", 4) == 0)
		/* /tmp is everyone's: a name there can be taken first. */
		add_error(st, key_line_of(st, "storage", "token_cache"), "[storage] token_cache must"
			  " be an absolute path outside /tmp, or none");
}

/*
 * Error messages quote nothing from the file but the names of keys and
 * sections bindery knows.  A line inih could not attribute (an unknown key,
 * a key in an unknown section) may be a piece of a secret that should have
 * been an indented continuation: "AccountKey=abc..." or a bare base64 run
 * ending in "==" parses as a key named after the secret.  So such a line is
 * described by where it is and what was expected there, never by its text.
 */
static void
list_section_keys(const char *section, char *out, size_t outlen)
{
	struct buf b = BUF_INIT(outlen > 0 ? outlen - 1 : 0);
	size_t i;

	for (i = 0; i < ARRAY_LEN(keys); i++)
		if (strcmp(keys[i].section, section) == 0 &&
		    buf_appendf(&b, "%s%s", b.len ? ", " : "", keys[i].name) != BUF_OK)
			break;
	if (copy_cstr(out, outlen, b.len ? buf_cstr(&b) : "")) { /* a cut list is still a hint */ }
	buf_free(&b);
}

static void
list_sections(char *out, size_t outlen)
{
	struct buf b = BUF_INIT(outlen > 0 ? outlen - 1 : 0);
	size_t i;

	for (i = 0; i < ARRAY_LEN(keys); i++)
		if ((i == 0 || strcmp(keys[i - 1].section, keys[i].section) != 0) &&
		    buf_appendf(&b, "%s[%s]", b.len ? " " : "", keys[i].section) != BUF_OK)
			break;
	if (copy_cstr(out, outlen, b.len ? buf_cstr(&b) : "")) { /* a cut list is still a hint */ }
	buf_free(&b);
}

/* " (if this line continues [storage] sas from line 7, indent it)" when the
 * line right above held a key, else "". */
static void
continuation_hint(const struct load_state *st, int line, char *out, size_t outlen)
{
	out[0] = '\0';
	if (st->last_def && st->last_line == line - 1)
		snprintf(out, outlen, " (if this line continues [%s] %s from line %d, indent it)",
			 st->last_def->section, st->last_def->name, st->last_line);
}

static void
unknown_key_message(struct load_state *st, const char *section, int known_section)
{
	char list[256], hint[160];

	continuation_hint(st, *st->lineno, hint, sizeof hint);
	if (known_section) {
		list_section_keys(section, list, sizeof list);
		add_error(st, *st->lineno, "[%s]: unknown key; the keys of [%s] are %s%s", section,
			  section, list, hint);
	} else {
		list_sections(list, sizeof list);
		add_error(st, *st->lineno, "a key in an unknown section; the sections are %s%s", list,
			  hint);
	}
}

/* Only joined values may go on over indented lines; for any other key
 * inih would silently hand us the last piece as the whole value. */
static int
continues_joined_key(const struct key_def *def)
{
	return def->type == KEY_CONNECTION_STRING || def->type == KEY_SAS;
}

/*
 * A value the sample configuration left for the admin to fill in: a whole
 * "@NAME@" (NAME of A-Z, 0-9 and _, as conf/bindery.conf.sample and the
 * Debian package write them), or a token's part after "OWNER:".  Loaded as
 * it is, it would be a password or key that fails later with a message
 * far from the cause.  Returns the placeholder, or an empty span.
 */
static struct span
placeholder_in(const struct key_def *def, const char *value)
{
	struct span v = span_from_cstr(value), none = { NULL, 0 };
	const char *colon = def->type == KEY_TOKEN ? strchr(value, ':') : NULL;
	size_t i;

	if (colon != NULL)
		v = span_from_cstr(colon + 1);
	if (v.len < 3 || v.ptr[0] != '@' || v.ptr[v.len - 1] != '@')
		return none;
	for (i = 1; i + 1 < v.len; i++)
		if (!((v.ptr[i] >= 'A' && v.ptr[i] <= 'Z') || (v.ptr[i] >= '0' && v.ptr[i] <= '9') ||
		      v.ptr[i] == '_'))
			return none;
	return v;
}

/*
 * inih calls this per key; a problem is recorded and the load goes on, so
 * every mistake of the file is reported at once.  Returning 0 marks the
 * line for inih too.
 */
static int
on_key(void *user, const char *section, const char *name, const char *value)
{
	struct load_state *st = user;
	const int line = *st->lineno;
	struct span ph;
	size_t i;
	int known_section = 0, rc;

	st->handled_line = line;
	for (i = 0; i < ARRAY_LEN(keys); i++) {
		if (strcmp(keys[i].section, section) != 0)
			continue;
		known_section = 1;
		if (strcmp(keys[i].name, name) != 0)
			continue;
		st->key_line[i] = line;
		if (*st->indented && !continues_joined_key(&keys[i])) {
			add_error(st, line, "[%s] %s: an indented line; only connection_string"
				  " and sas go on over indented lines", section, name);
			st->key_bad[i] = 1;
			return 0;
		}
		ph = placeholder_in(&keys[i], value);
		if (ph.len > 0) {
			add_error(st, line, "[%s] %s is still the placeholder %.*s", section, name,
				  (int)ph.len, ph.ptr);
			st->key_bad[i] = 1;
			return 0;
		}
		st->err[0] = '\0';
		rc = set_key(st, &keys[i], value);
		if (rc == 0) {
			st->last_def = &keys[i];
			st->last_line = line;
			return 1;
		}
		/* Secrets must not echo into the message: name the key, not the value. */
		if (rc == -1)
			add_error(st, line, "[%s] %s: invalid value", section, name);
		else
			add_error(st, line, "[%s] %s: %s", section, name, st->err);
		st->key_bad[i] = 1;
		return 0;
	}
	unknown_key_message(st, section, known_section);
	return 0;
}

static int
is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* One item of a host list, blanks already trimmed: HOST, HOST:PORT, [V6]:PORT. */
static int
parse_db_host(const char *s, size_t len, unsigned default_port, struct config_db_host *out)
{
	const char *name = s, *port = NULL;
	size_t namelen = len, i;
	unsigned long v = 0;

	if (len > 0 && s[0] == '[') {
		const char *close = memchr(s, ']', len);

		if (close == NULL || close == s + 1)
			return -1;
		name = s + 1;
		namelen = (size_t)(close - name);
		if (close + 1 < s + len) {
			if (close[1] != ':')
				return -1;
			port = close + 2;
		}
	} else {
		const char *colon = memchr(s, ':', len);

		if (colon != NULL) {
			/* Two colons: an IPv6 address, which needs its brackets
			 * to tell its last group from a port. */
			if (memchr(colon + 1, ':', (size_t)(s + len - colon - 1)) != NULL)
				return -1;
			namelen = (size_t)(colon - s);
			port = colon + 1;
		}
	}
	if (namelen == 0 || namelen > CONFIG_DB_HOST_MAX)
		return -1;
	for (i = 0; i < namelen; i++)
		if (is_blank(name[i]) || name[i] == ',' || (unsigned char)name[i] < 0x21)
			return -1;
	out->port = default_port;
	if (port != NULL) {
		const char *end = s + len;

		if (port == end)
			return -1;
		for (; port < end; port++) {
			if (*port < '0' || *port > '9')
				return -1;
			v = v * 10 + (unsigned long)(*port - '0');
			if (v > 65535)
				return -1;
		}
		if (v == 0)
			return -1;
		out->port = (unsigned)v;
	}
	memcpy(out->name, name, namelen);
	out->name[namelen] = '\0';
	return 0;
}

int
config_parse_db_hosts(const char *list, unsigned default_port, struct config_db_host *out,
		      size_t cap, size_t *n)
{
	const char *p = list, *end, *b, *e;

	*n = 0;
	for (;;) {
		end = strchr(p, ',');
		if (end == NULL)
			end = p + strlen(p);
		for (b = p; b < end && is_blank(*b); b++)
			;
		for (e = end; e > b && is_blank(e[-1]); e--)
			;
		if (*n == cap || parse_db_host(b, (size_t)(e - b), default_port, &out[*n]))
			return -1;
		(*n)++;
		if (*end == '\0')
			return 0;
		p = end + 1;
	}
}

static void
config_defaults(struct bindery_config *cfg)
{
	cfg->db_port = 3306;
	cfg->max_upload = 64ULL << 20;
	cfg->block_size = 4ULL << 20;
	cfg->blocks_in_flight = 4;
	cfg->single_put_max = 4ULL << 20;
	cfg->request_deadline = 300;
	cfg->sweep_cutoff = 900;
	cfg->heartbeat = 30;
	cfg->upload_expiry = 86400;
	cfg->retire_grace = 0;	/* 0 = derived below */
	cfg->idempotency_ttl = 86400;
	cfg->body_idle_timeout = 30;
	cfg->body_min_rate = 1024;
	cfg->body_min_rate_grace = 60;
	cfg->download_mode = DOWNLOAD_PROXY;
	cfg->sas_lifetime = 300;
	cfg->events_retention = 7 * 86400;
	cfg->events_backoff_max = 3600;
	cfg->direct_sas_lifetime = 900;
	cfg->scan_timeout = 30;
	cfg->sweep_batch = 500;
	cfg->sweep_parallel = 8;
	cfg->sweep_lease = 300;
	cfg->sweep_late_after = 3600;
	cfg->sweep_history_days = 30;
	cfg->log_level = LOG_LEVEL_INFO;
	cfg->log_sink = LOG_SINK_STDERR;
}

/* [quota] and [scan] against the rest (doc/design.md, "Admission"). */
static void
check_admission(struct load_state *st)
{
	struct bindery_config *cfg = st->cfg;

	/* An upload that declares no size reserves max_upload: under a
	 * smaller quota it could never start, and no document over the
	 * quota could ever be kept anyway. */
	if (cfg->quota_bytes_per_owner != 0 && cfg->quota_bytes_per_owner < cfg->max_upload)
		add_error(st, key_line_of(st, "quota", "bytes_per_owner"),
			  "[quota] bytes_per_owner must be 0 (no limit) or at least [limits] max_upload"
			  " (%llu): an upload without a declared size reserves max_upload",
			  (unsigned long long)cfg->max_upload);
	/* Settings that would silently do nothing. */
	if (cfg->scan_clamd.kind == CONFIG_CLAMD_NONE &&
	    (key_line_of(st, "scan", "timeout") || key_line_of(st, "scan", "on_scanner_error")))
		add_error(st, key_line_of(st, "scan", "timeout") ? key_line_of(st, "scan", "timeout")
			  : key_line_of(st, "scan", "on_scanner_error"),
			  "[scan] timeout and on_scanner_error apply with clamd");
	/* A wait on clamd is one more wait an upload makes before it commits:
	 * sweep_cutoff allows request_deadline for each (config_sweep_cutoff_min). */
	if (cfg->scan_clamd.kind != CONFIG_CLAMD_NONE && cfg->scan_timeout > cfg->request_deadline)
		add_error(st, key_line_of(st, "scan", "timeout"), "[scan] timeout must be at most"
			  " [limits] request_deadline (%u)", cfg->request_deadline);
}

/*
 * What no single line can show: the keys a file must set, and the relations
 * between keys.  A missing key names the file and its section.  A key that
 * appeared with a refused value has its own message already, so it is not
 * also "missing"; the relations are checked only once every line read well,
 * since a refused value would stand there as its default.
 */
static void
config_check(struct load_state *st)
{
	struct bindery_config *cfg = st->cfg;
	int cs_bad = key_was_bad(st, "storage", "connection_string");
	size_t n;

	if (cfg->db_name == NULL && !key_was_bad(st, "database", "name"))
		add_error(st, 0, "[database] name is required");
	if (cfg->db_user == NULL && !key_was_bad(st, "database", "user"))
		add_error(st, 0, "[database] user is required");
	if (cfg->db_socket == NULL && cfg->db_host == NULL && !key_was_bad(st, "database", "socket") &&
	    !key_was_bad(st, "database", "host"))
		add_error(st, 0, "[database] needs socket or host");
	if (cfg->db_socket == NULL && cfg->db_host != NULL &&
	    config_parse_db_hosts(cfg->db_host, cfg->db_port, cfg->db_hosts, CONFIG_MAX_DB_HOSTS,
				  &cfg->ndb_hosts))
		add_error(st, key_line_of(st, "database", "host"), "[database] host: not a list of"
			  " HOST[:PORT] (at most %d, an IPv6 address in brackets)", CONFIG_MAX_DB_HOSTS);
	if (!cs_bad && ((cfg->storage_account == NULL && !key_was_bad(st, "storage", "account")) ||
			(cfg->storage_endpoint == NULL && !key_was_bad(st, "storage", "endpoint"))))
		add_error(st, 0, "[storage] needs connection_string, or endpoint and account");
	if (!cs_bad && cfg->storage_key == NULL && cfg->storage_sas == NULL &&
	    cfg->storage_auth != STORAGE_AUTH_ENTRA &&
	    !key_was_bad(st, "storage", "key") && !key_was_bad(st, "storage", "sas"))
		add_error(st, 0, "[storage] needs a key, a sas, or auth = entra");
	if (cfg->storage_container == NULL && !key_was_bad(st, "storage", "container"))
		add_error(st, 0, "[storage] container is required");
	if (st->nerrors > 0)
		return;
	check_storage_auth(st);
	check_events(st);
	/* A unix socket never leaves the host: TLS there would be a setting
	 * that silently does nothing. */
	if (cfg->db_socket && (cfg->db_tls != CONFIG_DB_TLS_OFF || cfg->db_tls_ca))
		add_error(st, key_line_of(st, "database", "tls") ? key_line_of(st, "database", "tls")
			  : key_line_of(st, "database", "tls_ca"),
			  "[database] tls and tls_ca apply to host connections, not socket");
	/* "https://acct.blob.core.windows.net/" and without the slash are one endpoint. */
	n = strlen(cfg->storage_endpoint);
	while (n > 1 && cfg->storage_endpoint[n - 1] == '/')
		cfg->storage_endpoint[--n] = '\0';
	if (cfg->storage_prefix == NULL && (cfg->storage_prefix = span_dup(SPAN_LIT(""))) == NULL)
		add_error(st, 0, "out of memory");
	if (cfg->metrics_counters_file == NULL &&
	    (cfg->metrics_counters_file = span_dup(SPAN_LIT(CONFIG_COUNTERS_FILE_DEFAULT))) == NULL)
		add_error(st, 0, "out of memory");
	/* Every process must name the same file, whatever its working directory. */
	else if (cfg->metrics_counters_file[0] != '/')
		add_error(st, key_line_of(st, "metrics", "counters_file"),
			  "[metrics] counters_file must be an absolute path");
	/* Put Block takes at most 4000 MiB and a block list 50,000 blocks. */
	if (cfg->block_size > (4000ULL << 20))
		add_error(st, key_line_of(st, "limits", "block_size"),
			  "[limits] block_size above the service's limit (4000M)");
	if (cfg->single_put_max > (5000ULL << 20))
		add_error(st, key_line_of(st, "limits", "single_put_max"),
			  "[limits] single_put_max above the service's limit (5000M)");
	if (cfg->max_upload / cfg->block_size >= 50000)
		add_error(st, key_line_of(st, "limits", "max_upload"),
			  "[limits] max_upload needs more than 50000 blocks of block_size");
	if (cfg->sweep_cutoff < config_sweep_cutoff_min(cfg))
		add_error(st, key_line_of(st, "limits", "sweep_cutoff"),
			  "[limits] sweep_cutoff must be at least twice (heartbeat + request_deadline +"
			  " body_idle_timeout) plus %us of compensation: %llu", CONFIG_COMPENSATION_BUDGET_S,
			  (unsigned long long)config_sweep_cutoff_min(cfg));
	/* A resumable upload between PATCHes is a pending intent like any
	 * other: it must outlive the lease of one in flight. */
	if (cfg->upload_expiry < cfg->sweep_cutoff)
		add_error(st, key_line_of(st, "limits", "upload_expiry"),
			  "[limits] upload_expiry must be at least sweep_cutoff (%u)", cfg->sweep_cutoff);
	/* A redirect hands out a SAS bindery signs itself, with the account
	 * key: a SAS-only configuration cannot (it failed every download). */
	if (cfg->download_mode == DOWNLOAD_REDIRECT && cfg->storage_auth == STORAGE_AUTH_SAS)
		add_error(st, key_line_of(st, "download", "mode"), "[download] mode = redirect needs"
			  " [storage] key or auth = entra: a SAS cannot sign the download links;"
			  " use mode = proxy");
	/* So does a direct upload's create-only SAS. */
	if (cfg->upload_direct && cfg->storage_auth == STORAGE_AUTH_SAS)
		add_error(st, key_line_of(st, "upload", "direct"), "[upload] direct = true needs"
			  " [storage] key or auth = entra: a SAS cannot sign the upload links");
	/* Grants made before sql/013 recorded them are assumed to end within
	 * a day; a longer create SAS would also outlive any sane upload. */
	if (cfg->direct_sas_lifetime > CONFIG_DIRECT_SAS_LIFETIME_MAX)
		add_error(st, key_line_of(st, "upload", "direct_sas_lifetime"),
			  "[upload] direct_sas_lifetime = %u is over %u seconds (a day)",
			  cfg->direct_sas_lifetime, CONFIG_DIRECT_SAS_LIFETIME_MAX);
	check_admission(st);
	if (cfg->retire_grace == 0)
		cfg->retire_grace = cfg->sas_lifetime + cfg->request_deadline;
}

enum config_content_type
config_upload_content_type(const struct bindery_config *cfg)
{
	if (cfg->upload_content_type != CONFIG_CONTENT_TYPE_DEFAULT)
		return cfg->upload_content_type;
	return cfg->upload_allowed_types.n > 0 ? CONFIG_CONTENT_TYPE_SNIFFED : CONFIG_CONTENT_TYPE_DECLARED;
}

int
config_upload_sniffs(const struct bindery_config *cfg)
{
	return cfg->upload_allowed_types.n > 0 ||
	       config_upload_content_type(cfg) == CONFIG_CONTENT_TYPE_SNIFFED;
}

uint64_t
config_sweep_cutoff_min(const struct bindery_config *cfg)
{
	return 2 * ((uint64_t)cfg->heartbeat + cfg->request_deadline + cfg->body_idle_timeout) +
	       CONFIG_COMPENSATION_BUDGET_S;
}

int
config_load_stream(FILE *fp, const char *name, struct bindery_config **out, char *errbuf,
		   size_t errlen, char *warnbuf, size_t warnlen)
{
	struct bindery_config *cfg = NULL;
	struct load_state *st = NULL;
	struct line_reader lr = { NULL, NULL, 0, 0, 0, 0, NULL };
	char msg[512] = "";
	struct stat sb;
	int line, rc = -1;

	*out = NULL;
	assert(errlen > 0);
	errbuf[0] = '\0';
	if (warnbuf && warnlen)
		warnbuf[0] = '\0';
	/* Its arrays of lines, a few hundred bytes, go on the heap. */
	st = alloc_calloc(1, sizeof *st);
	cfg = alloc_calloc(1, sizeof *cfg);
	if (st == NULL || cfg == NULL || (cfg->path = span_dup(span_from_cstr(name))) == NULL) {
		snprintf(errbuf, errlen, "%s: out of memory", name);
		goto out;
	}
	st->cfg = cfg;
	st->name = name;
	st->err = msg;
	st->errlen = sizeof msg;
	st->out = errbuf;
	st->outlen = errlen;
	st->connection_string = BUF_INIT(4096);
	st->sas = BUF_INIT(4096);
	st->lineno = &lr.lineno;
	st->indented = &lr.indented;
	config_defaults(cfg);
	lr.fp = fp;
	lr.st = st;
	line = ini_parse_stream(read_line, &lr, on_key, st);
	/* A line inih refused that no check here caught (another inih's
	 * rules): it still gets its message. */
	if (line > 0 && (st->first_error_line == 0 || line < st->first_error_line))
		add_error(st, line, "syntax error (expected [section] or key = value)");
	if (st->sas.len && replace_string(&cfg->storage_sas, st->sas.ptr, st->sas.len))
		add_error(st, 0, "out of memory");
	if (st->connection_string.len && !key_was_bad(st, "storage", "connection_string") &&
	    config_parse_connection_string(cfg, buf_cstr(&st->connection_string), msg, sizeof msg)) {
		add_error(st, st->cs_line, "[storage] connection_string: %s", msg);
		st->key_bad[key_index("storage", "connection_string")] = 1;
	}
	config_check(st);
	if (st->nerrors > 0) {
		if (st->unshown > 0)
			snprintf(errbuf + st->used, errlen - st->used, "... and %u more problem%s not shown\n",
				 st->unshown, st->unshown == 1 ? "" : "s");
		/* One problem a line; no newline after the last. */
		if (errbuf[0] && errbuf[strlen(errbuf) - 1] == '\n')
			errbuf[strlen(errbuf) - 1] = '\0';
		goto out;
	}
	if (warnbuf && (cfg->storage_key || cfg->storage_sas || cfg->db_password || cfg->ntokens) &&
	    fstat(fileno(fp), &sb) == 0 && (sb.st_mode & S_IROTH))
		snprintf(warnbuf, warnlen, "%s is world-readable and holds secrets; chmod o-r it", name);
	*out = cfg;
	cfg = NULL;
	rc = 0;
out:
	free(lr.line);
	if (st != NULL) {
		buf_free(&st->connection_string);
		if (st->sas.ptr)
			explicit_bzero(st->sas.ptr, st->sas.len);
		buf_free(&st->sas);
		free(st);
	}
	config_free(cfg);
	return rc;
}

int
config_load(const char *path, struct bindery_config **out, char *errbuf, size_t errlen,
	    char *warnbuf, size_t warnlen)
{
	FILE *fp;
	int rc;

	*out = NULL;
	if (warnbuf && warnlen)
		warnbuf[0] = '\0';
	if (path == NULL)
		path = getenv("BINDERY_CONFIG");
	if (path == NULL || *path == '\0')
		path = CONFIG_DEFAULT_PATH;
	fp = fopen(path, "r");
	if (fp == NULL) {
		snprintf(errbuf, errlen, "%s: cannot read: %s", path, strerror(errno));
		return -1;
	}
	rc = config_load_stream(fp, path, out, errbuf, errlen, warnbuf, warnlen);
	fclose(fp);
	return rc;
}

void
config_log_errors(const char *prefix, const char *errors)
{
	const char *line, *end;

	for (line = errors; *line; line = *end ? end + 1 : end) {
		end = strchr(line, '\n');
		if (end == NULL)
			end = line + strlen(line);
		log_error("%s%.*s", prefix, (int)(end - line), line);
	}
}

void
config_free(struct bindery_config *cfg)
{
	size_t i;

	if (cfg == NULL)
		return;
	free(cfg->path);
	free(cfg->db_socket);
	free(cfg->db_host);
	free(cfg->db_user);
	if (cfg->db_password)
		explicit_bzero(cfg->db_password, strlen(cfg->db_password));
	free(cfg->db_password);
	free(cfg->db_name);
	free(cfg->db_tls_ca);
	free(cfg->storage_endpoint);
	free(cfg->storage_account);
	if (cfg->storage_key)
		explicit_bzero(cfg->storage_key, strlen(cfg->storage_key));
	free(cfg->storage_key);
	free(cfg->storage_sas);
	free(cfg->storage_container);
	free(cfg->storage_prefix);
	free(cfg->storage_ca_file);
	free(cfg->storage_ca_path);
	free(cfg->entra_tenant_id);
	free(cfg->entra_client_id);
	free(cfg->entra_client_certificate);
	free(cfg->entra_client_secret_file);
	free(cfg->entra_federated_token_file);
	free(cfg->entra_authority);
	free(cfg->entra_imds_endpoint);
	free(cfg->entra_token_cache);
	for (i = 0; i < cfg->nevents; i++) {
		free(cfg->events[i].url);
		free(cfg->events[i].secret_file);
		free(cfg->events[i].ca_file);
	}
	free(cfg->metrics_owner);
	free(cfg->metrics_counters_file);
	for (i = 0; i < cfg->ntokens; i++) {
		free(cfg->tokens[i].owner);
		free(cfg->tokens[i].token);
	}
	free(cfg);
}

const char *
config_token_owner(const struct bindery_config *cfg, const char *token, size_t len)
{
	const char *owner = NULL;
	size_t i;

	/* Walk every token so timing does not say which one matched. */
	for (i = 0; i < cfg->ntokens; i++)
		if (ct_equal(cfg->tokens[i].token, strlen(cfg->tokens[i].token), token, len) &&
		    owner == NULL)
			owner = cfg->tokens[i].owner;
	return owner;
}
