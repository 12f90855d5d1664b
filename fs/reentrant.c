/*
 * reentrant.c - which held lock a request takes again (reentrant.h).
 */
#include "reentrant.h"

#include <errno.h>
#include <syslog.h>

#include "lockfile.h"
#include "log.h"

int reentrant_verdict(enum zkl_mode held, enum zkl_mode asked)
{
	if (held == ZKL_MODE_LEASE || asked == ZKL_MODE_LEASE)
		return -1;
	if (held == ZKL_MODE_WRITE || asked == ZKL_MODE_READ)
		return 0;
	return EDEADLK;
}

static int reentrant_in(pid_t pid, const pid_t *lineage, size_t n)
{
	for (size_t i = 0; pid > 0 && i < n; i++)
		if (lineage[i] == pid)
			return 1;
	return 0;
}

/* Is lr, held by holder through lock file lf_ino, a lock of the
 * resource `res` that the lineage holds?  Its write lock is preferred
 * (*best). */
static void reentrant_consider(struct zkl_fs *fs, struct tree_res *res,
			       fuse_ino_t lf_ino, pid_t holder,
			       struct zkl_lockreq *lr, const pid_t *lineage,
			       size_t n, struct zkl_lockreq **best)
{
	if (!lr || tree_res_of(&fs->tree, lf_ino) != res ||
	    tree_role_of(&fs->tree, lf_ino) == TREE_ROLE_MULTI ||
	    !reentrant_in(holder, lineage, n) || !lockreq_holds(lr) ||
	    lockreq_mode(lr) == ZKL_MODE_LEASE)
		return;
	if (!*best || lockreq_mode(lr) == ZKL_MODE_WRITE)
		*best = lr;
}

int reentrant_find_locked(struct zkl_fs *fs, fuse_ino_t ino, enum zkl_mode mode,
			  const pid_t *lineage, size_t n,
			  struct zkl_lockreq **held)
{
	struct tree_res *res = tree_res_of(&fs->tree, ino);
	struct zkl_lockreq *best = NULL;

	ZKL_ASSERT_HELD(&fs->lock);
	if (!res || mode == ZKL_MODE_LEASE ||
	    tree_role_of(&fs->tree, ino) == TREE_ROLE_MULTI)
		return -1;
	for (struct zkl_link *l = fs->lockfiles.next; l != &fs->lockfiles;
	     l = l->next) {
		struct lockfile *lf =
			ZKL_CONTAINER_OF(l, struct lockfile, link);
		if (lf->state == LF_OPEN)
			reentrant_consider(fs, res, lf->ino, lf->holder,
					   lf->held, lineage, n, &best);
	}
	for (struct zkl_link *l = fs->posix_locks.next; l != &fs->posix_locks;
	     l = l->next) {
		struct posixlock *p =
			ZKL_CONTAINER_OF(l, struct posixlock, link);
		reentrant_consider(fs, res, p->ino, p->holder, p->lr, lineage,
				   n, &best);
	}
	if (!best)
		return -1;
	*held = best;
	return reentrant_verdict(lockreq_mode(best), mode);
}

int reentrant_take(struct zkl_fs *fs, fuse_ino_t ino, enum zkl_mode mode,
		   const pid_t *lineage, size_t n, struct zkl_lockreq **held)
{
	int verdict;

	pthread_mutex_lock(&fs->lock);
	verdict = fs->stopping ? -1
			       : reentrant_find_locked(fs, ino, mode, lineage,
						       n, held);
	/* Under fs->lock: its holder cannot let it go meanwhile. */
	if (verdict == 0 && lockreq_share(*held) < 0)
		verdict = -1;
	pthread_mutex_unlock(&fs->lock);
	if (verdict == 0)
		log_msg(LOG_DEBUG,
			"pid %d takes the %s lock its process tree holds "
			"again (%u holds)",
			(int)lineage[0], names_mode_str(lockreq_mode(*held)),
			lockreq_owners(*held));
	else if (verdict == EDEADLK)
		log_msg(LOG_DEBUG,
			"pid %d asks a write lock while its process tree "
			"holds a read lock: EDEADLK",
			(int)lineage[0]);
	return verdict;
}
