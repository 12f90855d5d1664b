/*
 * waiter.h - the parked requests (waiter.c): the park, the grant and the
 * signals, answering with an error, cancelling, the waits kept for a
 * restart, the signal poller.  Nobody else includes it.
 *
 * A wait interrupted by a signal the process catches (SIGALRM of a timer
 * with a handler, a profiler's SIGPROF) is answered EINTR at once, for the
 * handler to run; but programs, runtimes and SA_RESTART ask again at once,
 * and a wait that queued anew would go to the back, and behind a periodic
 * timer never reach the front.  So its lock request is kept, in place, for
 * WAITER_KEEP_MS: the same thread asking the same lock of the same file
 * again takes it back (and the lock, if granted meanwhile); else it is
 * given up.  A grant that comes meanwhile is kept WAITER_KEEP_GRANTED_MS
 * at most: a call that does not come again (a timeout's handler) holds
 * the others up no longer than that.
 */
#ifndef ZKL_WAITER_H
#define ZKL_WAITER_H

#include "lockfile.h"

#define WAITER_KEEP_MS 1000
/* A try, and a failure waiting for its node to go, are answered this long
 * after at the latest, whatever ZooKeeper does (their nodes go once it
 * answers). */
#define WAITER_ANSWER_MS 1000
#define WAITER_KEEP_GRANTED_MS 100

/* Drop a reference; the last frees w (its lock request given away). */
void waiter_put(struct waiter *w);
/* Park w (fs->waiters), unless it is an fcntl wait (w->owner, not a try)
 * that would close a wait-for cycle (deadlock.h): then w stays OFF.  The
 * check and the listing at once: of two owners closing a cycle together,
 * the second sees the first.  Returns 0 or -EDEADLK. */
int waiter_list_unless_deadlock(struct waiter *w, enum zkl_mode mode);
/* The check alone; fs->lock held. */
int waiter_would_deadlock_locked(const struct waiter *w, enum zkl_mode mode);
/* Answer with err (0: success, answered from its holder's lock; else
 * -errno) once the request's node is gone (or at WAITER_ANSWER_MS).  The
 * caller owns the reply, and gives its reference with it. */
void waiter_fail(struct waiter *w, int err);
/* The waiters past WAITER_ANSWER_MS: failures whose node is not gone yet
 * (their answer claimed: ANSWERED) and tries not answered (cancelled:
 * OFF, to be answered EAGAIN); at most max.  fs->lock held.
 * waiter_answer_late answers each, without the lock. */
size_t waiter_take_late_locked(struct zkl_fs *fs, struct waiter **late,
			       size_t max);
void waiter_answer_late(struct waiter *w);
/* Cancel w's wait if it is still parked and its lock request agrees.
 * Returns 1 if the caller won and must answer (w is unlisted). */
int waiter_cancel(struct waiter *w);

/* What a request of w's holder gets from the lock that holder holds: 1
 * (answered: it covers w's mode), -EDEADLK (fcntl: it does not), or 0: w
 * waits (the holder holds nothing, or flock converts: its lock is taken
 * away into *dropped, for the caller to release once fs->lock is
 * dropped).  fs->lock held. */
int waiter_holder_answer_locked(const struct waiter *w,
				struct zkl_lockreq **dropped);
/* w is answered from its holder's lock: `answer`, what
 * waiter_holder_answer_locked said (1 or -EDEADLK), is final (w is off
 * every list, its request given up).  Returns the answer to give, 0 or
 * -errno, having recorded a grant with the holder's (waiter_ops'
 * holder_answered_locked).  fs->lock held. */
int waiter_holder_answered_locked(struct waiter *w, int answer);
/* w's grant gave its holder a lock: answer the other started requests of
 * that holder from it. */
void waiter_answer_same_holder(struct waiter *w);

/* Keep a parked, started w (KEPT, with a reference of its own) until
 * WAITER_KEEP_MS from now.  fs->lock held. */
void waiter_keep_locked(struct waiter *w);
/* A kept wait was granted: it ends WAITER_KEEP_GRANTED_MS from now at the
 * latest.  fs->lock held. */
void waiter_keep_granted_locked(struct waiter *w);
/* The kept wait that `asking` (a new call, not yet started) takes back:
 * same thread, file, holder and mode; ADOPTING now, or NULL.  A downgrade
 * (asking->in_place) takes none back: such a kept wait is the same call
 * made before its holder held the write lock, queued behind others,
 * while a downgrade waits for nobody and must not let the write lock go
 * first; it goes onto `ending` instead, for waiter_end_kept_all. */
struct waiter *waiter_take_kept_locked(struct zkl_fs *fs,
				       const struct waiter *asking,
				       enum zkl_mode mode,
				       struct zkl_link *ending);
/* Kept waits past their time (every one, if all) that can end now, moved
 * to `ending`; one whose answer is on its way is marked to end with it. */
void waiter_take_expired_locked(struct zkl_fs *fs, int all,
				struct zkl_link *ending);
/* Give a kept wait up: its lock request released, its reference dropped. */
void waiter_end_kept(struct waiter *w);
/* ... each of a list from waiter_take_expired_locked. */
void waiter_end_kept_all(struct zkl_link *ending);

#endif
