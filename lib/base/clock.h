/*
 * clock.h - the one monotonic clock every deadline, pace and duration is
 * measured on.  Wall time never measures a wait: it jumps when the
 * administrator or NTP sets it.
 */
#ifndef BINDERY_CLOCK_H
#define BINDERY_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC now, in milliseconds: only differences mean anything. */
int64_t clock_now_ms(void);

#endif
