/* Which pending signals cancel a blocked open, and which only interrupt a
 * handler's thread. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "sigpend.h"

static enum sigpend_verdict verdict(uint64_t pending, uint64_t blocked,
				    uint64_t caught)
{
	struct sigpend_masks m = { pending, blocked, caught };

	return sigpend_classify(&m);
}

Test(sigpend, parses_proc_status_masks)
{
	const char *status = "\nName:\tbash\nSigQ:\t0/1\n"
			     "SigPnd:\t0000000000010000\n"
			     "ShdPnd:\t0000000000000002\n"
			     "SigBlk:\t0000000000000004\n"
			     "SigIgn:\t0000000000000000\n"
			     "SigCgt:\t0000000000002000\n";
	struct sigpend_masks m;

	cr_assert_eq(sigpend_parse(status, &m), 0);
	cr_assert_eq(m.pending, 0x10002);
	cr_assert_eq(m.blocked, 0x4);
	cr_assert_eq(m.caught, 0x2000);
	cr_assert_eq(sigpend_parse("\nSigPnd:\t0\n", &m), -EINVAL);
}

Test(sigpend, job_control_and_ignored_by_default_signals_do_not_cancel)
{
	int harmless[] = { SIGCHLD, SIGWINCH, SIGURG,  SIGCONT,
			   SIGSTOP, SIGTSTP,  SIGTTIN, SIGTTOU };

	for (size_t i = 0; i < sizeof(harmless) / sizeof(harmless[0]); i++)
		cr_expect_eq(verdict(SIGPEND_BIT(harmless[i]), 0, 0),
			     SIGPEND_WAIT, "signal %d must not cancel a wait",
			     harmless[i]);
	cr_assert_eq(verdict(0, 0, 0), SIGPEND_WAIT);
}

Test(sigpend, terminating_signals_cancel)
{
	int fatal[] = { SIGINT, SIGTERM, SIGALRM, SIGKILL, SIGHUP, SIGUSR1 };

	for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
		cr_expect_eq(verdict(SIGPEND_BIT(fatal[i]) |
					     SIGPEND_BIT(SIGCHLD),
				     0, SIGPEND_BIT(SIGCHLD)),
			     SIGPEND_CANCEL, "signal %d must cancel a wait",
			     fatal[i]);
}

Test(sigpend, blocked_signals_do_not_cancel_but_sigkill_always_does)
{
	cr_assert_eq(verdict(SIGPEND_BIT(SIGTERM), SIGPEND_BIT(SIGTERM), 0),
		     SIGPEND_WAIT);
	cr_assert_eq(verdict(SIGPEND_BIT(SIGKILL), ~UINT64_C(0), ~UINT64_C(0)),
		     SIGPEND_CANCEL);
}

Test(sigpend, a_caught_signal_interrupts_a_handler_and_nothing_more)
{
	uint64_t alrm = SIGPEND_BIT(SIGALRM), term = SIGPEND_BIT(SIGTERM);

	cr_assert_eq(verdict(alrm, 0, alrm), SIGPEND_HANDLED);
	cr_assert_eq(verdict(alrm | term, 0, alrm), SIGPEND_CANCEL,
		     "an uncaught SIGTERM beside it still cancels");
	cr_assert_eq(verdict(alrm | term, term, alrm), SIGPEND_HANDLED,
		     "a blocked one does not count");
}

Test(sigpend, a_thread_that_is_gone_counts_as_killed)
{
	cr_assert_eq(sigpend_thread_classify(0x7ffffff0), SIGPEND_CANCEL);
	cr_assert_eq(sigpend_thread_classify(getpid()), SIGPEND_WAIT,
		     "this test has no signal pending");
}
