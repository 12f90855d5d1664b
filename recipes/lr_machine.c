/*
 * lr_machine.c - the lock request's steps and the ZooKeeper completions
 * that drive them (see lockreq.c for the two variables, outcome and
 * phase, and doc/design.md for the diagram).
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

static void lr_on_created(int rc, const char *name, const struct Stat *st,
			  const void *data);
static void lr_on_checked(int rc, const struct Stat *st, const void *data);
static void lr_on_deleted(int rc, const void *data);

/* ---- sending ---------------------------------------------------------- */

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

int lr_queue_create(struct zkl_lockreq *lr)
{
	int rc;

	lr_hold(lr, LR_HOLD_CALL);
	rc = zoo_acreate2(lr->s->zh, lr->create_path, lr->data,
			  (int)lr->datalen, lr->s->acl,
			  ZOO_EPHEMERAL_SEQUENTIAL, lr_on_created, lr);
	if (rc != ZOK) {
		lr_drop_locked(lr, LR_HOLD_CALL);
		return zkerr_errno(rc);
	}
	lr->create_attempts++;
	lr->phase = PH_CREATING;
	/* Pipelined: the session orders our requests, so a listing sent now
	 * already contains the node created just before it.  If this fails,
	 * the create's reply lines up again. */
	lr_line_up(lr);
	return 0;
}

void lr_create(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	int err = lr_queue_create(lr);

	if (err == -ENOTCONN && !lr->try_only) {
		/* The handle has ended: its event requeues us (see
		 * lr_first_step). */
		lr->phase = PH_NEW;
		return;
	}
	if (err < 0) {
		lr->phase = PH_GONE;
		lr_finish_locked(lr, err, notify);
	}
}

int lr_start_with_locked(struct zkl_lockreq *lr,
			 int (*first_step)(struct zkl_lockreq *lr))
{
	int err;

	ZKL_ASSERT_HELD(&lr->s->lock);
	err = lr->outcome != LR_PENDING ? -ECANCELED
	      : lr->s->dead             ? -ENOTCONN
	      : lr->try_only && !session_is_connected_locked(lr->s)
		      ? -EAGAIN /* a try is answered now, not on reconnection */
		      : first_step(lr);
	if (err < 0 && err != -ECANCELED) {
		lr->outcome = LR_FINISHED;
		lr->phase = PH_GONE;
	}
	return err;
}

static int lr_first_step(struct zkl_lockreq *lr)
{
	struct zkl_session *s = lr->s;
	int err;

	if (!lr->q && !(lr->q = queue_get_locked(s, lr->dir)))
		return -ENOMEM;
	list_add_tail(&s->live, &lr->member.live);
	if (s->state == ZKL_CONN_EXPIRED || s->draining) {
		/* Between two sessions: queue on the next one. */
		lr_hold(lr, LR_HOLD_RESUME);
		list_add_tail(&s->resume, &lr->member.resume);
		return 0;
	}
	err = lr_queue_create(lr);
	if (err == -ENOTCONN)
		/* The handle has ended and its event is on its way: that
		 * event requeues every live request on the next session (or
		 * fails them, if there is none).  A try is answered now. */
		return lr->try_only ? -EAGAIN : 0;
	return err;
}

int lr_start_locked(struct zkl_lockreq *lr)
{
	return lr_start_with_locked(lr, lr_first_step);
}

