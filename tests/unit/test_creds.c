/* Whom a process may signal, as /proc tells it: the credentials kill(2)
 * looks at, and the members of a process group (on_lost's signal goes
 * only where its holder could send it: fs/lost.c). */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process.h"

/* A status text as Linux 6.1 writes it, cut to the lines around ours. */
#define STATUS(uid, capeff)                                               \
	"\nName:\tsleep\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t99\n" \
	"Uid:\t" uid "\nGid:\t0\t0\t0\t0\nFDSize:\t64\nGroups:\t \n"      \
	"CapInh:\t0000000000000000\nCapPrm:\t" capeff "\n"                \
	"CapEff:\t" capeff "\nCapBnd:\t000001ffffffffff\n"

Test(creds, parses_real_and_effective_uid_and_cap_kill)
{
	struct process_creds c;

	cr_assert_eq(process_creds_parse(
			     STATUS("0\t0\t0\t0", "000001ffffffffff"), &c),
		     0);
	cr_assert_eq(c.ruid, 0);
	cr_assert_eq(c.euid, 0);
	cr_assert(c.cap_kill);
	cr_assert_eq(process_creds_parse(STATUS("1000\t65534\t0\t65534",
						"0000000000000000"),
					 &c),
		     0);
	cr_assert_eq(c.ruid, 1000, "the first number is the real uid");
	cr_assert_eq(c.euid, 65534, "the second the effective");
	cr_assert(!c.cap_kill);
	/* Every capability but CAP_KILL (bit 5): setpriv --bounding-set=-kill */
	cr_assert_eq(process_creds_parse(
			     STATUS("0\t0\t0\t0", "000001ffffffffdf"), &c),
		     0);
	cr_assert(!c.cap_kill, "root's uid without CAP_KILL");
	cr_assert_eq(process_creds_parse(STATUS("4294967294\t4294967294\t0\t0",
						"0000000000000020"),
					 &c),
		     0);
	cr_assert_eq(c.ruid, 4294967294u);
	cr_assert(c.cap_kill, "CAP_KILL alone");
}

Test(creds, refuses_a_missing_or_malformed_line)
{
	struct process_creds c;

	cr_assert_eq(process_creds_parse("\nUid:\t0\t0\t0\t0\n", &c), -EINVAL,
		     "no CapEff");
	cr_assert_eq(process_creds_parse("\nCapEff:\t0\n", &c), -EINVAL,
		     "no Uid");
	cr_assert_eq(process_creds_parse(STATUS("0", "0"), &c), -EINVAL,
		     "one uid");
	cr_assert_eq(process_creds_parse(STATUS("x\t0\t0\t0", "0"), &c),
		     -EINVAL);
	cr_assert_eq(process_creds_parse(STATUS("4294967296\t0\t0\t0", "0"),
					 &c),
		     -EINVAL, "beyond 32 bits");
	cr_assert_eq(process_creds_parse(STATUS("-1\t0\t0\t0", "0"), &c),
		     -EINVAL);
	cr_assert_eq(process_creds_parse(STATUS("0\t0\t0\t0", "zz"), &c),
		     -EINVAL);
}

Test(creds, of_this_process_are_its_own_and_of_a_gone_one_none)
{
	struct lineage_proc me, gone;
	struct process_creds c;
	pid_t child;

	cr_assert_eq(lineage_of(getpid(), &me, 1), 1);
	cr_assert_eq(process_creds_of(me, &c), 0);
	cr_assert_eq(c.ruid, getuid());
	cr_assert_eq(c.euid, geteuid());
	if (geteuid() == 0)
		cr_assert(c.cap_kill, "root, in its own user namespace");
	me.start++;
	cr_assert_eq(process_creds_of(me, &c), -ESRCH,
		     "another process of the same pid");

	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		pause();
		_exit(0);
	}
	cr_assert_eq(lineage_of(child, &gone, 1), 1);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	cr_assert_eq(process_creds_of(gone, &c), -ESRCH);
}

Test(creds, a_group_s_members_are_its_processes_alone)
{
	pid_t *members;
	size_t n, found = 0;
	pid_t child = fork();

	cr_assert_geq(child, 0);
	if (child == 0) {
		setpgid(0, 0);
		pause();
		_exit(0);
	}
	cr_assert_eq(setpgid(child, child) == 0 || errno == EACCES, 1);
	cr_assert_eq(process_group_members(child, &members, &n), 0);
	cr_assert_eq(n, 1, "a new group of one");
	cr_assert_eq(members[0], child);
	free(members);

	cr_assert_eq(process_group_members(getpgrp(), &members, &n), 0);
	for (size_t i = 0; i < n; i++) {
		cr_assert_neq(members[i], child, "the child left our group");
		found += members[i] == getpid();
	}
	cr_assert_eq(found, 1, "this process is in its own group");
	free(members);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}
