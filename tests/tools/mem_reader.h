/*
 * mem_reader.h - a body read from memory, for the upload and protocol calls
 * that pull their bytes through a read callback (tests and the sweep plant
 * helpers).  Header-only (static functions).
 */
#ifndef BINDERY_MEM_READER_H
#define BINDERY_MEM_READER_H

#include <string.h>

#include "base/compat.h"

struct mem_reader {
	const char *p;
	size_t len, off;
};

static BINDERY_UNUSED long
mem_read(void *ctx, char *buf, size_t len)
{
	struct mem_reader *m = ctx;
	size_t n = m->len - m->off < len ? m->len - m->off : len;

	memcpy(buf, m->p + m->off, n);
	m->off += n;
	return (long)n;
}

#endif
