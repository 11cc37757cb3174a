/*
 * faultproxy - a loopback TCP proxy that misbehaves on request, for the
 * fault tests (tests/e2e/faults.sh, tests/chaos/chaos.sh).  One process,
 * poll(2), no threads.
 *
 *   faultproxy -t HOST:PORT [-r] [-l PORT] [-p PORTFILE] [-c CONTROL] [-s STATS]
 *   faultproxy -S [-l PORT] [-p PORTFILE]      a tiny HTTP server for the self-test
 *
 * It listens on 127.0.0.1:PORT (0: any free port, written to PORTFILE) and
 * forwards every connection to HOST:PORT.  The mode comes from the first line
 * of CONTROL, re-read whenever the file changes (or on SIGHUP):
 *   pass             forward untouched (also: no file, empty file)
 *   latency MS       hold every chunk MS milliseconds, both directions
 *   cut N [K [reused]]
 *                    reset both sides once a request body has passed N bytes
 *                    client->server; K times (default 1), then pass; with
 *                    reused, only requests that are not their connection's
 *                    first (a kept-alive connection the service drops)
 *   stall            stop moving bytes (connections stay open) until the mode
 *                    changes
 *   fail STATUS [K [MATCH [CODE]]]
 *                    answer the next K requests (default 1) with a canned
 *                    HTTP STATUS (412 ConditionNotMet, 503 ServerBusy, other
 *                    4xx/5xx InternalError, as Azure words them; CODE, e.g.
 *                    Md5Mismatch, overrides the word) and an x-ms-request-id
 *                    of faultproxy-N, without forwarding them, then pass;
 *                    with MATCH, only requests whose request line holds MATCH
 *                    (e.g. comp=tags, or "PUT" for any write) count
 *   lose [K]         forward the next K requests (default 1) but reset the
 *                    client when the answer starts: done, and the client
 *                    cannot know
 * Requests are framed by Content-Length (what the blob client sends).  With
 * -r (raw) nothing is framed: bytes pass as they come, for a protocol that
 * is not HTTP (MariaDB's); only pass, latency and stall make sense there.  STATS
 * is rewritten after every event: "conns= requests= failed= cut= lost= mode=
 * control=", the last the size and mtime (SIZE:SECONDS.NANOSECONDS, as
 * `stat -c %s:%.9Y` prints them) of the CONTROL it last read, so a test
 * knows when its new mode has taken (tests/lib/faultproxy.sh proxy_mode).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 256
#define CHUNK 65536
#define HEAD_MAX 16384

enum mode { M_PASS, M_LATENCY, M_CUT, M_STALL, M_FAIL, M_LOSE };

/* Client->server request framing. */
enum rstate { R_HEAD, R_BODY, R_DISCARD };

struct pipe_buf {
	char data[CHUNK + HEAD_MAX];	/* a held request head joins a chunk */
	size_t len, off;
	long long ready_at;	/* ms; latency mode holds the chunk until then */
};

struct conn {
	int cfd, sfd;			/* client side, server side (-1: none) */
	struct pipe_buf up, down;	/* client->server, server->client */
	enum rstate rs;
	char head[HEAD_MAX];
	size_t headlen;
	unsigned long long body_left, body_seen;
	unsigned long long nreq;	/* requests begun on this connection */
	int closing;			/* flush down, then close (a canned answer) */
	long fail_status;		/* the canned answer this request gets */
	char fail_code[64];		/* ... its error code ("" = by status) */
	unsigned long long fail_seq;	/* ... and its number (faultproxy-N) */
	int is_server;			/* -S: we are the HTTP server */
};

static struct conn conns[MAX_CONNS];
static enum mode mode = M_PASS;
static long mode_arg, mode_count;
static char mode_match[32];	/* fail: only request lines holding this */
static char mode_code[64];	/* fail: the x-ms-error-code ("" = by status) */
static int mode_reused;		/* cut: only a connection's later requests */
static unsigned long long n_conns, n_requests, n_failed, n_cut, n_lost;
static const char *control_path, *stats_path;
static struct timespec control_mtime;
static off_t control_size = -1;
static volatile sig_atomic_t reload = 1;

