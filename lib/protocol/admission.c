/* admission.c - see admission.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/log.h"
#include "parse/config.h"
#include "parse/mime_list.h"
#include "protocol/admission.h"
#include "protocol/clamd.h"

struct admission {
	const struct bindery_config *cfg;
	struct proto_body in;		/* create/replace: the request body */
	char *head;			/* its first SNIFF_BYTES (NULL: not sniffed) */
	size_t head_len, head_pos;	/* bytes in head; bytes of it handed on */
	uint64_t total;			/* bytes handed on (or stored) so far */
	int eof;			/* the body said it had no more */
	struct clamd *scan;		/* NULL: no scan */
	char type[SNIFF_TYPE_MAX];	/* the type to record */
};

int
admission_configured(const struct bindery_config *cfg)
{
	return config_upload_sniffs(cfg) || cfg->scan_clamd.kind != CONFIG_CLAMD_NONE;
}

int
admission_clamd_address(const struct bindery_config *cfg, char *out, size_t outlen)
{
	const struct config_clamd *c = &cfg->scan_clamd;
	int n;

	if (c->kind == CONFIG_CLAMD_NONE)
		return -1;
	if (c->kind == CONFIG_CLAMD_UNIX)
		n = snprintf(out, outlen, "unix:%s", c->path);
	else if (strchr(c->host, ':') != NULL)
		n = snprintf(out, outlen, "[%s]:%u", c->host, c->port);
	else
		n = snprintf(out, outlen, "%s:%u", c->host, c->port);
	return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

/* clamd could not be reached or could not answer: refuse, or admit
 * unscanned when the configuration says so (and say so in the log). */
static enum proto_result
scanner_error(const struct admission *a, const char *what)
{
	if (a->cfg->scan_on_error == CONFIG_SCAN_ADMIT) {
		log_warn("scan: %s; admitted unscanned (on_scanner_error = admit)", what);
		return PROTO_OK;
	}
	log_error("scan: %s; refused for now (on_scanner_error = refuse)", what);
	return PROTO_SCAN_UNAVAILABLE;
}

static struct admission *
admission_new(struct services *s)
{
	struct admission *a = calloc(1, sizeof *a);

	if (a == NULL)
		return NULL;
	a->cfg = s->cfg;
	if (config_upload_sniffs(s->cfg) && (a->head = malloc(SNIFF_BYTES)) == NULL) {
		free(a);
		return NULL;
	}
	return a;
}

/* Open clamd's stream when [scan] is set.  PROTO_OK also when it could not
 * be reached but the configuration admits unscanned (a->scan NULL then). */
static enum proto_result
open_scan(struct admission *a)
{
	char addr[ADMISSION_CLAMD_ADDRESS_MAX];
	struct clamd_verdict v;
	enum clamd_err ce;

	if (a->cfg->scan_clamd.kind == CONFIG_CLAMD_NONE)
		return PROTO_OK;
	if (admission_clamd_address(a->cfg, addr, sizeof addr) != 0)
		return PROTO_FAILED;
	ce = clamd_open(addr, (int)a->cfg->scan_timeout * 1000, &a->scan);
	if (ce != CLAMD_OK) {
		log_error("scan: clamd at %s: %s", addr, clamd_err_str(ce));
		return ce == CLAMD_ERR_NOMEM ? PROTO_FAILED : PROTO_SCAN_UNAVAILABLE;
	}
	/* Unreachable now: refuse before a byte is stored, or go on unscanned. */
	if (clamd_settled(a->scan)) {
		enum clamd_result r = clamd_finish(a->scan, &v);

		clamd_free(a->scan);
		a->scan = NULL;
		return r == CLAMD_UNAVAILABLE ? scanner_error(a, v.message) : PROTO_SCAN_UNAVAILABLE;
	}
	return PROTO_OK;
}

/* The type of the bytes in head: refused, or the one to record in a->type. */
static enum proto_result
judge_type(struct admission *a, const char *declared)
{
	char sniffed[SNIFF_TYPE_MAX] = "";
	enum sniff_err se;

	if (a->head == NULL)
		return copy_cstr(a->type, sizeof a->type, declared) == 0 ? PROTO_OK : PROTO_FAILED;
	se = sniff_buffer((struct span){ a->head, a->head_len }, sniffed, sizeof sniffed);
	if (se == SNIFF_UNAVAILABLE)
		return PROTO_UNAVAILABLE;
	/* Bytes libmagic gave up on are a type no list names. */
	if (a->cfg->upload_allowed_types.n > 0 &&
	    (se != SNIFF_OK || !mime_list_allows(&a->cfg->upload_allowed_types, span_from_cstr(sniffed)))) {
		log_info("admission: type %s (declared %s) is not in allowed_types: refused",
			 se == SNIFF_OK ? sniffed : "unreadable", declared);
		return PROTO_TYPE_REFUSED;
	}
	if (config_upload_content_type(a->cfg) == CONFIG_CONTENT_TYPE_SNIFFED && se == SNIFF_OK)
		declared = sniffed;
	return copy_cstr(a->type, sizeof a->type, declared) == 0 ? PROTO_OK : PROTO_FAILED;
}

/* The body handed on: the first bytes again, then the rest, each byte to
 * clamd on its way to storage. */
static long
admission_read(void *ctx, char *buf, size_t len)
{
	struct admission *a = ctx;
	long got;

	if (a->head_pos < a->head_len) {
		size_t n = a->head_len - a->head_pos;

		if (n > len)
			n = len;
		memcpy(buf, a->head + a->head_pos, n);
		a->head_pos += n;
		a->total += n;
		return (long)n;
	}
	got = a->in.read(a->in.ctx, buf, len);
	if (got > 0) {
		if (a->scan != NULL)
			clamd_feed(a->scan, buf, (size_t)got);
		a->total += (uint64_t)got;
	} else if (got == 0) {
		a->eof = 1;
	}
	return got;
}

enum proto_result
admission_begin(struct services *s, const struct proto_body *in, struct proto_body *out, struct admission **adm)
{
	struct admission *a = NULL;
	enum proto_result pr = PROTO_FAILED;
	long got;

	*adm = NULL;
	*out = *in;
	if (!admission_configured(s->cfg))
		return PROTO_OK;
	if ((a = admission_new(s)) == NULL)
		goto out;
	a->in = *in;
	if (a->head != NULL) {
		while (a->head_len < SNIFF_BYTES &&
		       (got = in->read(in->ctx, a->head + a->head_len, SNIFF_BYTES - a->head_len)) > 0)
			a->head_len += (size_t)got;
		if (a->head_len < SNIFF_BYTES) {
			if (got < 0) {
				pr = PROTO_BODY_ERROR;
				goto out;
			}
			a->eof = 1;
		}
	}
	if ((pr = judge_type(a, in->content_type)) != PROTO_OK || (pr = open_scan(a)) != PROTO_OK)
		goto out;
	if (a->scan != NULL && a->head_len > 0)
		clamd_feed(a->scan, a->head, a->head_len);
	out->read = admission_read;
	out->ctx = a;
	out->content_type = a->type;
	out->admit = a;
	*adm = a;
	a = NULL;
out:
	admission_free(a);
	return pr;
}

/* The scan's verdict on a whole stream. */
static enum proto_result
scan_verdict(struct admission *a)
{
	struct clamd_verdict v;

	if (a->scan == NULL)
		return PROTO_OK;
	switch (clamd_finish(a->scan, &v)) {
	case CLAMD_CLEAN:
		return PROTO_OK;
	case CLAMD_INFECTED:
		log_error("scan: infected (%s): refused", v.signature);
		return PROTO_INFECTED;
	case CLAMD_LIMIT:
		/* Never clean, whatever on_scanner_error says: clamd did not
		 * look at all of it (conf/clamd-bindery.conf raises the limits). */
		log_error("scan: clamd did not scan it all (%s): refused; raise clamd's limits to the"
			  " largest upload", v.message);
		return PROTO_SCAN_UNAVAILABLE;
	case CLAMD_UNAVAILABLE:
		break;
	}
	return scanner_error(a, v.message);
}

enum proto_result
admission_verdict(struct admission *a)
{
	if (a == NULL)
		return PROTO_OK;
	/* Storage stops reading at the declared length without asking for
	 * the end; either way every byte must have passed. */
	if (!a->eof && !(a->in.expected_size >= 0 && a->total == (uint64_t)a->in.expected_size)) {
		log_error("admission: the body was not read to its end (%llu bytes): no verdict",
			  (unsigned long long)a->total);
		return PROTO_FAILED;
	}
	return scan_verdict(a);
}

enum proto_result
admission_stored_begin(struct services *s, struct admission **adm)
{
	struct admission *a;
	enum proto_result pr;

	*adm = NULL;
	if (!admission_configured(s->cfg))
		return PROTO_OK;
	if ((a = admission_new(s)) == NULL)
		return PROTO_FAILED;
	if ((pr = open_scan(a)) != PROTO_OK) {
		admission_free(a);
		return pr;
	}
	*adm = a;
	return PROTO_OK;
}

void
admission_stored_data(struct admission *a, const char *data, size_t len)
{
	if (a == NULL)
		return;
	if (a->head != NULL && a->head_len < SNIFF_BYTES) {
		size_t n = SNIFF_BYTES - a->head_len;

		if (n > len)
			n = len;
		memcpy(a->head + a->head_len, data, n);
		a->head_len += n;
	}
	if (a->scan != NULL)
		clamd_feed(a->scan, data, len);
	a->total += len;
}

enum proto_result
admission_stored_end(struct admission *a, int complete, const char *declared, char *type, size_t typelen)
{
	enum proto_result pr;

	if (a == NULL)
		return copy_cstr(type, typelen, declared) == 0 ? PROTO_OK : PROTO_FAILED;
	if (!complete)
		return PROTO_FAILED;
	if ((pr = judge_type(a, declared)) != PROTO_OK || (pr = scan_verdict(a)) != PROTO_OK)
		return pr;
	return copy_cstr(type, typelen, a->type) == 0 ? PROTO_OK : PROTO_FAILED;
}

void
admission_free(struct admission *a)
{
	if (a == NULL)
		return;
	clamd_free(a->scan);
	free(a->head);
	free(a);
}
