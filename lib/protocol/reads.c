/* reads.c - see reads.h. */
#include "base/log.h"
#include "protocol/protocol_internal.h"
#include "protocol/reads.h"
#include "registry/docs_db.h"

/* A row a reader may see: ready, and not quarantined (`bindery scan
 * --quarantine`: absent to every reader, as a deleted document is, until
 * an administrator releases it).  The registry answers any status.  A
 * read changes nothing, so any failure of the database is one to retry. */
static enum proto_result
ready_only(enum db_err e, const struct doc *d)
{
	if (e == DB_OK)
		return d->status == DOC_STATUS_READY && d->quarantined_at[0] == '\0' ? PROTO_OK : PROTO_NOT_FOUND;
	return e == DB_NOT_FOUND ? PROTO_NOT_FOUND : PROTO_UNAVAILABLE;
}

enum proto_result
reads_get(struct services *s, uint64_t id, struct doc *out)
{
	return ready_only(docs_get(s->db, id, out), out);
}

enum proto_result
reads_by_name(struct services *s, struct span name, struct doc *out)
{
	return ready_only(docs_find_ready_by_name(s->db, name, out), out);
}

enum proto_result
reads_list(struct services *s, enum doc_order order, uint64_t after, struct span prefix, unsigned limit,
	   reads_doc_fn on_doc, void *ctx)
{
	enum db_err e = docs_list_ready(s->db, order, after, prefix, limit, on_doc, ctx);

	return e == DB_OK ? PROTO_OK : PROTO_UNAVAILABLE;
}

enum proto_result
reads_count(struct services *s, struct span prefix, uint64_t *out)
{
	return docs_count_ready(s->db, prefix, out) == DB_OK ? PROTO_OK : PROTO_UNAVAILABLE;
}

enum proto_result
reads_download(struct services *s, const struct doc *d, uint64_t start, uint64_t len,
	       blob_headers_fn on_headers, blob_data_fn on_data, void *ctx)
{
	struct blob_result res;

	blob_client_set_deadline(s->blob, 0);
	if (blob_get(s->blob, d->blob_name, start, len, d->blob_etag, on_headers, on_data, ctx, &res) == 0)
		return PROTO_OK;
	switch (res.status) {
	case BLOB_CONDITION_NOT_MET:
		log_error("document %llu: blob %s is not the one committed (its ETag is no longer %s):"
			  " bytes changed out of band; not served", (unsigned long long)d->id, d->blob_name,
			  d->blob_etag);
		return PROTO_BYTES_CHANGED;
	case BLOB_NOT_FOUND:
		log_error("ready document %llu has no blob %s", (unsigned long long)d->id, d->blob_name);
		return PROTO_BYTES_MISSING;
	case BLOB_REJECTED:
		/* The range came from the row's size: a 416 means the blob is
		 * not what the row says, never the client's range. */
		blob_log_failure("download", d->blob_name, &res);
		return PROTO_STORAGE_ERROR;
	default:
		blob_log_failure("download", d->blob_name, &res);
		return PROTO_UNAVAILABLE;
	}
}

enum proto_result
reads_link(struct services *s, const struct doc *d, const char *content_disposition, const char *content_type,
	   struct buf *url)
{
	struct blob_result res;

	if (blob_sas_url(s->blob, d->blob_name, "r", s->cfg->sas_lifetime, content_disposition, content_type,
			 url, &res) == 0)
		return PROTO_OK;
	blob_log_failure("download link", d->blob_name, &res);
	return PROTO_FAILED;
}
