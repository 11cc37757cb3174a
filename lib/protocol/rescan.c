/* rescan.c - see rescan.h. */
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "protocol/admission.h"
#include "protocol/protocol_internal.h"
#include "protocol/reads.h"
#include "protocol/rescan.h"
#include "registry/docs_db.h"

const char *
rescan_outcome_name(enum rescan_outcome o)
{
	switch (o) {
	case RESCAN_CLEAN: return "clean";
	case RESCAN_INFECTED: return "infected";
	case RESCAN_LIMIT:
	case RESCAN_NO_VERDICT: return "not_scanned";
	case RESCAN_CHANGED: return "changed";
	case RESCAN_MISSING: return "missing";
	case RESCAN_UNREADABLE: return "unreadable";
	case RESCAN_STOP_SCANNER: return "scanner_down";
	case RESCAN_STOP_STORAGE: return "storage_down";
	}
	return "unknown";
}

enum rescan_outcome
rescan_decide(enum proto_result read, int stopped, enum clamd_result verdict)
{
	switch (read) {
	case PROTO_BYTES_CHANGED: return RESCAN_CHANGED;
	case PROTO_BYTES_MISSING: return RESCAN_MISSING;
	case PROTO_STORAGE_ERROR: return RESCAN_UNREADABLE;
	case PROTO_OK: break;
	default:
		/* Cut by the scan: clamd's answer is the verdict.  Cut by
		 * storage: clamd saw part of the bytes, no verdict on them. */
		if (!stopped)
			return RESCAN_STOP_STORAGE;
		break;
	}
	switch (verdict) {
	case CLAMD_INFECTED: return RESCAN_INFECTED;
	case CLAMD_LIMIT: return RESCAN_LIMIT;
	/* An "OK" before the end is no verdict (clamd_reply_parse); only a
	 * whole read can be clean. */
	case CLAMD_CLEAN: return read == PROTO_OK ? RESCAN_CLEAN : RESCAN_STOP_SCANNER;
	case CLAMD_UNAVAILABLE: break;
	}
	return RESCAN_STOP_SCANNER;
}

/* One document's read on its way to clamd. */
struct rescan_stream {
	struct clamd *scan;
	int stopped;		/* clamd settled: the read was stopped here */
};

static int
rescan_data(void *ctx, const char *data, size_t len)
{
	struct rescan_stream *rs = ctx;

	clamd_feed(rs->scan, data, len);
	/* A limit or a failure settles the stream: reading on is for nothing. */
	if (clamd_settled(rs->scan)) {
		rs->stopped = 1;
		return 1;
	}
	return 0;
}

/* The run's state between documents. */
struct rescan_run_state {
	struct services *s;
	const struct rescan_opts *o;
	struct rescan_report *rep;
	char addr[ADMISSION_CLAMD_ADDRESS_MAX];
	int timeout_ms;
	struct doc *batch;		/* o->batch documents as read */
	size_t n;
};

/* Read d's bytes through clamd: the outcome, and clamd's verdict in *v. */
static enum rescan_err
scan_one(struct rescan_run_state *st, const struct doc *d, enum rescan_outcome *out, struct clamd_verdict *v)
{
	struct rescan_stream rs = { NULL, 0 };
	enum proto_result got = PROTO_UNAVAILABLE;
	enum clamd_result verdict = CLAMD_UNAVAILABLE;
	enum clamd_err ce;

	memset(v, 0, sizeof *v);
	ce = clamd_open(st->addr, st->timeout_ms, &rs.scan);
	if (ce != CLAMD_OK) {
		snprintf(st->rep->cause, sizeof st->rep->cause, "clamd at %s: %s", st->addr, clamd_err_str(ce));
		return ce == CLAMD_ERR_NOMEM ? RESCAN_ERR_FAILED : RESCAN_ERR_SCANNER;
	}
	/* Unreachable at the open: no byte is read for nothing. */
	if (clamd_settled(rs.scan))
		rs.stopped = 1;
	else
		got = reads_download(st->s, d, 0, 0, NULL, rescan_data, &rs);
	if (got == PROTO_OK || rs.stopped)
		verdict = clamd_finish(rs.scan, v);
	st->rep->bytes += clamd_fed(rs.scan);
	clamd_free(rs.scan);
	*out = rescan_decide(got, rs.stopped, verdict);
	if (*out == RESCAN_STOP_STORAGE)
		snprintf(st->rep->cause, sizeof st->rep->cause,
			 "reading document %llu's blob %s: storage did not answer (the log says how)",
			 (unsigned long long)d->id, d->blob_name);
	return RESCAN_OK;
}

