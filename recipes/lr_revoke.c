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

#include <stdlib.h>
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
