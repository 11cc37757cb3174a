/*
 * libFuzzer harness for the blob client's answer parsers (blob_xml.c and
 * the parse steps of blob.c that blob_internal.h exposes).
 *
 * The first byte picks the parser (modulo 7); the second is a parameter
 * (for listings, the item after which the callback stops; for a batch, the
 * number of sub-requests); the rest is the answer body.  Beyond "no crash,
 * no UB, no leak", each result is checked against the promise its header
 * makes: fields NUL-terminated inside their arrays, counts within bounds,
 * STOPPED exactly when the callback asked.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "storage/blob_internal.h"

#define BATCH_N 256

static void
check(int cond)
{
	if (!cond)
		abort();
}

static void
check_cstr(const char *s, size_t size)
{
	check(memchr(s, '\0', size) != NULL);
}

struct list_run {
	unsigned items;
	unsigned stop_after;	/* 0: never */
	size_t len;
};

static int
on_item(void *ctx, const struct blob_list_item *it)
{
	struct list_run *r = ctx;
	size_t i;

	check(it->name != NULL && strlen(it->name) <= r->len);
	check(strlen(it->etag) < 128 && strlen(it->meta_sha256) < 65);
	check(it->ntags <= BLOB_MAX_TAGS);
	for (i = 0; i < it->ntags; i++)
		check(strlen(it->tags[i].key) < 129 && strlen(it->tags[i].value) < 257);
	return ++r->items == r->stop_after;
}

static int
on_name(void *ctx, const char *name)
{
	struct list_run *r = ctx;

	check(name != NULL && strlen(name) <= r->len);
	return ++r->items == r->stop_after;
}

static void
fuzz_list(const char *xml, size_t len, unsigned param, int names)
{
	struct list_run r = { 0, param % 8, len };
	struct buf marker = BUF_INIT(4096);
	enum blob_xml_err e;

	e = blob_parse_list_answer(xml, len, names ? NULL : on_item, names ? on_name : NULL,
	    &r, &marker);
	check(e == BLOB_XML_OK || e == BLOB_XML_MALFORMED || e == BLOB_XML_STOPPED);
	check((e == BLOB_XML_STOPPED) == (r.stop_after != 0 && r.items == r.stop_after));
	check(marker.len <= len && marker.len <= 4096);
	buf_free(&marker);
}

static void
fuzz_batch(const uint8_t *data, size_t size, unsigned param)
{
	struct blob_result *each = calloc(BATCH_N, sizeof *each);
	char *body = malloc(size + 1);
	size_t i, n = 1 + param;

	check(each != NULL && body != NULL);
	memcpy(body, data, size);
	body[size] = '\0';
	for (i = 0; i < BATCH_N; i++)
		each[i].status = BLOB_ABORTED;	/* "untouched" marker */
	blob_parse_batch_answer(body, size, each, n);
	for (i = 0; i < BATCH_N; i++) {
		check_cstr(each[i].code, sizeof each[i].code);
		check_cstr(each[i].message, sizeof each[i].message);
		if (i >= n)
			check(each[i].status == BLOB_ABORTED);
		else if (each[i].status == BLOB_OK)
			check(each[i].http_status >= 200 && each[i].http_status < 300);
	}
	free(body);
	free(each);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *xml;
	size_t len, i;
	unsigned which, param;
	char code[64], message[256];
	struct blob_tag_set tags;
	struct blob_block_counts blocks;
	struct blob_service_props props;
	struct blob_delegation_key key;
	enum blob_xml_err e;

	if (size < 2)
		return 0;
	which = data[0] % 8;
	param = data[1];
	xml = (const char *)data + 2;
	len = size - 2;
	switch (which) {
	case 0:
		memcpy(code, "untouched", 10);
		memcpy(message, "untouched", 10);
		blob_xml_error(xml, len, code, sizeof code, message, sizeof message);
		check_cstr(code, sizeof code);
		check_cstr(message, sizeof message);
		check(strchr(message, '\n') == NULL);
		break;
	case 1:
		e = blob_parse_tags_answer(xml, len, &tags);
		check(e == BLOB_XML_OK || e == BLOB_XML_MALFORMED);
		check(tags.n <= BLOB_MAX_TAGS);
		for (i = 0; i < BLOB_MAX_TAGS; i++) {
			check_cstr(tags.key[i], sizeof tags.key[i]);
			check_cstr(tags.value[i], sizeof tags.value[i]);
		}
		break;
	case 2:
		e = blob_parse_block_list_answer(xml, len, &blocks);
		check(e == BLOB_XML_OK || e == BLOB_XML_MALFORMED);
		/* No bound from len: internal entities may repeat elements. */
		(void)blocks;
		break;
	case 3:
		e = blob_parse_service_props_answer(xml, len, &props);
		check(e == BLOB_XML_OK || e == BLOB_XML_MALFORMED);
		check(props.delete_retention_days >= 0);
		check(props.delete_retention_enabled == 0 || props.delete_retention_enabled == 1);
		break;
	case 4:
	case 5:
		fuzz_list(xml, len, param, which == 5);
		break;
	case 6:
		fuzz_batch(data + 2, len, param);
		break;
	case 7:
		/* Its fields go into a SAS as they are: terminated, no newline,
		 * and a key of at most 64 bytes, or nothing kept. */
		e = blob_parse_delegation_key_answer(xml, len, &key);
		check(e == BLOB_XML_OK || e == BLOB_XML_MALFORMED);
		check(key.value_len <= sizeof key.value);
		check(e == BLOB_XML_OK || (key.value_len == 0 && key.oid[0] == '\0'));
		check_cstr(key.oid, sizeof key.oid);
		check_cstr(key.expiry, sizeof key.expiry);
		check(strchr(key.oid, '\n') == NULL && strchr(key.version, '\n') == NULL);
		check(e != BLOB_XML_OK || key.expires > 0);
		break;
	}
	return 0;
}