/* An infected document taken out of every read, only on the bytes scanned. */
static enum rescan_err
hold(struct rescan_run_state *st, const struct doc *d, const struct clamd_verdict *v, enum rescan_hold *h)
{
	int changed = 0;
	enum db_err e;

	if (d->quarantined_at[0] != '\0') {
		*h = RESCAN_HOLD_BEFORE;
		return RESCAN_OK;
	}
	*h = RESCAN_HOLD_NONE;
	if (!st->o->quarantine)
		return RESCAN_OK;
	e = docs_quarantine(st->s->db, d->id, d->blob_name, &changed);
	if (e == DB_NOT_FOUND) {
		*h = RESCAN_HOLD_MOVED;
		return RESCAN_OK;
	}
	if (e != DB_OK) {
		st->rep->db = e;
		snprintf(st->rep->cause, sizeof st->rep->cause, "quarantining document %llu: database %s",
			 (unsigned long long)d->id, db_err_name(e));
		return RESCAN_ERR_DB;
	}
	*h = changed ? RESCAN_HOLD_NOW : RESCAN_HOLD_BEFORE;
	if (changed) {
		st->rep->quarantined++;
		/* Readers stop seeing it: the log keeps who did it and why. */
		log_warn("scan: document %llu (blob %s, owner %s) quarantined: %s", (unsigned long long)d->id,
			 d->blob_name, d->owner, v->signature);
	}
	return RESCAN_OK;
}

/* What clamd or storage said about d, for the finding's detail. */
static void
finding_detail(enum rescan_outcome o, const struct doc *d, const struct clamd_verdict *v, char *out,
	       size_t outlen)
{
	switch (o) {
	case RESCAN_CHANGED:
		snprintf(out, outlen, "blob %s is not the one committed (its ETag is no longer %s): not judged",
			 d->blob_name, d->blob_etag[0] ? d->blob_etag : "recorded");
		break;
	case RESCAN_MISSING:
		snprintf(out, outlen, "blob %s is missing (bindery audit reports it)", d->blob_name);
		break;
	case RESCAN_UNREADABLE:
		snprintf(out, outlen, "storage refused the read of blob %s (the log says why)", d->blob_name);
		break;
	case RESCAN_LIMIT:
		snprintf(out, outlen, "past a clamd limit, not scanned: %s", v->message);
		break;
	default:
		snprintf(out, outlen, "clamd: %s", v->message);
		break;
	}
}

/* Whether clamd still answers, after it gave no verdict for a document. */
static enum rescan_err
scanner_still_there(struct rescan_run_state *st, const struct clamd_verdict *v)
{
	char msg[CLAMD_MESSAGE_MAX];

	if (clamd_ping(st->addr, st->timeout_ms, msg, sizeof msg) == CLAMD_OK)
		return RESCAN_OK;
	snprintf(st->rep->cause, sizeof st->rep->cause, "clamd at %s: %s (then: %s)", st->addr, v->message, msg);
	return RESCAN_ERR_SCANNER;
}

