/*
 * reads.h - how a document is read: by id, by name, as a list, and its
 * bytes.  Readers see ready documents only (doc/design.md, invariant I2): a
 * pending or retired row is "not found" here, whatever the registry holds,
 * and so is a quarantined one (doc/design.md, "Admission": `bindery scan
 * --quarantine`), in every list and count too.
 * The bytes served are the ones that were committed and nothing else
 * ("Conditional reads"): every download is pinned to the ETag the
 * document's row recorded when it became ready.
 */
#ifndef BINDERY_READS_H
#define BINDERY_READS_H

#include "base/buf.h"
#include "base/compat.h"
#include "protocol/protocol.h"

/* Document id when it is ready into *out: PROTO_OK, PROTO_NOT_FOUND (no
 * such id, or not ready yet), PROTO_UNAVAILABLE (the database). */
BINDERY_NODISCARD enum proto_result reads_get(struct services *s, uint64_t id, struct doc *out);

/* The ready document called name (compared exactly, as stored): the same
 * results as reads_get. */
BINDERY_NODISCARD enum proto_result reads_by_name(struct services *s, struct span name, struct doc *out);

/* Called for each document of a list, in list order; nonzero stops the list. */
typedef int (*reads_doc_fn)(void *ctx, const struct doc *d);

/*
 * At most limit ready documents past the cursor after (the ready_seq of
 * the last one a reader saw; 0: from the start) in order: oldest first is
 * the order they became ready, newest first its reverse; either way a
 * keyset cursor, so documents that become ready meanwhile are neither
 * skipped nor repeated.  Only names that begin with prefix (empty: every
 * name; at most DOCS_PREFIX_MAX bytes).  PROTO_OK, or PROTO_UNAVAILABLE.
 */
BINDERY_NODISCARD enum proto_result reads_list(struct services *s, enum doc_order order, uint64_t after,
					       struct span prefix, unsigned limit, reads_doc_fn on_doc,
					       void *ctx);

/* How many ready documents reads_list would walk through for prefix, in
 * all, into *out.  PROTO_OK, or PROTO_UNAVAILABLE. */
BINDERY_NODISCARD enum proto_result reads_count(struct services *s, struct span prefix, uint64_t *out);

/*
 * Stream bytes [start, start + len) of d's blob (len 0: to the end) while
 * the blob is still the one d committed: on_headers once before the first
 * byte, then on_data per chunk (nonzero from either stops the download).
 * No request deadline applies: a large document takes as long as its
 * reader.  A failure is logged here with storage's own words; the result
 * says what the reader is owed:
 *   PROTO_OK
 *   PROTO_BYTES_CHANGED   the blob's ETag is not d's (changed out of band)
 *   PROTO_BYTES_MISSING   a ready document without its blob
 *   PROTO_STORAGE_ERROR   storage refused a request bindery built
 *   PROTO_UNAVAILABLE     storage did not answer, or a callback stopped it
 * Once on_headers has run, only the caller knows the answer has begun.
 */
BINDERY_NODISCARD enum proto_result reads_download(struct services *s, const struct doc *d, uint64_t start,
						   uint64_t len, blob_headers_fn on_headers,
						   blob_data_fn on_data, void *ctx);

/*
 * A link that lets its holder read d's bytes straight from storage for
 * [download] sas_lifetime seconds, appended to url: storage answers it with
 * content_disposition and content_type instead of the blob's own headers
 * (both signed into the link).  PROTO_OK, or PROTO_FAILED (no key to sign
 * with, or no room), logged.
 */
BINDERY_NODISCARD enum proto_result reads_link(struct services *s, const struct doc *d,
					       const char *content_disposition, const char *content_type,
					       struct buf *url);

#endif
