/*
 * blob_internal.h - pieces of the blob client shared between its modules;
 * not part of the public interface.
 *
 *   blob_http.c    the HTTP engine: client lifecycle, request building and
 *                  signing, the curl handle pool and multi execution,
 *                  retries, answer headers, results.  Its names say what
 *                  they work on: blob_request_* builds a request,
 *                  blob_exec_* runs it, blob_result_* fills a result.
 *   blob_upload.c  streaming uploads, Put Block, Put Block List and purge
 *                  of uncommitted blocks.
 *   blob.c         the other operations (properties, get, delete, tags,
 *                  containers, block list, listing, batch, service
 *                  properties, SAS URLs) and their answer parsers.
 *   blob_xml.c     the XML walk the parsers are built on.
 */
#ifndef BINDERY_BLOB_INTERNAL_H
#define BINDERY_BLOB_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>

#include "storage/blob.h"
#include "base/buf.h"
#include "base/compat.h"
#include "storage/sign.h"

/* ---- the HTTP engine (blob_http.c) ---------------------------------------- */

/* Request headers one struct blob_request holds. */
#define BLOB_REQUEST_MAX_HEADERS	24

/* Where a request stands in the engine; only blob_http.c moves it. */
enum blob_request_state {
	BLOB_REQUEST_IDLE,
	BLOB_REQUEST_RUNNING,
	BLOB_REQUEST_WAITING,
	BLOB_REQUEST_DONE,
};

/* What the engine keeps from an answer's headers (reset per attempt;
 * -1: absent for the int64_t fields and retry_after_ms). */
struct blob_answer_headers {
	char etag[128];
	char error_code[64];
	char request_id[64];
	char content_type[256];
	char content_md5[32];
	char blob_content_md5[32];
	char meta_sha256[65];
	char meta_installation[40];
	char last_modified[64];
	int64_t date;			/* the answer's Date, unix seconds; -1 without */
	int64_t meta_size;
	int64_t content_length;
	int64_t range_total;
	unsigned tag_count;
	unsigned meta_count;		/* x-ms-meta-* headers, whatever their names */
	char meta_text[BLOB_META_TEXT_MAX];	/* the first BLOB_LIST_META of them, packed */
	size_t meta_at[BLOB_LIST_META][2];
	size_t meta_n, meta_len;
	char blob_type[16];		/* x-ms-blob-type: BlockBlob, PageBlob, AppendBlob */
	int copied;			/* x-ms-copy-id or x-ms-copy-status came */
	int content_extras;		/* Content-Encoding, -Language, -Disposition or Cache-Control came */
	long retry_after_ms;
};

/* One REST call: built with blob_request_*, run with blob_exec_*, freed
 * with blob_request_free; the answer's status, headers and body are read
 * from it. */
struct blob_request {
	const char *method;
	struct buf path;		/* encoded, with the endpoint's prefix */
	struct buf query;		/* encoded, without '?' or the SAS */
	struct sign_header hdr[BLOB_REQUEST_MAX_HEADERS];
	char *hdr_value[BLOB_REQUEST_MAX_HEADERS];	/* owned copies of hdr[].value */
	char *hdr_name[BLOB_REQUEST_MAX_HEADERS];	/* owned names (x-ms-meta-*), else NULL */
	size_t nhdr;
	const char *body;		/* borrowed */
	size_t body_len, body_off;
	int has_body, create_only;

	long status;
	struct blob_answer_headers rh;
	struct buf answer;		/* error or XML body */
	struct buf bearer;		/* Entra: "Bearer <token>" for this attempt */
	int answer_overflow;

	blob_headers_fn on_headers;
	blob_data_fn on_data;
	void *cb_ctx;
	int headers_delivered, cb_aborted;
	uint64_t delivered;

	enum blob_request_state state;
	CURL *easy;
	char curl_err[CURL_ERROR_SIZE];	/* libcurl's detail of a failed attempt */
	struct curl_slist *slist;
	unsigned attempt;
	int ambiguous;			/* an earlier try may have taken effect */
	int64_t retry_at;
	struct blob_result res;
};

/* A user delegation key as Get User Delegation Key answered it
 * (blob_sas.c): the SAS it signs name its fields. */
