/* blob_xml.c - expat-driven XML walking for the blob client's answers. */
#include <string.h>

#include <expat.h>

#include "base/alloc.h"
#include "storage/blob_internal.h"

#define XML_PATH_MAX	1024
#define XML_TEXT_MAX	(64 * 1024)	/* no single element we read is longer */

struct walk_state {
	const struct blob_xml_walk *w;
	XML_Parser parser;
	struct buf path;
	struct buf text;
	enum blob_xml_err err;
};

static void
walk_stop(struct walk_state *st, enum blob_xml_err err)
{
	if (st->err == BLOB_XML_OK)
		st->err = err;
	XML_StopParser(st->parser, XML_FALSE);
}

/* Over XML_PATH_MAX or XML_TEXT_MAX is an answer we do not read, not a
 * failed allocation. */
static enum blob_xml_err
walk_err_of(enum buf_err e)
{
	return e == BUF_NOMEM ? BLOB_XML_NOMEM : BLOB_XML_MALFORMED;
}

static void XMLCALL
walk_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
	struct walk_state *st = ud;
	enum buf_err e;

	(void)attrs;
	if (st->err != BLOB_XML_OK)
		return;
	if ((e = buf_appendf(&st->path, "/%s", name)) != BUF_OK) {
		walk_stop(st, walk_err_of(e));
		return;
	}
	buf_reset(&st->text);
	if (st->w->on_start && st->w->on_start(st->w->ctx, buf_cstr(&st->path)))
		walk_stop(st, BLOB_XML_STOPPED);
}

static void XMLCALL
walk_end(void *ud, const XML_Char *name)
{
	struct walk_state *st = ud;
	char *slash;

	(void)name;
	if (st->err != BLOB_XML_OK)
		return;
	if (st->w->on_end && st->w->on_end(st->w->ctx, buf_cstr(&st->path),
	    buf_cstr(&st->text), st->text.len)) {
		walk_stop(st, BLOB_XML_STOPPED);
		return;
	}
	buf_reset(&st->text);
	slash = strrchr(st->path.ptr, '/');
	if (slash != NULL) {
		st->path.len = (size_t)(slash - st->path.ptr);
		*slash = '\0';
	}
}

static void XMLCALL
walk_chars(void *ud, const XML_Char *s, int len)
{
	struct walk_state *st = ud;
	enum buf_err e;

	if (st->err != BLOB_XML_OK || len <= 0)
		return;
	if ((e = buf_append(&st->text, s, (size_t)len)) != BUF_OK)
		walk_stop(st, walk_err_of(e));
}

enum blob_xml_err
blob_xml_walk(const char *xml, size_t len, const struct blob_xml_walk *w)
{
	/* expat allocates through the hook too, so the allocation-failure
	 * loop reaches its out-of-memory paths. */
	static const XML_Memory_Handling_Suite mem = { alloc_malloc, alloc_realloc, alloc_free };
	struct walk_state st;
	enum blob_xml_err err;

	memset(&st, 0, sizeof st);
	st.w = w;
	buf_init(&st.path, XML_PATH_MAX);
	buf_init(&st.text, XML_TEXT_MAX);
	if (len > (size_t)0x7fffffff)
		return BLOB_XML_MALFORMED;
	st.parser = XML_ParserCreate_MM("UTF-8", &mem, NULL);
	if (st.parser == NULL)
		return BLOB_XML_NOMEM;
	XML_SetUserData(st.parser, &st);
	XML_SetElementHandler(st.parser, walk_start, walk_end);
	XML_SetCharacterDataHandler(st.parser, walk_chars);
	if (XML_Parse(st.parser, xml, (int)len, XML_TRUE) == XML_STATUS_ERROR &&
	    st.err == BLOB_XML_OK)
		st.err = XML_GetErrorCode(st.parser) == XML_ERROR_NO_MEMORY ?
		    BLOB_XML_NOMEM : BLOB_XML_MALFORMED;
	err = st.err;
	XML_ParserFree(st.parser);
	buf_free(&st.path);
	buf_free(&st.text);
	return err;
}

struct error_fields {
	char *code;
	size_t codesize;
	char *message;
	size_t messagesize;
};

static int
error_end(void *ctx, const char *path, const char *text, size_t len)
{
	struct error_fields *f = ctx;
	struct span s = { text, len };
	char *nl;

	if (strcmp(path, "/Error/Code") == 0) {
		if (copy_span(f->code, f->codesize, s) != 0)
			f->code[0] = '\0';
	} else if (strcmp(path, "/Error/Message") == 0) {
		/* A truncated message is still useful; keep its first line. */
		if (copy_span(f->message, f->messagesize, s) != 0) {
			/* truncated at messagesize - 1: fine for a message */
		}
		nl = strchr(f->message, '\n');
		if (nl != NULL)
			*nl = '\0';
	}
	return 0;
}

void
blob_xml_error(const char *xml, size_t len, char *code, size_t codesize,
    char *message, size_t messagesize)
{
	struct error_fields f = { code, codesize, message, messagesize };
	struct blob_xml_walk w = { &f, NULL, error_end };

	/* A malformed body leaves whatever was found before the error. */
	if (blob_xml_walk(xml, len, &w) != BLOB_XML_OK)
		return;
}

enum buf_err
blob_xml_escape(struct buf *out, const char *s)
{
	enum buf_err e = BUF_OK;

	for (; *s && e == BUF_OK; s++) {
		switch (*s) {
		case '&': e = buf_append_cstr(out, "&amp;"); break;
		case '<': e = buf_append_cstr(out, "&lt;"); break;
		case '>': e = buf_append_cstr(out, "&gt;"); break;
		case '"': e = buf_append_cstr(out, "&quot;"); break;
		case '\'': e = buf_append_cstr(out, "&apos;"); break;
		default: e = buf_append(out, s, 1); break;
		}
	}
	return e;
}
