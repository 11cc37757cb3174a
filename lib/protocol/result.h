/*
 * result.h - the result every operation of lib/protocol/ answers with (the
 * responder maps each to one HTTP status: app/answer.c), and the request
 * body an upload reads.  Apart from protocol.h so that a module protocol.c
 * uses (admission.h) can name them without including protocol.h back.
 */
#ifndef BINDERY_PROTO_RESULT_H
#define BINDERY_PROTO_RESULT_H

#include <stdint.h>

#include "storage/blob.h"

enum proto_result {
	PROTO_OK = 0,
	PROTO_NAME_TAKEN,	/* 409 name_taken */
	PROTO_NOT_FOUND,	/* 404 */
	PROTO_FORBIDDEN,	/* 403: another owner's document */
	PROTO_STALE,		/* 412: If-Match did not match */
	PROTO_BODY_ERROR,	/* reading the request body failed: the caller knows why */
	PROTO_IDEM_IN_PROGRESS,	/* 409 idempotency_in_progress + Retry-After */
	PROTO_IDEM_MISMATCH,	/* 422: same key, different request */
	PROTO_UNAVAILABLE,	/* 503 + Retry-After: a dependency failed or the sweeper owns it */
	PROTO_DEADLINE,		/* 503: the request ran out of time */
	PROTO_FAILED,		/* 500 */
	PROTO_STORAGE_ERROR,	/* 502 storage_error: storage refused a request bindery
				 * built (a 400 such as Md5Mismatch); not the client's fault */
	/* Resumable uploads (tus.h): */
	PROTO_OFFSET_MISMATCH,	/* 409: Upload-Offset is not the upload's */
	PROTO_BUSY,		/* 409 + Retry-After: another PATCH holds the upload */
	PROTO_CHECKSUM_MISMATCH,/* 460: Upload-Checksum does not match the body */
	PROTO_CHUNK_TOO_SMALL,	/* 400: the rest cannot fit the block list's 50,000 blocks */
	PROTO_TOO_LARGE,	/* 413: more bytes than Upload-Length */
	PROTO_FINISHED,		/* 409: the upload's document is ready; nothing to terminate */
	/* tus concatenation (tus.h, tus_concat.h): */
	PROTO_FINAL_UPLOAD,	/* 403 final_upload: a final upload takes no PATCH */
	PROTO_NOT_PARTIAL,	/* 400 not_partial: a final names an upload that is no partial */
	PROTO_PARTIAL_INCOMPLETE,/* 400 partial_incomplete: a partial the final names is not complete */
	PROTO_PARTIAL_CLAIMED,	/* 422 partial_claimed: another final has claimed the partial */
	/* Direct uploads (direct.h): */
	PROTO_NOT_UPLOADED,	/* 409 not_uploaded: finalize found no blob at the name */
	PROTO_SIZE_MISMATCH,	/* 422: the blob is not the declared size */
	PROTO_DIGEST_MISMATCH,	/* 422: the bytes' SHA-256 is not the declared one */
	PROTO_NOT_ONE_PUT,	/* 422 not_one_put_blob: not one Put Blob of a block blob */
	PROTO_GONE,		/* 410 upload_gone: the key's intent is over, its rows gone */
	/* Reads (reads.h): */
	PROTO_BYTES_CHANGED,	/* 500 bytes_changed: the blob is not the one committed */
	PROTO_BYTES_MISSING,	/* 500: a ready document without its blob */
	/* Admission (admission.h): */
	PROTO_TYPE_REFUSED,	/* 415 type_not_allowed: the bytes' type is not in allowed_types */
	PROTO_INFECTED,		/* 422 infected: clamd named a signature */
	PROTO_SCAN_UNAVAILABLE,	/* 503 scan_unavailable: clamd could not answer (or hit a size limit) */
	PROTO_QUOTA,		/* 413 quota_exceeded: a [quota] limit of the owner would be passed */
	PROTO_RETRY,		/* internal to an operation: look again; never returned */
};

struct admission;

struct proto_body {
	blob_read_fn read;	/* the request body, streamed */
	void *ctx;
	int64_t expected_size;	/* Content-Length or -1 */
	const char *content_type;
	struct admission *admit;	/* set by admission_begin (NULL: nothing to judge) */
};

#endif
