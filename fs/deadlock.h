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

/* Did process p take a lock through this mount that it still holds (an
 * open lock file's, a flock, an fcntl lock)?  Only then can its wait
 * close a cycle of waits across hosts (deadlock_candidate_locked).
 * O(locks held).  fs->lock held. */
int deadlock_owner_holds_locked(struct zkl_fs *fs, struct lineage_proc p);

/*
 * Deadlocks across hosts (recipes/waitgraph.h).  A parked wait that may
 * close a cycle (its process holds a lock through this mount, or it is a
 * multi-lock) is checked once it has lasted -o deadlock_timeout_ms: of
 * the locks this mount holds, those that nothing but the end of this wait
 * can let go are its pins, which lockreq_check_deadlock publishes.  A lock
 * is pinned by a wait when the waiting thread is the one thread of its
 * process and no other process has the lock's file open (fdinfo of every
 * process, one read for the waits due together): then no thread and no
 * other holder of its open file description can close it while the wait
 * lasts (a process blocked in one thread can neither fork, nor make a
 * thread, nor pass a descriptor).  doc/design.md has why.
 */
struct waiter;

/* Is w (about to be PARKED, asking for `mode`) worth checking?  A try, a
 * lease, or a process that holds nothing here (and no multi-lock) is
 * not.  fs->lock held. */
int deadlock_candidate_locked(const struct waiter *w, enum zkl_mode mode);

/* w became PARKED: a candidate is due for its check at the timeout.  w
 * leaves PARKED: it is due no more; if its thread runs again meanwhile
 * (runs_again: told EINTR, its wait kept), what it published goes.  From
 * waiter_move_locked, fs->lock held. */
void deadlock_parked_locked(struct waiter *w);
void deadlock_unparked_locked(struct waiter *w, int runs_again);

/* The thread that checks the waits due; stopped once fs->stopping is
 * set.  Start returns 0 or -errno. */
int deadlock_checker_start(struct zkl_fs *fs);
void deadlock_checker_stop(struct zkl_fs *fs);

#endif
