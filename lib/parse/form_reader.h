/*
 * form_reader.h - a multipart/form-data upload as a pull reader.
 *
 * The multipart parser is pushed bytes; an upload pulls them.  A form
 * reader sits between the two: it reads the request body from a read
 * callback, feeds the parser, keeps the small fields that come before the
 * file (doc/design.md: `name` must come before `file`; so must `token`, a
 * browser form's credential, so that the caller is known before any byte
 * of the file is stored), and hands out the file
 * part's bytes through form_reader_read(), whose signature is that of a
 * storage read callback (blob_read_fn).  The file ends cleanly (0) only
 * when the whole form parsed: a late `name`, a second file or a cut body
 * fails the upload (-1) instead of committing a document from half a form.
 * Memory is bounded by the limits, whatever the file's size.  No I/O of
 * its own beyond the callback.
 */
#ifndef BINDERY_FORM_READER_H
#define BINDERY_FORM_READER_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/compat.h"
#include "parse/multipart.h"

/* Fills up to len bytes; returns the count, 0 at end of input, -1 on error. */
typedef long (*form_input_fn)(void *ctx, char *buf, size_t len);

/* Why a form stopped; FORM_FINE while nothing went wrong. */
enum form_fault {
	FORM_FINE = 0,
	FORM_TOO_LARGE,		/* the file part exceeds max_file */
	FORM_INPUT_FAILED,	/* the input callback failed (e.g. a short body) */
	FORM_MALFORMED,		/* bad framing, a cut body, or a field over its limit */
	FORM_FIELD_ORDER,	/* a name field after the file */
	FORM_SECOND_FILE,	/* more than one file part */
	FORM_NO_FILE,		/* the form ended without a file part */
};

struct form_limits {
	uint64_t max_file;		/* bytes of the file part */
	size_t max_field;		/* bytes of the name field and of the filename */
	size_t max_content_type;	/* bytes of the file part's Content-Type */
};

struct form_reader;

/*
 * A reader of the form with this boundary from input (borrowed; it must
 * outlive the reader).  MP_OK, MP_BAD_CONTENT_TYPE for a bad boundary, or
 * MP_NOMEM; *out is NULL on failure.
 */
BINDERY_NODISCARD enum multipart_err form_reader_new(struct span boundary, const struct form_limits *limits,
						     form_input_fn input, void *input_ctx,
						     struct form_reader **out);
/* NULL is a no-op. */
void form_reader_free(struct form_reader *f);

/*
 * Read until the file part has begun, so that its name and type are known
 * before any byte is uploaded.  FORM_FINE, or why not.
 */
BINDERY_NODISCARD enum form_fault form_reader_start(struct form_reader *f);

/* After a successful start: the name field ("" when absent or after the
 * file), the file part's filename and Content-Type (empty when absent).
 * The spans stay valid until form_reader_free. */
struct span form_reader_name(const struct form_reader *f);
struct span form_reader_filename(const struct form_reader *f);
/* The "token" field when it came before the file, else "" (one after the
 * file is ignored, as unknown fields are).  A secret: compare it, never
 * log it, and forget it once it has been compared. */
struct span form_reader_token(const struct form_reader *f);
/* Wipe the token's bytes (form_reader_free does too). */
void form_reader_forget_token(struct form_reader *f);
struct span form_reader_content_type(const struct form_reader *f);

/*
 * The file's next bytes: ctx is the form reader.  Returns the count, 0 once
 * the file ended and the whole form parsed cleanly, -1 on any fault.
 */
long form_reader_read(void *ctx, char *buf, size_t len);

/* Why the last call failed (FORM_FINE if none did). */
enum form_fault form_reader_fault(const struct form_reader *f);

#endif
