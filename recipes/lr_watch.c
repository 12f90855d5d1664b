/*
 * lr_watch.c - what a waiting lock request watches (lr.h): the one node
 * ahead of it that can unblock it; for the first waiter of a semaphore,
 * every lease ahead of it (any holder's return can unblock it); for a
 * lease, the resource's data, where the limit is kept; and from its first
 * wait (or its grant) on, its own node, so that a deletion by anyone else
 * is news it hears before it can be granted, or a loss once held.
 */
#include "lr.h"
#include "lockrule.h"
#include "revoke.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "log.h"

/* One of a first waiter's watches on the leases ahead of it. */
struct lr_ahead {
	struct zkl_watch watch;
	struct zkl_lockreq *lr;
};

int lr_watch_one(struct zkl_lockreq *lr, const char *name)
{
	char path[NAMES_MAX_NODE_PATH + 1];
	int err = lr_child_path(lr, name, path);

	if (err < 0)
		return err;
	lr->watch.wants_marks = lr->mode == ZKL_MODE_LEASE;
	err = session_watch_locked(lr->s, path, &lr->watch);
	if (err == 0)
		lr_hold(lr, LR_HOLD_WATCH);
	return err;
}

/* Forget the first waiter's watches; the AHEAD hold stays with the
 * caller. */
static void lr_drop_ahead(struct zkl_lockreq *lr)
{
	for (size_t i = 0; i < lr->nahead; i++)
		watchtab_remove(&lr->s->watches, &lr->ahead[i].watch);
	free(lr->ahead);
	lr->ahead = NULL;
	lr->nahead = 0;
}

/* One lease ahead changed: the others no longer matter, and the array's
 * hold passes to the request's own handler, which looks again. */
static void lr_ahead_fired(struct zkl_watch *w, const char *path,
			   enum zkl_watch_event ev, struct zkl_link *notify)
{
	struct zkl_lockreq *lr =
		ZKL_CONTAINER_OF(w, struct lr_ahead, watch)->lr;

	lr_drop_ahead(lr); /* frees w */
	lr_pass_locked(lr, LR_HOLD_AHEAD, LR_HOLD_WATCH);
	lr->watch.fired_locked(&lr->watch, path, ev, notify);
}

int lr_watch_ahead(struct zkl_lockreq *lr, size_t me)
{
	const struct zkl_queue *q = lr->q;
	size_t n = lockrule_count_ahead(q->nodes, q->gone, q->lo, me);
	char path[NAMES_MAX_NODE_PATH + 1];

	assert(!lr->ahead && n > 0);
	lr->ahead = calloc(n, sizeof(*lr->ahead));
	if (!lr->ahead)
		return -ENOMEM;
	lr_hold(lr, LR_HOLD_AHEAD);
	for (size_t i = q->lo; i < me; i++) {
		struct lr_ahead *a = &lr->ahead[lr->nahead];
		int err;

		if (q->gone[i] ||
		    !lockrule_waits_for(lr->mode, q->nodes[i].mode))
			continue;
		assert(lr->nahead < n);
		list_init(&a->watch.link);
		a->watch.fired_locked = lr_ahead_fired;
		a->lr = lr;
		err = lr_child_path(lr, q->nodes[i].name, path);
		if (err == 0)
			err = session_watch_locked(lr->s, path, &a->watch);
		if (err < 0) {
			lr_unwatch(lr);
			return err;
		}
		lr->nahead++;
	}
	return 0;
}

int lr_watch_limit(struct zkl_lockreq *lr)
{
	int err;

	/* One given up already lists only to find its node (a lost create
	 * reply): a watch set now would keep it alive until the limit
	 * changes. */
	if (lr->mode != ZKL_MODE_LEASE || lr->outcome != LR_PENDING ||
	    lr->limit_watch.entry)
		return 0;
	/* The get that arms it is sent with the listing (queue.c). */
	err = session_watch_armed_locked(lr->s, lr->dir, &lr->limit_watch);
	if (err == 0)
		lr_hold(lr, LR_HOLD_LIMIT);
	return err;
}

