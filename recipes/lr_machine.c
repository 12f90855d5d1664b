/*
 * lr_machine.c - what a lock request does with a listing of its queue:
 * hold, fail, or watch what can unblock it (see lockreq.c for the two
 * variables, outcome and phase, and doc/design.md for the diagram).
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

static void lr_grant(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	lr->phase = PH_IDLE;
	lr_unwatch_waits(lr); /* its own node stays watched */
	if (lr->mode == ZKL_MODE_LEASE) {
		queue_mark_granted(lr->q, lr_node_name(lr));
		lr_mark(lr);
	}
	lr_tell_locked(lr, 0, notify);
	lr_revoke_post_locked(lr, notify); /* a mark seen while it waited */
	lr_watch_own(lr);
}

/* A lease whose limit could not be read with its listing. */
static void lr_limit_unknown(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	int err = lr->q->limit_err;

	if (err == -ENOENT || err == -ENODATA) {
		/* The resource appeared between the get and the listing, or
		 * the listing had no get with it: read it with the next. */
		lr->phase = PH_LISTING;
		lr_list(lr, notify);
		return;
	}
	if (err == -EBADMSG)
		log_msg(LOG_ERR,
			"%s: its data is not a limit (set one with "
			"MOUNT/<resource>/limit)",
			lr->dir);
	lr->phase = PH_IDLE;
	lr_finish_locked(lr, err == -EBADMSG ? -EIO : err, notify);
}

/* Look at the queue (the session's view of it): held, or watch what can
 * unblock us -- the one node ahead, or for the first waiter of a
 * semaphore every lease ahead.
 *
 * A grant needs our node to be there as late as the news that cleared the
 * way.  A listing just back shows both at once.  The view with nodes
 * marked gone since does not: another client may have deleted our node
 * meanwhile, and the next waiter, on any host, be granted too.  Our own
 * watch is set before the first watch on a node ahead, and so before any
 * news that can clear the way from the view, and ZooKeeper tells a client of changes in the order
 * they happened, so once its get is back (own_known) a deletion of our
 * node would have been told first (lr_own_fired).  Until then the grant
 * waits for that answer. */
void lr_evaluate(struct zkl_lockreq *lr, int listed, struct zkl_link *notify)
{
	struct zkl_queue *q = lr->q;
	ssize_t me = queue_find(q, lr_node_name(lr));
	ssize_t ahead = -1;
	int all = 0, err;

	if (lr->maybe_stray)
		lr_delete_strays(lr, me);
	if (me < 0) {
		/* Not in a listing taken after it was made: deleted by another
		 * client while we queued.  Should it be there after all, it
		 * must not block the queue: the finish deletes it. */
		log_msg(LOG_WARNING,
			"lock node %s is not in its queue's listing (deleted "
			"by another client?): deleting it, the request fails",
			lr->node);
		lr_finish_locked(lr, -EIO, notify);
		return;
	}
	if (lr->mode != ZKL_MODE_LEASE) {
		ahead = queue_pick_watch(q, (size_t)me);
	} else if (q->limit_err < 0) {
		lr_limit_unknown(lr, notify);
		return;
	} else {
		switch (lockrule_lease(q->nodes, q->gone, q->granted, q->lo,
				       (size_t)me, q->limit, &ahead)) {
		case LOCKRULE_LEASE_HOLD:
			ahead = -1;
			break;
		case LOCKRULE_LEASE_AHEAD:
			all = 1;
			break;
		case LOCKRULE_LEASE_ONE:
			break;
		}
	}
	lr->grant_awaits_own = 0;
	if (ahead < 0 && !listed && !lr->own_known && lr->own_watch.entry) {
		lr->phase = PH_WATCHING;
		lr->grant_awaits_own = 1; /* lr_on_own_armed looks again */
		return;
	}
	if (ahead < 0 && !listed &&
	    (!lr->own_known || lr->own_conn != lr->s->watches.connection)) {
		/* Its own watch could not be set, or proved the node on a
		 * connection since lost (after a reconnection the server
		 * tells missed deletions in no particular order): only a
		 * listing can show its node is still there. */
		lr->phase = PH_LISTING;
		lr_list(lr, notify);
		return;
	}
	if (ahead < 0) {
		lr_grant(lr, notify);
		return;
	}
	if (lr->try_only) {
		lr->phase = PH_IDLE;
		lr_finish_locked(lr, -EAGAIN, notify);
		return;
	}
	lr->phase = PH_WATCHING;
	lr_watch_own(lr); /* first: see above */
	err = all ? lr_watch_ahead(lr, (size_t)me)
		  : lr_watch_one(lr, q->nodes[ahead].name);
	if (err < 0) {
		lr->phase = PH_IDLE;
		lr_finish_locked(lr, err, notify);
	}
}

void lr_listed(struct zkl_queue_wait *w, int rc, struct zkl_link *notify)
{
	struct zkl_lockreq *lr = ZKL_CONTAINER_OF(w, struct zkl_lockreq, qwait);

	lr_begin_entry_locked(lr, LR_HOLD_LINE);
	if (lr->phase != PH_LISTING && lr->phase != PH_RECOVERING) {
		/* stale: the request moved on (cancelled, expired, or its
		 * create failed and it lined up again) */
	} else if (lr_is_connection_loss(rc) && lr->try_only &&
		   lr->phase == PH_LISTING && lr->outcome == LR_PENDING) {
		/* A try is answered now: its node is deleted once connected. */
		lr_finish_locked(lr, -EAGAIN, notify);
	} else if (lr_is_connection_loss(rc)) {
		lr_defer(lr, notify);
	} else if (rc == ZOK && lr->phase == PH_LISTING && lr->q->acl_open) {
		lr->phase = PH_IDLE; /* so that the finish deletes our node */
		lr_finish_locked(lr, -EACCES, notify);
	} else if (rc == ZOK && lr->phase == PH_LISTING) {
		lr_evaluate(lr, 1, notify);
	} else if ((rc == ZOK || rc == ZNONODE) && lr->phase == PH_RECOVERING) {
		lr_recover(lr, notify);
	} else {
		lr->phase = lr->phase == PH_LISTING ? PH_IDLE : PH_GONE;
		lr_finish_locked(lr, rc == ZNONODE ? -EIO : zkerr_errno(rc),
				 notify);
	}
	lr_end_entry_locked(lr, notify);
}
