/*
 * test_body_pace.c - app/body_pace.c: how long the responder waits for a
 * client's next body bytes, at the edges of the idle bound, the grace and
 * the minimum average rate.
 */
#include <stdint.h>

#include "app/body_pace.h"
#include "tap.h"

static void
test_cases(void)
{
	static const struct {
		int64_t idle_ms;
		uint64_t min_rate;
		int64_t grace_ms;
		int64_t elapsed_ms;
		uint64_t bytes;
		enum body_pace_verdict want;
		int64_t want_wait;
		const char *what;
	} cases[] = {
		{ 0, 1024, 60000, 999999, 0, BODY_PACE_WAIT, -1, "no idle bound: no bounds at all" },
		{ 30000, 0, 60000, 999999, 0, BODY_PACE_WAIT, 30000, "no rate: the idle bound only" },
		{ 3000, 1024, 60000, 0, 0, BODY_PACE_WAIT, 3000, "first read: the idle bound" },
		{ 3000, 1024, 60000, 58000, 0, BODY_PACE_WAIT, 2000, "the wait ends with the grace" },
		{ 3000, 1024, 60000, 60000, 0, BODY_PACE_WAIT, 0, "the grace's last instant" },
		{ 3000, 1024, 60000, 60001, 0, BODY_PACE_TOO_SLOW, 0, "nothing after the grace" },
		{ 3000, 1024, 60000, 60001, 61440, BODY_PACE_TOO_SLOW, 0,
		  "60 KiB in just over 60 s is under 1 KiB/s" },
		{ 3000, 1024, 60000, 61000, 102400, BODY_PACE_WAIT, 3000,
		  "100 KiB covers 100 s: the idle bound is nearer" },
		{ 3000, 1024, 60000, 99000, 102400, BODY_PACE_WAIT, 1000,
		  "... until the average is about to fall below the rate" },
		{ 3000, 1024, 60000, 100001, 102400, BODY_PACE_TOO_SLOW, 0, "... and then it has" },
		{ 3000, 1000, 1000, 1500, 1499, BODY_PACE_TOO_SLOW, 0, "1499 bytes in 1.5 s at 1000 B/s" },
		{ 3000, 1000, 1000, 1500, 1500, BODY_PACE_WAIT, 0, "1500 bytes in 1.5 s: just enough" },
		{ 3000, 1, 1, 1000, UINT64_MAX, BODY_PACE_WAIT, 3000, "a huge count does not overflow" },
		{ 3000, UINT64_MAX, 1, 0, UINT64_MAX, BODY_PACE_WAIT, 1000,
		  "a huge rate does not overflow" },
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct body_pace_limits lim = { cases[i].idle_ms, cases[i].min_rate, cases[i].grace_ms };
		int64_t wait = -2;
		enum body_pace_verdict v = body_pace_next_wait(&lim, cases[i].elapsed_ms, cases[i].bytes,
							      &wait);

		tap_ok(v == cases[i].want && wait == cases[i].want_wait, "%s (verdict %d, wait %lld)",
		       cases[i].what, (int)v, (long long)wait);
	}
}

int
main(void)
{
	test_cases();
	return tap_done();
}
