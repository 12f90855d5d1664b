/*
 * lr_hooks.c - what the session calls on a lock request (lr.h): resume
 * after a reconnection, a fired watch, the end of the session, counting.
 */
#include "lr.h"
#include "lockrule.h"
#include "zkerr.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "log.h"

/* Queue anew on a new session: a fresh GUID, so that nothing of an earlier
 * session (which ZooKeeper deletes anyway) is ever taken for ours. */
static void lr_restart(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	int err;

	/* A downgrade's write lock ended with the old session: this is a
	 * plain read request now. */
	lr_heir_detach_locked(lr, notify);
	err = lr_new_tag(lr);

	if (err < 0) {
		lr->phase = PH_GONE;
		lr_finish_locked(lr, err, notify);
		return;
	}
	lr_create(lr, notify);
}

static void lr_resume(struct zkl_member *m, struct zkl_link *notify)
{
	struct zkl_lockreq *lr =
		ZKL_CONTAINER_OF(m, struct zkl_lockreq, member);

	lr_begin_entry_locked(lr, LR_HOLD_RESUME);
	switch (lr->phase) {
	case PH_NEW:
		if (lr->outcome == LR_PENDING)
			lr_restart(lr, notify);
		else
			lr->phase = PH_GONE;
		break;
	case PH_RECOVERING:
	case PH_CHECKING:
		lr->phase = PH_RECOVERING;
		lr_list(lr, notify);
		break;
	case PH_LISTING:
		lr_watch_own(lr); /* if it could not be set */
		lr_list(lr, notify);
		break;
	case PH_WATCHING:
		lr_watch_own(lr); /* if it could not be set */
		break;
	case PH_DELETING:
		lr_delete(lr);
		break;
	case PH_IDLE:
		if (lr->lost) { /* in jeopardy: after its margin */
			if (!lr->jeopardy_wait)
				lr_delete(lr);
			break;
		}
		if (lr->mode == ZKL_MODE_LEASE && lr_node_holds(lr) &&
		    !lr->marked)
			lr_mark(lr); /* its reply was lost with the connection */
		lr_watch_own(lr);    /* if it could not be set */
		break;
	default:
		break;
	}
	lr_end_entry_locked(lr, notify);
}

/*
 * Did the node `name` (a child of our resource) go with nothing in its
 * place, so that the session's view, with it marked gone, is right?
 * A write node may leave an heir: a downgrade creates a read node with
 * its number in the same transaction (lr_heir.c), in its place in the
 * queue, after every listing we have.  That transaction sets the write
 * node's data first, so its watchers hear of a change and list again;
 * a deletion alone, heard on the connection that set the watch, left no
 * heir.  Not so when the deletion was not seen as it happened
 * (WATCH_VANISHED), nor for a Curator read-write lock's write node:
 * Curator 5.5 creates its heir before, and apart from, the delete.
 */
static int lr_gone_for_sure(const char *name, enum zkl_watch_event ev)
{
	struct zkl_node node;

	if (ev != WATCH_GONE && ev != WATCH_VANISHED)
		return 0;
	if (names_parse(name, &node) < 0 || node.mode != ZKL_MODE_WRITE ||
	    node.style == ZKL_STYLE_ZOOKEEPER)
		return 1;
	/* Curator's mutex ("-lock-") has no reader to leave. */
	return ev == WATCH_GONE &&
	       (node.style != ZKL_STYLE_CURATOR || !strstr(name, "-__WRIT__"));
}

static void lr_watch_fired(struct zkl_watch *w, const char *path,
			   enum zkl_watch_event ev, struct zkl_link *notify)
{
	struct zkl_lockreq *lr = ZKL_CONTAINER_OF(w, struct zkl_lockreq, watch);
	size_t dirlen = strlen(lr->dir);
	const char *name = path + dirlen + 1;

	lr_begin_entry_locked(lr, LR_HOLD_WATCH);
	if (lr->phase == PH_WATCHING) {
		lr->phase = PH_LISTING;
		if (strncmp(path, lr->dir, dirlen) != 0 ||
		    path[dirlen] != '/') {
			lr_list(lr, notify); /* not a node of ours to name */
		} else if (lr_gone_for_sure(name, ev)) {
			/* No listing needed: see queue.h. */
			queue_mark_gone(lr->q, name);
			lr_evaluate(lr, 0, notify);
		} else if (ev == WATCH_CHANGED && lr->mode == ZKL_MODE_LEASE) {
			/* Set data on a lease is its mark, or a holder's
			 * note: granted either way. */
			queue_mark_granted(lr->q, name);
			lr_evaluate(lr, 0, notify);
		} else {
			lr_list(lr, notify); /* changed, or we cannot tell */
		}
	}
	lr_end_entry_locked(lr, notify);
}

/* The resource's data changed (or went): a new limit.  A waiting lease
 * looks again with it, in the next listing, which reads it. */
