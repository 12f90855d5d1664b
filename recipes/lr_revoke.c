/*
 * lr_revoke.c - a holder asked to let go (lr.h): the get that sets the
 * watch on a held node (lr_watch_own: at the grant, after a change of
 * the node's data, after a reconnection) also reads the data; Curator's
 * revocation mark there (revoke.h: set by a mount's `echo ask > revoke`
 * or by Curator's Revoker.attemptRevoke, before the grant or after) is
 * remembered, with when it was seen, and told to the daemon once
 * (session_set_revoke_hook).  A multi-lock's member is told as its
 * multi-lock: only once that holds, and once for all its members.
 * Asking takes nothing away: the lock stays held.  Above lr_core.c only.
 */
#include "lr.h"
#include "revoke.h"
#include "log.h"

#include <errno.h>
#include <stdlib.h>
#include <syslog.h>
#include <string.h>
#include <time.h>

static int64_t lr_revoke_now_ms(void)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* The request whose owner hears of it: a member's multi-lock. */
static struct zkl_lockreq *lr_revoke_owner(struct zkl_lockreq *lr)
{
	return lr->group ? lr->group : lr;
}

void lr_revoke_check_locked(struct zkl_lockreq *lr, const char *value, int len,
			    struct lr_revoke_report *r)
{
	ZKL_ASSERT_HELD(&lr->s->lock);
	if (len < 0 || !revoke_is_marked(value, (size_t)len) ||
	    lr->revoke_asked)
		return;
	lr->revoke_asked = 1;
	lr->revoke_ms = lr_revoke_now_ms();
	lr_revoke_report_locked(lr, r);
}

void lr_revoke_report_locked(struct zkl_lockreq *lr, struct lr_revoke_report *r)
{
	struct zkl_lockreq *owner = lr_revoke_owner(lr);

	/* Told once per lock its owner holds: a waiting multi-lock's member
	 * is told when the multi-lock is granted (ml_grant). */
	if (!lr->revoke_asked || owner->revoke_told ||
	    owner->outcome != LR_HELD || owner->lost || r->node)
		return;
	owner->revoke_told = 1;
	if (owner != lr) {
		owner->revoke_asked = 1;
		owner->revoke_ms = lr->revoke_ms;
	}
	lr->s->revokes_seen++;
	r->hook = lr->s->revoke_hook;
	r->arg = lr->s->revoke_arg;
	/* Its identity, which the mark replaced in the node. */
	r->node = strdup(owner->node);
	r->who = malloc(owner->datalen ? owner->datalen : 1);
	if (r->who) {
		memcpy(r->who, owner->data, owner->datalen);
		r->wholen = owner->datalen;
	}
}

void lr_revoke_forget_locked(struct zkl_lockreq *lr)
{
	ZKL_ASSERT_HELD(&lr->s->lock);
	lr->revoke_asked = lr->revoke_told = 0;
	lr->revoke_ms = 0;
	for (unsigned i = 0; i < lr->nmembers; i++)
		lr_revoke_forget_locked(lr->members[i]);
}

void lr_revoke_tell(struct lr_revoke_report *r)
{
	if (r->hook && r->node)
		r->hook(r->node, "it was asked to let go", r->who, r->wholen,
			r->arg);
	free(r->node);
	free(r->who);
	memset(r, 0, sizeof(*r));
}

struct lr_revoke_notice {
	struct zkl_notice notice;
	struct lr_revoke_report report;
};

static void lr_revoke_notice_run(struct zkl_notice *n)
{
	struct lr_revoke_notice *rn =
		ZKL_CONTAINER_OF(n, struct lr_revoke_notice, notice);

	lr_revoke_tell(&rn->report);
	free(rn);
}

void lr_revoke_post_locked(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	struct lr_revoke_notice *rn;

	if (!lr->revoke_asked)
		return;
	rn = calloc(1, sizeof(*rn));
	if (!rn)
		return; /* its read() still says so */
	lr_revoke_report_locked(lr, &rn->report);
	if (!rn->report.node) {
		free(rn);
		return;
	}
	notice_init(&rn->notice, lr_revoke_notice_run);
	notice_post(notify, &rn->notice);
}

void lr_break_seen_locked(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	struct zkl_lockreq *owner = lr_revoke_owner(lr);
	static const char why[] = "it was broken (`break` written to a revoke "
				  "file)";

	ZKL_ASSERT_HELD(&lr->s->lock);
	if (lr->mutex_names || lr->passing || owner->lost ||
	    owner->outcome == LR_FINISHED)
		return; /* a lease's step, an heir's business, or over */
	if (lr->outcome == LR_PENDING && !lr->grant_deferred &&
	    lr->phase != PH_LISTING && lr->phase != PH_WATCHING)
		return; /* its node is not settled yet: its listing tells */
	log_msg(LOG_WARNING, "lock node %s: %s: the lock is lost", lr->node,
		why);
	if (owner->outcome == LR_PENDING) {
		/* Granted in a jeopardy and not told yet, or waiting: it
		 * fails, and its node goes (the finish unwatches it). */
		lr_finish_locked(lr, -EIO, notify);
	} else if (lr->peer) {
		/* A peer's layout deletes its own way: the breaker does, a
		 * bound later; its holder is told now. */
		lr_unwatch_all(lr);
		lr_lose_locked(lr, why, notify);
	} else {
		lr_lose_then_let_go_locked(owner, why, notify);
	}
}
