/*
 * trace.c - a lock request's timeline (trace.h).
 */
#include "trace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

/* Set once at the start, before the threads that read it. */
static int trace_fd = -1;

int trace_start(const char *path)
{
	if (!path || !*path)
		return 0;
	trace_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	return trace_fd < 0 ? -errno : 0;
}

int trace_on(void)
{
	return trace_fd >= 0;
}

int64_t trace_now(void)
{
	struct timespec t;

	if (trace_fd < 0)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

void trace_write(const char *mode, const char *kind,
		 const int64_t at[TRACE_POINTS])
{
	static const char *const names[TRACE_POINTS] = {
		[TRACE_ASKED] = "asked",
		[TRACE_CREATE_SENT] = "create_sent",
		[TRACE_CREATED] = "created",
		[TRACE_LISTED] = "listed",
		[TRACE_GRANTED] = "granted",
		[TRACE_ANSWERED] = "answered",
		[TRACE_OWN_WATCHED] = "own_watched",
		[TRACE_RELEASED] = "released",
		[TRACE_DELETE_SENT] = "delete_sent",
		[TRACE_DELETED] = "deleted",
	};
	char line[512];
	int n;

	if (trace_fd < 0 || at[TRACE_ASKED] == 0)
		return;
	n = snprintf(line, sizeof(line), "%s %s t0=%lld", mode, kind,
		     (long long)at[TRACE_ASKED]);
	for (int p = 0; p < TRACE_POINTS && n < (int)sizeof(line); p++)
		n += at[p] ? snprintf(line + n, sizeof(line) - (size_t)n,
				      " %s=%lld", names[p],
				      (long long)(at[p] - at[TRACE_ASKED]))
			   : snprintf(line + n, sizeof(line) - (size_t)n,
				      " %s=-", names[p]);
	if (n < (int)sizeof(line) - 1) {
		line[n++] = '\n';
		(void)!write(trace_fd, line, (size_t)n);
	}
}