static void lr_limit_fired(struct zkl_watch *w, const char *path,
			   enum zkl_watch_event ev, struct zkl_link *notify)
{
	struct zkl_lockreq *lr =
		ZKL_CONTAINER_OF(w, struct zkl_lockreq, limit_watch);

	lr_begin_entry_locked(lr, LR_HOLD_LIMIT);
	(void)path;
	(void)ev;
	if (lr->outcome != LR_PENDING) {
		/* stale */
	} else if (lr->phase == PH_WATCHING || lr->phase == PH_LISTING) {
		lr_unwatch(lr);
		lr->phase = PH_LISTING;
		lr_list(lr, notify); /* to the back: a listing in flight may
				      * have read the old limit */
	} else if (lr->phase == PH_CREATING && list_linked(&lr->qwait.link)) {
		/* If this fails, the create's reply lines up again. */
		lr_line_up(lr);
	}
	/* Any other phase lines up later, reading the limit then. */
	lr_end_entry_locked(lr, notify);
}

/* A waiter's node is gone.  Nothing may grant it from now on: it stops
 * watching what is ahead and looks at a fresh listing, which cannot show
 * the node, and so fails it (lr_evaluate: EIO, logged).  Not at once: the
 * news may be our own session's end, told by a server that had not
 * closed the connection yet; then the listing fails too, and the
 * session's end queues the request again (lr_expired). */
static void lr_waiter_gone(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	lr->grant_awaits_own = 0;
	lr_unwatch(lr);
	lr->phase = PH_LISTING;
	lr_list(lr, notify);
}

/* A grant held back by a jeopardy, its node deleted by another client:
 * nothing of it is left to delete or let go (a peer lease let its tool's
 * lock go at the grant). */
static void lr_deferred_gone(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	log_msg(LOG_WARNING,
		"lock node %s was deleted by another client before its grant "
		"could be told: the request fails",
		lr->node);
	lr->phase = PH_GONE;
	lr_unwatch_all(lr);
	lr_tell_locked(lr, -EIO, notify);
	lr->outcome = LR_FINISHED;
}

/* Our own node changed.  Deleted (not by us: the release takes the watch
 * away first): a waiter fails, a held lock is lost, whoever deleted it,
 * and the next waiter may hold already.  Its data set (a note, a lease's
 * mark, someone else's write): watch again. */
static void lr_own_fired(struct zkl_watch *w, const char *path,
			 enum zkl_watch_event ev, struct zkl_link *notify)
{
	struct zkl_lockreq *lr =
		ZKL_CONTAINER_OF(w, struct zkl_lockreq, own_watch);
	int gone = ev == WATCH_GONE || ev == WATCH_VANISHED;
	int waits = lr->outcome == LR_PENDING &&
		    (lr->phase == PH_LISTING || lr->phase == PH_WATCHING ||
		     (lr->grant_deferred && lr->phase == PH_IDLE));

	lr_begin_entry_locked(lr, LR_HOLD_OWN);
	(void)path;
	lr->own_known = 0;
	if (waits && gone && lr->grant_deferred) {
		lr_deferred_gone(lr, notify);
	} else if (waits && gone) {
		lr_waiter_gone(lr, notify);
	} else if (waits && ev == WATCH_UNKNOWN) {
		/* lr_resume sets it again, a moment later: the get may have
		 * been refused while connected (an ACL changed). */
		lr_defer_for(lr, LR_WATCH_RETRY_MS);
	} else if (waits) {
		lr_watch_own(lr); /* its data set: watch again */
	} else if (!lr_node_holds(lr) || lr->lost || lr->phase != PH_IDLE ||
		   lr->passing) {
		/* released, lost already, or being replaced by its heir */
	} else if (gone) {
		const char *why = "its lock node was deleted by another client";
		log_msg(LOG_WARNING, "lock node %s: %s: the lock is lost",
			lr->node, why);
		lr->phase = PH_GONE;
		if (lr->gops) {
			lr->lost = 1;
			lr->gops->lost(lr, why, notify);
		} else {
			lr_lose_locked(lr, why, notify);
		}
	} else if (ev == WATCH_UNKNOWN) {
		/* No watch is set (the connection broke while setting it,
		 * or the get was refused): set it again a moment later, once
		 * connected (lr_resume). */
		lr_defer_for(lr, LR_WATCH_RETRY_MS);
	} else {
		/* Its data set: a note of ours, a lease's mark, or someone
		 * asking it to let go.  Watch again, and look. */
		lr_watch_own(lr); /* its get reads the data */
	}
	lr_end_entry_locked(lr, notify);
}

static void lr_expired(struct zkl_member *m, int requeue, struct zkl_link *lost,
		       struct zkl_link *notify)
{
	struct zkl_lockreq *lr =
		ZKL_CONTAINER_OF(m, struct zkl_lockreq, member);

