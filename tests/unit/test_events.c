/* Unit tests for the events sender's pure parts: the Standard Webhooks
 * signature (pinned to the specification's published example, which
 * Python's hmac reproduces too), the whsec_ secret's decoding and its
 * refusals, and a receiver's id. */
#include <string.h>

#include "base/buf.h"
#include "protocol/events.h"
#include "tap.h"

int
main(void)
{
	static const char body[] = "{\"test\": 2432232314}";
	unsigned char key[64];
	size_t keylen = 0;
	struct buf sig = BUF_INIT(128);
	char id[65];

	tap_ok(events_secret_decode(SPAN_LIT("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), key, sizeof key,
				    &keylen) == 0 && keylen == 24, "a whsec_ secret decodes to its key bytes");
	tap_ok(events_sign(key, keylen, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body, sizeof body - 1,
			   &sig) == 0 && strcmp(buf_cstr(&sig), "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=") == 0,
	       "the signature of the specification's example: %s", buf_cstr(&sig));
	tap_ok(events_sign(key, keylen, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265331, body, sizeof body - 1,
			   &sig) == 0 && strcmp(buf_cstr(&sig), "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=") != 0,
	       "another timestamp signs differently");
	tap_ok(events_secret_decode(SPAN_LIT("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), key, sizeof key, &keylen) == -1,
	       "a secret without whsec_ is refused");
	tap_ok(events_secret_decode(SPAN_LIT("whsec_not base64!"), key, sizeof key, &keylen) == -1,
	       "... and one that is not base64");
	tap_ok(events_secret_decode(SPAN_LIT("whsec_"), key, sizeof key, &keylen) == -1, "... and an empty one");
	events_endpoint_id("https://hooks.example.org/bindery", id);
	tap_ok(strlen(id) == 64 && strspn(id, "0123456789abcdef") == 64, "a receiver's id is 64 hex digits");
	buf_free(&sig);
	return tap_done();
}
