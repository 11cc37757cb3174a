/*
 * blob.h - the Azure Blob Storage client: libcurl (GnuTLS) + expat.
 *
 * One struct blob_client per process (or per thread: a client is not
 * thread-safe).  It keeps its connections alive across calls and signs
 * every request with Shared Key, appends the configured SAS, or sends an
 * Entra ID bearer token (storage/entra.h; then the SAS links it hands out
 * are user delegation SAS, signed with a key storage lends for a while).
 *
 * Every call fills a struct blob_result: a status the caller switches on,
 * the HTTP status, the curl code, the service's error code and message
 * (x-ms-error-code or the XML <Code>/<Message>) and its request id.  No
 * result ever holds the account key or a SAS signature.
 *
 * Uploads are create-only (If-None-Match: *): nothing here overwrites
 * bytes.  Transient failures (connect errors, timeouts, 408, 429, 500,
 * 502, 503, 504) are retried with exponential backoff and jitter, honouring
 * Retry-After and x-ms-retry-after-ms, and only where repeating the request
 * is safe.  See doc/design.md, "Storage client rules".
 */
#ifndef BINDERY_BLOB_H
#define BINDERY_BLOB_H

#include <stddef.h>
#include <stdint.h>
#include <gnutls/gnutls.h>
#include <gnutls/crypto.h>
#include <nettle/sha2.h>

#include "base/buf.h"
#include "base/compat.h"
#include "storage/entra.h"

struct blob_client;

enum blob_status {
	BLOB_OK = 0,
	BLOB_EXISTS,		/* create refused: 409 BlobAlreadyExists or 412 on a create */
	BLOB_EXISTS_MAYBE_OURS,	/* create retried after an ambiguous try, then refused */
	BLOB_CONDITION_NOT_MET,	/* 412 on If-Match / x-ms-if-tags */
	BLOB_NOT_FOUND,		/* 404 (BlobNotFound, ContainerNotFound) */
	BLOB_AUTH_FAILED,	/* 401/403 */
	BLOB_TRANSIENT,		/* still failing transiently after the retries */
	BLOB_NOT_SUPPORTED,	/* 501 */
	BLOB_DEADLINE,		/* the deadline passed before a call; nothing was sent */
	BLOB_ABORTED,		/* a caller callback asked to stop or failed */
	BLOB_BAD_INPUT,		/* impossible input from the caller (a bad name, a
				 * body not of expected_size); nothing committed */
	BLOB_NOMEM,
	BLOB_FAILED,		/* anything else */
	BLOB_REJECTED,		/* the service refused a request this client built:
				 * 400 (Md5Mismatch, InvalidBlockList,
				 * InvalidHeaderValue ...), 411, 413, 416 */
	BLOB_CREDENTIAL,	/* no bearer token: the Entra authority was out of
				 * reach or refused the credential (then code is
				 * its error, e.g. "invalid_client", else ""); nothing
				 * was sent to storage; the message says which */
};

struct blob_result {
	enum blob_status status;
	long http_status;	/* 0 when no answer was received */
	int curl_code;		/* CURLcode of the last attempt */
	char code[64];		/* x-ms-error-code or XML <Code> */
	char message[256];	/* never contains a credential */
	char request_id[64];	/* x-ms-request-id of the answer, "" without one:
				 * what the service's own logs know it by */
};

/* The enumerator's name ("BLOB_NOT_FOUND"), for logs; "BLOB_?" if unknown. */
const char *blob_status_name(enum blob_status);
/* One warning line for a call that failed: step (what was tried) and name,
 * then status, HTTP status, error code, request id and message. */
void blob_log_failure(const char *step, const char *name, const struct blob_result *r);

