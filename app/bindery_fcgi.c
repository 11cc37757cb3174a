/*
 * bindery.fcgi - the FastCGI responder (and, started as a plain CGI program,
 * the same responder for one request).  Start-up loads the configuration and
 * builds the database and storage handles once; both connect on first use,
 * so a CGI request pays only for what it touches.  A request never exits the
 * process: every failure is an HTTP answer and a log line.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include <fcgiapp.h>
#include "base/clock.h"
#include "autoconfig.h"
#ifdef HAVE_MALLOC_H
#include <malloc.h>
#endif
#include "admit.h"
#include "app.h"
#include "input.h"
#include "pool.h"
#include "parse/http_parse.h"
#include "base/log.h"
#include "base/rand.h"

#define MAX_AUTH_HEADER 4096
/* CGI: bodies up to max_upload plus this are read to the end (see main). */
#define CGI_DRAIN_SLACK (1024 * 1024)


/*
 * Nonzero when an Authorization header uses the Bearer scheme (any case,
 * RFC 9110 11.1), well formed or not.  Another scheme (Basic the web server
 * did not check) is no token at all (RFC 6750 3.1).
 */
static int
bearer_scheme(struct span auth)
{
	size_t i = 0;

	while (i < auth.len && (auth.ptr[i] == ' ' || auth.ptr[i] == '\t'))
		i++;
	if (auth.len - i < 6 || !span_eq_nocase_cstr((struct span){ auth.ptr + i, 6 }, "Bearer"))
		return 0;
	return auth.len - i == 6 || auth.ptr[i + 6] == ' ' || auth.ptr[i + 6] == '\t';
}

/* Who is asking: the web server's own authentication wins, else a bearer token. */
static const char *
authenticate(struct app *app, struct request *r)
{
	struct span user = req_param(r, "REMOTE_USER");
	struct span auth = req_param(r, "HTTP_AUTHORIZATION");
	struct span token;

	if (user.len)
		return user.ptr;
	if (auth.len == 0 || auth.len > MAX_AUTH_HEADER)
		return NULL;
	if (http_bearer_token(auth, &token) != HTTP_AUTH_OK)
		return NULL;
	return config_token_owner(app->cfg, token.ptr, token.len);
}

/*
 * The path the client asked for, without the query and without the prefix
 * the app is mounted under (SCRIPT_NAME), so the routes are the same
 * whether the server maps the app at "/" or at "/bindery"; the prefix is
 * kept in r->prefix for the URLs the answer carries.  A SCRIPT_NAME that
 * is not a safe path is a deployment mistake: the app then acts as if
 * mounted at the root (the request most likely finds no route) and says so.
 */
static void
request_path(struct request *r)
{
	struct span uri = req_param(r, "REQUEST_URI");
	struct span script = req_param(r, "SCRIPT_NAME");
	const char *q = memchr(uri.ptr, '?', uri.len);
	struct span path = { uri.ptr, q ? (size_t)(q - uri.ptr) : uri.len };

	r->query = q ? (struct span){ q + 1, uri.len - (size_t)(q - uri.ptr) - 1 } : SPAN_NULL;
	if (r->query.ptr == NULL)
		r->query = req_param(r, "QUERY_STRING");
	if (http_mount_split(script, path, &r->prefix, &r->path) == HTTP_MOUNT_BAD)
		log_warn("req=%s SCRIPT_NAME \"%.*s\" is not a safe path ([A-Za-z0-9._~-] segments,"
			 " no \"..\", no trailing '/'): serving as if mounted at /", r->id,
			 (int)(script.len > 200 ? 200 : script.len), script.ptr);
}

/*
 * An id someone upstream gave the request is used only when it is a sane
 * token: it goes into a log line and a response header as it is.  Apache's
 * mod_unique_id also uses '@'.
 */
