/*
 * waiter_base.c - how a parked request (waiter.c) is answered with an
 * error or cancelled, and the list of waits kept for a restart (see
 * waiter.h).  It calls nothing of waiter.c or waiter_poll.c.
 */
#include "waiter.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "deadline.h"
#include "deadlock.h"
#include "kernelopen.h"
#include "lineage.h"
#include "log.h"
#include "procfile.h"

#include <sys/syscall.h>

void waiter_put(struct waiter *w)
{
	if (atomic_fetch_sub(&w->refs, 1) != 1)
		return;
	assert(!w->lr); /* adopted by the grant, or released by the failure */
	lockfile_put(w->lf);
	free(w);
}

/* Take w out of fs->waiters (and of the signal poller's sight).
 * fs->lock held. */
void waiter_unlist_locked(struct zkl_fs *fs, struct waiter *w)
{
	ZKL_ASSERT_HELD(&fs->lock);
	assert(w->parked);
	list_del(&w->link);
	w->parked = 0;
	if (w->watch_signals) {
		w->watch_signals = 0;
		assert(fs->signal_watched > 0);
		fs->signal_watched--;
	}
	if (w->is_try) {
		w->is_try = 0;
		assert(fs->tries > 0);
		fs->tries--;
	}
}

void waiter_list_locked(struct zkl_fs *fs, struct waiter *w)
{
	ZKL_ASSERT_HELD(&fs->lock);
	assert(!w->parked && !list_linked(&w->link));
	list_add_tail(&fs->waiters, &w->link);
	w->parked = 1;
	if (w->flags & LOCKREQ_TRY) {
		/* Answered in WAITER_ANSWER_MS, whatever ZooKeeper does. */
		w->is_try = 1;
		w->answer_by = deadline_after_ms(WAITER_ANSWER_MS);
		fs->tries++;
		pthread_cond_signal(&fs->signal_poll);
	}
}

int waiter_would_deadlock_locked(const struct waiter *w, enum zkl_mode mode)
{
	return w->owner && !(w->flags & LOCKREQ_TRY) &&
	       deadlock_would_close_locked(w->fs, w->lf->ino, w->owner, mode);
}

int waiter_list_unless_deadlock(struct waiter *w, enum zkl_mode mode)
{
	struct zkl_fs *fs = w->fs;
	int cycle;

	pthread_mutex_lock(&fs->lock);
	cycle = waiter_would_deadlock_locked(w, mode);
	if (!cycle)
		waiter_list_locked(fs, w);
	pthread_mutex_unlock(&fs->lock);
	if (cycle)
		log_msg(LOG_DEBUG,
			"pid %d's fcntl wait would close a cycle: EDEADLK",
			(int)w->tid);
	return cycle ? EDEADLK : 0;
}

void waiter_unlist(struct waiter *w)
{
	struct zkl_fs *fs = w->fs;

	pthread_mutex_lock(&fs->lock);
	if (w->parked)
		waiter_unlist_locked(fs, w);
	pthread_mutex_unlock(&fs->lock);
}

static void waiter_reply_failure(struct waiter *w)
{
	log_msg(LOG_DEBUG, "%s by pid %d failed: %s", w->ops->what, (int)w->tid,
		strerror(w->fail_err));
	if (w->ops->failed)
		w->ops->failed(w, w->fail_err);
	else
		fs_reply_err(w->req, w->fail_err);
	waiter_put(w); /* the reply's */
}

/* Whoever claims a failing waiter's answer gives it: the node's 'gone',
 * or the poller at the deadline.  fs->lock held. */
static int waiter_claim_reply_locked(struct waiter *w)
{
	int mine = !w->replied;

	w->replied = 1;
	if (list_linked(&w->link))
		list_del(&w->link); /* off fs->failing */
	return mine;
}

static void waiter_node_gone(void *arg)
{
	struct waiter *w = arg;
	struct zkl_fs *fs = w->fs;
	int mine;

	pthread_mutex_lock(&fs->lock);
	mine = waiter_claim_reply_locked(w);
	pthread_mutex_unlock(&fs->lock);
	if (mine)
		waiter_reply_failure(w);
	waiter_put(w); /* the node's 'gone' */
}

void waiter_fail(struct waiter *w, int err)
{
	struct zkl_fs *fs = w->fs;
	struct zkl_lockreq *lr = w->lr;

	w->fail_err = err;
	w->lr = NULL;
	pthread_mutex_lock(&fs->lock);
	if (w->parked)
		waiter_unlist_locked(fs, w);
	if (lr) {
		/* Answered when the node is gone, or at the deadline if
		 * ZooKeeper does not say (a server that hangs without closing
		 * the connection). */
		w->answer_by = deadline_after_ms(WAITER_ANSWER_MS);
		list_add_tail(&fs->failing, &w->link);
		atomic_fetch_add(&w->refs, 1); /* the node's 'gone' */
		pthread_cond_signal(&fs->signal_poll);
	}
	pthread_mutex_unlock(&fs->lock);
	if (lr)
		lockreq_release_then(lr, waiter_node_gone, w);
	else
		waiter_reply_failure(w);
}

