/*
 * tus_concat.h - the final upload of the tus concatenation extension
 * (doc/design.md, "Resumable uploads: concatenation").
 *
 * A final names the caller's own complete partial uploads in order.  Its
 * intent (a create, with the name and metadata the final carries) and the
 * claim of every partial are one transaction; the final's blob is then
 * assembled in storage (Put Block From URL of each partial's committed
 * blob, the bytes never crossing this host again), and committed, flipped
 * and made ready by the steps of any upload's last PATCH.  The answer comes
 * only once the document is ready; the partials' blobs are then deleted,
 * guarded by their ETags, and their rows marked consumed.  The same final
 * again (the same owner's same partials in the same order) is answered as
 * the first, resuming it if it did not finish.
 */
#ifndef BINDERY_TUS_CONCAT_H
#define BINDERY_TUS_CONCAT_H

#include <stddef.h>

#include "base/compat.h"
#include "protocol/tus.h"

struct tus_final {
	const char *owner;
	struct span name;		/* the document's name (checked by the caller) */
	const char *content_type;
	const char *const *ids;		/* the partials' upload ids, in order */
	size_t n;			/* 1 .. UPLOAD_CONCAT_MAX */
};

/*
 * POST /uploads with Upload-Concat: final.  PROTO_OK once the document is
 * ready (out names the final upload and its document).  PROTO_NOT_FOUND
 * (a partial that is not the caller's, or gone), PROTO_NOT_PARTIAL,
 * PROTO_PARTIAL_INCOMPLETE, PROTO_PARTIAL_CLAIMED (another final has it),
 * PROTO_NAME_TAKEN, PROTO_TOO_LARGE (past max_upload), PROTO_QUOTA,
 * PROTO_BUSY (a repeat while the first still works; out->retry_after), and
 * what a commit answers.
 */
BINDERY_NODISCARD enum proto_result tus_concat_final(struct services *s, const struct tus_final *req,
						     struct tus_state *out);

#endif
