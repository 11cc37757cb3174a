/* log.c - see log.h. */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"

static const char *log_program = "bindery";
static enum log_level log_level_now = LOG_LEVEL_INFO;
static enum log_sink log_sink_now = LOG_SINK_STDERR;
static int syslog_open;

static const char *const level_names[] = { "error", "warn", "info", "debug" };
static const int syslog_priorities[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };

void
log_init(const char *program, enum log_level level, enum log_sink sink)
{
	log_program = program;
	log_level_now = level;
	log_set_sink(sink);
}

void
log_set_sink(enum log_sink sink)
{
	log_sink_now = sink;
	if (sink == LOG_SINK_SYSLOG && !syslog_open) {
		openlog(log_program, LOG_PID, LOG_DAEMON);
		syslog_open = 1;
	}
}

void
log_field(const char *p, size_t len, size_t cap, char *out, size_t outlen)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, o = 0, n = len < cap ? len : cap;

	assert(outlen >= 2);
	if (len == 0) {
		out[0] = '-';
		out[1] = '\0';
		return;
	}
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];

		if (c <= 0x20 || c == 0x7f || c == '\\') {
			if (o + 4 >= outlen)
				break;
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 0xf];
		} else {
			if (o + 1 >= outlen)
				break;
			out[o++] = (char)c;
		}
	}
	if ((i < len) && o + 3 < outlen) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
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