struct blob_settings {		/* all borrowed; copied by blob_client_new */
	const char *endpoint;	/* "https://acct.blob.core.windows.net" or
				 * path-style "http://127.0.0.1:10000/devstoreaccount1" */
	const char *account;
	const char *key_b64;	/* NULL when SAS-only or Entra */
	const char *sas;	/* account/container SAS query (no '?'); NULL with a key */
	const struct entra_settings *entra; /* non-NULL: Entra ID bearer tokens,
				 * with neither key nor sas (https only) */
	const char *container;
	size_t block_size;	/* staged upload block size (0: 4 MiB) */
	unsigned blocks_in_flight; /* (0: 4) */
	size_t single_put_max;	/* bodies up to this go as one Put Blob (0: 4 MiB);
				 * never more than block_size */
	long connect_timeout_ms; /* (0: 10000) */
	long low_speed_time_s;	/* abort a transfer below 1 byte/s for this long (0: 30) */
	const char *ca_file;	/* CA certificates for https (PEM), or NULL */
	const char *ca_path;	/* a directory of them (c_rehash), or NULL; neither:
				 * the system's store.  Verification is never off. */
	unsigned max_retries;	/* retries after the first attempt */
};

/* Validate and copy the settings, decode the key (or load the Entra
 * credential) and open nothing yet (the first call connects or fetches a
 * token).  On failure *out is NULL and res says why. */
BINDERY_NODISCARD int blob_client_new(const struct blob_settings *,
    struct blob_client **out, struct blob_result *res);
/* Close the connections and wipe the key; NULL is a no-op. */
void blob_client_free(struct blob_client *);

/* Absolute deadline on clock_now_ms() (base/clock.h), 0 for none.  Checked
 * before every storage call and every retry: past it a call returns
 * BLOB_DEADLINE without sending anything. */
void blob_client_set_deadline(struct blob_client *, int64_t deadline_ms);

struct blob_tag {
	const char *key;
	const char *value;
};

/* A blob's tags, owned by the struct (the service allows 10 per blob, keys
 * up to 128 bytes, values up to 256). */
#define BLOB_MAX_TAGS 10
struct blob_tag_set {
	size_t n;
	char key[BLOB_MAX_TAGS][129];
	char value[BLOB_MAX_TAGS][257];
};

/* One metadata entry; names are C identifiers, values visible ASCII.  At
 * most BLOB_MAX_META in one call. */
#define BLOB_MAX_META 12
struct blob_meta {
	const char *name;
	const char *value;
};
/* A value of a creating call's metadata: at most this long (all of a
 * blob's metadata together at most 8 KiB, the service's limit). */
#define BLOB_META_VALUE_MAX 4096
/* Metadata read back: at most this many entries, this many bytes of names
 * and values (the service's 8 KiB, and room for the NULs). */
#define BLOB_LIST_META 16
#define BLOB_META_TEXT_MAX (8192 + 2 * BLOB_LIST_META)

struct blob_upload_opts {
	const char *content_type;	/* NULL: application/octet-stream */
	const struct blob_tag *tags;
	size_t ntags;
	int64_t expected_size;		/* -1 unknown; else a mismatch is BLOB_BAD_INPUT
					 * and nothing is committed */
	/* Called once the whole body is read, right before the committing
	 * call (Put Blob or Put Block List): nonzero stops the upload with
	 * BLOB_ABORTED and nothing committed.  NULL: none.  (The protocol
	 * layer renews its lease here.) */
	int (*before_commit)(void *ctx);
	void *commit_ctx;
	/* More metadata for the committing call, beside size and sha256
	 * (at most BLOB_MAX_META; bad names or values are BLOB_BAD_INPUT,
	 * nothing sent).  It goes on that call only: Set Metadata after the
	 * commit would change the ETag readers are pinned to. */
	const struct blob_meta *meta;
	size_t nmeta;
};

/* Fills up to len bytes; returns the count, 0 at EOF, -1 on error. */
typedef long (*blob_read_fn)(void *ctx, char *buf, size_t len);

struct blob_upload_info {
	uint64_t size;
	unsigned char sha256[32];
	char sha256_hex[65];
	char etag[128];
};

