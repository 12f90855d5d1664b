/*
 * multilock.c - one lock on several resources, all or nothing
 * (lockreq_new_multi).
 *
 * A multi-lock is a zkl_lockreq whose members are plain requests, one per
 * resource, in one mode.  What makes it deadlock-free is where their nodes
 * come from: one ZooKeeper transaction (multi) creates all of them, so
 * they have one zxid, and every queue orders every node by its creation
 * (lockrule.c).  A member therefore only ever waits for nodes created
 * before its transaction, whatever tool or host made them, single or
 * multi: the wait-for graph follows creation order and can have no cycle.
 * doc/design.md, "Several resources at once", has the argument.
 *
 * Each member queues, watches and is granted as any request does (one
 * watch at most, herd-free); the multi-lock holds once every member does.
 * A member's create is the multi-lock's (lr_group_ops.create): it waits in
 * PH_NEW until every member without a node is waiting, then one
 * transaction creates them all.  A reply lost with the connection is
 * recovered by each member by its own tag; the transaction is atomic, so
 * they find all or none, and those that find none ask again together.
 *
 * The multi-lock is a session member of its own: it is counted once, told
 * of the jeopardy and of the session's end, and after an expiry it starts
 * again with new members on the next session (a new transaction), never
 * member by member.  Its members' losses are its own, reported once.
 */
#include "ml.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "log.h"

static void ml_member_done(struct zkl_lockreq *m, int err, void *arg);
static void ml_member_lost(struct zkl_lockreq *m, const char *why,
			   struct zkl_link *notify);

static const struct lr_group_ops ml_group_ops = {
	.create = ml_member_create,
	.lost = ml_member_lost,
	.found = ml_member_found,
};

/* New members for the resources `dirs`, not started, into *out.
 * Returns 0 or -errno (nothing made). */
static int ml_make_members(struct zkl_lockreq *g, const char *const *dirs,
			   size_t n, struct zkl_lockreq ***out)
{
	struct zkl_lockreq **members = calloc(n, sizeof(*members));
	int err = members ? 0 : -ENOMEM;
	size_t made = 0;

	for (; err == 0 && made < n; made++) {
		struct zkl_lockreq *m;
		err = lr_alloc(g->s, dirs[made], dirs[made], g->mode, 0,
			       g->try_only ? LOCKREQ_TRY : 0, g->data,
			       g->datalen, ml_member_done, g, &m);
		/* The multi-lock's own tag: its owner's F_GETLK skips the
		 * nodes by it (each member finds its own in its resource). */
		if (err == 0 && (err = lr_use_tag(m, g->guid)) < 0)
			lr_free(m);
		if (err < 0)
			break;
		lr_wire(m);
		m->group = g;
		m->gops = &ml_group_ops;
		members[made] = m;
	}
	if (err < 0) {
		while (made-- > 0)
			lr_free(members[made]);
		free(members);
		return err;
	}
	*out = members;
	return 0;
}

static int ml_is_member(const struct zkl_lockreq *g,
			const struct zkl_lockreq *m)
{
	for (unsigned i = 0; i < g->nmembers; i++)
		if (g->members[i] == m)
			return 1;
	return 0;
}

/* Let every member go: their nodes are deleted, and g's owner is told
 * gone (lockreq_release_then) once all of them are. */
static void ml_let_go(struct zkl_lockreq *g, struct zkl_link *notify)
{
	struct zkl_lockreq **members = g->members;
	unsigned n = g->nmembers;

	ml_delete_together_locked(g); /* what each would delete anyway */
	g->members = NULL;
	g->nmembers = 0;
	g->members_granted = 0;
	for (unsigned i = 0; i < n; i++) {
		struct zkl_lockreq *m = members[i];
		if (m->phase == PH_NEW && !list_linked(&m->member.live)) {
			lr_drop_locked(m, LR_HOLD_OWNER); /* never started */
			continue;
		}
		if (m->outcome == LR_PENDING) /* its done will not come */
			lr_drop_locked(g, LR_HOLD_MEMBER);
		lr_release_sub_locked(g, m, notify);
	}
	free(members);
}

void multilock_abandon_locked(struct zkl_lockreq *g, struct zkl_link *notify)
{
	ZKL_ASSERT_HELD(&g->s->lock);
	g->outcome = LR_FINISHED;
	ml_let_go(g, notify);
	g->phase = PH_GONE;
}

