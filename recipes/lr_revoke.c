/*
 * lr_revoke.c - a holder asked to let go (lr.h): when its held node's data
 * changes, the data is read; Curator's revocation mark there (revoke.h:
 * set by a mount's `echo ask > revoke` or by Curator's
 * Revoker.attemptRevoke) is remembered, with when it was seen, and told
 * to the daemon once (session_set_revoke_hook).  Asking takes nothing
 * away: the lock stays held.  Below lr_hooks.c; above lr_core.c.
 */
#include "lr.h"
#include "revoke.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static void lr_on_held_data(int rc, const char *value, int len,
			    const struct Stat *st, const void *data)
{
	struct zkl_lockreq *lr = (struct zkl_lockreq *)data;
	struct zkl_session *s = lr->s;
	session_lost_fn hook = NULL;
	struct zkl_link notify;
	char *node = NULL, *who = NULL;
	size_t wholen = 0;
	void *arg = NULL;

	(void)st;
	session_enter(s, &notify);
	if (rc == ZOK && len == (int)strlen(REVOKE_MARK) &&
	    memcmp(value, REVOKE_MARK, (size_t)len) == 0 && lr_node_holds(lr) &&
	    !lr->lost && !lr->revoke_asked) {
		struct timespec now;
		clock_gettime(CLOCK_REALTIME, &now);
		lr->revoke_asked = 1;
		lr->revoke_ms =
			(int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
		s->revokes_seen++;
		hook = s->revoke_hook;
		arg = s->revoke_arg;
		/* Its identity, which the mark replaced in the node. */
		node = strdup(lr->node);
		who = malloc(lr->datalen ? lr->datalen : 1);
		if (who) {
			memcpy(who, lr->data, lr->datalen);
			wholen = lr->datalen;
		}
	}
	lr_end_completion(lr, &notify);
	if (hook && node)
		hook(node, "it was asked to let go", who, wholen, arg);
	free(node);
	free(who);
}

void lr_read_revoke(struct zkl_lockreq *lr)
{
	if (!lr_node_holds(lr) || lr->lost || lr->revoke_asked)
		return;
	lr_hold(lr, LR_HOLD_CALL);
	if (zoo_aget(lr->s->zh, lr->node, 0, lr_on_held_data, lr) != ZOK)
		lr_drop_locked(lr, LR_HOLD_CALL); /* a dead handle */
}
