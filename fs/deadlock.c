/*
 * deadlock.c - a wait-for cycle among this mount's fcntl lock owners, and
 * the pins of the waits checked for a cycle across hosts (deadlock.h).
 *
 * A breadth of owners, each expanded once: an owner's edges go to the
 * holders of the locks its parked waits ask for.  From the asker's own
 * request: the holders of its resource, then the holders of what they
 * wait for, and so on; reaching the asker is a cycle.
 */
#include "deadlock.h"

#include "deadline.h"
#include "lockfile.h"
#include "log.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <syslog.h>

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

/* ---- waits checked for a cycle across hosts -------------------------- */

int deadlock_candidate_locked(const struct waiter *w, enum zkl_mode mode)
{
	ZKL_ASSERT_HELD(&w->fs->lock);
	/* A try waits for nobody; a lease is one of N (any holder that
	 * lets go ends the wait): no cycle can hold it for ever. */
	if (w->fs->deadlock_timeout_ms <= 0 || (w->flags & LOCKREQ_TRY) ||
	    mode == ZKL_MODE_LEASE)
		return 0;
	/* A downgrade waits for ZooKeeper alone: its read node takes the
	 * write node's place, behind nobody else's. */
	if (w->in_place)
		return 0;
	/* A multi-lock pins its own members that hold. */
	return w->lf->multi || deadlock_owner_holds_locked(w->fs, w->taker);
}

void deadlock_parked_locked(struct waiter *w)
{
	struct zkl_fs *fs = w->fs;

	ZKL_ASSERT_HELD(&fs->lock);
	if (!w->check_candidate)
		return;
	/* One timeout for all: the list stays in the order of its times. */
	w->check_at = deadline_after_ms(fs->deadlock_timeout_ms);
	w->checked = 0;
	if (fs->deadlock_asleep)
		pthread_cond_signal(&fs->deadlock_wake);
	list_add_tail(&fs->deadlock_due, &w->due_link);
}

void deadlock_unparked_locked(struct waiter *w, int runs_again)
{
	ZKL_ASSERT_HELD(&w->fs->lock);
	if (list_linked(&w->due_link))
		list_del(&w->due_link);
	/* Its thread runs again (a handler) while its request waits on: what
	 * it published could let go of its pins now. */
	if (w->checked && runs_again && w->lr)
		lockreq_uncheck_deadlock(w->lr);
	w->checked = 0;
}

/* Is ino's only user (users, from process_fd_users over inos) process
 * p? */
static int deadlock_only_user(pid_t p, fuse_ino_t ino, const uint64_t *inos,
			      const pid_t *users, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (inos[i] == ino)
			return users[i] == p;
	return 0;
}

/* Add lr to out[0..*k) unless it is there, while there is room. */
static void deadlock_add_pin(struct zkl_lockreq *lr, struct zkl_lockreq **out,
			     size_t *k, size_t max)
{
	for (size_t i = 0; i < *k; i++)
		if (out[i] == lr)
			return;
	if (*k < max)
		out[(*k)++] = lr;
}

/* The locks of this mount that process p took and alone can let go: on a
 * file no other process has open (users, from process_fd_users over
 * inos).  At most max into out.  fs->lock held. */
static size_t deadlock_pins_locked(struct zkl_fs *fs, struct lineage_proc p,
				   const uint64_t *inos, const pid_t *users,
				   size_t n, struct zkl_lockreq **out,
				   size_t max)
{
	size_t k = 0;

	for (struct zkl_link *l = fs->lockfiles.next; l != &fs->lockfiles;
	     l = l->next) {
		struct lockfile *lf =
			ZKL_CONTAINER_OF(l, struct lockfile, link);

		if (lf->state == LF_OPEN && lf->held &&
		    lf->taker.pid == p.pid && lf->taker.start == p.start &&
		    deadlock_only_user(p.pid, lf->ino, inos, users, n))
			deadlock_add_pin(lf->held, out, &k, max);
	}
	for (struct zkl_link *l = fs->posix_locks.next; l != &fs->posix_locks;
	     l = l->next) {
		struct posixlock *pl =
			ZKL_CONTAINER_OF(l, struct posixlock, link);

		if (pl->taker.pid == p.pid && pl->taker.start == p.start &&
		    deadlock_only_user(p.pid, pl->ino, inos, users, n))
			deadlock_add_pin(pl->lr, out, &k, max);
	}
	return k;
}

