/*
 * process.h - the calling process as /proc tells it: what the daemon
 * knows of the process behind a FUSE request beyond its pid.
 */
#ifndef ZKL_PROCESS_H
#define ZKL_PROCESS_H

#include <stddef.h>
#include <sys/types.h>
#include <stdint.h>

/*
 * Read what /proc says of a thread (the request's pid is the
 * asking thread's id).
 */

/* Read /proc/<tid>/<name> (its first size - 1 bytes) into buf, with a NUL
 * after it.  Returns the length read, or -errno (-ENOENT: no such thread;
 * -EACCES: not ours to read).  Any thread. */
ssize_t procfile_read(pid_t tid, const char *name, char *buf, size_t size);
/* The mask on the line `key` ("\nSigPnd:", "\nCapEff:") of a status
 * text, in hexadecimal, into *out.  Returns 0, or -EINVAL if the line is
 * missing or malformed. */
int procfile_status_mask(const char *status, const char *key, uint64_t *out);

/*
 * A process and its ancestors, as /proc tells them: who
 * counts as the holder of a lock under -o reentrant (reentrant.h).
 *
 * A process is its pid and its start time (field 22 of /proc/<pid>/stat,
 * in clock ticks since boot): a pid reused by another process since does
 * not match.
 */

/* Deeper process trees are cut there: a shell's scripts nest a few deep. */
#define LINEAGE_MAX 32

struct lineage_proc {
	pid_t pid; /* 0: none */
	unsigned long long start;
};

/* The Tgid and PPid lines of a /proc/<pid>/status text.  Returns 0, or
 * -EINVAL if either is missing or malformed. */
int lineage_parse(const char *status, pid_t *tgid, pid_t *ppid);

/* Numeric field `want` (4 or later, counted as proc(5) does) of a
 * /proc/<pid>/stat text into *out.  Returns 0 or -EINVAL. */
int procstat_field(const char *stat, int want, unsigned long long *out);

/* The parent (field 4) and start time (field 22) of a /proc/<pid>/stat
 * text, whose command (field 2) may hold spaces and parentheses.
 * Returns 0 or -EINVAL. */
int lineage_parse_stat(const char *stat, pid_t *ppid,
		       unsigned long long *start);

/* The process of thread tid, then its parent, and so on, nearest first,
 * up to pid 1 included or the first process /proc no longer shows, at
 * most max of them, into out.  Returns how many (0: tid is gone). */
size_t lineage_of(pid_t tid, struct lineage_proc *out, size_t max);

/* Is process p among lineage[0..n) (pid and start time alike)? */
int lineage_has(const struct lineage_proc *lineage, size_t n,
		struct lineage_proc p);

/* Does process p still run (not another one with its pid)? */
int lineage_still_runs(struct lineage_proc p);

/* Has process p (still running: same start time) a descriptor open on
 * one of the inodes inos[0..n) (as /proc/<pid>/fdinfo shows them)? */
int lineage_has_open(struct lineage_proc p, const uint64_t *inos, size_t n);

/* How many threads process p has (field 20 of its stat), or -ESRCH if it
 * no longer runs (or its pid is another's). */
int process_threads(struct lineage_proc p);

/* Who has each of the inodes inos[0..n) of the filesystem mounted at
 * `mountpoint` open, over every process /proc shows (each descriptor
 * looked at with statx, which follows it to its file whatever namespace
 * opened it; every thread's table where they differ): users[i] is the pid
 * of the one process that has a descriptor on inos[i], 0 if none has, -1
 * if several have.  Where the mount's device cannot be told (mountpoint
 * NULL, not found), every device's inode numbers count.  The processes
 * whose descriptors the kernel will not show (a more privileged one, of
 * another user namespace or a container's host) are listed in
 * hidden[0..*nhidden): the caller decides what they may hold.  Returns
 * 0, or -errno with every users[i] -1 (nothing known: /proc cannot be
 * listed, more than max_hidden hidden).  O(descriptors on the host).  Any
 * thread, no lock held (the daemon's own descriptors are not counted). */
int process_fd_users(const char *mountpoint, const uint64_t *inos, size_t n,
		     pid_t *users, pid_t *hidden, size_t *nhidden,
		     size_t max_hidden);

/* Is process q p, or a descendant of p (its parents, as /proc says now)? */
int process_descends_from(pid_t q, pid_t p);

/*
 * Whom a process may signal: what kill(2) looks at of the
 * sender.  It may signal a process whose real or saved uid is its real or
 * effective uid, and any process at all with CAP_KILL in the target's
 * user namespace (or an ancestor of it).  Uids are as this process's user
 * namespace maps them.
 */
struct process_creds {
	uid_t ruid, euid;
	int cap_kill; /* CAP_KILL in effect, and in our user namespace */
};

/* The Uid line (real, effective, saved, filesystem) and the CAP_KILL bit
 * of the CapEff line of a /proc/<pid>/status text, into c (cap_kill as
 * the text says: its namespace is not in it).  Returns 0, or -EINVAL if
 * either line is missing or malformed. */
int process_creds_parse(const char *status, struct process_creds *c);

/* The credentials of process p now, if it still runs (same start time):
 * its CAP_KILL counts only if p is in our user namespace (one that we
 * cannot tell does not count).  Returns 0, -ESRCH if p is gone (or its
 * pid another's), or -errno of reading /proc.  Any thread. */
int process_creds_of(struct lineage_proc p, struct process_creds *c);

/* The processes of process group pgid, as /proc shows them now: their
 * pids into a new array *out (the caller frees it; NULL when none) and
 * their number into *n.  Returns 0, or -errno (nothing then).  O(the
 * host's processes).  Any thread. */
int process_group_members(pid_t pgid, pid_t **out, size_t *n);

/*
 * Tell the kernel's own open of a lock file from a
 * program's.
 *
 * To answer an ioctl about a file's attributes (FS_IOC_GETFLAGS for
 * lsattr, FS_IOC_FSGETXATTR, chattr), the kernel opens the file itself,
 * with flags exactly O_RDONLY, while the calling thread waits inside
 * ioctl(2), and closes it again.  Such an open must take no lock: the
 * caller may hold this very lock through the descriptor it asks about, and
 * would wait for itself.  A program's open can carry O_RDONLY alone too
 * (a 32-bit program, whose open adds no O_LARGEFILE; any program on a
 * 32-bit kernel), so the flags do not tell; what the requesting thread is
 * doing does: its system call, as /proc/<tid>/syscall shows it, is an
 * ioctl only for the kernel's open.
 */

/* The system call number at the head of a /proc/<tid>/syscall text ("16
 * 0x3 ..."), or -1 for a thread in none ("running", "-1 ...") or text
 * that is not such a line. */
long kernelopen_syscall_of(const char *text);

/* Is nr an ioctl, natively or through the 32-bit compat gate? */
int kernelopen_is_ioctl(long nr);

/* Is the thread tid (a FUSE request's pid) inside ioctl(2)?  0 when it
 * cannot be told (no such thread, /proc not readable for it): then the
 * open is taken for a program's, which queues for its lock -- the choice
 * that never lets a program in without the lock.  Any thread. */
int kernelopen_in_ioctl(pid_t tid);

#endif
