/*
 * revoke.c - ask or break a resource's holders (revoke.h): the holders'
 * answer (holders.h) tells which nodes hold; one set or delete each, all
 * sent at once, and the owner told when the last is answered.
 */
#include "revoke.h"
#include "holders.h"
#include "internal.h"
#include "log.h"
#include "names.h"
#include "zkerr.h"
#include "lr.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

struct revoke_ctx {
	struct zkl_session *s;
	enum revoke_how how;
	revoke_fn cb;
	void *arg;
	struct revoke_result r;
	/* Calls or breaks to be answered, and one for the sender.  Counted
	 * under s->lock: answers come on ZooKeeper's completion thread, a
	 * break's bound on the session's clock thread. */
	size_t pending;
	char dir[];
};

/* One answer (or the sender's own share): the last tells the owner.  No
 * lock of ours held. */
static void revoke_one_done(struct revoke_ctx *c, int rc)
{
	struct zkl_link notify;
	struct zkl_session *s = c->s;
	int last;

	session_enter(s, &notify);
	if (rc == ZOK)
		c->r.done++;
	else if (rc != ZNONODE) /* released meanwhile: nothing to do */
		c->r.failed++;
	last = --c->pending == 0;
	session_leave(s, &notify);
	if (!last)
		return;
	c->cb(0, &c->r, c->arg);
	free(c);
}

static void revoke_on_set(int rc, const struct Stat *st, const void *data)
{
	(void)st;
	revoke_one_done((struct revoke_ctx *)data, rc);
}

static void revoke_on_deleted(int rc, const void *data)
{
	revoke_one_done((struct revoke_ctx *)data, rc);
}

/* ---- a break that tells first ------------------------------------------ */

/*
 * A mount's holding node is not deleted at once: it gets the break mark,
 * its mount's own watch hears of it, and that mount tells its holder and
 * only then deletes the node (lr_lose_then_let_go_locked).  We wait for
 * the deletion, and delete it ourselves only once a bound has run (the
 * session timeout): a mount that did not hear of the mark by then was cut
 * off, and its jeopardy has told the holder already.
 */
struct revoke_break {
	struct revoke_ctx *c;
	struct zkl_watch watch;   /* on the node, until it goes */
	struct zkl_member timer;  /* in s->later until the bound */
	struct zkl_notice notice; /* the end, told without s->lock */
	int rc;                   /* ... and its code */
	unsigned ended : 1;       /* gone, deleted, or the session ended */
	unsigned deleting : 1;    /* our own delete is in flight */
	char path[];
};

static void revoke_break_told(struct zkl_notice *n)
{
	struct revoke_break *b =
		ZKL_CONTAINER_OF(n, struct revoke_break, notice);
	struct revoke_ctx *c = b->c;
	int rc = b->rc;

	free(b);
	revoke_one_done(c, rc);
}

/* The break is over (rc: ZOK when the node went): stop watching and
 * timing, and tell once s->lock is left.  s->lock held. */
static void revoke_break_end_locked(struct revoke_break *b, int rc,
				    struct zkl_link *notify)
{
	struct zkl_session *s = b->c->s;

	if (b->ended)
		return;
	b->ended = 1;
	b->rc = rc;
	watchtab_remove(&s->watches, &b->watch);
	if (list_linked(&b->timer.resume))
		list_del(&b->timer.resume);
	notice_init(&b->notice, revoke_break_told);
	notice_post(notify, &b->notice);
}

static void revoke_break_on_deleted(int rc, const void *data)
{
	struct revoke_break *b = (struct revoke_break *)data;
	struct zkl_session *s = b->c->s;
	struct zkl_link notify;

	session_enter(s, &notify);
	b->deleting = 0;
	revoke_break_end_locked(b, rc == ZNONODE ? ZOK : rc, &notify);
	session_leave(s, &notify);
}

/* The node changed or went.  Gone: its mount let go (or it was
 * released); the break is done.  Changed (a note): watch again. */
static void revoke_break_fired(struct zkl_watch *w, const char *path,
			       enum zkl_watch_event ev, struct zkl_link *notify)
{
	struct revoke_break *b =
		ZKL_CONTAINER_OF(w, struct revoke_break, watch);

