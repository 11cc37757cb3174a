/*
 * Integration tests for the blob client against a real Azurite (skipped
 * unless BINDERY_TEST_BLOB_ENDPOINT is set).  Each run works in its own
 * fresh container, t-blob-<pid>-<rand>, and deletes it at the end.
 * Experiments G, I, J and K are those of the seed article.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <gnutls/crypto.h>

#include "base/clock.h"
#include "storage/blob.h"
#include "storage/blob_internal.h"
#include "base/buf.h"
#include "storage/sign.h"
#include "tap.h"
#include "tools/blob_helpers.h"

static const char *endpoint, *account, *key_b64;
static char container[64];
static const char *ca_file;

static struct blob_settings
settings(size_t block, unsigned inflight, size_t single)
{
	struct blob_settings s;

	memset(&s, 0, sizeof s);
	s.endpoint = endpoint;
	s.account = account;
	s.key_b64 = key_b64;
	s.container = container;
	s.block_size = block;
	s.blocks_in_flight = inflight;
	s.single_put_max = single;
	s.connect_timeout_ms = 2000;
	s.low_speed_time_s = 30;
	s.max_retries = 2;
	s.ca_file = ca_file;
	return s;
}

static struct blob_client *
client(size_t block, unsigned inflight, size_t single)
{
	struct blob_settings s = settings(block, inflight, single);
	struct blob_client *c;
	struct blob_result r;

	if (blob_client_new(&s, &c, &r) != BLOB_OK)
		tap_bail("blob_client_new: %s %s", blob_status_name(r.status), r.message);
	return c;
}

/* ---- calls only these tests make ----
 * The library keeps no public function that only a test calls: these are
 * built here on the client's internal interface (blob_internal.h). */

/* An upload without If-None-Match, which the library offers nobody. */
static int
upload_overwrite(struct blob_client *c, const char *name,
    const struct blob_upload_opts *opts, blob_read_fn read_fn, void *ctx,
    struct blob_upload_info *info, struct blob_result *res)
{
	return blob_upload_stream(c, name, opts, read_fn, ctx, info, res, 0);
}

/* Listing page size (0: the service default); small pages walk markers. */
static void
set_page_size(struct blob_client *c, unsigned maxresults)
{
	c->page_size = maxresults;
}

static const struct blob_call service_properties_set_call = {
	.method = "PUT", .target = BLOB_CALL_SERVICE,
	.query = { { "restype", "service" }, { "comp", "properties" } },
	.content_type = "application/xml; charset=utf-8",
};

/* Set Blob Service Properties: only the delete retention policy. */
static int
service_properties_set(struct blob_client *c, const struct blob_service_props *p,
    struct blob_result *res)
{
	struct buf body = BUF_INIT(4096);
	struct blob_call_args a = { .body = &body };
	int rc;

	blob_result_clear(res);
	if (p->delete_retention_enabled && (p->delete_retention_days < 1 ||
	    p->delete_retention_days > 365))
		return blob_result_set(res, BLOB_BAD_INPUT, "retention days must be 1..365");
	if (buf_appendf(&body, "<?xml version=\"1.0\" encoding=\"utf-8\"?>"
	    "<StorageServiceProperties><DeleteRetentionPolicy>"
	    "<Enabled>%s</Enabled>", p->delete_retention_enabled ? "true" :
	    "false") != BUF_OK ||
	    (p->delete_retention_enabled && buf_appendf(&body, "<Days>%d</Days>",
	    p->delete_retention_days) != BUF_OK) ||
	    buf_append_cstr(&body, "</DeleteRetentionPolicy>"
	    "</StorageServiceProperties>") != BUF_OK)
		rc = blob_result_nomem(res);
	else
		rc = blob_call(c, &service_properties_set_call, &a, res);
	buf_free(&body);
	return rc;
}

/* ---- body sources ---- */

struct memsrc {
	const char *p;
	size_t len, off;
};

static long
mem_read(void *ctx, char *buf, size_t len)
{
	struct memsrc *m = ctx;
	size_t n = m->len - m->off;

	if (n > len)
		n = len;
	memcpy(buf, m->p + m->off, n);
	m->off += n;
	return (long)n;
}

/* Deterministic pseudo-random bytes (xorshift), so a large body needs no
 * memory and its hash can be recomputed. */
struct gensrc {
	uint64_t left;
	uint64_t state;
};

static long
gen_read(void *ctx, char *buf, size_t len)
{
	struct gensrc *g = ctx;
	size_t i;

	if (len > g->left)
		len = (size_t)g->left;
	for (i = 0; i < len; i++) {
		g->state ^= g->state << 13;
		g->state ^= g->state >> 7;
		g->state ^= g->state << 17;
		buf[i] = (char)(g->state >> 24);
	}
	g->left -= len;
	return (long)len;
}

static int
upload_str(struct blob_client *c, const char *name, const char *body,
    const struct blob_upload_opts *o, struct blob_upload_info *info,
    struct blob_result *r)
{
	struct memsrc m = { body, strlen(body), 0 };

	return blob_upload_create(c, name, o, mem_read, &m, info, r);
}

/* ---- download sink ---- */

struct sink {
	struct buf b;
	gnutls_hash_hd_t sha;
	int hashing;
	int headers_calls;
	uint64_t total;
	char etag[128];
};

static int
sink_headers(void *ctx, const struct blob_props *p, uint64_t total)
{
	struct sink *s = ctx;

	s->headers_calls++;
	s->total = total;
	if (copy_cstr(s->etag, sizeof s->etag, p->etag) != 0)
		s->etag[0] = '\0';
	return 0;
}

