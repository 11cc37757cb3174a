/* answer.c - see answer.h. */
#include <stdio.h>

#include "answer.h"
#include "protocol/tus.h"
#include "render.h"

/* Seconds a client waits before it asks again after a 503. */
#define RETRY_AFTER 5
/* An api field that matches every API: the result's usual answer. */
#define ANY_API (-1)

struct answer_row {
	enum proto_result result;
	int api;		/* enum answer_api, or ANY_API */
	int status;
	const char *code;
	const char *message;
	unsigned retry_after;	/* seconds of Retry-After; 0: none */
	const char *kept;	/* PROTO_BODY_ERROR: what became of the upload */
};

/*
 * The one table.  A row for (result, API) comes before the result's
 * ANY_API row and wins over it; a result with no row at all is a bug and
 * answers 500 internal.  A 5xx is a failed dependency or a bug, never the
 * client's fault (doc/design.md I6); a Retry-After tells a client that
 * trying again is right.
 */
static const struct answer_row answers[] = {
	/* tus clients retry every 409 and 423 (tus-js-client for minutes on
	 * end, a 409 being tus's offset mismatch): a taken name must be a
	 * status they give up on (doc/design.md, "Names taken"). */
	{ PROTO_NAME_TAKEN, ANSWER_TUS, 422, "name_taken", "a document with this name exists", 0, NULL },
	{ PROTO_NAME_TAKEN, ANY_API, 409, "name_taken", "a document with this name exists", 0, NULL },
	{ PROTO_NOT_FOUND, ANSWER_TUS, 404, "not_found", "no such upload", 0, NULL },
	{ PROTO_NOT_FOUND, ANSWER_DIRECT, 404, "not_found", "no such direct upload", 0, NULL },
	{ PROTO_NOT_FOUND, ANY_API, 404, "not_found", "no such document", 0, NULL },
	{ PROTO_FORBIDDEN, ANY_API, 403, "forbidden", "the document belongs to another owner", 0, NULL },
	{ PROTO_STALE, ANY_API, 412, "precondition_failed", "If-Match does not match the document's ETag",
	  0, NULL },
	/* tus keeps every whole block a broken PATCH delivered: HEAD says where to go on. */
	{ PROTO_BODY_ERROR, ANSWER_TUS, 400, "bad_body",
	  "the request body ended early; the whole blocks received are kept", 0,
	  "the whole blocks received are kept" },
	{ PROTO_BODY_ERROR, ANY_API, 400, "bad_body", "the request body could not be read", 0,
	  "the upload was abandoned" },
	{ PROTO_IDEM_IN_PROGRESS, ANY_API, 409, "idempotency_in_progress",
	  "a request with this Idempotency-Key is in progress", 1, NULL },
	{ PROTO_IDEM_MISMATCH, ANY_API, 422, "idempotency_mismatch",
	  "this Idempotency-Key was used for a different request", 0, NULL },
	{ PROTO_DEADLINE, ANY_API, 503, "deadline_exceeded", "the request ran out of time", RETRY_AFTER, NULL },
	{ PROTO_UNAVAILABLE, ANSWER_READ, 503, "unavailable", "the database is unavailable", RETRY_AFTER, NULL },
	{ PROTO_UNAVAILABLE, ANSWER_DOWNLOAD, 503, "unavailable", "storage is unavailable", RETRY_AFTER, NULL },
	{ PROTO_UNAVAILABLE, ANY_API, 503, "unavailable", "a dependency is unavailable; try again",
	  RETRY_AFTER, NULL },
	/* The log names the service's code and request id; the client learns
	 * only that storage, not its request, was at fault. */
	{ PROTO_STORAGE_ERROR, ANSWER_DOWNLOAD, 502, "storage_error", "storage refused the request", 0, NULL },
	{ PROTO_STORAGE_ERROR, ANY_API, 502, "storage_error", "storage refused the request; nothing was stored",
	  0, NULL },
	{ PROTO_FAILED, ANSWER_DOWNLOAD, 500, "internal", "cannot sign a download link", 0, NULL },
	/* Reads. */
	{ PROTO_BYTES_CHANGED, ANY_API, 500, "bytes_changed",
	  "the document's bytes changed in storage after they were committed; they are not served", 0, NULL },
	{ PROTO_BYTES_MISSING, ANY_API, 500, "internal", "the document's bytes are missing", 0, NULL },
	/* Resumable uploads. */
	{ PROTO_OFFSET_MISMATCH, ANY_API, 409, "offset_mismatch",
	  "Upload-Offset is not the upload's offset; ask HEAD", 0, NULL },
	{ PROTO_BUSY, ANY_API, 409, "upload_busy", "another request is writing this upload", 1, NULL },
	{ PROTO_CHECKSUM_MISMATCH, ANY_API, 460, "checksum_mismatch",
	  "Upload-Checksum does not match the body; nothing of it was kept", 0, NULL },
	{ PROTO_CHUNK_TOO_SMALL, ANY_API, 400, "chunk_too_small",
	  "at this chunk size the upload cannot finish within 50000 blocks; send larger chunks", 0, NULL },
	{ PROTO_TOO_LARGE, ANY_API, 413, "too_large", "the body goes past Upload-Length", 0, NULL },
	{ PROTO_FINISHED, ANY_API, 409, "upload_finished", "the upload is complete; its document is ready",
	  0, NULL },
	/* tus concatenation: 422 rather than 409 for a claimed partial, which
	 * no retry changes (tus clients retry every 409). */
	{ PROTO_FINAL_UPLOAD, ANY_API, 403, "final_upload",
	  "a final upload is assembled from its partial uploads and takes no PATCH", 0, NULL },
	{ PROTO_NOT_PARTIAL, ANY_API, 400, "not_partial",
	  "Upload-Concat: final names an upload that is not a partial upload", 0, NULL },
	{ PROTO_PARTIAL_INCOMPLETE, ANY_API, 400, "partial_incomplete",
	  "Upload-Concat: final names a partial upload that is not complete", 0, NULL },
	{ PROTO_PARTIAL_CLAIMED, ANY_API, 422, "partial_claimed",
	  "a partial upload this final names belongs to another final upload", 0, NULL },
	/* Direct uploads. */
	{ PROTO_NOT_UPLOADED, ANY_API, 409, "not_uploaded", "no blob has been uploaded to upload_url yet", 0,
	  NULL },
	{ PROTO_SIZE_MISMATCH, ANY_API, 422, "size_mismatch", "the uploaded blob is not the declared size", 0,
	  NULL },
	{ PROTO_NOT_ONE_PUT, ANY_API, 422, "not_one_put_blob",
	  "upload_url takes one Put Blob of a block blob (no copy, snapshot, page or append blob); it was"
	  " deleted: upload again", 0, NULL },
	{ PROTO_DIGEST_MISMATCH, ANY_API, 422, "sha256_mismatch",
	  "the uploaded bytes do not have the declared sha256", 0, NULL },
	{ PROTO_GONE, ANY_API, 410, "upload_gone",
	  "this Idempotency-Key's direct upload is over (its document was deleted or replaced, or it"
	  " expired unfinished): use a new key", 0, NULL },
	/* Admission: nothing of a refused upload is kept. */
	{ PROTO_TYPE_REFUSED, ANY_API, 415, "type_not_allowed",
	  "the content's type (read from its bytes) is not one this server accepts; nothing was kept", 0, NULL },
	{ PROTO_INFECTED, ANY_API, 422, "infected", "the malware scanner found something in it; nothing was kept",
	  0, NULL },
	{ PROTO_QUOTA, ANY_API, 413, "quota_exceeded",
	  "this upload would take its owner past a quota; nothing was stored", 0, NULL },
	{ PROTO_SCAN_UNAVAILABLE, ANY_API, 503, "scan_unavailable",
	  "the malware scanner could not check the upload; try again", RETRY_AFTER, NULL },
};