/*
 * Create-only upload (If-None-Match: * always; no option removes it).
 * Streams from read_fn: one Put Blob when the body fits in single_put_max,
 * else Put Block (Content-MD5 on each; block ids unique to this attempt and
 * all of one length; at most blocks_in_flight in flight) and then Put Block
 * List, create-only.  Tags and content type go on the creating call, with
 * x-ms-meta-size and x-ms-meta-sha256 computed on the way.  Memory is
 * bounded by block_size * blocks_in_flight.  A refused create is BLOB_EXISTS
 * (BLOB_EXISTS_MAYBE_OURS if an earlier try of the create had an unknown
 * outcome: verify by hash); info's size and SHA-256 are set for it too
 * (the etag only on success).
 */
BINDERY_NODISCARD int blob_upload_create(struct blob_client *, const char *name,
    const struct blob_upload_opts *, blob_read_fn, void *ctx,
    struct blob_upload_info *info, struct blob_result *res);

/* Block ids for Put Block must be base64 and, per blob, of one length. */
BINDERY_NODISCARD int blob_put_block(struct blob_client *, const char *name,
    const char *block_id_b64, const void *data, size_t len,
    struct blob_result *res);

/*
 * Put Block List of staged blocks ids[n], in that order, create-only
 * (If-None-Match: *), with opts' content type and tags and info's size and
 * sha256_hex (the whole body's: the caller hashed the bytes as they were
 * staged, across requests) as x-ms-meta-size / x-ms-meta-sha256; info's
 * etag receives the new blob's ETag.  A name that holds a blob is
 * BLOB_EXISTS (or BLOB_EXISTS_MAYBE_OURS after an ambiguous try): verify
 * by its metadata.  opts->before_commit is called first, as for
 * blob_upload_create.
 */
BINDERY_NODISCARD int blob_commit_blocks(struct blob_client *, const char *name,
    const char *const *ids, size_t n, const struct blob_upload_opts *opts,
    struct blob_upload_info *info, struct blob_result *res);

/*
 * Put Block From URL: stage bytes [offset, offset + len) of the committed
 * blob source (same container) as block block_id_b64 of name, the bytes
 * copied by the service itself, never passing through this process.  The
 * service reads the source with a short read-only SAS (the key), the
 * configured SAS, or (Entra) our bearer token in
 * x-ms-copy-source-authorization.  len is 1 .. BLOB_FROM_URL_MAX (the
 * service's limit for one block).
 */
#define BLOB_FROM_URL_MAX ((uint64_t)4000 << 20)
BINDERY_NODISCARD int blob_put_block_from_url(struct blob_client *, const char *name,
    const char *block_id_b64, const char *source, uint64_t offset, uint64_t len,
    struct blob_result *res);
/* One block of blob_put_blocks_from_url.  source_md5, when not NULL, is
 * the MD5 of the source range (16 bytes; x-ms-source-content-md5): storage
 * refuses the block unless the bytes it copied hash to it, and Azurite
 * then skips the CRC64 it otherwise computes over every copied byte in
 * JavaScript (a 16 MiB copy took a third of the time with it). */
struct blob_from_url {
	const char *id_b64;
	const char *source;
	uint64_t offset, len;
	const unsigned char *source_md5;
};
/* The same for items[n], at most blocks_in_flight at once: the first
 * failure is the result (nothing more is started; what runs finishes). */
BINDERY_NODISCARD int blob_put_blocks_from_url(struct blob_client *, const char *name,
    const struct blob_from_url *items, size_t n, struct blob_result *res);
/* A block blob_stage_stream staged, reported once storage accepted it. */
struct blob_staged {
	const char *id_b64;		/* the block's id, as Put Block List wants it */
	size_t len;
	unsigned char md5[16];		/* its Content-MD5 */
	const struct sha256_ctx *sha;	/* the running SHA-256 through this block */
};

struct blob_stage_opts {
	unsigned char id_prefix[12];	/* ids: these 12 bytes, then the 4-byte index */
	uint32_t first_index;		/* the first block's index */
	size_t block_size;		/* 0, or less than the client's block_size */
	size_t lead_size;		/* 0, or less than the block size: the first block's */
	struct sha256_ctx sha;		/* the running SHA-256 before the first byte */
	gnutls_hash_hd_t extra;		/* NULL, or fed every byte staged (a checksum) */
	/*
	 * Called in the caller's thread for each block storage accepted, in
	 * index order, never for a block after one that failed: nonzero
	 * stops the stream (BLOB_ABORTED).  (tus records them here.)
	 */
	int (*accepted)(void *ctx, const struct blob_staged *);
	void *ctx;
};

