/*
 * waiter_poll.c - the waiters that ignored a first signal, looked at again
 * (see waiter.c): the kernel sends one FUSE_INTERRUPT per request; and the
 * waits kept for a restart that did not come, given up (waiter.h).
 */
#include "waiter.h"

#include <assert.h>

#include "deadline.h"

/* How often waiters that ignored a first signal are looked at again. */
#define WAITER_POLL_MS 100
/* ... and, while there are waits kept for a restart, how often their
 * threads are looked at (has one gone on without asking again?). */
#define WAITER_KEPT_POLL_MS 2

/* The waiters that ignored a signal, each with a reference, in `out`;
 * fs->lock held.  Returns how many. */
static size_t waiter_take_watched_locked(struct zkl_fs *fs, struct waiter **out,
					 size_t max)
{
	size_t n = 0;

	ZKL_ASSERT_HELD(&fs->lock);
	for (struct zkl_link *l = fs->waiters.next;
	     l != &fs->waiters && n < max; l = l->next) {
		struct waiter *w = ZKL_CONTAINER_OF(l, struct waiter, link);
		if (!w->watch_signals)
			continue;
		atomic_fetch_add(&w->refs, 1);
		out[n++] = w;
	}
	return n;
}

/*
 * The kernel sends FUSE_INTERRUPT once per request.  When the first
 * signal did not cancel the wait (SIGCHLD of a shell's background job),
 * a later SIGTERM, SIGINT or SIGKILL brings no new interrupt: it only
 * stays pending on the waiting thread.  So those waiters' pending
 * signals are read again every WAITER_POLL_MS; nobody else is polled,
 * and the thread sleeps while there are none, no kept wait, no try and
 * no failure waiting for ZooKeeper (their deadlines are kept here too).
 */
static void *waiter_poller(void *arg)
{
	struct zkl_fs *fs = arg;
	struct waiter *batch[64], *late[64];
	struct unlock *unlocks[64];
	int errs[64];
	struct zkl_link ending;
	size_t n, nlate, nunlocks;

	list_init(&ending);
	pthread_mutex_lock(&fs->lock);
	while (!fs->stopping) {
		if (fs->signal_watched == 0 && list_empty(&fs->kept) &&
		    fs->tries == 0 && list_empty(&fs->failing) &&
		    list_empty(&fs->unlocks)) {
			pthread_cond_wait(&fs->signal_poll, &fs->lock);
			continue;
		}
		struct timespec t = deadline_after_ms(
			list_empty(&fs->kept) ? WAITER_POLL_MS
					      : WAITER_KEPT_POLL_MS);
		pthread_cond_timedwait(&fs->signal_poll, &fs->lock, &t);
		if (fs->stopping)
			break;
		n = waiter_take_watched_locked(fs, batch, 64);
		nlate = waiter_take_late_locked(fs, late, errs, 64);
		nunlocks = unlock_take_late_locked(fs, unlocks, 64);
		waiter_take_expired_locked(fs, 0, &ending);
		pthread_mutex_unlock(&fs->lock);
		for (size_t i = 0; i < n; i++)
			waiter_recheck_signals(batch[i]);
		for (size_t i = 0; i < nlate; i++)
			waiter_answer_late(late[i], errs[i]);
		for (size_t i = 0; i < nunlocks; i++)
			unlock_answer_late(unlocks[i]);
		waiter_end_kept_all(&ending);
		pthread_mutex_lock(&fs->lock);
	}
	pthread_mutex_unlock(&fs->lock);
	return NULL;
}

int waiter_poller_start(struct zkl_fs *fs)
{
	return -pthread_create(&fs->signal_poller, NULL, waiter_poller, fs);
}

void waiter_poller_stop(struct zkl_fs *fs)
{
	pthread_mutex_lock(&fs->lock);
	assert(fs->stopping);
	pthread_cond_signal(&fs->signal_poll);
	pthread_mutex_unlock(&fs->lock);
	pthread_join(fs->signal_poller, NULL);
}
