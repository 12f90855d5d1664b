/*
 * reentrant.h - -o reentrant: a lock asked by a process that holds it
 * already, or whose ancestor does, through another open file description
 * or as another fcntl lock owner of this mount, is that lock again: one
 * more owner of the same request (lockreq_share), no new node.
 *
 * Why the process tree: a shell script holding `exec 9>MOUNT/db/write`
 * that runs a command doing `flock MOUNT/db/lock ...` would otherwise
 * wait for itself for ever.  Why only with the option: without it two
 * descriptors exclude each other, as flock(2) says, and a program that
 * relies on that (a lock per worker process, forked from one parent)
 * must not silently share.
 */
#ifndef ZKL_REENTRANT_H
#define ZKL_REENTRANT_H

#include "fs.h"

#include <stddef.h>
#include <sys/types.h>

#include "process.h"
#include "lockreq.h"

/* What a held lock of `held` gives a request of `asked` by its holder's
 * process tree: 1 (taken again: write covers read and write, read covers
 * read), -EDEADLK (write asked over read held: it could never be granted,
 * the holder waiting for itself), or 0 (not this one: a lease). */
int reentrant_verdict(enum zkl_mode held, enum zkl_mode asked);

struct lockfile;

/* The lock a request of `mode` through lock file lf, by a process whose
 * lineage (process.h) is lineage[0..n), takes again: a held write lock of
 * its resource, else a held read lock, taken through any open file
 * description or as an fcntl lock of this mount by one of them that
 * still runs and still has a descriptor of the resource open, into
 * *held (not shared yet: lockreq_share it, under fs->lock).  Returns
 * reentrant_verdict's 1 or -EDEADLK, or 0 if no such lock is held.  A
 * list directory's and a lease file's requests never take a lock again.
 * fs->lock held. */
int reentrant_find_locked(const struct lockfile *lf, enum zkl_mode mode,
			  const struct lineage_proc *lineage, size_t n,
			  struct zkl_lockreq **held);

/* reentrant_find_locked, taking fs->lock, and the lock found shared
 * (lockreq_share) for the caller, who owns that hold then.  Nothing at
 * unmount (0).  Returns 1 (*held shared), -EDEADLK, or 0. */
int reentrant_take(const struct lockfile *lf, enum zkl_mode mode,
		   const struct lineage_proc *lineage, size_t n,
		   struct zkl_lockreq **held);

#endif
