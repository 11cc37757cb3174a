/*
 * app.h - the responder's process-wide state and its handlers.  One struct
 * app per process, built at start-up; handlers borrow it per request.
 */
#ifndef BINDERY_APP_H
#define BINDERY_APP_H

#include "parse/config.h"
#include "request.h"
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
void handle_list(struct app *app, struct request *r);
void handle_create(struct app *app, struct request *r);
void handle_get(struct app *app, struct request *r);
void handle_delete(struct app *app, struct request *r);
void handle_content_get(struct app *app, struct request *r);
void handle_content_put(struct app *app, struct request *r);

#endif
