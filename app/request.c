/* request.c - see request.h. */
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>

#include "base/clock.h"
#include "base/alloc.h"
#include "base/log.h"
#include "request.h"

struct span
req_param(const struct request *r, const char *name)
{
	const char *v = r->fcgi ? FCGX_GetParam(name, r->envp) : getenv(name);

	return v ? span_from_cstr(v) : (struct span){ "", 0 };
}

/* ---- reading the body at the client's pace ---- */

void
req_pace_start(struct request *r, const struct body_pace_limits *lim, int conn_fd)
{
	r->pace = *lim;
	r->conn_fd = conn_fd;
}

/*
 * How long the next blocking read may wait (-1: as long as it takes), or
 * 0 with body_timeout set when the client is already below the rate.
 */
static int
pace_wait(struct request *r, int64_t *wait_ms)
{
	int64_t now = clock_now_ms();

	if (r->body_start_ms == 0)
		r->body_start_ms = now;
	if (body_pace_next_wait(&r->pace, now - r->body_start_ms, r->body_read, wait_ms) ==
	    BODY_PACE_WAIT)
		return 1;
	return 0;
}

static void
pace_broken(struct request *r)
{
	r->body_timeout = 1;
	log_warn("req=%s body cut: %llu bytes in %lld ms (body_idle_timeout %lld s, body_min_rate"
		 " %llu B/s after %lld s)", r->id, (unsigned long long)r->body_read,
		 (long long)(clock_now_ms() - r->body_start_ms), (long long)(r->pace.idle_ms / 1000),
		 (unsigned long long)r->pace.min_rate, (long long)(r->pace.grace_ms / 1000));
}

/*
 * A socket read bounded by SO_RCVTIMEO fails with EINTR when the process
 * is stopped and continued (SIGSTOP and SIGCONT, a debugger attaching, a
 * frozen cgroup), with or without SA_RESTART: signal(7).  libfcgi has then
 * closed the input stream, and a retry is not safe (it may have taken half
 * of a record's header into a local variable of the read that failed).  The
 * client did nothing wrong, so this is 503 and not 400: the upload is
 * compensated as for any body that could not be read, and can be sent
 * again.
 */
static void
read_interrupted(struct request *r)
{
	r->body_interrupted = 1;
	log_warn("req=%s body read interrupted after %llu bytes: the responder was stopped and"
		 " continued", r->id, (unsigned long long)r->body_read);
}

/*
 * CGI: stdin is the web server's pipe or socket (or a spooled file, which
 * poll(2) always finds readable).  read(2), not fread(3): stdio would wait
 * to fill the whole buffer, at the client's pace.
 */
static long
cgi_read(struct request *r, char *buf, size_t len)
{
	struct pollfd pfd = { STDIN_FILENO, POLLIN, 0 };
	int64_t wait = -1;
	ssize_t n;
	int rc;

	for (;;) {
		if (r->pace.idle_ms > 0 && !pace_wait(r, &wait)) {
			pace_broken(r);
			return -1;
		}
		rc = poll(&pfd, 1, wait > INT32_MAX ? INT32_MAX : (int)wait);
		if (rc == 0) {
			pace_broken(r);
			return -1;
		}
		if (rc < 0 && errno != EINTR)
			return -1;
		if (rc < 0)
			continue;
		n = read(STDIN_FILENO, buf, len);
		if (n >= 0 || errno != EINTR)
			return (long)n;
	}
}

/* Bound (wait_ms > 0) or lift (0) the wait of a read(2) on fd. */
static void
fcgi_recv_timeout(int fd, int64_t wait_ms)
{
	struct timeval tv = { (time_t)(wait_ms / 1000), (suseconds_t)(wait_ms % 1000) * 1000 };

	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0)
		log_warn("SO_RCVTIMEO on the FastCGI connection: %s", strerror(errno));
}

/*
 * FastCGI: FCGX_GetStr() returns only when it has filled the whole buffer
 * or the body has ended, and it waits in read(2) on the connection to the
 * web server, which streams the body at the client's pace.  So:
 * - bytes libfcgi already holds (between rdNext and stop, the public
 *   fields of FCGX_Stream) are taken without waiting;
 * - otherwise one byte is asked for, and its read(2) is bounded with
 *   SO_RCVTIMEO on the connection socket.  Polling the socket instead would
 *   be wrong: libfcgi may already have read the next record into its own
 *   buffer, where poll(2) cannot see it.  A read that times out fails with
 *   EAGAIN, which libfcgi records as the stream's error (FCGX_GetError);
 *   the input stream is then closed, while the output stream still works
 *   for the 408, and FCGX_Finish_r closes the connection.
 * The timeout stays set while it is the same (the idle bound, as long as
 * the client keeps above the minimum rate): setting and lifting it around
 * every refill of libfcgi's 8 KiB buffer was two system calls per 8 KiB.
 * req_end lifts it, so the next FCGX_Accept_r on a kept connection does not
 * inherit it.
 */
