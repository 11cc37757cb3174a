/*
 * log.h - one line per event, to stderr (the web server's error log) or to
 * syslog (the CLI under cron).  Callers never pass secrets; the format string
 * is always a literal so a value cannot smuggle in conversions.
 */
#ifndef BINDERY_LOG_H
#define BINDERY_LOG_H

#include <stddef.h>

#include "base/compat.h"
enum log_level { LOG_LEVEL_ERROR, LOG_LEVEL_WARN, LOG_LEVEL_INFO, LOG_LEVEL_DEBUG };
enum log_sink { LOG_SINK_STDERR, LOG_SINK_SYSLOG };

void log_init(const char *program, enum log_level level, enum log_sink sink);
void log_set_level(enum log_level level);
/* Switch the sink after start-up (the configuration names it). */
void log_set_sink(enum log_sink sink);
void log_msg(enum log_level level, const char *fmt, ...) BINDERY_PRINTF(2, 3);

/*
 * A client's bytes made fit for one log field: the first cap bytes of
 * p[len], every byte below 0x21, 0x7f and the backslash written as \xNN (so
 * no value can end the line, start a forged one or split into two fields),
 * "..." after a cut.  Always NUL-terminated; out needs 4 * cap + 4 bytes
 * for nothing to be lost (less only cuts it shorter).  "-" for an empty value.
 */
void log_field(const char *p, size_t len, size_t cap, char *out, size_t outlen);

#define log_error(...) log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)

#endif