static void ml_fail(struct zkl_lockreq *g, int err, struct zkl_link *notify)
{
	lr_tell_locked(g, err, notify);
	multilock_abandon_locked(g, notify);
}

/* ---- starting, and the members' news ----------------------------------- */

/* Start every member (each asks for the transaction), then send it. */
static int ml_start_members(struct zkl_lockreq *g)
{
	int err = 0;

	for (unsigned i = 0; i < g->nmembers && err == 0; i++) {
		err = lr_start_locked(g->members[i]);
		if (err == 0)
			lr_hold(g, LR_HOLD_MEMBER);
	}
	return err < 0 ? err : ml_send_locked(g);
}

int multilock_start_locked(struct zkl_lockreq *g, struct zkl_link *notify)
{
	int err = -ECANCELED;

	if (g->outcome == LR_PENDING) {
		list_add_tail(&g->s->live, &g->member.live);
		g->phase = PH_CREATING;
		err = g->s->dead ? -ENOTCONN
		      : g->try_only && !session_is_connected_locked(g->s)
			      ? -EAGAIN /* answered now, as a plain try */
			      : ml_start_members(g);
	}
	if (err < 0 && err != -ECANCELED) {
		/* Nothing was granted: what comes is gone-news only. */
		g->outcome = LR_FINISHED;
		ml_let_go(g, notify);
		g->phase = PH_GONE;
	}
	return err;
}

static void ml_grant(struct zkl_lockreq *g, struct zkl_link *notify)
{
	int64_t token = 0;

	for (unsigned i = 0; i < g->nmembers; i++)
		if (g->members[i]->czxid > token)
			token = g->members[i]->czxid;
	g->czxid = token;
	lr_set_node(g, g->members[0]->node, NULL); /* fits: same path */
	g->phase = PH_IDLE;
	lr_tell_locked(g, 0, notify);
	for (unsigned i = 0; i < g->nmembers; i++)
		lr_revoke_post_locked(g->members[i], notify);
}

static void ml_member_done(struct zkl_lockreq *m, int err, void *arg)
{
	struct zkl_lockreq *g = arg;
	struct zkl_link notify;

	session_enter(g->s, &notify);
	lr_begin_entry_locked(g, LR_HOLD_MEMBER);
	if (!ml_is_member(g, m) || g->outcome != LR_PENDING ||
	    g->phase == PH_NEW) {
		/* let go, given up, or starting again on the next session */
	} else if (err < 0) {
		ml_fail(g, err, &notify);
	} else if (++g->members_granted == g->nmembers) {
		ml_grant(g, &notify);
	}
	lr_end_entry_locked(g, &notify);
	session_leave(g->s, &notify);
}

/* One member's node was deleted by another client.  A held multi-lock
 * is lost whole, and, once its holder is told, lets go of every other
 * member's node: their waiters must not wait for a holder that no longer
 * holds anything (the owner's close only ends the request).  A pending
 * one fails. */
static void ml_member_lost(struct zkl_lockreq *m, const char *why,
			   struct zkl_link *notify)
{
	struct zkl_lockreq *g = m->group;

	if (g->outcome == LR_HELD && !g->lost) {
		lr_lose_then_let_go_locked(g, why, notify);
	} else if (g->outcome == LR_PENDING) {
		ml_fail(g, -EIO, notify); /* as a plain request would */
	}
}

/* ---- the session's calls ---------------------------------------------- */

/* A new session: new members, and the transaction again. */
static void ml_restart(struct zkl_lockreq *g, struct zkl_link *notify)
{
	const char *dirs[LOCKREQ_MULTI_MAX];
	struct zkl_lockreq **fresh;
	unsigned n = g->nmembers;
	int err;

	assert(n <= LOCKREQ_MULTI_MAX);
	for (unsigned i = 0; i < n; i++)
		dirs[i] = g->members[i]->dir;
	/* Nothing of an earlier session may be taken for the new one's. */
	err = lr_new_tag(g);
	if (err == 0)
		err = ml_make_members(g, dirs, n, &fresh);
	if (err < 0) {
		ml_fail(g, err, notify);
		return;
	}
	ml_let_go(g, notify); /* the old ones, now that their dirs are copied */
	g->members = fresh;
	g->nmembers = n;
	g->phase = PH_CREATING;
	err = ml_start_members(g);
	if (err < 0)
		ml_fail(g, err, notify);
}

