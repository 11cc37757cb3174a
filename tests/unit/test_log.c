/* Unit tests for log_field(): a client's bytes fit for one field of a log
 * line, whatever they are: no client can forge a line. */
#include <string.h>

#include "base/log.h"
#include "tap.h"

#define FIELD(s, cap, out) log_field((s), sizeof(s) - 1, (cap), (out), sizeof(out))

static void
test_escapes(void)
{
	char out[256];

	FIELD("/documents/42", 200, out);
	tap_ok(strcmp(out, "/documents/42") == 0, "a plain path is as it was");
	FIELD("/x\nforged line", 200, out);
	tap_ok(strcmp(out, "/x\\x0aforged\\x20line") == 0, "newline and space escaped: %s", out);
	FIELD("\r\t\x7f\x1b\\", 200, out);
	tap_ok(strcmp(out, "\\x0d\\x09\\x7f\\x1b\\x5c") == 0, "CR, tab, DEL, ESC, backslash escaped: %s", out);
	FIELD("caf\xc3\xa9", 200, out);
	tap_ok(strcmp(out, "caf\xc3\xa9") == 0, "bytes above 0x7f pass (UTF-8 names)");
	log_field(NULL, 0, 200, out, sizeof out);
	tap_ok(strcmp(out, "-") == 0, "nothing is -");
}

/* No byte, in any place, leaves a control character in the output. */
static void
test_every_byte(void)
{
	char in[256], out[4 * 256 + 4];
	size_t i, bad = 0;

	for (i = 0; i < 256; i++)
		in[i] = (char)i;
	log_field(in, sizeof in, sizeof in, out, sizeof out);
	for (i = 0; out[i]; i++)
		if ((unsigned char)out[i] < 0x21 || (unsigned char)out[i] == 0x7f)
			bad++;
	tap_ok(bad == 0 && strlen(out) == 3 * 35 + 256, "every byte 0-255: no control byte or space"
	       " left, %zu bytes", strlen(out));
}

static void
test_caps(void)
{
	char small[8], out[64];

	FIELD("abcdefghij", 4, out);
	tap_ok(strcmp(out, "abcd...") == 0, "cut at cap, marked: %s", out);
	FIELD("abcd", 4, out);
	tap_ok(strcmp(out, "abcd") == 0, "exactly cap: no mark");
	FIELD("\n\n\n\n", 4, small);
	tap_ok(strcmp(small, "\\x0a...") == 0, "a small buffer cuts before an escape, never inside one: %s",
	       small);
	FIELD("abcdefghijkl", 100, small);
	tap_ok(strlen(small) < sizeof small && strncmp(small, "abcdefg", 7) == 0,
	       "a small buffer is never overrun: %s", small);
}

int
main(void)
{
	test_escapes();
	test_every_byte();
	test_caps();
	return tap_done();
}
