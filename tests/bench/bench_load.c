/*
 * bench_load - the load generator and memory sampler of `./dev bench`
 * (tests/bench/bench.sh).  Not a test.
 *
 *   bench_load load [-c CLIENTS] [-n PER-CLIENT] [-s BYTES] [-X METHOD]
 *       [-x STATUS] [-H HEADER]... [-L FILE] URL
 *     CLIENTS threads (default 4), each with its own libcurl handle kept
 *     alive across its requests, send PER-CLIENT requests (default 100)
 *     with a body of BYTES random bytes (default 1024) and METHOD (default
 *     POST).  "@N@" in URL becomes "CLIENT-SEQ", so every request names a
 *     new document or blob.  Every answer must be STATUS (default 201);
 *     with -L, each answer's Location is written to FILE, one a line (the
 *     bench deletes what it made).  Prints one JSON line:
 *     {"requests","seconds","rate","p50_ms","p99_ms"}; exit 1 on any other
 *     status or a transport error.
 *
 *   bench_load rss [-i MS] EXE...
 *     Every MS milliseconds (default 20) reads RssAnon from
 *     /proc/PID/status of every process whose /proc/PID/exe is one of the
 *     EXE paths (all of them: lighttpd and mod_fcgid start several), until
 *     SIGTERM or SIGINT; then prints the largest value seen, in KiB, and
 *     the number of samples: {"rss_anon_kib","samples"}.  Private memory,
 *     not VmRSS: the shared pages of libcurl and GnuTLS are the same in
 *     every process and do not grow with a document.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "base/buf.h"

#define MAX_HEADERS 16
#define MAX_EXES 8

enum load_err {
	LOAD_OK = 0,
	LOAD_USAGE,	/* bad arguments */
	LOAD_NOMEM,	/* allocation failed */
	LOAD_FAILED,	/* a request failed or answered the wrong status */
};

struct load_opts {
	long clients, per_client, body_len, expect;
	const char *method, *url, *locations;
	const char *headers[MAX_HEADERS];
	int nheaders;
};

struct client {
	const struct load_opts *o;
	long id;
	double *ms;		/* one latency per request */
	long done;
	struct buf location;	/* the last answer's Location */
	struct buf locations;	/* every Location, one a line */
	char error[256];	/* the first failure, for the report */
	enum load_err rc;
};

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t
discard_body(char *p, size_t size, size_t n, void *ctx)
{
	(void)p;
	(void)ctx;
	return size * n;
}

/* Keep the value of a Location header line (libcurl hands headers one line
 * at a time, CRLF included). */
static size_t
keep_location(char *p, size_t size, size_t n, void *ctx)
{
	struct client *c = ctx;
	size_t len = size * n, i = 9;

	if (len > 9 && strncasecmp(p, "location:", 9) == 0) {
		while (i < len && (p[i] == ' ' || p[i] == '\t'))
			i++;
		while (len > i && (p[len - 1] == '\r' || p[len - 1] == '\n'))
			len--;
		c->location.len = 0;
		if (buf_append(&c->location, p + i, len - i) != BUF_OK)
			return 0;
	}
	return size * n;
}

/* URL with "@N@" replaced by CLIENT-SEQ. */
BINDERY_NODISCARD static enum load_err
request_url(const char *tmpl, long client, long seq, struct buf *out)
{
	const char *at = strstr(tmpl, "@N@");

	out->len = 0;
	if (at == NULL)
		return buf_append_cstr(out, tmpl) == BUF_OK ? LOAD_OK : LOAD_NOMEM;
	if (buf_append(out, tmpl, (size_t)(at - tmpl)) != BUF_OK ||
	    buf_appendf(out, "%ld-%ld", client, seq) != BUF_OK ||
	    buf_append_cstr(out, at + 3) != BUF_OK)
		return LOAD_NOMEM;
	return LOAD_OK;
}

/* The request headers: no 100-continue round trip, then the caller's.  On
 * failure *hdrs keeps what was built, for the caller to free. */
