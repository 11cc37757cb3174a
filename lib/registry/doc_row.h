/*
 * doc_row.h - a document as the registry reads it, and the sizes of the
 * columns the registry's tables share (a blob name, an owner, a hash, a
 * holder).  Every table's module takes them from here, below all of them,
 * so that none needs another table's header for a size: the documents
 * module (docs_db) builds its transactions on the others, never the other
 * way round.
 */
#ifndef BINDERY_DOC_ROW_H
#define BINDERY_DOC_ROW_H

#include <stdint.h>

#include "base/state.h"

#define DOC_NAME_MAX 1024	/* 255 characters of utf8mb4, plus NUL */
#define DOC_BLOB_NAME_MAX 201
#define DOC_OWNER_MAX 513
#define DOC_CTYPE_MAX 256
#define DOC_TIME_MAX 40
#define DOC_SHA256_HEX 65
#define DOC_HOLDER_MAX 97	/* an attempt id (32 hex) or a sweeper's claimer id, plus NUL */
#define DOC_ETAG_MAX 129	/* a storage ETag as sent (quotes included), plus NUL */

/* DATE_FORMAT's pattern for a DATETIME(6) as RFC 3339 UTC (fits DOC_TIME_MAX). */
#define DOC_TIME_SQL "'%Y-%m-%dT%H:%i:%s.%fZ'"

/* Which way a list of ready documents runs, by ready_seq: the order they
 * became ready, or the reverse.  A cursor (the last ready_seq seen) is a
 * keyset position in either direction, so rows that become ready while a
 * reader pages are neither skipped nor repeated. */
enum doc_order {
	DOC_ORDER_OLDEST = 0,	/* ready_seq ascending: the API's default */
	DOC_ORDER_NEWEST,	/* ready_seq descending: the page's default */
};

struct doc {
	uint64_t id;
	char name[DOC_NAME_MAX];
	enum doc_status status;
	char blob_name[DOC_BLOB_NAME_MAX];
	uint64_t size;
	char content_type[DOC_CTYPE_MAX];
	char sha256[DOC_SHA256_HEX];	/* lower-case hex; "" while pending */
	char owner[DOC_OWNER_MAX];
	uint64_t version;		/* moves on every replace (the API's ETag shows it) */
	char created_at[DOC_TIME_MAX];	/* RFC 3339 UTC */
	char updated_at[DOC_TIME_MAX];
	uint64_t ready_seq;		/* its place in the list: assigned when it became ready */
	char blob_etag[DOC_ETAG_MAX];	/* the committed blob's storage ETag; "" when not
					 * recorded (ready before 008): reads are pinned to it */
	char quarantined_at[DOC_TIME_MAX];	/* RFC 3339 UTC since `bindery scan
						 * --quarantine` took it out of every read
						 * (sql/018); "" when it is not */
};

#endif
