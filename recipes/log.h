/*
 * log.h - one way to log: stderr in the foreground, syslog when daemonized
 * (both while a detaching daemon starts, so that its start shows on the
 * terminal and in the journal).  Levels are syslog's (LOG_ERR ...
 * LOG_DEBUG).  Any thread.
 */
#ifndef ZKL_LOG_H
#define ZKL_LOG_H

#include <stdatomic.h>

enum log_to {
	LOG_TO_STDERR = 1,
	LOG_TO_SYSLOG = 2, /* tag "zklockfs", facility daemon */
};

/* Send messages of levels up to max_level to `to` (LOG_TO_* or'ed).
 * Call before the threads that log start, or between their messages. */
void log_setup(int to, int max_level);

void log_msg(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* For a message anyone can provoke at will (a refused call): is it time to
 * say it again, every_s seconds after *said_at (CLOCK_MONOTONIC seconds,
 * 0 at first)?  1 once per span, to one of the threads that ask. */
int log_due(atomic_llong *said_at, int every_s);

#endif
