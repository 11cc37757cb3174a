/*
 * input.h - what a request brings, checked before anything is done with
 * it: who asks (a writer, a reader), the headers and parameters the APIs
 * share (a name, a Content-Type, an Idempotency-Key, If-Match, a list's
 * query), and the refusals that need neither the database nor the body.
 * Each check that fails has answered the request itself (4xx with a JSON
 * error body); the caller only stops.
 */
#ifndef BINDERY_INPUT_H
#define BINDERY_INPUT_H

#include "app.h"

/* A multipart form may exceed the document limit by this much framing. */
#define INPUT_FORM_OVERHEAD (64 * 1024)
/* An Idempotency-Key is 1 to this many visible ASCII characters. */
#define INPUT_IDEM_KEY_MAX 255

/*
 * Answer the refusals that need neither the database nor the body (401 for
 * a missing caller, 413 for a declared length no upload may have) and
 * return 1; 0 when the request goes on to its handler.  A refused client
 * must cost neither a database connection nor a wait for its body: slow
 * clients must not pin workers.  The handlers check the same again, so
 * each stays correct on its own.
 */
int input_refused_early(struct app *app, struct request *r);

/* A caller who may write: 1; else the body is drained, 401 answered, 0. */
int input_writer(struct request *r);

/* A create that asked for HTML (a browser's form post, Accept: text/html):
 * it is answered with a 303 to the page, its errors too (back_to_page). */
int input_wants_page(const struct request *r);
/*
 * Whether a create may name its caller in a form field `token` before the
 * file (the page's form without JavaScript, which can set no header):
 * multipart/form-data, and nothing else names a caller: no REMOTE_USER
 * (that would win, and it is the credential a browser attaches to a
 * cross-site post on its own) and no Authorization header at all.
 */
int input_form_may_authenticate(const struct request *r);
/*
 * The caller a form's token names, by the bearer token's own lookup
 * (config_token_owner: every token compared in constant time), into
 * r->owner; the token is never logged.  A cross-site post is refused
 * (403, as admit.c refuses one for REMOTE_USER): a form must not upload
 * in anyone's name from another site's page.  1 go on; else 401 or 403
 * answered, 0.
 */
int input_form_caller(struct app *app, struct request *r, struct span token);
/* A caller who may read ([auth] reads_need_auth): 1; else 401 answered, 0. */
int input_reader(struct app *app, struct request *r);
/* 413 too_large: the document is larger than [limits] max_upload. */
void input_too_large(struct request *r);

/* A Content-Type bindery stores: visible ASCII, shorter than a column. */
int input_content_type_ok(struct span ct);
/* A valid document name: 1; else the body is drained, 400 bad_name answered, 0. */
int input_name(struct request *r, struct span name);
/* The Idempotency-Key header into out (*present says whether one came);
 * -1 when it is not 1-255 visible ASCII characters. */
int input_idempotency_key(struct request *r, char *out, size_t outlen, int *present);
/* proto_precondition.holds for If-Match: ctx is the header's span. */
int input_if_match_holds(void *ctx, const struct doc *d);

/* A list's query (?limit=&after=&prefix=&order=), as GET /documents and GET / take it. */
struct input_list {
	uint64_t limit;
	uint64_t after;		/* the cursor: ready_seq of the last one seen */
	struct buf prefix;	/* decoded; empty: no filter */
	enum doc_order order;	/* order=oldest|newest, else the caller's default */
};
#define INPUT_LIST_MAX 1000	/* the most a list answers at once */
/* Parse r's list query into lq (prefix: the caller's BUF_INIT, freed by
 * the caller; order: the default when the query names none): 1; or 400
 * bad_limit/bad_cursor/bad_prefix/bad_order answered, 0. */
int input_list(struct request *r, unsigned default_limit, struct input_list *lq);

#endif
