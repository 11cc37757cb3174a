/*
 * Allocation-failure loop, after curl's torture tests: run each operation
 * with allocation 1, 2, 3, ... failing (through lib/base/alloc.h) until a run
 * completes without reaching the armed failure.  Every failing run must end
 * in a clean error and free what it took; the ASan build checks the freeing.
 */
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "storage/blob_internal.h"
#include "base/buf.h"
#include "parse/config.h"
#include "parse/http_parse.h"
#include "parse/multipart.h"
#include "tap.h"

static const char body[] =
	"preamble\r\n"
	"------WebKitFormBoundary7MA4YWxkTrZu0gW\r\n"
	"Content-Disposition: form-data; name=\"name\"\r\n\r\n"
	"report.txt\r\n"
	"------WebKitFormBoundary7MA4YWxkTrZu0gW\r\n"
	"Content-Disposition: form-data; name=\"file\"; filename=\"r\\\"e.txt\"\r\n"
	"Content-Type: text/plain\r\n\r\n"
	"line one\r\n------WebKitFormBoundary7MA4YWxkTrZu0\r\nline two\r\n"
	"------WebKitFormBoundary7MA4YWxkTrZu0gW--\r\n";

struct tally {
	unsigned begins, ends;
	size_t bytes;
};

static int
on_begin(void *ctx, const struct multipart_part *p)
{
	((struct tally *)ctx)->begins++;
	return 0;
}

static int
on_data(void *ctx, const char *d, size_t n)
{
	((struct tally *)ctx)->bytes += n;
	return 0;
}

static int
on_end(void *ctx)
{
	((struct tally *)ctx)->ends++;
	return 0;
}

/* The multipart parse the responder does, in 7-byte feeds. */
static enum multipart_err
run_multipart(struct tally *t)
{
	static const struct multipart_callbacks cb = { on_begin, on_data, on_end };
	struct multipart_parser *p = NULL;
	struct span ct = SPAN_LIT("multipart/form-data; boundary=----WebKitFormBoundary7MA4YWxkTrZu0gW");
	struct span boundary;
	enum multipart_err e;
	size_t off, n;

	memset(t, 0, sizeof *t);
	if ((e = multipart_boundary(ct, &boundary)) != MP_OK)
		goto out;
	if ((e = multipart_parser_new(boundary, NULL, &cb, t, &p)) != MP_OK)
		goto out;
	for (off = 0; off < sizeof body - 1; off += n) {
		n = sizeof body - 1 - off < 7 ? sizeof body - 1 - off : 7;
		if ((e = multipart_feed(p, body + off, n)) != MP_OK)
			goto out;
	}
	e = multipart_finish(p);
out:
	multipart_parser_free(p);
	return e;
}

/* The http_parse functions that allocate (through struct buf).  Returns 0
 * when all succeeded, 1 when one failed cleanly with its NOMEM value, -1 on
 * any other outcome. */
static int
run_http_parse(void)
{
	struct buf q = BUF_INIT(1024), d = BUF_INIT(1024), h = BUF_INIT(1024);
	enum http_query_result qr;
	enum http_decode_err dr;
	enum buf_err he;
	int rc = -1;

	qr = http_query_get(SPAN_LIT("limit=10&name=my+report%20%C3%A9.txt"), "name", &q);
	if (qr == HTTP_QUERY_NOMEM) {
		rc = q.len == 0 ? 1 : -1;
		goto out;
	}
	if (qr != HTTP_QUERY_FOUND || !span_eq_cstr(buf_span(&q), "my report \xc3\xa9.txt"))
		goto out;
	dr = http_percent_decode(SPAN_LIT("a%2Fb%20c"), &d);
	if (dr == HTTP_DECODE_NOMEM) {
		rc = 1;
		goto out;
	}
	if (dr != HTTP_DECODE_OK || !span_eq_cstr(buf_span(&d), "a/b c"))
		goto out;
	he = html_escape(SPAN_LIT("<b>\"Tom\" & 'Jerry'</b>"), &h);
	if (he == BUF_NOMEM) {
		rc = 1;
		goto out;
	}
	if (he != BUF_OK)
		goto out;
	rc = 0;
out:
	buf_free(&q);
	buf_free(&d);
	buf_free(&h);
	return rc;
}

/* A config that takes every allocating path: strings, a connection string
 * and a SAS over continuation lines, tokens. */
