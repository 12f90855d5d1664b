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

int sigpend_parse(const char *status, struct sigpend_masks *m)
{
	uint64_t thread, shared;

	if (sigpend_field(status, "\nSigPnd:", &thread) < 0 ||
	    sigpend_field(status, "\nShdPnd:", &shared) < 0 ||
	    sigpend_field(status, "\nSigBlk:", &m->blocked) < 0 ||
	    sigpend_field(status, "\nSigCgt:", &m->caught) < 0)
		return -EINVAL;
	m->pending = thread | shared;
	return 0;
}

enum sigpend_verdict sigpend_classify(const struct sigpend_masks *m)
{
	const uint64_t harmless = SIGPEND_BIT(SIGCHLD) | SIGPEND_BIT(SIGWINCH) |
				  SIGPEND_BIT(SIGURG) | SIGPEND_BIT(SIGCONT) |
				  SIGPEND_BIT(SIGSTOP) | SIGPEND_BIT(SIGTSTP) |
				  SIGPEND_BIT(SIGTTIN) | SIGPEND_BIT(SIGTTOU);
	/* SIGKILL cannot be blocked nor caught, whatever the masks say. */
	const uint64_t kill = SIGPEND_BIT(SIGKILL);
	uint64_t cancels = m->pending & (~m->blocked | kill) & ~harmless;

	if (!cancels)
		return SIGPEND_WAIT;
	return cancels & (~m->caught | kill) ? SIGPEND_CANCEL : SIGPEND_HANDLED;
}

enum sigpend_verdict sigpend_thread_classify(pid_t tid)
{
	struct sigpend_masks m;
	char buf[4096];

	/* After a '\n', so that every field starts a line. */
	if (procfile_read(tid, "status", buf + 1, sizeof(buf) - 1) <= 0)
		return SIGPEND_CANCEL;
	buf[0] = '\n';
	if (sigpend_parse(buf, &m) < 0)
		return SIGPEND_CANCEL;
	return sigpend_classify(&m);
}
