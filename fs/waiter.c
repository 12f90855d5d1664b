/*
 * waiter.c - parked lock requests (see lockfile.h).
 *
 * A waiter has two references while its handler runs: the handler's,
 * dropped when waiter_park returns, and the reply's, owned by whoever
 * answers.  Exactly one of grant (waiter_done), interrupt and unmount
 * answers: the one for which lockreq says so.
 */
#include "lockfile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "log.h"
#include "sigpend.h"

static void waiter_put(struct waiter *w)
{
	if (atomic_fetch_sub(&w->refs, 1) != 1)
		return;
	lockfile_put(w->lf);
	free(w);
}

static void waiter_unlist(struct waiter *w)
{
	struct zkl_fs *fs = w->fs;

	pthread_mutex_lock(&fs->lock);
	if (list_linked(&w->link))
		list_del(&w->link);
	pthread_mutex_unlock(&fs->lock);
}

/* Answer with an error.  The caller owns the reply. */
static void waiter_fail(struct waiter *w, int err)
{
	waiter_unlist(w);
	if (w->lr)
		lockreq_release(w->lr);
	log_msg(LOG_DEBUG, "%s by pid %d failed: %s", w->ops->what,
		(int)w->tid, strerror(err));
	if (w->ops->failed)
		w->ops->failed(w, err);
	else
		fs_reply_err(w->req, err);
}

/* lockreq's answer, on the completion thread. */
static void waiter_done(struct zkl_lockreq *lr, int err, void *arg)
{
	struct waiter *w = arg;
	struct zkl_fs *fs = w->fs;
	int stopping;

	/* Waits for an interrupt callback running now; none runs after. */
	fuse_req_interrupt_func(w->req, NULL, NULL);
	pthread_mutex_lock(&fs->lock);
	stopping = fs->stopping;
	pthread_mutex_unlock(&fs->lock);
	if (err == 0 && stopping)
		err = -EIO;
	if (err == 0) {
		/* Read before the reply: the holder may release lr at once. */
		const char *mode = names_mode_str(lockreq_mode(lr));
		waiter_unlist(w);
		w->ops->granted(w, lr);
		/* After the reply: the log is not on the holder's path. */
		log_msg(LOG_INFO, "granted %s lock on %s to pid %d (%s)", mode,
			lockfile_zpath(fs, w->lf->ino), (int)w->tid,
			w->ops->what);
	} else {
		waiter_fail(w, -err);
	}
	waiter_put(w);
}

/* libfuse's interrupt callback: runs with the request's lock held, maybe
 * inside fuse_req_interrupt_func() of the parking handler itself. */
static void waiter_interrupted(fuse_req_t req, void *arg)
{
	struct waiter *w = arg;

	(void)req;
	if (!sigpend_thread_cancels(w->tid)) {
		log_msg(LOG_DEBUG,
			"pid %d: signal that does not cancel a wait, ignored",
			(int)w->tid);
		return;
	}
	if (lockreq_cancel(w->lr) != 0)
		return; /* the grant won; it replies */
	waiter_fail(w, EINTR);
	waiter_put(w);
}

void waiter_park(fuse_req_t req, const struct waiter_ops *ops,
		 struct lockfile *lf, enum zkl_mode mode, unsigned flags,
		 uint64_t owner)
{
	struct zkl_fs *fs = fuse_req_userdata(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	const char *zpath = lockfile_zpath(fs, lf->ino);
	struct waiter *w = calloc(1, sizeof(*w));
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
		waiter_fail(w, -err);
		waiter_put(w); /* the reply's */
		waiter_put(w); /* ours */
		return;
	}
	pthread_mutex_lock(&fs->lock);
	list_add_tail(&fs->waiters, &w->link);
	pthread_mutex_unlock(&fs->lock);
	/* Before the request can be answered: the callback may run at once
	 * if the interrupt came first, and then start sees the cancel. */
	fuse_req_interrupt_func(req, waiter_interrupted, w);
	err = lockreq_start(w->lr);
	if (err < 0 && err != -ECANCELED) {
		fuse_req_interrupt_func(req, NULL, NULL);
		waiter_fail(w, -err);
		waiter_put(w);
	}
	waiter_put(w);
}

void waiter_shutdown_all(struct zkl_fs *fs)
{
	struct zkl_link mine, *l, *next;

	/* Under fs->lock every listed waiter's lock request is alive: a
	 * grant unlists its waiter before handing the request over. */
	list_init(&mine);
	pthread_mutex_lock(&fs->lock);
	for (l = fs->waiters.next; l != &fs->waiters; l = next) {
		struct waiter *w = ZKL_CONTAINER_OF(l, struct waiter, link);
		next = l->next;
		if (lockreq_cancel(w->lr) == 0) {
			list_del(&w->link);
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
		waiter_put(w);
	}
}
