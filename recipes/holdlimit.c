/*
 * holdlimit.c - the request's side of hold limits: a hold that outlasts
 * its resource's limit (maxhold.h, whose table the session keeps, in
 * maxhold.c) is asked to let go, then broken.  Each kind's
 * hold_check_locked, called by the session's clock through its members
 * (internal.h), so that the session never calls the request side.
 */
#include "maxhold.h"
#include "internal.h"
#include "log.h"
#include "lr.h"
#include "revoke.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

/*
 * A hold that outlasts its resource's limit (maxhold.h),
 * looked at by the session's clock thread about once a second
 * (hold_check_locked): first asked to let go, as `echo ask > revoke`
 * would (its node gets the revocation mark, and the holder hears of it
 * through its held node's watch, revoke.c), then, a grace later
 * (maxhold_grace_ms), broken: the lock is lost (EIO, on_lost), and only
 * once its holder has been told is its node deleted, so that the next
 * waiter of any host is granted after that (lr_lose_then_let_go_locked).
 *
 * A hold's time counts from its grant on this host (a downgrade goes on
 * with its write lock's); the limit is the one this session last read,
 * so a limit set or lowered while the lock is held applies at once.  A
 * multi-lock is one hold: the least of its resources' limits, and all
 * its nodes asked, then deleted.  A peer's own lock taken on a lease's
 * way is no hold.
 */
static void lr_maxhold_ignore_stat(int rc, const struct Stat *st,
				   const void *data)
{
	(void)st;
	if (rc != ZOK && rc != ZNONODE)
		log_msg(LOG_WARNING, "maxhold: asking %s to let go: %s",
			(const char *)data, zerror(rc));
	free((void *)data);
}

/* The data of lr's node asked to let go: the mark's line, then what the
 * node held, so that every host's holders still names the holder and a
 * downgrade's token (revoke_is_marked).  Returns its length, or -ENOMEM. */
static int lr_maxhold_marked(const struct zkl_lockreq *lr, char **out)
{
	size_t n = sizeof(REVOKE_MARK), len; /* the mark and its newline */
	char *held = NULL;

	if (lr->inherited &&
	    lr_heir_data(lr->czxid, lr->data, lr->datalen, &held, &len) < 0)
		return -ENOMEM;
	if (!lr->inherited)
		len = lr->datalen;
	*out = malloc(n + len);
	if (*out) {
		memcpy(*out, REVOKE_MARK "\n", n);
		memcpy(*out + n, held ? held : lr->data, len);
	}
	free(held);
	return *out ? (int)(n + len) : -ENOMEM;
}

/* Ask the holder of lr's node to let go (the mark); the path is the
 * completion's, for its log line.  Lost, the ask is not sent again: the
 * break still comes. */
static void lr_maxhold_ask(struct zkl_lockreq *lr)
{
	char *path = strdup(lr->node), *marked = NULL;
	int rc = ZSYSTEMERROR, len = path ? lr_maxhold_marked(lr, &marked) : 0;

	if (path && len >= 0)
		rc = zoo_aset(lr->s->zh, path, marked, len, -1,
			      lr_maxhold_ignore_stat, path);
	if (rc == ZOK)
		session_changed(lr->s, lr->node);
	free(marked);
	if (rc != ZOK)
		free(path);
}

/* The hold's limit in ms: its resource's, or a multi-lock's least. */
static int64_t lr_maxhold_limit_ms(const struct zkl_lockreq *lr)
{
	unsigned least = 0;

	if (lr->kind != LR_MULTI)
		return (int64_t)session_maxhold_of_locked(lr->s, lr->res) *
		       1000;
	for (unsigned i = 0; i < lr->nmembers; i++) {
		unsigned secs =
			session_maxhold_of_locked(lr->s, lr->members[i]->dir);
		if (secs > 0 && (least == 0 || secs < least))
			least = secs;
	}
	return (int64_t)least * 1000;
}

/* Does lr's node hold, with nothing else under way (a release deleting
 * it, an heir replacing it)? */
static int lr_maxhold_node_idle(const struct zkl_lockreq *lr)
{
	return lr->phase == PH_IDLE && !lr->passing && lr_has_node(lr);
}

/* Ask lr's node, or each of a multi-lock's members'. */
static void lr_maxhold_ask_all(struct zkl_lockreq *lr)
{
	if (lr->kind != LR_MULTI)
		return lr_maxhold_ask(lr);
	for (unsigned i = 0; i < lr->nmembers; i++)
		if (lr_maxhold_node_idle(lr->members[i]))
			lr_maxhold_ask(lr->members[i]);
}

void lr_hold_check(struct zkl_member *m, int64_t now, struct zkl_link *notify)
{
	struct zkl_lockreq *lr =
		ZKL_CONTAINER_OF(m, struct zkl_lockreq, member);
	int64_t limit, held;

	ZKL_ASSERT_HELD(&lr->s->lock);
	if (lr->outcome != LR_HELD || lr->lost || !lr_is_owners_lock(lr) ||
	    (lr->kind != LR_MULTI && !lr_maxhold_node_idle(lr)))
		return;
	limit = lr_maxhold_limit_ms(lr);
	held = now - lr->granted_ms;
	if (limit == 0 || held < limit) {
		/* Removed or raised since an ask: the next limit it passes
		 * asks again, and gives the grace again. */
		lr->maxhold_ask_ms = lr->maxhold_break_ms = 0;
		return;
	}
	if (lr->maxhold_ask_ms == 0) {
		lr->maxhold_ask_ms = now;
		/* Asked before (another limit, revoke): told again. */
		lr_revoke_forget_locked(lr);
		lr->s->maxhold_asks++;
		log_msg(LOG_NOTICE,
			"lock %s held %" PRId64 " s, past its limit of %" PRId64
			" s (maxhold): asked to let go, broken in %" PRId64
			" s if it does not",
			lr->node, held / 1000, limit / 1000,
			maxhold_grace_ms((unsigned)(limit / 1000)) / 1000);
		lr_maxhold_ask_all(lr);
	} else if (now >= lr->maxhold_ask_ms +
				  maxhold_grace_ms((unsigned)(limit / 1000))) {
		lr->s->maxhold_breaks++;
		log_msg(LOG_WARNING,
			"lock %s held %" PRId64 " s, asked to let go %" PRId64
			" s ago (maxhold %" PRId64 " s): broken",
			lr->node, held / 1000,
			(now - lr->maxhold_ask_ms) / 1000, limit / 1000);
		lr->maxhold_break_ms = now;
		lr_lose_then_let_go_locked(
			lr,
			"it was held past its limit and grace (maxhold), and "
			"broken",
			notify);
	}
}
