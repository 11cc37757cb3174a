/*
 * blob_internal.h - pieces of the blob client shared between blob.c and
 * blob_xml.c; not part of the public interface.
 */
#ifndef BINDERY_BLOB_INTERNAL_H
#define BINDERY_BLOB_INTERNAL_H

#include <stddef.h>

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

/* Append s with &, <, >, " and ' escaped for element content. */
BINDERY_NODISCARD enum buf_err blob_xml_escape(struct buf *out, const char *s);

#endif
