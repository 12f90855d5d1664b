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

#include "log.h"

struct unlock {
	fuse_req_t req;
	/* Releases not yet gone, plus one while the unlock is being built:
	 * it cannot complete before unlock_*_when_done. */
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
	atomic_init(&u->pending, 1);
	return u;
}

static void unlock_finish(struct unlock *u)
{
	struct lockfile *lf = u->lf;
	int stopping;

	if (!u->park_ops) {
		fuse_reply_err(u->req, 0);
		free(u);
		return;
	}
	pthread_mutex_lock(&lf->fs->lock);
	stopping = lf->fs->stopping;
	pthread_mutex_unlock(&lf->fs->lock);
	if (stopping) /* the session is closing: nothing can be queued */
		fs_reply_err(u->req, EIO);
	else
		waiter_park(u->req, u->park_ops, lf, u->mode, u->flags,
			    u->owner);
	lockfile_put(lf);
	free(u);
}

static void unlock_one_gone(void *arg)
{
	struct unlock *u = arg;

	if (atomic_fetch_sub(&u->pending, 1) == 1)
		unlock_finish(u);
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
	unlock_one_gone(u);
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
	unlock_one_gone(u);
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