/*
 * Stage a body as uncommitted blocks of a blob and commit nothing: the
 * pipeline of blob_upload_create (read one block while the ones before it
 * are hashed on a thread of their own and on the wire, at most
 * blocks_in_flight at a time, Content-MD5 on each), with the caller's ids
 * and running SHA-256, for a body that is one part of a longer upload.
 * Blocks are of the client's block_size, or opts' when smaller, but the
 * first when opts->lead_size is smaller still (storage gets its first
 * block sooner), and the last, which may be short.  When read_fn
 * fails, the blocks already read are still sent and reported, then its
 * failure is returned as BLOB_ABORTED; so is a nonzero from accepted.
 * More than 50000 blocks in all is BLOB_BAD_INPUT.
 */
BINDERY_NODISCARD int blob_stage_stream(struct blob_client *, const char *name,
    const struct blob_stage_opts *, blob_read_fn, void *ctx, struct blob_result *res);

struct blob_block_counts {
	unsigned committed, uncommitted;
};
/* Get Block List (blocklisttype=all): how many blocks are committed and
 * how many staged; *out is reset first. */
BINDERY_NODISCARD int blob_get_block_list(struct blob_client *, const char *name,
    struct blob_block_counts *out, struct blob_result *res);

/* Purge staged uncommitted blocks on a name that holds NO committed blob:
 * commit an empty block list create-only tagged state=pending (which drops
 * the staged blocks), then delete guarded by "state" = 'pending'.  Returns
 * BLOB_EXISTS, touching nothing, if a committed blob is there. */
BINDERY_NODISCARD int blob_purge_uncommitted(struct blob_client *,
    const char *name, struct blob_result *res);

struct blob_props {
	uint64_t size;
	char content_type[256];
	char etag[128];
	char content_md5[32];	/* base64, "" if none */
	char meta_sha256[65];	/* "" if absent */
	char meta_installation[40]; /* x-ms-meta-bindery_installation, "" if absent:
				 * which bindery installation committed it */
	int64_t meta_size;	/* -1 if absent */
	char last_modified[64];
	unsigned tag_count;
	unsigned meta_count;	/* metadata entries, whatever their names */
	/* Every entry (the first BLOB_LIST_META), packed: blob_props_meta reads them. */
	char meta_text[BLOB_META_TEXT_MAX];
	size_t meta_at[BLOB_LIST_META][2];
	size_t meta_n;
	char blob_type[16];	/* "BlockBlob", "PageBlob", "AppendBlob" */
	int copied;		/* the blob is (or is becoming) a copy: x-ms-copy-* */
	int content_extras;	/* Content-Encoding, -Language, -Disposition or
				 * Cache-Control is set */
};
/* The metadata entries of p, as pointers into p, into out[max]; returns
 * how many. */
size_t blob_props_meta(const struct blob_props *p, struct blob_meta *out, size_t max);
/* Get Blob Properties (a HEAD) into *out, which is reset first. */
BINDERY_NODISCARD int blob_get_properties(struct blob_client *, const char *name,
    struct blob_props *out, struct blob_result *res);

typedef int (*blob_headers_fn)(void *ctx, const struct blob_props *,
    uint64_t total_size);
typedef int (*blob_data_fn)(void *ctx, const char *data, size_t len);
/* Streamed download of [range_start, range_start + range_len) (range_len 0:
 * to the end), only while the blob's ETag is if_match (NULL or "": any;
 * another ETag is BLOB_CONDITION_NOT_MET and no byte is delivered).
 * on_headers (may be NULL) is called once before the first body byte;
 * on_data for each chunk.  A nonzero return from either aborts with
 * BLOB_ABORTED.  Retried only before the first byte reached on_data. */
BINDERY_NODISCARD int blob_get(struct blob_client *, const char *name,
    uint64_t range_start, uint64_t range_len, const char *if_match,
    blob_headers_fn on_headers, blob_data_fn on_data, void *ctx,
    struct blob_result *res);

