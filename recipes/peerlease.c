/*
 * peerlease.c - a lease in the layout of Curator's InterProcessSemaphoreV2
 * (dialect curator) or kazoo's Semaphore (dialect kazoo), so that a mount
 * and those tools share one semaphore:
 *
 *   curator  the peer's lock   <res>/locks/_c_<uuid>-lock-<seq>
 *            a lease           <res>/leases/_c_<uuid>-lease-<seq>
 *            held when <res>/leases has at most N children, ours included
 *   kazoo    the peer's lock   <res>-__lock__/<hex32>__lock__<seq>
 *            a lease           <res>/<hex32>, ephemeral, not sequential
 *            created when <res> has fewer than N children (all of them)
 *
 * N is the resource's data (limit.h) in both.  Only the holder of the
 * peer's lock counts, adds a lease and watches the count, so the order
 * and the herd-freedom of that lock (a plain request, lr->mutex) carry
 * over to the leases.  The lock is let go once the lease is held, or
 * given up.  doc/design.md, "Semaphores in the peers' layouts".
 *
 * The request is a zkl_lockreq (lr.h) whose phases run MUTEX, then
 * CREATING and COUNTING (Curator: create, then count; kazoo: count, then
 * create), WATCHING while the count is full, IDLE once held; it keeps
 * the lock request's outcome, notices and owner's calls.
 */
#include "pl.h"
#include "resource.h"
#include "zkerr.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>

#include "log.h"

static void pl_mutex_done(struct zkl_lockreq *m, int err, void *arg);

static int pl_start_mutex(struct zkl_lockreq *lr)
{
	char dir[NAMES_MAX_NODE_PATH + 1];
	struct zkl_lockreq *m;
	int err = names_peer_dir(lr->s->dialect, NAMES_PEER_LOCK, lr->res, dir);

	if (err == 0)
		err = lr_alloc(lr->s, dir, dir, ZKL_MODE_WRITE, 1,
			       lr->try_only ? LOCKREQ_TRY : 0, lr->data,
			       lr->datalen, pl_mutex_done, lr, &m);
	if (err < 0)
		return err;
	lr_wire(m);
	err = lr_start_locked(m);
	if (err < 0) {
		lr_drop_locked(m, LR_HOLD_OWNER);
		return err;
	}
	lr->mutex = m;
	lr_hold(lr, LR_HOLD_MUTEX);
	lr->phase = PH_MUTEX;
	return 0;
}

/* The peer's lock is ours (err 0), or could not be had. */
static void pl_mutex_done(struct zkl_lockreq *m, int err, void *arg)
{
	struct zkl_lockreq *lr = arg;
	struct zkl_link notify;

	session_enter(lr->s, &notify);
	lr_begin_entry_locked(lr, LR_HOLD_MUTEX);
	if (lr->mutex != m) {
		/* let go already */
	} else if (lr->outcome != LR_PENDING || lr->phase != PH_MUTEX) {
		pl_release_mutex(lr, &notify); /* the session ended under us */
	} else if (err < 0) {
		lr->phase = PH_GONE;
		pl_fail(lr, err, &notify);
	} else if (m->lost) {
		/* Granted, then lost with its session before we ran: start
		 * again on the next one. */
		lr->phase = PH_NEW;
		lr_defer(lr, &notify);
	} else if (pl_kazoo(lr)) {
		pl_count(lr, &notify);
	} else {
		pl_create(lr, &notify);
	}
	lr_end_entry_locked(lr, &notify);
	session_leave(lr->s, &notify);
}

static int pl_first_step(struct zkl_lockreq *lr)
{
	list_add_tail(&lr->s->live, &lr->member.live);
	/* Between two sessions the lock's request waits for the next one,
	 * and we with it. */
	return pl_start_mutex(lr);
}

int peerlease_start_locked(struct zkl_lockreq *lr)
{
	return lr_start_with_locked(lr, pl_first_step);
}

static void pl_resume(struct zkl_member *m, struct zkl_link *notify)
{
	struct zkl_lockreq *lr =
		ZKL_CONTAINER_OF(m, struct zkl_lockreq, member);
	int err;

	lr_begin_entry_locked(lr, LR_HOLD_RESUME);
	switch (lr->phase) {
	case PH_NEW: /* a new session: a fresh tag, and the lock again */
		pl_release_mutex(lr, notify);
		err = lr->outcome == LR_PENDING ? lr_new_tag(lr) : -ECANCELED;
		if (err == 0)
			err = pl_start_mutex(lr);
		if (err < 0) {
			lr->phase = PH_GONE;
			pl_fail(lr, err, notify);
		}
		break;
	case PH_RECOVERING:
		pl_recover(lr, notify);
		break;
	case PH_CHECKING:
		pl_check(lr, notify);
		break;
	case PH_COUNTING:
		pl_count(lr, notify);
		break;
	case PH_DELETING:
		pl_delete(lr);
		break;
	case PH_IDLE:
		if (lr->lost) { /* in jeopardy: after its margin */
			if (!lr->jeopardy_wait)
				pl_delete(lr);
		} else
			lr_watch_own(lr); /* its watch could not be set */
		break;
	default:
		break;
	}
	lr_end_entry_locked(lr, notify);
}

/* The session is over.  The peer's lock is a member of its own: a pending
 * one queues again by itself (and we keep waiting for it), a held one is
 * lost.  It is let go later, never here: the session is walking its
 * members. */
static void pl_expired(struct zkl_member *m, int requeue, struct zkl_link *lost,
		       struct zkl_link *notify)
{
	struct zkl_lockreq *lr =
		ZKL_CONTAINER_OF(m, struct zkl_lockreq, member);

	ZKL_ASSERT_HELD(&lr->s->lock);
	lr_hold(lr, LR_HOLD_ENTRY);
	lr_unwatch_all(lr);
	if (lr->outcome == LR_PENDING && requeue) {
		if (lr->phase != PH_MUTEX) {
			lr_requeue_locked(lr);
			lr->node[0] = '\0';
		}
	} else {
		lr_end_with_session_locked(lr, lost);
		lr_tell_locked(lr, -ENOTCONN, notify);
		lr->outcome = LR_FINISHED;
	}
	lr_end_entry_locked(lr, notify);
}

const struct zkl_member_ops peerlease_member_ops = {
	.resume_locked = pl_resume,
	.expired_locked = pl_expired,
	.jeopardy_locked = lr_jeopardy,
	.lost_node_locked = lr_lost_node,
	.count_locked = lr_count,
	.hold_check_locked = lr_hold_check,
};

void peerlease_wire(struct zkl_lockreq *lr)
{
	lr->peer = 1;
	lr->member.ops = &peerlease_member_ops;
	lr->watch.fired_locked = pl_leases_fired;
	lr->limit_watch.fired_locked = pl_limit_fired;
	lr->qwait.wants_limit = 0;
}
