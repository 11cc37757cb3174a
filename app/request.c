/* request.c - see request.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "request.h"

struct span
req_param(const struct request *r, const char *name)
{
	const char *v = r->fcgi ? FCGX_GetParam(name, r->envp) : getenv(name);

	return v ? span_from_cstr(v) : (struct span){ "", 0 };
}

long
req_read(struct request *r, char *buf, size_t len)
{
	long n;

	if (r->content_length >= 0) {
		uint64_t left = (uint64_t)r->content_length - r->body_read;

		if (left == 0)
			return 0;
		if (len > left)
			len = (size_t)left;
	}
	if (len > 0x7fffffff)
		len = 0x7fffffff;
	if (r->fcgi)
		n = FCGX_GetStr(buf, (int)len, r->in);
	else
		n = (long)fread(buf, 1, len, stdin);
	if (n < 0 || (n == 0 && r->content_length >= 0)) {
		/* The body ended before Content-Length said it would. */
		r->body_error = 1;
		return -1;
	}
	r->body_read += (uint64_t)n;
	return n;
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

int
req_write(struct request *r, const void *data, size_t len)
{
	if (r->head_only || len == 0)
		return 0;
	r->bytes_out += len;
	if (r->fcgi)
		return FCGX_PutStr(data, (int)len, r->out) == (int)len ? 0 : -1;
	return fwrite(data, 1, len, stdout) == len ? 0 : -1;
}

static int
write_head(struct request *r, const char *s, size_t len)
{
	if (r->fcgi)
		return FCGX_PutStr(s, (int)len, r->out) == (int)len ? 0 : -1;
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
	case 409: return "Conflict";
	case 411: return "Length Required";
	case 412: return "Precondition Failed";
	case 413: return "Content Too Large";
	case 415: return "Unsupported Media Type";
	case 416: return "Range Not Satisfiable";
	case 422: return "Unprocessable Content";
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

void
resp_error(struct request *r, int status, const char *code, const char *message)
{
	const char *extra = NULL;

	if (status == 401)
		extra = "WWW-Authenticate: Bearer realm=\"bindery\"\r\n";
	resp_json(r, status, json_pack("{s:s, s:s}", "error", code, "message", message), extra);
}

void
resp_error_retry(struct request *r, int status, const char *code, const char *message,
		 unsigned retry_after)
{
	char extra[64];

	snprintf(extra, sizeof extra, "Retry-After: %u\r\n", retry_after);
	resp_json(r, status, json_pack("{s:s, s:s}", "error", code, "message", message), extra);
}
