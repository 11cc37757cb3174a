/*
 * render.h - how the API shows a document (doc/openapi.yaml):
 * its JSON and its ETag.  lib/ returns a document's fields; only the
 * responder renders them, the same way for a first answer and a replay.
 */
#ifndef BINDERY_RENDER_H
#define BINDERY_RENDER_H

#include <stddef.h>

#include <jansson.h>

#include "registry/doc_row.h"

/* The quoted strong ETag "ID-VERSION"; it changes on every replace. */
void render_doc_etag(const struct doc *d, char *out, size_t outlen);

/* {id,name,size,content_type,sha256,created_at,etag} (a new reference, NULL without memory). */
json_t *render_doc_json(const struct doc *d);

#endif