size_t waiter_take_late_locked(struct zkl_fs *fs, struct waiter **late,
			       int *errs, size_t max)
{
	size_t n = 0;

	ZKL_ASSERT_HELD(&fs->lock);
	for (struct zkl_link *l = fs->failing.next, *next;
	     l != &fs->failing && n < max; l = next) {
		struct waiter *w = ZKL_CONTAINER_OF(l, struct waiter, link);
		next = l->next;
		if (!deadline_reached(&w->answer_by) ||
		    !waiter_claim_reply_locked(w))
			continue;
		atomic_fetch_add(&w->refs, 1); /* alive until answered */
		errs[n] = w->fail_err;
		late[n++] = w;
	}
	for (struct zkl_link *l = fs->waiters.next, *next;
	     fs->tries > 0 && l != &fs->waiters && n < max; l = next) {
		struct waiter *w = ZKL_CONTAINER_OF(l, struct waiter, link);
		next = l->next;
		if (!w->is_try || !deadline_reached(&w->answer_by) ||
		    lockreq_cancel(w->lr) != 0)
			continue;
		/* The cancel's winner answers: the reply's reference. */
		waiter_unlist_locked(fs, w);
		errs[n] = -EAGAIN;
		late[n++] = w;
	}
	return n;
}

void waiter_answer_late(struct waiter *w, int err)
{
	if (err == -EAGAIN) {
		/* A try: its request goes, its node once ZooKeeper answers. */
		struct zkl_lockreq *lr = w->lr;
		w->lr = NULL;
		lockreq_release(lr);
		fuse_req_interrupt_func(w->req, NULL, NULL);
		w->fail_err = EAGAIN;
	}
	log_msg(LOG_DEBUG,
		"pid %d's %s: no word from ZooKeeper, answered without it",
		(int)w->tid, w->ops->what);
	waiter_reply_failure(w); /* drops the reply's reference */
	if (err != -EAGAIN)
		waiter_put(w); /* the one waiter_take_late_locked took */
}

/* Cancel w's wait if it is still parked and its lock request agrees.
 * Returns 1 if the caller won and must answer (w is unlisted). */
int waiter_cancel(struct waiter *w)
{
	struct zkl_fs *fs = w->fs;
	int won;

	pthread_mutex_lock(&fs->lock);
	won = w->parked && lockreq_cancel(w->lr) == 0;
	if (won)
		waiter_unlist_locked(fs, w);
	pthread_mutex_unlock(&fs->lock);
	return won;
}

/* ---- waits kept for a restart ------------------------------------------- */

void waiter_keep_locked(struct waiter *w)
{
	struct zkl_fs *fs = w->fs;

	ZKL_ASSERT_HELD(&fs->lock);
	waiter_unlist_locked(fs, w);
	w->kept = 1;
	w->keep_until = deadline_after_ms(WAITER_KEEP_MS);
	atomic_fetch_add(&w->refs, 1); /* the kept list's */
	list_add_tail(&fs->kept, &w->link);
	pthread_cond_signal(&fs->signal_poll); /* it ends them */
}

void waiter_keep_granted_locked(struct waiter *w)
{
	struct timespec until = deadline_after_ms(WAITER_KEEP_GRANTED_MS);

	ZKL_ASSERT_HELD(&w->fs->lock);
	if (deadline_before(&until, &w->keep_until))
		w->keep_until = until;
}

struct waiter *waiter_take_kept_locked(struct zkl_fs *fs,
				       const struct waiter *asking,
				       enum zkl_mode mode)
{
	ZKL_ASSERT_HELD(&fs->lock);
	for (struct zkl_link *l = fs->kept.next; l != &fs->kept; l = l->next) {
		struct waiter *w = ZKL_CONTAINER_OF(l, struct waiter, link);
		if (w->ops != asking->ops || w->tid != asking->tid ||
		    w->lf->ino != asking->lf->ino ||
		    w->owner != asking->owner || w->expired ||
		    w->flags != asking->flags || lockreq_mode(w->lr) != mode)
			continue;
		/* flock's holder is the open file description; an open's is
		 * the new one. */
		if (w->ops->holder_lock_locked && !w->owner &&
		    w->lf != asking->lf)
			continue;
		list_del(&w->link);
		return w;
	}
	return NULL;
}