static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *
mode_name(void)
{
	static const char *const names[] = { "pass", "latency", "cut", "stall", "fail", "lose" };

	return names[mode];
}

static void
write_stats(void)
{
	char tmp[4096];
	FILE *f;

	if (stats_path == NULL ||
	    (size_t)snprintf(tmp, sizeof tmp, "%s.tmp", stats_path) >= sizeof tmp ||
	    (f = fopen(tmp, "w")) == NULL)
		return;
	fprintf(f, "conns=%llu requests=%llu failed=%llu cut=%llu lost=%llu mode=%s control=%lld:%lld.%09ld\n",
		n_conns, n_requests, n_failed, n_cut, n_lost, mode_name(), (long long)control_size,
		(long long)control_mtime.tv_sec, (long)control_mtime.tv_nsec);
	fclose(f);
	if (rename(tmp, stats_path) != 0)
		unlink(tmp);
}

/* A decimal in [0, max]; -1 otherwise. */
static long
parse_num(const char *s, long max)
{
	char *end;
	long v;

	if (s == NULL || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || (*end != '\0' && *end != '\n' && *end != ' ') || v > max)
		return -1;
	return v;
}

static void
load_control(void)
{
	char line[256], word[32], a1[32], a2[32], a3[32], a4[64];
	struct stat st;
	FILE *f;
	int n;

	reload = 0;
	if (control_path == NULL)
		return;
	if (stat(control_path, &st) != 0) {
		st.st_size = 0;
		memset(&st.st_mtim, 0, sizeof st.st_mtim);
	}
	if (st.st_size == control_size && st.st_mtim.tv_sec == control_mtime.tv_sec &&
	    st.st_mtim.tv_nsec == control_mtime.tv_nsec)
		return;
	control_size = st.st_size;
	control_mtime = st.st_mtim;
	mode = M_PASS;
	mode_arg = mode_count = 0;
	mode_reused = 0;
	mode_match[0] = mode_code[0] = '\0';
	if ((f = fopen(control_path, "r")) == NULL)
		goto out;
	if (fgets(line, sizeof line, f) != NULL) {
		a1[0] = a2[0] = a3[0] = a4[0] = '\0';
		n = sscanf(line, "%31s %31s %31s %31s %63s", word, a1, a2, a3, a4);
		if (n >= 1 && strcmp(word, "latency") == 0 && (mode_arg = parse_num(a1, 600000)) >= 0)
			mode = M_LATENCY;
		else if (n >= 1 && strcmp(word, "cut") == 0 && (mode_arg = parse_num(a1, 1L << 30)) >= 0)
			mode = M_CUT;
		else if (n >= 1 && strcmp(word, "stall") == 0)
			mode = M_STALL;
		else if (n >= 1 && strcmp(word, "fail") == 0 && (mode_arg = parse_num(a1, 599)) >= 400)
			mode = M_FAIL;
		else if (n >= 1 && strcmp(word, "lose") == 0)
			mode = M_LOSE;
		else if (n >= 1 && strcmp(word, "pass") != 0)
			fprintf(stderr, "faultproxy: unknown mode line: %s", line);
		if (mode == M_CUT || mode == M_FAIL)
			mode_count = n >= 3 && parse_num(a2, 1000000) > 0 ? parse_num(a2, 1000000) : 1;
		if (mode == M_CUT && n >= 4 && !(mode_reused = strcmp(a3, "reused") == 0))
			fprintf(stderr, "faultproxy: cut: unknown qualifier %s\n", a3);
		if (mode == M_FAIL && n >= 4)
			memcpy(mode_match, a3, sizeof mode_match);
		if (mode == M_FAIL && n == 5)
			memcpy(mode_code, a4, sizeof mode_code);
		if (mode == M_LOSE)
			mode_count = n >= 2 && parse_num(a1, 1000000) > 0 ? parse_num(a1, 1000000) : 1;
	}
	fclose(f);
out:
	fprintf(stderr, "faultproxy: mode %s %ld %ld\n", mode_name(), mode_arg, mode_count);
	write_stats();
}

