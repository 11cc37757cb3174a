/*
 * Unit tests for sniff.c against Debian's libmagic and its database: the
 * types of files built here byte by byte (an HTML page posing as a PDF, a
 * PDF, a PNG, UTF-8 text, nothing at all, cut ones), that only the first
 * SNIFF_BYTES count and why fewer would not do (an Office Open XML file, an
 * ISO 9660 image), what the flags keep naming (gzip, ELF), that libmagic's
 * database is loaded at the first call and not before, and threads taking
 * turns.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "protocol/sniff.h"
#include "tap.h"

/* Whether this process has libmagic's compiled database mapped. */
static int
database_mapped(void)
{
	FILE *fp = fopen("/proc/self/maps", "r");
	char *line = NULL;
	size_t cap = 0;
	int found = 0;

	if (fp == NULL)
		tap_bail("cannot read /proc/self/maps");
	while (!found && getline(&line, &cap, fp) > 0)
		found = strstr(line, "magic.mgc") != NULL;
	free(line);
	fclose(fp);
	return found;
}

/* The type of n bytes at p, or "(error N)". */
static const char *
type_of(const void *p, size_t n)
{
	static char type[SNIFF_TYPE_MAX];
	enum sniff_err e = sniff_buffer((struct span){ p, n }, type, sizeof type);

	if (e != SNIFF_OK)
		snprintf(type, sizeof type, "(error %d)", e);
	return type;
}

static void
is_type(const void *p, size_t n, const char *want, const char *what)
{
	const char *got = type_of(p, n);

	tap_ok(strcmp(got, want) == 0, "%s: %s (got %s)", what, want, got);
}

/* A PNG's signature, IHDR (1 x 1, 8-bit RGBA) and its CRC. */
static const unsigned char png[] = {
	0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n',
	0, 0, 0, 13, 'I', 'H', 'D', 'R', 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0,
	0x1f, 0x15, 0xc4, 0x89,
};

static void
test_types(void)
{
	static const char fake_pdf[] = "<!DOCTYPE html>\n<html><head><title>invoice.pdf</title></head>"
		"<body><script>document.location = 'https://evil.example/';</script></body></html>\n";
	static const char pdf[] = "%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\n"
		"endobj\n";
	static const char text[] = "Gr\xc3\xbc\xc3\x9f" "e aus K\xc3\xb6ln: 5 \xe2\x82\xac, "
		"\xce\xba\xce\xb1\xce\xbb\xce\xb7\xce\xbc\xce\xad\xcf\x81\xce\xb1.\n";

	is_type(fake_pdf, sizeof fake_pdf - 1, "text/html", "an HTML page named invoice.pdf");
	is_type(pdf, sizeof pdf - 1, "application/pdf", "a PDF's header and first object");
	is_type(png, sizeof png, "image/png", "a PNG's signature and IHDR");
	is_type(text, sizeof text - 1, "text/plain", "UTF-8 text");
	is_type("", 0, SNIFF_TYPE_EMPTY, "no bytes");
	is_type(NULL, 0, SNIFF_TYPE_EMPTY, "no bytes, no pointer");
}

/* Bodies cut short, as an upload path hands over a body's first bytes. */
static void
test_truncated(void)
{
	size_t n = SNIFF_BYTES + 100, i;
	char *big = malloc(n);

	if (big == NULL)
		tap_bail("out of memory");
	is_type(png, 8, "application/octet-stream", "a PNG cut after its signature: no IHDR, no PNG");
	is_type(png, 16, "image/png", "... cut after IHDR's tag: a PNG");
	is_type("%PDF", 4, "text/plain", "a PDF cut before the '-' of %PDF-: text");
	is_type("%PDF-", 5, "application/pdf", "... after it: a PDF");
	/* A 2-byte character across the boundary: what a path cutting at
	 * SNIFF_BYTES hands over ends in half of it. */
	for (i = 0; i < n; i++)
		big[i] = i % 64 == 63 ? '\n' : 'a' + (char)(i % 26);
	big[SNIFF_BYTES - 1] = (char)0xc3;
	big[SNIFF_BYTES] = (char)0xa9;
	is_type(big, n, "text/plain", "UTF-8 text with a character cut at SNIFF_BYTES");
	is_type(big, SNIFF_BYTES, "text/plain", "... the same bytes cut by the caller");
	free(big);
}

/* Bytes past SNIFF_BYTES are not read: NULs there do not make text binary. */
static void
test_only_the_head(void)
{
	size_t n = SNIFF_BYTES + 4096, i;
	char *big = malloc(n);

	if (big == NULL)
		tap_bail("out of memory");
	for (i = 0; i < SNIFF_BYTES; i++)
		big[i] = i % 64 == 63 ? '\n' : 'x';
	memset(big + SNIFF_BYTES, 0, n - SNIFF_BYTES);
	is_type(big, n, "text/plain", "text followed by NULs past SNIFF_BYTES is text");
	big[SNIFF_BYTES - 100] = '\0';
	is_type(big, n, "application/octet-stream", "... a NUL inside SNIFF_BYTES makes it binary");
	free(big);
}

/* A zip of stored members, written as their local headers only (all
 * libmagic reads); member data is filler. */
struct zip {
	unsigned char *p;
	size_t len, cap;
};

static void
zip_le(struct zip *z, uint32_t v, int bytes)
{
	int i;

	for (i = 0; i < bytes; i++)
		z->p[z->len++] = (unsigned char)(v >> (8 * i));
}