static const char config_text[] =
	"[database]\nsocket = /run/mysqld/mysqld.sock\nuser = bindery\n"
	"password = SECRETMARKER-pw\nname = bindery\n"
	"[storage]\nconnection_string = DefaultEndpointsProtocol=https;AccountName=acct;\n"
	"  AccountKey=SECRETMARKERa2V5a2V5a2V5;EndpointSuffix=core.windows.net\n"
	"sas = ?sv=2021-08-06&sp=rwd\n  &sig=SECRETMARKERsig\n"
	"container = documents\n"
	"[auth]\ntoken = alice:0123456789abcdef0123\ntoken = bob:fedcba9876543210fedc\n";

/* config_load_stream from memory.  0: loaded as expected; 1: failed with
 * "out of memory" and no secret in the message; -1: anything else. */
static int
run_config(void)
{
	struct bindery_config *cfg = NULL;
	char err[512] = "", warn[256];
	FILE *fp = fmemopen((void *)config_text, sizeof config_text - 1, "r");
	int rc;

	if (fp == NULL)
		tap_bail("fmemopen failed");
	rc = config_load_stream(fp, "mem.conf", &cfg, err, sizeof err, warn, sizeof warn);
	fclose(fp);
	if (rc == 0) {
		rc = cfg != NULL && cfg->ntokens == 2 && cfg->storage_sas != NULL &&
		    strcmp(cfg->storage_endpoint, "https://acct.blob.core.windows.net") == 0 ?
		    0 : -1;
		config_free(cfg);
		return rc;
	}
	if (cfg == NULL && strstr(err, "out of memory") != NULL &&
	    strstr(err, "SECRETMARKER") == NULL)
		return 1;
	tap_diag("config load failed with: %s", err);
	return -1;
}

static const char list_answer[] =
	"<?xml version=\"1.0\" encoding=\"utf-8\"?>"
	"<EnumerationResults ContainerName=\"documents\"><Blobs>"
	"<Blob><Name>d/0001-a</Name><Properties><Etag>0x8DC1</Etag>"
	"<Content-Length>11</Content-Length></Properties><Metadata><sha256>"
	"b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9</sha256>"
	"</Metadata><Tags><TagSet><Tag><Key>state</Key><Value>committed</Value></Tag>"
	"</TagSet></Tags></Blob>"
	"<Blob><Name>d/0002-&lt;b&gt;</Name><Properties><Content-Length>0</Content-Length>"
	"</Properties></Blob></Blobs><NextMarker>2!88!MDAwMDIz</NextMarker></EnumerationResults>";
static const char tags_answer[] =
	"<?xml version=\"1.0\" encoding=\"utf-8\"?><Tags><TagSet>"
	"<Tag><Key>state</Key><Value>committed</Value></Tag>"
	"<Tag><Key>doc</Key><Value>42</Value></Tag></TagSet></Tags>";

static int
count_item(void *ctx, const struct blob_list_item *it)
{
	(void)it;
	++*(unsigned *)ctx;
	return 0;
}

/* The List Blobs and Get Blob Tags parse steps (expat allocating through
 * alloc_*).  0: parsed as expected; 1: BLOB_XML_NOMEM and nothing delivered
 * after it; -1: anything else. */
static int
run_blob_xml(void)
{
	struct buf marker = BUF_INIT(4096);
	struct blob_tag_set tags;
	enum blob_xml_err e;
	unsigned items = 0;
	int rc = -1;

	e = blob_parse_list_answer(list_answer, sizeof list_answer - 1, count_item, NULL,
	    &items, &marker);
	if (e == BLOB_XML_NOMEM) {
		rc = 1;
		goto out;
	}
	if (e != BLOB_XML_OK || items != 2 || !span_eq_cstr(buf_span(&marker), "2!88!MDAwMDIz"))
		goto out;
	e = blob_parse_tags_answer(tags_answer, sizeof tags_answer - 1, &tags);
	if (e == BLOB_XML_NOMEM) {
		rc = 1;
		goto out;
	}
	if (e != BLOB_XML_OK || tags.n != 2 || strcmp(tags.value[1], "42") != 0)
		goto out;
	rc = 0;
out:
	if (rc == -1)
		tap_diag("blob answer parse gave %d (%u items)", (int)e, items);
	buf_free(&marker);
	return rc;
}