static long
fcgi_read(struct request *r, char *buf, size_t len)
{
	size_t ready = (size_t)(r->in->stop - r->in->rdNext);
	int64_t wait = -1;
	int n, more;

	if (ready > 0 || r->pace.idle_ms <= 0 || r->conn_fd < 0)
		return FCGX_GetStr(buf, (int)(ready > 0 && ready < len ? ready : len), r->in);
	if (!pace_wait(r, &wait)) {
		pace_broken(r);
		return -1;
	}
	if (wait <= 0)
		wait = 1;
	if (r->recv_timeout_ms != wait) {
		fcgi_recv_timeout(r->conn_fd, wait);
		r->recv_timeout_ms = wait;
	}
	n = FCGX_GetStr(buf, 1, r->in);
	if (n <= 0) {
		if (FCGX_GetError(r->in) == EAGAIN || FCGX_GetError(r->in) == EWOULDBLOCK) {
			pace_broken(r);
			return -1;
		}
		if (FCGX_GetError(r->in) == EINTR)
			read_interrupted(r);
		return n;
	}
	ready = (size_t)(r->in->stop - r->in->rdNext);
	more = (int)(ready < len - 1 ? ready : len - 1);
	return more > 0 ? 1 + FCGX_GetStr(buf + 1, more, r->in) : 1;
}

long
req_read(struct request *r, char *buf, size_t len)
{
	long n;

	if (r->body_timeout || r->body_interrupted)
		return -1;
	if (r->content_length >= 0) {
		uint64_t left = (uint64_t)r->content_length - r->body_read;

		if (left == 0)
			return 0;
		if (len > left)
			len = (size_t)left;
	}
	if (len == 0)
		return 0;
	if (len > 0x7fffffff)
		len = 0x7fffffff;
	n = r->fcgi ? fcgi_read(r, buf, len) : cgi_read(r, buf, len);
	if (n < 0 || (n == 0 && r->content_length >= 0)) {
		/* The body ended before Content-Length said it would, the
		 * client was too slow (body_timeout), or the read was cut
		 * under the responder (body_interrupted). */
		r->body_error = 1;
		return -1;
	}
	r->body_read += (uint64_t)n;
	return n;
}

enum buf_err
req_url_append(const struct request *r, struct buf *out, const char *fmt, ...)
{
	va_list ap;
	enum buf_err e;

	assert(fmt[0] == '/');
	e = buf_append_span(out, r->prefix);
	if (e == BUF_OK) {
		va_start(ap, fmt);
		e = buf_vappendf(out, fmt, ap);
		va_end(ap);
	}
	return e;
}

enum buf_err
req_location_append(const struct request *r, struct buf *out, const char *fmt, ...)
{
	va_list ap;
	enum buf_err e;

	assert(fmt[0] == '/');
	e = buf_append_cstr(out, "Location: ");
	if (e == BUF_OK)
		e = buf_append_span(out, r->prefix);
	if (e == BUF_OK) {
		va_start(ap, fmt);
		e = buf_vappendf(out, fmt, ap);
		va_end(ap);
	}
	if (e == BUF_OK)
		e = buf_append_cstr(out, "\r\n");
	return e;
}

void
req_drain(struct request *r, uint64_t limit)
{
	char chunk[16384];
	uint64_t total = 0;
	long n;

	while (total < limit && (n = req_read(r, chunk, sizeof chunk)) > 0)
		total += (uint64_t)n;
}