static void
zip_member(struct zip *z, const char *name, size_t size)
{
	size_t namelen = strlen(name), i;

	if (z->len + 30 + namelen + size > z->cap)
		tap_bail("zip buffer too small");
	zip_le(z, 0x04034b50, 4);	/* local file header signature */
	zip_le(z, 20, 2);		/* version needed */
	zip_le(z, 0, 2);		/* flags */
	zip_le(z, 0, 2);		/* stored */
	zip_le(z, 0, 4);		/* time, date */
	zip_le(z, 0, 4);		/* CRC-32: libmagic does not check it */
	zip_le(z, (uint32_t)size, 4);	/* compressed size */
	zip_le(z, (uint32_t)size, 4);	/* uncompressed size */
	zip_le(z, (uint32_t)namelen, 2);
	zip_le(z, 0, 2);		/* extra field */
	memcpy(z->p + z->len, name, namelen);
	z->len += namelen;
	for (i = 0; i < size; i++)
		z->p[z->len++] = (unsigned char)('a' + i % 26);
}

/*
 * Why SNIFF_BYTES is not 4 KiB: a docx whose thumbnail comes before word/
 * is told from a plain zip only past it; an ISO 9660 image only at 32769.
 */
static void
test_why_64k(void)
{
	static unsigned char zbuf[32768];
	struct zip z = { zbuf, 0, sizeof zbuf };
	unsigned char *iso = calloc(1, SNIFF_BYTES);
	static const char docx[] = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";

	if (iso == NULL)
		tap_bail("out of memory");
	zip_member(&z, "[Content_Types].xml", 1000);
	zip_member(&z, "_rels/.rels", 500);
	zip_member(&z, "docProps/thumbnail.jpeg", 5000);
	zip_member(&z, "word/document.xml", 3000);
	zip_member(&z, "word/styles.xml", 3000);
	is_type(z.p, z.len, docx, "a docx with a 5000-byte thumbnail before word/");
	is_type(z.p, 4096, "application/zip", "... its first 4 KiB are only a zip");
	memcpy(iso + 32769, "CD001", 5);
	is_type(iso, SNIFF_BYTES, "application/x-iso9660-image", "an ISO 9660 image (CD001 at 32769)");
	is_type(iso, 32768, "application/octet-stream", "... its first 32 KiB are not one");
	free(iso);
}

/* What MAGIC_NO_CHECK_COMPRESS and MAGIC_NO_CHECK_ELF leave named. */
static void
test_flags(void)
{
	/* gzip of "hello" as one stored deflate block, its CRC-32 and size. */
	static const unsigned char gz[] = {
		0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3,
		1, 5, 0, 0xfa, 0xff, 'h', 'e', 'l', 'l', 'o',
		0x86, 0xa6, 0x10, 0x36, 5, 0, 0, 0,
	};
	/* An ELF64 header, little-endian, x86-64: executable, then shared. */
	unsigned char elf[64] = { 0x7f, 'E', 'L', 'F', 2, 1, 1, 0 };

	is_type(gz, sizeof gz, "application/gzip", "gzip is named without being opened");
	elf[16] = 2;	/* ET_EXEC */
	elf[18] = 62;	/* EM_X86_64 */
	elf[20] = 1;	/* EV_CURRENT */
	is_type(elf, sizeof elf, "application/x-executable", "an ELF executable is named by its header");
	elf[16] = 3;	/* ET_DYN */
	is_type(elf, sizeof elf, "application/x-sharedlib", "... a shared object too");
}

/* Threads share the one handle, taking turns. */
struct worker {
	const void *p;
	size_t n;
	const char *want;
	int wrong;
};

static void *
work(void *arg)
{
	struct worker *w = arg;
	char type[SNIFF_TYPE_MAX];
	int i;

	for (i = 0; i < 200; i++)
		if (sniff_buffer((struct span){ w->p, w->n }, type, sizeof type) != SNIFF_OK ||
		    strcmp(type, w->want) != 0)
			w->wrong++;
	return NULL;
}

static void
test_threads(void)
{
	static const char html[] = "<html><body>hi</body></html>";
	static const char text[] = "plain words\n";
	struct worker w[4] = {
		{ png, sizeof png, "image/png", 0 },
		{ html, sizeof html - 1, "text/html", 0 },
		{ text, sizeof text - 1, "text/plain", 0 },
		{ "%PDF-1.4\n", 9, "application/pdf", 0 },
	};
	pthread_t t[4];
	int i, started = 0, wrong = 0;

	for (i = 0; i < 4; i++)
		started += pthread_create(&t[i], NULL, work, &w[i]) == 0;
	if (started != 4)
		tap_bail("pthread_create failed");
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		wrong += w[i].wrong;
	}
	tap_ok(wrong == 0, "4 threads x 200 calls: every answer right (%d wrong)", wrong);
}

int
main(void)
{
	tap_ok(!database_mapped(), "libmagic's database is not loaded before the first call");
	is_type("%PDF-1.4\n", 9, "application/pdf", "the first call");
	tap_ok(database_mapped(), "... loaded it");
	tap_ok(sniff_prepare() == SNIFF_OK, "sniff_prepare after it: already loaded");
	test_types();
	test_truncated();
	test_only_the_head();
	test_why_64k();
	test_flags();
	test_threads();
	return tap_done();
}
