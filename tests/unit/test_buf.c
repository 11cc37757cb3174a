/* Unit tests for buf.c: caps, truncation checks, constant-time compare. */
#include <string.h>

#include "base/buf.h"
#include "tap.h"

int
main(void)
{
	struct buf b = BUF_INIT(8);
	char small[4];

	tap_ok(buf_append_cstr(&b, "abcd") == BUF_OK, "append within cap");
	tap_ok(buf_appendf(&b, "%d", 1234) == BUF_OK, "appendf within cap");
	tap_ok(strcmp(buf_cstr(&b), "abcd1234") == 0, "contents are NUL-terminated");
	tap_ok(buf_append(&b, "x", 1) == BUF_TOO_LONG, "cap refuses the ninth byte");
	TAP_EQ_INT(b.len, 8, "length unchanged after refusal");
	buf_reset(&b);
	TAP_EQ_INT(b.len, 0, "reset empties");
	buf_free(&b);

	tap_ok(copy_cstr(small, sizeof small, "abc") == 0, "copy that fits");
	tap_ok(copy_cstr(small, sizeof small, "abcd") == -1, "truncation reported");
	tap_ok(strcmp(small, "abc") == 0, "truncated copy is terminated");
	tap_ok(ct_equal("secret", 6, "secret", 6), "ct_equal equal");
	tap_ok(!ct_equal("secret", 6, "secreT", 6), "ct_equal differs");
	tap_ok(!ct_equal("secret", 6, "secrets", 7), "ct_equal length differs");
	tap_ok(span_eq_nocase_cstr(SPAN_LIT("Content-Type"), "content-type"), "nocase compare");
	return tap_done();
}
