/*
 * stamp.h - a blob's stamp: the metadata its committing call (Put Blob or
 * Put Block List, never Set Metadata after it, which would change the ETag
 * readers are pinned to) writes to name the installation and the document
 * it holds (doc/design.md, "Blobs that describe themselves").  After the
 * database is restored from an older backup, the stamps of the blobs
 * storage kept are what `bindery audit --repair --adopt` rebuilds rows from.
 *
 * The entries, beside the x-ms-meta-size and x-ms-meta-sha256 every upload
 * writes:
 *   bindery_installation  the installation's id (32 hex digits, install_db.h)
 *   bindery_document      the document's id, decimal
 *   bindery_version       the version the blob is committed as (a replace:
 *                         the one it expects to commit, its target's plus one)
 *   bindery_owner, bindery_name, bindery_content_type
 *                         percent-encoded UTF-8: every byte but the RFC 3986
 *                         unreserved characters (A-Z a-z 0-9 - . _ ~) as %XX,
 *                         upper-case hex, since a header value is ASCII
 *                         (decodeURIComponent, or any RFC 3986 decoder,
 *                         gives the text back)
 *   bindery_created       the document's creation time as the API shows it
 *                         (RFC 3339 UTC, microseconds)
 * Pure: no I/O.
 */
#ifndef BINDERY_STAMP_H
#define BINDERY_STAMP_H

#include <stdint.h>

#include "base/compat.h"
#include "registry/doc_row.h"
#include "registry/install_db.h"
#include "storage/blob.h"

#define STAMP_NMETA 7

struct stamp {
	char install[INSTALL_ID_LEN + 1];
	uint64_t doc_id;
	uint64_t version;
	char owner[DOC_OWNER_MAX];
	char name[DOC_NAME_MAX];
	char content_type[DOC_CTYPE_MAX];
	char created_at[DOC_TIME_MAX];
	/* What the upload wrote itself; read back by stamp_decode only. */
	int64_t size;			/* -1 when absent */
	char sha256[DOC_SHA256_HEX];	/* "" when absent */
};

/* The encoded entries, for blob_upload_opts.meta (v points into the struct). */
struct stamp_meta {
	struct blob_meta v[STAMP_NMETA];
	char doc[24], version[24];
	char owner[3 * DOC_OWNER_MAX], name[3 * DOC_NAME_MAX], ctype[3 * DOC_CTYPE_MAX];
};

/* The stamp of document d committed as version: install, and d's id,
 * owner, name, content type and creation time; -1 when a field does not
 * fit (a caller bug). */
BINDERY_NODISCARD int stamp_of_doc(struct stamp *st, const char *install, const struct doc *d, uint64_t version);

/* Encode st into out; -1 when a field does not fit (a caller bug: the
 * sizes follow the columns). */
BINDERY_NODISCARD int stamp_encode(const struct stamp *st, struct stamp_meta *out);

/*
 * Read a stamp from a blob's metadata (names compared without case, as the
 * service does).  1 when it names an installation and a document in full
 * (every entry present, well-formed and decodable), 0 when it is no
 * bindery stamp (a blob of an older bindery, or written by hand): such a
 * blob is never adopted.
 */
BINDERY_NODISCARD int stamp_decode(const struct blob_meta *meta, size_t n, struct stamp *out);

/* Percent-encode s[0..n) as above into out (outlen bytes, NUL-terminated);
 * -1 when it does not fit.  Decode is the inverse; it refuses a malformed
 * escape and a NUL byte. */
BINDERY_NODISCARD int stamp_pct_encode(const char *s, size_t n, char *out, size_t outlen);
BINDERY_NODISCARD int stamp_pct_decode(const char *s, char *out, size_t outlen);

#endif
