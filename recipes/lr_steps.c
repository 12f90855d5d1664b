/*
 * lr_steps.c - the lock request's basic steps (lr.h): lining up for a
 * listing, deleting its node, marking a granted lease, waiting for the
 * connection, giving up.  They call nothing of the files above them
 * (lr_create.c, lr_machine.c, lr_hooks.c).
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

static void lr_on_deleted(int rc, const void *data);

/* Line up for the next listing of the queue (queue.h); the reply comes
 * to lr_listed.  A lease watches the limit from now on: the listing reads
 * it, and a change after that read must not go unseen.  One already in
 * line goes to the back.  The LINE hold follows the place in line: taken
 * on joining, dropped on a failure that leaves the line (the caller holds
 * another).  Returns 0 or -errno. */
int lr_line_up(struct zkl_lockreq *lr)
{
	int was_in_line = list_linked(&lr->qwait.link);
	int err = lr_watch_limit(lr);

	if (err == 0)
		err = queue_want_listing_locked(lr->q, &lr->qwait);
	if (err < 0)
		queue_leave_line_locked(&lr->qwait);
	if (!was_in_line && list_linked(&lr->qwait.link))
		lr_hold(lr, LR_HOLD_LINE);
	else if (was_in_line && !list_linked(&lr->qwait.link))
		lr_drop_locked(lr, LR_HOLD_LINE);
	return err;
}

/* List the queue: phase stays as the caller set it (LISTING or
 * RECOVERING), which tells lr_listed what to do with it. */
void lr_list(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	int err = lr_line_up(lr);

	if (err < 0) {
		/* A node we know is deleted by the finish; one we look for
		 * dies with the session. */
		lr->phase = lr->phase == PH_LISTING ? PH_IDLE : PH_GONE;
		lr_finish_locked(lr, err, notify);
	}
}

void lr_delete_begin_locked(struct zkl_lockreq *lr)
{
	lr->phase = PH_DELETING;
	lr->leaving.name = lr_node_name(lr);
	queue_leaving_add(lr->q, &lr->leaving);
	lr_hold(lr, LR_HOLD_CALL);
}

void lr_delete_unsent_locked(struct zkl_lockreq *lr)
{
	/* Only a dead handle refuses; its nodes die with it. */
	lr_drop_locked(lr, LR_HOLD_CALL);
	lr->phase = PH_GONE;
}

void lr_delete(struct zkl_lockreq *lr)
{
	lr_delete_begin_locked(lr);
	lr->delete_sent_us = session_metrics_now_us();
	if (zoo_adelete(lr->s->zh, lr->node, -1, lr_on_deleted, lr) != ZOK)
		lr_delete_unsent_locked(lr);
}

/* ZooKeeper refused to delete our node (an ACL changed by another
 * client, say): every other host would wait for it for the session's
 * life.  Try again after a back-off, doubling up to LR_DELETE_RETRY_MAX_MS,
 * until it lands or the session ends; the owner is not kept waiting
 * (lr_tell_gone_locked). */
static void lr_delete_refused(struct zkl_lockreq *lr, int rc)
{
	if (lr->delete_retry_ms == 0) {
		lr->delete_retry_ms = LR_DELETE_RETRY_FIRST_MS;
		log_msg(LOG_ERR,
			"cannot delete lock node %s (%s): other hosts see the "
			"lock held until it goes; trying again until it does",
			lr->node, zerror(rc));
	} else if (lr->delete_retry_ms < LR_DELETE_RETRY_MAX_MS) {
		lr->delete_retry_ms *= 2;
	}
	lr->delete_retries++;
	lr->s->delete_retries++;
	lr_defer_for(lr, lr->delete_retry_ms);
}

void lr_deleted_locked(struct zkl_lockreq *lr, int rc, struct zkl_link *notify)
{
	if (lr->phase != PH_DELETING)
		return;
	if (lr_is_connection_loss(rc)) {
		lr_defer(lr, notify); /* must not leave it behind */
	} else if (rc != ZOK && rc != ZNONODE && rc != ZSESSIONEXPIRED &&
		   rc != ZCLOSING && rc != ZINVALIDSTATE) {
		/* (Those three: the node went with the session.) */
		lr_delete_refused(lr, rc);
	} else {
		if (lr->delete_retry_ms != 0)
			log_msg(LOG_NOTICE,
				"lock node %s deleted after %u refusals",
				lr->node, lr->delete_retries);
		lr->delete_retry_ms = 0;
		lr->phase = PH_GONE;
		queue_leaving_done(&lr->leaving);
	}
}

/* Wait for the connection to come back, then the resume hook. */
void lr_defer(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	if (list_linked(&lr->member.resume))
		return;
	lr_hold(lr, LR_HOLD_RESUME);
	session_resume_when_connected_locked(lr->s, &lr->member, notify);
}

