/* clamd.c - see clamd.h. */
#include <assert.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "protocol/clamd.h"

/* The longest answer read: clamd's are one short line. */
#define CLAMD_REPLY_MAX 1024
/* How much of an answer a message quotes, escaped. */
#define CLAMD_QUOTE_MAX 200

/* Every signature AlertExceedsMax reports starts so (clamd.conf(5)). */
static const char limits_prefix[] = "Heuristics.Limits.Exceeded";

struct clamd {
	int fd;			/* -1 once closed */
	int timeout_ms;
	int settled;		/* verdict is final */
	int finished;
	uint64_t fed;
	char addr[CLAMD_HOST_MAX + 16];	/* as given, escaped, for the messages */
	struct clamd_verdict verdict;
	size_t chunk_len;	/* data gathered after the chunk's 4-byte length */
	/* A chunk's length, its data, and room for the zero-length chunk that
	 * ends the stream, so the end goes in the same send as the last data. */
	unsigned char chunk[4 + CLAMD_CHUNK_SIZE + 4];
};

const char *
clamd_err_str(enum clamd_err e)
{
	switch (e) {
	case CLAMD_OK: return "ok";
	case CLAMD_ERR_ADDRESS: return "not an address of clamd (unix:/PATH or HOST:PORT)";
	case CLAMD_ERR_NOMEM: return "out of memory";
	case CLAMD_ERR_UNAVAILABLE: return "clamd is unavailable";
	}
	return "unknown error";
}

const char *
clamd_result_str(enum clamd_result r)
{
	switch (r) {
	case CLAMD_CLEAN: return "clean";
	case CLAMD_INFECTED: return "infected";
	case CLAMD_LIMIT: return "limit";
	case CLAMD_UNAVAILABLE: return "unavailable";
	}
	return "unknown";
}

/* --- the address ---------------------------------------------------------- */

/* '_' is not in a DNS host name (RFC 952), but container runtimes and
 * /etc/hosts give such names, and the resolver takes them. */
static int
is_name_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '-' || ch == '.' || ch == '_';
}