/* Fail allocation 1, 2, ... of run() until a run completes; each failing run
 * must give 1.  Returns the number of failure points, or -1. */
static long
fail_each(int (*run)(void), const char *what)
{
	long n, before, points = 0;
	int rc, clean = 1;

	for (n = 1; n < 10000; n++) {
		before = alloc_failures();
		alloc_fail_after(n);
		rc = run();
		alloc_fail_after(-1);
		if (alloc_failures() == before) {
			tap_ok(rc == 0, "%s: run with allocation %ld armed completes", what, n);
			break;
		}
		points++;
		if (rc != 1) {
			clean = 0;
			tap_diag("%s: allocation %ld failing gave %d", what, n, rc);
		}
	}
	tap_ok(clean && points >= 1, "%s: each of %ld failing allocations gives a clean error",
	    what, points);
	return clean ? points : -1;
}

int
main(void)
{
	struct tally t;
	enum multipart_err e;
	long n, before, points;
	int clean, rc;
	struct buf probe = BUF_INIT(16);

	/* Baseline: the parse works and the loop has something to fail. */
	before = alloc_count();
	e = run_multipart(&t);
	tap_ok(e == MP_OK && t.begins == 2 && t.ends == 2, "baseline multipart parse (%s)",
	    multipart_err_string(e));
	tap_ok(alloc_count() - before >= 1, "the parse allocates %ld time(s) through alloc_*",
	    alloc_count() - before);

	clean = 1;
	for (n = 1, points = 0; n < 1000; n++) {
		before = alloc_failures();
		alloc_fail_after(n);
		e = run_multipart(&t);
		alloc_fail_after(-1);
		if (alloc_failures() == before) {
			tap_ok(e == MP_OK && t.begins == 2 && t.ends == 2,
			    "multipart: run with allocation %ld armed completes", n);
			break;
		}
		points++;
		if (e != MP_NOMEM || t.begins != 0) {
			clean = 0;
			tap_diag("allocation %ld failing gave %s", n, multipart_err_string(e));
		}
	}
	tap_ok(clean && points >= 1, "multipart: each of %ld failing allocations gives MP_NOMEM",
	    points);

	/* buf.c allocates with plain realloc until it is switched to alloc_realloc;
	 * then the loop below covers the http_parse functions too. */
	alloc_fail_after(1);
	if (buf_append_cstr(&probe, "x") == BUF_OK)
		tap_diag("buf.c does not allocate through alloc_realloc: http_parse has no "
		    "failure points yet");
	alloc_fail_after(-1);
	buf_free(&probe);

	tap_ok(run_http_parse() == 0, "baseline http_parse calls");
	clean = 1;
	for (n = 1, points = 0; n < 1000; n++) {
		before = alloc_failures();
		alloc_fail_after(n);
		rc = run_http_parse();
		alloc_fail_after(-1);
		if (alloc_failures() == before) {
			tap_ok(rc == 0, "http_parse: run with allocation %ld armed completes", n);
			break;
		}
		points++;
		if (rc != 1) {
			clean = 0;
			tap_diag("allocation %ld failing gave %d", n, rc);
		}
	}
	tap_ok(clean, "http_parse: each of %ld failing allocations gives a clean NOMEM", points);

	tap_ok(run_config() == 0, "baseline config load from memory");
	(void)fail_each(run_config, "config");
	tap_ok(run_blob_xml() == 0, "baseline blob answer parse (list, tags)");
	(void)fail_each(run_blob_xml, "blob answers");

	/* The hook itself. */
	alloc_fail_after(2);
	{
		void *a = alloc_malloc(8), *b = alloc_malloc(8), *c = alloc_calloc(2, 4), *r;

		tap_ok(a != NULL && b == NULL && c != NULL, "exactly the 2nd allocation fails, once");
		r = alloc_realloc(a, 64);
		tap_ok(r != NULL, "realloc after the failure works");
		alloc_fail_after(1);
		tap_ok(alloc_realloc(r, 128) == NULL, "a failed realloc returns NULL");
		alloc_free(r);	/* still valid after the failed realloc */
		alloc_free(c);
		alloc_free(NULL);
	}
	alloc_fail_after(5);
	alloc_fail_after(-1);
	before = alloc_failures();
	alloc_free(alloc_malloc(1));
	tap_ok(alloc_failures() == before, "-1 disarms");
	return tap_done();
}