struct blob_delegation_key {
	char oid[64], tid[64];		/* SignedOid, SignedTid */
	char start[32], expiry[32];	/* SignedStart, SignedExpiry, as sent back */
	char service[8], version[16];	/* SignedService, SignedVersion */
	unsigned char value[64];	/* Value, decoded */
	size_t value_len;
	int64_t expires;		/* SignedExpiry in Unix seconds; 0: none held */
};

/* The opaque client of blob.h: settings, credentials, the curl multi
 * handle and its easy-handle pool.  Only blob_http.c changes it (and
 * blob_sas.c the delegation key). */
struct blob_client {
	char *url_base;		/* scheme://host[:port] */
	char *path_prefix;	/* "" or "/devstoreaccount1" */
	char *account;
	char *container;
	char *sas;		/* NULL with a key */
	char *ca_file, *ca_path;	/* NULL: the system's trust store */
	unsigned char key[128];
	size_t keylen;
	struct entra_credential *entra;	/* non-NULL: bearer tokens, no key, no SAS */
	struct blob_delegation_key udk;	/* Entra: the key SAS links are signed with */
	unsigned long udk_fetched, udk_failed;
	int https;
	size_t block_size, single_put_max;
	unsigned in_flight, max_retries;
	unsigned page_size;	/* listing maxresults (0: the service's);
				 * tests make it small to walk markers */
	long connect_timeout_ms, low_speed_time_s;
	int64_t deadline_ms;
	CURLM *multi;
	CURL **easy;		/* pool of in_flight handles, made lazily */
	int *easy_busy;
	struct blob_request **active;	/* requests started and not yet collected */
	unsigned nactive;
};

/* Zero *res. */
void blob_result_clear(struct blob_result *res);
/* Set res's status and (when msg is non-NULL) its message, truncated to
 * fit; returns st. */
int blob_result_set(struct blob_result *res, enum blob_status st, const char *msg);
/* blob_result_set(res, BLOB_NOMEM, "out of memory"). */
int blob_result_nomem(struct blob_result *res);

/* Empty request for method (a literal); pair with blob_request_free. */
void blob_request_init(struct blob_request *r, const char *method);
/* Free what r owns; r may be blob_request_init'ed again afterwards. */
void blob_request_free(struct blob_request *r);
/* Add or replace header name (a literal, borrowed) with a copy of value;
 * -1 out of memory. */
int blob_request_header(struct blob_request *r, const char *name,
    const char *value);
/* Append name=value (value percent-encoded) to r's query; -1 on failure. */
/* An x-ms-meta-<name> header, name and value copied (checked by
 * blob_meta_ok first). */
int blob_request_meta(struct blob_request *r, const char *name, const char *value);
/* Metadata a creating call may carry: names C identifiers of at most 64
 * characters, values visible ASCII of at most BLOB_META_VALUE_MAX, all of
 * them together at most the service's 8 KiB. */
int blob_meta_ok(const struct blob_meta *meta, size_t n);
int blob_request_query(struct blob_request *r, const char *name,
    const char *value);
/* Append the container's encoded path to r's path; -1 on failure. */
int blob_request_path_container(struct blob_client *c, struct blob_request *r);
/* Append the blob name's encoded path to r's path; -1 on failure. */
int blob_request_path_blob(struct blob_client *c, struct blob_request *r,
    const char *name);
/* Nonzero when name is a valid blob name (1..1024 characters). */
int blob_name_ok(const char *name);

/* The non-negative decimal s[n], or -1 when it is not one. */
int64_t blob_parse_decimal(const char *s, size_t n);
/* Copy v[n] into dst as a C string; an oversize value leaves dst empty. */
void blob_copy_field(char *dst, size_t dstsize, const char *v, size_t n);
/* Fill *p from the answer headers rh. */
void blob_props_from_answer(const struct blob_answer_headers *rh, struct blob_props *p);
/* Hand r's answer headers to its on_headers (once); nonzero stops. */
int blob_request_deliver_headers(struct blob_request *r);
/* Nonzero once c's deadline (if any) has passed. */
int blob_deadline_passed(const struct blob_client *c);
/* The status for HTTP status http with service error code (pure). */
enum blob_status blob_status_for_http(long http, const char *code, int create_only);

/* Run r to its end, retries included; copies its result to res and returns
 * its status. */
int blob_exec_run(struct blob_client *c, struct blob_request *r, struct blob_result *res);
/* Start r (kept alive by the caller until collected); -1 when c already
 * runs in_flight requests. */
