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
 * A member's create is the multi-lock's (multilock_member_kind.create):
 * it waits in PH_NEW until every member without a node is waiting, then
 * one transaction creates them all.  A reply lost with the connection is
 * recovered by each member by its own tag; the transaction is atomic, so
 * they find all or none, and those that find none ask again together.
 *
 * The multi-lock is a session member of its own: it is counted once, told
 * of the jeopardy and of the session's end, and after an expiry it starts
 * again with new members on the next session (a new transaction), never
 * member by member.  Its members' losses are its own, reported once.
 */
#include "lr.h"
#include "log.h"
#include "zkerr.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

/* Send the transaction that creates every member asking for it
 * (wants_create, in PH_NEW), once no member is still on its way to
 * asking or finding its node.  Returns 0 (sent, or not due yet) or
 * -errno (nothing sent).  s->lock held. */
static int ml_send_locked(struct zkl_lockreq *g);

/* A member's create step (multilock_member_kind.create): ask for the
 * transaction. */
static int ml_member_create(struct zkl_lockreq *m);

/* One allocation for a transaction's context: `head` bytes
 * whose last member is an array of n entries of `item` bytes, then its
 * n ops and n results.  NULL when out of memory. */
static void *ml_txn_alloc(size_t head, size_t item, unsigned n, zoo_op_t **ops,
			  zoo_op_result_t **results);

/* A member found its node after a lost reply (multilock_member_kind.found): the
 * others that found none fail, and with them the multi-lock. */
static void ml_member_found(struct zkl_lockreq *m, struct zkl_link *notify);

static void ml_member_done(struct zkl_lockreq *m, int err, void *arg);
static void ml_member_lost(struct zkl_lockreq *m, const char *why,
			   struct zkl_link *notify);

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
		/* The multi-lock's own tag: its owner's F_GETLK skips the
		 * nodes by it (each member finds its own in its resource). */
		err = lr_alloc(g->s, dirs[made], dirs[made], LR_MEMBER, g->guid,
			       g->mode, g->try_only ? LOCKREQ_TRY : 0, g->data,
			       g->datalen, ml_member_done, g, &m);
		if (err < 0)
			break;
		m->group = g;
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

static void multilock_abandon_locked(struct zkl_lockreq *g,
				     struct zkl_link *notify)
{
	ZKL_ASSERT_HELD(&g->s->lock);
	waitgraph_end_locked(g);
	g->outcome = LR_FINISHED;
	ml_let_go(g, notify);
	lr_to(g, PH_GONE);
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

static int multilock_start_locked(struct zkl_lockreq *g,
				  struct zkl_link *notify)
{
	int err = -ECANCELED;

