/*
 * lineage.h - a process and its ancestors, as /proc tells them: who
 * counts as the holder of a lock under -o reentrant (reentrant.h).
 */
#ifndef ZKL_LINEAGE_H
#define ZKL_LINEAGE_H

#include <stddef.h>
#include <sys/types.h>

/* Deeper process trees are cut there: a shell's scripts nest a few deep. */
#define LINEAGE_MAX 32

/* The Tgid and PPid lines of a /proc/<pid>/status text.  Returns 0, or
 * -EINVAL if either is missing or malformed. */
int lineage_parse(const char *status, pid_t *tgid, pid_t *ppid);

/* The process of thread tid, then its parent, and so on, nearest first,
 * up to (not including) pid 1 or the first process /proc no longer shows,
 * at most max of them, into out.  Returns how many (0: tid is gone). */
size_t lineage_of(pid_t tid, pid_t *out, size_t max);

#endif
