/*
 * log.c - stderr or syslog (see log.h).
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

static int log_to = LOG_TO_STDERR;
static int log_max_level = LOG_INFO;

void log_setup(int to, int max_level)
{
	if ((to & LOG_TO_SYSLOG) && !(log_to & LOG_TO_SYSLOG))
		openlog("zklockfs", LOG_PID, LOG_DAEMON);
	log_to = to;
	log_max_level = max_level;
}

void log_msg(int level, const char *fmt, ...)
{
	va_list ap;

	if (level > log_max_level)
		return;
	if (log_to & LOG_TO_SYSLOG) {
		va_start(ap, fmt);
		vsyslog(level, fmt, ap);
		va_end(ap);
	}
	if (log_to & LOG_TO_STDERR) {
		/* One write per line: lines of several threads never mix, and
		 * unbuffered stderr costs one system call, not three. */
		char line[4096];
		va_start(ap, fmt);
		int n = vsnprintf(line, sizeof(line), fmt, ap);
		va_end(ap);
		/* Room for two paths and more: a longer line is marked. */
		if (n >= (int)sizeof(line))
			memcpy(line + sizeof(line) - 4, "...", 4);
		fprintf(stderr, "zklockfs: %s\n", line);
	}
}

int log_due(atomic_llong *said_at, int every_s)
{
	struct timespec now;
	long long then = atomic_load(said_at), now_s;

	clock_gettime(CLOCK_MONOTONIC, &now);
	now_s = (long long)now.tv_sec + 1; /* never 0, which is "not yet" */
	return (then == 0 || now_s - then >= every_s) &&
	       atomic_compare_exchange_strong(said_at, &then, now_s);
}
