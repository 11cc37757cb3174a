/* render.c - see render.h. */
#include <stdio.h>

#include "render.h"

void
render_doc_etag(const struct doc *d, char *out, size_t outlen)
{
	/* id and version identify the bytes: version moves on every replace. */
	snprintf(out, outlen, "\"%llu-%llu\"", (unsigned long long)d->id,
		 (unsigned long long)d->version);
}

json_t *
render_doc_json(const struct doc *d)
{
	char id[24], etag[64];

	/* Ids are strings in JSON: a 64-bit id does not survive a JavaScript number. */
	snprintf(id, sizeof id, "%llu", (unsigned long long)d->id);
	render_doc_etag(d, etag, sizeof etag);
	return json_pack("{s:s, s:s, s:I, s:s, s:s, s:s, s:s}", "id", id, "name", d->name,
			 "size", (json_int_t)d->size, "content_type", d->content_type,
			 "sha256", d->sha256, "created_at", d->created_at, "etag", etag);
}