static int
request_id_ok(struct span v, int allow_at)
{
	size_t i;

	if (v.len == 0 || v.len > REQUEST_ID_MAX)
		return 0;
	for (i = 0; i < v.len; i++) {
		char c = v.ptr[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-' || (allow_at && c == '@')))
			return 0;
	}
	return 1;
}

/* The client's X-Request-Id, else Apache's UNIQUE_ID, else one of ours:
 * the same id then names the request in every log that saw it. */
static void
request_id(struct request *r)
{
	struct span given = req_param(r, "HTTP_X_REQUEST_ID");

	if (!request_id_ok(given, 0))
		given = req_param(r, "UNIQUE_ID");
	if (request_id_ok(given, 1) && copy_span(r->id, sizeof r->id, given) == 0)
		return;
	if (rand_hex(r->id, sizeof r->id, 8) != 0)
		memcpy(r->id, "0000000000000000", sizeof "0000000000000000");	/* for logs only */
}

/*
 * Between requests, give the heap's free pages back once they are worth
 * it.  A download's receive buffers and a create's transient allocations
 * are freed, but glibc keeps the pages (its mmap threshold rises after the
 * first large free), so a worker's private memory grew by about 650 KiB
 * once it had served a large create and a download, and the next create's
 * peak carried that on top of its blocks (the peak-memory benchmark
 * measured 18,680 KiB against a budget of 18,432).  A trim is not free:
 * it unmaps pages the next request faults back in, and unmapping in a
 * process with threads (the hasher's) flushes every core's TLB; after
 * every small create it was a third of the responder's CPU
 * (doc/performance.md).  So the heap is trimmed only when more than
 * HEAP_SLACK of it is free: a small request's transient heap stays mapped
 * for the next one, a large one's goes back.
 */
#define HEAP_SLACK (256 * 1024)

static void
release_heap(void)
{
#ifdef HAVE_MALLOC_TRIM
#ifdef HAVE_MALLINFO2
	struct mallinfo2 mi = mallinfo2();

	if (mi.fordblks <= HEAP_SLACK)
		return;
#endif
	(void)malloc_trim(0);
#endif
}

/*
 * ... and a request that may bring a large body starts from a trimmed
 * heap, whatever the requests before it left: a large create's peak is
 * its blocks plus what it needs itself, never plus HEAP_SLACK (the
 * peak-memory benchmark, P3, has less headroom than that).  A body of
 * unknown length counts as large.
 *
 * A body that can fill every block in flight also starts without the
 * prepared statements the worker has cached: a few KiB each, scattered
 * over the heap by the requests that first used them, they kept about
 * 150 KiB of pages resident under the blocks of a worker that had served
 * uploads of every kind.  Preparing again the ten or so such an upload
 * runs costs ten round trips beside its megabytes; a smaller body (a tus
 * PATCH of a few blocks) keeps them, as its peak has room to spare.
 */
static void
trim_before_body(struct app *app, const struct request *r)
{
	int bodyless = span_eq_cstr(r->method, "GET") || span_eq_cstr(r->method, "HEAD") ||
		       span_eq_cstr(r->method, "DELETE") || span_eq_cstr(r->method, "OPTIONS");
	uint64_t pipeline = app->cfg->block_size * app->cfg->blocks_in_flight;

	if (!r->fcgi || bodyless || (r->content_length >= 0 && r->content_length <= HEAP_SLACK))
		return;
	if (r->content_length < 0 || (uint64_t)r->content_length >= pipeline)
		services_shed_caches(app->svc);
#ifdef HAVE_MALLOC_TRIM
	(void)malloc_trim(0);
#endif
}

static void
serve(struct app *app, struct request *r)
{
	struct span cl;
	uint64_t n;

	request_id(r);
	r->start_ms = clock_now_ms();
	r->method = req_param(r, "REQUEST_METHOD");
	request_path(r);
	/* Routed first (pure), so a refusal below is counted under its route. */
	route_request(r->method, r->path, &r->route);
	r->content_length = -1;
	cl = req_param(r, "CONTENT_LENGTH");
	if (cl.len) {
		if (http_parse_uint(cl, INT64_MAX, &n) != HTTP_UINT_OK) {
			resp_error(r, 400, "bad_request", "Content-Length is not a number");
			return;
		}
		r->content_length = (int64_t)n;
	}
	trim_before_body(app, r);
	r->owner = authenticate(app, r);
	r->token_rejected = r->owner == NULL && bearer_scheme(req_param(r, "HTTP_AUTHORIZATION"));
	if (!admit_request(app, r))
		return;
	if (input_refused_early(app, r))
		return;
	if (r->route.id == ROUTE_HEALTHZ || r->route.id == ROUTE_METRICS ||
	    r->route.id == ROUTE_PAGE_SCRIPT || r->route.id == ROUTE_FAVICON ||
	    r->route.id == ROUTE_UPLOADS_OPTIONS ||
	    r->route.id == ROUTE_NOT_FOUND || r->route.id == ROUTE_METHOD_NOT_ALLOWED) {
		/* no database needed to answer these (/metrics says it is down) */
	} else if (services_db_ready(app->svc) != 0 && r->route.id != ROUTE_INDEX) {
		resp_error_retry(r, 503, "unavailable", "the database is unavailable", 5);
		return;
	}
	r->head_only = r->route.head;
	switch (r->route.id) {
	case ROUTE_INDEX: handle_index(app, r); break;
	case ROUTE_PAGE_SCRIPT: handle_page_script(app, r); break;
	case ROUTE_FAVICON: handle_favicon(app, r); break;
	case ROUTE_HEALTHZ: handle_healthz(app, r); break;
	case ROUTE_METRICS: handle_metrics(app, r); break;
	case ROUTE_DOCUMENTS_LIST: handle_list(app, r); break;
	case ROUTE_DOCUMENTS_CREATE: handle_create(app, r); break;
	case ROUTE_DOCUMENTS_DIRECT: handle_documents_direct(app, r); break;
	case ROUTE_DOCUMENT_FINALIZE: handle_document_finalize(app, r); break;
	case ROUTE_DOCUMENT_GET: handle_get(app, r); break;
	case ROUTE_DOCUMENT_DELETE: handle_delete(app, r); break;
	case ROUTE_CONTENT_GET: handle_content_get(app, r); break;
	case ROUTE_CONTENT_PUT: handle_content_put(app, r); break;
	case ROUTE_UPLOADS_OPTIONS: handle_uploads_options(app, r); break;
	case ROUTE_UPLOADS_CREATE: handle_uploads_create(app, r); break;
	case ROUTE_UPLOAD_HEAD: handle_upload_head(app, r); break;
	case ROUTE_UPLOAD_PATCH: handle_upload_patch(app, r); break;
	case ROUTE_UPLOAD_DELETE: handle_upload_delete(app, r); break;
	case ROUTE_METHOD_NOT_ALLOWED: {
		char extra[128];

		snprintf(extra, sizeof extra, "Allow: %s\r\n", r->route.allow ? r->route.allow : "");
		resp_json(r, 405, json_pack("{s:s, s:s}", "error", "method_not_allowed", "message",
					    "this method is not allowed here"), extra);
		break;
	}
	default:
		resp_error(r, 404, "not_found", "no such route");
		break;
	}
}

/* The configured bounds on a client's pace while it sends a body. */
static struct body_pace_limits
pace_limits(const struct bindery_config *cfg)
{
	struct body_pace_limits lim = {
		(int64_t)cfg->body_idle_timeout * 1000, cfg->body_min_rate,
		(int64_t)cfg->body_min_rate_grace * 1000,
	};

	return lim;
}

/*
 * CGI: read what is left of the body before exiting, but only where that
 * matters.  Under Apache mod_cgid stdin is a unix socket, and closing one
 * with unread bytes makes Apache's next read of our answer fail with
 * ECONNRESET: it aborts the connection after the answer (the client waits
 * out KeepAliveTimeout) or drops it (no answer at all).  Refusals (401,
 * 409, 413...) leave bodies unread, and Apache reads the whole body to the
 * end anyway.  Over a pipe (lighttpd mod_cgi) unread bytes cost nothing:
 * the server sees EPIPE and closes the client's connection, so a refused
 * client is not waited for.  req_read's pace bounds apply to the drain
 * too, so a trickling client cannot hold the process either way.
 */
static void
cgi_drain(const struct app *app, struct request *r)
{
	struct stat sb;

	if (r->content_length <= 0 || r->body_error ||
	    (uint64_t)r->content_length > app->cfg->max_upload + CGI_DRAIN_SLACK)
		return;
	if (fstat(STDIN_FILENO, &sb) != 0 || !S_ISSOCK(sb.st_mode))
		return;
	req_drain(r, (uint64_t)r->content_length);
}

/* Longest path and owner a log line carries (before escaping). */
#define LOG_PATH_MAX 200
#define LOG_OWNER_MAX 64
#define LOG_ADDR_MAX 64

/*
 * One line per request.  Every field a client chose (path, owner, even the
 * address a proxy passed on) goes through log_field(): a control byte in a
 * path must not end the line and forge the next one.
 */
static void
log_request(const struct request *r)
{
	char path[4 * LOG_PATH_MAX + 4], owner[4 * LOG_OWNER_MAX + 4], addr[4 * LOG_ADDR_MAX + 4];
	char method[4 * 16 + 4];
	struct span a = req_param(r, "REMOTE_ADDR");

	log_field(r->path.ptr, r->path.len, LOG_PATH_MAX, path, sizeof path);
	log_field(r->owner, r->owner ? strlen(r->owner) : 0, LOG_OWNER_MAX, owner, sizeof owner);
	log_field(a.ptr, a.len, LOG_ADDR_MAX, addr, sizeof addr);
	log_field(r->method.ptr, r->method.len, 16, method, sizeof method);
	log_info("req=%s %s %s %s %s %d %llu %lldms", r->id, addr, owner, method, path, r->status,
		 (unsigned long long)r->bytes_out, (long long)(clock_now_ms() - r->start_ms));
}

/*
 * Accept and answer FastCGI requests on listen_fd until the web server
 * closes it (spawned by mod_fcgid or lighttpd: fd 0) or, in a pool worker,
 * until the pool says stop.
 */
static void
serve_fastcgi(struct app *app, int listen_fd, int pooled)
{
	struct body_pace_limits pace = pace_limits(app->cfg);
	struct request r;
	FCGX_Request fr;

	FCGX_InitRequest(&fr, listen_fd, pooled ? POOL_ACCEPT_FLAGS : 0);
	while ((!pooled || pool_worker_idle() == 0) && FCGX_Accept_r(&fr) >= 0) {
		if (pooled)
			pool_worker_busy();
		memset(&r, 0, sizeof r);
		r.fcgi = 1;
		r.in = fr.in;
		r.out = fr.out;
		r.envp = fr.envp;
		/*
		 * libfcgi has no accessor for the request's connection;
		 * ipcFd is the descriptor FCGX_Accept_r just accepted
		 * (FCGX_Request is allocated by the caller, so its layout is
		 * part of libfcgi's ABI).  req_read bounds its blocking reads
		 * with it; see fcgi_read.
		 */
		req_pace_start(&r, &pace, fr.ipcFd);
		r.fcgi_id = fr.requestId;
		serve(app, &r);
		if (req_flush(&r) != 0)
			log_warn("request %s: the answer's last bytes could not be sent", r.id);
		log_request(&r);
		metrics_count_request(&r);
		req_end(&r);
		FCGX_Finish_r(&fr);
		req_release();
		release_heap();
	}
	FCGX_Free(&fr, 1);
}

/* A pool worker (pool.h): its own connections, then the same loop. */
static int
pool_worker(struct bindery_config *cfg, int listen_fd, void *ctx)
{
	struct app app = { cfg, NULL };
	char err[1024];

	(void)ctx;
	if (services_open_responder(cfg, &app.svc, err, sizeof err) != 0) {
		log_error("%s", err);
		return CONFIG_EX_CONFIG;
	}
	serve_fastcgi(&app, listen_fd, 1);
	services_free(app.svc);
	return 0;
}

static void
usage(FILE *fp)
{
	fprintf(fp, "usage: bindery.fcgi [-c CONFIG]\n"
		"       bindery.fcgi [-c CONFIG] --listen unix:PATH|HOST:PORT [--workers N]\n"
		"                    [--max-requests M] [--drain-seconds S]\n"
		"       bindery.fcgi --version | --help\n\n"
		"The bindery FastCGI responder.  Run it from a web server that spawns it\n"
		"(Apache mod_fcgid, lighttpd's bin-path) or as a CGI program; or, with\n"
		"--listen (or a socket from systemd), as a standing pool of N workers (default\n"
		"%d) for a web server that connects to it (Apache mod_proxy_fcgi): SIGHUP\n"
		"reloads the configuration, SIGTERM lets requests in flight finish (default\n"
		"%d s).  HOST must be a loopback address.  The configuration comes from -c,\n"
		"$BINDERY_CONFIG, or %s.  See bindery.fcgi(8).\n",
		POOL_WORKERS_DEFAULT, POOL_DRAIN_DEFAULT_S, CONFIG_DEFAULT_PATH);
}

/* A count option: 1 when v is a decimal from min to max into *out. */
static int
count_arg(const char *v, unsigned min, unsigned max, unsigned *out)
{
	uint64_t n;

	if (http_parse_uint(span_from_cstr(v), max, &n) != HTTP_UINT_OK || n < min)
		return 0;
	*out = (unsigned)n;
	return 1;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "listen", required_argument, NULL, 'l' },
		{ "workers", required_argument, NULL, 'w' },
		{ "max-requests", required_argument, NULL, 'm' },
		{ "drain-seconds", required_argument, NULL, 'd' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct pool_options po = { NULL, POOL_WORKERS_DEFAULT, 0, POOL_DRAIN_DEFAULT_S, NULL };
	struct app app;
	struct request r;
	char err[1024], cerr[CONFIG_ERRORS_MAX], warn[512];
	int opt, pooled = 0;
	/*
	 * Under CGI the command line is the client's: RFC 3875 4.4 lets a
	 * server turn a query string without '=' into words, and Apache does,
	 * so "GET /healthz?-c+/dev/stdin" would choose our configuration.
	 * Only a command line from outside CGI (FastCGI servers, a shell)
	 * counts; GATEWAY_INTERFACE is how a CGI server says it started us.
	 */
	int from_cgi = getenv("GATEWAY_INTERFACE") != NULL;

	if (from_cgi)
		argc = 1;
	while ((opt = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			po.config_path = optarg;
			break;
		case 'l':
			po.listen = optarg;
			pooled = 1;
			break;
		case 'w':
			if (!count_arg(optarg, 1, POOL_WORKERS_MAX, &po.workers)) {
				fprintf(stderr, "bindery.fcgi: --workers takes 1 to %d\n", POOL_WORKERS_MAX);
				return 64;
			}
			break;
		case 'm':
			if (!count_arg(optarg, 0, 0x7fffffff, &po.max_requests)) {
				fprintf(stderr, "bindery.fcgi: --max-requests takes a count (0: never recycle)\n");
				return 64;
			}
			break;
		case 'd':
			if (!count_arg(optarg, 0, 86400, &po.drain_s)) {
				fprintf(stderr, "bindery.fcgi: --drain-seconds takes 0 to 86400\n");
				return 64;
			}
			break;
		case 'V':
			printf("%s\n", PACKAGE_STRING);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 64;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 64;
	}
	/* systemd's socket activation makes a pool without --listen. */
	if (!from_cgi && getenv("LISTEN_FDS") != NULL)
		pooled = 1;
	log_init("bindery.fcgi", LOG_LEVEL_INFO, LOG_SINK_STDERR);
	memset(&app, 0, sizeof app);
	if (config_load(po.config_path, &app.cfg, cerr, sizeof cerr, warn, sizeof warn) != 0) {
		config_log_errors("", cerr);
		return CONFIG_EX_CONFIG;
	}
	log_set_level(app.cfg->log_level);
	log_set_sink(app.cfg->log_sink);
	if (warn[0])
		log_warn("%s", warn);
	/* A client that hangs up mid-download must not kill the process. */
	signal(SIGPIPE, SIG_IGN);
	if (FCGX_Init() != 0) {
		log_error("cannot initialise libfcgi");
		config_free(app.cfg);
		return 71;
	}
	/* Both connect lazily: this checks the settings and opens nothing.  A
	 * pool checks them here, in the master, so a configuration no worker
	 * could serve with stops it at once instead of respawning forever. */
	if (services_open_responder(app.cfg, &app.svc, err, sizeof err) != 0) {
		log_error("%s", err);
		config_free(app.cfg);
		return CONFIG_EX_CONFIG;
	}
	/* Before a pool forks its workers: they inherit the mapping. */
	metrics_counters_open(app.cfg);
	if (pooled) {
		services_free(app.svc);
		return pool_run(&po, app.cfg, pool_worker, NULL);
	}
	if (FCGX_IsCGI()) {
		struct body_pace_limits pace = pace_limits(app.cfg);

		memset(&r, 0, sizeof r);
		req_pace_start(&r, &pace, STDIN_FILENO);
		serve(&app, &r);
		fflush(stdout);
		cgi_drain(&app, &r);
		log_request(&r);
		metrics_count_request(&r);
	} else {
		serve_fastcgi(&app, 0, 0);
	}
	services_free(app.svc);
	config_free(app.cfg);
	return 0;
}
