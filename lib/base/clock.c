/* clock.c - see clock.h. */
#include <time.h>

#include "base/clock.h"

int64_t
clock_now_ms(void)
{
	struct timespec ts;

	/* CLOCK_MONOTONIC cannot fail with a valid pointer (POSIX lists only EINVAL
	 * for an unsupported clock, and Linux always has this one). */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
