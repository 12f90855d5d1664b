/*
 * sigpend.c - the signals pending for a waiting thread, and which end
 * its wait (see sigpend.h).
 */
#include "sigpend.h"
#include "process.h"

#include <errno.h>
#include <signal.h>

int sigpend_parse(const char *status, struct sigpend_masks *m)
{
	uint64_t thread, shared;

	if (procfile_status_mask(status, "\nSigPnd:", &thread) < 0 ||
	    procfile_status_mask(status, "\nShdPnd:", &shared) < 0 ||
	    procfile_status_mask(status, "\nSigBlk:", &m->blocked) < 0 ||
	    procfile_status_mask(status, "\nSigCgt:", &m->caught) < 0)
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