static const struct answer_row internal = {
	PROTO_FAILED, ANY_API, 500, "internal", "internal error", 0, NULL
};

static const struct answer_row *
answer_row_of(enum answer_api api, enum proto_result pr)
{
	size_t i;

	for (i = 0; i < sizeof answers / sizeof answers[0]; i++)
		if (answers[i].result == pr && (answers[i].api == (int)api || answers[i].api == ANY_API))
			return &answers[i];
	return &internal;
}

void
answer_failure(struct request *r, enum answer_api api, enum proto_result pr, unsigned retry_after)
{
	const struct answer_row *row = answer_row_of(api, pr);

	if (pr == PROTO_BODY_ERROR)
		answer_body_unread(r, row->message, row->kept);
	else if (row->retry_after)
		resp_error_retry(r, row->status, row->code, row->message,
				 retry_after ? retry_after : row->retry_after);
	else
		resp_error(r, row->status, row->code, row->message);
}

void
answer_body_unread(struct request *r, const char *message, const char *kept)
{
	char text[256];

	if (r->body_timeout) {
		snprintf(text, sizeof text, "the request body arrived too slowly; %s", kept);
		resp_error(r, 408, "body_timeout", text);
	} else if (r->body_interrupted) {
		snprintf(text, sizeof text, "the responder was interrupted while it read the body;"
			 " %s; send it again", kept);
		resp_error_retry(r, 503, "interrupted", text, 1);
	} else {
		resp_error(r, 400, "bad_body", message);
	}
}

void
answer_document(struct request *r, int status, const struct doc *d, int replayed)
{
	struct buf extra = BUF_INIT(512);
	char etag[64];

	render_doc_etag(d, etag, sizeof etag);
	if (buf_appendf(&extra, "ETag: %s\r\n", etag) != BUF_OK ||
	    (replayed && buf_append_cstr(&extra, ANSWER_REPLAYED_HEADER) != BUF_OK) ||
	    (status == 201 &&
	     req_location_append(r, &extra, "/documents/%llu", (unsigned long long)d->id) != BUF_OK)) {
		resp_error(r, 500, "internal", "out of memory");
		goto out;
	}
	resp_json(r, status, render_doc_json(d), buf_cstr(&extra));
out:
	buf_free(&extra);
}

void
answer_name_taken(struct app *app, struct request *r, enum answer_api api, struct span name)
{
	char id[UPLOAD_ID_MAX];
	struct buf upload = BUF_INIT(512);

	/* doc/design.md: a name held by the caller's own resumable upload says which. */
	if (r->back_to_page || r->owner == NULL ||
	    tus_find_pending(app->svc, name, r->owner, id, sizeof id) != PROTO_OK ||
	    id[0] == '\0') {
		answer_failure(r, api, PROTO_NAME_TAKEN, 0);
		goto out;
	}
	if (req_url_append(r, &upload, "/uploads/%s", id) != BUF_OK) {
		resp_error(r, 500, "internal", "out of memory");
		goto out;
	}
	resp_json(r, answer_row_of(api, PROTO_NAME_TAKEN)->status,
		  json_pack("{s:s, s:s, s:s}", "error", "name_taken", "message",
			    "your upload of this name is under way", "upload", buf_cstr(&upload)), NULL);
out:
	buf_free(&upload);
}