	ZKL_ASSERT_HELD(&lr->s->lock);
	/* Ours, so that dropping the holds of the resume list and the line
	 * cannot free the request under us (a released one may have no
	 * other). */
	lr_hold(lr, LR_HOLD_ENTRY);
	lr_unwatch_all(lr);
	if (queue_leave_line_locked(&lr->qwait))
		lr_drop_locked(lr, LR_HOLD_LINE);
	/* Replies still to come from the old handle find a phase that does
	 * not expect them, and are dropped. */
	/* A member queues again only with its multi-lock's next
	 * transaction (multilock.c): it ends here. */
	if (lr->outcome == LR_PENDING && requeue && !lr->group) {
		lr_requeue_locked(lr);
	} else {
		lr_end_with_session_locked(lr, lost);
		queue_leaving_done(&lr->leaving);
		lr_finish_locked(lr, -ENOTCONN, notify);
	}
	lr_end_entry_locked(lr, notify);
}

/* The holder is told first; its node goes only a margin later, so that
 * it has that long to act before the next waiter of another host can be
 * granted, even when the session lives. */
int lr_jeopardy(struct zkl_member *m, const struct zkl_jeopardy *j,
		struct zkl_link *notify)
{
	struct zkl_lockreq *lr =
		ZKL_CONTAINER_OF(m, struct zkl_lockreq, member);

	lr_hold(lr, LR_HOLD_ENTRY);
	if (!j->declared)
		lr_tell_deferred_locked(lr, notify);
	/* A peer's lock taken by a lease on its way is no lock of the
	 * owner's: if the session lives, the lease goes on.  A member is
	 * declared lost by its multi-lock, which alone the owner holds; its
	 * margin runs here as any node's. */
	if (j->declared && lr->outcome == LR_HELD && !lr->lost && !lr->group &&
	    !lr->mutex_names) {
		lr_lose_locked(lr,
			       "ZooKeeper did not answer in time: the session "
			       "may end before it does (jeopardy)",
			       notify);
		lr_unwatch_all(lr);
		lr->jeopardy_wait = 1;
		lr->lost_ms = j->now;
	} else if (lr->jeopardy_wait && j->now >= lr->lost_ms + j->margin) {
		lr->jeopardy_wait = 0;
		/* Released since: the release deleted it already. */
		if (lr->outcome == LR_HELD && lr->phase == PH_IDLE)
			lr_defer(lr, notify);
	}
	lr_end_entry_locked(lr, notify);
	return lr->jeopardy_wait;
}

const char *lr_lost_node(const struct zkl_member *m)
{
	const struct zkl_lockreq *lr =
		ZKL_CONTAINER_OF(m, struct zkl_lockreq, member);

	ZKL_ASSERT_HELD(&lr->s->lock);
	if (!lr->lost || !lr_has_node(lr) ||
	    (lr->phase != PH_IDLE && lr->phase != PH_DELETING))
		return NULL;
	return lr->node;
}

const char *lr_shared_node(const struct zkl_member *m, unsigned *owners)
{
	const struct zkl_lockreq *lr =
		ZKL_CONTAINER_OF(m, struct zkl_lockreq, member);

	ZKL_ASSERT_HELD(&lr->s->lock);
	if (lr->owners < 2 || lr->outcome != LR_HELD || !lr_has_node(lr))
		return NULL;
	*owners = lr->owners;
	return lr->node;
}

void lr_count(const struct zkl_member *m, struct zkl_session_stats *st)
{
	const struct zkl_lockreq *lr =
		ZKL_CONTAINER_OF(m, struct zkl_lockreq, member);
	int lease = lr->mode == ZKL_MODE_LEASE;

	ZKL_ASSERT_HELD(&lr->s->lock);
	if (lr->mutex_names || lr->group)
		return; /* a peer lease's or a multi-lock's step, counted as
			 * that lease or multi-lock */
	if (lr->outcome == LR_HELD && !lr->lost) {
		st->held++;
		st->leases_held += lease;
		st->held_by[lr->mode][lr->kind]++;
	} else if (lr->outcome == LR_PENDING) {
		st->waiting++;
		st->leases_waiting += lease;
		st->waiting_by[lr->mode][lr->kind]++;
	}
}

static const struct zkl_member_ops lr_member_ops = {
	.resume_locked = lr_resume,
	.expired_locked = lr_expired,
	.jeopardy_locked = lr_jeopardy,
	.lost_node_locked = lr_lost_node,
	.shared_node_locked = lr_shared_node,
	.count_locked = lr_count,
	.hold_check_locked = lr_hold_check,
};

void lr_wire(struct zkl_lockreq *lr)
{
	lr->member.ops = &lr_member_ops;
	lr->watch.fired_locked = lr_watch_fired;
	lr->limit_watch.fired_locked = lr_limit_fired;
	lr->own_watch.fired_locked = lr_own_fired;
	lr->qwait.listed_locked = lr_listed;
}
