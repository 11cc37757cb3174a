/* form_reader.c - see form_reader.h. */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "parse/form_reader.h"

/* One read of the input; the staged file bytes stay below two of these. */
#define FORM_CHUNK 65536

struct form_reader {
	struct multipart_parser *mp;
	form_input_fn input;
	void *input_ctx;
	uint64_t max_file;
	uint64_t file_bytes;
	struct buf name;		/* the "name" field, if it came first */
	struct buf token;		/* the "token" field, if it came first (a secret) */
	struct buf filename;
	struct buf content_type;
	struct buf staged;		/* file bytes parsed but not yet handed out */
	size_t staged_off;
	int in_name, in_token, in_file, file_seen, file_done, input_done;
	enum form_fault fault;
};

static int
fail(struct form_reader *f, enum form_fault why)
{
	f->fault = why;
	return 1;
}

/* A token is a secret: its bytes do not outlive their use in memory. */
static void
form_token_wipe(struct form_reader *f)
{
	if (f->token.ptr)
		explicit_bzero(f->token.ptr, f->token.len);
	buf_reset(&f->token);
}

static int
on_part_begin(void *ctx, const struct multipart_part *p)
{
	struct form_reader *f = ctx;

	f->in_name = f->in_token = f->in_file = 0;
	if (span_eq_cstr(p->name, "file")) {
		if (f->file_seen)
			return fail(f, FORM_SECOND_FILE);
		f->file_seen = f->in_file = 1;
		buf_reset(&f->filename);
		buf_reset(&f->content_type);
		if ((p->filename.ptr && buf_append_span(&f->filename, p->filename) != BUF_OK) ||
		    (p->content_type.ptr && buf_append_span(&f->content_type, p->content_type) != BUF_OK))
			return fail(f, FORM_MALFORMED);
	} else if (span_eq_cstr(p->name, "name")) {
		if (f->file_seen)
			return fail(f, FORM_FIELD_ORDER);
		buf_reset(&f->name);
		f->in_name = 1;
	} else if (span_eq_cstr(p->name, "token") && !f->file_seen) {
		/* After the file it is ignored like any other field: the caller
		 * had to be known before the file's first byte (form_reader.h). */
		form_token_wipe(f);
		f->in_token = 1;
	}
	return 0;	/* other fields are ignored */
}

static int
on_part_data(void *ctx, const char *data, size_t len)
{
	struct form_reader *f = ctx;

	if (f->in_name) {
		if (buf_append(&f->name, data, len) != BUF_OK)
			return fail(f, FORM_MALFORMED);
	} else if (f->in_token) {
		if (buf_append(&f->token, data, len) != BUF_OK)
			return fail(f, FORM_MALFORMED);
	} else if (f->in_file) {
		f->file_bytes += len;
		if (f->file_bytes > f->max_file)
			return fail(f, FORM_TOO_LARGE);
		if (buf_append(&f->staged, data, len) != BUF_OK)
			return fail(f, FORM_MALFORMED);
	}
	return 0;
}

static int
on_part_end(void *ctx)
{
	struct form_reader *f = ctx;

	if (f->in_file)
		f->file_done = 1;
	f->in_name = f->in_token = f->in_file = 0;
	return 0;
}

static const struct multipart_callbacks form_callbacks = {
	on_part_begin, on_part_data, on_part_end,
};

enum multipart_err
form_reader_new(struct span boundary, const struct form_limits *limits, form_input_fn input,
		void *input_ctx, struct form_reader **out)
{
	struct form_reader *f;
	enum multipart_err e;

	*out = NULL;
	f = alloc_calloc(1, sizeof *f);
	if (f == NULL)
		return MP_NOMEM;
	f->input = input;
	f->input_ctx = input_ctx;
	f->max_file = limits->max_file;
	f->name = BUF_INIT(limits->max_field);
	f->token = BUF_INIT(limits->max_field);
	f->filename = BUF_INIT(limits->max_field);
	f->content_type = BUF_INIT(limits->max_content_type);
	f->staged = BUF_INIT(2 * FORM_CHUNK);
	e = multipart_parser_new(boundary, NULL, &form_callbacks, f, &f->mp);
	if (e != MP_OK) {
		form_reader_free(f);
		return e;
	}
	*out = f;
	return MP_OK;
}

void
form_reader_free(struct form_reader *f)
{
	if (f == NULL)
		return;
	multipart_parser_free(f->mp);
	form_token_wipe(f);
	buf_free(&f->token);
	buf_free(&f->name);
	buf_free(&f->filename);
	buf_free(&f->content_type);
	buf_free(&f->staged);
	alloc_free(f);
}

/* A parser error the callbacks did not explain is a malformed form. */
static int
parser_failed(struct form_reader *f)
{
	if (f->fault == FORM_FINE)
		f->fault = FORM_MALFORMED;
	return -1;
}

/* Read one chunk of input and feed it to the parser.  0 ok, -1 fault. */
static int
pump(struct form_reader *f)
{
	char chunk[FORM_CHUNK];
	long n;

	if (f->input_done)
		return 0;
	n = f->input(f->input_ctx, chunk, sizeof chunk);
	if (n < 0) {
		f->fault = FORM_INPUT_FAILED;
		return -1;
	}
	if (n == 0) {
		f->input_done = 1;
		return multipart_finish(f->mp) == MP_OK ? 0 : parser_failed(f);
	}
	return multipart_feed(f->mp, chunk, (size_t)n) == MP_OK ? 0 : parser_failed(f);
}

enum form_fault
form_reader_start(struct form_reader *f)
{
	while (!f->file_seen && !f->input_done)
		if (pump(f) != 0)
			break;
	if (f->fault == FORM_FINE && !f->file_seen)
		f->fault = FORM_NO_FILE;
	return f->fault;
}

struct span
form_reader_name(const struct form_reader *f)
{
	return buf_span(&f->name);
}

struct span
form_reader_token(const struct form_reader *f)
{
	return buf_span(&f->token);
}

void
form_reader_forget_token(struct form_reader *f)
{
	form_token_wipe(f);
}

struct span
form_reader_filename(const struct form_reader *f)
{
	return buf_span(&f->filename);
}

struct span
form_reader_content_type(const struct form_reader *f)
{
	return buf_span(&f->content_type);
}

long
form_reader_read(void *ctx, char *buf, size_t len)
{
	struct form_reader *f = ctx;

	for (;;) {
		size_t avail = f->staged.len - f->staged_off;

		if (avail > 0) {
			size_t n = avail < len ? avail : len;

			memcpy(buf, f->staged.ptr + f->staged_off, n);
			f->staged_off += n;
			if (f->staged_off == f->staged.len) {
				buf_reset(&f->staged);
				f->staged_off = 0;
			}
			return (long)n;
		}
		/* The file is complete only when the whole form parsed cleanly:
		 * a late "name" field or a truncated body must fail the upload. */
		if (f->input_done)
			return f->file_done ? 0 : -1;
		if (pump(f) != 0)
			return -1;
	}
}

enum form_fault
form_reader_fault(const struct form_reader *f)
{
	return f->fault;
}