void lr_unwatch(struct zkl_lockreq *lr)
{
	if (watchtab_remove(&lr->s->watches, &lr->watch))
		lr_drop_locked(lr, LR_HOLD_WATCH);
	if (lr->ahead) {
		lr_drop_ahead(lr);
		lr_drop_locked(lr, LR_HOLD_AHEAD);
	}
}

/* The get that set the own watch: the node's data (is it the revocation
 * mark?), or no watch set: the node is gone (a waiter fails, a holder
 * loses), or the connection broke (set it again once connected:
 * lr_own_fired's UNKNOWN), for every watch of that path.  Its answer
 * comes before any news of a later change: a grant the view alone gave
 * waits for it (grant_awaits_own). */
static void lr_on_own_armed(int rc, const char *value, int len,
			    const struct Stat *st, const void *data)
{
	struct zkl_lockreq *lr = (struct zkl_lockreq *)data;
	struct zkl_session *s = lr->s;
	struct lr_revoke_report report = { 0 };
	struct zkl_link notify;

	session_enter(s, &notify);
	if (rc == ZOK && lr->own_watch.entry &&
	    revoke_is_break(value, len > 0 ? (size_t)len : 0)) {
		lr_break_seen_locked(lr, &notify);
	} else if (rc == ZOK && lr->own_watch.entry) {
		lr->own_known = 1;
		lr->own_conn = s->watches.connection;
		lr->own_version = st ? st->version : -1;
		/* A waiter's mark is told at its grant (lr_grant). */
		lr_revoke_check_locked(lr, value, len, &report);
		if (lr->grant_awaits_own && lr->phase == PH_WATCHING &&
		    lr->outcome == LR_PENDING)
			lr_evaluate(lr, 0, &notify);
	} else if (rc != ZOK) {
		session_wake_path_locked(s, lr->node,
					 rc == ZNONODE ? WATCH_VANISHED
						       : WATCH_UNKNOWN,
					 &notify);
	}
	lr_end_completion(lr, &notify);
	lr_revoke_tell(&report);
}

void lr_watch_own(struct zkl_lockreq *lr)
{
	struct zkl_session *s = lr->s;
	int err;

	/* A peer's lock taken on a lease's way is let go at its grant; a
	 * lock that an heir replaces sees its own node deleted by the heir. */
	if (!lr_has_node(lr) || lr->outcome == LR_FINISHED || lr->lost ||
	    (lr->mutex_names && lr_node_holds(lr)) || lr->passing ||
	    lr->own_watch.entry)
		return;
	err = watchtab_add(&s->watches, lr->node, &lr->own_watch);
	/* Our own get even when a waiter of ours behind it set the watch
	 * already: its answer is what proves the node (own_known), and it
	 * carries the data, where a request to let go may be already. */
	if (err >= 0) {
		lr->own_known = 0;
		lr_hold(lr, LR_HOLD_CALL);
		if (session_awget_locked(s, lr->node, lr_on_own_armed, lr) ==
		    ZOK) {
			lr_hold(lr, LR_HOLD_OWN);
			return;
		}
		lr_drop_locked(lr, LR_HOLD_CALL);
		if (err > 0) {
			/* No entry may claim a watch nobody asked for. */
			struct zkl_link taken;
			watchtab_take(&s->watches, lr->node, &taken);
			list_del(&lr->own_watch.link);
		} else {
			watchtab_remove(&s->watches, &lr->own_watch);
		}
		err = -ENOTCONN;
	}
	/* Unwatched, a deletion or a break mark would go unseen: try
	 * again soon (lr_resume sets it in every phase that wants it). */
	log_msg(LOG_WARNING,
		"%s: cannot watch the lock node (%s): trying again in %d ms",
		lr->node, strerror(-err), LR_WATCH_RETRY_MS);
	lr_defer_for(lr, LR_WATCH_RETRY_MS);
}

void lr_unwatch_waits(struct zkl_lockreq *lr)
{
	lr_unwatch(lr);
	if (watchtab_remove(&lr->s->watches, &lr->limit_watch))
		lr_drop_locked(lr, LR_HOLD_LIMIT);
}

void lr_unwatch_all(struct zkl_lockreq *lr)
{
	lr_unwatch_waits(lr);
	if (watchtab_remove(&lr->s->watches, &lr->own_watch))
		lr_drop_locked(lr, LR_HOLD_OWN);
}
