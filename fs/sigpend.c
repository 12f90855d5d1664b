/*
 * sigpend.c - classify the signals pending for a waiting thread.
 */
#include "sigpend.h"
#include "procfile.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int sigpend_field(const char *status, const char *key, uint64_t *out)
{
	const char *p = strstr(status, key);
	char *end;

	if (!p)
		return -EINVAL;
	p += strlen(key);
	errno = 0;
	*out = strtoull(p, &end, 16);
	if (errno || end == p)
		return -EINVAL;
	return 0;
}

int sigpend_parse(const char *status, uint64_t *pending, uint64_t *blocked)
{
	uint64_t thread, shared;

	if (sigpend_field(status, "\nSigPnd:", &thread) < 0 ||
	    sigpend_field(status, "\nShdPnd:", &shared) < 0 ||
	    sigpend_field(status, "\nSigBlk:", blocked) < 0)
		return -EINVAL;
	*pending = thread | shared;
	return 0;
}

int sigpend_cancels(uint64_t pending, uint64_t blocked)
{
	const uint64_t harmless = SIGPEND_BIT(SIGCHLD) | SIGPEND_BIT(SIGWINCH) |
				  SIGPEND_BIT(SIGURG) | SIGPEND_BIT(SIGCONT) |
				  SIGPEND_BIT(SIGSTOP) | SIGPEND_BIT(SIGTSTP) |
				  SIGPEND_BIT(SIGTTIN) | SIGPEND_BIT(SIGTTOU);
	/* SIGKILL cannot be blocked, whatever the mask says. */
	uint64_t effective = pending & (~blocked | SIGPEND_BIT(SIGKILL));

	return (effective & ~harmless) != 0;
}

int sigpend_thread_cancels(pid_t tid)
{
	char buf[4096];
	uint64_t pending, blocked;

	/* After a '\n', so that every field starts a line. */
	if (procfile_read(tid, "status", buf + 1, sizeof(buf) - 1) <= 0)
		return 1;
	buf[0] = '\n';
	if (sigpend_parse(buf, &pending, &blocked) < 0)
		return 1;
	return sigpend_cancels(pending, blocked);
}