/* The inodes of the lock files that hold a lock: those a pin can be.
 * Into a new array, *n of them; NULL if none (or no memory).  fs->lock
 * held. */
static uint64_t *deadlock_held_inos_locked(struct zkl_fs *fs, size_t *n)
{
	size_t cap = 0, k = 0;
	uint64_t *inos = NULL;

	for (int pass = 0; pass < 2; pass++) {
		for (struct zkl_link *l = fs->lockfiles.next;
		     l != &fs->lockfiles; l = l->next) {
			struct lockfile *lf =
				ZKL_CONTAINER_OF(l, struct lockfile, link);
			if (lf->state != LF_OPEN || !lf->held)
				continue;
			if (pass == 1)
				inos[k] = lf->ino;
			k++;
		}
		for (struct zkl_link *l = fs->posix_locks.next;
		     l != &fs->posix_locks; l = l->next) {
			struct posixlock *pl =
				ZKL_CONTAINER_OF(l, struct posixlock, link);
			if (pass == 1)
				inos[k] = pl->ino;
			k++;
		}
		if (pass == 0) {
			cap = k;
			k = 0;
			if (cap == 0 || !(inos = calloc(cap, sizeof(*inos))))
				break;
		}
	}
	*n = k;
	assert(k == cap || !inos);
	return inos;
}

/* Processes whose descriptors cannot be read, at most, in one look. */
#define DEADLOCK_HIDDEN_MAX 16

/* Is one of the processes hidden[0..n) (whose descriptors the kernel will
 * not show) p's descendant?  Only such a one can share an open file
 * description p took (inherited at a fork: p, blocked in its one thread,
 * can hand nothing on while it waits), and then p pins nothing.  Any
 * other hidden process may have our files open only through descriptions
 * of its own, which lock nothing of p's. */
static int deadlock_hidden_child(pid_t p, const pid_t *hidden, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (process_descends_from(hidden[i], p))
			return 1;
	return 0;
}

/* At most this many waits are checked at once (one read of /proc). */
#define DEADLOCK_BATCH 256
/* At most this many pins a wait publishes. */
#define DEADLOCK_MAX_PINS 64

/*
 * Check the waits on `checking` (their timeout has passed): which of the
 * locks their processes hold can only be let go by them (one read of
 * every process's descriptors for the lot), then lockreq_check_deadlock
 * for each that still waits.  A process of more than one thread pins
 * nothing: another thread may let go while this one waits.  A wait that
 * leaves PARKED meanwhile leaves `checking` too (deadlock_unparked_locked).
 * fs->lock held; dropped while /proc is read.
 */
