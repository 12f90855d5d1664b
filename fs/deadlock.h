/*
 * deadlock.h - EDEADLK for an fcntl wait that would close a cycle, as
 * fcntl(2) answers locally: process A holds a lock and waits for B's,
 * B asks for A's.  Only what this mount knows takes part: the POSIX
 * (and OFD) lock owners of its own fcntl locks and parked F_SETLKW
 * requests, on single resources.  A cycle through another host, through
 * flock or open locks, or through a list directory's multi-lock is not
 * seen (doc/locks.md says so).
 */
#ifndef ZKL_DEADLOCK_H
#define ZKL_DEADLOCK_H

#include "fs.h"

#include <stdint.h>

#include "names.h"
#include "process.h"

/* The walk gives up (no EDEADLK) past this many distinct owners reached
 * from the asker, a cycle or not: Linux gives up after 10 links. */
#define DEADLOCK_MAX_OWNERS 256

struct lockfile;

/* Would lock owner `owner`, waiting for a lock of `mode` through lock file
 * lf, wait for itself: is a holder of that resource this mount's lock
 * owner that waits, through such a chain, for a lock `owner` holds?
 * fs->lock held. */
int deadlock_would_close_locked(const struct lockfile *lf, uint64_t owner,
				enum zkl_mode mode);

/* Does process p hold a lock through this mount (an open lock file's, a
 * flock, an fcntl lock)?  Only then can its wait close a cycle of waits
 * across hosts: its request is flagged LOCKREQ_MAY_DEADLOCK
 * (recipes/waitgraph.h).  O(locks held).  fs->lock held. */
int deadlock_owner_holds_locked(struct zkl_fs *fs, struct lineage_proc p);

/* Under -o reentrant a process tree is one owner: of the ancestors
 * lineage[1..n) of the asking process lineage[0] (nearest first), those
 * that hold a lock through this mount and wait for it, each through the
 * processes between, all blocked waiting for their child
 * (lineage_waits_for: a script that runs a tool, flock(1) its command;
 * not a job run in the background).  At most max of them into out.
 * Returns how many.  Reads /proc: without fs->lock. */
size_t deadlock_tree_of(struct zkl_fs *fs, const struct lineage_proc *lineage,
			size_t n, struct lineage_proc *out, size_t max);

#endif