	(void)path;
	if (b->ended || b->deleting)
		return;
	if (ev == WATCH_GONE || ev == WATCH_VANISHED)
		revoke_break_end_locked(b, ZOK, notify);
	else if (session_watch_locked(b->c->s, b->path, &b->watch) < 0)
		log_msg(LOG_WARNING,
			"break of %s: cannot watch it; it is deleted at the "
			"bound",
			b->path);
}

/* The bound has run and the node is still there: delete it. */
static void revoke_break_due(struct zkl_member *m, struct zkl_link *notify)
{
	struct revoke_break *b =
		ZKL_CONTAINER_OF(m, struct revoke_break, timer);
	struct zkl_session *s = b->c->s;
	int rc;

	if (b->ended)
		return;
	log_msg(LOG_WARNING,
		"%s: its mount did not let go after the break mark: deleting "
		"it",
		b->path);
	watchtab_remove(&s->watches, &b->watch);
	b->deleting = 1;
	rc = zoo_adelete(s->zh, b->path, -1, revoke_break_on_deleted, b);
	if (rc == ZOK)
		session_changed(s, b->path);
	if (rc != ZOK) {
		b->deleting = 0;
		revoke_break_end_locked(b, rc, notify);
	}
}

/* The session ended (or closes) before the bound: the node went with it,
 * or cannot be deleted now. */
static void revoke_break_expired(struct zkl_member *m, int requeue,
				 struct zkl_link *lost, struct zkl_link *notify)
{
	(void)requeue;
	(void)lost;
	revoke_break_end_locked(ZKL_CONTAINER_OF(m, struct revoke_break, timer),
				ZCLOSING, notify);
}

static const struct zkl_member_ops revoke_break_ops = {
	.resume_locked = revoke_break_due,
	.expired_locked = revoke_break_expired,
};

/* The mark's answer: the watch's tells the rest (a node gone already is
 * VANISHED there). */
static void revoke_break_on_marked(int rc, const struct Stat *st,
				   const void *data)
{
	(void)st;
	(void)data;
	if (rc != ZOK && rc != ZNONODE)
		log_msg(LOG_WARNING,
			"break: cannot mark a node (%s): it is deleted at the "
			"bound",
			zerror(rc));
}

/* Is n a mount's node (its data names its holder: host and pid lines)?
 * A peer's holders (Curator, kazoo) would never hear of the mark. */
static int revoke_is_mounts(const struct holders_node *n)
{
	int host = 0, pid = 0;

	for (size_t i = 0; i < n->len; i++) {
		if (i != 0 && n->data[i - 1] != '\n')
			continue;
		host |= n->len - i > 5 && memcmp(n->data + i, "host ", 5) == 0;
		pid |= n->len - i > 4 && memcmp(n->data + i, "pid ", 4) == 0;
	}
	return host && pid && !n->orphan;
}

/* Mark n for a break and wait for its mount to let go.  Returns
 * ZooKeeper's code of the mark's send (ZOK: the break's end is told). */
static int revoke_break_mounts(struct revoke_ctx *c, const char *path,
			       const struct holders_node *n)
{
	struct zkl_link notify;
	struct zkl_session *s = c->s;
	size_t plen = strlen(path) + 1, mlen = sizeof(REVOKE_BREAK_MARK);
	struct revoke_break *b = calloc(1, sizeof(*b) + plen);
	char *marked = malloc(mlen + n->len);
	int rc = ZSYSTEMERROR;

	if (b && marked) {
		b->c = c;
		memcpy(b->path, path, plen);
		list_init(&b->watch.link);
		list_init(&b->timer.live);
		list_init(&b->timer.resume);
		b->timer.ops = &revoke_break_ops;
		b->watch.fired_locked = revoke_break_fired;
		/* The mark, then what the node held: every host's holders
		 * still names its holder. */
		memcpy(marked, REVOKE_BREAK_MARK "\n", mlen);
		memcpy(marked + mlen, n->data, n->len);
		session_enter(s, &notify);
		rc = zoo_aset(s->zh, path, marked, (int)(mlen + n->len), -1,
			      revoke_break_on_marked, NULL);
		if (rc == ZOK) {
			session_changed(s, path);
			if (session_watch_locked(s, path, &b->watch) < 0)
				log_msg(LOG_WARNING,
					"break of %s: cannot watch it; it is "
					"deleted at the bound",
					path);
			session_resume_at_locked(
				s, &b->timer,
				session_clock_now() +
					session_break_bound_ms_locked(s));
		}
		session_leave(s, &notify);
	}
	free(marked);
	if (rc != ZOK)
		free(b);
	return rc;
}