static int
sink_data(void *ctx, const char *d, size_t n)
{
	struct sink *s = ctx;

	if (s->hashing)
		return gnutls_hash(s->sha, d, n) < 0;
	return buf_append(&s->b, d, n) != BUF_OK;
}

static int
get_str(struct blob_client *c, const char *name, uint64_t start, uint64_t len,
    struct sink *s, struct blob_result *r)
{
	memset(s, 0, sizeof *s);
	buf_init(&s->b, 1 << 20);
	return blob_get(c, name, start, len, NULL, sink_headers, sink_data, s, r);
}

static void
hex(const unsigned char *d, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* ---- tests ---- */

static void
test_basics(struct blob_client *c)
{
	static const struct blob_tag pending[] = { { "state", "pending" } };
	struct blob_upload_opts o = { "text/plain", pending, 1, 11, NULL, NULL, NULL, 0 };
	struct blob_upload_info info;
	struct blob_props p;
	struct blob_result r;
	struct blob_tag_set ts;
	struct sink s;
	unsigned char sha[32];
	char shahex[65];

	int rc = upload_str(c, "hello.txt", "hello world", &o, &info, &r);

	tap_ok(rc == BLOB_OK, "Shared Key accepted: create-only Put Blob (%s %s)",
	    blob_status_name(rc), r.message);
	gnutls_hash_fast(GNUTLS_DIG_SHA256, "hello world", 11, sha);
	hex(sha, 32, shahex);
	tap_ok(info.size == 11 && strcmp(info.sha256_hex, shahex) == 0 &&
	    info.etag[0] == '"', "upload info: size, sha256, etag (%s)", info.etag);
	tap_ok(blob_get_properties(c, "hello.txt", &p, &r) == BLOB_OK, "get properties");
	tap_ok(p.size == 11 && p.meta_size == 11 && strcmp(p.meta_sha256, shahex) == 0 &&
	    strcmp(p.content_type, "text/plain") == 0 && p.tag_count == 1 &&
	    p.content_md5[0] != '\0' && strcmp(p.etag, info.etag) == 0,
	    "properties: size, meta size/sha256, content type, tag count, MD5, etag");
	tap_ok(blob_get_tags(c, "hello.txt", &ts, &r) == BLOB_OK && ts.n == 1 &&
	    strcmp(ts.key[0], "state") == 0 && strcmp(ts.value[0], "pending") == 0,
	    "tags set on the create itself");

	tap_ok(get_str(c, "hello.txt", 0, 0, &s, &r) == BLOB_OK &&
	    s.b.len == 11 && memcmp(s.b.ptr, "hello world", 11) == 0 &&
	    s.headers_calls == 1 && s.total == 11, "streamed get of the whole blob");
	buf_free(&s.b);
	tap_ok(get_str(c, "hello.txt", 6, 5, &s, &r) == BLOB_OK && s.b.len == 5 &&
	    memcmp(s.b.ptr, "world", 5) == 0 && s.total == 11,
	    "range get [6,11): \"world\", total size 11 in on_headers");
	buf_free(&s.b);
	tap_ok(get_str(c, "hello.txt", 4, 0, &s, &r) == BLOB_OK && s.b.len == 7 &&
	    memcmp(s.b.ptr, "o world", 7) == 0, "open-ended range get");
	buf_free(&s.b);
	tap_ok(get_str(c, "nope.txt", 0, 0, &s, &r) == BLOB_NOT_FOUND &&
	    strcmp(r.code, "BlobNotFound") == 0 && s.headers_calls == 0,
	    "get of a missing blob: BLOB_NOT_FOUND with code %s", r.code);
	buf_free(&s.b);
	tap_ok(blob_get_properties(c, "nope.txt", &p, &r) == BLOB_NOT_FOUND,
	    "HEAD of a missing blob: BLOB_NOT_FOUND");

	{
		struct memsrc m = { "", 0, 0 };

		tap_ok(blob_upload_create(c, "empty", NULL, mem_read, &m, &info, &r) ==
		    BLOB_OK && info.size == 0, "empty body uploads");
		tap_ok(get_str(c, "empty", 0, 0, &s, &r) == BLOB_OK && s.b.len == 0 &&
		    s.headers_calls == 1, "empty blob: on_headers still called once");
		buf_free(&s.b);
	}
	{
		const char *odd = "dir/a b+c%&?=#.txt";

		tap_ok(upload_str(c, odd, "odd", NULL, &info, &r) == BLOB_OK,
		    "name needing URL-encoding uploads (%s)", r.message);
		tap_ok(get_str(c, odd, 0, 0, &s, &r) == BLOB_OK && s.b.len == 3,
		    "and reads back");
		buf_free(&s.b);
	}
	{
		struct blob_upload_opts bad = { NULL, pending, 1, 99, NULL, NULL, NULL, 0 };

		tap_ok(upload_str(c, "short", "abc", &bad, &info, &r) == BLOB_BAD_INPUT &&
		    blob_get_properties(c, "short", &p, &r) == BLOB_NOT_FOUND,
		    "expected_size mismatch commits nothing");
	}
}

/* Experiment I: no option and no path can turn a create into an overwrite. */
static void
test_experiment_i(struct blob_client *c, struct blob_client *staged)
{
	static const struct blob_tag tags[] = { { "state", "pending" }, { "k", "v" } };
	const struct blob_upload_opts variants[] = {
		{ .content_type = NULL, .expected_size = -1 },
		{ .content_type = "application/pdf", .expected_size = -1 },
		{ .tags = tags, .ntags = 2, .expected_size = -1 },
		{ .content_type = "text/plain", .tags = tags, .ntags = 1, .expected_size = 5 },
	};
	struct blob_upload_info info;
	struct blob_result r;
	struct sink s;
	size_t i;
	char *big = malloc(200 * 1024);
	int rc;

	memset(big, 'x', 200 * 1024);
	big[200 * 1024 - 1] = '\0';
	for (i = 0; i < ARRAY_LEN(variants); i++) {
		rc = upload_str(c, "hello.txt", "HELLO", &variants[i], &info, &r);
		tap_ok(rc == BLOB_EXISTS, "I: second single Put Blob create, variant %zu: %s "
		    "(HTTP %ld %s)", i, blob_status_name(rc), r.http_status, r.code);
		rc = upload_str(staged, "hello.txt", big, &variants[i], &info, &r);
		tap_ok(rc == BLOB_EXISTS || (variants[i].expected_size >= 0 &&
		    rc == BLOB_BAD_INPUT), "I: second staged Put Block List create, "
		    "variant %zu: %s (HTTP %ld %s)", i, blob_status_name(rc),
		    r.http_status, r.code);
	}
	{
		/* The staged attempts above left 24-character ids on this name;
		 * the service wants one id length per blob. */
		const char *ids[1] = { "QUFBQUFBQUFBQUFBQUFBQQ==" };

		rc = blob_put_block(c, "hello.txt", "AAAA", "zz", 2, &r);
		tap_ok(rc == BLOB_REJECTED && strcmp(r.code, "InvalidBlobOrBlock") == 0 &&
		    r.request_id[0] != '\0', "I: a block id of another length is refused by "
		    "the service: BLOB_REJECTED, not bad input (%s, request id %s)", r.code,
		    r.request_id);
		rc = blob_put_block(c, "hello.txt", ids[0], "zz", 2, &r);
		tap_ok(rc == BLOB_OK, "I: Put Block beside a committed blob is accepted "
		    "(%s %ld %s)", blob_status_name(rc), r.http_status, r.code);
		rc = blob_put_block_list_create(c, "hello.txt", ids, 1, NULL, &r);
		tap_ok(rc == BLOB_EXISTS, "I: low-level Put Block List create refuses "
		    "too (%s %ld %s)", blob_status_name(rc), r.http_status, r.code);
	}
	tap_ok(get_str(c, "hello.txt", 0, 0, &s, &r) == BLOB_OK && s.b.len == 11 &&
	    memcmp(s.b.ptr, "hello world", 11) == 0, "I: original bytes untouched");
	buf_free(&s.b);
	tap_ok(upload_overwrite(c, "over.txt", NULL, mem_read,
	    &(struct memsrc){ "one", 3, 0 }, &info, &r) == BLOB_OK &&
	    upload_overwrite(c, "over.txt", NULL, mem_read,
	    &(struct memsrc){ "two!", 4, 0 }, &info, &r) == BLOB_OK &&
	    get_str(c, "over.txt", 0, 0, &s, &r) == BLOB_OK && s.b.len == 4,
	    "an upload without If-None-Match is the one way to replace bytes");
	buf_free(&s.b);
	free(big);
}

/* Experiment J: delete guarded by x-ms-if-tags. */
static void
test_experiment_j(struct blob_client *c)
{
	static const struct blob_tag pending[] = { { "state", "pending" } };
	static const struct blob_tag committed[] = { { "state", "committed" } };
	struct blob_upload_opts o = { NULL, pending, 1, -1, NULL, NULL, NULL, 0 };
	struct blob_upload_info info;
	struct blob_result r;
	struct blob_props p;
	const char *guard = "\"state\" = 'pending'";

	tap_ok(upload_str(c, "j-pending", "p", &o, &info, &r) == BLOB_OK &&
	    upload_str(c, "j-committed", "c", &o, &info, &r) == BLOB_OK,
	    "J: two blobs tagged pending");
	tap_ok(blob_set_tags(c, "j-committed", committed, 1, guard, &r) == BLOB_OK,
	    "J: flip one to committed, guarded by pending");
	{
		/* Real Azure answers 412 here; Azurite 3.37.0 stores the tags
		 * without evaluating x-ms-if-tags on Set Blob Tags.  Probe on a
		 * separate blob so the experiment below is not disturbed. */
		int rc = upload_str(c, "j-probe", "q", &o, &info, &r);

		rc = rc ? rc : blob_set_tags(c, "j-probe", committed, 1, guard, &r);
		rc = rc ? rc : blob_set_tags(c, "j-probe", pending, 1, guard, &r);
		if (rc == BLOB_OK)
			tap_skip("J: guarded Set Blob Tags with an unmet guard is not "
			    "refused: Azurite 3.37.0 ignores x-ms-if-tags on Set Blob "
			    "Tags (real Azure answers 412 here, and this check runs)");
		else
			tap_ok(rc == BLOB_CONDITION_NOT_MET, "J: a second guarded flip is "
			    "refused (%s)", blob_status_name(rc));
	}
	tap_ok(blob_delete(c, "j-pending", guard, NULL, &r) == BLOB_OK,
	    "J: delete still-pending -> deleted");
	tap_ok(blob_delete(c, "j-committed", guard, NULL, &r) == BLOB_CONDITION_NOT_MET &&
	    r.http_status == 412 && strcmp(r.code, "ConditionNotMet") == 0,
	    "J: delete already-committed -> BLOB_CONDITION_NOT_MET (%ld %s)",
	    r.http_status, r.code);
	tap_ok(blob_get_properties(c, "j-committed", &p, &r) == BLOB_OK &&
	    blob_get_properties(c, "j-pending", &p, &r) == BLOB_NOT_FOUND,
	    "J: remaining: j-committed only");
	tap_ok(blob_delete(c, "j-committed", NULL, "\"0x0\"", &r) ==
	    BLOB_CONDITION_NOT_MET, "If-Match with a stale ETag -> BLOB_CONDITION_NOT_MET");
}

/* Experiment K: staged blocks of a losing create, and their purge. */
/*
 * Reads pinned to the committed blob (doc/design.md "Conditional reads"):
 * the ETag a create answers is the one a read may require, Set Blob Tags
 * (the flip after the commit) leaves it as it is, and a read under another
 * ETag is refused before any byte arrives.
 */
static void
test_etag_pin(struct blob_client *c)
{
	static const struct blob_tag pending[] = { { "state", "pending" } };
	static const struct blob_tag committed[] = { { "state", "committed" } };
	struct blob_upload_opts o = { NULL, pending, 1, -1, NULL, NULL, NULL, 0 };
	struct blob_upload_info info;
	struct blob_result r;
	struct blob_props p;
	struct sink s;
	int rc;

	if (upload_str(c, "e-pin", "pinned bytes", &o, &info, &r) != BLOB_OK)
		tap_bail("upload e-pin: %s", blob_status_name(r.status));
	tap_ok(info.etag[0] == '"', "the create answers the blob's ETag (%s)", info.etag);
	tap_ok(blob_set_tags(c, "e-pin", committed, 1, NULL, &r) == BLOB_OK &&
	    blob_get_properties(c, "e-pin", &p, &r) == BLOB_OK && strcmp(p.etag, info.etag) == 0,
	    "Set Blob Tags leaves the ETag as it is (%s)", p.etag);
	memset(&s, 0, sizeof s);
	buf_init(&s.b, 1 << 10);
	tap_ok(blob_get(c, "e-pin", 0, 0, info.etag, sink_headers, sink_data, &s, &r) == BLOB_OK &&
	    s.b.len == 12, "a read under the committed ETag gets the bytes");
	buf_free(&s.b);
	memset(&s, 0, sizeof s);
	buf_init(&s.b, 1 << 10);
	rc = blob_get(c, "e-pin", 0, 0, "\"0x8D000000000000\"", sink_headers, sink_data, &s, &r);
	tap_ok(rc == BLOB_CONDITION_NOT_MET && s.b.len == 0 && s.headers_calls == 0,
	    "a read under another ETag is refused before any byte (%s)", blob_status_name(rc));
	buf_free(&s.b);
	memset(&s, 0, sizeof s);
	buf_init(&s.b, 1 << 10);
	tap_ok(blob_get(c, "e-pin", 2, 4, "\"0x8D000000000000\"", sink_headers, sink_data, &s, &r) ==
	    BLOB_CONDITION_NOT_MET && s.b.len == 0, "... a range read too");
	buf_free(&s.b);
}

static void
test_experiment_k(struct blob_client *c, struct blob_client *staged)
{
	struct blob_block_counts bc;
	struct blob_upload_info info;
	struct blob_result r;
	struct blob_props p;
	struct gensrc g = { 3 * 64 * 1024, 42 };
	const char *ids[3] = { "YmxvY2stMDA=", "YmxvY2stMDE=", "YmxvY2stMDI=" };
	size_t i;
	int rc;

	tap_ok(blob_upload_create(staged, "k1", NULL, gen_read, &g, &info, &r) == BLOB_OK,
	    "K: first staged upload (3 blocks) ok");
	g.left = 3 * 64 * 1024;
	rc = blob_upload_create(staged, "k1", NULL, gen_read, &g, &info, &r);
	tap_ok(rc == BLOB_EXISTS, "K: second staged upload -> %s (HTTP %ld %s)",
	    blob_status_name(rc), r.http_status, r.code);
	rc = blob_get_block_list(c, "k1", &bc, &r);
	tap_ok(rc == BLOB_OK && bc.committed == 3 && bc.uncommitted == 3, "K: blocks left uncommitted: %u (committed %u)",
	    bc.uncommitted, bc.committed);
	tap_ok(blob_purge_uncommitted(c, "k1", &r) == BLOB_EXISTS,
	    "K: purge refuses a name that holds a committed blob");
	tap_ok(blob_get_properties(c, "k1", &p, &r) == BLOB_OK && p.size == 3 * 64 * 1024,
	    "K: the committed blob is untouched");

	for (i = 0; i < 3; i++)
		if (blob_put_block(c, "k2", ids[i], "data", 4, &r) != BLOB_OK)
			break;
	tap_ok(i == 3, "K: stage 3 blocks on a name with no blob");
	tap_ok(blob_get_block_list(c, "k2", &bc, &r) == BLOB_OK && bc.uncommitted == 3 &&
	    bc.committed == 0, "K: Get Block List sees 3 uncommitted");
	rc = blob_purge_uncommitted(c, "k2", &r);
	tap_ok(rc == BLOB_OK, "K: purge -> %s %s", blob_status_name(rc), r.message);
	rc = blob_get_block_list(c, "k2", &bc, &r);
	tap_ok((rc == BLOB_NOT_FOUND || rc == BLOB_OK) && bc.uncommitted == 0 &&
	    bc.committed == 0, "K: 3 -> 0 staged blocks after purge (%s)",
	    blob_status_name(rc));
	tap_ok(blob_get_properties(c, "k2", &p, &r) == BLOB_NOT_FOUND,
	    "K: purge leaves no blob behind");
}

/* Experiment G: five concurrent create-only uploads of one name, each
 * thread with its own client. */
struct racer {
	pthread_barrier_t *start;
	int staged;
	int rc;
};

static void *
race(void *arg)
{
	struct racer *rc = arg;
	struct blob_client *c = rc->staged ? client(64 * 1024, 2, 16 * 1024) :
	    client(0, 0, 0);
	struct blob_upload_info info;
	struct blob_result r;
	struct gensrc g = { rc->staged ? 200 * 1024 : 1000, (uint64_t)(uintptr_t)arg };

	pthread_barrier_wait(rc->start);
	rc->rc = blob_upload_create(c, rc->staged ? "g-staged" : "g-single", NULL,
	    gen_read, &g, &info, &r);
	blob_client_free(c);
	return NULL;
}

static int
count_item(void *ctx, const struct blob_list_item *it)
{
	(void)it;
	(*(int *)ctx)++;
	return 0;
}

static void
test_experiment_g(struct blob_client *c)
{
	int staged;

	for (staged = 0; staged <= 1; staged++) {
		pthread_t th[5];
		struct racer rc[5];
		pthread_barrier_t b;
		int i, won = 0, conflict = 0, other = 0, blobs = 0;
		struct blob_result r;

		pthread_barrier_init(&b, NULL, 5);
		for (i = 0; i < 5; i++) {
			rc[i].start = &b;
			rc[i].staged = staged;
			rc[i].rc = -1;
			pthread_create(&th[i], NULL, race, &rc[i]);
		}
		for (i = 0; i < 5; i++) {
			pthread_join(th[i], NULL);
			if (rc[i].rc == BLOB_OK)
				won++;
			else if (rc[i].rc == BLOB_EXISTS)
				conflict++;
			else
				other++;
		}
		pthread_barrier_destroy(&b);
		tap_ok(blob_list(c, staged ? "g-staged" : "g-single", 0, count_item,
		    &blobs, &r) == BLOB_OK, "G: list");
		tap_ok(won == 1 && conflict == 4 && other == 0 && blobs == 1,
		    "G (%s): won=%d conflict=%d other=%d blobs=%d",
		    staged ? "staged" : "single Put Blob", won, conflict, other, blobs);
	}
}

static void
test_streaming(void)
{
	struct blob_client *c = client(1024 * 1024, 4, 256 * 1024);
	struct gensrc g = { 20 * 1024 * 1024, 7 };
	struct blob_upload_info info;
	struct blob_result r;
	struct blob_props p;
	struct sink s;
	gnutls_hash_hd_t h;
	unsigned char want[32], got[32];
	char *chunk = malloc(1 << 20);
	long n;

	/* The expected hash, computed from the same generator. */
	gnutls_hash_init(&h, GNUTLS_DIG_SHA256);
	while ((n = gen_read(&g, chunk, 1 << 20)) > 0)
		gnutls_hash(h, chunk, (size_t)n);
	gnutls_hash_deinit(h, want);
	g.left = 20 * 1024 * 1024;
	g.state = 7;
	int rc = blob_upload_create(c, "big/20MiB", &(struct blob_upload_opts){
	    .content_type = "application/octet-stream", .expected_size = 20 * 1024 * 1024 }, gen_read, &g,
	    &info, &r);

	tap_ok(rc == BLOB_OK, "20 MiB staged upload in 1 MiB blocks (%s %s)",
	    blob_status_name(rc), r.message);
	tap_ok(info.size == 20u * 1024 * 1024 && memcmp(info.sha256, want, 32) == 0,
	    "upload info size and sha256 computed on the way");
	tap_ok(blob_get_properties(c, "big/20MiB", &p, &r) == BLOB_OK &&
	    p.size == 20u * 1024 * 1024 && p.meta_size == 20 * 1024 * 1024 &&
	    strcmp(p.meta_sha256, info.sha256_hex) == 0,
	    "committed blob: size, x-ms-meta-size and x-ms-meta-sha256 match");
	memset(&s, 0, sizeof s);
	s.hashing = 1;
	gnutls_hash_init(&s.sha, GNUTLS_DIG_SHA256);
	tap_ok(blob_get(c, "big/20MiB", 0, 0, NULL, sink_headers, sink_data, &s, &r) == BLOB_OK,
	    "streamed download of 20 MiB");
	gnutls_hash_deinit(s.sha, got);
	tap_ok(memcmp(got, want, 32) == 0 && s.total == 20u * 1024 * 1024,
	    "downloaded bytes hash to the uploaded sha256");
	free(chunk);
	blob_client_free(c);
}

static int
collect_tagged(void *ctx, const struct blob_list_item *it)
{
	int *ok = ctx;

	ok[0]++;
	if (it->ntags == 1 && strcmp(it->tags[0].key, "state") == 0 &&
	    strcmp(it->tags[0].value, "listed") == 0 && strlen(it->meta_sha256) == 64)
		ok[1]++;
	return 0;
}

static int
count_name(void *ctx, const char *name)
{
	if (strncmp(name, "list/", 5) == 0)
		(*(int *)ctx)++;
	return 0;
}

static int
stop_at_two(void *ctx, const struct blob_list_item *it)
{
	(void)it;
	return ++(*(int *)ctx) >= 2;
}

static void
test_list_find_batch(struct blob_client *c)
{
	static const struct blob_tag listed[] = { { "state", "listed" } };
	static const struct blob_tag other[] = { { "state", "other" } };
	struct blob_upload_opts o = { NULL, listed, 1, -1, NULL, NULL, NULL, 0 };
	struct blob_upload_info info;
	struct blob_result r, each[5];
	char name[32];
	int i, ok = 1, counts[2] = { 0, 0 }, found = 0, stopped = 0;
	const char *del[5] = { "list/0", "list/1", "list/2", "list/x-other", "list/missing" };

	for (i = 0; i < 7; i++) {
		snprintf(name, sizeof name, "list/%d", i);
		ok &= upload_str(c, name, name, &o, &info, &r) == BLOB_OK;
	}
	o.tags = other;
	ok &= upload_str(c, "list/x-other", "x", &o, &info, &r) == BLOB_OK;
	tap_ok(ok, "8 blobs under list/");
	set_page_size(c, 2);
	tap_ok(blob_list(c, "list/", BLOB_LIST_TAGS | BLOB_LIST_METADATA, collect_tagged,
	    counts, &r) == BLOB_OK, "list with tags and metadata, 2 per page (%s)",
	    r.message);
	TAP_EQ_INT(counts[0], 8, "NextMarker followed to the end: all 8 listed");
	TAP_EQ_INT(counts[1], 7, "tags and sha256 metadata on the 7 tagged 'listed'");
	tap_ok(blob_list(c, "list/", 0, stop_at_two, &stopped, &r) == BLOB_ABORTED &&
	    stopped == 2, "a callback can stop the listing");
	/* Find Blobs by Tags runs with the default page size: Azurite 3.37.0
	 * filters each raw page of maxresults blobs and stops at the first
	 * page with no match, so small pages lose results there. */
	set_page_size(c, 0);
	tap_ok(blob_find_by_tags(c, "\"state\" = 'listed'", count_name, &found, &r) ==
	    BLOB_OK, "find blobs by tags (%s %s)", r.code, r.message);
	TAP_EQ_INT(found, 7, "find by tags returns the 7");

	tap_ok(blob_batch_delete(c, del, 5, "\"state\" = 'listed'", each, &r) == BLOB_OK,
	    "batch delete request accepted (%s %s)", r.code, r.message);
	tap_ok(each[0].status == BLOB_OK && each[1].status == BLOB_OK &&
	    each[2].status == BLOB_OK, "batch: guarded deletes of 'listed' succeed");
	tap_ok(each[3].status == BLOB_CONDITION_NOT_MET,
	    "batch: the 'other' blob is refused by its guard (%s %s)",
	    blob_status_name(each[3].status), each[3].code);
	tap_ok(each[4].status == BLOB_NOT_FOUND, "batch: a missing name is %s",
	    blob_status_name(each[4].status));
	counts[0] = counts[1] = 0;
	tap_ok(blob_list(c, "list/", BLOB_LIST_TAGS, collect_tagged, counts, &r) ==
	    BLOB_OK && counts[0] == 5, "5 remain after the batch");
}

static void
test_service(struct blob_client *c)
{
	struct blob_service_props p, q = { 1, 3, 0, 0 };
	struct blob_result r;
	int rc = blob_service_properties_get(c, &p, &r);

	tap_ok(rc == BLOB_OK && !p.versioning_known,
	    "service properties get (retention %d/%d)", p.delete_retention_enabled,
	    p.delete_retention_days);
	tap_ok(service_properties_set(c, &q, &r) == BLOB_OK,
	    "service properties set soft delete 3 days (%s %s)", r.code, r.message);
	tap_ok(blob_service_properties_get(c, &p, &r) == BLOB_OK &&
	    p.delete_retention_enabled == 1 && p.delete_retention_days == 3,
	    "soft delete setting read back");
	q.delete_retention_enabled = 0;
	tap_ok(service_properties_set(c, &q, &r) == BLOB_OK &&
	    blob_service_properties_get(c, &p, &r) == BLOB_OK &&
	    p.delete_retention_enabled == 0, "soft delete turned off again");
	tap_ok(blob_undelete(c, "hello.txt", &r) == BLOB_NOT_SUPPORTED &&
	    strcmp(r.message, "not supported by this endpoint") == 0,
	    "undelete on Azurite: BLOB_NOT_SUPPORTED (HTTP %ld)", r.http_status);
}

static void
test_sas(struct blob_client *c)
{
	static const struct blob_tag t[] = { { "state", "committed" } };
	struct sas_account_fields f;
	struct buf key = BUF_INIT(128), q = BUF_INIT(4096), qt = BUF_INIT(4096);
	struct blob_settings s = settings(0, 0, 0);
	struct blob_client *sc = NULL;
	struct blob_result r;
	struct blob_props p;
	char expiry[24], *sig;

	if (sign_base64_decode(key_b64, strlen(key_b64), &key) != SIGN_OK)
		tap_bail("key");
	memset(&f, 0, sizeof f);
	sign_time_iso8601(time(NULL) + 3600, expiry);
	f.services = "b";
	f.resource_types = "sco";
	f.expiry = expiry;
	f.permissions = "rwdlacu";	/* no t */
	if (sas_sign_account((unsigned char *)key.ptr, key.len, account, &f, &q) != SIGN_OK)
		tap_bail("sas");
	f.permissions = "rwdlacut";
	if (sas_sign_account((unsigned char *)key.ptr, key.len, account, &f, &qt) != SIGN_OK)
		tap_bail("sas");
	s.key_b64 = NULL;
	s.sas = buf_cstr(&q);
	tap_ok(blob_client_new(&s, &sc, &r) == BLOB_OK, "SAS-only client");
	tap_ok(blob_get_properties(sc, "hello.txt", &p, &r) == BLOB_OK,
	    "account SAS (our signature) accepted (%s %s)", r.code, r.message);
	tap_ok(blob_set_tags(sc, "hello.txt", t, 1, NULL, &r) == BLOB_AUTH_FAILED &&
	    r.http_status == 403, "SAS without t setting tags -> BLOB_AUTH_FAILED (%s)",
	    r.code);
	blob_client_free(sc);
	s.sas = buf_cstr(&qt);
	tap_ok(blob_client_new(&s, &sc, &r) == BLOB_OK &&
	    blob_set_tags(sc, "hello.txt", t, 1, NULL, &r) == BLOB_OK,
	    "SAS with t sets tags");
	blob_client_free(sc);
	/* Tamper with one character of the signature. */
	sig = strstr(q.ptr, "sig=") + 4;
	sig[0] = sig[0] == 'A' ? 'B' : 'A';
	s.sas = buf_cstr(&q);
	tap_ok(blob_client_new(&s, &sc, &r) == BLOB_OK &&
	    blob_get_properties(sc, "hello.txt", &p, &r) == BLOB_AUTH_FAILED,
	    "tampered SAS -> BLOB_AUTH_FAILED (HTTP %ld)", r.http_status);
	tap_ok(strstr(r.message, sig) == NULL && strstr(r.message, key_b64) == NULL,
	    "no credential in the result message");
	blob_client_free(sc);
	{
		struct buf url = BUF_INIT(8192);

		tap_ok(blob_sas_url(c, "hello.txt", "r", 600, NULL, NULL, &url, &r) == BLOB_OK &&
		    strstr(buf_cstr(&url), "sr=b") && strstr(buf_cstr(&url), "sp=r") &&
		    strncmp(buf_cstr(&url), endpoint, strlen(endpoint)) == 0,
		    "blob_sas_url builds a read URL");
		buf_free(&url);
	}
	buf_free(&key);
	buf_free(&q);
	buf_free(&qt);
}

static void
test_deadline_and_errors(struct blob_client *c)
{
	struct blob_settings s = settings(0, 0, 0);
	struct blob_client *dead;
	struct blob_result r;
	struct blob_props p;
	struct blob_upload_info info;
	int64_t t0;

	blob_client_set_deadline(c, clock_now_ms() - 1);
	tap_ok(blob_get_properties(c, "hello.txt", &p, &r) == BLOB_DEADLINE,
	    "deadline in the past: BLOB_DEADLINE");
	tap_ok(upload_str(c, "late", "x", NULL, &info, &r) == BLOB_DEADLINE,
	    "deadline in the past: upload refused too");
	blob_client_set_deadline(c, 0);

	s.endpoint = "http://127.0.0.1:1/devstoreaccount1";
	s.max_retries = 1;
	if (blob_client_new(&s, &dead, &r) != BLOB_OK)
		tap_bail("client");
	blob_client_set_deadline(dead, clock_now_ms() - 1);
	tap_ok(blob_get_properties(dead, "x", &p, &r) == BLOB_DEADLINE && r.curl_code == 0,
	    "past deadline never touches the network (closed port, no curl error)");
	blob_client_set_deadline(dead, 0);
	t0 = clock_now_ms();
	tap_ok(blob_get_properties(dead, "x", &p, &r) == BLOB_TRANSIENT &&
	    r.curl_code != 0, "connection refused -> BLOB_TRANSIENT after a retry (%s)",
	    r.message);
	tap_ok(clock_now_ms() - t0 >= 100, "the retry backed off (%lld ms)",
	    (long long)(clock_now_ms() - t0));
	blob_client_free(dead);

	s.endpoint = "ftp://x";
	tap_ok(blob_client_new(&s, &dead, &r) == BLOB_BAD_INPUT && dead == NULL,
	    "non-http endpoint refused");
	s.endpoint = endpoint;
	s.key_b64 = "not base64!";
	tap_ok(blob_client_new(&s, &dead, &r) == BLOB_BAD_INPUT &&
	    strstr(r.message, "not base64!") == NULL, "bad key refused without echoing it");
}

/* Put Block From URL: bytes of committed blobs staged into another by the
 * service itself (the copy source a read-only SAS the client signed), in
 * ranges, then committed: the bytes are the sources' in that order. */
static void
test_from_url(struct blob_client *c)
{
	const char *ids[3] = { "RlVSTC1CTE9DSy0wMDAwMQ==", "RlVSTC1CTE9DSy0wMDAwMg==", "RlVSTC1CTE9DSy0wMDAwMw==" };
	struct blob_upload_info a, b, info;
	struct blob_upload_opts o = { NULL, NULL, 0, -1, NULL, NULL, NULL, 0 };
	struct blob_result r;
	struct sink s;
	int rc;

	if (ca_file != NULL && ca_file[0] != '\0') {
		/* The service itself reads the copy source.  Azurite does so
		 * over its own loopback and trusts there only the leaf
		 * certificate it serves, not the run's CA that signed it
		 * (real Azure reaches itself). */
		tap_skip("from url: Azurite over TLS trusts only its own leaf certificate"
		    " when it fetches a copy source, not the run's CA; checked over HTTP");
		return;
	}
	tap_ok(upload_str(c, "fu-a", "hello, ", NULL, &a, &r) == BLOB_OK &&
	    upload_str(c, "fu-b", "concatenated world", NULL, &b, &r) == BLOB_OK, "from url: two sources");
	rc = blob_put_block_from_url(c, "fu-dest", ids[0], "fu-a", 0, 7, &r);
	tap_ok(rc == BLOB_OK, "from url: Put Block From URL of a whole source (%s %ld %s %s)",
	    blob_status_name(rc), r.http_status, r.code, r.message);
	tap_ok(blob_put_block_from_url(c, "fu-dest", ids[1], "fu-b", 0, 12, &r) == BLOB_OK &&
	    blob_put_block_from_url(c, "fu-dest", ids[2], "fu-b", 12, 6, &r) == BLOB_OK,
	    "from url: two ranges of the other");
	memset(&info, 0, sizeof info);
	info.size = 25;
	memset(info.sha256_hex, 'a', 64);
	rc = blob_commit_blocks(c, "fu-dest", ids, 3, &o, &info, &r);
	tap_ok(rc == BLOB_OK, "from url: the block list commits (%s %s)", blob_status_name(rc), r.code);
	tap_ok(get_str(c, "fu-dest", 0, 0, &s, &r) == BLOB_OK && s.b.len == 25 &&
	    memcmp(s.b.ptr, "hello, concatenated world", 25) == 0, "from url: the bytes are the sources' in order");
	buf_free(&s.b);
	rc = blob_put_block_from_url(c, "fu-dest2", ids[0], "fu-missing", 0, 7, &r);
	tap_ok(rc != BLOB_OK && rc != BLOB_BAD_INPUT, "from url: a missing source is the service's refusal (%s %ld %s)",
	    blob_status_name(rc), r.http_status, r.code);
	tap_ok(blob_put_block_from_url(c, "fu-dest2", ids[0], "fu-a", 0, 0, &r) == BLOB_BAD_INPUT &&
	    blob_put_block_from_url(c, "fu-dest2", ids[0], "fu-a", 0, BLOB_FROM_URL_MAX + 1, &r) == BLOB_BAD_INPUT,
	    "from url: an empty range or one past the service's limit is refused before sending");
	tap_ok(strstr(r.message, "sig=") == NULL, "from url: no SAS signature in a result");

	/* With the range's MD5 (x-ms-source-content-md5) storage checks what
	 * it copied: the right one stages, a wrong one is refused. */
	{
		unsigned char md5[16], wrong[16];
		struct blob_from_url it = { ids[0], "fu-a", 0, 7, md5 };

		tap_ok(gnutls_hash_fast(GNUTLS_DIG_MD5, "hello, ", 7, md5) == 0, "from url: the range's MD5");
		rc = blob_put_blocks_from_url(c, "fu-dest3", &it, 1, &r);
		tap_ok(rc == BLOB_OK, "from url: a range with its MD5 stages (%s %ld %s)", blob_status_name(rc),
		    r.http_status, r.code);
		memcpy(wrong, md5, sizeof wrong);
		wrong[0] ^= 1;
		it.source_md5 = wrong;
		rc = blob_put_blocks_from_url(c, "fu-dest3", &it, 1, &r);
		tap_ok(rc != BLOB_OK && r.http_status == 400 && strcmp(r.code, "Md5Mismatch") == 0,
		    "from url: a range with an MD5 its bytes do not have is refused: 400 Md5Mismatch (%s %ld %s)",
		    blob_status_name(rc), r.http_status, r.code);
	}
}

int
main(void)
{
	struct blob_client *c, *staged;
	struct blob_result r;
	unsigned rnd = 0;

	endpoint = getenv("BINDERY_TEST_BLOB_ENDPOINT");
	account = getenv("BINDERY_TEST_BLOB_ACCOUNT");
	key_b64 = getenv("BINDERY_TEST_BLOB_KEY");
	ca_file = getenv("BINDERY_TEST_BLOB_CA_FILE");	/* https: the stack's own CA */
	if (endpoint == NULL || endpoint[0] == '\0')
		tap_missing("BINDERY_TEST_BLOB_ENDPOINT is not set");
	if (account == NULL || key_b64 == NULL)
		tap_missing("BINDERY_TEST_BLOB_ACCOUNT / BINDERY_TEST_BLOB_KEY not set");
	if (gnutls_rnd(GNUTLS_RND_NONCE, &rnd, sizeof rnd) < 0)
		rnd = (unsigned)time(NULL);
	snprintf(container, sizeof container, "t-blob-%ld-%08x", (long)getpid(), rnd);
	c = client(0, 0, 0);
	staged = client(64 * 1024, 3, 16 * 1024);
	tap_ok(blob_container_create(c, &r) == BLOB_OK, "container %s created (%s %s)",
	    container, r.code, r.message);
	tap_ok(blob_container_create(c, &r) == BLOB_OK, "creating it again is BLOB_OK");

	test_basics(c);
	test_experiment_i(c, staged);
	test_experiment_j(c);
	test_etag_pin(c);
	test_experiment_k(c, staged);
	test_experiment_g(c);
	test_streaming();
	test_list_find_batch(c);
	test_service(c);
	test_sas(c);
	test_deadline_and_errors(c);
	test_from_url(c);

	tap_ok(container_delete(c, &r) == BLOB_OK, "container deleted");
	blob_client_free(staged);
	blob_client_free(c);
	return tap_done();
}