	if (g->outcome == LR_PENDING) {
		session_join_locked(g->s, &g->member);
		lr_to(g, PH_CREATING);
		err = g->s->dead ? -ENOTCONN
		      : g->try_only && !session_is_connected_locked(g->s)
			      ? -EAGAIN /* answered now, as a plain try */
			      : ml_start_members(g);
	}
	if (err < 0 && err != -ECANCELED) {
		/* Nothing was granted: what comes is gone-news only. */
		g->outcome = LR_FINISHED;
		ml_let_go(g, notify);
		lr_to(g, PH_GONE);
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
	lr_to(g, PH_IDLE);
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
	} else {
		/* It holds while others wait: a pin of its wait. */
		waitgraph_member_held_locked(g, m, &notify);
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
	lr_to(g, PH_CREATING);
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
	.expired_locked = lr_expired,
	.jeopardy_locked = ml_jeopardy,
	.lost_node_locked = ml_lost_node,
	.count_locked = lr_count,
	.hold_check_locked = lr_hold_check,
};

/* The multi-lock itself: no node of its own, its members' one
 * transaction, one hold for all. */
const struct lr_kind_ops multilock_kind = {
	.name = "multi-lock",
	.member_ops = &ml_member_ops,
	.start_locked = multilock_start_locked,
	.abandon_locked = multilock_abandon_locked,
	.owners_lock = 1,
	.has_subs = 1,
};

/* A member: the plain machine, but created, found and lost with its
 * multi-lock. */
const struct lr_kind_ops multilock_member_kind = {
	.name = "multi-lock member",
	.abandon_locked = lr_abandon_locked,
	.create = ml_member_create,
	.found = ml_member_found,
	.lost = ml_member_lost,
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
	err = lr_alloc(s, dirs[0], dirs[0], LR_MULTI, NULL, mode, flags, data,
		       datalen, done, arg, &g);
	if (err < 0)
		return err;
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
	struct zkl_link notify;
	struct zkl_session *s = lr->s;
	int err = 0;

	session_enter(s, &notify);
	err = lr_held_err_locked(lr);
	if (err == 0 && i >= (lr->kind == LR_MULTI ? lr->nmembers : 1))
		err = -ERANGE;
	if (err == 0)
		*token = lr->kind == LR_MULTI ? lr->members[i]->czxid
					      : lr->czxid;
	session_leave(s, &notify);
	return err;
}

/*
 * The transaction that creates every member's node of a
 * multi-lock, and the token read after it.  It tells the multi-lock of
 * nothing but through its members (their done).
 */
struct ml_item {
	struct zkl_lockreq *m; /* with a CALL hold until the reply's end */
	uint64_t step;         /* m's step the create is sent for (lr_call) */
	int token;             /* ... the token's reply's end (ml_ask_token) */
	char path[NAMES_MAX_NODE_PATH + 1]; /* the created node's */
};

/* Is the item's member still in the LISTING its create's reply put it in
 * (not let go or expired since)? */
static int ml_item_listing(const struct ml_item *item)
{
	return item->step == item->m->step && item->m->phase == PH_LISTING;
}

/* A transaction in flight: the members it creates, its ops and results. */
struct ml_create {
	struct zkl_lockreq *g;
	unsigned n;
	zoo_op_t *ops;
	zoo_op_result_t *results;
	struct ml_item item[];
};

static void ml_on_created(int rc, const void *data);
static void ml_on_token(int rc, const struct Stat *st, const void *data);
static int ml_ask_token(struct ml_create *c);

/* Is every member decided: asking for the transaction (wanting), or
 * with its node (having)?  Not yet: a member not started, looking for a
 * node a lost reply may have made, or waiting for the connection. */
static int ml_members_settled(const struct zkl_lockreq *g, unsigned *wanting,
			      unsigned *having)
{
	*wanting = *having = 0;
	for (unsigned i = 0; i < g->nmembers; i++) {
		const struct zkl_lockreq *m = g->members[i];
		if (m->wants_create && m->phase == PH_NEW)
			(*wanting)++;
		else if (lr_has_node(m))
			(*having)++;
		else if (m->phase != PH_GONE)
			return 0;
	}
	return 1;
}

/* Send the transaction for every member that asks for it, once none is
 * still on its way to asking.  Returns 0 or -errno (nothing sent). */
int ml_send_locked(struct zkl_lockreq *g)
{
	struct zkl_session *s = g->s;
	zoo_op_result_t *results;
	struct ml_create *c;
	zoo_op_t *ops;
	unsigned k = 0, wanting, having;
	int rc;

	if (g->outcome != LR_PENDING ||
	    !ml_members_settled(g, &wanting, &having) || wanting == 0)
		return 0;
	if (having > 0) {
		/* After a lost reply some members found their node and some
		 * did not: one transaction made all of them, so another
		 * client deleted some.  Nodes made apart from the others
		 * would lose what makes the lock deadlock-free. */
		log_msg(LOG_WARNING,
			"%s: a multi-lock's node is missing after a lost "
			"reply (deleted by another client?): the request "
			"fails",
			g->dir);
		return -EIO;
	}
	c = ml_txn_alloc(sizeof(*c), sizeof(c->item[0]), wanting, &ops,
			 &results);
	if (!c)
		return -ENOMEM;
	c->g = g;
	c->n = wanting;
	c->ops = ops;
	c->results = results;
	for (unsigned i = 0; i < g->nmembers; i++) {
		struct zkl_lockreq *m = g->members[i];
		if (!(m->wants_create && m->phase == PH_NEW))
			continue;
		c->item[k].m = m;
		zoo_create_op_init(&c->ops[k], m->create_path, m->data,
				   (int)m->datalen, s->acl,
				   ZOO_EPHEMERAL_SEQUENTIAL, c->item[k].path,
				   sizeof(c->item[k].path));
		k++;
	}
	assert(k == wanting);
	rc = zoo_amulti(s->zh, (int)k, c->ops, c->results, ml_on_created, c);
	if (rc != ZOK) {
		free(c);
		return zkerr_errno(rc);
	}
	lr_hold(g, LR_HOLD_CALL);
	for (unsigned i = 0; i < k; i++) {
		struct zkl_lockreq *m = c->item[i].m;
		lr_hold(m, LR_HOLD_CALL);
		m->wants_create = 0;
		lr_to(m, PH_CREATING);
		c->item[i].step = m->step;
		m->create_attempts++;
	}
	return 0;
}

void ml_member_found(struct zkl_lockreq *m, struct zkl_link *notify)
{
	int err = ml_send_locked(m->group);

	/* Others found nothing: the whole lock fails (its done tells it). */
	for (unsigned i = 0; err < 0 && i < m->group->nmembers; i++) {
		struct zkl_lockreq *o = m->group->members[i];
		if (o->wants_create && o->phase == PH_NEW) {
			lr_to(o, PH_GONE);
			lr_finish_locked(o, err, notify);
		}
	}
}

/* A member's create step (lr_queue_create): ask for the transaction. */
int ml_member_create(struct zkl_lockreq *m)
{
	m->wants_create = 1;
	lr_to(m, PH_NEW);
	return ml_send_locked(m->group);
}

/* One member's share of the transaction's answer (lr_create_reply_locked's
 * cases, with the token still to read).  Returns 1 if it asks again. */
static int ml_created_one(struct ml_item *item, int rc, struct zkl_link *notify)
{
	struct zkl_lockreq *m = item->m;
	const char *path = item->path;
	int again = 0, err;

	if (item->step != m->step)
		return 0; /* the session expired under us */
	switch (lr_create_reply_locked(m, rc, &err)) {
	case LR_CREATED:
		if (lr_set_node(m, path, NULL) < 0) {
			lr_to(m, PH_GONE);
			lr_finish_locked(m, -ENAMETOOLONG, notify);
		} else if (m->outcome == LR_FINISHED) {
			lr_delete(m);
		} else {
			lr_to(m, PH_LISTING); /* lists once the token is in */
		}
		break;
	case LR_CREATED_MAYBE:
		/* Each member's listing tells, for all. */
		if (m->try_only)
			lr_finish_locked(m, -EAGAIN, notify);
		lr_defer(m, notify);
		break;
	case LR_CREATE_AGAIN: /* with the others, in one transaction */
		m->wants_create = 1;
		lr_to(m, PH_NEW);
		again = 1;
		break;
	case LR_CREATE_FAILED:
		lr_finish_locked(m, err, notify);
		break;
	}
	item->step = m->step; /* the step the token's reply is for */
	return again;
}

static void ml_on_created(int rc, const void *data)
{
	struct ml_create *c = (struct ml_create *)data;
	struct zkl_lockreq *g = c->g;
	struct zkl_link notify;
	int again = 0, token_asked = 0;

	session_enter(g->s, &notify);
	/* A transaction fails whole: its first error is every member's
	 * (ZNONODE: a resource's znode is missing, made again for all). */
	for (unsigned i = 0; i < c->n; i++)
		again |= ml_created_one(&c->item[i], rc, &notify);
	if (rc == ZOK) {
		/* The token: every node of one transaction has its zxid.  Its
		 * answer comes before any listing sent after it. */
		token_asked = ml_ask_token(c);
		for (unsigned i = 0; i < c->n; i++)
			if (ml_item_listing(&c->item[i]))
				lr_list(c->item[i].m, &notify);
	}
	if (again) {
		int err = ml_send_locked(g);
		/* Each member asking fails, and with it the multi-lock. */
		for (unsigned i = 0; err < 0 && i < c->n; i++) {
			struct zkl_lockreq *m = c->item[i].m;
			if (m->wants_create && m->phase == PH_NEW) {
				lr_to(m, PH_GONE);
				lr_finish_locked(m, err, &notify);
			}
		}
	}
	for (unsigned i = 0; i < c->n; i++) {
		struct zkl_lockreq *m = c->item[i].m;
		if (token_asked && c->item[i].token)
			continue; /* its CALL hold goes with the token's */
		lr_tell_gone_locked(m, &notify);
		lr_drop_locked(m, LR_HOLD_CALL);
	}
	if (!token_asked)
		free(c);
	lr_end_completion(g, &notify);
}

/* Ask for the token of the transaction's nodes (an exists of one of
 * them), for the members now listing, which keep their CALL hold for
 * it; the others are taken out of c.  Returns 1 if it was sent. */
static int ml_ask_token(struct ml_create *c)
{
	struct zkl_lockreq *g = c->g;
	const char *node = NULL;

	for (unsigned i = 0; i < c->n; i++) {
		c->item[i].token = ml_item_listing(&c->item[i]);
		if (c->item[i].token && !node)
			node = c->item[i].m->node;
	}
	if (!node)
		return 0;
	lr_hold(g, LR_HOLD_CALL);
	if (zoo_aexists(g->s->zh, node, 0, ml_on_token, c) != ZOK) {
		/* Only a dead handle refuses: its event ends the members. */
		lr_drop_locked(g, LR_HOLD_CALL);
		return 0;
	}
	return 1;
}

static void ml_on_token(int rc, const struct Stat *st, const void *data)
{
	struct ml_create *c = (struct ml_create *)data;
	struct zkl_lockreq *g = c->g;
	struct zkl_link notify;

	session_enter(g->s, &notify);
	for (unsigned i = 0; i < c->n; i++) {
		struct zkl_lockreq *m = c->item[i].m;
		if (!c->item[i].token)
			continue;
		/* Replies come in order: the member's listing is still to
		 * come, unless it was let go meanwhile. */
		if (ml_item_listing(&c->item[i])) {
			if (rc == ZOK)
				m->czxid = st->czxid;
			else
				/* Read with the owner check once connected:
				 * its listing's answer, lost too, finds it
				 * recovering. */
				lr_to(m, PH_RECOVERING);
		}
		lr_tell_gone_locked(m, &notify);
		lr_drop_locked(m, LR_HOLD_CALL);
	}
	free(c);
	lr_end_completion(g, &notify);
}

/*
 * A multi-lock's other transactions: a note on every
 * node, and the release of them all; and the context every transaction
 * of it allocates.
 */
/* One allocation for a transaction's context: `head` bytes whose last
 * member is an array of n entries of `item` bytes, then its n ops and n
 * results (every part a multiple of 8 bytes long). */
static void *ml_txn_alloc(size_t head, size_t item, unsigned n, zoo_op_t **ops,
			  zoo_op_result_t **results)
{
	char *p = malloc(
		head + n * (item + sizeof(zoo_op_t) + sizeof(zoo_op_result_t)));

	if (p) {
		*ops = (zoo_op_t *)(p + head + n * item);
		*results = (zoo_op_result_t *)(*ops + n);
	}
	return p;
}

/* A note on every node of the multi-lock, in one transaction: every host
 * sees it on all of them or on none.  Each set only over the version its
 * member's own watch read (a mark set since is not lost: EAGAIN), and
 * with the revocation mark's line kept once the lock was asked. */
struct ml_set {
	struct zkl_lockreq *g;        /* with a CALL hold */
	struct zkl_lockreq **members; /* as sent, and the token then: the */
	int64_t token;                /* versions are those members' */
	void (*cb)(int err, void *arg);
	void *arg;
	char *note;
	zoo_op_t *ops;
	zoo_op_result_t *results;
	struct Stat stats[];
};

static void ml_on_set(int rc, const void *data)
{
	struct ml_set *set = (struct ml_set *)data;
	struct zkl_lockreq *g = set->g;
	void (*cb)(int err, void *arg) = set->cb;
	void *arg = set->arg;
	struct zkl_link notify;

	session_enter(g->s, &notify);
	if (rc == ZOK && g->members == set->members && g->czxid == set->token)
		for (unsigned i = 0; i < g->nmembers; i++)
			g->members[i]->own_version = set->stats[i].version;
	lr_end_completion(g, &notify);
	free(set->note);
	free(set);
	cb(rc == ZOK ? 0 : lr_note_err(rc), arg);
}

int multilock_set_data_locked(struct zkl_lockreq *g, const void *data,
			      size_t len, void (*cb)(int err, void *arg),
			      void *arg)
{
	unsigned n = g->nmembers;
	zoo_op_result_t *set_results;
	zoo_op_t *set_ops;
	struct ml_set *set;
	size_t notelen;
	int asked = g->revoke_asked, rc;

	ZKL_ASSERT_HELD(&g->s->lock);
	set = ml_txn_alloc(sizeof(*set), sizeof(set->stats[0]), n, &set_ops,
			   &set_results);
	if (!set)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++)
		asked |= g->members[i]->revoke_asked;
	rc = lr_note_data(g, asked, data, len, &set->note, &notelen);
	if (rc < 0) {
		free(set);
		return rc;
	}
	set->g = g;
	set->members = g->members;
	set->token = g->czxid;
	set->cb = cb;
	set->arg = arg;
	set->ops = set_ops;
	set->results = set_results;
	for (unsigned i = 0; i < n; i++)
		zoo_set_op_init(&set->ops[i], g->members[i]->node, set->note,
				(int)notelen, lr_note_version(g->members[i]),
				&set->stats[i]);
	lr_hold(g, LR_HOLD_CALL);
	rc = zoo_amulti(g->s->zh, (int)n, set->ops, set->results, ml_on_set,
			set);
	if (rc != ZOK) {
		lr_drop_locked(g,
			       LR_HOLD_CALL); /* never the last: the owner's */
		free(set->note);
		free(set);
		return zkerr_errno(rc);
	}
	for (unsigned i = 0; i < n; i++)
		session_changed(g->s, g->members[i]->node);
	return 0;
}

/* The members' nodes deleted in one transaction: another host sees all of
 * them go at once. */
struct ml_delete {
	unsigned n;
	zoo_op_t *ops;
	zoo_op_result_t *results;
	struct lr_call item[]; /* each member, with a CALL hold */
};

static void ml_on_deleted(int rc, const void *data)
{
	struct ml_delete *d = (struct ml_delete *)data;
	struct zkl_session *s = d->item[0].lr->s;
	struct zkl_link notify;

	session_enter(s, &notify);
	for (unsigned i = 0; i < d->n; i++) {
		struct zkl_lockreq *m = d->item[i].lr;
		if (!lr_call_current(&d->item[i])) {
			/* stale: the session expired under us */
		} else if (rc == ZOK || zkerr_is_connection_loss(rc)) {
			lr_deleted_locked(m, rc, &notify);
		} else {
			/* One was gone (deleted by another client): the
			 * transaction did nothing; one by one, then. */
			queue_leaving_done(&m->leaving);
			lr_delete(m);
		}
		lr_tell_gone_locked(m, &notify);
		lr_drop_locked(m, LR_HOLD_CALL);
	}
	free(d);
	session_leave(s, &notify);
}

/* Is m's node one to delete now, with the others? */
static int ml_deletable(const struct zkl_lockreq *m)
{
	return lr_has_node(m) && !m->jeopardy_wait &&
	       (m->phase == PH_LISTING || m->phase == PH_WATCHING ||
		m->phase == PH_IDLE);
}

void ml_delete_together_locked(struct zkl_lockreq *g)
{
	zoo_op_result_t *results;
	zoo_op_t *ops;
	struct ml_delete *d;
	unsigned k = 0;
	int rc;

	for (unsigned i = 0; i < g->nmembers; i++)
		k += ml_deletable(g->members[i]);
	if (k < 2) {
		for (unsigned i = 0; i < g->nmembers && k == 1; i++) {
			struct zkl_lockreq *m = g->members[i];
			if (ml_deletable(m)) {
				lr_unwatch_all(m);
				lr_delete(m);
				k = 0;
			}
		}
		return;
	}
	d = ml_txn_alloc(sizeof(*d), sizeof(d->item[0]), k, &ops, &results);
	if (!d)
		return; /* the same, one by one */
	d->n = k;
	d->ops = ops;
	d->results = results;
	k = 0;
	for (unsigned i = 0; i < g->nmembers; i++) {
		struct zkl_lockreq *m = g->members[i];
		if (!ml_deletable(m))
			continue;
		lr_unwatch_all(m);
		lr_delete_begin_locked(m);
		zoo_delete_op_init(&d->ops[k], m->node, -1);
		d->item[k++].lr = m;
	}
	rc = zoo_amulti(g->s->zh, (int)k, d->ops, d->results, ml_on_deleted, d);
	for (unsigned i = 0; i < k; i++) {
		struct lr_call *c = &d->item[i];
		if (rc != ZOK) {
			lr_delete_unsent_locked(c->lr);
			continue;
		}
		lr_hold(c->lr, LR_HOLD_CALL);
		lr_call_sent(c);
	}
	if (rc != ZOK)
		free(d);
}