/* ---- asking and breaking ----------------------------------------------- */

/* Does the how take this node?  Holders, and for a break orphans too;
 * only lock nodes and leases: in kazoo's layout holders counts every
 * child of the resource as a lease (kazoo does), sub-resources too, and
 * those are no one's lock to ask or break. */
static int revoke_takes(const struct revoke_ctx *c,
			const struct holders_node *n)
{
	struct zkl_node parsed;

	if (names_parse(n->name, &parsed) < 0 &&
	    names_parse_peer_lease(ZKL_STYLE_KAZOO, n->name, &parsed) < 0)
		return 0;
	return n->state == HOLDERS_HELD ||
	       (c->how == REVOKE_BREAK && n->orphan);
}

/* Send the set or delete of node n; counted pending first, so that its
 * answer cannot be the last before the sender's share. */
static void revoke_send(struct revoke_ctx *c, const struct holders_node *n)
{
	struct zkl_link notify;
	char path[NAMES_MAX_NODE_PATH + 1];
	int rc = ZBADARGUMENTS;

	session_enter(c->s, &notify);
	c->pending++;
	session_leave(c->s, &notify);
	if ((size_t)snprintf(path, sizeof(path), "%s/%s%s", c->dir, n->where,
			     n->name) >= sizeof(path)) {
		/* not sent */
	} else if (c->how == REVOKE_BREAK && revoke_is_mounts(n)) {
		rc = revoke_break_mounts(c, path, n);
	} else {
		session_enter(c->s, &notify);
		rc = c->how == REVOKE_ASK
			     ? zoo_aset(c->s->zh, path, REVOKE_MARK,
					(int)strlen(REVOKE_MARK), -1,
					revoke_on_set, c)
			     : zoo_adelete(c->s->zh, path, -1,
					   revoke_on_deleted, c);
		if (rc == ZOK)
			session_changed(c->s, path);
		session_leave(c->s, &notify);
	}
	if (rc != ZOK)
		revoke_one_done(c, rc); /* not sent: no answer will come */
	else
		log_msg(LOG_DEBUG, "%s %s",
			c->how == REVOKE_ASK ? "asked" : "broke", path);
}

static void revoke_listed(int err, const struct holders_node *nodes, size_t n,
			  const struct holders_semaphore *sem, void *arg)
{
	struct revoke_ctx *c = arg;

	(void)sem;
	if (err < 0) {
		c->cb(err, &c->r, c->arg);
		free(c);
		return;
	}
	for (size_t i = 0; i < n; i++)
		if (revoke_takes(c, &nodes[i]))
			revoke_send(c, &nodes[i]);
	revoke_one_done(c, ZNONODE); /* the sender's share */
}

int revoke_start(struct zkl_session *s, const char *dir, enum revoke_how how,
		 revoke_fn cb, void *arg)
{
	size_t len = strlen(dir) + 1;
	struct revoke_ctx *c = calloc(1, sizeof(*c) + len);
	int err;

	if (!c)
		return -ENOMEM;
	c->s = s;
	c->how = how;
	c->cb = cb;
	c->arg = arg;
	c->pending = 1;
	memcpy(c->dir, dir, len);
	err = holders_start(s, dir, revoke_listed, c);
	if (err < 0)
		free(c);
	return err;
}

/*
 * A holder asked to let go (lr.h): the get that sets the
 * watch on a held node (lr_watch_own: at the grant, after a change of
 * the node's data, after a reconnection) also reads the data; Curator's
 * revocation mark there (revoke.h: set by a mount's `echo ask > revoke`
 * or by Curator's Revoker.attemptRevoke, before the grant or after) is
 * remembered, with when it was seen, and told to the daemon once
 * (session_set_revoke_hook).  A multi-lock's member is told as its
 * multi-lock: only once that holds, and once for all its members.
 * Asking takes nothing away: the lock stays held.
 */
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
	if (lr->kind == LR_PEER_MUTEX || lr->passing || owner->lost ||
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
	} else if (lr->kind == LR_PEER_LEASE) {
		/* A peer's layout deletes its own way: the breaker does, a
		 * bound later; its holder is told now. */
		lr_unwatch_all(lr);
		lr_lose_locked(lr, why, notify);
	} else {
		lr_lose_then_let_go_locked(owner, why, notify);
	}
}
