/*
 * unlock.c - explicit unlocks that return only once ZooKeeper has deleted
 * the nodes (see lockfile.h).
 *
 * A delete queued on this mount's session is ordered before this mount's
 * later requests, but another session may still see the node until the
 * server has applied it.  So flock(LOCK_UN), F_UNLCK, the drop half of a
 * conversion and a FLUSH that ends fcntl locks wait for every delete they
 * caused: after the call returns, no other host's try-lock fails because
 * of that lock.
 */
#include "lockfile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <syslog.h>

#include "deadline.h"
#include "log.h"

/* A server that hangs without closing the connection is noticed by the
 * client only after two thirds of the session timeout: an unlock is
 * answered after this long at the latest (a killed process whose exit
 * drops an fcntl lock must not stay in D state); its deletes go on. */
#define UNLOCK_ANSWER_MS 1000

struct unlock {
	struct zkl_link link; /* in fs->unlocks from *_when_done until
			       * answered; fs->lock */
	struct zkl_fs *fs;
	struct timespec answer_by;
	int answered; /* fs->lock */
	fuse_req_t req;
	/* Releases not yet gone, plus one while the unlock is being built
	 * (it cannot complete before unlock_*_when_done), plus one while the
	 * poller answers it.  The last one frees it. */
	atomic_int pending;
	/* The lock to queue once the old one is gone (a conversion), or
	 * park_ops NULL: just reply 0. */
	const struct waiter_ops *park_ops;
	struct lockfile *lf; /* with a reference while parking is due */
	enum zkl_mode mode;
	unsigned flags;
	uint64_t owner;
};

struct unlock *unlock_begin(fuse_req_t req)
{
	struct unlock *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->req = req;
	u->fs = fuse_req_userdata(req);
	list_init(&u->link);
	atomic_init(&u->pending, 1);
	return u;
}

/* Answer the unlock: reply, or queue the conversion's new lock. */
static void unlock_answer(struct unlock *u)
{
	struct lockfile *lf = u->lf;
	int stopping;

	if (!u->park_ops)
		return (void)fuse_reply_err(u->req, 0);
	pthread_mutex_lock(&lf->fs->lock);
	stopping = lf->fs->stopping;
	pthread_mutex_unlock(&lf->fs->lock);
	if (stopping) /* the session is closing: nothing can be queued */
		fs_reply_err(u->req, EIO);
	else
		waiter_park(u->req, u->park_ops, lf, u->mode, u->flags,
			    u->owner);
	lockfile_put(lf);
}

/* Whoever claims the answer gives it: the last delete, or the poller at
 * the deadline.  fs->lock held. */
static int unlock_claim_locked(struct unlock *u)
{
	int mine = !u->answered;

	u->answered = 1;
	if (list_linked(&u->link))
		list_del(&u->link);
	return mine;
}

static void unlock_put(struct unlock *u)
{
	struct zkl_fs *fs = u->fs;
	int mine;

	if (atomic_fetch_sub(&u->pending, 1) != 1)
		return;
	pthread_mutex_lock(&fs->lock);
	mine = unlock_claim_locked(u);
	pthread_mutex_unlock(&fs->lock);
	if (mine)
		unlock_answer(u);
	free(u);
}

static void unlock_one_gone(void *arg)
{
	unlock_put(arg);
}

/* Built: answered once every delete is confirmed, or at the deadline. */
static void unlock_seal(struct unlock *u)
{
	struct zkl_fs *fs = u->fs;

	pthread_mutex_lock(&fs->lock);
	u->answer_by = deadline_after_ms(UNLOCK_ANSWER_MS);
	list_add_tail(&fs->unlocks, &u->link);
	pthread_cond_signal(&fs->signal_poll); /* it keeps the deadline */
	pthread_mutex_unlock(&fs->lock);
	unlock_put(u); /* the builder's */
}

/* A reference of ours, unless the last one is being dropped (its put,
 * waiting for fs->lock, answers and frees it): 1 if taken. */
static int unlock_hold_if_alive(struct unlock *u)
{
	int p = atomic_load(&u->pending);

	do {
		if (p == 0)
			return 0;
	} while (!atomic_compare_exchange_weak(&u->pending, &p, p + 1));
	return 1;
}

size_t unlock_take_late_locked(struct zkl_fs *fs, struct unlock **late,
			       size_t max)
{
	size_t n = 0;

	ZKL_ASSERT_HELD(&fs->lock);
	for (struct zkl_link *l = fs->unlocks.next, *next;
	     l != &fs->unlocks && n < max; l = next) {
		struct unlock *u = ZKL_CONTAINER_OF(l, struct unlock, link);
		next = l->next;
		if (!deadline_reached(&u->answer_by) ||
		    !unlock_hold_if_alive(u))
			continue;
		unlock_claim_locked(u);
		late[n++] = u;
	}
	return n;
}

void unlock_answer_late(struct unlock *u)
{
	log_msg(LOG_DEBUG, "an unlock answered without ZooKeeper's word");
	unlock_answer(u);
	unlock_put(u);
}

void unlock_add(struct unlock *u, struct zkl_lockreq *lr)
{
	if (!u) {
		/* Out of memory for the wait: still let go, at once. */
		log_msg(LOG_WARNING, "out of memory: an unlock returns before "
				     "ZooKeeper confirmed it");
		return lockreq_release(lr);
	}
	atomic_fetch_add(&u->pending, 1);
	lockreq_release_then(lr, unlock_one_gone, u);
}

void unlock_reply_when_done(struct unlock *u, fuse_req_t req)
{
	if (!u)
		return fs_reply_err(req, 0);
	unlock_seal(u);
}

void unlock_park_when_done(struct unlock *u, fuse_req_t req,
			   const struct waiter_ops *ops, struct lockfile *lf,
			   enum zkl_mode mode, unsigned flags, uint64_t owner)
{
	if (!u)
		return waiter_park(req, ops, lf, mode, flags, owner);
	u->park_ops = ops;
	u->lf = lf;
	lockfile_get(lf);
	u->mode = mode;
	u->flags = flags;
	u->owner = owner;
	unlock_seal(u);
}

void posix_drop(struct zkl_fs *fs, fuse_ino_t ino, uint64_t owner,
		const struct lockfile *via, struct unlock *u)
{
	struct zkl_link taken;

	list_init(&taken);
	posix_take(fs, ino, owner, via, &taken);
	while (!list_empty(&taken)) {
		struct posixlock *p =
			ZKL_CONTAINER_OF(taken.next, struct posixlock, link);
		list_del(&p->link);
		log_msg(LOG_DEBUG, "fcntl lock of owner %016" PRIx64 " dropped",
			p->owner);
		if (u)
			unlock_add(u, p->lr);
		else
			lockreq_release(p->lr);
		free(p);
	}
}