void lr_release_locked(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	lr_begin_entry_locked(lr, LR_HOLD_OWNER);
	if (lr->outcome != LR_FINISHED) {
		lr->outcome = LR_FINISHED;
		lr_abandon_locked(lr);
	}
	lr_end_entry_locked(lr, notify);
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

static void lr_check_owner(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	int rc;

	lr->phase = PH_CHECKING;
	lr_hold(lr, LR_HOLD_CALL);
	rc = zoo_aexists(lr->s->zh, lr->node, 0, lr_on_checked, lr);
	if (rc != ZOK) {
		lr_drop_locked(lr, LR_HOLD_CALL);
		lr->phase = PH_GONE;
		lr_finish_locked(lr, zkerr_errno(rc), notify);
	}
}

void lr_delete(struct zkl_lockreq *lr)
{
	lr->phase = PH_DELETING;
	lr->leaving.name = lr_node_name(lr);
	queue_leaving_add(lr->q, &lr->leaving);
	lr_hold(lr, LR_HOLD_CALL);
	if (zoo_adelete(lr->s->zh, lr->node, -1, lr_on_deleted, lr) != ZOK) {
		/* Only a dead handle refuses; its nodes die with it. */
		lr_drop_locked(lr, LR_HOLD_CALL);
		lr->phase = PH_GONE;
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

int lr_is_connection_loss(int rc)
{
	return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT;
}

/*
 * Nobody wants the node any more (the owner let go, or the request
 * failed): delete it now if we know it, or make sure the step in flight
 * deletes it when it learns the name (those check outcome == FINISHED).
 */
void lr_abandon_locked(struct zkl_lockreq *lr)
{
	ZKL_ASSERT_HELD(&lr->s->lock);
	lr_unwatch_all(lr);
	switch (lr->phase) {
	case PH_CREATING:
	case PH_RECOVERING:
	case PH_CHECKING:
	case PH_DELETING:
		return;
	case PH_NEW:
	case PH_GONE:
	case PH_MUTEX: /* a peer lease's phases (peerlease.c) */
	case PH_COUNTING:
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
	lr_abandon_locked(lr);
}

/* ---- completions ------------------------------------------------------ */

static void lr_on_created(int rc, const char *name, const struct Stat *st,
			  const void *data)
{
	struct zkl_lockreq *lr = (struct zkl_lockreq *)data;
	struct zkl_session *s = lr->s;
	struct zkl_link notify;

	session_enter(s, &notify);
	if (lr->phase != PH_CREATING) {
		/* The session expired under us: nothing to do. */
	} else if (rc == ZOK) {
		lr->czxid = st->czxid;
		if (lr_set_node(lr, name, NULL) < 0) {
			lr->phase = PH_GONE;
			lr_finish_locked(lr, -ENAMETOOLONG, &notify);
			/* the node dies with the session; nothing better */
		} else if (lr->outcome == LR_FINISHED) {
			lr_delete(lr);
		} else {
			lr->phase = PH_LISTING;
			if (!list_linked(&lr->qwait.link))
				lr_list(lr, &notify);
		}
	} else {
		if (lr_is_connection_loss(rc)) {
			/* Created or not?  Only a listing can tell. */
			lr->phase = PH_RECOVERING;
			lr->maybe_stray = 1;
			/* A try is answered now; once connected, the node is
			 * found by its tag and deleted, as for a cancel. */
			if (lr->try_only)
				lr_finish_locked(lr, -EAGAIN, &notify);
			lr_defer(lr, &notify);
		} else if (rc == ZNONODE && lr->outcome == LR_PENDING &&
			   lr->create_attempts < LR_MAX_CREATE_ATTEMPTS) {
			int err = session_create_parents_locked(s, lr->dir);
			if (err < 0) {
				lr->phase = PH_GONE;
				lr_finish_locked(lr, err, &notify);
			} else {
				lr_create(lr, &notify);
			}
		} else {
			lr->phase = PH_GONE;
			lr_finish_locked(lr, zkerr_errno(rc), &notify);
		}
	}
	lr_end_completion(lr, &notify);
}

static void lr_on_marked(int rc, const struct Stat *st, const void *data)
{
	struct zkl_lockreq *lr = (struct zkl_lockreq *)data;
	struct zkl_session *s = lr->s;
	struct zkl_link notify;

	(void)st;
	session_enter(s, &notify);
	if (rc == ZOK || rc == ZBADVERSION) {
		/* ZBADVERSION: a note was stored first; that is a mark too. */
		lr->marked = 1;
	} else if (lr_is_connection_loss(rc)) {
		if (lr->outcome == LR_HELD && lr->phase == PH_IDLE)
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

static void lr_grant(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	lr->phase = PH_IDLE;
	lr_unwatch_all(lr);
	if (lr->mode == ZKL_MODE_LEASE) {
		queue_mark_granted(lr->q, lr_node_name(lr));
		lr_mark(lr);
	}
	lr_tell_locked(lr, 0, notify);
	lr_watch_held(lr);
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
 * semaphore every lease ahead. */
void lr_evaluate(struct zkl_lockreq *lr, struct zkl_link *notify)
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
	err = all ? lr_watch_ahead(lr, (size_t)me)
		  : lr_watch_one(lr, q->nodes[ahead].name);
	if (err < 0) {
		lr->phase = PH_IDLE;
		lr_finish_locked(lr, err, notify);
	}
}

/* After a lost create reply: is there a node with our GUID? */
static void lr_recover(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	ssize_t found = lockrule_find_tag(lr->q->nodes, lr->q->n, 0, lr->guid);

	if (found < 0) {
		lr->node[0] = '\0';
		if (lr->outcome == LR_FINISHED) {
			/* given up meanwhile: nothing to delete, and the limit
			 * watch its listing set is not wanted either */
			lr->phase = PH_GONE;
			lr_unwatch_all(lr);
		} else {
			lr_create(lr, notify);
		}
		return;
	}
	if (lr_set_node(lr, lr->dir, lr->q->nodes[found].name) < 0) {
		lr->phase = PH_GONE;
		lr_finish_locked(lr, -ENAMETOOLONG, notify);
		return;
	}
	lr_check_owner(lr, notify);
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
		lr_evaluate(lr, notify);
	} else if ((rc == ZOK || rc == ZNONODE) && lr->phase == PH_RECOVERING) {
		lr_recover(lr, notify);
	} else {
		lr->phase = lr->phase == PH_LISTING ? PH_IDLE : PH_GONE;
		lr_finish_locked(lr, rc == ZNONODE ? -EIO : zkerr_errno(rc),
				 notify);
	}
	lr_end_entry_locked(lr, notify);
}

static void lr_on_checked(int rc, const struct Stat *st, const void *data)
{
	struct zkl_lockreq *lr = (struct zkl_lockreq *)data;
	struct zkl_session *s = lr->s;
	struct zkl_link notify;

	session_enter(s, &notify);
	if (lr->phase != PH_CHECKING) {
		/* stale */
	} else if (lr_is_connection_loss(rc)) {
		lr_defer(lr, &notify);
	} else if (rc == ZOK && st->ephemeralOwner == s->client_id) {
		lr->czxid = st->czxid;
		if (lr->outcome == LR_FINISHED) {
			lr_delete(lr);
		} else {
			lr->phase = PH_LISTING;
			lr_list(lr, &notify);
		}
	} else if (rc == ZOK || rc == ZNONODE) {
		/* Not ours after all (an earlier session's, or gone). */
		if (rc == ZOK)
			log_msg(LOG_WARNING,
				"%s carries our GUID but another session "
				"(0x%" PRIx64 ") owns it",
				lr->node, (uint64_t)st->ephemeralOwner);
		lr->node[0] = '\0';
		if (lr->outcome == LR_FINISHED)
			lr->phase = PH_GONE;
		else
			lr_create(lr, &notify);
	} else {
		lr->phase = PH_GONE;
		lr_finish_locked(lr, zkerr_errno(rc), &notify);
	}
	lr_end_completion(lr, &notify);
}

static void lr_on_deleted(int rc, const void *data)
{
	struct zkl_lockreq *lr = (struct zkl_lockreq *)data;
	struct zkl_session *s = lr->s;
	struct zkl_link notify;

	session_enter(s, &notify);
	if (lr->phase == PH_DELETING) {
		if (lr_is_connection_loss(rc)) {
			lr_defer(lr, &notify); /* must not leave it behind */
		} else {
			lr->phase = PH_GONE;
			queue_leaving_done(&lr->leaving);
		}
	}
	lr_end_completion(lr, &notify);
}
