/*
 * test_form_reader.c - the multipart push parser turned into a pull reader:
 * a form read from an input cut into chunks of every awkward size, the file
 * pulled back in reads of every awkward size, and each way a form must fail
 * the upload rather than end it (a late name, a second file, a cut body, a
 * file over the limit, a failing input, no file at all); a token field is
 * kept only when it comes before the file, and wiped on request.
 */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "parse/form_reader.h"
#include "tap.h"

#define BOUNDARY "XyZzY"

/* An input that hands out a string in pieces of at most step bytes. */
struct input {
	const char *data;
	size_t len, off, step;
	int fail_at_end;	/* -1 instead of 0 at the end: a short body */
};

static long
input_read(void *ctx, char *buf, size_t len)
{
	struct input *in = ctx;
	size_t n = in->len - in->off;

	if (n == 0)
		return in->fail_at_end ? -1 : 0;
	if (n > in->step)
		n = in->step;
	if (n > len)
		n = len;
	memcpy(buf, in->data + in->off, n);
	in->off += n;
	return (long)n;
}

static const struct form_limits limits = { 1 << 20, 1020, 255 };

/* Build a form: optional name field before, the file, optional extras after. */
static char *
make_form(const char *before, const char *file, size_t file_len, const char *after, int closed,
	  size_t *len)
{
	size_t cap = file_len + 4096, n = 0;
	char *s = malloc(cap);

	if (s == NULL)
		tap_bail("out of memory");
	if (before)
		n += (size_t)snprintf(s + n, cap - n, "--" BOUNDARY "\r\n%s", before);
	n += (size_t)snprintf(s + n, cap - n, "--" BOUNDARY "\r\nContent-Disposition: form-data;"
			      " name=\"file\"; filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\n");
	memcpy(s + n, file, file_len);
	n += file_len;
	n += (size_t)snprintf(s + n, cap - n, "\r\n");
	if (after)
		n += (size_t)snprintf(s + n, cap - n, "--" BOUNDARY "\r\n%s", after);
	if (closed)
		n += (size_t)snprintf(s + n, cap - n, "--" BOUNDARY "--\r\n");
	*len = n;
	return s;
}

#define NAME_FIELD "Content-Disposition: form-data; name=\"name\"\r\n\r\nreport.pdf\r\n"
#define TOKEN_FIELD "Content-Disposition: form-data; name=\"token\"\r\n\r\ns3cret-token\r\n"

/* Pull the whole file in reads of rstep; returns the last result (0 or -1). */
static long
drain(struct form_reader *f, char *out, size_t cap, size_t rstep, size_t *got)
{
	long n;

	*got = 0;
	while ((n = form_reader_read(f, out + *got, rstep < cap - *got ? rstep : cap - *got)) > 0)
		*got += (size_t)n;
	return n;
}

static void
test_round_trip(void)
{
	static const size_t steps[] = { 1, 2, 3, 7, 64, 4096, 65536, 1 << 20 };
	static const size_t rsteps[] = { 1, 5, 1000, 65536 };
	size_t file_len = 300000, len, got, i, j;
	char *file = malloc(file_len), *out = malloc(file_len + 1), *form;
	int bad = 0, runs = 0;

	if (file == NULL || out == NULL)
		tap_bail("out of memory");
	for (i = 0; i < file_len; i++)	/* bytes that look like delimiters now and then */
		file[i] = i % 997 == 0 ? '-' : i % 991 == 0 ? '\r' : (char)('a' + i % 26);
	form = make_form(NAME_FIELD, file, file_len, NULL, 1, &len);
	for (i = 0; i < ARRAY_LEN(steps); i++)
		for (j = 0; j < ARRAY_LEN(rsteps); j++) {
			struct input in = { form, len, 0, steps[i], 0 };
			struct form_reader *f = NULL;
			long last;

			runs++;
			if (form_reader_new(span_from_cstr(BOUNDARY), &limits, input_read, &in, &f) != MP_OK ||
			    form_reader_start(f) != FORM_FINE) {
				bad++;
				form_reader_free(f);
				continue;
			}
			if (!span_eq_cstr(form_reader_name(f), "report.pdf") ||
			    !span_eq_cstr(form_reader_filename(f), "a.txt") ||
			    !span_eq_cstr(form_reader_content_type(f), "text/plain"))
				bad++;
			last = drain(f, out, file_len + 1, rsteps[j], &got);
			if (last != 0 || got != file_len || memcmp(out, file, file_len) != 0 ||
			    form_reader_fault(f) != FORM_FINE)
				bad++;
			form_reader_free(f);
		}
	tap_ok(bad == 0, "a 300000-byte file comes back whole over %d input/read chunkings (%d bad)",
	       runs, bad);
	free(form);
	free(file);
	free(out);
}

/* Start and drain one form; *start_fault and the final fault come back. */
static long
run(const char *form, size_t len, size_t step, int fail_at_end, const struct form_limits *lim,
    enum form_fault *start_fault, enum form_fault *fault, struct form_reader **keep)
{
	struct input in = { form, len, 0, step, fail_at_end };
	struct form_reader *f = NULL;
	static char out[1 << 16];
	size_t got;
	long last = -2;

	if (form_reader_new(span_from_cstr(BOUNDARY), lim, input_read, &in, &f) != MP_OK)
		tap_bail("form_reader_new");
	*start_fault = form_reader_start(f);
	if (*start_fault == FORM_FINE)
		last = drain(f, out, sizeof out, 100, &got);
	*fault = form_reader_fault(f);
	if (keep)
		*keep = f;
	else
		form_reader_free(f);
	return last;
}

