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
#include "waiter.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "deadline.h"
#include "log.h"
#include "reentrant.h"
#include "sigpend.h"

/* The waiter whose interrupt callback this thread is registering: a
 * callback libfuse runs inside that registration only marks the waiter. */
static __thread struct waiter *waiter_registering;

/* lockreq's answer, on the completion thread. */
static void waiter_done(struct zkl_lockreq *lr, int err, void *arg)
{
	struct waiter *w = arg;
	struct zkl_fs *fs = w->fs;
	char zpath[NAMES_MAX_NODE_PATH + 1];
	const char *mode;
	int expired;

	pthread_mutex_lock(&fs->lock);
	if (w->kept) {
		/* Its caller was told EINTR and has not asked again: the
		 * answer waits for the call again (waiter_adopt), a grant
		 * only WAITER_KEEP_GRANTED_MS, not to hold the lock from the
		 * others for long; one given up already ends here. */
		w->kept_answered = 1;
		w->kept_err = err;
		expired = w->expired;
		if (err == 0 && !expired)
			waiter_keep_granted_locked(w);
		pthread_mutex_unlock(&fs->lock);
		if (expired)
			waiter_end_kept(w);
		return;
	}
	/* Unlisted first: an interrupt from now on finds nothing to do. */
	if (w->parked)
		waiter_unlist_locked(fs, w);
	/* A grant either fails here, or is counted until it has handed its
	 * lock to a lock file, where the unmount finds it: none slips
	 * between the unmount's two steps (lockfile_shutdown_all). */
	if (err == 0 && fs->stopping)
		err = -EIO;
	else if (err == 0)
		fs->granting++;
	pthread_mutex_unlock(&fs->lock);
	/* Waits for an interrupt callback running now; none runs after. */
	fuse_req_interrupt_func(w->req, NULL, NULL);
	if (err != 0)
		return waiter_fail(w, -err);
	/* Both read before the reply: the holder may release lr at once,
	 * and close the file, and the kernel forget its inode. */
	mode = names_mode_str(lockreq_mode(lr));
	lockfile_zpath(fs, w->lf->ino, zpath);
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

/* A caught signal: answer EINTR now, for the handler to run, and keep
 * the request in its place for the call again (waiter.h).  Returns 0 if
 * w cannot be kept (not started yet, or unmounting): cancel it. */
static int waiter_keep(struct waiter *w)
{
	struct zkl_fs *fs = w->fs;
	/* The answer goes to this call, through a stand-in: once kept, w
	 * may be taken back by the call again before the reply returns. */
	struct waiter answer = { .fs = fs, .ops = w->ops, .tid = w->tid };
	int listed, kept;

	pthread_mutex_lock(&fs->lock);
	listed = w->parked;
	kept = listed && w->started && !fs->stopping;
	if (kept) {
		answer.req = w->req;
		answer.lf = w->lf;
		w->req = NULL;
		waiter_keep_locked(w);
	}
	pthread_mutex_unlock(&fs->lock);
	if (!kept)
		return !listed; /* answered by someone else, or cancel it */
	log_msg(LOG_DEBUG, "pid %d: a caught signal; EINTR, its place kept",
		(int)answer.tid);
	if (answer.ops->failed)
		answer.ops->failed(&answer, EINTR);
	else
		fs_reply_err(answer.req, EINTR);
	waiter_put(w); /* the reply's */
	return 1;
}

/* A signal reached the waiting thread: cancel the wait if the signal is
 * one that should, keep its place if the process catches it, else keep
 * waiting and look again now and then (the kernel sends no second
 * interrupt for a later signal). */
static void waiter_signalled(struct waiter *w)
{
	struct zkl_fs *fs = w->fs;
	enum sigpend_verdict verdict = sigpend_thread_classify(w->tid);

	if (verdict == SIGPEND_HANDLED && w->in_place)
		verdict = SIGPEND_WAIT;
	switch (verdict) {
	case SIGPEND_WAIT:
		log_msg(LOG_DEBUG,
			"pid %d: signal that does not cancel a wait, ignored",
			(int)w->tid);
		pthread_mutex_lock(&fs->lock);
		if (w->parked && !w->watch_signals) {
			w->watch_signals = 1;
			fs->signal_watched++;
			pthread_cond_signal(&fs->signal_poll);
		}
		pthread_mutex_unlock(&fs->lock);
		return;
	case SIGPEND_HANDLED:
		if (waiter_keep(w))
			return;
		/* fall through */
	case SIGPEND_CANCEL:
		if (waiter_cancel(w))
			waiter_fail(w, EINTR);
		/* else the grant (or unmount) won; it answers */
		return;
	}
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

/* The call again of a kept wait (waiter.h): `kept` answers the new call
 * `fresh` (a stand-in never started, freed here), from the place it kept,
 * or at once with the answer that came meanwhile. */
static void waiter_adopt(struct waiter *kept, struct waiter *fresh)
{
	struct zkl_fs *fs = kept->fs;
	struct zkl_lockreq *dropped = NULL;
	int answered, holder = -1;

	atomic_fetch_add(&kept->refs, 1); /* ours, while here */
	kept->req = fresh->req;
	lockfile_get(fresh->lf);
	lockfile_put(kept->lf);
	kept->lf = fresh->lf;
	kept->interrupted_early = 0;
	fresh->lr = NULL;
	waiter_put(fresh);
	waiter_put(fresh);
	/* As waiter_park: the callback first, then where answers see it.
	 * An answer meanwhile finds it kept, and waits for us. */
	waiter_registering = kept;
	fuse_req_interrupt_func(kept->req, waiter_interrupted, kept);
	waiter_registering = NULL;
	pthread_mutex_lock(&fs->lock);
	kept->kept = 0;
	answered = kept->kept_answered;
	/* Its holder may hold since (waiter_holder.c): answered from that
	 * lock, if its own request can still be given up. */
	if (!answered)
		holder = waiter_holder_answer_locked(kept, &dropped);
	/* Waiting again may close a cycle that formed meanwhile. */
	if (!answered && holder < 0 &&
	    waiter_would_deadlock_locked(kept, lockreq_mode(kept->lr)))
		holder = EDEADLK;
	if (holder >= 0 && lockreq_cancel(kept->lr) != 0)
		holder = -1; /* its answer is on its way: it decides */
	if (!answered && holder < 0)
		waiter_list_locked(fs, kept);
	pthread_mutex_unlock(&fs->lock);
	if (dropped)
		lockreq_release(dropped); /* a conversion's old lock */
	log_msg(LOG_DEBUG, "pid %d asks again: its %s wait keeps its place",
		(int)kept->tid, kept->ops->what);
	if (answered)
		waiter_done(kept->lr, kept->kept_err, kept);
	else if (holder >= 0)
		waiter_fail(kept, holder);
	else if (kept->interrupted_early ||
		 sigpend_thread_classify(kept->tid) != SIGPEND_WAIT)
		waiter_signalled(kept); /* a signal no callback saw */
	waiter_put(kept);
}

void waiter_park(fuse_req_t req, const struct waiter_ops *ops,
		 struct lockfile *lf, enum zkl_mode mode, unsigned flags,
		 uint64_t owner)
{
	waiter_park_in_place(req, ops, lf, mode, flags, owner, NULL);
}

void waiter_park_in_place(fuse_req_t req, const struct waiter_ops *ops,
			  struct lockfile *lf, enum zkl_mode mode,
			  unsigned flags, uint64_t owner,
			  struct zkl_lockreq *from)
{
	struct zkl_fs *fs = fuse_req_userdata(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct waiter *w = calloc(1, sizeof(*w)), *kept;
	char zpath[NAMES_MAX_NODE_PATH + 1];
	struct zkl_lockreq *dropped = NULL;
	int err, answer = -1;

	if (!w) {
		if (from)
			lockreq_release(from);
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
	w->flags = flags;
	w->in_place = from != NULL;
	atomic_init(&w->refs, 2);
	lockfile_get(lf);
	w->identity_len = identity_format(w->identity, sizeof(w->identity),
					  fs->hostname, ctx->pid, ctx->uid);
	if (tree_role_of(&fs->tree, lf->ino) == TREE_ROLE_MULTI)
		w->identity_len = identity_add_multi(
			w->identity, w->identity_len, sizeof(w->identity),
			tree_res_of(&fs->tree, lf->ino)->name);
	log_msg(LOG_DEBUG, "pid %d asks a %s lock on %s (%s%s)", (int)w->tid,
		names_mode_str(mode), zpath, ops->what,
		flags & LOCKREQ_TRY ? ", try" : "");
	if (fs->reentrant && mode != ZKL_MODE_LEASE)
		w->nlineage = lineage_of(w->tid, w->lineage, LINEAGE_MAX);
	pthread_mutex_lock(&fs->lock);
	kept = waiter_take_kept_locked(fs, w, mode);
	pthread_mutex_unlock(&fs->lock);
	if (kept) {
		if (from)
			lockreq_release(from);
		return waiter_adopt(kept, w);
	}
	if (w->nlineage) {
		struct zkl_lockreq *held = NULL;
		int verdict = reentrant_take(fs, lf->ino, mode, w->lineage,
					     w->nlineage, &held);
		if (verdict == 0) {
			w->lr = held; /* an unmount's failure lets it go */
			waiter_done(held, 0, w);
		} else if (verdict > 0)
			waiter_fail(w, verdict);
		if (verdict >= 0) {
			if (from) /* after: it may be the lock taken again */
				lockreq_release(from);
			waiter_put(w); /* ours */
			return;
		}
	}
	err = lockfile_new_request(fs, lf->ino, mode,
				   flags | LOCKREQ_KIND(ops->kind), w->identity,
				   w->identity_len, waiter_done, w, &w->lr);
	if (err < 0)
		w->lr = NULL;
	else
		err = -waiter_list_unless_deadlock(w, mode);
	if (err < 0) {
		if (from)
			lockreq_release(from);
		waiter_fail(w, -err);
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
	 * unlisted w and given its lock request up.  Not started if its
	 * holder holds already (a grant came since the caller looked): this
	 * sees that lock, or the grant's waiter_answer_same_holder sees w
	 * started. */
	pthread_mutex_lock(&fs->lock);
	err = -ECANCELED;
	if (w->parked) {
		answer = waiter_holder_answer_locked(w, &dropped);
		if (answer >= 0) {
			waiter_unlist_locked(fs, w);
		} else if (from) {
			err = lockreq_start_in_place(w->lr, from);
			from = NULL;
		} else {
			err = lockreq_start(w->lr);
		}
	}
	w->started = err == 0;
	pthread_mutex_unlock(&fs->lock);
	if (dropped)
		lockreq_release(dropped); /* a conversion's old lock */
	if (from)
		lockreq_release(from); /* the downgrade did not start */
	if (answer >= 0) {
		fuse_req_interrupt_func(req, NULL, NULL);
		waiter_fail(w, answer);
	} else if (err < 0 && err != -ECANCELED) {
		/* Nothing was sent, and start has decided the outcome: no
		 * cancel can win now. */
		fuse_req_interrupt_func(req, NULL, NULL);
		waiter_fail(w, -err);
	}
	waiter_put(w);
}

void waiter_shutdown_all(struct zkl_fs *fs)
{
	struct zkl_link mine, ending, *l, *next;

	list_init(&mine);
	list_init(&ending);
	pthread_mutex_lock(&fs->lock);
	waiter_take_expired_locked(fs, 1, &ending);
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
	waiter_end_kept_all(&ending);
}

void waiter_recheck_signals(struct waiter *w)
{
	if (sigpend_thread_classify(w->tid) != SIGPEND_WAIT) {
		log_msg(LOG_DEBUG, "pid %d: a later signal", (int)w->tid);
		waiter_signalled(w);
	}
	waiter_put(w);
}
