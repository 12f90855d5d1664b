/*
 * waiter.c - parked lock requests (see lockfile.h).
 *
 * A waiter has two references while its handler runs: the handler's,
 * dropped when waiter_park returns, and the reply's, owned by whoever
 * answers.  Exactly one of grant (waiter_done), interrupt, the signal
 * poller and unmount answers: the one for which lockreq says so.  The
 * others may only call lockreq_cancel, and only under fs->lock while the
 * waiter is listed in fs->waiters; whoever answers unlists it first, so
 * its lock request is alive for every cancel.
 *
 * A failure is answered once the request's node is gone for every session
 * (lockreq_release_then): an open that failed with EAGAIN or EINTR leaves
 * nothing another host could still see.
 */
#include "lockfile.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "log.h"
#include "sigpend.h"

/* The waiter whose interrupt callback this thread is registering: a
 * callback libfuse runs inside that registration only marks the waiter. */
static __thread struct waiter *waiter_registering;

static void waiter_put(struct waiter *w)
{
	if (atomic_fetch_sub(&w->refs, 1) != 1)
		return;
	assert(!w->lr); /* adopted by the grant, or released by the failure */
	lockfile_put(w->lf);
	free(w);
}

/* Take w out of fs->waiters (and of the signal poller's sight).
 * fs->lock held. */
static void waiter_unlist_locked(struct zkl_fs *fs, struct waiter *w)
{
	ZKL_ASSERT_HELD(&fs->lock);
	list_del(&w->link);
	if (w->watch_signals) {
		w->watch_signals = 0;
		assert(fs->signal_watched > 0);
		fs->signal_watched--;
	}
}

