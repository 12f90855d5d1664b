/*
 * deadlock.c - a wait-for cycle among this mount's fcntl lock owners
 * (deadlock.h).
 *
 * A breadth of owners, each expanded once: an owner's edges go to the
 * holders of the locks its parked waits ask for.  From the asker's own
 * request: the holders of its resource, then the holders of what they
 * wait for, and so on; reaching the asker is a cycle.
 */
#include "deadlock.h"

#include "lockfile.h"

struct deadlock_walk {
	struct zkl_fs *fs;
	uint64_t target; /* the owner asking: a chain back to it is a cycle */
	uint64_t seen[DEADLOCK_MAX_OWNERS]; /* owners reached, in order */
	size_t nseen;
};

static int deadlock_conflict(enum zkl_mode held, enum zkl_mode asked)
{
	return held == ZKL_MODE_WRITE || asked == ZKL_MODE_WRITE;
}

/* A single resource's lock file: the resource, else NULL. */
static const struct tree_res *deadlock_res(const struct lockfile *lf)
{
	return lf->multi ? NULL : lf->res;
}

static int deadlock_seen(const struct deadlock_walk *d, uint64_t owner)
{
	for (size_t i = 0; i < d->nseen; i++)
		if (d->seen[i] == owner)
			return 1;
	return 0;
}

/* Add the holders of conflicting locks on res, but `asker`, to the owners
 * reached.  Returns 1 if the target is one of them, -1 if the walk is
 * too big to finish, else 0. */
static int deadlock_holders(struct deadlock_walk *d, const struct tree_res *res,
			    enum zkl_mode mode, uint64_t asker)
{
	struct zkl_fs *fs = d->fs;

	for (struct zkl_link *l = fs->posix_locks.next; l != &fs->posix_locks;
	     l = l->next) {
		struct posixlock *p =
			ZKL_CONTAINER_OF(l, struct posixlock, link);

		int held;

		if (p->owner == asker || deadlock_res(p->via) != res)
			continue;
		held = lockreq_held_mode(p->lr);
		if (held < 0 || !deadlock_conflict(held, mode))
			continue;
		if (p->owner == d->target)
			return 1;
		if (deadlock_seen(d, p->owner))
			continue;
		if (d->nseen == DEADLOCK_MAX_OWNERS)
			return -1;
		d->seen[d->nseen++] = p->owner;
	}
	return 0;
}

/* The owners that owner waits for, through its parked fcntl waits (not
 * tries: a try never waits). */
static int deadlock_expand(struct deadlock_walk *d, uint64_t owner)
{
	struct zkl_fs *fs = d->fs;

	for (struct zkl_link *l = fs->waiters.next; l != &fs->waiters;
	     l = l->next) {
		struct waiter *w = ZKL_CONTAINER_OF(l, struct waiter, link);
		const struct tree_res *res;
		int found;

		if (w->owner != owner || !w->lr || (w->flags & LOCKREQ_TRY))
			continue;
		res = deadlock_res(w->lf);
		found = res ? deadlock_holders(d, res, lockreq_mode(w->lr),
					       owner)
			    : 0;
		if (found)
			return found;
	}
	return 0;
}

int deadlock_owner_holds_locked(struct zkl_fs *fs, struct lineage_proc p)
{
	ZKL_ASSERT_HELD(&fs->lock);
	if (p.pid == 0)
		return 0;
	for (struct zkl_link *l = fs->lockfiles.next; l != &fs->lockfiles;
	     l = l->next) {
		const struct lockfile *lf =
			ZKL_CONTAINER_OF(l, struct lockfile, link);

		if (lf->state == LF_OPEN && lf->held &&
		    lf->taker.pid == p.pid && lf->taker.start == p.start)
			return 1;
	}
	for (struct zkl_link *l = fs->posix_locks.next; l != &fs->posix_locks;
	     l = l->next) {
		const struct posixlock *pl =
			ZKL_CONTAINER_OF(l, struct posixlock, link);

		if (pl->taker.pid == p.pid && pl->taker.start == p.start)
			return 1;
	}
	return 0;
}

size_t deadlock_tree_of(struct zkl_fs *fs, const struct lineage_proc *lineage,
			size_t n, struct lineage_proc *out, size_t max)
{
	size_t at[LINEAGE_MAX], found = 0, kept = 0, waiting = 1;

	pthread_mutex_lock(&fs->lock);
	for (size_t i = 1; i < n && found < max && found < LINEAGE_MAX; i++)
		if (deadlock_owner_holds_locked(fs, lineage[i]))
			at[found++] = i;
	pthread_mutex_unlock(&fs->lock);
	/* Most asks end here: no ancestor holds anything.  Else the chain of
	 * waits up to the farthest holder, one /proc read a process. */
	for (size_t k = 0; k < found; k++) {
		while (waiting <= at[k] &&
		       lineage_waits_for(lineage[waiting].pid,
					 lineage[waiting - 1].pid))
			waiting++;
		if (waiting <= at[k])
			break; /* it does not wait for us: nor do those above */
		out[kept++] = lineage[at[k]];
	}
	return kept;
}

int deadlock_would_close_locked(const struct lockfile *lf, uint64_t owner,
				enum zkl_mode mode)
{
	struct zkl_fs *fs = lf->fs;
	struct deadlock_walk d = { .fs = fs, .target = owner };
	const struct tree_res *res = deadlock_res(lf);
	int found;

	ZKL_ASSERT_HELD(&fs->lock);
	if (!owner || !res || mode == ZKL_MODE_LEASE)
		return 0;
	found = deadlock_holders(&d, res, mode, owner);
	for (size_t i = 0; found == 0 && i < d.nseen; i++)
		found = deadlock_expand(&d, d.seen[i]);
	return found > 0;
}
