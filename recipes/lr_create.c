/*
 * lr_create.c - a lock request's node: the owner's start and release,
 * the create, and after a lost create reply the search for the node by
 * its tag (lr.h).  Above lr_heir.c; below lr_machine.c.
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

int lr_queue_create(struct zkl_lockreq *lr)
{
	int rc;

	if (lr->gops) /* a member: created by its multi-lock */
		return lr->gops->create(lr);
	if (lr->heir_of) /* a downgrade: in its write lock's place */
		return lr_heir_send(lr);
	lr_hold(lr, LR_HOLD_CALL);
	lr->create_sent_us = session_metrics_now_us();
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
	if (err == -ENOTCONN)
		err = -EAGAIN; /* a try is answered now */
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

/* The node of a sub-request is gone: its parent's owner may be told that
 * the parent's is (lockreq_release_then) once every one is. */
static void lr_sub_gone(void *arg)
{
	struct zkl_lockreq *lr = arg;
	struct zkl_session *s = lr->s;
	struct zkl_link notify;

	session_enter(s, &notify);
	lr_begin_entry_locked(lr, LR_HOLD_SUB_GONE);
	assert(lr->subs_leaving > 0);
	lr->subs_leaving--;
	lr_end_entry_locked(lr, &notify);
	session_leave(s, &notify);
}

void lr_release_sub_locked(struct zkl_lockreq *lr, struct zkl_lockreq *sub,
			   struct zkl_link *notify)
{
	lr->subs_leaving++;
	lr_hold(lr, LR_HOLD_SUB_GONE);
	sub->gone_fn = lr_sub_gone;
	sub->gone_arg = lr;
	lr_release_locked(sub, notify);
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

static void lr_on_created(int rc, const char *name, const struct Stat *st,
			  const void *data)
{
	struct zkl_lockreq *lr = (struct zkl_lockreq *)data;
	struct zkl_session *s = lr->s;
	struct zkl_link notify;

	session_enter(s, &notify);
	if (lr->phase == PH_CREATING)
		session_metrics_answered_locked(s, ZKL_OP_CREATE, rc,
						lr->create_sent_us);
	if (lr->phase != PH_CREATING) {
		/* The session expired under us: nothing to do. */
	} else if (rc == ZOK) {
		lr->czxid = st->czxid;
		session_note_server_time_locked(s, st->ctime);
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

/* After a lost create reply: is there a node with our GUID?  An heir
 * shares its tag with its write lock: it looks for its own name. */
void lr_recover(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	ssize_t found = lr->heir_of ? queue_find(lr->q, lr_node_name(lr))
				    : lockrule_find_tag(lr->q->nodes, lr->q->n,
							0, lr->guid);

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
		lr_heir_settle(lr, &notify);
		if (lr->gops && lr->outcome == LR_PENDING)
			lr->gops->found(lr, &notify); /* may let it go */
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
