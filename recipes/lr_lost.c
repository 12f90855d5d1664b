/*
 * lr_lost.c - a lock request's loss (lr.h): reported to the daemon once,
 * with its session's end or on its own (a node deleted by another
 * client, the jeopardy), and a waiter queued again on the next session.
 */
#include "lr.h"
#include "ml.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* The report of lr's loss, counted; NULL when out of memory (the loss
 * still shows as EIO: only the report is lost). */
static struct zkl_lost *lr_lost_report(struct zkl_lockreq *lr, const char *why)
{
	struct zkl_lost *item = malloc(sizeof(*item) + lr->datalen);

	lr->s->losses++;
	lr_metrics_ended_locked(lr, 1);
	if (!item)
		return NULL;
	item->node = strdup(lr_has_node(lr) ? lr->node : lr->dir);
	if (!item->node) {
		free(item);
		return NULL;
	}
	item->s = lr->s;
	item->why = why;
	item->len = lr->datalen;
	memcpy(item->data, lr->data, lr->datalen);
	return item;
}

void lr_report_lost(struct zkl_lockreq *lr, struct zkl_link *lost)
{
	struct zkl_lost *item =
		lr_lost_report(lr, "its ZooKeeper session expired");

	if (item)
		list_add_tail(lost, &item->link);
}

static void lr_lost_notice_run(struct zkl_notice *n)
{
	session_tell_lost(ZKL_CONTAINER_OF(n, struct zkl_lost, notice));
}

void lr_lose_locked(struct zkl_lockreq *lr, const char *why,
		    struct zkl_link *notify)
{
	struct zkl_lost *item;

	assert(lr->outcome == LR_HELD && !lr->lost);
	lr->lost = 1;
	item = lr_lost_report(lr, why);
	if (item) {
		notice_init(&item->notice, lr_lost_notice_run);
		notice_post(notify, &item->notice);
	}
}

/* Delete the node of a lock taken away here, unless its owner let go of
 * it meanwhile (the release deletes it then). */
static void lr_let_go_locked(struct zkl_lockreq *lr)
{
	if (lr->outcome != LR_HELD || !lr->lost)
		return;
	if (lr->multi) {
		ml_delete_together_locked(lr);
	} else if (lr->phase == PH_IDLE && lr_has_node(lr)) {
		lr_unwatch_all(lr);
		lr_delete(lr);
	}
}

struct lr_break {
	struct zkl_notice notice;
	struct zkl_lost *report; /* NULL when out of memory */
	struct zkl_lockreq *lr;  /* with a CALL hold */
};

/* Tell, then let go: the report's hook (on_lost's signal) has returned
 * when the delete is sent. */
static void lr_break_notice_run(struct zkl_notice *n)
{
	struct lr_break *b = ZKL_CONTAINER_OF(n, struct lr_break, notice);
	struct zkl_lockreq *lr = b->lr;
	struct zkl_link notify;

	if (b->report)
		session_tell_lost(b->report);
	free(b);
	session_enter(lr->s, &notify);
	lr_let_go_locked(lr);
	lr_end_completion(lr, &notify);
}

void lr_lose_then_let_go_locked(struct zkl_lockreq *lr, const char *why,
				struct zkl_link *notify)
{
	struct lr_break *b = malloc(sizeof(*b));

	if (b) {
		assert(lr->outcome == LR_HELD && !lr->lost);
		lr->lost = 1;
		b->report = lr_lost_report(lr, why);
	} else {
		/* Out of memory: told without waiting for the telling (its
		 * descriptor reads EIO already). */
		lr_lose_locked(lr, why, notify);
	}
	if (!lr->multi)
		lr_unwatch_all(lr); /* its own delete is no news */
	if (!b) {
		lr_let_go_locked(lr);
		return;
	}
	b->lr = lr;
	lr_hold(lr, LR_HOLD_CALL);
	notice_init(&b->notice, lr_break_notice_run);
	notice_post(notify, &b->notice);
}

void lr_requeue_locked(struct zkl_lockreq *lr)
{
	lr->phase = PH_NEW;
	lr->grant_deferred = 0; /* its node went with the session */
	if (list_linked(&lr->member.resume)) {
		/* Waiting for a time (lr_defer_for): for the next session
		 * instead, with the same hold. */
		list_del(&lr->member.resume);
	} else {
		lr_hold(lr, LR_HOLD_RESUME);
	}
	list_add_tail(&lr->s->resume, &lr->member.resume);
}

void lr_end_with_session_locked(struct zkl_lockreq *lr, struct zkl_link *lost)
{
	if (list_linked(&lr->member.resume)) {
		list_del(&lr->member.resume);
		lr_drop_locked(lr, LR_HOLD_RESUME); /* the caller holds one */
	}
	if (lr->outcome == LR_HELD && !lr->lost) {
		lr->lost = 1;
		/* A peer's lock held by a lease on its way is no lock of the
		 * owner's: the lease queues again (peerlease.c).  A member's
		 * loss is its multi-lock's, reported once by it. */
		if (!lr->mutex_names && !lr->group)
			lr_report_lost(lr, lost);
	}
	lr->phase = PH_GONE;
}
