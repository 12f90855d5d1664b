/* Which pending signals cancel a blocked open. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <signal.h>
#include <unistd.h>

#include "sigpend.h"

Test(sigpend, parses_proc_status_masks)
{
	const char *status = "\nName:\tbash\nSigQ:\t0/1\n"
			     "SigPnd:\t0000000000010000\n"
			     "ShdPnd:\t0000000000000002\n"
			     "SigBlk:\t0000000000000004\n"
			     "SigIgn:\t0000000000000000\n";
	uint64_t pending, blocked;

	cr_assert_eq(sigpend_parse(status, &pending, &blocked), 0);
	cr_assert_eq(pending, 0x10002);
	cr_assert_eq(blocked, 0x4);
	cr_assert_eq(sigpend_parse("\nSigPnd:\t0\n", &pending, &blocked),
		     -EINVAL);
}

Test(sigpend, job_control_and_ignored_by_default_signals_do_not_cancel)
{
	int harmless[] = { SIGCHLD, SIGWINCH, SIGURG,  SIGCONT,
			   SIGSTOP, SIGTSTP,  SIGTTIN, SIGTTOU };

	for (size_t i = 0; i < sizeof(harmless) / sizeof(harmless[0]); i++)
		cr_expect(!sigpend_cancels(SIGPEND_BIT(harmless[i]), 0),
			  "signal %d must not cancel a wait", harmless[i]);
	cr_assert(!sigpend_cancels(0, 0));
}

Test(sigpend, terminating_signals_cancel)
{
	int fatal[] = { SIGINT, SIGTERM, SIGALRM, SIGKILL, SIGHUP, SIGUSR1 };

	for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
		cr_expect(sigpend_cancels(SIGPEND_BIT(fatal[i]) |
						  SIGPEND_BIT(SIGCHLD),
					  0),
			  "signal %d must cancel a wait", fatal[i]);
}

Test(sigpend, blocked_signals_do_not_cancel_but_sigkill_always_does)
{
	cr_assert(!sigpend_cancels(SIGPEND_BIT(SIGTERM), SIGPEND_BIT(SIGTERM)));
	cr_assert(sigpend_cancels(SIGPEND_BIT(SIGKILL), ~UINT64_C(0)));
}

Test(sigpend, a_thread_that_is_gone_counts_as_killed)
{
	cr_assert(sigpend_thread_cancels(0x7ffffff0));
	cr_assert(!sigpend_thread_cancels(getpid()),
		  "this test has no signal pending");
}