/* One document: read, judged, held when asked, reported. */
static enum rescan_err
rescan_doc(struct rescan_run_state *st, const struct doc *d)
{
	struct rescan_report *rep = st->rep;
	struct rescan_finding f;
	struct clamd_verdict v;
	enum rescan_outcome o;
	char detail[CLAMD_MESSAGE_MAX + 256];
	enum rescan_err re;

	if ((re = scan_one(st, d, &o, &v)) != RESCAN_OK)
		return re;
	if (o == RESCAN_STOP_STORAGE)
		return RESCAN_ERR_STORAGE;
	if (o == RESCAN_STOP_SCANNER) {
		/* One document clamd could not finish in time is not the
		 * scanner gone: it is reported, and the run goes on. */
		if ((re = scanner_still_there(st, &v)) != RESCAN_OK)
			return re;
		o = RESCAN_NO_VERDICT;
	}
	rep->documents++;
	memset(&f, 0, sizeof f);
	f.doc = d;
	f.outcome = o;
	f.hold = d->quarantined_at[0] != '\0' ? RESCAN_HOLD_BEFORE : RESCAN_HOLD_NONE;
	f.signature = o == RESCAN_INFECTED || o == RESCAN_LIMIT ? v.signature : "";
	if (f.hold == RESCAN_HOLD_BEFORE)
		rep->held++;
	switch (o) {
	case RESCAN_CLEAN: rep->clean++; break;
	case RESCAN_INFECTED: rep->infected++; break;
	case RESCAN_CHANGED: rep->changed++; break;
	case RESCAN_MISSING: rep->missing++; break;
	case RESCAN_UNREADABLE: rep->unreadable++; break;
	default: rep->not_scanned++; break;
	}
	if (o == RESCAN_INFECTED && (re = hold(st, d, &v, &f.hold)) != RESCAN_OK)
		return re;
	/* A clean document that is not held is the one thing not reported. */
	if (o == RESCAN_CLEAN && f.hold == RESCAN_HOLD_NONE)
		return RESCAN_OK;
	finding_detail(o, d, &v, detail, sizeof detail);
	f.detail = detail;
	if (st->o->on_finding != NULL && st->o->on_finding(st->o->ctx, &f) != 0) {
		snprintf(rep->cause, sizeof rep->cause, "the report could not be written");
		return RESCAN_ERR_FAILED;
	}
	return RESCAN_OK;
}

static int
batch_row(void *ctx, const struct doc *d)
{
	struct rescan_run_state *st = ctx;

	st->batch[st->n++] = *d;
	return 0;
}

enum rescan_err
rescan_run(struct services *s, const struct rescan_opts *o, struct rescan_report *rep)
{
	struct rescan_run_state st;
	char msg[CLAMD_MESSAGE_MAX];
	uint64_t after = 0;
	enum rescan_err re = RESCAN_OK;
	enum db_err e;
	size_t i;

	memset(rep, 0, sizeof *rep);
	memset(&st, 0, sizeof st);
	st.s = s;
	st.o = o;
	st.rep = rep;
	st.timeout_ms = (int)s->cfg->scan_timeout * 1000;
	if (admission_clamd_address(s->cfg, st.addr, sizeof st.addr) != 0) {
		snprintf(rep->cause, sizeof rep->cause, "[scan] clamd is not set");
		return RESCAN_ERR_NO_SCANNER;
	}
	/* Before a byte is read: a clamd that is not there is the answer. */
	if (clamd_ping(st.addr, st.timeout_ms, msg, sizeof msg) != CLAMD_OK) {
		snprintf(rep->cause, sizeof rep->cause, "clamd at %s does not answer: %s", st.addr, msg);
		return RESCAN_ERR_SCANNER;
	}
	if ((st.batch = alloc_calloc(o->batch, sizeof *st.batch)) == NULL) {
		snprintf(rep->cause, sizeof rep->cause, "out of memory");
		return RESCAN_ERR_FAILED;
	}
	for (;;) {
		st.n = 0;
		if ((e = docs_walk_ready(s->db, after, o->prefix, o->batch, batch_row, &st)) != DB_OK) {
			rep->db = e;
			snprintf(rep->cause, sizeof rep->cause, "reading the ready documents: database %s",
				 db_err_name(e));
			re = RESCAN_ERR_DB;
			goto out;
		}
		for (i = 0; i < st.n; i++)
			if ((re = rescan_doc(&st, &st.batch[i])) != RESCAN_OK)
				goto out;
		if (st.n < o->batch)
			break;
		after = st.batch[st.n - 1].id;
	}
out:
	alloc_free(st.batch);
	return re;
}

enum proto_result
rescan_release(struct services *s, uint64_t id, int *changed, enum db_err *e)
{
	*changed = 0;
	*e = docs_release(s->db, id, changed);
	if (*e == DB_OK && *changed)
		log_warn("scan: document %llu released from quarantine", (unsigned long long)id);
	return proto_from_db(*e);
}
