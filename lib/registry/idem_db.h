/*
 * idem_db.h - idempotency keys (the idempotency_keys table): a create's
 * Idempotency-Key, the intent it started and, once the document is ready,
 * the answer a retry of the same request gets.  A key's row is written and
 * dropped with its intent inside docs_db's transactions; here are its reads
 * and the statements that move it alone.  No storage.
 */
#ifndef BINDERY_IDEM_DB_H
#define BINDERY_IDEM_DB_H

#include <stdint.h>

#include "base/compat.h"
#include "base/state.h"
#include "registry/db.h"
#include "registry/doc_row.h"

/* The status a create answers, recorded with its key (the registry knows no HTTP otherwise). */
#define IDEM_STATUS_CREATED 201

struct idem_row {
	uint64_t document_id;
	char blob_name[DOC_BLOB_NAME_MAX];
	char doc_name[DOC_NAME_MAX];
	char content_type[DOC_CTYPE_MAX];	/* the request's; "" when unknown (older rows) */
	enum upload_route route;	/* the route of the request that wrote it */
	uint64_t status_code;		/* 0 while unfinished */
	char sha256[DOC_SHA256_HEX];	/* the body's, once finished */
	int expired;			/* finished and older than the TTL: as if absent */
	int has_answer;			/* answer holds the recorded document */
	struct doc answer;		/* as answered (ready), when has_answer */
};
/*
 * The key's record.  A finished key created more than ttl seconds ago
 * comes back with expired set (the database's clock decides); an unfinished
 * key never expires.
 */
BINDERY_NODISCARD enum db_err idem_get(struct db *db, const char *owner, const char *key, unsigned ttl,
				       struct idem_row *out);
/*
 * Record the answer of the key whose intent is blob_name, as the fields of
 * the document that is ready on that blob now (status IDEM_STATUS_CREATED).
 * docs_mark_ready and the sweeper's roll forward run it inside their ready
 * transaction, so a document never becomes ready with its key unanswered;
 * alone it finishes a key an older bindery left unanswered.  No key, or no
 * document ready on the blob: nothing changes, DB_OK.
 */
BINDERY_NODISCARD enum db_err idem_record_ready(struct db *db, const char *blob_name);
/*
 * Forget the key if it is finished and older than ttl seconds, so a new
 * request may use it again.  DB_OK whether or not a row went.
 */
BINDERY_NODISCARD enum db_err idem_drop_expired(struct db *db, const char *owner, const char *key,
						unsigned ttl);

#endif