static void
test_faults(void)
{
	struct form_limits small = limits;
	enum form_fault sf, ff;
	struct form_reader *f;
	size_t len;
	char *form;
	long last;

	form = make_form(NULL, "hello", 5, NULL, 1, &len);
	last = run(form, len, 3, 0, &limits, &sf, &ff, &f);
	tap_ok(sf == FORM_FINE && last == 0, "a form without a name field reads cleanly");
	tap_ok(form_reader_name(f).len == 0 && span_eq_cstr(form_reader_filename(f), "a.txt"),
	       "no name field: the name is empty, the filename is there");
	form_reader_free(f);
	free(form);

	form = make_form(NULL, "", 0, NULL, 1, &len);
	last = run(form, len, 64, 0, &limits, &sf, &ff, NULL);
	tap_ok(sf == FORM_FINE && last == 0, "an empty file ends at once");
	free(form);

	form = make_form(NULL, "hello", 5, NAME_FIELD, 1, &len);
	last = run(form, len, 7, 0, &limits, &sf, &ff, NULL);
	tap_ok(last == -1 && ff == FORM_FIELD_ORDER, "a name after the file fails the upload");
	free(form);

	form = make_form(NULL, "hello", 5, "Content-Disposition: form-data; name=\"file\"; "
			 "filename=\"b\"\r\n\r\nx\r\n", 1, &len);
	last = run(form, len, 4096, 0, &limits, &sf, &ff, NULL);
	tap_ok((sf == FORM_SECOND_FILE || last == -1) && ff == FORM_SECOND_FILE,
	       "a second file fails the upload");
	free(form);

	form = make_form(NAME_FIELD, "hello", 5, NULL, 0, &len);
	last = run(form, len, 5, 0, &limits, &sf, &ff, NULL);
	tap_ok(last == -1 && ff == FORM_MALFORMED, "a form cut before its closing delimiter fails");
	free(form);

	form = make_form(NAME_FIELD, "hello", 5, NULL, 0, &len);
	last = run(form, len, 5, 1, &limits, &sf, &ff, NULL);
	tap_ok(last == -1 && ff == FORM_INPUT_FAILED, "a failing input fails the upload");
	free(form);

	form = make_form(TOKEN_FIELD "--" BOUNDARY "\r\n" NAME_FIELD, "hello", 5, NULL, 1, &len);
	last = run(form, len, 3, 0, &limits, &sf, &ff, &f);
	tap_ok(sf == FORM_FINE && last == 0 && span_eq_cstr(form_reader_token(f), "s3cret-token") &&
	       span_eq_cstr(form_reader_name(f), "report.pdf"),
	       "a token before the file is kept, beside the name (input in 3-byte pieces)");
	form_reader_forget_token(f);
	tap_ok(form_reader_token(f).len == 0, "... and forgotten on request");
	form_reader_free(f);
	free(form);

	form = make_form(NAME_FIELD, "hello", 5, TOKEN_FIELD, 1, &len);
	last = run(form, len, 4096, 0, &limits, &sf, &ff, &f);
	tap_ok(sf == FORM_FINE && form_reader_token(f).len == 0,
	       "a token after the file is not there when the file starts");
	tap_ok(last == 0 && form_reader_token(f).len == 0, "... nor later: it is ignored");
	form_reader_free(f);
	free(form);

	small.max_file = 4;
	form = make_form(NULL, "hello", 5, NULL, 1, &len);
	last = run(form, len, 2, 0, &small, &sf, &ff, NULL);
	tap_ok(last == -1 && ff == FORM_TOO_LARGE, "a file over max_file fails with too-large");
	last = run(form, len, 4096, 0, &small, &sf, &ff, NULL);
	tap_ok(sf == FORM_TOO_LARGE && ff == FORM_TOO_LARGE,
	       "too large already while starting (one chunk holds it all)");
	free(form);

	small = limits;
	small.max_field = 4;
	form = make_form(NAME_FIELD, "hello", 5, NULL, 1, &len);
	last = run(form, len, 4096, 0, &small, &sf, &ff, NULL);
	tap_ok(sf == FORM_MALFORMED, "a name field over its limit is refused before the upload");
	free(form);

	form = strdup("--" BOUNDARY "\r\n" NAME_FIELD "--" BOUNDARY "--\r\n");
	last = run(form, strlen(form), 9, 0, &limits, &sf, &ff, NULL);
	tap_ok(sf == FORM_NO_FILE, "a form without a file says so");
	free(form);

	form = strdup("not a form at all");
	last = run(form, strlen(form), 9, 0, &limits, &sf, &ff, NULL);
	tap_ok(sf == FORM_MALFORMED, "garbage is malformed");
	free(form);

	tap_ok(form_reader_new(span_from_cstr("bad boundary "), &limits, input_read, NULL, &f) ==
	       MP_BAD_CONTENT_TYPE && f == NULL, "a bad boundary is refused");
	form_reader_free(NULL);
}

/* Every allocation of form_reader_new failing in turn: a clean MP_NOMEM. */
static void
test_alloc_failure(void)
{
	struct form_reader *f;
	long n;
	int bad = 0, tried = 0;

	for (n = 1; n < 10; n++) {
		enum multipart_err e;

		alloc_fail_after(n);
		e = form_reader_new(span_from_cstr(BOUNDARY), &limits, input_read, NULL, &f);
		alloc_fail_after(-1);
		tried++;
		if (e == MP_OK) {
			form_reader_free(f);
			break;
		}
		if (e != MP_NOMEM || f != NULL)
			bad++;
	}
	tap_ok(bad == 0 && tried > 1, "each allocation failing in turn is MP_NOMEM (%d tried)", tried);
}

int main(void);

int
main(void)
{
	test_round_trip();
	test_faults();
	test_alloc_failure();
	return tap_done();
}
