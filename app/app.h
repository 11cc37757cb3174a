/*
 * app.h - the responder's process-wide state and its handlers.  One struct
 * app per process, built at start-up; handlers borrow it per request.
 */
#ifndef BINDERY_APP_H
#define BINDERY_APP_H

#include "parse/config.h"
#include "request.h"
#include "protocol/protocol.h"
#include "protocol/services.h"

struct app {
	struct bindery_config *cfg;
	struct services *svc;
};

/*
 * Answer the refusals that need neither the database nor the body (401 for
 * a missing caller, 413 for a declared length no upload may have) and
 * return 1; 0 when the request goes on to its handler.  Called before the
 * database connection is opened.
 */
int handle_refusal_before_database(struct app *app, struct request *r);

void handle_index(struct app *app, struct request *r);
void handle_page_script(struct app *app, struct request *r);
void handle_healthz(struct app *app, struct request *r);
void handle_metrics(struct app *app, struct request *r);
void handle_list(struct app *app, struct request *r);
void handle_create(struct app *app, struct request *r);
void handle_get(struct app *app, struct request *r);
void handle_delete(struct app *app, struct request *r);
void handle_content_get(struct app *app, struct request *r);
void handle_content_put(struct app *app, struct request *r);

/* tus 1.0.0 at /uploads (tus.c). */
void handle_uploads_options(struct app *app, struct request *r);
void handle_uploads_create(struct app *app, struct request *r);
void handle_upload_head(struct app *app, struct request *r);
void handle_upload_patch(struct app *app, struct request *r);
void handle_upload_delete(struct app *app, struct request *r);

/* Direct uploads (direct.c). */
void handle_documents_direct(struct app *app, struct request *r);
void handle_document_finalize(struct app *app, struct request *r);

/* ---- shared by the handlers (handlers.c) ---- */

/* A caller who may write: 1; else the body is drained, 401 answered, 0. */
int require_writer(struct request *r);
/* A Content-Type bindery stores: visible ASCII, shorter than a column. */
int content_type_ok(struct span ct);
/* A list's query (?limit=&after=&prefix=), as GET /documents and GET / take it. */
struct list_query {
	uint64_t limit;
	uint64_t after;		/* the cursor: ready_seq of the last one seen */
	struct buf prefix;	/* decoded; empty: no filter */
};
/* Parse r's list query into lq (prefix: the caller's BUF_INIT, freed by
 * the caller): 1; or 400 bad_limit/bad_cursor/bad_prefix answered, 0. */
int list_query_parse(struct request *r, unsigned default_limit, struct list_query *lq);
/* A valid document name: 1; else 400 bad_name answered, 0. */
int check_name(struct request *r, struct span name);
/* proto_precondition.holds for If-Match: ctx is the header's span. */
int if_match_holds(void *ctx, const struct doc *d);
/* 409 name_taken; when the caller's own resumable upload holds name, the answer names it. */
void reply_name_taken(struct app *app, struct request *r, struct span name);
/* The Idempotency-Key header into out (*present says whether one came);
 * -1 when it is not 1-255 visible ASCII characters. */
int idempotency_key_of(struct request *r, char *out, size_t outlen, int *present);
/* status + the document's JSON and ETag (201 adds its Location). */
void reply_document(struct request *r, int status, const struct doc *d);
/*
 * A body req_read could not read to its end: 408 body_timeout when the
 * client broke body_idle_timeout or body_min_rate, 503 interrupted (with
 * Retry-After) when the responder was stopped in the read, else 400
 * bad_body with message.  kept says, for the first two, what became of
 * the upload ("the upload was abandoned").
 */
void reply_body_unread(struct request *r, const char *message, const char *kept);
/* The answer for a protocol failure that is not about a body (everything but PROTO_OK). */
void reply_proto_failure(struct request *r, enum proto_result pr);

#endif
