/*
 * failpoint.h - named crash and fault points for the crash-matrix tests.
 *
 * Compiled in only with ./configure --enable-failpoints; in a normal build
 * FAILPOINT() expands to nothing and no code or string remains.  A test arms
 * points by writing lines "NAME ACTION" to the file named by
 * $BINDERY_FAILPOINTS_FILE (re-read at every check, so a running responder
 * can be armed) or by $BINDERY_FAILPOINTS ("NAME=ACTION,NAME=ACTION").
 * ACTION is one of:
 *   exit        _exit(137) on the spot, as a kill -9 would leave things
 *   error       the step reports an injected failure (FAILPOINT_FAILED)
 *   sleep:MS    pause MS milliseconds, then continue
 * A line "NAME ACTION once" disarms itself after firing (the file is
 * rewritten without it).
 */
#ifndef BINDERY_FAILPOINT_H
#define BINDERY_FAILPOINT_H

#ifdef HAVE_CONFIG_H
#include "autoconfig.h"
#endif

#ifdef BINDERY_FAILPOINTS
/* Returns 1 when the point is armed with "error", after any exit/sleep. */
int failpoint_hit(const char *name);
/* Whether the point is armed with "error", without firing it (a "once"
 * line stays): for a step that must know ahead that FAILPOINT will fire. */
int failpoint_armed(const char *name);
#define FAILPOINT(name) failpoint_hit(name)
#define FAILPOINT_ARMED(name) failpoint_armed(name)
#else
#define FAILPOINT(name) 0
#define FAILPOINT_ARMED(name) 0
#endif

#endif
