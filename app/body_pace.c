/* body_pace.c - see body_pace.h. */
#include "body_pace.h"

/* Milliseconds that bytes cover at rate bytes/s (saturating, no overflow). */
static int64_t
covered_ms(uint64_t bytes, uint64_t rate)
{
	uint64_t whole = bytes / rate, ms;

	if (whole > (uint64_t)INT64_MAX / 1000 - 1)
		return INT64_MAX;
	ms = whole * 1000 + (bytes % rate) * 1000 / rate;
	return (int64_t)ms;
}

enum body_pace_verdict
body_pace_next_wait(const struct body_pace_limits *lim, int64_t elapsed_ms, uint64_t bytes,
		    int64_t *wait_ms)
{
	int64_t until;

	*wait_ms = -1;
	if (lim->idle_ms <= 0)
		return BODY_PACE_WAIT;
	*wait_ms = lim->idle_ms;
	if (lim->min_rate == 0)
		return BODY_PACE_WAIT;
	/* The average stays at or above min_rate until bytes no longer cover
	 * the time passed, and is not judged at all before the grace ends. */
	until = covered_ms(bytes, lim->min_rate);
	if (until < lim->grace_ms)
		until = lim->grace_ms;
	if (elapsed_ms > until) {
		*wait_ms = 0;
		return BODY_PACE_TOO_SLOW;
	}
	if (until - elapsed_ms < *wait_ms)
		*wait_ms = until - elapsed_ms;
	return BODY_PACE_WAIT;
}
