/*
 * lineage.h - a process and its ancestors, as /proc tells them: who
 * counts as the holder of a lock under -o reentrant (reentrant.h).
 *
 * A process is its pid and its start time (field 22 of /proc/<pid>/stat,
 * in clock ticks since boot): a pid reused by another process since does
 * not match.
 */
#ifndef ZKL_LINEAGE_H
#define ZKL_LINEAGE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Deeper process trees are cut there: a shell's scripts nest a few deep. */
#define LINEAGE_MAX 32

struct lineage_proc {
	pid_t pid; /* 0: none */
	unsigned long long start;
};

/* The Tgid and PPid lines of a /proc/<pid>/status text.  Returns 0, or
 * -EINVAL if either is missing or malformed. */
int lineage_parse(const char *status, pid_t *tgid, pid_t *ppid);

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

#endif