static void
on_hup(int sig)
{
	(void)sig;
	reload = 1;
}

static void
close_fd(int *fd, int reset)
{
	if (*fd < 0)
		return;
	if (reset) {
		struct linger l = { 1, 0 };

		(void)setsockopt(*fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
	}
	close(*fd);
	*fd = -1;
}

static void
conn_close(struct conn *c, int reset)
{
	close_fd(&c->cfd, reset);
	close_fd(&c->sfd, reset);
	memset(c, 0, sizeof *c);
	c->cfd = c->sfd = -1;
}

/* The value of header NAME in a request head, as a number; -1 if absent. */
static long long
head_number(const char *head, const char *name)
{
	const char *p = head;
	size_t n = strlen(name);

	while ((p = strchr(p, '\n')) != NULL) {
		p++;
		if (strncasecmp(p, name, n) == 0 && p[n] == ':') {
			char *end;
			long long v;

			p += n + 1;
			while (*p == ' ' || *p == '\t')
				p++;
			errno = 0;
			v = strtoll(p, &end, 10);
			return errno || end == p || v < 0 ? -1 : v;
		}
	}
	return -1;
}

static int
head_has(const char *head, const char *needle)
{
	const char *p;
	size_t n = strlen(needle);

	for (p = head; *p; p++)
		if (strncasecmp(p, needle, n) == 0)
			return 1;
	return 0;
}

/* Whether the request line (the head's first line) holds needle ("": yes). */
static int
request_line_has(const char *head, const char *needle)
{
	const char *eol = strstr(head, "\r\n");
	size_t n = strlen(needle), len = eol ? (size_t)(eol - head) : strlen(head), i;

	for (i = 0; i + n <= len; i++)
		if (memcmp(head + i, needle, n) == 0)
			return 1;
	return 0;
}

static void
queue_down(struct conn *c, const char *text)
{
	size_t n = strlen(text);

	if (n > sizeof c->down.data - c->down.len)
		n = sizeof c->down.data - c->down.len;
	memcpy(c->down.data + c->down.len, text, n);
	c->down.len += n;
}

static void
canned_answer(struct conn *c)
{
	char body[512], resp[1024];
	const char *code = c->fail_code[0] ? c->fail_code : c->fail_status == 503 ? "ServerBusy" :
	    c->fail_status == 412 ? "ConditionNotMet" : "InternalError";
	int blen;

	blen = snprintf(body, sizeof body, "<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>%s"
			"</Code><Message>faultproxy: injected %ld</Message></Error>", code, c->fail_status);
	/* A request id as the service sends one, so a test can find it in the
	 * responder's log; n_failed already counts this answer. */
	snprintf(resp, sizeof resp, "HTTP/1.1 %ld Injected\r\nContent-Type: application/xml\r\n"
		 "x-ms-error-code: %s\r\nx-ms-request-id: faultproxy-%llu\r\n"
		 "Content-Length: %d\r\nConnection: close\r\n\r\n%s",
		 c->fail_status, code, c->fail_seq, blen, body);
	queue_down(c, resp);
	c->closing = 1;
}

/* This request gets the canned answer: count it now, so that requests in
 * flight in parallel do not all take the last one. */
static void
fail_decided(void)
{
	n_failed++;
	if (--mode_count <= 0)
		mode = M_PASS;
	write_stats();
}

static void
serve_answer(struct conn *c)
{
	char resp[256];

	snprintf(resp, sizeof resp, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
		 "Content-Length: %d\r\n\r\ngot %010llu\n", 15, c->body_seen);
	queue_down(c, resp);
}

/*
 * Account for the n bytes the client just sent (in c->up.data) and keep in
 * c->up.data only what goes on to the server: request heads are held until
 * complete (so a failed request's head is never sent), a failed request's
 * body is dropped.  Returns the count to forward, or -1 to cut the
 * connection (what the body passed so far is sent first).
 */
static long
track_request(struct conn *c, size_t n)
{
	static char out[CHUNK + HEAD_MAX];
	const char *d = c->up.data;
	size_t i = 0, o = 0, take;

	while (i < n) {
		if (c->rs == R_HEAD) {
			long long cl;

			if (c->headlen >= HEAD_MAX - 1)
				return -1;	/* no HTTP we know: give up on it */
			c->head[c->headlen++] = d[i++];
			c->head[c->headlen] = '\0';
			if (c->headlen < 4 || memcmp(c->head + c->headlen - 4, "\r\n\r\n", 4) != 0)
				continue;
			cl = head_number(c->head, "Content-Length");
			n_requests++;
			c->nreq++;
			write_stats();	/* a test counts requests on a kept-alive connection too */
			c->body_left = cl > 0 ? (unsigned long long)cl : 0;
			c->body_seen = 0;
			if (!c->is_server && mode == M_FAIL && request_line_has(c->head, mode_match)) {
				c->fail_status = mode_arg;
				memcpy(c->fail_code, mode_code, sizeof c->fail_code);
				fail_decided();
				c->fail_seq = n_failed;
				/* Answer at once if the client waits for 100-continue
				 * (it then never sends the body), else after the body. */
				c->headlen = 0;
				if (c->body_left == 0 || head_has(c->head, "100-continue")) {
					canned_answer(c);
					break;
				}
				c->rs = R_DISCARD;
				continue;
			}
			if (!c->is_server) {
				memcpy(out + o, c->head, c->headlen);
				o += c->headlen;
			}
			c->headlen = 0;
			c->rs = R_BODY;
			if (c->body_left == 0) {
				c->rs = R_HEAD;
				if (c->is_server)
					serve_answer(c);
			}
			continue;
		}
		take = n - i;
		if (take > c->body_left)
			take = (size_t)c->body_left;
		if (c->rs == R_BODY && !c->is_server) {
			memcpy(out + o, d + i, take);
			o += take;
		}
		i += take;
		c->body_left -= take;
		c->body_seen += take;
		if (c->rs == R_DISCARD) {
			if (c->body_left == 0) {
				c->rs = R_HEAD;
				canned_answer(c);
				break;
			}
			continue;
		}
		if (!c->is_server && mode == M_CUT && c->body_seen >= (unsigned long long)mode_arg &&
		    (!mode_reused || c->nreq > 1)) {
			int fl = fcntl(c->sfd, F_GETFL);

			fcntl(c->sfd, F_SETFL, fl & ~O_NONBLOCK);
			if (c->up.off == 0)
				(void)send(c->sfd, out, o, MSG_NOSIGNAL);
			n_cut++;
			if (--mode_count <= 0)
				mode = M_PASS;
			write_stats();
			return -1;
		}
		if (c->body_left == 0) {
			c->rs = R_HEAD;
			if (c->is_server)
				serve_answer(c);
		}
	}
	memcpy(c->up.data, out, o);
	return (long)o;
}

static int
connect_target(const struct sockaddr_in *target)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (fd < 0)
		return -1;
	if (connect(fd, (const struct sockaddr *)target, sizeof *target) != 0) {
		close(fd);
		return -1;
	}
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	return fd;
}

