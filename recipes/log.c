/*
 * log.c - stderr or syslog (see log.h).
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>

static int log_use_syslog;
static int log_max_level = LOG_INFO;

void log_setup(int use_syslog, int max_level)
{
	log_use_syslog = use_syslog;
	log_max_level = max_level;
	if (use_syslog)
		openlog("zklockfs", LOG_PID, LOG_DAEMON);
}

void log_msg(int level, const char *fmt, ...)
{
	va_list ap;

	if (level > log_max_level)
		return;
	va_start(ap, fmt);
	if (log_use_syslog) {
		vsyslog(level, fmt, ap);
	} else {
		/* One write per line: lines of several threads never mix, and
		 * unbuffered stderr costs one system call, not three. */
		char line[4096];
		int n = vsnprintf(line, sizeof(line), fmt, ap);
		/* Room for two paths and more: a longer line is marked. */
		if (n >= (int)sizeof(line))
			memcpy(line + sizeof(line) - 4, "...", 4);
		fprintf(stderr, "zklockfs: %s\n", line);
	}
	va_end(ap);
}