int blob_exec_start(struct blob_client *c, struct blob_request *r);
/* One finished started request without blocking, or NULL; *next_retry is
 * the earliest pending retry time (-1: none). */
struct blob_request *blob_exec_collect(struct blob_client *c, int64_t *next_retry);
/* Sleep until curl, a curl_multi_wakeup(), the next retry or max_ms. */
void blob_exec_poll(struct blob_client *c, int64_t next_retry, int max_ms);
/* Abandon the started request r wherever it is. */
void blob_exec_cancel(struct blob_client *c, struct blob_request *r);

/* ---- XML (blob_xml.c, parsers in blob.c) ---------------------------------- */

/*
 * A flattening XML walk: on_start gets the element path ("/A/B/C") when an
 * element opens, on_end gets the path and the element's own character data
 * when it closes.  Enough for every answer the Blob service sends.  A
 * nonzero return from a callback stops the walk.
 */
struct blob_xml_walk {
	void *ctx;
	int (*on_start)(void *ctx, const char *path);
	int (*on_end)(void *ctx, const char *path, const char *text, size_t len);
};

enum blob_xml_err {
	BLOB_XML_OK = 0,
	BLOB_XML_MALFORMED,
	BLOB_XML_NOMEM,
	BLOB_XML_STOPPED,	/* a callback returned nonzero */
};

BINDERY_NODISCARD enum blob_xml_err blob_xml_walk(const char *xml, size_t len,
    const struct blob_xml_walk *w);

/* Pull <Error><Code> and <Message> out of an error body; fields left as
 * they were when absent. */
void blob_xml_error(const char *xml, size_t len, char *code, size_t codesize,
    char *message, size_t messagesize);

/*
 * The pure parse step of each call that reads an XML answer, so the fuzz
 * harness and the allocation-failure loop reach the code the network calls
 * run.  Each takes the answer body as received (any bytes; need not end in
 * NUL), resets *out first, and returns BLOB_XML_OK, BLOB_XML_MALFORMED (not
 * XML, or a value that does not fit) or BLOB_XML_NOMEM.  Element layouts are
 * the REST reference's.
 */
/* Get Blob Tags: <Tags><TagSet><Tag><Key/><Value/></Tag>...; more than
 * BLOB_MAX_TAGS tags or an over-long key or value is MALFORMED. */
BINDERY_NODISCARD enum blob_xml_err blob_parse_tags_answer(const char *xml, size_t len,
    struct blob_tag_set *out);
/* Get Block List: counts of <CommittedBlocks>/<UncommittedBlocks> <Block>s. */
BINDERY_NODISCARD enum blob_xml_err blob_parse_block_list_answer(const char *xml,
    size_t len, struct blob_block_counts *out);
/* Get Blob Service Properties: the delete retention policy (days >= 0). */
BINDERY_NODISCARD enum blob_xml_err blob_parse_service_props_answer(const char *xml,
    size_t len, struct blob_service_props *out);
/*
 * One page of List Blobs (on_item) or Find Blobs by Tags (on_name; exactly
 * one of the two is non-NULL): the callback runs per <Blob>, its arguments
 * borrowed for the call; nonzero from it gives BLOB_XML_STOPPED.
 * next_marker (reset first; its cap bounds the marker) receives
 * <NextMarker>, empty on the last page.
 */
BINDERY_NODISCARD enum blob_xml_err blob_parse_list_answer(const char *xml, size_t len,
    blob_list_fn on_item, int (*on_name)(void *, const char *), void *ctx,
    struct buf *next_marker);
/*
 * Blob Batch: the multipart/mixed answer; each part's "Content-ID: N" and
 * status line fill each[N] (N < n); entries without a part are left as
 * they were.  Unlike the XML parsers, body[len] must be '\0'.
 */
void blob_parse_batch_answer(const char *body, size_t len, struct blob_result *each,
    size_t n);

/* Append s with &, <, >, " and ' escaped for element content. */
BINDERY_NODISCARD enum buf_err blob_xml_escape(struct buf *out, const char *s);

/* ---- Entra ID (blob_http.c, blob_sas.c) ----------------------------------- */

/* The Authorization header value for one request with Entra: "Bearer
 * <token>", a token valid past its refresh margin (fetched when needed,
 * within the client's deadline); BLOB_CREDENTIAL with the reason in res
 * when none can be had (res->code the authority's error when it refused). */
