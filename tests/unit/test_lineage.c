/* -o reentrant's pure parts: a process's ancestors from /proc, and what a
 * held lock gives its process tree's request. */
#include <criterion/criterion.h>
#include <errno.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lineage.h"
#include "reentrant.h"

Test(lineage, parses_tgid_and_ppid_of_proc_status)
{
	const char *status = "\nName:\tbash\nUmask:\t0022\nState:\tS\n"
			     "Tgid:\t4121\nNgid:\t0\nPid:\t4123\n"
			     "PPid:\t4000\nTracerPid:\t0\n";
	pid_t tgid, ppid;

	cr_assert_eq(lineage_parse(status, &tgid, &ppid), 0);
	cr_assert_eq(tgid, 4121, "the process, not the thread (Pid)");
	cr_assert_eq(ppid, 4000);
}

Test(lineage, refuses_a_missing_or_malformed_line)
{
	pid_t tgid, ppid;

	cr_assert_eq(lineage_parse("\nTgid:\t12\n", &tgid, &ppid), -EINVAL);
	cr_assert_eq(lineage_parse("\nTgid:\tx\nPPid:\t1\n", &tgid, &ppid),
		     -EINVAL);
	cr_assert_eq(lineage_parse("\nTgid:\t12 3\nPPid:\t1\n", &tgid, &ppid),
		     -EINVAL);
	/* "TracerPid:" is no "PPid:" line. */
	cr_assert_eq(lineage_parse("\nTgid:\t12\nTracerPid:\t1\n", &tgid,
				   &ppid),
		     -EINVAL);
}

Test(lineage, of_this_thread_is_this_process_then_its_parent)
{
	pid_t out[LINEAGE_MAX];
	size_t n = lineage_of(getpid(), out, LINEAGE_MAX);

	cr_assert_geq(n, 1);
	cr_assert_eq(out[0], getpid());
	if (getppid() > 1) {
		cr_assert_geq(n, 2);
		cr_assert_eq(out[1], getppid());
	}
	cr_assert_eq(lineage_of(getpid(), out, 1), 1, "at most max");
}

Test(lineage, of_a_thread_that_is_gone_is_empty)
{
	pid_t out[LINEAGE_MAX];
	pid_t child = fork();

	cr_assert_geq(child, 0);
	if (child == 0)
		_exit(0);
	cr_assert_eq(waitpid(child, NULL, 0), child);
	cr_assert_eq(lineage_of(child, out, LINEAGE_MAX), 0);
}

Test(reentrant, write_covers_both_read_covers_read)
{
	cr_assert_eq(reentrant_verdict(ZKL_MODE_WRITE, ZKL_MODE_WRITE), 0);
	cr_assert_eq(reentrant_verdict(ZKL_MODE_WRITE, ZKL_MODE_READ), 0);
	cr_assert_eq(reentrant_verdict(ZKL_MODE_READ, ZKL_MODE_READ), 0);
	cr_assert_eq(reentrant_verdict(ZKL_MODE_READ, ZKL_MODE_WRITE), EDEADLK,
		     "an upgrade could never be granted");
	cr_assert_eq(reentrant_verdict(ZKL_MODE_LEASE, ZKL_MODE_LEASE), -1,
		     "leases are not reentrant");
	cr_assert_eq(reentrant_verdict(ZKL_MODE_WRITE, ZKL_MODE_LEASE), -1);
}
