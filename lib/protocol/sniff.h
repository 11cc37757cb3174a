/*
 * sniff.h - a document's media type read from its first bytes by libmagic
 * (doc/design.md, "Admission": types by content).
 *
 * libmagic is opened the first time something here is called, once per
 * process, and never before: an installation that neither restricts types
 * nor records sniffed ones (config_upload_sniffs() false) never reads its
 * 8 MB database.  The database is the one libmagic was built with (from
 * configure, so neither $MAGIC nor a ~/.magic.mgc under the responder's
 * HOME can change what a type is).  Calls from several threads take turns:
 * a libmagic handle is not thread-safe.
 *
 * Flags: MAGIC_MIME_TYPE | MAGIC_ERROR, and
 *  - MAGIC_NO_CHECK_COMPRESS: libmagic never decompresses a body to look
 *    inside (nor starts a decompressor); a gzip, xz or zip file is still
 *    named as one by its signature;
 *  - MAGIC_NO_CHECK_ELF: the ELF test reads section and program headers
 *    through a file descriptor, past the bytes it was handed; with a buffer
 *    it has none, so this says so rather than relying on it.  An ELF file is
 *    still named (application/x-executable, -sharedlib, -pie-executable).
 * The other built-in tests stay: each reads only the buffer and is linear
 * in it (about 2 ms for SNIFF_BYTES of text here), and without them types
 * an allowed_types list names would vanish: text/plain and the charset
 * tests (TEXT, ENCODING), application/json, text/csv, the legacy Office
 * formats (CDF), tar.
 */
#ifndef BINDERY_SNIFF_H
#define BINDERY_SNIFF_H

#include <stddef.h>

#include "base/buf.h"
#include "base/compat.h"

/*
 * The leading bytes a type is judged on: every upload path hands
 * sniff_buffer() its first SNIFF_BYTES (the whole body when it is
 * shorter), and bytes past them are never looked at, so one file gets one
 * type on every path however much a path happened to buffer.  64 KiB
 * because:
 *  - an Office Open XML file (docx, xlsx, pptx) is a zip that libmagic
 *    tells from any other zip only by the names of its first few members,
 *    each found by a search of up to 6000 (later 18000) bytes from the
 *    member before (Magdir/msooxml): a docx with a 5 KB thumbnail ahead of
 *    word/ is only application/zip in its first 4 KiB (test_sniff builds
 *    one), and members found that way reach past 12 KiB;
 *  - an ISO 9660 image is named by "CD001" at 32769;
 *  - libmagic's text and charset tests read at most 64 KiB
 *    (MAGIC_PARAM_ENCODING_MAX), so text is judged as on a whole file.
 * libmagic's own limit (MAGIC_PARAM_BYTES_MAX, 7 MiB) is far more than a
 * request should hold in memory before it stores anything.  What a prefix
 * cannot show: a JSON document longer than this is text/plain (its prefix
 * is not JSON).
 */
#define SNIFF_BYTES (64 * 1024)
/* Room for a type and its NUL: RFC 6838 4.2 names are at most 127 each. */
#define SNIFF_TYPE_MAX 256
/* What libmagic names zero bytes: an empty upload passes only a list that
 * names this type or every application type. */
#define SNIFF_TYPE_EMPTY "application/x-empty"

enum sniff_err {
	SNIFF_OK = 0,
	SNIFF_UNAVAILABLE,	/* libmagic or its database could not be loaded: this
				 * host's fault, not the upload's (logged) */
	SNIFF_UNREADABLE,	/* libmagic gave up on these bytes (a limit it keeps
				 * against crafted input): treat as a type no list
				 * names (logged) */
};

/*
 * The media type of a body whose first bytes are head (only the first
 * SNIFF_BYTES of it are read; the whole body when it is shorter), as
 * libmagic names it, lower-case and without parameters ("application/pdf",
 * "text/plain"), into type[typelen] (SNIFF_TYPE_MAX fits any).  Bytes that
 * match nothing are "application/octet-stream"; none at all are
 * SNIFF_TYPE_EMPTY.  On an error type is "".
 */
BINDERY_NODISCARD enum sniff_err sniff_buffer(struct span head, char *type, size_t typelen);

/*
 * Open libmagic and load its database now rather than at the first
 * upload, so a program that will sniff can refuse to start without it
 * (the reason is logged).  Optional; calling it again does nothing.
 */
BINDERY_NODISCARD enum sniff_err sniff_prepare(void);

#endif