void lr_defer_for(struct zkl_lockreq *lr, int ms)
{
	/* Waiting already (for the connection, or a time): the resume hook
	 * redoes whatever its phase wants. */
	if (list_linked(&lr->member.resume))
		return;
	lr_hold(lr, LR_HOLD_RESUME);
	session_resume_at_locked(lr->s, &lr->member, session_clock_now() + ms);
}

int lr_is_connection_loss(int rc)
{
	return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT;
}

/*
 * Nobody wants the node any more (the owner let go, or the request
 * failed): delete it now if we know it, or make sure the step in flight
 * deletes it when it learns the name (those check outcome == FINISHED).
 */
void lr_abandon_locked(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	ZKL_ASSERT_HELD(&lr->s->lock);
	/* A peer lease gives up its own way (peerlease_abandon_locked). */
	assert(!lr->peer);
	/* An heir's write lock goes too: a transaction in flight was sent
	 * before this delete, which it leaves nothing to do if it is done. */
	lr_heir_detach_locked(lr, notify);
	lr_unwatch_all(lr);
	switch (lr->phase) {
	case PH_CREATING:
	case PH_RECOVERING:
	case PH_CHECKING:
	case PH_DELETING:
		return;
	case PH_MUTEX:
	case PH_COUNTING:
		assert(!"a peer lease's phase in a plain request");
		/* fall through */
	case PH_NEW:
	case PH_GONE:
		lr->phase = PH_GONE;
		return;
	case PH_LISTING:
	case PH_WATCHING:
	case PH_IDLE:
		lr_delete(lr);
		return;
	}
}

void lr_finish_locked(struct zkl_lockreq *lr, int err, struct zkl_link *notify)
{
	lr_tell_locked(lr, err, notify);
	lr->outcome = LR_FINISHED;
	lr_abandon_locked(lr, notify);
}

void lr_release_locked(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	lr_begin_entry_locked(lr, LR_HOLD_OWNER);
	if (lr->outcome != LR_FINISHED) {
		lr->outcome = LR_FINISHED;
		lr_abandon_locked(lr, notify);
	}
	lr_end_entry_locked(lr, notify);
}

void lr_heir_detach_locked(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	struct zkl_lockreq *from = lr->heir_of;

	if (!from)
		return;
	lr->heir_of = NULL;
	from->passing = 0;
	/* Not passed on (a downgrade that failed): let go here. */
	if (from->outcome == LR_HELD && !from->lost)
		lr_metrics_ended_locked(from, 0);
	lr_release_locked(from, notify);
}

static void lr_on_marked(int rc, const struct Stat *st, const void *data)
{
	struct zkl_lockreq *lr = (struct zkl_lockreq *)data;
	struct zkl_session *s = lr->s;
	struct zkl_link notify;

	session_enter(s, &notify);
	if (rc == ZOK && st)
		lr->own_version = st->version; /* a note next sets over it */
	if (rc == ZOK || rc == ZBADVERSION) {
		/* ZBADVERSION: a note was stored first; that is a mark too. */
		lr->marked = 1;
	} else if (lr_is_connection_loss(rc)) {
		if (lr_node_holds(lr) && lr->phase == PH_IDLE)
			lr_defer(lr, &notify); /* lr_resume marks again */
	} else if (rc != ZNONODE) {            /* ZNONODE: returned already */
		log_msg(LOG_WARNING,
			"lease %s: could not mark it granted (%s); the "
			"waiter behind it will wait for its return",
			lr->node, zerror(rc));
	}
	lr_end_completion(lr, &notify);
}

/* Tell the waiters behind a granted lease that it is (doc/design.md):
 * its data set again, only if nothing was set before (version 0), so that
 * a note stored since is kept. */
void lr_mark(struct zkl_lockreq *lr)
{
	lr_hold(lr, LR_HOLD_CALL);
	if (zoo_aset(lr->s->zh, lr->node, lr->data, (int)lr->datalen, 0,
		     lr_on_marked, lr) != ZOK)
		lr_drop_locked(
			lr,
			LR_HOLD_CALL); /* only a dead handle refuses: the node dies too */
}

static void lr_on_deleted(int rc, const void *data)
{
	struct zkl_lockreq *lr = (struct zkl_lockreq *)data;
	struct zkl_session *s = lr->s;
	struct zkl_link notify;

	session_enter(s, &notify);
	if (lr->phase == PH_DELETING)
		session_metrics_answered_locked(s, ZKL_OP_DELETE, rc,
						lr->delete_sent_us);
	lr_deleted_locked(lr, rc, &notify);
	lr_end_completion(lr, &notify);
}