BINDERY_NODISCARD int blob_entra_authorization(struct blob_client *c, struct buf *out,
    struct blob_result *res);
/* Get User Delegation Key's answer: <UserDelegationKey> and its seven
 * elements; a missing one, or a Value that is not base64 of at most 64
 * bytes, is MALFORMED. */
BINDERY_NODISCARD enum blob_xml_err blob_parse_delegation_key_answer(const char *xml,
    size_t len, struct blob_delegation_key *out);

/* ---- uploads (blob_upload.c) ---------------------------------------------- */

/* blob_upload_create, or with create_only 0 the same without
 * If-None-Match: an overwrite, which only the tests ask for. */
BINDERY_NODISCARD int blob_upload_stream(struct blob_client *c, const char *name,
    const struct blob_upload_opts *opts, blob_read_fn read_fn, void *ctx,
    struct blob_upload_info *info, struct blob_result *res, int create_only);
/* Commit ids (base64, as staged) as a new blob, create-only, with the
 * options' tags and content type (NULL: none). */
BINDERY_NODISCARD int blob_put_block_list_create(struct blob_client *c,
    const char *name, const char *const *ids, size_t nids,
    const struct blob_upload_opts *opts, struct blob_result *res);

/* ---- operations (blob.c) ------------------------------------------------- */

/* Nonzero when tags[n] obey "Set Blob Tags" (at most ten, key 1..128 and
 * value 0..256 characters of [A-Za-z0-9 +-./:=_]). */
int blob_tags_ok(const struct blob_tag *tags, size_t n);

/* What a simple call addresses. */
enum blob_call_target {
	BLOB_CALL_BLOB,		/* the blob args->name in the container */
	BLOB_CALL_CONTAINER,	/* the configured container */
	BLOB_CALL_SERVICE,	/* the account's Blob service ("/") */
};

/*
 * A simple REST call as data.  Every call that is one request with a fixed
 * method, query and headers, at most an in-memory body, and at most one
 * answer to read is a static struct blob_call run by blob_call(), so the
 * request skeleton (build, sign, run, map the result, free) is written
 * once.
 */
struct blob_call {
	const char *method;		/* a literal */
	enum blob_call_target target;
	const char *query[3][2];	/* name, value pairs, sent in this order;
					 * a NULL name ends them */
	const char *header[2];		/* one fixed header (name, value) or none */
	const char *content_type;	/* of args->body */
	int empty_body;			/* no body, yet Content-Length: 0 (PUT) */
	long ok_http;			/* this status with ok_code is BLOB_OK: */
	const char *ok_code;		/* the call's goal was already reached */
	/* Read a successful answer into args->out from its headers, or from
	 * its XML body (a refused body is BLOB_FAILED with message malformed,
	 * or BLOB_NOMEM).  Both NULL: the answer says nothing more. */
	void (*read_headers)(const struct blob_answer_headers *, void *out);
	enum blob_xml_err (*read_body)(const char *xml, size_t len, void *out);
	const char *malformed;
};

/* What changes from one run of a call to the next; all borrowed, NULL for
 * none. */
struct blob_call_args {
	const char *name;		/* the blob, for BLOB_CALL_BLOB */
	const char *if_tags;		/* x-ms-if-tags */
	const char *if_match;		/* If-Match */
	const struct buf *body;
	const char *const (*headers)[2];	/* more (name, value) headers, n_headers of them */
	size_t n_headers;
	void *out;			/* for read_headers or read_body */
};

/* Build, run (retries included) and free the request that call and args
 * describe; fills res and returns its status.  A bad blob name is
 * BLOB_BAD_INPUT with nothing sent. */
BINDERY_NODISCARD int blob_call(struct blob_client *c, const struct blob_call *call,
    const struct blob_call_args *args, struct blob_result *res);

/*
 * Page through a container listing to the end, following NextMarker: List
 * Blobs (comp "list", with prefix and include when non-empty) or Find Blobs
 * by Tags (comp "blobs", where set).  Exactly one of on_item and on_name is
 * non-NULL, as for blob_parse_list_answer; a callback that stops the walk
 * gives BLOB_ABORTED.  The caller clears res.
 */
BINDERY_NODISCARD int blob_list_pages(struct blob_client *c, const char *comp,
    const char *prefix, const char *include, const char *where,
    blob_list_fn on_item, int (*on_name)(void *, const char *), void *ctx,
    struct blob_result *res);

#endif
