/*
 * waiter_holder.c - two lock calls of one holder at once (see waiter.h):
 * two processes that flock one inherited descriptor, two threads of a
 * process taking fcntl locks on one file.  Local locks answer the second
 * from the first's grant; queued behind it, it would wait for its own
 * holder for ever.
 */
#include "waiter.h"

#include <errno.h>
#include <syslog.h>

#include "log.h"

int waiter_holder_answer_locked(const struct waiter *w,
				struct zkl_lockreq **dropped)
{
	struct zkl_lockreq *held;

	ZKL_ASSERT_HELD(&w->fs->lock);
	if (!w->ops->holder_lock_locked)
		return -1;
	held = w->ops->holder_lock_locked(w);
	if (!held || !lockreq_holds(held))
		return -1;
	if (lockfile_covers(held, lockreq_mode(w->lr)))
		return 0;
	if (!w->ops->holder_drop_locked)
		return EDEADLK; /* fcntl: waiting would be for ourselves */
	/* flock: a conversion, as flock(2) does one: the holder's lock goes
	 * (the caller releases it) and w waits its turn behind it. */
	*dropped = w->ops->holder_drop_locked(w);
	return -1;
}

/* The first started waiter of w's holder that its lock answers, unlisted
 * and its request cancelled (answer in *answer); NULL if none.  A
 * conversion's old lock into *dropped.  fs->lock held. */
static struct waiter *waiter_next_of_holder_locked(struct waiter *w,
						   int *answer,
						   struct zkl_lockreq **dropped)
{
	struct zkl_fs *fs = w->fs;

	for (struct zkl_link *l = fs->waiters.next; l != &fs->waiters;
	     l = l->next) {
		struct waiter *o = ZKL_CONTAINER_OF(l, struct waiter, link);
		/* One not started yet looks for itself when it starts. */
		if (o->ops != w->ops || !o->started ||
		    o->lf->ino != w->lf->ino || o->owner != w->owner ||
		    (!o->owner && o->lf != w->lf))
			continue;
		*answer = waiter_holder_answer_locked(o, dropped);
		if (*dropped)
			return NULL; /* the holder holds nothing now */
		if (*answer >= 0 && lockreq_cancel(o->lr) == 0) {
			waiter_unlist_locked(fs, o);
			return o;
		}
	}
	return NULL;
}

void waiter_answer_same_holder(struct waiter *w)
{
	struct zkl_fs *fs = w->fs;

	if (!w->ops->holder_lock_locked)
		return;
	/* One at a time: an answered waiter is on no list of ours, where
	 * an interrupt could find it linked. */
	for (;;) {
		struct zkl_lockreq *dropped = NULL;
		struct waiter *o;
		int answer = -1;

		pthread_mutex_lock(&fs->lock);
		o = waiter_next_of_holder_locked(w, &answer, &dropped);
		pthread_mutex_unlock(&fs->lock);
		if (dropped)
			lockreq_release(dropped);
		if (!o)
			return;
		fuse_req_interrupt_func(o->req, NULL, NULL);
		log_msg(LOG_DEBUG,
			"pid %d's %s answered from its holder's lock",
			(int)o->tid, o->ops->what);
		waiter_fail(o, answer); /* its node goes first */
	}
}
