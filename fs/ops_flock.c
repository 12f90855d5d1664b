/*
 * ops_flock.c - flock(2) and whole-file fcntl(2) locks on the lock files
 * (see lockfile.h for who owns what).
 *
 * Upgrading a lock (shared to exclusive) drops it and queues anew, as
 * flock(2) documents: a ZooKeeper queue has no in-place upgrade.  A
 * downgrade keeps the lock's place: the read lock replaces the write
 * lock in one transaction (lockreq_start_in_place), so that no writer
 * queued behind gets in between.  An fcntl
 * request through an open file description that holds a lock (from open
 * or flock) is answered from that lock: granted if it covers the request,
 * EDEADLK if not, since queueing would wait for ourselves.
 */
#include "lockfile.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <syslog.h>

#include "log.h"

/* ---- grants ------------------------------------------------------------ */

/* A grant for an open file that was closed meanwhile (only unmount can do
 * that while a lock call is in progress): give it back. */
static void lock_grant_refused(struct waiter *w, struct zkl_lockreq *lr)
{
	lockreq_release(lr);
	fs_reply_err(w->req, EIO);
}

static void flock_granted(struct waiter *w, struct zkl_lockreq *lr)
{
	struct lockfile *lf = w->lf;
	struct zkl_lockreq *old;

	pthread_mutex_lock(&w->fs->lock);
	if (lf->state != LF_OPEN) {
		pthread_mutex_unlock(&w->fs->lock);
		return lock_grant_refused(w, lr);
	}
	/* Another thread's flock on this file may have won meanwhile: the
	 * last grant is the file's lock, as the last call would be. */
	old = lf->held;
	lf->held = lr;
	lf->holder = w->nlineage ? w->lineage[0] : (struct lineage_proc){ 0 };
	memcpy(lf->identity, w->identity, w->identity_len);
	lf->identity_len = w->identity_len;
	pthread_mutex_unlock(&w->fs->lock);
	if (old)
		lockreq_release(old);
	fuse_reply_err(w->req, 0);
}

static void posix_granted(struct waiter *w, struct zkl_lockreq *lr)
{
	struct zkl_fs *fs = w->fs;
	struct posixlock *p, *fresh = calloc(1, sizeof(*fresh));
	struct zkl_lockreq *old = NULL;

	if (!fresh) {
		lockreq_release(lr);
		return fs_reply_err(w->req, ENOLCK);
	}
	pthread_mutex_lock(&fs->lock);
	if (w->lf->state != LF_OPEN) {
		pthread_mutex_unlock(&fs->lock);
		free(fresh);
		return lock_grant_refused(w, lr);
	}
	p = posix_find_locked(fs, w->lf->ino, w->owner);
	if (p) {
		old = p->lr;
	} else {
		p = fresh;
		fresh = NULL;
		p->ino = w->lf->ino;
		p->owner = w->owner;
		list_add_tail(&fs->posix_locks, &p->link);
	}
	p->lr = lr;
	p->holder = w->nlineage ? w->lineage[0] : (struct lineage_proc){ 0 };
	p->via = w->lf;
	memcpy(p->identity, w->identity, w->identity_len);
	p->identity_len = w->identity_len;
	pthread_mutex_unlock(&fs->lock);
	free(fresh);
	if (old)
		lockreq_release(old);
	fuse_reply_err(w->req, 0);
}

/* flock locks belong to the open file description. */
static struct zkl_lockreq *flock_holder_lock(const struct waiter *w)
{
	return w->lf->state == LF_OPEN ? w->lf->held : NULL;
}

static struct zkl_lockreq *flock_holder_drop(const struct waiter *w)
{
	struct zkl_lockreq *old = w->lf->held;

	w->lf->held = NULL;
	return old;
}

/* fcntl locks belong to the lock owner, on the file. */
static struct zkl_lockreq *posix_holder_lock(const struct waiter *w)
{
	struct posixlock *p = posix_find_locked(w->fs, w->lf->ino, w->owner);

	return p ? p->lr : NULL;
}

static const struct waiter_ops flock_ops = {
	.what = "flock",
	.kind = FS_KIND_FLOCK,
	.granted = flock_granted,
	.holder_lock_locked = flock_holder_lock,
	.holder_drop_locked = flock_holder_drop,
};

static const struct waiter_ops posix_ops = {
	.what = "fcntl",
	.kind = FS_KIND_FCNTL,
	.granted = posix_granted,
	.holder_lock_locked = posix_holder_lock,
};

/* ---- flock(2) ---------------------------------------------------------- */

/* From a write lock held to a read lock: how?  In place, the read lock
 * taking the write lock's place in the queue (lockreq_start_in_place):
 * DOWNGRADE_IN_PLACE.  DOWNGRADE_KEEP: the write lock has other owners
 * too (-o reentrant), so it stays, covering the read asked.
 * DOWNGRADE_TRY_FAILS: a try while the connection is down, which fails
 * and keeps the lock, as a local downgrade never loses it.  Else
 * DOWNGRADE_OLD_WAY (a multi-lock, a lost lock): as flock(2) converts. */
enum downgrade {
	DOWNGRADE_OLD_WAY,
	DOWNGRADE_IN_PLACE,
	DOWNGRADE_KEEP,
	DOWNGRADE_TRY_FAILS,
};

