/*
 * log.c - stderr or syslog (see log.h).
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
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
		fputs("zklockfs: ", stderr);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
	va_end(ap);
}