/* Write all of iov[n] to fd (a blocking socket); -1 on failure. */
static int
writev_all(int fd, struct iovec *iov, int n)
{
	ssize_t w;

	while (n > 0) {
		if ((w = writev(fd, iov, n)) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

/*
 * libfcgi's stream cuts a body into records of its 8 KiB buffer, a write(2)
 * each, and libcurl hands a download on in pieces of 16 KiB: its bytes
 * went out in 32,768 system calls per 256 MiB, most of the responder's
 * time.  So a body's bytes gather here, in a buffer of one record's
 * content, and leave as FCGI_STDOUT records of up to FCGI_RECORD_MAX
 * bytes, written once libfcgi's own buffer is flushed so that every byte
 * keeps its order (fcgi_put flushes this buffer before libfcgi writes
 * again).  The record format is the FastCGI protocol's, not libfcgi's.
 */
#define FCGI_RECORD_MAX 65528	/* content is at most 65535; a multiple of 8 needs no padding */

/*
 * lighttpd (1.4.69) reads a FastCGI response as far as the socket holds
 * and, once more than 64 KiB wait for the client (128 KiB with
 * server.stream-response-body = 2), spools the rest through a temp file of
 * server.upload-dirs: open, pwritev, sendfile, close, unlink for every read.
 * A responder that runs ahead fills the socket: 438 temp files per 64 MiB
 * downloaded, 40 % of lighttpd's CPU for it.  With this send buffer
 * (the kernel doubles it) a read finds at most ~64 KiB and none spills;
 * measured on 4 x 256 MiB downloads, lighttpd's CPU 1.24 -> 0.71 s and
 * 304 -> 330 MiB/s.  Under Apache the small buffer gained nothing and
 * cost mod_fcgid 15 % more CPU at the same speed: it keeps the kernel's
 * default there.
 */
#define LIGHTTPD_STREAM_SNDBUF 32768

/* Once per request, when its body proves to be a stream (a whole record). */
static void
shape_stream(struct request *r)
{
	int v = LIGHTTPD_STREAM_SNDBUF;

	r->stream_shaped = 1;
	if (!span_starts_with_cstr(req_param(r, "SERVER_SOFTWARE"), "lighttpd/"))
		return;
	/* Failing costs only the temp files above: the bytes still go. */
	if (setsockopt(r->conn_fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v) != 0)
		log_debug("request %s: SO_SNDBUF: %s", r->id, strerror(errno));
}

/* One request at a time per process.  Allocated by the first body that is
 * gathered and freed between requests (req_release): a worker that once
 * served a download does not keep its 64 KiB for good. */
static char *fcgi_out;
static size_t fcgi_out_len;

static int
fcgi_write_record(struct request *r, const char *data, size_t n)
{
	unsigned char hdr[8];
	struct iovec iov[2];

	hdr[0] = 1;			/* FCGI_VERSION_1 */
	hdr[1] = 6;			/* FCGI_STDOUT */
	hdr[2] = (unsigned char)(r->fcgi_id >> 8);
	hdr[3] = (unsigned char)r->fcgi_id;
	hdr[4] = (unsigned char)(n >> 8);
	hdr[5] = (unsigned char)n;
	hdr[6] = hdr[7] = 0;		/* no padding; reserved */
	iov[0] = (struct iovec){ hdr, sizeof hdr };
	iov[1] = (struct iovec){ (void *)data, n };
	return writev_all(r->conn_fd, iov, 2);
}

int
req_flush(struct request *r)
{
	int rc = 0;

	if (fcgi_out_len > 0)
		rc = fcgi_write_record(r, fcgi_out, fcgi_out_len);
	fcgi_out_len = 0;
	return rc;
}

/* Body bytes, gathered into records of FCGI_RECORD_MAX. */
static int
fcgi_write_body(struct request *r, const char *data, size_t len)
{
	size_t n;

	if (fcgi_out_len == 0 && FCGX_FFlush(r->out) != 0)
		return -1;	/* libfcgi's bytes (the headers) go first */
	if (fcgi_out == NULL && (fcgi_out = alloc_malloc(FCGI_RECORD_MAX)) == NULL)
		return -1;
	while (len > 0) {
		n = FCGI_RECORD_MAX - fcgi_out_len < len ? FCGI_RECORD_MAX - fcgi_out_len : len;
		if (fcgi_out_len + n == FCGI_RECORD_MAX && !r->stream_shaped)
			shape_stream(r);
		if (fcgi_out_len == 0 && n == FCGI_RECORD_MAX) {
			if (fcgi_write_record(r, data, n) != 0)	/* no copy */
				return -1;
		} else {
			memcpy(fcgi_out + fcgi_out_len, data, n);
			fcgi_out_len += n;
			if (fcgi_out_len == FCGI_RECORD_MAX && req_flush(r) != 0)
				return -1;
		}
		data += n;
		len -= n;
	}
	return 0;
}

void
req_end(struct request *r)
{
	if (r->recv_timeout_ms != 0 && r->conn_fd >= 0)
		fcgi_recv_timeout(r->conn_fd, 0);
	r->recv_timeout_ms = 0;
}

void
req_release(void)
{
	alloc_free(fcgi_out);
	fcgi_out = NULL;
	fcgi_out_len = 0;
}

/* What goes through libfcgi's stream comes after the bytes gathered here. */
static int
fcgi_put(struct request *r, const char *s, size_t len)
{
	if (req_flush(r) != 0)
		return -1;
	return FCGX_PutStr(s, (int)len, r->out) == (int)len ? 0 : -1;
}

int
req_write(struct request *r, const void *data, size_t len)
{
	if (r->head_only || len == 0)
		return 0;
	r->bytes_out += len;
	if (r->fcgi && r->conn_fd >= 0 && r->fcgi_id > 0)
		return fcgi_write_body(r, data, len);
	if (r->fcgi)
		return fcgi_put(r, data, len);
	return fwrite(data, 1, len, stdout) == len ? 0 : -1;
}

static int
write_head(struct request *r, const char *s, size_t len)
{
	if (r->fcgi)
		return fcgi_put(r, s, len);
	return fwrite(s, 1, len, stdout) == len ? 0 : -1;
}

static const char *
http_status_text(int status)
{
	switch (status) {
	case 200: return "OK";
	case 201: return "Created";
	case 204: return "No Content";
	case 206: return "Partial Content";
	case 302: return "Found";
	case 303: return "See Other";
	case 304: return "Not Modified";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 411: return "Length Required";
	case 412: return "Precondition Failed";
	case 413: return "Content Too Large";
	case 415: return "Unsupported Media Type";
	case 416: return "Range Not Satisfiable";
	case 422: return "Unprocessable Content";
	case 460: return "Checksum Mismatch";	/* tus 1.0.0, checksum extension */
	case 500: return "Internal Server Error";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	default: return "Unknown";
	}
}

void
resp_begin(struct request *r, int status, const char *content_type, int64_t content_length,
	   const char *extra)
{
	struct buf head = BUF_INIT(1024);

	if (r->headers_sent)
		return;
	r->headers_sent = 1;
	r->status = status;
	/* Every value here is bounded (a content type is at most 255 bytes), so
	 * the cap is never reached; if it were, the answer would lack headers,
	 * never overflow. */
	if (buf_appendf(&head, "Status: %d %s\r\n", status, http_status_text(status)) != BUF_OK ||
	    (content_type && buf_appendf(&head, "Content-Type: %s\r\n", content_type) != BUF_OK) ||
	    (content_length >= 0 &&
	     buf_appendf(&head, "Content-Length: %lld\r\n", (long long)content_length) != BUF_OK) ||
	    buf_appendf(&head, "X-Request-Id: %s\r\n", r->id) != BUF_OK)
		buf_reset(&head);
	(void)write_head(r, buf_cstr(&head), head.len);
	if (r->always)
		(void)write_head(r, r->always, strlen(r->always));
	if (extra)
		(void)write_head(r, extra, strlen(extra));
	(void)write_head(r, "\r\n", 2);
	buf_free(&head);
}

void
resp_json(struct request *r, int status, json_t *body, const char *extra)
{
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;

	json_decref(body);
	if (text == NULL) {
		static const char fallback[] = "{\"error\":\"internal\",\"message\":\"out of memory\"}\n";

		resp_begin(r, 500, "application/json", sizeof fallback - 1, NULL);
		(void)req_write(r, fallback, sizeof fallback - 1);
		return;
	}
	resp_begin(r, status, "application/json", (int64_t)strlen(text) + 1, extra);
	(void)req_write(r, text, strlen(text));
	(void)req_write(r, "\n", 1);
	free(text);
}

/*
 * A browser's form post (no script) that failed goes back to the page with
 * the error's code, which the page turns into words of its own: a person
 * sees the page and what went wrong, not a JSON body.  The code is one of
 * ours (a literal), so the URL needs no escaping.
 */
static void
resp_back_to_page(struct request *r, const char *code)
{
	struct buf extra = BUF_INIT(512);

	if (req_location_append(r, &extra, "/?error=%s", code) != BUF_OK ||
	    buf_append_cstr(&extra, "Cache-Control: no-store\r\n") != BUF_OK)
		buf_reset(&extra);
	resp_begin(r, 303, "text/plain", 0, extra.len ? buf_cstr(&extra) : NULL);
	buf_free(&extra);
}

void
resp_error(struct request *r, int status, const char *code, const char *message)
{
	const char *extra = NULL;

	if (r->back_to_page && status >= 400) {
		resp_back_to_page(r, code);
		return;
	}

	/* RFC 6750 3.1: a request without a token gets the bare challenge; one
	 * whose token we do not know is told so, so a client does not ask its
	 * user to log in when its token is the trouble. */
	if (status == 401)
		extra = r->token_rejected ?
			"WWW-Authenticate: Bearer realm=\"bindery\", error=\"invalid_token\"\r\n" :
			"WWW-Authenticate: Bearer realm=\"bindery\"\r\n";
	resp_json(r, status, json_pack("{s:s, s:s}", "error", code, "message", message), extra);
}

void
resp_error_retry(struct request *r, int status, const char *code, const char *message,
		 unsigned retry_after)
{
	char extra[64];

	if (r->back_to_page && status >= 400) {
		resp_back_to_page(r, code);
		return;
	}
	snprintf(extra, sizeof extra, "Retry-After: %u\r\n", retry_after);
	resp_json(r, status, json_pack("{s:s, s:s}", "error", code, "message", message), extra);
}
