/*
 * admit.h - what the responder checks about a caller the web server
 * authenticated (REMOTE_USER) before any handler runs: that the name can be
 * stored as an owner exactly as given, and that a state-changing request
 * comes from our own origin.  A browser attaches web-server credentials
 * (Basic auth, a session cookie, a client certificate) to any request any
 * site makes it send, so without this a page elsewhere could upload or
 * delete in the user's name (CSRF; doc/design.md "Smaller decisions",
 * lib/parse/origin.h).  Bearer tokens are never attached by a browser on its
 * own, so those requests, and anonymous ones, pass untouched.
 */
#ifndef BINDERY_ADMIT_H
#define BINDERY_ADMIT_H

#include "app.h"

/* 1: go on to the handler.  0: refused, and a 403 `forbidden` was answered. */
BINDERY_NODISCARD int admit_request(struct app *app, struct request *r);

/* 0 when r is a cross-site request (origin_check's ORIGIN_CROSS against the
 * origin the client addressed), else 1: no Origin, Sec-Fetch-Site or
 * Referer to tell (a client that is no browser) is not cross-site. */
BINDERY_NODISCARD int admit_same_origin(const struct app *app, const struct request *r);

#endif
