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
	const struct tree_res *res;
	uint64_t inos[3];
	const struct lineage_proc *lineage;
	size_t n;
	struct zkl_lockreq *best;
	int best_mode; /* its mode, or -ENOLCK while there is none */
};

/* Is lr, held by `holder` through lock file via, a lock of the
 * resource that the lineage holds: taken by one of its processes, which
 * still runs and still has a descriptor of the resource's lock files
 * open (a process that passed its descriptor on and closed its own
 * holds nothing)?  A write lock is preferred. */
static void reentrant_consider(struct reentrant_search *q,
			       const struct lockfile *via,
			       struct lineage_proc holder,
			       struct zkl_lockreq *lr)
{
	int held;

	if (!lr || via->res != q->res || via->multi ||
	    q->best_mode == ZKL_MODE_WRITE)
		return;
	held = lockreq_held_mode(lr);
	if (held < 0 || held == ZKL_MODE_LEASE ||
	    !lineage_has(q->lineage, q->n, holder) ||
	    !lineage_has_open(holder, q->inos, 3))
		return;
	q->best = lr;
	q->best_mode = held;
}

int reentrant_find_locked(const struct lockfile *lf, enum zkl_mode mode,
			  const struct lineage_proc *lineage, size_t n,
			  struct zkl_lockreq **held)
{
	struct zkl_fs *fs = lf->fs;
	struct reentrant_search q = {
		.res = lf->res,
		.lineage = lineage,
		.n = n,
		.best_mode = -ENOLCK,
	};

	ZKL_ASSERT_HELD(&fs->lock);
	if (mode == ZKL_MODE_LEASE || lf->multi)
		return 0;
	q.inos[0] = tree_ino(&fs->tree, q.res, TREE_WRITE);
	q.inos[1] = tree_ino(&fs->tree, q.res, TREE_READ);
	q.inos[2] = tree_ino(&fs->tree, q.res, TREE_LOCK);
	for (struct zkl_link *l = fs->lockfiles.next; l != &fs->lockfiles;
	     l = l->next) {
		struct lockfile *open =
			ZKL_CONTAINER_OF(l, struct lockfile, link);
		if (open->state == LF_OPEN)
			reentrant_consider(&q, open, open->holder, open->held);
	}
	for (struct zkl_link *l = fs->posix_locks.next; l != &fs->posix_locks;
	     l = l->next) {
		struct posixlock *p =
			ZKL_CONTAINER_OF(l, struct posixlock, link);
		reentrant_consider(&q, p->via, p->holder, p->lr);
	}
	if (!q.best)
		return 0;
	*held = q.best;
	return reentrant_verdict(q.best_mode, mode);
}

int reentrant_take(const struct lockfile *lf, enum zkl_mode mode,
		   const struct lineage_proc *lineage, size_t n,
		   struct zkl_lockreq **held)
{
	struct zkl_fs *fs = lf->fs;
	int verdict;

	pthread_mutex_lock(&fs->lock);
	verdict = fs->stopping
			  ? 0
			  : reentrant_find_locked(lf, mode, lineage, n, held);
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