/* Set Blob Metadata: the blob's metadata becomes exactly meta[0..n), only
 * while its ETag is if_match (required; another is BLOB_CONDITION_NOT_MET).
 * The ETag changes: new_etag (128 bytes) receives the new one. */
BINDERY_NODISCARD int blob_set_metadata(struct blob_client *, const char *name,
    const struct blob_meta *meta, size_t n, const char *if_match,
    char *new_etag, struct blob_result *res);
/* Set Blob Properties: Content-Type becomes content_type and the stored
 * Content-MD5 content_md5_b64 (NULL: none); every other content header
 * (encoding, language, disposition, cache control) is cleared.  Only while
 * the ETag is if_match (required); new_etag (128 bytes) receives the new. */
BINDERY_NODISCARD int blob_set_content_headers(struct blob_client *,
    const char *name, const char *content_type, const char *content_md5_b64,
    const char *if_match, char *new_etag, struct blob_result *res);
/* Snapshots of exactly the blob name (List Blobs, include=snapshots):
 * their number into *count. */
BINDERY_NODISCARD int blob_count_snapshots(struct blob_client *,
    const char *name, unsigned *count, struct blob_result *res);

/* Delete the blob and its snapshots.  if_tags (e.g. "\"state\" = 'pending'")
 * and if_match (an ETag) are optional; unmet -> BLOB_CONDITION_NOT_MET. */
BINDERY_NODISCARD int blob_delete(struct blob_client *, const char *name,
    const char *if_tags, const char *if_match, struct blob_result *res);
/* Replace the blob's tags (Set Blob Tags), optionally guarded by if_tags. */
BINDERY_NODISCARD int blob_set_tags(struct blob_client *, const char *name,
    const struct blob_tag *, size_t n, const char *if_tags,
    struct blob_result *res);
/* Get Blob Tags into *out (reset first); a malformed answer is BLOB_FAILED. */
BINDERY_NODISCARD int blob_get_tags(struct blob_client *, const char *name,
    struct blob_tag_set *out, struct blob_result *res);
/* Create the configured container; one that already exists is BLOB_OK. */
BINDERY_NODISCARD int blob_container_create(struct blob_client *,
    struct blob_result *res);

enum {
	BLOB_LIST_TAGS = 1,
	BLOB_LIST_METADATA = 2,
	BLOB_LIST_UNCOMMITTED = 4,
	BLOB_LIST_SNAPSHOTS = 8,
};
struct blob_list_item {		/* all borrowed for the callback's duration */
	const char *name;
	uint64_t size;
	const char *etag;
	const char *meta_sha256;	/* "" unless BLOB_LIST_METADATA and present */
	const char *snapshot;		/* the snapshot's time; "" for the blob itself */
	const char *last_modified;	/* an HTTP-date (RFC 1123); "" if the listing had none */
	const struct blob_tag *tags;	/* only with BLOB_LIST_TAGS */
	size_t ntags;
	const struct blob_meta *meta;	/* only with BLOB_LIST_METADATA: every entry,
					 * in the listing's order (at most BLOB_LIST_META) */
	size_t nmeta;
};
typedef int (*blob_list_fn)(void *ctx, const struct blob_list_item *);
/* List Blobs under prefix (NULL: all), following NextMarker to the end;
 * on_item returning nonzero stops with BLOB_ABORTED. */
BINDERY_NODISCARD int blob_list(struct blob_client *, const char *prefix,
    unsigned include, blob_list_fn on_item, void *ctx, struct blob_result *res);

/* Find Blobs by Tags in the container (where: e.g. "\"state\" = 'pending'"),
 * following NextMarker; on_name gets each name and may stop the walk with
 * nonzero (BLOB_ABORTED).  The index behind it is eventually consistent: a
 * name found is a candidate to look at, and one not found may still be
 * there. */
BINDERY_NODISCARD int blob_find_by_tags(struct blob_client *, const char *where,
    int (*on_name)(void *, const char *), void *ctx, struct blob_result *res);

