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
		return 0;
	if (held == ZKL_MODE_WRITE || asked == ZKL_MODE_READ)
		return 1;
	return -EDEADLK;
}

/* What a search needs: the resource, its lock files' inodes, the
 * asker's lineage, and the best lock found so far. */
struct reentrant_search {
	struct zkl_fs *fs;
	struct tree_res *res;
	uint64_t inos[3];
	const struct lineage_proc *lineage;
	size_t n;
	struct zkl_lockreq *best;
};

/* Is lr, held by `holder` through lock file lf_ino, a lock of the
 * resource that the lineage holds: taken by one of its processes, which
 * still runs and still has a descriptor of the resource's lock files
 * open (a process that passed its descriptor on and closed its own
 * holds nothing)?  A write lock is preferred. */
static void reentrant_consider(struct reentrant_search *q, fuse_ino_t lf_ino,
			       struct lineage_proc holder,
			       struct zkl_lockreq *lr)
{
	struct zkl_fs *fs = q->fs;

	if (!lr || tree_res_of(&fs->tree, lf_ino) != q->res ||
	    tree_role_of(&fs->tree, lf_ino) == TREE_ROLE_MULTI ||
	    !lineage_has(q->lineage, q->n, holder) || !lockreq_holds(lr) ||
	    lockreq_mode(lr) == ZKL_MODE_LEASE ||
	    (q->best && lockreq_mode(q->best) == ZKL_MODE_WRITE) ||
	    !lineage_has_open(holder, q->inos, 3))
		return;
	q->best = lr;
}

int reentrant_find_locked(struct zkl_fs *fs, fuse_ino_t ino, enum zkl_mode mode,
			  const struct lineage_proc *lineage, size_t n,
			  struct zkl_lockreq **held)
{
	struct reentrant_search q = {
		.fs = fs,
		.res = tree_res_of(&fs->tree, ino),
		.lineage = lineage,
		.n = n,
	};

	ZKL_ASSERT_HELD(&fs->lock);
	if (!q.res || mode == ZKL_MODE_LEASE ||
	    tree_role_of(&fs->tree, ino) == TREE_ROLE_MULTI)
		return 0;
	q.inos[0] = tree_ino(&fs->tree, q.res, TREE_WRITE);
	q.inos[1] = tree_ino(&fs->tree, q.res, TREE_READ);
	q.inos[2] = tree_ino(&fs->tree, q.res, TREE_LOCK);
	for (struct zkl_link *l = fs->lockfiles.next; l != &fs->lockfiles;
	     l = l->next) {
		struct lockfile *lf =
			ZKL_CONTAINER_OF(l, struct lockfile, link);
		if (lf->state == LF_OPEN)
			reentrant_consider(&q, lf->ino, lf->holder, lf->held);
	}
	for (struct zkl_link *l = fs->posix_locks.next; l != &fs->posix_locks;
	     l = l->next) {
		struct posixlock *p =
			ZKL_CONTAINER_OF(l, struct posixlock, link);
		reentrant_consider(&q, p->ino, p->holder, p->lr);
	}
	if (!q.best)
		return 0;
	*held = q.best;
	return reentrant_verdict(lockreq_mode(q.best), mode);
}

int reentrant_take(struct zkl_fs *fs, fuse_ino_t ino, enum zkl_mode mode,
		   const struct lineage_proc *lineage, size_t n,
		   struct zkl_lockreq **held)
{
	int verdict;

	pthread_mutex_lock(&fs->lock);
	verdict = fs->stopping ? 0
			       : reentrant_find_locked(fs, ino, mode, lineage,
						       n, held);
	/* Under fs->lock: its holder cannot let it go meanwhile. */
	if (verdict > 0 && lockreq_share(*held) < 0)
		verdict = 0;
	pthread_mutex_unlock(&fs->lock);
	if (verdict > 0)
		log_msg(LOG_DEBUG,
			"pid %d takes the %s lock its process tree holds "
			"again (%u holds)",
			(int)lineage[0].pid,
			names_mode_str(lockreq_mode(*held)),
			lockreq_owners(*held));
	else if (verdict == -EDEADLK)
		log_msg(LOG_DEBUG,
			"pid %d asks a write lock while its process tree "
			"holds a read lock: EDEADLK",
			(int)lineage[0].pid);
	return verdict;
}