static int
parse_target(const char *s, struct sockaddr_in *out)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	long port;

	if (colon == NULL || (size_t)(colon - s) >= sizeof host)
		return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	port = parse_num(colon + 1, 65535);
	memset(out, 0, sizeof *out);
	out->sin_family = AF_INET;
	out->sin_port = htons((unsigned short)port);
	return port > 0 && inet_pton(AF_INET, strcmp(host, "localhost") == 0 ? "127.0.0.1" : host,
				     &out->sin_addr) == 1 ? 0 : -1;
}

/* Move one buffer's bytes to fd; 0 ok, -1 the peer is gone. */
static int
flush_buf(struct pipe_buf *b, int fd, long long now)
{
	ssize_t w;

	if (b->len == b->off || fd < 0 || mode == M_STALL)
		return 0;
	if (mode == M_LATENCY && now < b->ready_at)
		return 0;
	w = send(fd, b->data + b->off, b->len - b->off, MSG_NOSIGNAL);
	if (w < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
	b->off += (size_t)w;
	if (b->off == b->len)
		b->off = b->len = 0;
	return 0;
}

int
main(int argc, char **argv)
{
	struct sockaddr_in target, addr;
	socklen_t alen = sizeof addr;
	const char *port_file = NULL;
	struct pollfd pfd[1 + 2 * MAX_CONNS];
	int idx[1 + 2 * MAX_CONNS];
	long listen_port = 0;
	int lfd = -1, opt, one = 1, serve = 0, have_target = 0, raw = 0, i, rc = 1;
	FILE *f;

	while ((opt = getopt(argc, argv, "t:rl:p:c:s:S")) != -1) {
		switch (opt) {
		case 't': have_target = parse_target(optarg, &target) == 0; if (!have_target) goto usage; break;
		case 'l': if ((listen_port = parse_num(optarg, 65535)) < 0) goto usage; break;
		case 'p': port_file = optarg; break;
		case 'c': control_path = optarg; break;
		case 's': stats_path = optarg; break;
		case 'S': serve = 1; break;
		case 'r': raw = 1; break;
		default: goto usage;
		}
	}
	if (!serve && !have_target)
		goto usage;
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, on_hup);
	for (i = 0; i < MAX_CONNS; i++)
		conns[i].cfd = conns[i].sfd = -1;
	if ((lfd = socket(AF_INET, SOCK_STREAM, 0)) < 0)
		goto fail;
	(void)setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	memset(&addr, 0, sizeof addr);
	addr.sin_family = AF_INET;
	addr.sin_port = htons((unsigned short)listen_port);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(lfd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(lfd, 64) != 0 ||
	    getsockname(lfd, (struct sockaddr *)&addr, &alen) != 0)
		goto fail;
	fcntl(lfd, F_SETFL, O_NONBLOCK);
	if (port_file) {
		char tmp[4096];

		if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", port_file) >= sizeof tmp ||
		    (f = fopen(tmp, "w")) == NULL)
			goto fail;
		fprintf(f, "%u\n", ntohs(addr.sin_port));
		fclose(f);
		if (rename(tmp, port_file) != 0)
			goto fail;
	}
	write_stats();

	for (;;) {
		long long now = now_ms(), wake = -1;
		int n = 0, timeout;

		if (reload || control_path)
			load_control();
		pfd[n].fd = lfd;
		pfd[n].events = POLLIN;
		idx[n++] = -1;
		for (i = 0; i < MAX_CONNS; i++) {
			struct conn *c = &conns[i];
			int stalled = mode == M_STALL && !c->is_server;
			int up_due = c->up.len > c->up.off && (mode != M_LATENCY || now >= c->up.ready_at);
			int down_due = c->down.len > c->down.off &&
				       (mode != M_LATENCY || now >= c->down.ready_at);

			if (c->cfd < 0)
				continue;
			/* Read a side only when the buffer toward the other is empty. */
			pfd[n].fd = c->cfd;
			pfd[n].events = (!stalled && !c->closing && c->up.len == 0 ? POLLIN : 0) |
					(!stalled && down_due ? POLLOUT : 0);
			idx[n++] = i;
			if (c->sfd >= 0) {
				pfd[n].fd = c->sfd;
				pfd[n].events = (!stalled && c->down.len == 0 && !c->closing ? POLLIN : 0) |
						(!stalled && up_due ? POLLOUT : 0);
				idx[n++] = i;
			}
			if (mode == M_LATENCY) {
				if (c->up.len > c->up.off && (wake < 0 || c->up.ready_at < wake))
					wake = c->up.ready_at;
				if (c->down.len > c->down.off && (wake < 0 || c->down.ready_at < wake))
					wake = c->down.ready_at;
			}
		}
		timeout = control_path ? 100 : -1;
		if (wake >= 0) {
			long long d = wake - now;

			if (d < 0)
				d = 0;
			if (timeout < 0 || d < timeout)
				timeout = (int)d;
		}
		if (poll(pfd, (nfds_t)n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			goto fail;
		}
		now = now_ms();
		if (pfd[0].revents & POLLIN) {
			int cfd = accept(lfd, NULL, NULL);

			if (cfd >= 0) {
				for (i = 0; i < MAX_CONNS && conns[i].cfd >= 0; i++)
					;
				if (i == MAX_CONNS) {
					close(cfd);
				} else {
					struct conn *c = &conns[i];

					memset(c, 0, sizeof *c);
					c->sfd = -1;
					c->cfd = cfd;
					c->is_server = serve;
					(void)setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
					fcntl(cfd, F_SETFL, O_NONBLOCK);
					if (!serve && (c->sfd = connect_target(&target)) < 0)
						conn_close(c, 1);
					else
						n_conns++;
					write_stats();
				}
			}
		}
		for (i = 1; i < n; i++) {
			struct conn *c = &conns[idx[i]];
			int fd = pfd[i].fd, from_client = fd == c->cfd;
			short ev = pfd[i].revents;

			if (c->cfd < 0 || ev == 0 || (fd != c->cfd && fd != c->sfd))
				continue;
			if (ev & POLLIN || ev & (POLLHUP | POLLERR)) {
				struct pipe_buf *b = from_client ? &c->up : &c->down;
				ssize_t r = -1;

				if (b->len == 0 && (ev & POLLIN))
					r = recv(fd, b->data, CHUNK, 0);
				if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
					/* One side is gone: pass on what the server said, then close. */
					if (!from_client && c->down.len > c->down.off) {
						int fl = fcntl(c->cfd, F_GETFL);

						fcntl(c->cfd, F_SETFL, fl & ~O_NONBLOCK);
						(void)send(c->cfd, c->down.data + c->down.off,
							   c->down.len - c->down.off, MSG_NOSIGNAL);
					}
					conn_close(c, 0);
					continue;
				}
				if (r > 0 && !from_client && mode == M_LOSE && !c->is_server) {
					n_lost++;
					if (--mode_count <= 0)
						mode = M_PASS;
					write_stats();
					conn_close(c, 1);
					continue;
				}
				if (r > 0) {
					long keep;

					b->len = (size_t)r;
					b->off = 0;
					b->ready_at = now + (mode == M_LATENCY ? mode_arg : 0);
					if (from_client && !raw) {
						keep = track_request(c, (size_t)r);
						if (keep < 0) {
							conn_close(c, 1);
							continue;
						}
						b->len = (size_t)keep;
						if (c->is_server)
							b->len = 0;	/* the server consumes */
					}
				}
			}
			if (c->cfd >= 0 && (flush_buf(&c->up, c->sfd, now) != 0 ||
			    flush_buf(&c->down, c->cfd, now) != 0)) {
				conn_close(c, 0);
				continue;
			}
			if (c->closing && c->down.len == c->down.off) {
				shutdown(c->cfd, SHUT_WR);
				conn_close(c, 0);
			}
		}
	}
usage:
	fprintf(stderr, "usage: faultproxy -t HOST:PORT [-r] [-l PORT] [-p PORTFILE] [-c CONTROL] [-s STATS]\n"
		"       faultproxy -S [-l PORT] [-p PORTFILE]\n");
	return 64;
fail:
	perror("faultproxy");
	if (lfd >= 0)
		close(lfd);
	return rc;
}
