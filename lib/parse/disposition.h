/*
 * disposition.h - the Content-Disposition value that makes a browser save a
 * document instead of rendering it on our origin (RFC 6266 with the RFC 8187
 * extended parameter).  Pure: a name in, header text out.
 */
#ifndef BINDERY_DISPOSITION_H
#define BINDERY_DISPOSITION_H

#include "base/buf.h"
#include "base/compat.h"

/*
 * The longest value disposition_attachment() appends for a name of n bytes:
 * the fixed text, a one-byte-per-byte ASCII fallback and three bytes per byte
 * of the percent-encoded form.
 */
#define DISPOSITION_MAX(n) (sizeof "attachment; filename=\"\"; filename*=UTF-8''" - 1 + 4 * (size_t)(n))

/*
 * Append `attachment; filename="FALLBACK"; filename*=UTF-8''ENCODED` for
 * name to out.  name is treated as hostile bytes (a document name is
 * checked UTF-8 on the way in, but the header must be safe whatever the
 * database holds):
 *  - FALLBACK keeps printable ASCII except '"', '\\' and '%' (old user agents
 *    percent-decode filename=, RFC 6266 appendix D); every other byte, and
 *    so every control, CR, LF and NUL, becomes '_', one per UTF-8 character
 *    (continuation bytes after a non-ASCII byte are dropped);
 *  - ENCODED percent-encodes (upper-case hex) every byte outside RFC 8187's
 *    attr-char (ALPHA DIGIT ! # $ & + - . ^ _ ` | ~).
 * The result is printable ASCII only.  On error out may hold a partial value.
 */
BINDERY_NODISCARD enum buf_err disposition_attachment(struct span name, struct buf *out);

/*
 * Is a document of this Content-Type active content on our origin: a type
 * a browser runs as script (every JavaScript MIME type of the WHATWG MIME
 * Sniffing standard) or renders as a document that can (HTML, XHTML, any
 * XML, SVG, XSLT)?  nosniff does not stop a <script src> of a real script
 * type, and an attachment does not either, so such documents are served
 * as application/octet-stream unless an operator allows them.  The type is
 * compared by its essence (before any ';' parameters, case-insensitive);
 * a value with a ',' anywhere, which a browser reads as a list of types
 * and takes the last of, counts as active whatever it lists.
 */
int content_type_is_active(struct span type);

#endif
