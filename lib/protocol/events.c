/* events.c - see events.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <curl/curl.h>
#include <nettle/sha2.h>

#include "base/base64.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/counters.h"
#include "base/failpoint.h"
#include "base/log.h"
#include "base/rand.h"
#include "protocol/events.h"
#include "registry/events_db.h"
#include "storage/sign.h"

#define KEY_MAX 64
/* Events due fetched per receiver per round. */
#define DUE_BATCH 50
/* A claim outlives an attempt's timeout by this much. */
#define CLAIM_SLACK_S 30
/* Less than this left of a responder's budget: no attempt is started (it
 * could only time out, and the sweep retries it anyway). */
#define RESPONDER_MIN_ATTEMPT_MS 200

struct endpoint {
	char *url;
	char id[65];
	unsigned char key[KEY_MAX];
	size_t keylen;
	char *ca_file;
	unsigned timeout, max_age;
};

struct events_sender {
	struct endpoint ep[CONFIG_MAX_EVENT_ENDPOINTS];
	size_t n;
	unsigned backoff_max;
	char claimer[33];	/* this sender's claims */
	CURL *easy;
};

void
events_endpoint_id(const char *url, char out[65])
{
	struct sha256_ctx h;
	unsigned char d[SHA256_DIGEST_SIZE];

	sha256_init(&h);
	sha256_update(&h, strlen(url), (const uint8_t *)url);
	sha256_digest(&h, sizeof d, d);
	hex_lower(d, sizeof d, out);
}

int
events_secret_decode(struct span secret, unsigned char *key, size_t keycap, size_t *keylen)
{
	static const char prefix[] = "whsec_";

	if (secret.len <= sizeof prefix - 1 || memcmp(secret.ptr, prefix, sizeof prefix - 1) != 0)
		return -1;
	secret.ptr += sizeof prefix - 1;
	secret.len -= sizeof prefix - 1;
	return base64_decode_into(secret, key, keycap, keylen) == BASE64_OK && *keylen > 0 ? 0 : -1;
}

int
events_sign(const unsigned char *key, size_t keylen, const char *id, int64_t timestamp, const char *body,
	    size_t bodylen, struct buf *out)
{
	struct buf msg = BUF_INIT(EVENTS_BODY_MAX + 128);
	unsigned char mac[32];
	int rc = -1;

	buf_reset(out);
	if (buf_appendf(&msg, "%s.%lld.", id, (long long)timestamp) != BUF_OK ||
	    buf_append(&msg, body, bodylen) != BUF_OK ||
	    sign_hmac_sha256(key, keylen, msg.ptr, msg.len, mac) != SIGN_OK ||
	    buf_append_cstr(out, "v1,") != BUF_OK || base64_encode(mac, sizeof mac, out) != BASE64_OK)
		goto out;
	rc = 0;
out:
	explicit_bzero(mac, sizeof mac);
	buf_free(&msg);
	return rc;
}

void
events_sender_free(struct events_sender *s)
{
	size_t i;

	if (s == NULL)
		return;
	for (i = 0; i < s->n; i++) {
		free(s->ep[i].url);
		free(s->ep[i].ca_file);
	}
	if (s->easy != NULL) {
		curl_easy_cleanup(s->easy);
		curl_global_cleanup();
	}
	explicit_bzero(s, sizeof *s);
	free(s);
}

/* The secret file's one line, decoded into ep's key. */
static int
read_key(const char *path, struct endpoint *ep, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	char text[512];
	size_t n;
	int rc = -1;

	if (f == NULL) {
		snprintf(err, errlen, "[events] secret_file %s: %s", path, strerror(errno));
		return -1;
	}
	n = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[n] = '\0';
	while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == ' '))
		text[--n] = '\0';
	if (events_secret_decode((struct span){ text, n }, ep->key, sizeof ep->key, &ep->keylen) != 0)
		snprintf(err, errlen, "[events] secret_file %s: not a Standard Webhooks secret"
			 " (whsec_ followed by base64)", path);
	else
		rc = 0;
	explicit_bzero(text, sizeof text);
	return rc;
}

