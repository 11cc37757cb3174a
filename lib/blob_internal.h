/*
 * blob_internal.h - pieces of the blob client shared between blob.c and
 * blob_xml.c; not part of the public interface.
 */
#ifndef BINDERY_BLOB_INTERNAL_H
#define BINDERY_BLOB_INTERNAL_H

#include <stddef.h>

#include "blob.h"
#include "buf.h"
#include "compat.h"

/*
 * A flattening XML walk: on_start gets the element path ("/A/B/C") when an
 * element opens, on_end gets the path and the element's own character data
 * when it closes.  Enough for every answer the Blob service sends.  A
 * nonzero return from a callback stops the walk.
 */
struct blob_xml_walk {
	void *ctx;
	int (*on_start)(void *ctx, const char *path);
	int (*on_end)(void *ctx, const char *path, const char *text, size_t len);
};

enum blob_xml_err {
	BLOB_XML_OK = 0,
	BLOB_XML_MALFORMED,
	BLOB_XML_NOMEM,
	BLOB_XML_STOPPED,	/* a callback returned nonzero */
};

BINDERY_NODISCARD enum blob_xml_err blob_xml_walk(const char *xml, size_t len,
    const struct blob_xml_walk *w);

/* Pull <Error><Code> and <Message> out of an error body; fields left as
 * they were when absent. */
void blob_xml_error(const char *xml, size_t len, char *code, size_t codesize,
    char *message, size_t messagesize);

/*
 * The pure parse step of each call that reads an XML answer, so the fuzz
 * harness and the allocation-failure loop reach the code the network calls
 * run.  Each takes the answer body as received (any bytes; need not end in
 * NUL), resets *out first, and returns BLOB_XML_OK, BLOB_XML_MALFORMED (not
 * XML, or a value that does not fit) or BLOB_XML_NOMEM.  Element layouts are
 * the REST reference's.
 */
/* Get Blob Tags: <Tags><TagSet><Tag><Key/><Value/></Tag>...; more than
 * BLOB_MAX_TAGS tags or an over-long key or value is MALFORMED. */
BINDERY_NODISCARD enum blob_xml_err blob_parse_tags_answer(const char *xml, size_t len,
    struct blob_tag_set *out);
/* Get Block List: counts of <CommittedBlocks>/<UncommittedBlocks> <Block>s. */
BINDERY_NODISCARD enum blob_xml_err blob_parse_block_list_answer(const char *xml,
    size_t len, struct blob_block_counts *out);
/* Get Blob Service Properties: the delete retention policy (days >= 0). */
BINDERY_NODISCARD enum blob_xml_err blob_parse_service_props_answer(const char *xml,
    size_t len, struct blob_service_props *out);
/*
 * One page of List Blobs (on_item) or Find Blobs by Tags (on_name; exactly
 * one of the two is non-NULL): the callback runs per <Blob>, its arguments
 * borrowed for the call; nonzero from it gives BLOB_XML_STOPPED.
 * next_marker (reset first; its cap bounds the marker) receives
 * <NextMarker>, empty on the last page.
 */
BINDERY_NODISCARD enum blob_xml_err blob_parse_list_answer(const char *xml, size_t len,
    blob_list_fn on_item, int (*on_name)(void *, const char *), void *ctx,
    struct buf *next_marker);
/*
 * Blob Batch: the multipart/mixed answer; each part's "Content-ID: N" and
 * status line fill each[N] (N < n); entries without a part are left as
 * they were.  Unlike the XML parsers, body[len] must be '\0'.
 */
void blob_parse_batch_answer(const char *body, size_t len, struct blob_result *each,
    size_t n);

/* Append s with &, <, >, " and ' escaped for element content. */
BINDERY_NODISCARD enum buf_err blob_xml_escape(struct buf *out, const char *s);

#endif
