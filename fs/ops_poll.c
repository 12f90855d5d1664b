/*
 * ops_poll.c - poll(2) on a lock file: always readable and writable, and
 * POLLPRI once the lock held through it (the description's, or an fcntl
 * lock taken through it) is asked to let go (revoke.h).  The poll handle
 * libfuse gives is kept, one per open file, to wake the poller when that
 * happens (lockfile_notify_revoked).
 */
#include "lockfile.h"

#include <poll.h>
#include <string.h>

/* The lock held through lf that was asked to let go, if any.  fs->lock
 * held. */
static int poll_asked_locked(struct zkl_fs *fs, struct lockfile *lf)
{
	int64_t when;

	if (lf->held && lockreq_revoke_asked(lf->held, &when))
		return 1;
	for (struct zkl_link *l = fs->posix_locks.next; l != &fs->posix_locks;
	     l = l->next) {
		struct posixlock *p =
			ZKL_CONTAINER_OF(l, struct posixlock, link);
		if (p->via == lf && lockreq_revoke_asked(p->lr, &when))
			return 1;
	}
	return 0;
}

void lockfile_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		   struct fuse_pollhandle *ph)
{
	struct lockfile *lf = lockfile_of(fi);
	struct zkl_fs *fs = lf->fs;
	struct fuse_pollhandle *old = NULL;
	unsigned revents = POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM;

	(void)ino;
	pthread_mutex_lock(&fs->lock);
	if (poll_asked_locked(fs, lf))
		revents |= POLLPRI;
	if (ph) {
		old = lf->ph;
		lf->ph = ph;
	}
	pthread_mutex_unlock(&fs->lock);
	if (old)
		fuse_pollhandle_destroy(old);
	fuse_reply_poll(req, revents);
}

/* Does lr hold the node at `node`? */
static int poll_holds(struct zkl_lockreq *lr, const char *node)
{
	return lr && lockreq_node_is(lr, node);
}

/* Take up to max poll handles of the files holding the lock at node.
 * fs->lock held. */
static size_t poll_take_locked(struct zkl_fs *fs, const char *node,
			       struct fuse_pollhandle **woken, size_t max)
{
	size_t n = 0;

	for (struct zkl_link *l = fs->lockfiles.next;
	     l != &fs->lockfiles && n < max; l = l->next) {
		struct lockfile *lf =
			ZKL_CONTAINER_OF(l, struct lockfile, link);
		int holds = poll_holds(lf->held, node);
		for (struct zkl_link *k = fs->posix_locks.next;
		     !holds && k != &fs->posix_locks; k = k->next) {
			struct posixlock *p =
				ZKL_CONTAINER_OF(k, struct posixlock, link);
			holds = p->via == lf && poll_holds(p->lr, node);
		}
		if (holds && lf->ph) {
			woken[n++] = lf->ph;
			lf->ph = NULL;
		}
	}
	return n;
}

void lockfile_notify_revoked(struct zkl_fs *fs, const char *node)
{
	struct fuse_pollhandle *woken[16];
	size_t n;

	/* A handle taken is gone from its file: each pass takes new ones. */
	do {
		pthread_mutex_lock(&fs->lock);
		n = poll_take_locked(fs, node, woken, 16);
		pthread_mutex_unlock(&fs->lock);
		for (size_t i = 0; i < n; i++) {
			fuse_lowlevel_notify_poll(woken[i]);
			fuse_pollhandle_destroy(woken[i]);
		}
	} while (n == 16);
}
