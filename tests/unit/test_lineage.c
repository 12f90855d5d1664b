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

/* A child that keeps the descriptors it inherited until told, and says
 * when it is ready. */
static pid_t keeping_child(int go[2], int ready[2])
{
	pid_t child = fork();
	char c;

	cr_assert_geq(child, 0);
	if (child == 0) {
		/* Its own copy of the write end closed: a test that failed
		 * before saying go ends it too, by its end (EOF). */
		close(go[1]);
		(void)!write(ready[1], "r", 1);
		(void)!read(go[0], &c, 1);
		_exit(0);
	}
	cr_assert_eq(read(ready[0], &c, 1), 1);
	return child;
}

Test(lineage, who_has_a_file_open_over_every_process)
{
	struct stat st, gone, tmp;
	uint64_t inos[2];
	pid_t users[2], hidden[4], child, child2;
	size_t nhidden;
	int go[2], ready[2];
	FILE *f = tmpfile(), *closed = tmpfile();
	const char *where;

	cr_assert(f && closed);
	cr_assert_eq(pipe(go), 0);
	cr_assert_eq(pipe(ready), 0);
	cr_assert_eq(fstat(fileno(f), &st), 0);
	cr_assert_eq(fstat(fileno(closed), &gone), 0);
	fclose(closed);
	inos[0] = st.st_ino;
	/* Nobody's: a file gone with its last descriptor, on the same device
	 * only (inode 1 is the root of /proc and of every FUSE mount, which
	 * another process may well have open). */
	inos[1] = gone.st_ino;
	where = stat("/tmp", &tmp) == 0 && tmp.st_dev == st.st_dev ? "/tmp"
								   : NULL;
	/* The caller's own descriptors are not counted: a child's are. */
	child = keeping_child(go, ready);
	cr_assert_eq(process_fd_users(where, inos, 2, users, hidden, &nhidden,
				      4),
		     0);
	cr_assert_eq(users[0], child, "one process has it: that one");
	cr_assert_eq(users[1], 0, "none has it");
	child2 = keeping_child(go, ready);
	cr_assert_eq(process_fd_users(where, inos, 2, users, hidden, &nhidden,
				      4),
		     0);
	cr_assert_eq(users[0], -1, "two processes have it: several");
	(void)!write(go[1], "gg", 2);
	waitpid(child, NULL, 0);
	waitpid(child2, NULL, 0);
	fclose(f);
}

Test(lineage, a_process_descends_from_its_parents)
{
	cr_assert(process_descends_from(getpid(), getpid()));
	cr_assert(process_descends_from(getpid(), getppid()));
	cr_assert(!process_descends_from(getppid(), getpid()));
	cr_assert(!process_descends_from(1, getpid()), "init from nobody");
}

Test(lineage, threads_of_a_process)
{
	struct lineage_proc me[1];

	cr_assert_eq(lineage_of(getpid(), me, 1), 1);
	cr_assert_geq(process_threads(me[0]), 1);
	me[0].start++;
	cr_assert_eq(process_threads(me[0]), -ESRCH,
		     "another process of the same pid");
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
