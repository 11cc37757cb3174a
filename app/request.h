/*
 * request.h - one HTTP request as the responder sees it, whether it came
 * over FastCGI (libfcgi's FCGX streams) or as a plain CGI process
 * (environ, stdin, stdout).  Handlers read the body and write the answer
 * only through these functions, so both modes behave identically.
 */
#ifndef BINDERY_REQUEST_H
#define BINDERY_REQUEST_H

#include <stdint.h>
#include <stdio.h>

#include <fcgiapp.h>
#include <jansson.h>

#include "base/buf.h"
#include "base/compat.h"
#include "parse/http_parse.h"
#include "body_pace.h"
#include "routes.h"

/* A request id a client or Apache (UNIQUE_ID) hands us: at most this long. */
#define REQUEST_ID_MAX 64

struct request {
	/* transport: FastCGI when fcgi is set, else CGI via stdin/stdout/environ */
	FCGX_Stream *in, *out;
	FCGX_ParamArray envp;
	int fcgi;

	char id[REQUEST_ID_MAX + 1];	/* the log line's and X-Request-Id's */
	int64_t start_ms;
	struct span method, path, query;
	/* Where the client reaches the app: "" at the site's root, else a
	 * safe path such as "/bindery" (http_mount_split).  path is without
	 * it.  Every URL the responder hands out starts with it. */
	struct span prefix;
	struct route_match route;
	const char *owner;		/* authenticated caller, or NULL */
	int token_rejected;		/* a Bearer credential named no caller: a 401
					 * says invalid_token (RFC 6750 3.1) */
	int back_to_page;		/* a browser's form post: an error is a 303 to
					 * the page with ?error=CODE, not JSON */

	int64_t content_length;		/* -1 when absent */
	uint64_t body_read;
	int body_error;			/* reading stdin failed or ended early */

	/* How long a read may wait for the client (see req_pace_start). */
	struct body_pace_limits pace;
	int conn_fd;			/* FastCGI: the web server's connection; CGI: 0 */
	int fcgi_id;			/* FastCGI: the request's id in its records */
	int64_t body_start_ms;		/* when the first body read began; 0 before */
	int64_t recv_timeout_ms;	/* FastCGI: SO_RCVTIMEO now on conn_fd; 0: none */
	int body_timeout;		/* the client was too slow: answer 408 */
	int body_interrupted;		/* the responder stopped mid-read: answer 503 (request.c) */
	int stream_shaped;		/* FastCGI: the socket was set up for a long body */

	int status;			/* as answered, for the log */
	uint64_t bytes_out;
	int headers_sent;
	int head_only;			/* HEAD: headers, no body */
	const char *always;		/* header lines every answer carries ("X: y\r\n"), or NULL */
};

/* FastCGI: send the body bytes req_write has gathered (before the request
 * is finished, and before anything else is written). */
int req_flush(struct request *r);

/* FastCGI, before FCGX_Finish_r: lift the bound body reads left on the
 * connection, so that libfcgi's next read on it (a kept connection's next
 * request) waits as long as it must. */
void req_end(struct request *r);

/* FastCGI, between requests: free what req_write gathered bytes in (gone
 * unsent if req_flush was not called). */
void req_release(void);

/* A request parameter (CGI meta-variable such as "CONTENT_TYPE", or
 * "HTTP_IF_MATCH"); the empty span when absent. */
struct span req_param(const struct request *r, const char *name);
/*
 * Bound every later wait for body bytes by lim (body_pace.h).  conn_fd is
 * the descriptor a blocking read waits on: FastCGI's connection to the web
 * server (FCGX_Request's ipcFd), or 0 (stdin) for CGI.  Without this call
 * reads wait as long as the client takes.
 */
void req_pace_start(struct request *r, const struct body_pace_limits *lim, int conn_fd);
/*
 * Read up to len body bytes; 0 at the end of the body, -1 on error.  It
 * returns what has arrived rather than waiting to fill buf, and a client
 * that breaks the pace bounds ends the body with -1 and body_timeout set.
 */
long req_read(struct request *r, char *buf, size_t len);
/* Write raw bytes of the response body (nothing for HEAD). -1 on error. */
int req_write(struct request *r, const void *data, size_t len);

/*
 * Send the status line and headers.  extra holds more header lines, each
 * ending in "\r\n" (may be NULL).  content_length < 0 omits the header.
 */
void resp_begin(struct request *r, int status, const char *content_type, int64_t content_length,
		const char *extra);
/* A complete JSON answer; steals the reference to body. */
void resp_json(struct request *r, int status, json_t *body, const char *extra);
/* A complete error answer {"error":code,"message":message}; for a request
 * marked back_to_page, a 303 to the page's /?error=code instead (code must
 * be one of ours: [a-z_]). */
void resp_error(struct request *r, int status, const char *code, const char *message);
/* An error answer with Retry-After (503, or 409 for a key in progress);
 * back_to_page as resp_error. */
void resp_error_retry(struct request *r, int status, const char *code, const char *message,
		      unsigned retry_after);

/*
 * Append a URL of ours to out: r's mount prefix, then fmt's path (which
 * starts with '/'), so a Location header, a JSON field or a link leads
 * back to the app wherever the web server mounts it.
 */
BINDERY_NODISCARD enum buf_err req_url_append(const struct request *r, struct buf *out,
    const char *fmt, ...) BINDERY_PRINTF(3, 4);
/* The same as a header line: "Location: <prefix><path>\r\n". */
BINDERY_NODISCARD enum buf_err req_location_append(const struct request *r, struct buf *out,
    const char *fmt, ...) BINDERY_PRINTF(3, 4);

/* Read and throw away what is left of the body (so the server can reuse the connection). */
void req_drain(struct request *r, uint64_t limit);

#endif