static enum downgrade downgrade_how(struct zkl_lockreq *old, enum zkl_mode mode,
				    unsigned flags)
{
	if (!old || mode != ZKL_MODE_READ)
		return DOWNGRADE_OLD_WAY;
	switch (lockreq_place_to_take(old)) {
	case 0:
		return DOWNGRADE_IN_PLACE;
	case -EBUSY:
		return DOWNGRADE_KEEP;
	case -EAGAIN: /* a blocking one waits for the connection */
		return (flags & LOCKREQ_TRY) ? DOWNGRADE_TRY_FAILS
					     : DOWNGRADE_IN_PLACE;
	default:
		return DOWNGRADE_OLD_WAY;
	}
}

void lockfile_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		    int op)
{
	struct lockfile *lf = lockfile_of(fi);
	struct zkl_fs *fs = lf->fs;
	int how = op & (LOCK_SH | LOCK_EX | LOCK_UN);
	enum zkl_mode mode = lockfile_mode(ino, how == LOCK_EX ? ZKL_MODE_WRITE
							       : ZKL_MODE_READ);
	unsigned flags = (op & LOCK_NB) ? LOCKREQ_TRY : 0;
	enum downgrade down = DOWNGRADE_OLD_WAY;
	struct zkl_lockreq *old;
	struct unlock *u;

	pthread_mutex_lock(&fs->lock);
	old = lf->held;
	if (how != LOCK_UN && old && lockreq_holds(old) &&
	    lockreq_mode(old) == mode) {
		/* Already held that way, e.g. flock(1) on write or read, or
		 * LOCK_SH then LOCK_EX on a lease. */
		pthread_mutex_unlock(&fs->lock);
		return fs_reply_err(req, 0);
	}
	if (how != LOCK_UN)
		down = downgrade_how(old, mode, flags);
	/* LOCK_UN, or a conversion: the old lock goes first, and for every
	 * session (unlock.c); a downgrade passes it to the new request. */
	if (down == DOWNGRADE_OLD_WAY || down == DOWNGRADE_IN_PLACE)
		lf->held = NULL;
	pthread_mutex_unlock(&fs->lock);
	if (down == DOWNGRADE_KEEP)
		return fs_reply_err(req, 0);
	if (down == DOWNGRADE_TRY_FAILS)
		return fs_reply_err(req, EWOULDBLOCK);
	if (!old && how == LOCK_UN)
		return fs_reply_err(req, 0);
	if (!old)
		return waiter_park(req, &flock_ops, lf, mode, flags, 0);
	if (down == DOWNGRADE_IN_PLACE) /* never a try: nobody blocks it */
		return waiter_park_in_place(req, &flock_ops, lf, mode, 0, 0,
					    old);
	u = unlock_begin(req);
	unlock_add(u, old);
	if (how == LOCK_UN)
		return unlock_reply_when_done(u, req);
	unlock_park_when_done(u, req, &flock_ops, lf, mode, flags, 0);
}

/* ---- fcntl(2) ---------------------------------------------------------- */

void lockfile_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		    struct flock *lock, int sleep)
{
	struct lockfile *lf = lockfile_of(fi);
	struct zkl_fs *fs = lf->fs;
	enum zkl_mode mode =
		lockfile_mode(ino, lockfile_mode_of_type(lock->l_type));
	enum downgrade down = DOWNGRADE_OLD_WAY;
	struct zkl_lockreq *from = NULL;
	struct posixlock *p;
	struct unlock *u;
	int err = -1;

	if (!lockfile_whole_file(lock))
		return fs_reply_err(req, EINVAL);
	if (lock->l_type == F_UNLCK) {
		u = unlock_begin(req);
		posix_drop(fs, ino, fi->lock_owner, NULL, u);
		return unlock_reply_when_done(u, req);
	}
	pthread_mutex_lock(&fs->lock);
	if (lf->held && lockreq_holds(lf->held)) {
		err = lockfile_covers(lf->held, mode) ? 0 : EDEADLK;
	} else {
		p = posix_find_locked(fs, ino, fi->lock_owner);
		if (p && lockreq_holds(p->lr) && lockreq_mode(p->lr) == mode)
			err = 0;
		else if (p)
			down = downgrade_how(p->lr, mode,
					     sleep ? 0 : LOCKREQ_TRY);
		if (down == DOWNGRADE_KEEP) {
			err = 0;
		} else if (down == DOWNGRADE_TRY_FAILS) {
			err = EAGAIN; /* the lock kept */
		} else if (down == DOWNGRADE_IN_PLACE) {
			list_del(&p->link);
			from = p->lr;
			free(p);
		}
	}
	pthread_mutex_unlock(&fs->lock);
	if (err >= 0)
		return fs_reply_err(req, err);
	if (from) /* never a try: nobody can block it */
		return waiter_park_in_place(req, &posix_ops, lf, mode, 0,
					    fi->lock_owner, from);
	/* A conversion drops the old lock first (see the top). */
	u = unlock_begin(req);
	posix_drop(fs, ino, fi->lock_owner, NULL, u);
	unlock_park_when_done(u, req, &posix_ops, lf, mode,
			      sleep ? 0 : LOCKREQ_TRY, fi->lock_owner);
}