static int
is_ipv6_char(char ch)
{
	return (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F') || (ch >= '0' && ch <= '9') ||
	       ch == ':' || ch == '.';
}

enum clamd_err
clamd_address_parse(const char *addr, struct clamd_address *out, const char **why)
{
	const char *w, *colon, *host, *port;
	size_t hostlen, portlen, i;
	unsigned long value = 0;
	int bracketed = 0;

	memset(out, 0, sizeof *out);
	if (addr == NULL || *addr == '\0') {
		w = "the address is empty";
		goto bad;
	}
	if (strstr(addr, "://") != NULL) {
		w = "a URL is not an address of clamd: unix:/PATH or HOST:PORT";
		goto bad;
	}
	if (strncmp(addr, "unix:", 5) == 0) {
		const char *path = addr + 5;
		size_t n = strlen(path);

		/* The responder's working directory is the web server's
		 * choice: a relative path would name a different socket. */
		if (path[0] != '/') {
			w = "unix: needs an absolute path";
			goto bad;
		}
		if (n >= sizeof out->path) {
			w = "the socket path is longer than a unix socket address holds (107 bytes)";
			goto bad;
		}
		out->kind = CLAMD_ADDRESS_UNIX;
		memcpy(out->path, path, n + 1);
		return CLAMD_OK;
	}
	colon = strrchr(addr, ':');
	if (colon == NULL) {
		w = "neither unix:/PATH nor HOST:PORT";
		goto bad;
	}
	host = addr;
	hostlen = (size_t)(colon - addr);
	port = colon + 1;
	portlen = strlen(port);
	if (hostlen >= 2 && host[0] == '[' && host[hostlen - 1] == ']') {
		host++;
		hostlen -= 2;
		bracketed = 1;
	}
	if (hostlen == 0) {
		w = "HOST:PORT without a host";
		goto bad;
	}
	if (hostlen >= sizeof out->host) {
		w = "the host is longer than 253 bytes";
		goto bad;
	}
	for (i = 0; i < hostlen; i++) {
		if (bracketed ? is_ipv6_char(host[i]) : is_name_char(host[i]))
			continue;
		w = !bracketed && host[i] == ':' ? "an IPv6 address needs brackets: [ADDRESS]:PORT" :
		    bracketed ? "not an IPv6 address between the brackets" :
				"the host has a character no host name or address has";
		goto bad;
	}
	if (portlen == 0 || portlen > 5) {
		w = "the port is not a number from 1 to 65535";
		goto bad;
	}
	for (i = 0; i < portlen; i++) {
		if (port[i] < '0' || port[i] > '9') {
			w = "the port is not a number from 1 to 65535";
			goto bad;
		}
		value = value * 10 + (unsigned long)(port[i] - '0');
	}
	if (value < 1 || value > 65535) {
		w = "the port is not a number from 1 to 65535";
		goto bad;
	}
	out->kind = CLAMD_ADDRESS_TCP;
	memcpy(out->host, host, hostlen);
	out->host[hostlen] = '\0';
	memcpy(out->port, port, portlen + 1);
	return CLAMD_OK;
bad:
	if (why != NULL)
		*why = w;
	return CLAMD_ERR_ADDRESS;
}

/* --- the answer ----------------------------------------------------------- */

static int
is_plain(unsigned char ch)
{
	return ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\';
}

/*
 * p[n] into out[outlen] (> 4) with every byte outside printable ASCII, '"'
 * and '\\' as \xNN, so clamd's words can neither end a log line nor be
 * mistaken for the quotes around them; cut, and ended "...", when all of
 * it does not fit.
 */
static void
escape_text(const char *p, size_t n, char *out, size_t outlen)
{
	size_t i, need = 0, pos = 0, room = outlen - 1;

	assert(outlen > 4);
	for (i = 0; i < n; i++)
		need += is_plain((unsigned char)p[i]) ? 1 : 4;
	if (need > room)
		room -= 3;
	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)p[i];

		if (is_plain(ch)) {
			if (pos + 1 > room)
				break;
			out[pos++] = (char)ch;
		} else {
			if (pos + 4 > room)
				break;
			snprintf(out + pos, 5, "\\x%02x", ch);
			pos += 4;
		}
	}
	if (need > outlen - 1) {
		memcpy(out + pos, "...", 3);
		pos += 3;
	}
	out[pos] = '\0';
}

static int
ends_with(const char *p, size_t n, const char *suffix)
{
	size_t m = strlen(suffix);

	return n >= m && memcmp(p + n - m, suffix, m) == 0;
}

/* Whether p[n] holds needle, ASCII case ignored. */
static int
contains_nocase(const char *p, size_t n, const char *needle)
{
	size_t m = strlen(needle), i;

	for (i = 0; m <= n && i <= n - m; i++)
		if (strncasecmp(p + i, needle, m) == 0)
			return 1;
	return 0;
}

/*
 * The length of name[n] without the "(HASH:SIZE)" clamd appends under
 * ExtendedDetectionInfo (the hash and size of what matched): the name alone
 * is what a log line or a search for the signature needs; the message
 * keeps the whole answer.
 */
static size_t
name_without_extended_info(const char *name, size_t n)
{
	size_t open, i, colons = 0;

	if (n < 4 || name[n - 1] != ')')
		return n;
	for (open = n - 1; open > 0 && name[open] != '('; open--)
		;
	if (name[open] != '(' || open == 0)
		return n;
	for (i = open + 1; i < n - 1; i++) {
		char ch = name[i];

		if (ch == ':')
			colons++;
		else if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F')))
			return n;
	}
	return colons == 1 && name[open + 1] != ':' && name[n - 2] != ':' ? open : n;
}

