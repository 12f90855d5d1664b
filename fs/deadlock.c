/*
 * deadlock.c - a wait-for cycle among this mount's fcntl lock owners
 * (deadlock.h).
 */
#include "deadlock.h"

#include "lockfile.h"

struct deadlock_walk {
	struct zkl_fs *fs;
	uint64_t target; /* the owner asking: a chain back to it is a cycle */
	unsigned steps;
};

static int deadlock_conflict(enum zkl_mode held, enum zkl_mode asked)
{
	return held == ZKL_MODE_WRITE || asked == ZKL_MODE_WRITE;
}

/* A single resource's lock file: the resource, else NULL. */
static struct tree_res *deadlock_res(struct zkl_fs *fs, fuse_ino_t ino)
{
	if (tree_role_of(&fs->tree, ino) == TREE_ROLE_MULTI)
		return NULL;
	return tree_res_of(&fs->tree, ino);
}

static int deadlock_reaches(struct deadlock_walk *d, struct tree_res *res,
			    enum zkl_mode mode, uint64_t asker);

/* Does lock owner `holder`, through one of its parked waits, reach the
 * target? */
static int deadlock_waits_of(struct deadlock_walk *d, uint64_t holder)
{
	struct zkl_fs *fs = d->fs;

	for (struct zkl_link *l = fs->waiters.next; l != &fs->waiters;
	     l = l->next) {
		struct waiter *w = ZKL_CONTAINER_OF(l, struct waiter, link);
		struct tree_res *res;

		if (w->owner != holder || !w->lr)
			continue;
		res = deadlock_res(fs, w->lf->ino);
		if (res &&
		    deadlock_reaches(d, res, lockreq_mode(w->lr), holder))
			return 1;
	}
	return 0;
}

/* Would `asker`, asking `mode` on res, wait (through a chain of local
 * holders and their waits) for the target? */
static int deadlock_reaches(struct deadlock_walk *d, struct tree_res *res,
			    enum zkl_mode mode, uint64_t asker)
{
	struct zkl_fs *fs = d->fs;

	for (struct zkl_link *l = fs->posix_locks.next; l != &fs->posix_locks;
	     l = l->next) {
		struct posixlock *p =
			ZKL_CONTAINER_OF(l, struct posixlock, link);

		if (++d->steps > DEADLOCK_MAX_STEPS)
			return 0;
		if (p->owner == asker || deadlock_res(fs, p->ino) != res ||
		    !lockreq_holds(p->lr) ||
		    !deadlock_conflict(lockreq_mode(p->lr), mode))
			continue;
		if (p->owner == d->target || deadlock_waits_of(d, p->owner))
			return 1;
	}
	return 0;
}

int deadlock_would_close_locked(struct zkl_fs *fs, fuse_ino_t ino,
				uint64_t owner, enum zkl_mode mode)
{
	struct deadlock_walk d = { .fs = fs, .target = owner };
	struct tree_res *res = deadlock_res(fs, ino);

	ZKL_ASSERT_HELD(&fs->lock);
	return owner && res && mode != ZKL_MODE_LEASE &&
	       deadlock_reaches(&d, res, mode, owner);
}