static void deadlock_check_locked(struct zkl_fs *fs, struct zkl_link *checking,
				  const struct lineage_proc *takers, size_t n)
{
	struct zkl_lockreq *pins[DEADLOCK_MAX_PINS];
	int threads[DEADLOCK_BATCH];
	pid_t hidden[DEADLOCK_HIDDEN_MAX];
	size_t nhidden = 0;
	pid_t *users = NULL;
	size_t ninos = 0;
	uint64_t *inos = deadlock_held_inos_locked(fs, &ninos);
	int single = 0;

	pthread_mutex_unlock(&fs->lock);
	for (size_t i = 0; i < n; i++) {
		/* A pool's waits come together: one read for its process. */
		threads[i] = i > 0 && takers[i].pid == takers[i - 1].pid &&
					     takers[i].start ==
						     takers[i - 1].start
				     ? threads[i - 1]
				     : process_threads(takers[i]);
		single |= threads[i] == 1;
	}
	/* Every process's descriptors, only if a wait may pin something. */
	if (inos && single && (users = calloc(ninos, sizeof(*users))) &&
	    process_fd_users(fs->mountpoint, inos, ninos, users, hidden,
			     &nhidden, DEADLOCK_HIDDEN_MAX) < 0)
		log_msg(LOG_DEBUG, "deadlock checks: too many processes whose "
				   "files cannot be read: no lock counts as "
				   "pinned");
	pthread_mutex_lock(&fs->lock);
	while (!list_empty(checking)) {
		struct waiter *w = ZKL_CONTAINER_OF(checking->next,
						    struct waiter, due_link);
		size_t np = 0, i = 0;

		list_del(&w->due_link);
		assert(w->state == WAITER_PARKED && w->checked);
		while (i < n && (takers[i].pid != w->taker.pid ||
				 takers[i].start != w->taker.start))
			i++;
		/* Its locks must be its process's, whose one thread is the
		 * very one that waits. */
		if (users && i < n && threads[i] == 1 &&
		    w->tid == w->taker.pid &&
		    !deadlock_hidden_child(w->taker.pid, hidden, nhidden))
			np = deadlock_pins_locked(fs, w->taker, inos, users,
						  ninos, pins,
						  DEADLOCK_MAX_PINS);
		lockreq_check_deadlock(w->lr, pins, np); /* counted */
	}
	free(users);
	free(inos);
}

static void *deadlock_checker(void *arg)
{
	struct zkl_fs *fs = arg;
	struct lineage_proc takers[DEADLOCK_BATCH];
	struct zkl_link checking;

	list_init(&checking);
	pthread_mutex_lock(&fs->lock);
	while (!fs->stopping) {
		size_t n = 0;

		/* Nothing due: sleep a timeout first, then until woken.  A
		 * wait parked meanwhile is due no earlier than that, so short
		 * waits that come and go wake nobody. */
		if (list_empty(&fs->deadlock_due)) {
			struct timespec idle_until =
				deadline_after_ms(fs->deadlock_timeout_ms);

			pthread_cond_timedwait(&fs->deadlock_wake, &fs->lock,
					       &idle_until);
			if (!list_empty(&fs->deadlock_due) || fs->stopping)
				continue;
			fs->deadlock_asleep = 1;
			pthread_cond_wait(&fs->deadlock_wake, &fs->lock);
			fs->deadlock_asleep = 0;
			continue;
		}
		while (!list_empty(&fs->deadlock_due) && n < DEADLOCK_BATCH) {
			struct waiter *w = ZKL_CONTAINER_OF(
				fs->deadlock_due.next, struct waiter, due_link);
			if (!deadline_reached(&w->check_at))
				break;
			list_del(&w->due_link);
			list_add_tail(&checking, &w->due_link);
			w->checked = 1;
			takers[n++] = w->taker;
		}
		if (n == 0) {
			struct waiter *w = ZKL_CONTAINER_OF(
				fs->deadlock_due.next, struct waiter, due_link);
			struct timespec at = w->check_at;
			pthread_cond_timedwait(&fs->deadlock_wake, &fs->lock,
					       &at);
			continue;
		}
		deadlock_check_locked(fs, &checking, takers, n);
	}
	pthread_mutex_unlock(&fs->lock);
	return NULL;
}

int deadlock_checker_start(struct zkl_fs *fs)
{
	return -pthread_create(&fs->deadlock_checker, NULL, deadlock_checker,
			       fs);
}

void deadlock_checker_stop(struct zkl_fs *fs)
{
	pthread_mutex_lock(&fs->lock);
	assert(fs->stopping);
	pthread_cond_signal(&fs->deadlock_wake);
	pthread_mutex_unlock(&fs->lock);
	pthread_join(fs->deadlock_checker, NULL);
}
