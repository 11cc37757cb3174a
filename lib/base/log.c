/* log.c - see log.h. */
#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"

static const char *log_program = "bindery";
static enum log_level log_level_now = LOG_LEVEL_INFO;
static enum log_sink log_sink_now = LOG_SINK_STDERR;

static const char *const level_names[] = { "error", "warn", "info", "debug" };
static const int syslog_priorities[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };

void
log_init(const char *program, enum log_level level, enum log_sink sink)
{
	log_program = program;
	log_level_now = level;
	log_sink_now = sink;
	if (sink == LOG_SINK_SYSLOG)
		openlog(program, LOG_PID, LOG_DAEMON);
}

void
log_set_level(enum log_level level)
{
	log_level_now = level;
}

static int
log_enabled(enum log_level level)
{
	return level <= log_level_now;
}

void
log_msg(enum log_level level, const char *fmt, ...)
{
	char line[2048];
	char stamp[32];
	struct timespec ts;
	struct tm tm;
	va_list ap;

	if (!log_enabled(level))
		return;
	va_start(ap, fmt);
	/* A long line is cut, never overflowed. */
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (log_sink_now == LOG_SINK_SYSLOG) {
		syslog(syslog_priorities[level], "%s", line);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(stderr, "%s.%03ldZ %s[%ld] %s: %s\n", stamp, ts.tv_nsec / 1000000L, log_program,
		(long)getpid(), level_names[level], line);
}