int
events_sender_new(const struct bindery_config *cfg, struct events_sender **out, char *err, size_t errlen)
{
	struct events_sender *s;
	const char *ids[CONFIG_MAX_EVENT_ENDPOINTS];
	size_t i;

	*out = NULL;
	events_db_configure(NULL, 0);
	if (cfg->nevents == 0)
		return 0;
	if ((s = calloc(1, sizeof *s)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	s->backoff_max = cfg->events_backoff_max;
	for (i = 0; i < cfg->nevents && i < CONFIG_MAX_EVENT_ENDPOINTS; i++) {
		struct endpoint *ep = &s->ep[i];

		s->n++;
		ep->url = strdup(cfg->events[i].url);
		ep->ca_file = cfg->events[i].ca_file ? strdup(cfg->events[i].ca_file) : NULL;
		ep->timeout = cfg->events[i].timeout;
		ep->max_age = cfg->events[i].max_age;
		if (ep->url == NULL || (cfg->events[i].ca_file && ep->ca_file == NULL)) {
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
		events_endpoint_id(ep->url, ep->id);
		if (read_key(cfg->events[i].secret_file, ep, err, errlen) != 0)
			goto fail;
		ids[i] = ep->id;
	}
	if (rand_hex(s->claimer, sizeof s->claimer, 16) != 0 || curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(err, errlen, "cannot start the events sender");
		goto fail;
	}
	if ((s->easy = curl_easy_init()) == NULL) {
		curl_global_cleanup();
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	events_db_configure(ids, s->n);
	*out = s;
	return 0;
fail:
	events_sender_free(s);
	return -1;
}

static size_t
discard(char *p, size_t size, size_t n, void *ctx)
{
	(void)p;
	(void)ctx;
	return size * n;
}

/* POST one event; the HTTP status (0: no answer, *why says why). */
static long
post(struct events_sender *s, const struct endpoint *ep, const struct events_due *ev, long timeout_ms, char *why,
     size_t whylen)
{
	struct buf sig = BUF_INIT(128), line = BUF_INIT(256);
	struct curl_slist *h = NULL, *n;
	char errbuf[CURL_ERROR_SIZE] = "", ts[24];
	int64_t now = (int64_t)time(NULL);
	long status = 0;
	CURLcode cc;

	why[0] = '\0';
	/* Each attempt is signed afresh at its own time: receivers refuse a
	 * stale webhook-timestamp. */
	snprintf(ts, sizeof ts, "%lld", (long long)now);
	if (events_sign(ep->key, ep->keylen, ev->webhook_id, now, ev->body, strlen(ev->body), &sig) != 0) {
		snprintf(why, whylen, "cannot sign");
		goto out;
	}
#define ADD_HEADER(fmt, ...)                                                   \
	do {                                                                   \
		buf_reset(&line);                                              \
		if (buf_appendf(&line, fmt, __VA_ARGS__) != BUF_OK ||          \
		    (n = curl_slist_append(h, buf_cstr(&line))) == NULL) {     \
			snprintf(why, whylen, "out of memory");                \
			goto out;                                              \
		}                                                              \
		h = n;                                                         \
	} while (0)
	ADD_HEADER("%s", "Content-Type: application/json");
	ADD_HEADER("webhook-id: %s", ev->webhook_id);
	ADD_HEADER("webhook-timestamp: %s", ts);
	ADD_HEADER("webhook-signature: %s", buf_cstr(&sig));
	ADD_HEADER("%s", "Expect:");
#undef ADD_HEADER
	curl_easy_reset(s->easy);
	curl_easy_setopt(s->easy, CURLOPT_URL, ep->url);
	curl_easy_setopt(s->easy, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(s->easy, CURLOPT_POSTFIELDS, ev->body);
	curl_easy_setopt(s->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(ev->body));
	curl_easy_setopt(s->easy, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(s->easy, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(s->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(s->easy, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(s->easy, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
	/* A receiver that redirects is not followed: the event stays for it. */
	curl_easy_setopt(s->easy, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(s->easy, CURLOPT_PROTOCOLS_STR, "http,https");
	if (ep->ca_file != NULL)
		curl_easy_setopt(s->easy, CURLOPT_CAINFO, ep->ca_file);
	cc = curl_easy_perform(s->easy);
	if (cc != CURLE_OK)
		snprintf(why, whylen, "%s", errbuf[0] ? errbuf : curl_easy_strerror(cc));
	else
		curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &status);
	if (cc == CURLE_OK && (status < 200 || status > 299))
		snprintf(why, whylen, "the receiver answered %ld", status);
out:
	curl_slist_free_all(h);
	buf_free(&sig);
	buf_free(&line);
	return status;
}

/* Exponential backoff from 1 s, capped, with jitter (half to all of it). */
static int64_t
backoff_ms(const struct events_sender *s, uint64_t attempts)
{
	int64_t cap = (int64_t)s->backoff_max * 1000, ms = 1000;
	char hex[5];
	unsigned r;

	while (attempts-- > 1 && ms < cap)
		ms *= 2;
	if (ms > cap)
		ms = cap;
	if (rand_hex(hex, sizeof hex, 2) != 0)
		return ms;
	r = (unsigned)strtoul(hex, NULL, 16);
	return ms / 2 + (ms / 2) * (int64_t)r / 65535;
}

struct due_list {
	struct events_due rows[DUE_BATCH];
	size_t n;
};

static int
collect_due(void *ctx, const struct events_due *d)
{
	struct due_list *l = ctx;

	if (l->n == DUE_BATCH)
		return 1;
	l->rows[l->n++] = *d;
	return 0;
}

/* Attempt one claimed event at one receiver, for at most timeout_ms, and
 * record the outcome. */
static enum db_err
attempt(struct events_sender *s, struct db *db, const struct endpoint *ep, const struct events_due *ev,
	long timeout_ms, struct events_report *rep)
{
	char why[256];
	long status;
	int dead;
	enum db_err e;

	status = post(s, ep, ev, timeout_ms, why, sizeof why);
	if (status >= 200 && status <= 299) {
		rep->delivered++;
		counters_add(COUNTER_EVENTS_DELIVERED, 1);
		return events_db_delivered(db, ev->event_id, ep->id, s->claimer, status);
	}
	if (status == 410) {
		/* The receiver says it is gone for good: stop sending to it. */
		log_warn("events: receiver %s answered 410 Gone: stopped (bindery events --resume)", ep->id);
		rep->stopped++;
		if ((e = events_db_stop_endpoint(db, ep->id, ep->url)) != DB_OK)
			return e;
	}
	dead = ev->age_s > (int64_t)ep->max_age;
	if (dead) {
		rep->dead++;
		counters_add(COUNTER_EVENTS_DEAD, 1);
		log_warn("events: %s %s of document %llu is dead for receiver %s after %llu attempts: %s",
			 ev->type, ev->webhook_id, (unsigned long long)ev->document_id, ep->id,
			 (unsigned long long)ev->attempts + 1, why);
	} else {
		rep->retried++;
		log_info("events: %s %s to receiver %s failed (attempt %llu): %s", ev->type, ev->webhook_id,
			 ep->id, (unsigned long long)ev->attempts + 1, why);
	}
	return events_db_failed(db, ev->event_id, ep->id, s->claimer, status, why,
				backoff_ms(s, ev->attempts + 1), dead);
}

void
events_after_commit(struct events_sender *s, struct db *db, uint64_t doc_id)
{
	struct events_report rep = { 0 };
	unsigned longest = 0;
	size_t i;
	enum db_err e;

	if (s == NULL)
		return;
	/* Tests stop a responder between its commit and its delivery: the
	 * event must still arrive, through the sweep. */
	if (FAILPOINT("events.after_commit"))
		return;
	for (i = 0; i < s->n; i++)
		if (s->ep[i].timeout > longest)
			longest = s->ep[i].timeout;
	e = events_deliver(s, db, doc_id, NULL, clock_now_ms() + (int64_t)longest * 1000, &rep);
	if (e != DB_OK)
		log_warn("events: document %llu's events wait for the sweep: %s", (unsigned long long)doc_id,
			 db_err_name(e));
}

enum db_err
events_deliver(struct events_sender *s, struct db *db, uint64_t doc_id, const char *prefix, int64_t deadline_ms,
	       struct events_report *rep)
{
	struct due_list *l = NULL;
	size_t i, k;
	enum db_err e = DB_OK;

	if (s == NULL)
		return DB_OK;
	if ((l = malloc(sizeof *l)) == NULL)
		return DB_NOMEM;
	for (i = 0; i < s->n && e == DB_OK; i++) {
		const struct endpoint *ep = &s->ep[i];
		size_t tried = 0;	/* attempts at this receiver */
		int more = 1;

		/* Rounds: a document's next event becomes due once the one
		 * before it is delivered. */
		while (more) {
			size_t sent = 0;

			l->n = 0;
			if ((e = events_db_due(db, ep->id, doc_id, prefix, DUE_BATCH, collect_due, l)) != DB_OK)
				break;
			for (k = 0; k < l->n && e == DB_OK; k++) {
				long budget = (long)ep->timeout * 1000L;

				if (deadline_ms > 0) {
					int64_t left = deadline_ms - clock_now_ms();

					/* A responder's answer waits about one
					 * receiver's timeout at most: every receiver
					 * gets one attempt within what is left of it,
					 * a further event only a whole timeout. */
					if (tried > 0 && left < budget) {
						more = 0;
						break;
					}
					if (left < RESPONDER_MIN_ATTEMPT_MS)
						goto out;
					if (left < budget)
						budget = (long)left;
				}
				e = events_db_claim(db, l->rows[k].event_id, ep->id, s->claimer,
						    ep->timeout + CLAIM_SLACK_S);
				/* Another sender has it; on Galera a claim two nodes
				 * made at once fails certification on one of them
				 * (DB_RETRY), which is the same answer. */
				if (e == DB_CONFLICT || e == DB_RETRY) {
					rep->busy++;
					e = DB_OK;
					continue;
				}
				if (e != DB_OK)
					break;
				if (FAILPOINT("events.before_send"))
					continue;	/* claimed, never sent: the claim runs out */
				e = attempt(s, db, ep, &l->rows[k], budget, rep);
				sent++;
				tried++;
			}
			/* Again while something moved: a delivered event makes its
			 * document's next one due; a failed one waits for its
			 * backoff, so every round ends the lot it found. */
			if (e != DB_OK || sent == 0)
				break;
		}
	}
out:
	free(l);
	return e;
}
