/*
 * app.h - the responder's process-wide state and its handlers.  One struct
 * app per process, built at start-up; handlers borrow it per request.  What
 * the handlers share lives in input.h (checking a request) and answer.h
 * (answering one).
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

/* The page (page.c). */
void handle_index(struct app *app, struct request *r);
void handle_page_script(struct app *app, struct request *r);
void handle_favicon(struct app *app, struct request *r);

/* Health (health.c). */
void handle_healthz(struct app *app, struct request *r);
void handle_metrics(struct app *app, struct request *r);
/* Attach [metrics] counters_file when metrics are on (a failure is logged:
 * the responder serves on without counters).  Before a pool forks. */
void metrics_counters_open(const struct bindery_config *cfg);
/* Count a finished request: its route and status, its body bytes. */
void metrics_count_request(const struct request *r);

/* The documents (handlers.c) and their bytes (download.c). */
void handle_list(struct app *app, struct request *r);
void handle_create(struct app *app, struct request *r);
void handle_get(struct app *app, struct request *r);
void handle_delete(struct app *app, struct request *r);
void handle_content_put(struct app *app, struct request *r);
void handle_content_get(struct app *app, struct request *r);

/* tus 1.0.0 at /uploads (tus.c). */
void handle_uploads_options(struct app *app, struct request *r);
void handle_uploads_create(struct app *app, struct request *r);
void handle_upload_head(struct app *app, struct request *r);
void handle_upload_patch(struct app *app, struct request *r);
void handle_upload_delete(struct app *app, struct request *r);

/* Direct uploads (direct.c). */
void handle_documents_direct(struct app *app, struct request *r);
void handle_document_finalize(struct app *app, struct request *r);

#endif