enum clamd_result
clamd_reply_parse(const char *reply, size_t len, int whole, struct clamd_verdict *out)
{
	static const char prefix[] = "stream: ", found[] = " FOUND", error[] = " ERROR";
	char quoted[CLAMD_QUOTE_MAX];

	memset(out, 0, sizeof *out);
	escape_text(reply, len, quoted, sizeof quoted);
	if (len == sizeof "stream: OK" - 1 && memcmp(reply, "stream: OK", len) == 0) {
		if (!whole) {
			/* Only the end of the stream starts the scan: an OK
			 * before it speaks of nothing we sent. */
			out->result = CLAMD_UNAVAILABLE;
			snprintf(out->message, sizeof out->message,
				 "clamd answered \"%s\" before the end of the stream", quoted);
		} else {
			out->result = CLAMD_CLEAN;
			snprintf(out->message, sizeof out->message, "clamd answered \"%s\"", quoted);
		}
		return out->result;
	}
	if (len > sizeof prefix - 1 + sizeof found - 1 && memcmp(reply, prefix, sizeof prefix - 1) == 0 &&
	    ends_with(reply, len, found)) {
		const char *name = reply + sizeof prefix - 1;
		size_t n = len - (sizeof prefix - 1) - (sizeof found - 1);

		n = name_without_extended_info(name, n);
		escape_text(name, n, out->signature, sizeof out->signature);
		/* A limit clamd reports by name (AlertExceedsMax) means the
		 * file was not scanned: never clean, and not a detection. */
		if (n >= sizeof limits_prefix - 1 && memcmp(name, limits_prefix, sizeof limits_prefix - 1) == 0) {
			out->result = CLAMD_LIMIT;
			snprintf(out->message, sizeof out->message,
				 "clamd answered \"%s\": past one of its limits, not scanned", quoted);
		} else {
			out->result = CLAMD_INFECTED;
			snprintf(out->message, sizeof out->message, "clamd answered \"%s\"", quoted);
		}
		return out->result;
	}
	if (ends_with(reply, len, error) && contains_nocase(reply, len, "size limit exceeded")) {
		/* "INSTREAM size limit exceeded. ERROR": past StreamMaxLength,
		 * clamd stops reading and scans nothing. */
		out->result = CLAMD_LIMIT;
		snprintf(out->message, sizeof out->message,
			 "clamd answered \"%s\": the stream is longer than its StreamMaxLength", quoted);
		return out->result;
	}
	out->result = CLAMD_UNAVAILABLE;
	if (ends_with(reply, len, error))
		snprintf(out->message, sizeof out->message, "clamd answered \"%s\"", quoted);
	else
		snprintf(out->message, sizeof out->message, "clamd's answer is not understood: \"%s\"", quoted);
	return out->result;
}

/* --- the connection ------------------------------------------------------- */

/* The verdict is r with no signature and the message fmt; the connection
 * is closed. */
static void BINDERY_PRINTF(3, 4)
settle(struct clamd *c, enum clamd_result r, const char *fmt, ...)
{
	va_list ap;

	c->verdict.result = r;
	c->verdict.signature[0] = '\0';
	va_start(ap, fmt);
	/* A message cut short is still a message: no truncation check. */
	vsnprintf(c->verdict.message, sizeof c->verdict.message, fmt, ap);
	va_end(ap);
	c->settled = 1;
	if (c->fd >= 0) {
		close(c->fd);
		c->fd = -1;
	}
}

/* Wait until fd has one of events or deadline (clock_now_ms) passes: the
 * revents, 0 at the deadline, -1 when poll fails (errno). */
static int
wait_fd(int fd, short events, int64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = events };

	for (;;) {
		int64_t left = deadline - clock_now_ms();
		int rc;

		rc = poll(&p, 1, left > 0 ? (int)left : 0);
		if (rc > 0)
			return p.revents;
		if (rc == 0)
			return 0;
		if (errno != EINTR)
			return -1;
	}
}