static void waiter_unlist(struct waiter *w)
{
	struct zkl_fs *fs = w->fs;

	pthread_mutex_lock(&fs->lock);
	if (list_linked(&w->link))
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

static void waiter_node_gone(void *arg)
{
	waiter_reply_failure(arg);
}

/* Answer with an error once the request's node is gone.  The caller owns
 * the reply, and gives its reference with it. */
static void waiter_fail(struct waiter *w, int err)
{
	struct zkl_lockreq *lr = w->lr;

	waiter_unlist(w);
	w->fail_err = err;
	w->lr = NULL;
	if (lr)
		lockreq_release_then(lr, waiter_node_gone, w);
	else
		waiter_reply_failure(w);
}

/* Cancel w's wait if it is still parked and its lock request agrees.
 * Returns 1 if the caller won and must answer (w is unlisted). */
static int waiter_cancel(struct waiter *w)
{
	struct zkl_fs *fs = w->fs;
	int won;

	pthread_mutex_lock(&fs->lock);
	won = list_linked(&w->link) && lockreq_cancel(w->lr) == 0;
	if (won)
		waiter_unlist_locked(fs, w);
	pthread_mutex_unlock(&fs->lock);
	return won;
}

/* What a request of w's holder gets from the lock that holder holds:
 * 0 (it covers w's mode), EDEADLK (it does not: waiting would be for
 * ourselves), or -1 (the holder holds nothing: w waits).  fs->lock held. */
static int waiter_answer_from_holder_locked(const struct waiter *w,
					    enum zkl_mode mode)
{
	struct zkl_lockreq *held;

	ZKL_ASSERT_HELD(&w->fs->lock);
	if (!w->ops->holder_lock_locked)
		return -1;
	held = w->ops->holder_lock_locked(w);
	if (!held || !lockreq_holds(held))
		return -1;
	return lockfile_covers(held, mode) ? 0 : EDEADLK;
}

/* w's grant gave its holder a lock: the other requests of that holder
 * waiting meanwhile (two `flock 9` of one inherited descriptor, two
 * threads' fcntl) are answered from it, as local locks are, instead of
 * waiting behind it for ever. */
static void waiter_answer_same_holder(struct waiter *w)
{
	struct zkl_fs *fs = w->fs;
	struct zkl_link answered, *l, *next;

	if (!w->ops->holder_lock_locked)
		return;
	list_init(&answered);
	pthread_mutex_lock(&fs->lock);
	for (l = fs->waiters.next; l != &fs->waiters; l = next) {
		struct waiter *o = ZKL_CONTAINER_OF(l, struct waiter, link);
		next = l->next;
		if (o->ops != w->ops || o->lf->ino != w->lf->ino ||
		    o->owner != w->owner || (!o->owner && o->lf != w->lf))
			continue;
		o->fail_err = waiter_answer_from_holder_locked(
			o, lockreq_mode(o->lr));
		if (o->fail_err >= 0 && lockreq_cancel(o->lr) == 0) {
			waiter_unlist_locked(fs, o);
			list_add_tail(&answered, &o->link);
		}
	}
	pthread_mutex_unlock(&fs->lock);
	while (!list_empty(&answered)) {
		struct waiter *o =
			ZKL_CONTAINER_OF(answered.next, struct waiter, link);
		list_del(&o->link);
		fuse_req_interrupt_func(o->req, NULL, NULL);
		log_msg(LOG_DEBUG,
			"pid %d's %s answered from its holder's lock",
			(int)o->tid, o->ops->what);
		waiter_fail(o, o->fail_err); /* its node goes first */
	}
}

/* lockreq's answer, on the completion thread. */
static void waiter_done(struct zkl_lockreq *lr, int err, void *arg)
{
	struct waiter *w = arg;
	struct zkl_fs *fs = w->fs;
	char zpath[NAMES_MAX_NODE_PATH + 1];
	const char *mode;

	/* Waits for an interrupt callback running now; none runs after. */
	fuse_req_interrupt_func(w->req, NULL, NULL);
	/* A grant either fails here, or is counted until it has handed its
	 * lock to a lock file, where the unmount finds it: none slips
	 * between the unmount's two steps (lockfile_shutdown_all). */
	pthread_mutex_lock(&fs->lock);
	if (err == 0 && fs->stopping)
		err = -EIO;
	else if (err == 0)
		fs->granting++;
	pthread_mutex_unlock(&fs->lock);
	if (err != 0)
		return waiter_fail(w, -err);
	/* Both read before the reply: the holder may release lr at once,
	 * and close the file, and the kernel forget its inode. */
	mode = names_mode_str(lockreq_mode(lr));
	lockfile_zpath(fs, w->lf->ino, zpath);
	waiter_unlist(w);
	w->lr = NULL;
	w->ops->granted(w, lr);
	waiter_answer_same_holder(w);
	pthread_mutex_lock(&fs->lock);
	if (--fs->granting == 0)
		pthread_cond_broadcast(&fs->grants_done);
	pthread_mutex_unlock(&fs->lock);
	log_msg(LOG_INFO, "granted %s lock on %s to pid %d (%s)", mode, zpath,
		(int)w->tid, w->ops->what);
	waiter_put(w);
}

/* A signal reached the waiting thread: cancel the wait if the signal is
 * one that should, else keep waiting and look again now and then (the
 * kernel sends no second interrupt for a later signal). */
static void waiter_signalled(struct waiter *w)
{
	struct zkl_fs *fs = w->fs;

	if (!sigpend_thread_cancels(w->tid)) {
		log_msg(LOG_DEBUG,
			"pid %d: signal that does not cancel a wait, ignored",
			(int)w->tid);
		pthread_mutex_lock(&fs->lock);
		if (list_linked(&w->link) && !w->watch_signals) {
			w->watch_signals = 1;
			fs->signal_watched++;
			pthread_cond_signal(&fs->signal_poll);
		}
		pthread_mutex_unlock(&fs->lock);
		return;
	}
	if (waiter_cancel(w))
		waiter_fail(w, EINTR);
	/* else the grant (or unmount) won; it answers */
}

/* libfuse's interrupt callback: runs with the request's lock held, maybe
 * inside fuse_req_interrupt_func() of the parking handler itself, where a
 * reply would free the request under libfuse's feet: there it only
 * marks the waiter, and waiter_park acts once the registration is done. */
static void waiter_interrupted(fuse_req_t req, void *arg)
{
	struct waiter *w = arg;

	(void)req;
	if (waiter_registering == w) {
		w->interrupted_early = 1;
		return;
	}
	waiter_signalled(w);
}

void waiter_park(fuse_req_t req, const struct waiter_ops *ops,
		 struct lockfile *lf, enum zkl_mode mode, unsigned flags,
		 uint64_t owner)
{
	struct zkl_fs *fs = fuse_req_userdata(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct waiter *w = calloc(1, sizeof(*w));
	char zpath[NAMES_MAX_NODE_PATH + 1];
	int err;

	if (!w) {
		/* A stand-in, so the answer goes the usual way. */
		struct waiter failed = { .req = req, .lf = lf, .ops = ops };
		if (ops->failed)
			ops->failed(&failed, ENOMEM);
		else
			fs_reply_err(req, ENOMEM);
		return;
	}
	lockfile_zpath(fs, lf->ino, zpath);
	list_init(&w->link);
	w->fs = fs;
	w->ops = ops;
	w->req = req;
	w->tid = ctx->pid;
	w->lf = lf;
	w->owner = owner;
	atomic_init(&w->refs, 2);
	lockfile_get(lf);
	w->identity_len = identity_format(w->identity, sizeof(w->identity),
					  fs->hostname, ctx->pid, ctx->uid);
	log_msg(LOG_DEBUG, "pid %d asks a %s lock on %s (%s%s)", (int)w->tid,
		names_mode_str(mode), zpath, ops->what,
		flags & LOCKREQ_TRY ? ", try" : "");
	err = lockreq_new(fs->session, zpath, mode, flags, w->identity,
			  w->identity_len, waiter_done, w, &w->lr);
	if (err < 0) {
		w->lr = NULL;
		waiter_fail(w, -err);
		waiter_put(w); /* ours */
		return;
	}
	/* Listed, unless its holder holds already (a grant came since the
	 * caller looked): both under fs->lock, so that either this sees that
	 * lock or the grant's waiter_answer_same_holder sees w. */
	pthread_mutex_lock(&fs->lock);
	err = waiter_answer_from_holder_locked(w, mode);
	if (err < 0)
		list_add_tail(&fs->waiters, &w->link);
	pthread_mutex_unlock(&fs->lock);
	if (err >= 0) {
		waiter_fail(w, err);
		waiter_put(w); /* ours */
		return;
	}
	/* Before the request can be answered, so that an interrupt that
	 * comes later finds the callback; one that came first runs it right
	 * here, and is handled once libfuse has let go of the request. */
	waiter_registering = w;
	fuse_req_interrupt_func(req, waiter_interrupted, w);
	waiter_registering = NULL;
	if (w->interrupted_early)
		waiter_signalled(w);
	/* Under fs->lock, and only while listed: a cancel that won
	 * meanwhile (an interrupt on another worker, the signal poller) has
	 * unlisted w and given its lock request up. */
	pthread_mutex_lock(&fs->lock);
	err = list_linked(&w->link) ? lockreq_start(w->lr) : -ECANCELED;
	pthread_mutex_unlock(&fs->lock);
	if (err < 0 && err != -ECANCELED) {
		/* Nothing was sent, and start has decided the outcome: no
		 * cancel can win now. */
		fuse_req_interrupt_func(req, NULL, NULL);
		waiter_fail(w, -err);
	}
	waiter_put(w);
}

void waiter_shutdown_all(struct zkl_fs *fs)
{
	struct zkl_link mine, *l, *next;

	list_init(&mine);
	pthread_mutex_lock(&fs->lock);
	for (l = fs->waiters.next; l != &fs->waiters; l = next) {
		struct waiter *w = ZKL_CONTAINER_OF(l, struct waiter, link);
		next = l->next;
		if (lockreq_cancel(w->lr) == 0) {
			waiter_unlist_locked(fs, w);
			list_add_tail(&mine, &w->link);
		}
	}
	pthread_mutex_unlock(&fs->lock);
	while (!list_empty(&mine)) {
		struct waiter *w =
			ZKL_CONTAINER_OF(mine.next, struct waiter, link);
		list_del(&w->link);
		fuse_req_interrupt_func(w->req, NULL, NULL);
		waiter_fail(w, EIO);
	}
}

void waiter_recheck_signals(struct waiter *w)
{
	if (sigpend_thread_cancels(w->tid) && waiter_cancel(w)) {
		log_msg(LOG_DEBUG, "pid %d: a later signal cancels its wait",
			(int)w->tid);
		waiter_fail(w, EINTR);
	}
	waiter_put(w);
}
