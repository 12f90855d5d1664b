/*
 * log.h - one way to log: stderr in the foreground, syslog when daemonized.
 * Levels are syslog's (LOG_ERR ... LOG_DEBUG).  Any thread.
 */
#ifndef ZKL_LOG_H
#define ZKL_LOG_H

/* Send messages to syslog (1) or stderr (0); show those up to max_level. */
void log_setup(int use_syslog, int max_level);

void log_msg(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