/* Is nr a call that takes a lock here (the call a restart makes again),
 * or a close or an exit (whose FLUSH ends the kept wait itself, and
 * answers once its node is gone: lockfile_flush)?  A 32-bit program's
 * calls have other numbers: it loses its place, never keeps a node. */
static int waiter_is_lock_call(long nr)
{
	return nr == SYS_flock || nr == SYS_fcntl || nr == SYS_openat ||
	       nr == SYS_close || nr == SYS_exit || nr == SYS_exit_group ||
#ifdef SYS_open
	       nr == SYS_open ||
#endif
#ifdef SYS_creat
	       nr == SYS_creat ||
#endif
#ifdef SYS_openat2
	       nr == SYS_openat2 ||
#endif
	       0;
}

/* Has the thread of a kept wait gone on without asking again?  Its call
 * returned EINTR to run the handler; a call that restarts (SA_RESTART, a
 * runtime's loop) is back in a lock call at once, and meanwhile the thread
 * runs (the handler).  Blocked in any other call, or gone, it went on: its
 * place must not stay in the queue while it does (a timeout's handler:
 * flock -w).  Reads /proc: kept waits only. */
static int waiter_went_on(const struct waiter *w)
{
	char text[512];
	const char *state;
	ssize_t n = procfile_read(w->tid, "syscall", text, sizeof(text));
	long nr;

	if (n <= 0) /* gone; else we may not look, and keep it */
		return n == -ENOENT || n == -ESRCH;
	nr = kernelopen_syscall_of(text);
	if (nr >= 0)
		return !waiter_is_lock_call(nr);
	/* Running, or stopped (it keeps its place); or dead, not reaped
	 * yet: its state, after the command's ')', tells. */
	if (procfile_read(w->tid, "stat", text, sizeof(text)) <= 0)
		return 1;
	state = strrchr(text, ')');
	return !state || state[1] != ' ' || state[2] == 'Z' || state[2] == 'X';
}

/* Take kept wait w (off fs->kept) to end: onto `ending`, or marked to end
 * with its answer, which is on its way. */
static void waiter_take_kept_one_locked(struct waiter *w,
					struct zkl_link *ending)
{
	list_del(&w->link);
	/* Answered, or cancelled now: no answer is on its way. */
	if (w->kept_answered || lockreq_cancel(w->lr) == 0)
		list_add_tail(ending, &w->link);
	else
		w->expired = 1; /* its answer, on its way, ends it */
}

void waiter_take_expired_locked(struct zkl_fs *fs, int all,
				struct zkl_link *ending)
{
	ZKL_ASSERT_HELD(&fs->lock);
	for (struct zkl_link *l = fs->kept.next, *next; l != &fs->kept;
	     l = next) {
		struct waiter *w = ZKL_CONTAINER_OF(l, struct waiter, link);
		next = l->next;
		if (all || deadline_reached(&w->keep_until) ||
		    waiter_went_on(w))
			waiter_take_kept_one_locked(w, ending);
	}
}

void waiter_take_kept_of_locked(struct zkl_fs *fs, const struct lockfile *lf,
				pid_t tid, struct zkl_link *ending)
{
	struct lineage_proc closing, waiting;

	ZKL_ASSERT_HELD(&fs->lock);
	if (list_empty(&fs->kept) || lineage_of(tid, &closing, 1) == 0)
		return;
	for (struct zkl_link *l = fs->kept.next, *next; l != &fs->kept;
	     l = next) {
		struct waiter *w = ZKL_CONTAINER_OF(l, struct waiter, link);
		next = l->next;
		if (w->lf != lf)
			continue;
		/* Its thread gone, or of the process that closes. */
		if (lineage_of(w->tid, &waiting, 1) == 0 ||
		    waiting.pid == closing.pid)
			waiter_take_kept_one_locked(w, ending);
	}
}

static void waiter_end_kept_then(struct waiter *w, struct unlock *u)
{
	struct zkl_lockreq *lr = w->lr;

	log_msg(LOG_DEBUG, "pid %d did not ask again: its %s wait is given up",
		(int)w->tid, w->ops->what);
	w->lr = NULL;
	if (u)
		unlock_add(u, lr);
	else
		lockreq_release(lr);
	waiter_put(w); /* the kept list's */
}

void waiter_end_kept(struct waiter *w)
{
	waiter_end_kept_then(w, NULL);
}

void waiter_end_kept_all_then(struct zkl_link *ending, struct unlock *u)
{
	while (!list_empty(ending)) {
		struct waiter *w =
			ZKL_CONTAINER_OF(ending->next, struct waiter, link);
		list_del(&w->link);
		waiter_end_kept_then(w, u);
	}
}

void waiter_end_kept_all(struct zkl_link *ending)
{
	waiter_end_kept_all_then(ending, NULL);
}
