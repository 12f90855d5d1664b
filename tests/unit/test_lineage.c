/* -o reentrant's pure parts: a process's ancestors from /proc, and what a
 * held lock gives its process tree's request. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process.h"
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

Test(lineage, parses_ppid_and_start_time_of_proc_stat)
{
	/* A command with a space and a parenthesis of its own. */
	const char *stat = "4123 (my) prog) S 4000 4123 4000 0 -1 4194560 "
			   "100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10\n";
	unsigned long long start;
	pid_t ppid;

	cr_assert_eq(lineage_parse_stat(stat, &ppid, &start), 0);
	cr_assert_eq(ppid, 4000);
	cr_assert_eq(start, 987654ULL);
	cr_assert_eq(lineage_parse_stat("4123 (sh) S 4000 1 2\n", &ppid,
					&start),
		     -EINVAL, "too short");
	cr_assert_eq(lineage_parse_stat("4123 sh S 4000\n", &ppid, &start),
		     -EINVAL);
}

Test(lineage, of_this_thread_is_this_process_then_its_parent)
{
	struct lineage_proc out[LINEAGE_MAX], again[LINEAGE_MAX];
	size_t n = lineage_of(getpid(), out, LINEAGE_MAX);

	cr_assert_geq(n, 1);
	cr_assert_eq(out[0].pid, getpid());
	cr_assert_gt(out[0].start, 0);
	cr_assert_geq(n, 2);
	cr_assert_eq(out[1].pid, getppid());
	cr_assert_eq(out[n - 1].pid, 1, "up to init, included");
	cr_assert_eq(lineage_of(getpid(), again, 1), 1, "at most max");
	cr_assert(lineage_has(out, n, again[0]));
	again[0].start++;
	cr_assert(!lineage_has(out, n, again[0]),
		  "another process of the same pid is no ancestor");
}

Test(lineage, a_process_with_the_file_open_is_found_by_its_inode)
{
	struct lineage_proc me[1];
	struct stat st;
	uint64_t ino, other = 1;
	FILE *f = tmpfile();

	cr_assert(f);
	cr_assert_eq(fstat(fileno(f), &st), 0);
	ino = st.st_ino;
	cr_assert_eq(lineage_of(getpid(), me, 1), 1);
	cr_assert(lineage_has_open(me[0], &ino, 1));
	cr_assert(!lineage_has_open(me[0], &other, 1));
	fclose(f);
	cr_assert(!lineage_has_open(me[0], &ino, 1), "closed: holds nothing");
}

Test(lineage, of_a_thread_that_is_gone_is_empty)
{
	struct lineage_proc out[LINEAGE_MAX];
	pid_t child = fork();

	cr_assert_geq(child, 0);
	if (child == 0)
		_exit(0);
	cr_assert_eq(waitpid(child, NULL, 0), child);
	cr_assert_eq(lineage_of(child, out, LINEAGE_MAX), 0);
}

Test(lineage, a_wait_for_a_child_is_read_from_proc_syscall)
{
	/* A system call number (-1: none, the text as it is) and the rest
	 * of the line; what the parse says, and the child it names. */
	static const struct {
		long nr;
		const char *rest, *why;
		int rc;
		pid_t child;
	} cases[] = {
		{ SYS_wait4, " 0x1019 0x7ffc 0x0 0x0 0x0 0x0 0x7ffd 0x7f00\n",
		  "wait4 of one pid", 1, 0x1019 },
		{ SYS_wait4, " 0xffffffffffffffff 0x7ffc 0x0\n", "any child", 0,
		  0 },
		{ SYS_waitid, " 0x1 0x2a 0x7ffc 0x4\n", "P_PID 42", 1, 42 },
		{ SYS_waitid, " 0x0 0x0 0x7ffc 0x4\n", "P_ALL", 0, 0 },
		{ SYS_wait4, " 0xffffffff 0x7ffc 0x0\n",
		  "-1 in the register's low 32 bits: any child", 0, 0 },
		{ SYS_waitid, " 0xf7f21000 0x1 0x1 0xffd0\n",
		  "a 32-bit process's call of that number (a pointer first) "
		  "is no waitid",
		  -1, 0 },
		{ SYS_read, " 0x3 0x1019 0x0\n", "reading", -1, 0 },
		{ -1, "running\n", "in no system call", -1, 0 },
		{ -1, "-1 0x7ffc 0x7f00\n", "blocked outside one", -1, 0 },
		{ SYS_wait4, "\n", "no arguments", -1, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[128];
		pid_t child = 0;

		if (cases[i].nr < 0)
			snprintf(text, sizeof(text), "%s", cases[i].rest);
		else
			snprintf(text, sizeof(text), "%ld%s", cases[i].nr,
				 cases[i].rest);
		cr_assert_eq(lineage_parse_wait(text, &child), cases[i].rc,
			     "%s", cases[i].why);
		if (cases[i].rc == 1)
			cr_assert_eq(child, cases[i].child, "%s", cases[i].why);
	}
}

Test(lineage, a_parent_in_waitpid_waits_for_its_only_child)
{
	int ready[2], go[2];
	pid_t parent, child;
	char c;

	cr_assert_eq(pipe(ready), 0);
	cr_assert_eq(pipe(go), 0);
	parent = fork();
	if (parent == 0) { /* forks the child, then waits for it */
		pid_t k = fork();
		if (k == 0) {
			(void)!read(go[0], &c, 1);
			_exit(0);
		}
		(void)!write(ready[1], &k, sizeof(k));
		waitpid(k, NULL, 0);
		_exit(0);
	}
	cr_assert_eq(read(ready[0], &child, sizeof(child)), sizeof(child));
	/* Bounded: the parent reaches its waitpid at once. */
	for (int i = 0; i < 2000 && !lineage_waits_for(parent, child); i++)
		usleep(1000);
	cr_assert(lineage_waits_for(parent, child));
	cr_assert(!lineage_waits_for(parent, child + 100000),
		  "not a wait for another pid");
	cr_assert(!lineage_waits_for(getpid(), parent),
		  "this process does not wait");
	(void)!write(go[1], "x", 1);
	waitpid(parent, NULL, 0);
}

Test(reentrant, write_covers_both_read_covers_read)
{
	cr_assert_eq(reentrant_verdict(ZKL_MODE_WRITE, ZKL_MODE_WRITE), 1);
	cr_assert_eq(reentrant_verdict(ZKL_MODE_WRITE, ZKL_MODE_READ), 1);
	cr_assert_eq(reentrant_verdict(ZKL_MODE_READ, ZKL_MODE_READ), 1);
	cr_assert_eq(reentrant_verdict(ZKL_MODE_READ, ZKL_MODE_WRITE), -EDEADLK,
		     "an upgrade could never be granted");
	cr_assert_eq(reentrant_verdict(ZKL_MODE_LEASE, ZKL_MODE_LEASE), 0,
		     "leases are not reentrant");
	cr_assert_eq(reentrant_verdict(ZKL_MODE_WRITE, ZKL_MODE_LEASE), 0);
}