/* Blob Batch delete of up to 256 names, each guarded by if_tags when
 * given; each[i] receives the result for names[i].  res covers the batch
 * request itself. */
BINDERY_NODISCARD int blob_batch_delete(struct blob_client *,
    const char *const *names, size_t n, const char *if_tags,
    struct blob_result *each, struct blob_result *res);

struct blob_service_props {
	int delete_retention_enabled;
	int delete_retention_days;
	int versioning_known;	/* the data plane cannot tell: always 0 */
	int versioning_enabled;
};
/* Get Blob Service Properties: the delete retention policy into *out
 * (reset first). */
BINDERY_NODISCARD int blob_service_properties_get(struct blob_client *,
    struct blob_service_props *, struct blob_result *res);

/*
 * Set Blob Service Properties with one CORS rule (and nothing else, so the
 * other properties stay): the origins may PUT and OPTIONS with the headers
 * a direct upload sends (x-ms-blob-type, x-ms-tags, if-none-match,
 * content-type) and read the answer's ETag.  Replaces the account's CORS
 * rules.  An origin with a character CORS cannot list is BLOB_BAD_INPUT.
 */
BINDERY_NODISCARD int blob_service_cors_set(struct blob_client *,
    const char *const *origins, size_t n, struct blob_result *res);

/* Undelete Blob; an endpoint without it (Azurite: 501) gives
 * BLOB_NOT_SUPPORTED. */
BINDERY_NODISCARD int blob_undelete(struct blob_client *, const char *name,
    struct blob_result *res);

/* Append the full URL of one blob with a service SAS (sr=b) valid for
 * lifetime_s seconds (starting five minutes back for clock skew), perms in
 * the documented order (e.g. "r").  content_disposition and content_type,
 * when set, are the rscd and rsct the service answers a GET with instead of
 * the blob's own headers (both are signed).  Needs the account key, or
 * Entra: then it is a user delegation SAS (skoid, sktid ...) signed with a
 * delegation key that outlives it, fetched or renewed first when the one
 * held would not (BLOB_CREDENTIAL, BLOB_AUTH_FAILED ... when that fails). */
BINDERY_NODISCARD int blob_sas_url(struct blob_client *, const char *name,
    const char *perms, int64_t lifetime_s, const char *content_disposition,
    const char *content_type, struct buf *out, struct blob_result *res);
/* The same with the clock read by the caller: the SAS expires at exactly
 * now + lifetime_s (Unix seconds), which the caller reports and leases by.
 * A direct upload's SAS is perms "c": create that one blob, nothing else. */
BINDERY_NODISCARD int blob_sas_url_at(struct blob_client *, const char *name,
    const char *perms, int64_t now, int64_t lifetime_s,
    const char *content_disposition, const char *content_type,
    struct buf *out, struct blob_result *res);

enum blob_auth_mode { BLOB_AUTH_KEY, BLOB_AUTH_SAS, BLOB_AUTH_ENTRA };

/* What the client authenticates with, for check-account and status. */
struct blob_auth_info {
	enum blob_auth_mode mode;
	const char *credential;		/* Entra: entra_kind_name(), else "" */
	const char *token_cache;	/* Entra: the cache directory, NULL: memory */
	int64_t token_expires;		/* Entra: the token held, 0: none yet */
	int64_t delegation_key_expires;	/* Entra: the delegation key held, 0: none */
	unsigned long tokens_fetched, tokens_from_cache, token_failures;
	unsigned long delegation_keys_fetched, delegation_key_failures;
};
void blob_auth_info(const struct blob_client *, struct blob_auth_info *out);
/* "key", "sas" or "entra", as [storage] auth names them. */
const char *blob_auth_mode_name(enum blob_auth_mode);

/* Entra only: make sure a bearer token and a user delegation key valid for
 * at least valid_for_s more seconds are held (fetching what is missing);
 * BLOB_BAD_INPUT with a key or SAS. */
BINDERY_NODISCARD int blob_entra_ready(struct blob_client *, int64_t valid_for_s,
    struct blob_result *res);

#endif