BINDERY_NODISCARD static enum load_err
client_headers(const struct load_opts *o, struct curl_slist **hdrs)
{
	struct curl_slist *next;
	int i;

	if ((*hdrs = curl_slist_append(NULL, "Expect:")) == NULL)
		return LOAD_NOMEM;
	for (i = 0; i < o->nheaders; i++) {
		if ((next = curl_slist_append(*hdrs, o->headers[i])) == NULL)
			return LOAD_NOMEM;
		*hdrs = next;
	}
	return LOAD_OK;
}

/* One handle for all of a client's requests, so its connection stays open. */
BINDERY_NODISCARD static enum load_err
client_handle(struct client *c, const char *body, struct curl_slist **hdrs,
    CURL **out)
{
	const struct load_opts *o = c->o;
	CURL *h;

	*out = NULL;
	if (client_headers(o, hdrs) != LOAD_OK || (h = curl_easy_init()) == NULL)
		return LOAD_NOMEM;
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, *hdrs);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, o->method);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)o->body_len);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard_body);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, keep_location);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, c);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 120L);
	*out = h;
	return LOAD_OK;
}

/* One request: its latency, its status checked, its Location kept. */
BINDERY_NODISCARD static enum load_err
client_request(struct client *c, CURL *h, struct buf *url, long seq)
{
	long status = 0;
	double t0;
	CURLcode cc;

	if (request_url(c->o->url, c->id, seq, url) != LOAD_OK)
		return LOAD_NOMEM;
	curl_easy_setopt(h, CURLOPT_URL, buf_cstr(url));
	c->location.len = 0;
	t0 = now_s();
	cc = curl_easy_perform(h);
	c->ms[c->done] = (now_s() - t0) * 1000.0;
	if (cc != CURLE_OK) {
		snprintf(c->error, sizeof c->error, "%s: %s", buf_cstr(url), curl_easy_strerror(cc));
		return LOAD_FAILED;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	if (status != c->o->expect) {
		snprintf(c->error, sizeof c->error, "%s answered %ld, not %ld", buf_cstr(url),
		    status, c->o->expect);
		return LOAD_FAILED;
	}
	c->done++;
	if (c->o->locations != NULL &&
	    (buf_append_span(&c->locations, buf_span(&c->location)) != BUF_OK ||
	    buf_append(&c->locations, "\n", 1) != BUF_OK))
		return LOAD_NOMEM;
	return LOAD_OK;
}

static void *
client_run(void *arg)
{
	struct client *c = arg;
	struct curl_slist *hdrs = NULL;
	struct buf url = BUF_INIT(8192);
	char *body = NULL;
	CURL *h = NULL;
	long i;

	c->rc = LOAD_NOMEM;
	if ((body = malloc((size_t)c->o->body_len + 1)) == NULL)
		goto out;
	/* Bytes that differ per client, so nothing upstream can share them. */
	for (i = 0; i < c->o->body_len; i++)
		body[i] = (char)((i * 131 + c->id * 7919 + (i >> 8)) & 0xff);
	if ((c->rc = client_handle(c, body, &hdrs, &h)) != LOAD_OK)
		goto out;
	for (i = 0; i < c->o->per_client; i++)
		if ((c->rc = client_request(c, h, &url, i)) != LOAD_OK)
			goto out;
out:
	if (h != NULL)
		curl_easy_cleanup(h);
	curl_slist_free_all(hdrs);
	buf_free(&url);
	free(body);
	return NULL;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The value below which pct percent of the sorted v[0..n) lie (nearest rank). */
static double
percentile(const double *v, long n, double pct)
{
	long rank = (long)((pct / 100.0) * (double)n + 0.999999);

	if (rank < 1)
		rank = 1;
	return v[rank - 1];
}

BINDERY_NODISCARD static enum load_err
write_locations(const char *path, struct client *cs, long n)
{
	FILE *f = fopen(path, "w");
	long i;
	int bad = 0;

	if (f == NULL) {
		perror(path);
		return LOAD_FAILED;
	}
	for (i = 0; i < n; i++)
		if (cs[i].locations.len > 0 &&
		    fwrite(cs[i].locations.ptr, 1, cs[i].locations.len, f) != cs[i].locations.len)
			bad = 1;
	if (fclose(f) != 0 || bad) {
		perror(path);
		return LOAD_FAILED;
	}
	return LOAD_OK;
}

/* Every latency in one sorted array; print the figures. */
BINDERY_NODISCARD static enum load_err
report(struct client *cs, long n, double secs)
{
	double *all;
	long total = 0, i, j;

	for (i = 0; i < n; i++)
		total += cs[i].done;
	if (total == 0 || (all = calloc((size_t)total, sizeof *all)) == NULL)
		return LOAD_FAILED;
	for (i = 0, total = 0; i < n; i++)
		for (j = 0; j < cs[i].done; j++)
			all[total++] = cs[i].ms[j];
	qsort(all, (size_t)total, sizeof *all, cmp_double);
	printf("{\"requests\":%ld,\"seconds\":%.4f,\"rate\":%.2f,\"p50_ms\":%.3f,\"p99_ms\":%.3f}\n",
	    total, secs, (double)total / secs, percentile(all, total, 50.0),
	    percentile(all, total, 99.0));
	free(all);
	return LOAD_OK;
}

BINDERY_NODISCARD static enum load_err
run_clients(const struct load_opts *o)
{
	struct client *cs = calloc((size_t)o->clients, sizeof *cs);
	pthread_t *tids = calloc((size_t)o->clients, sizeof *tids);
	enum load_err rc = LOAD_NOMEM;
	long i, started = 0;
	double t0;

	if (cs == NULL || tids == NULL)
		goto out;
	for (i = 0; i < o->clients; i++) {
		cs[i] = (struct client){ .o = o, .id = i, .location = BUF_INIT(4096),
		    .locations = BUF_INIT((size_t)o->per_client * 4096) };
		if ((cs[i].ms = calloc((size_t)o->per_client, sizeof *cs[i].ms)) == NULL)
			goto out;
	}
	t0 = now_s();
	for (; started < o->clients; started++)
		if (pthread_create(&tids[started], NULL, client_run, &cs[started]) != 0)
			goto out;
	rc = LOAD_OK;
out:
	for (i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	for (i = 0; rc == LOAD_OK && i < o->clients; i++)
		if (cs[i].rc != LOAD_OK) {
			fprintf(stderr, "bench_load: client %ld: %s\n", i,
			    cs[i].error[0] ? cs[i].error : "out of memory");
			rc = LOAD_FAILED;
		}
	if (rc == LOAD_OK)
		rc = report(cs, o->clients, now_s() - t0);
	if (rc == LOAD_OK && o->locations != NULL)
		rc = write_locations(o->locations, cs, o->clients);
	for (i = 0; cs != NULL && i < o->clients; i++) {
		free(cs[i].ms);
		buf_free(&cs[i].location);
		buf_free(&cs[i].locations);
	}
	free(cs);
	free(tids);
	return rc;
}

/* A whole decimal number in [min, max]. */
BINDERY_NODISCARD static enum load_err
parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < min || v > max) {
		fprintf(stderr, "bench_load: bad number %s\n", s);
		return LOAD_USAGE;
	}
	*out = v;
	return LOAD_OK;
}

BINDERY_NODISCARD static enum load_err
load_args(int argc, char **argv, struct load_opts *o)
{
	enum load_err rc = LOAD_OK;
	int ch;

	*o = (struct load_opts){ .clients = 4, .per_client = 100, .body_len = 1024,
	    .expect = 201, .method = "POST" };
	while (rc == LOAD_OK && (ch = getopt(argc, argv, "c:n:s:x:X:H:L:")) != -1) {
		switch (ch) {
		case 'c': rc = parse_long(optarg, 1, 256, &o->clients); break;
		case 'n': rc = parse_long(optarg, 1, 1000000, &o->per_client); break;
		case 's': rc = parse_long(optarg, 0, 64L * 1024 * 1024, &o->body_len); break;
		case 'x': rc = parse_long(optarg, 100, 599, &o->expect); break;
		case 'X': o->method = optarg; break;
		case 'L': o->locations = optarg; break;
		case 'H':
			if (o->nheaders == MAX_HEADERS)
				rc = LOAD_USAGE;
			else
				o->headers[o->nheaders++] = optarg;
			break;
		default: rc = LOAD_USAGE; break;
		}
	}
	if (rc == LOAD_OK && optind + 1 != argc)
		rc = LOAD_USAGE;
	if (rc == LOAD_OK)
		o->url = argv[optind];
	return rc;
}

static volatile sig_atomic_t rss_stop;

static void
on_stop(int sig)
{
	(void)sig;
	rss_stop = 1;
}

/* RssAnon of PID in KiB, or -1 (the process may be gone already). */
static long
rss_anon_kib(const char *pid)
{
	char path[64], line[256];
	long v = -1;
	FILE *f;

	if (snprintf(path, sizeof path, "/proc/%s/status", pid) >= (int)sizeof path ||
	    (f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, "RssAnon:", 8) == 0) {
			v = strtol(line + 8, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

/* Whether /proc/PID/exe is one of exes (a replaced file reads "PATH (deleted)"). */
static int
is_watched(const char *pid, char **exes, int nexes)
{
	char path[64], target[PATH_MAX];
	ssize_t n;
	size_t len;
	int i;

	if (snprintf(path, sizeof path, "/proc/%s/exe", pid) >= (int)sizeof path ||
	    (n = readlink(path, target, sizeof target - 1)) < 0)
		return 0;
	target[n] = '\0';
	for (i = 0; i < nexes; i++) {
		len = strlen(exes[i]);
		if (strncmp(target, exes[i], len) == 0 &&
		    (target[len] == '\0' || strcmp(target + len, " (deleted)") == 0))
			return 1;
	}
	return 0;
}

/* The largest RssAnon among the watched processes now. */
static long
rss_sample(char **exes, int nexes)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	long v, peak = -1;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		if (!isdigit((unsigned char)e->d_name[0]) || !is_watched(e->d_name, exes, nexes))
			continue;
		v = rss_anon_kib(e->d_name);
		if (v > peak)
			peak = v;
	}
	closedir(d);
	return peak;
}

BINDERY_NODISCARD static enum load_err
run_rss(int argc, char **argv)
{
	struct timespec pause;
	long ms = 20, peak = -1, v, samples = 0;
	int ch, nexes;

	while ((ch = getopt(argc, argv, "i:")) != -1)
		if (ch != 'i' || parse_long(optarg, 1, 10000, &ms) != LOAD_OK)
			return LOAD_USAGE;
	nexes = argc - optind;
	if (nexes < 1 || nexes > MAX_EXES)
		return LOAD_USAGE;
	signal(SIGTERM, on_stop);
	signal(SIGINT, on_stop);
	pause.tv_sec = ms / 1000;
	pause.tv_nsec = (ms % 1000) * 1000000L;
	while (!rss_stop) {
		v = rss_sample(argv + optind, nexes);
		if (v > peak)
			peak = v;
		samples++;
		nanosleep(&pause, NULL);
	}
	printf("{\"rss_anon_kib\":%ld,\"samples\":%ld}\n", peak, samples);
	return peak >= 0 ? LOAD_OK : LOAD_FAILED;
}

int
main(int argc, char **argv)
{
	struct load_opts o;
	enum load_err rc;

	if (argc >= 2 && strcmp(argv[1], "rss") == 0) {
		rc = run_rss(argc - 1, argv + 1);
	} else if (argc >= 2 && strcmp(argv[1], "load") == 0) {
		curl_global_init(CURL_GLOBAL_DEFAULT);
		rc = load_args(argc - 1, argv + 1, &o);
		if (rc == LOAD_OK)
			rc = run_clients(&o);
		curl_global_cleanup();
	} else {
		rc = LOAD_USAGE;
	}
	if (rc == LOAD_USAGE)
		fprintf(stderr, "usage: bench_load load [-c N] [-n N] [-s BYTES] [-X METHOD] "
		    "[-x STATUS] [-H HEADER]... [-L FILE] URL\n"
		    "       bench_load rss [-i MS] EXE...\n");
	return rc == LOAD_OK ? 0 : rc == LOAD_USAGE ? 2 : 1;
}