static void ml_resume(struct zkl_member *mem, struct zkl_link *notify)
{
	struct zkl_lockreq *g =
		ZKL_CONTAINER_OF(mem, struct zkl_lockreq, member);

	lr_begin_entry_locked(g, LR_HOLD_RESUME);
	if (g->phase == PH_NEW && g->outcome == LR_PENDING)
		ml_restart(g, notify);
	lr_end_entry_locked(g, notify);
}

/* The session is over.  A waiting multi-lock starts again on the next
 * one; its members, ended by their own hooks, are let go then, never
 * here: the session is walking its members. */
static void ml_expired(struct zkl_member *mem, int requeue,
		       struct zkl_link *lost, struct zkl_link *notify)
{
	struct zkl_lockreq *g =
		ZKL_CONTAINER_OF(mem, struct zkl_lockreq, member);

	ZKL_ASSERT_HELD(&g->s->lock);
	lr_hold(g, LR_HOLD_ENTRY);
	if (g->outcome == LR_PENDING && requeue) {
		lr_requeue_locked(g);
	} else {
		lr_end_with_session_locked(g, lost);
		lr_tell_locked(g, -ENOTCONN, notify);
		g->outcome = LR_FINISHED;
	}
	lr_end_entry_locked(g, notify);
}

/* Declared while held: the multi-lock is lost (reported once), and each
 * member's node waits out the margin in the member's own sweep. */
static int ml_jeopardy(struct zkl_member *mem, const struct zkl_jeopardy *j,
		       struct zkl_link *notify)
{
	struct zkl_lockreq *g =
		ZKL_CONTAINER_OF(mem, struct zkl_lockreq, member);

	if (!j->declared)
		lr_tell_deferred_locked(g, notify);
	if (!j->declared || g->outcome != LR_HELD || g->lost)
		return 0;
	lr_lose_locked(g,
		       "ZooKeeper did not answer in time: the session may "
		       "end before it does (jeopardy)",
		       notify);
	for (unsigned i = 0; i < g->nmembers; i++) {
		struct zkl_lockreq *m = g->members[i];
		if (m->outcome != LR_HELD || m->lost)
			continue;
		m->lost = 1;
		lr_unwatch_all(m);
		m->jeopardy_wait = 1;
		m->lost_ms = j->now;
	}
	return 0;
}

static const char *ml_lost_node(const struct zkl_member *mem)
{
	(void)mem;
	return NULL; /* each member shows its own */
}

static const struct zkl_member_ops ml_member_ops = {
	.resume_locked = ml_resume,
	.expired_locked = ml_expired,
	.jeopardy_locked = ml_jeopardy,
	.lost_node_locked = ml_lost_node,
	.count_locked = lr_count,
	.hold_check_locked = lr_hold_check,
};

int lockreq_new_multi(struct zkl_session *s, const char *const *dirs, size_t n,
		      enum zkl_mode mode, unsigned flags, const void *data,
		      size_t datalen, lockreq_done_fn done, void *arg,
		      struct zkl_lockreq **out)
{
	struct zkl_lockreq *g;
	int err;

	if (n == 0 || n > LOCKREQ_MULTI_MAX || mode == ZKL_MODE_LEASE)
		return -EINVAL;
	err = lr_alloc(s, dirs[0], dirs[0], mode, 0, flags, data, datalen, done,
		       arg, &g);
	if (err < 0)
		return err;
	lr_wire(g);
	g->multi = 1;
	g->member.ops = &ml_member_ops;
	err = ml_make_members(g, dirs, n, &g->members);
	if (err < 0) {
		lr_free(g);
		return err;
	}
	g->nmembers = (unsigned)n;
	*out = g;
	return 0;
}

int lockreq_member_token(struct zkl_lockreq *lr, size_t i, int64_t *token)
{
	struct zkl_session *s = lr->s;
	int err = 0;

	pthread_mutex_lock(&s->lock);
	err = lr_held_err_locked(lr);
	if (err == 0 && i >= (lr->multi ? lr->nmembers : 1))
		err = -ERANGE;
	if (err == 0)
		*token = lr->multi ? lr->members[i]->czxid : lr->czxid;
	pthread_mutex_unlock(&s->lock);
	return err;
}
