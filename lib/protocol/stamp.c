/* stamp.c - see stamp.h. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/buf.h"
#include "protocol/stamp.h"

#define M_INSTALL "bindery_installation"
#define M_DOC "bindery_document"
#define M_VERSION "bindery_version"
#define M_OWNER "bindery_owner"
#define M_NAME "bindery_name"
#define M_CTYPE "bindery_content_type"
#define M_CREATED "bindery_created"

static int
unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_' || c == '~';
}

int
stamp_pct_encode(const char *s, size_t n, char *out, size_t outlen)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (unreserved(c)) {
			if (o + 1 >= outlen)
				return -1;
			out[o++] = (char)c;
		} else {
			if (o + 3 >= outlen)
				return -1;
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	if (o >= outlen)
		return -1;
	out[o] = '\0';
	return 0;
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int
stamp_pct_decode(const char *s, char *out, size_t outlen)
{
	size_t o = 0;
	int hi, lo;

	for (; *s; s++) {
		char c = *s;

		if (c == '%') {
			if ((hi = hexval(s[1])) < 0 || (lo = hexval(s[2])) < 0)
				return -1;
			c = (char)(hi * 16 + lo);
			if (c == '\0')
				return -1;
			s += 2;
		}
		if (o + 1 >= outlen)
			return -1;
		out[o++] = c;
	}
	if (o >= outlen)
		return -1;
	out[o] = '\0';
	return 0;
}

int
stamp_of_doc(struct stamp *st, const char *install, const struct doc *d, uint64_t version)
{
	memset(st, 0, sizeof *st);
	st->size = -1;
	st->doc_id = d->id;
	st->version = version;
	if (copy_cstr(st->install, sizeof st->install, install) != 0 ||
	    copy_cstr(st->owner, sizeof st->owner, d->owner) != 0 ||
	    copy_cstr(st->name, sizeof st->name, d->name) != 0 ||
	    copy_cstr(st->content_type, sizeof st->content_type, d->content_type) != 0 ||
	    copy_cstr(st->created_at, sizeof st->created_at, d->created_at) != 0)
		return -1;
	return 0;
}

int
stamp_encode(const struct stamp *st, struct stamp_meta *out)
{
	memset(out, 0, sizeof *out);
	if (snprintf(out->doc, sizeof out->doc, "%llu", (unsigned long long)st->doc_id) < 0 ||
	    snprintf(out->version, sizeof out->version, "%llu", (unsigned long long)st->version) < 0 ||
	    stamp_pct_encode(st->owner, strlen(st->owner), out->owner, sizeof out->owner) != 0 ||
	    stamp_pct_encode(st->name, strlen(st->name), out->name, sizeof out->name) != 0 ||
	    stamp_pct_encode(st->content_type, strlen(st->content_type), out->ctype,
			     sizeof out->ctype) != 0)
		return -1;
	out->v[0] = (struct blob_meta){ M_INSTALL, st->install };
	out->v[1] = (struct blob_meta){ M_DOC, out->doc };
	out->v[2] = (struct blob_meta){ M_VERSION, out->version };
	out->v[3] = (struct blob_meta){ M_OWNER, out->owner };
	out->v[4] = (struct blob_meta){ M_NAME, out->name };
	out->v[5] = (struct blob_meta){ M_CTYPE, out->ctype };
	out->v[6] = (struct blob_meta){ M_CREATED, st->created_at };
	return 0;
}

static const char *
meta_get(const struct blob_meta *meta, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcasecmp(meta[i].name, name) == 0)
			return meta[i].value;
	return NULL;
}

/* A positive decimal without sign, leading zero or overflow. */
static int
decimal(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (s == NULL || s[0] < '1' || s[0] > '9' || strlen(s) > 19)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

static int
lower_hex(const char *s, size_t len)
{
	size_t i;

	if (s == NULL || strlen(s) != len)
		return 0;
	for (i = 0; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

int
stamp_decode(const struct blob_meta *meta, size_t n, struct stamp *out)
{
	const char *install = meta_get(meta, n, M_INSTALL);
	const char *owner = meta_get(meta, n, M_OWNER), *name = meta_get(meta, n, M_NAME);
	const char *ctype = meta_get(meta, n, M_CTYPE), *created = meta_get(meta, n, M_CREATED);
	const char *size = meta_get(meta, n, "size"), *sha = meta_get(meta, n, "sha256");
	uint64_t sz;

	memset(out, 0, sizeof *out);
	out->size = -1;
	if (!lower_hex(install, INSTALL_ID_LEN) ||
	    decimal(meta_get(meta, n, M_DOC), &out->doc_id) != 0 ||
	    decimal(meta_get(meta, n, M_VERSION), &out->version) != 0 ||
	    owner == NULL || name == NULL || ctype == NULL || created == NULL ||
	    stamp_pct_decode(owner, out->owner, sizeof out->owner) != 0 || out->owner[0] == '\0' ||
	    stamp_pct_decode(name, out->name, sizeof out->name) != 0 || out->name[0] == '\0' ||
	    stamp_pct_decode(ctype, out->content_type, sizeof out->content_type) != 0 ||
	    copy_cstr(out->created_at, sizeof out->created_at, created) != 0 || created[0] == '\0' ||
	    copy_cstr(out->install, sizeof out->install, install) != 0)
		return 0;
	if (size != NULL && strcmp(size, "0") == 0)
		out->size = 0;
	else if (decimal(size, &sz) == 0)
		out->size = (int64_t)sz;
	if (lower_hex(sha, 64) && copy_cstr(out->sha256, sizeof out->sha256, sha) != 0)
		return 0;
	return 1;
}