/* A non-blocking connection to sa, made by deadline: the descriptor, or -1
 * with *err the reason (ETIMEDOUT at the deadline). */
static int
connect_by(const struct sockaddr *sa, socklen_t salen, int64_t deadline, int *err)
{
	int fd, ev, soerr = 0;
	socklen_t len = sizeof soerr;

	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		*err = errno;
		return -1;
	}
	if (connect(fd, sa, salen) == 0)
		return fd;
	if (errno != EINPROGRESS && errno != EINTR) {
		/* A unix socket whose backlog is full says EAGAIN at once:
		 * clamd is as unavailable as when it is down. */
		*err = errno;
		close(fd);
		return -1;
	}
	ev = wait_fd(fd, POLLOUT, deadline);
	if (ev <= 0) {
		*err = ev == 0 ? ETIMEDOUT : errno;
		close(fd);
		return -1;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0 || soerr != 0) {
		*err = soerr != 0 ? soerr : errno;
		close(fd);
		return -1;
	}
	return fd;
}

/* Connect c to a within one timeout; settles c when that fails. */
static void
connect_to(struct clamd *c, const struct clamd_address *a)
{
	int64_t deadline = clock_now_ms() + c->timeout_ms;
	int err = 0, rc;

	if (a->kind == CLAMD_ADDRESS_UNIX) {
		struct sockaddr_un sun;

		memset(&sun, 0, sizeof sun);
		sun.sun_family = AF_UNIX;
		memcpy(sun.sun_path, a->path, strlen(a->path) + 1);
		c->fd = connect_by((const struct sockaddr *)&sun, sizeof sun, deadline, &err);
	} else {
		struct addrinfo hints, *res = NULL, *ai;

		memset(&hints, 0, sizeof hints);
		hints.ai_family = AF_UNSPEC;
		hints.ai_socktype = SOCK_STREAM;
		hints.ai_flags = AI_NUMERICSERV;
		rc = getaddrinfo(a->host, a->port, &hints, &res);
		if (rc != 0) {
			settle(c, CLAMD_UNAVAILABLE, "clamd at %s: cannot resolve %s: %s", c->addr, a->host,
			       rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
			return;
		}
		/* Each address the name has, in the resolver's order, until
		 * one connects or the step's time is spent. */
		for (ai = res; ai != NULL && c->fd < 0; ai = ai->ai_next) {
			c->fd = connect_by(ai->ai_addr, ai->ai_addrlen, deadline, &err);
			if (c->fd < 0 && clock_now_ms() >= deadline)
				break;
		}
		freeaddrinfo(res);
	}
	if (c->fd >= 0)
		return;
	if (err == ETIMEDOUT)
		settle(c, CLAMD_UNAVAILABLE, "clamd at %s: no connection within %d ms", c->addr, c->timeout_ms);
	else
		settle(c, CLAMD_UNAVAILABLE, "clamd at %s: cannot connect: %s", c->addr, strerror(err));
}

/*
 * Read one answer, up to its terminator (NUL after a "z" command; a newline
 * is taken as well), within one timeout, into line[cap] (NUL-terminated,
 * *len bytes without the terminator).  0, or -1 with c settled unavailable.
 */
static int
read_line(struct clamd *c, char *line, size_t cap, size_t *len)
{
	int64_t deadline = clock_now_ms() + c->timeout_ms;
	size_t have = 0, i;

	for (;;) {
		int ev = wait_fd(c->fd, POLLIN, deadline);
		ssize_t r;

		if (ev < 0) {
			settle(c, CLAMD_UNAVAILABLE, "clamd at %s: poll: %s", c->addr, strerror(errno));
			return -1;
		}
		if (ev == 0) {
			settle(c, CLAMD_UNAVAILABLE, "clamd at %s: no answer within %d ms", c->addr,
			       c->timeout_ms);
			return -1;
		}
		r = recv(c->fd, line + have, cap - 1 - have, 0);
		if (r < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				continue;
			settle(c, CLAMD_UNAVAILABLE, "clamd at %s: cannot read its answer: %s", c->addr,
			       strerror(errno));
			return -1;
		}
		if (r == 0) {
			settle(c, CLAMD_UNAVAILABLE, "clamd at %s: closed the connection %s", c->addr,
			       have ? "in the middle of its answer" : "without an answer");
			return -1;
		}
		for (i = have; i < have + (size_t)r; i++) {
			if (line[i] == '\0' || line[i] == '\n') {
				line[i] = '\0';
				*len = i;
				return 0;
			}
		}
		have += (size_t)r;
		if (have == cap - 1) {
			settle(c, CLAMD_UNAVAILABLE, "clamd at %s: an answer longer than %zu bytes", c->addr,
			       cap - 1);
			return -1;
		}
	}
}

/* clamd's answer to the stream as the verdict; whole when all of the
 * stream was sent.  The stream is settled afterwards, and closed. */
static void
read_answer(struct clamd *c, int whole)
{
	char line[CLAMD_REPLY_MAX];
	size_t len = 0;

	if (read_line(c, line, sizeof line, &len) != 0)
		return;
	clamd_reply_parse(line, len, whole, &c->verdict);
	c->settled = 1;
	close(c->fd);
	c->fd = -1;
}

/*
 * Send p[n] within one timeout: 0 when all of it went.  Otherwise -1 and
 * the stream is settled: clamd answered before the end (a size limit: the
 * socket turned readable, or a send failed because clamd had closed it,
 * and its answer is the verdict), or it failed.
 */
static int
send_bytes(struct clamd *c, const unsigned char *p, size_t n)
{
	int64_t deadline = clock_now_ms() + c->timeout_ms;

	while (n > 0) {
		int ev = wait_fd(c->fd, POLLOUT | POLLIN, deadline);
		ssize_t w;

		if (ev < 0) {
			settle(c, CLAMD_UNAVAILABLE, "clamd at %s: poll: %s", c->addr, strerror(errno));
			return -1;
		}
		if (ev == 0) {
			settle(c, CLAMD_UNAVAILABLE,
			       "clamd at %s: took no more of the stream within %d ms (%llu bytes fed)", c->addr,
			       c->timeout_ms, (unsigned long long)c->fed);
			return -1;
		}
		/* clamd says nothing until the end unless it gives up on the
		 * stream: whatever it says now is its answer. */
		if (ev & (POLLIN | POLLHUP | POLLERR)) {
			read_answer(c, 0);
			return -1;
		}
		w = send(c->fd, p, n, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				continue;
			if (errno == EPIPE || errno == ECONNRESET) {
				read_answer(c, 0);
				return -1;
			}
			settle(c, CLAMD_UNAVAILABLE, "clamd at %s: cannot send: %s", c->addr, strerror(errno));
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Send the gathered chunk, and the zero-length chunk after it when last. */
static void
send_chunk(struct clamd *c, int last)
{
	unsigned char *end = c->chunk + 4 + c->chunk_len;
	unsigned char *start = c->chunk_len > 0 ? c->chunk : end;
	uint32_t n = (uint32_t)c->chunk_len;

	c->chunk[0] = (unsigned char)(n >> 24);
	c->chunk[1] = (unsigned char)(n >> 16);
	c->chunk[2] = (unsigned char)(n >> 8);
	c->chunk[3] = (unsigned char)n;
	if (last) {
		memset(end, 0, 4);
		end += 4;
	}
	c->chunk_len = 0;
	if (end > start)
		(void)send_bytes(c, start, (size_t)(end - start));
}

/* A connection to addr that has sent cmd[cmdlen], or one settled
 * unavailable; CLAMD_ERR_ADDRESS or CLAMD_ERR_NOMEM with *out NULL. */
static enum clamd_err
start(const char *addr, int timeout_ms, const char *cmd, size_t cmdlen, struct clamd **out)
{
	struct clamd_address a;
	struct clamd *c;

	assert(timeout_ms > 0);
	*out = NULL;
	if (clamd_address_parse(addr, &a, NULL) != CLAMD_OK)
		return CLAMD_ERR_ADDRESS;
	c = alloc_calloc(1, sizeof *c);
	if (c == NULL)
		return CLAMD_ERR_NOMEM;
	c->fd = -1;
	c->timeout_ms = timeout_ms;
	/* A socket's path may hold any byte: escaped, it cannot break a log line. */
	escape_text(addr, strlen(addr), c->addr, sizeof c->addr);
	connect_to(c, &a);
	if (!c->settled)
		(void)send_bytes(c, (const unsigned char *)cmd, cmdlen);
	*out = c;
	return CLAMD_OK;
}

enum clamd_err
clamd_open(const char *addr, int timeout_ms, struct clamd **out)
{
	/* "z": the command and clamd's answer both end in a NUL. */
	static const char cmd[] = "zINSTREAM";

	return start(addr, timeout_ms, cmd, sizeof cmd, out);
}

void
clamd_feed(struct clamd *c, const void *p, size_t n)
{
	const unsigned char *b = p;

	assert(!c->finished);
	c->fed += n;
	while (n > 0 && !c->settled) {
		size_t take = CLAMD_CHUNK_SIZE - c->chunk_len;

		if (take > n)
			take = n;
		memcpy(c->chunk + 4 + c->chunk_len, b, take);
		c->chunk_len += take;
		b += take;
		n -= take;
		if (c->chunk_len == CLAMD_CHUNK_SIZE)
			send_chunk(c, 0);
	}
}

int
clamd_settled(const struct clamd *c)
{
	return c->settled;
}

uint64_t
clamd_fed(const struct clamd *c)
{
	return c->fed;
}

enum clamd_result
clamd_finish(struct clamd *c, struct clamd_verdict *out)
{
	if (!c->finished) {
		c->finished = 1;
		if (!c->settled)
			send_chunk(c, 1);
		if (!c->settled)
			read_answer(c, 1);
	}
	*out = c->verdict;
	return out->result;
}

void
clamd_free(struct clamd *c)
{
	if (c == NULL)
		return;
	if (c->fd >= 0)
		close(c->fd);
	alloc_free(c);
}

enum clamd_err
clamd_ping(const char *addr, int timeout_ms, char *msg, size_t msglen)
{
	static const char cmd[] = "zPING";
	struct clamd *c = NULL;
	char line[CLAMD_REPLY_MAX], quoted[CLAMD_QUOTE_MAX];
	size_t len = 0;
	int64_t t0 = clock_now_ms();
	enum clamd_err e;

	e = start(addr, timeout_ms, cmd, sizeof cmd, &c);
	if (e != CLAMD_OK) {
		if (addr == NULL)
			addr = "";
		escape_text(addr, strlen(addr), quoted, sizeof quoted);
		if (msglen > 0)
			snprintf(msg, msglen, "clamd at \"%s\": %s", quoted, clamd_err_str(e));
		goto out;
	}
	if (c->settled || read_line(c, line, sizeof line, &len) != 0) {
		e = CLAMD_ERR_UNAVAILABLE;
		if (msglen > 0)
			snprintf(msg, msglen, "%s", c->verdict.message);
		goto out;
	}
	if (len == 4 && memcmp(line, "PONG", 4) == 0) {
		if (msglen > 0)
			snprintf(msg, msglen, "clamd at %s answered PONG in %lld ms", c->addr,
				 (long long)(clock_now_ms() - t0));
		goto out;
	}
	e = CLAMD_ERR_UNAVAILABLE;
	escape_text(line, len, quoted, sizeof quoted);
	if (msglen > 0)
		snprintf(msg, msglen, "clamd at %s answered \"%s\" to PING", c->addr, quoted);
out:
	clamd_free(c);
	return e;
}
