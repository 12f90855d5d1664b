/*
 * peerlease.c - a lease in the layout of Curator's InterProcessSemaphoreV2
 * (dialect curator) or kazoo's Semaphore (dialect kazoo), so that a mount
 * and those tools share one semaphore:
 *
 *   curator  the peer's lock   <res>/locks/_c_<uuid>-lock-<seq>
 *            a lease           <res>/leases/_c_<uuid>-lease-<seq>
 *            held when <res>/leases has at most N children, ours included
 *   kazoo    the peer's lock   <res>-__lock__/<hex32>__lock__<seq>
 *            a lease           <res>/<hex32>, ephemeral, not sequential
 *            created when <res> has fewer than N children (all of them)
 *
 * N is the resource's data (limit.h) in both.  Only the holder of the
 * peer's lock counts, adds a lease and watches the count, so the order
 * and the herd-freedom of that lock (a plain request, lr->mutex) carry
 * over to the leases.  The lock is let go once the lease is held, or
 * given up.  doc/design.md, "Semaphores in the peers' layouts".
 *
 * The request is a zkl_lockreq (lr.h) whose phases run MUTEX, then
 * CREATING and COUNTING (Curator: create, then count; kazoo: count, then
 * create), WATCHING while the count is full, IDLE once held; it keeps
 * the lock request's outcome, notices and owner's calls.
 */
#include "lr.h"
#include "resource.h"
#include "zkerr.h"
#include "log.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>

/* kazoo's layout (else Curator's). */
static int pl_kazoo(const struct zkl_lockreq *lr);
/* The CALL hold of a call just sent, if rc says it was: 0 or -errno. */
static int pl_call(struct zkl_lockreq *lr, int rc);
/* Let the peer's lock go (its node's deletion is awaited by the lease's
 * 'gone'). */
static void pl_release_mutex(struct zkl_lockreq *lr, struct zkl_link *notify);
/* Delete the lease node. */
static void pl_delete(struct zkl_lockreq *lr);
/* Tell the owner err and give everything up. */
static void pl_fail(struct zkl_lockreq *lr, int err, struct zkl_link *notify);
/* Held: the peer's lock goes, the owner is told, the node watched. */
static void pl_grant(struct zkl_lockreq *lr, struct zkl_link *notify);
/* The lease directory's ACL, read before the first count. */
static void pl_on_acl(int rc, struct ACL_vector *acl, struct Stat *st,
		      const void *data);

/* Create the lease node (kazoo: its fixed name). */
static void pl_create(struct zkl_lockreq *lr, struct zkl_link *notify);
/* Read N and the leases, both watched. */
static void pl_count(struct zkl_lockreq *lr, struct zkl_link *notify);
/* After a lost create reply: is lr->node ours? */
static void pl_check(struct zkl_lockreq *lr, struct zkl_link *notify);
/* After a lost create reply: find the node it may have made. */
static void pl_recover(struct zkl_lockreq *lr, struct zkl_link *notify);
/* The watches of a count: on the leases, on N. */
static void pl_leases_fired(struct zkl_watch *w, const char *path,
			    enum zkl_watch_event ev, struct zkl_link *notify);
static void pl_limit_fired(struct zkl_watch *w, const char *path,
			   enum zkl_watch_event ev, struct zkl_link *notify);

static void pl_mutex_done(struct zkl_lockreq *m, int err, void *arg);

static int pl_start_mutex(struct zkl_lockreq *lr)
{
	char dir[NAMES_MAX_NODE_PATH + 1];
	struct zkl_lockreq *m;
	int err = names_peer_dir(lr->s->dialect, NAMES_PEER_LOCK, lr->res, dir);

	if (err == 0)
		err = lr_alloc(lr->s, dir, dir, LR_PEER_MUTEX, NULL,
			       ZKL_MODE_WRITE, lr->try_only ? LOCKREQ_TRY : 0,
			       lr->data, lr->datalen, pl_mutex_done, lr, &m);
	if (err < 0)
		return err;
	err = lr_start_locked(m);
	if (err < 0) {
		lr_drop_locked(m, LR_HOLD_OWNER);
		return err;
	}
	lr->mutex = m;
	lr_hold(lr, LR_HOLD_MUTEX);
	lr_to(lr, PH_MUTEX);
	return 0;
}

/* The peer's lock is ours (err 0), or could not be had. */
static void pl_mutex_done(struct zkl_lockreq *m, int err, void *arg)
{
	struct zkl_lockreq *lr = arg;
	struct zkl_link notify;

	session_enter(lr->s, &notify);
	lr_begin_entry_locked(lr, LR_HOLD_MUTEX);
	if (lr->mutex != m) {
		/* let go already */
	} else if (lr->outcome != LR_PENDING || lr->phase != PH_MUTEX) {
		pl_release_mutex(lr, &notify); /* the session ended under us */
	} else if (err < 0) {
		lr_to(lr, PH_GONE);
		pl_fail(lr, err, &notify);
	} else if (m->lost) {
		/* Granted, then lost with its session before we ran: start
		 * again on the next one. */
		lr_to(lr, PH_NEW);
		lr_defer(lr, &notify);
	} else if (pl_kazoo(lr)) {
		pl_count(lr, &notify);
	} else {
		pl_create(lr, &notify);
	}
	lr_end_entry_locked(lr, &notify);
	session_leave(lr->s, &notify);
}

static int pl_first_step(struct zkl_lockreq *lr)
{
	session_join_locked(lr->s, &lr->member);
	/* Between two sessions the lock's request waits for the next one,
	 * and we with it. */
	return pl_start_mutex(lr);
}

static int peerlease_start_locked(struct zkl_lockreq *lr,
				  struct zkl_link *notify)
{
	(void)notify;
	return lr_start_with_locked(lr, pl_first_step);
}

static void pl_resume(struct zkl_member *m, struct zkl_link *notify)
{
	struct zkl_lockreq *lr =
		ZKL_CONTAINER_OF(m, struct zkl_lockreq, member);
	int err;

	lr_begin_entry_locked(lr, LR_HOLD_RESUME);
	switch (lr->phase) {
	case PH_NEW: /* a new session: a fresh tag, and the lock again */
		pl_release_mutex(lr, notify);
		err = lr->outcome == LR_PENDING ? lr_new_tag(lr) : -ECANCELED;
		if (err == 0)
			err = pl_start_mutex(lr);
		if (err < 0) {
			lr_to(lr, PH_GONE);
			pl_fail(lr, err, notify);
		}
		break;
	case PH_RECOVERING:
		pl_recover(lr, notify);
		break;
	case PH_CHECKING:
		pl_check(lr, notify);
		break;
	case PH_COUNTING:
		pl_count(lr, notify);
		break;
	case PH_DELETING:
		pl_delete(lr);
		break;
	case PH_IDLE:
		if (lr->lost) { /* in jeopardy: after its margin */
			if (!lr->jeopardy_wait)
				pl_delete(lr);
		} else
			lr_watch_own(lr); /* its watch could not be set */
		break;
	case PH_MUTEX:    /* the peer's lock resumes by itself */
	case PH_CREATING: /* its reply comes, with the connection's loss */
	case PH_WATCHING: /* the session sets its watches again */
	case PH_GONE:
		break;
	case PH_LISTING:
		assert(!"a plain request's phase in a peer lease");
		break;
	}
	lr_end_entry_locked(lr, notify);
}

static const struct zkl_member_ops peerlease_member_ops = {
	.resume_locked = pl_resume,
	.expired_locked = lr_expired,
	.jeopardy_locked = lr_jeopardy,
	.lost_node_locked = lr_lost_node,
	.count_locked = lr_count,
	.hold_check_locked = lr_hold_check,
};

/*
 * What every step of a lease in a peer's layout uses:
 * letting the peer's lock go, deleting the lease, failing, granting, the
 * lease directory's ACL.
 */
static void pl_on_deleted(int rc, const void *data);

static int pl_kazoo(const struct zkl_lockreq *lr)
{
	return lr->s->dialect == ZKL_STYLE_KAZOO;
}

/* The CALL hold of a call just sent, if rc says it was: 0 or -errno. */
static int pl_call(struct zkl_lockreq *lr, int rc)
{
	if (rc != ZOK)
		return zkerr_errno(rc);
	lr_hold(lr, LR_HOLD_CALL);
	return 0;
}

/* Let the peer's lock go.  Its done comes (and drops the MUTEX hold on
 * lr) unless it was still pending. */
static void pl_release_mutex(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	struct zkl_lockreq *m = lr->mutex;

	if (!m)
		return;
	lr->mutex = NULL;
	if (m->outcome == LR_PENDING)
		lr_drop_locked(lr, LR_HOLD_MUTEX); /* the caller holds one */
	lr_release_sub_locked(lr, m, notify);
}

static void pl_on_deleted(int rc, const void *data)
{
	struct lr_call *c = (struct lr_call *)data;
	struct zkl_lockreq *lr = c->lr;
	struct zkl_link notify;

	session_enter(lr->s, &notify);
	if (lr_call_current(c)) {
		if (zkerr_is_connection_loss(rc))
			lr_defer(lr, &notify); /* must not leave it behind */
		else
			lr_to(lr, PH_GONE);
	}
	lr_call_end(c, &notify);
}

static void pl_delete(struct zkl_lockreq *lr)
{
	struct lr_call *c;
	int err;

	lr_to(lr, PH_DELETING);
	c = lr_call_new(lr);
	err = lr_call_sent_if(c, c ? zoo_adelete(lr->s->zh, lr->node, -1,
						 pl_on_deleted, c)
				   : ZSYSTEMERROR);
	if (err == -ENOMEM)
		lr_defer_for(lr, LR_WATCH_RETRY_MS); /* pl_resume: again */
	else if (err < 0) /* only a dead handle refuses: the node dies too */
		lr_to(lr, PH_GONE);
}

static void peerlease_abandon_locked(struct zkl_lockreq *lr,
				     struct zkl_link *notify)
{
	ZKL_ASSERT_HELD(&lr->s->lock);
	assert(!lr->wg); /* its mutex waits, with a record of its own */
	lr_unwatch_all(lr);
	pl_release_mutex(lr, notify);
	switch (lr->phase) {
	case PH_CREATING:
	case PH_RECOVERING:
	case PH_CHECKING:
	case PH_DELETING:
		return; /* the step in flight deletes what it finds */
	case PH_NEW:
	case PH_MUTEX:
	case PH_LISTING:
	case PH_COUNTING:
	case PH_WATCHING:
	case PH_IDLE:
	case PH_GONE:
		if (lr_has_node(lr) && lr->phase != PH_GONE)
			pl_delete(lr);
		else
			lr_to(lr, PH_GONE);
		return;
	}
}

static void pl_fail(struct zkl_lockreq *lr, int err, struct zkl_link *notify)
{
	lr_tell_locked(lr, err, notify);
	lr->outcome = LR_FINISHED;
	peerlease_abandon_locked(lr, notify);
}

static void pl_grant(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	lr_to(lr, PH_IDLE);
	lr_unwatch_all(lr);
	pl_release_mutex(lr, notify);
	lr_tell_locked(lr, 0, notify);
	lr_watch_own(lr);
}

/* With credentials, the lease directory's ACL, read before its first
 * count: the peer's layout keeps leases where the resource's queue check
 * (queue.c) does not look, and one that lets others in lets them delete
 * or add leases. */
static void pl_on_acl(int rc, struct ACL_vector *acl, struct Stat *st,
		      const void *data)
{
	struct zkl_lockreq *lr = (struct zkl_lockreq *)data;
	char foreign[256], fix[NAMES_MAX_NODE_PATH + 128];
	struct zkl_link notify;

	(void)st;
	session_enter(lr->s, &notify);
	if (rc == ZOK && !lr->acl_checked) {
		lr->acl_checked = 1;
		lr->acl_open = session_acl_foreign(lr->s, acl, foreign,
						   sizeof(foreign)) != 0;
		if (lr->acl_open) {
			session_acl_fix(lr->s, lr->dir, fix, sizeof(fix));
			log_msg(LOG_ERR,
				"%s is not the credentials' alone: its ACL "
				"also grants %s; leases in it are refused "
				"(EACCES) until it is fixed: %s",
				lr->dir, foreign, fix);
		}
	}
	lr_end_completion(lr, &notify);
}

/*
 * The lease node of a lease in a peer's layout and its count
 * Curator creates, then counts; kazoo counts, then creates; after a lost
 * create reply, the node is looked for.
 */
static void pl_on_created(int rc, const char *name, const struct Stat *st,
			  const void *data);
static void pl_on_checked(int rc, const struct Stat *st, const void *data);

static void pl_create(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	struct lr_call *c = lr_call_new(lr);
	int rc = ZSYSTEMERROR;

	if (c)
		rc = zoo_acreate2(lr->s->zh, lr->create_path, lr->data,
				  (int)lr->datalen, lr->s->acl,
				  pl_kazoo(lr) ? ZOO_EPHEMERAL
					       : ZOO_EPHEMERAL_SEQUENTIAL,
				  pl_on_created, c);
	if (rc != ZOK) {
		if (c)
			lr_call_unsent(c);
		lr_to(lr, PH_GONE);
		pl_fail(lr, c ? zkerr_errno(rc) : -ENOMEM, notify);
		return;
	}
	lr->create_attempts++;
	lr_to(lr, PH_CREATING);
	lr_call_sent(c);
}

static void pl_on_limit(int rc, const char *value, int len,
			const struct Stat *st, const void *data)
{
	struct zkl_lockreq *lr = (struct zkl_lockreq *)data;
	struct zkl_link notify;

	(void)st;
	session_enter(lr->s, &notify);
	lr->peer_limit_err =
		resource_limit_of_reply(rc, value, len, &lr->peer_limit);
	if (lr->peer_limit_err == -ENOENT) /* kazoo: no resource yet */
		lr->peer_limit_err = 0;
	lr_end_completion(lr, &notify);
}

/* Does the count leave room for us?  Curator counts the leases, ours
 * among them; kazoo every child of the resource, before adding ours. */
static int pl_fits(const struct zkl_lockreq *lr, const struct String_vector *sv)
{
	size_t n = sv ? (size_t)sv->count : 0;

	return pl_kazoo(lr) ? n < lr->peer_limit : n <= lr->peer_limit;
}

/* A create retried after a lost reply may have landed twice (the first
 * applied after we looked for it): a lease of ours besides lr's own
 * would count against N until the session ends. */
static void pl_delete_strays(struct zkl_lockreq *lr,
			     const struct String_vector *sv)
{
	const char *prefix = strrchr(lr->create_path, '/') + 1;
	size_t plen = strlen(prefix);
	const char *mine = lr_node_name(lr);

	for (int i = 0; sv && i < sv->count; i++)
		if (strncmp(sv->data[i], prefix, plen) == 0 &&
		    strcmp(sv->data[i], mine) != 0)
			lr_delete_stray(lr, sv->data[i]);
}

static int pl_listed_self(const struct zkl_lockreq *lr,
			  const struct String_vector *sv)
{
	const char *name = lr_node_name(lr);

	for (int i = 0; sv && i < sv->count; i++)
		if (strcmp(sv->data[i], name) == 0)
			return 1;
	return 0;
}

static void pl_on_children(int rc, const struct String_vector *sv,
			   const void *data)
{
	struct lr_call *c = (struct lr_call *)data;
	struct zkl_lockreq *lr = c->lr;
	struct zkl_link notify;

	session_enter(lr->s, &notify);
	if (rc == ZOK && lr->maybe_stray && !pl_kazoo(lr) && lr_has_node(lr))
		pl_delete_strays(lr, sv);
	if (!lr_call_current(c)) {
		/* stale */
	} else if (zkerr_is_connection_loss(rc)) {
		lr_defer(lr, &notify);
	} else if (rc != ZOK && !(rc == ZNONODE && pl_kazoo(lr))) {
		pl_fail(lr, rc == ZNONODE ? -EIO : zkerr_errno(rc), &notify);
	} else if (lr->acl_open) {
		pl_fail(lr, -EACCES, &notify);
	} else if (lr->peer_limit_err < 0) {
		log_msg(LOG_ERR,
			"%s: its data is not a limit (set one with "
			"MOUNT/<resource>/limit)",
			lr->res);
		pl_fail(lr,
			lr->peer_limit_err == -EBADMSG ? -EIO
						       : lr->peer_limit_err,
			&notify);
	} else if (!pl_kazoo(lr) && !pl_listed_self(lr, rc ? NULL : sv)) {
		log_msg(LOG_WARNING, "lease node %s vanished while queued",
			lr->node);
		lr->node[0] = '\0';
		pl_fail(lr, -EIO, &notify);
	} else if (pl_fits(lr, rc ? NULL : sv)) {
		if (pl_kazoo(lr))
			pl_create(lr, &notify);
		else
			pl_grant(lr, &notify);
	} else if (lr->try_only) {
		pl_fail(lr, -EAGAIN, &notify);
	} else if (lr->recount) {
		pl_count(lr, &notify);
	} else {
		lr_to(lr, PH_WATCHING);
	}
	lr_call_end(c, &notify);
}

/* Read N and the leases, both watched: a change of either wakes us. */
static void pl_count(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	struct zkl_session *s = lr->s;
	int err;

	lr_unwatch_all(lr);
	lr->recount = 0;
	lr_to(lr, PH_COUNTING);
	err = session_watch_armed_locked(s, lr->res, &lr->limit_watch);
	if (err == 0) {
		lr_hold(lr, LR_HOLD_LIMIT);
		err = session_watch_children_armed_locked(s, lr->dir,
							  &lr->watch);
	}
	if (err == 0) {
		lr_hold(lr, LR_HOLD_WATCH);
		err = pl_call(lr, session_awget_locked(s, lr->res, pl_on_limit,
						       lr));
	}
	/* The ACL's reply comes before the listing's, sent next. */
	if (err == 0 && s->owned && !lr->acl_checked)
		err = pl_call(lr, zoo_aget_acl(s->zh, lr->dir, pl_on_acl, lr));
	if (err == 0) {
		struct lr_call *c = lr_call_new(lr);
		err = lr_call_sent_if(
			c, c ? session_awget_children_locked(s, lr->dir,
							     pl_on_children, c)
			     : ZSYSTEMERROR);
	}
	if (err < 0)
		pl_fail(lr, err, notify);
}

/* The leases or N changed: the watch's hold `h` ends here. */
static void pl_fired(struct zkl_lockreq *lr, enum lr_hold h,
		     struct zkl_link *notify)
{
	lr_begin_entry_locked(lr, h);
	if (lr->outcome != LR_PENDING) {
		/* stale */
	} else if (lr->phase == PH_WATCHING) {
		pl_count(lr, notify);
	} else if (lr->phase == PH_COUNTING) {
		lr->recount = 1; /* the reply on its way may predate it */
	}
	lr_end_entry_locked(lr, notify);
}

static void pl_leases_fired(struct zkl_watch *w, const char *path,
			    enum zkl_watch_event ev, struct zkl_link *notify)
{
	(void)path;
	(void)ev;
	pl_fired(ZKL_CONTAINER_OF(w, struct zkl_lockreq, watch), LR_HOLD_WATCH,
		 notify);
}

static void pl_limit_fired(struct zkl_watch *w, const char *path,
			   enum zkl_watch_event ev, struct zkl_link *notify)
{
	(void)path;
	(void)ev;
	pl_fired(ZKL_CONTAINER_OF(w, struct zkl_lockreq, limit_watch),
		 LR_HOLD_LIMIT, notify);
}

/* After a lost create reply: is lr->node ours? */
static void pl_check(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	struct lr_call *c;

	lr_to(lr, PH_CHECKING);
	c = lr_call_new(lr);
	if (lr_call_sent_if(c, c ? zoo_aexists(lr->s->zh, lr->node, 0,
					       pl_on_checked, c)
				 : ZSYSTEMERROR) < 0) {
		lr_to(lr, PH_GONE);
		pl_fail(lr, -ENOTCONN, notify);
	}
}

static void pl_on_found(int rc, const struct String_vector *sv,
			const void *data)
{
	struct lr_call *c = (struct lr_call *)data;
	struct zkl_lockreq *lr = c->lr;
	const char *prefix = strrchr(lr->create_path, '/') + 1;
	size_t plen = strlen(prefix);
	struct zkl_link notify;
	int i;

	session_enter(lr->s, &notify);
	if (!lr_call_current(c)) {
		/* stale */
	} else if (zkerr_is_connection_loss(rc)) {
		lr_defer(lr, &notify);
	} else if (rc != ZOK && rc != ZNONODE) {
		lr_to(lr, PH_GONE);
		pl_fail(lr, zkerr_errno(rc), &notify);
	} else {
		for (i = 0; rc == ZOK && i < sv->count; i++)
			if (strncmp(sv->data[i], prefix, plen) == 0)
				break;
		if (rc == ZOK && i < sv->count &&
		    lr_set_node(lr, lr->dir, sv->data[i]) == 0)
			pl_check(lr, &notify);
		else if (lr->outcome == LR_FINISHED)
			lr_to(lr, PH_GONE);
		else
			pl_create(lr, &notify);
	}
	lr_call_end(c, &notify);
}

/* A create whose reply was lost: find the node it may have made (a
 * Curator lease by its tag; kazoo's has a name known beforehand). */
static void pl_recover(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	if (pl_kazoo(lr)) {
		if (lr_set_node(lr, lr->create_path, NULL) == 0) {
			pl_check(lr, notify);
			return;
		}
	} else {
		struct lr_call *c;

		lr_to(lr, PH_RECOVERING);
		c = lr_call_new(lr);
		if (lr_call_sent_if(c, c ? zoo_aget_children(lr->s->zh, lr->dir,
							     0, pl_on_found, c)
					 : ZSYSTEMERROR) == 0)
			return;
	}
	lr_to(lr, PH_GONE);
	pl_fail(lr, -ENOTCONN, notify);
}

/* Our lease node exists (czxid known): go on with it. */
static void pl_have_node(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	if (lr->outcome == LR_FINISHED)
		pl_delete(lr);
	else if (pl_kazoo(lr))
		pl_grant(lr, notify); /* counted before the create */
	else
		pl_count(lr, notify);
}

static void pl_on_created(int rc, const char *name, const struct Stat *st,
			  const void *data)
{
	struct lr_call *c = (struct lr_call *)data;
	struct zkl_lockreq *lr = c->lr;
	struct zkl_link notify;
	int err;

	session_enter(lr->s, &notify);
	if (!lr_call_current(c)) {
		/* the session expired under us */
	} else if (rc == ZNODEEXISTS && pl_kazoo(lr) &&
		   lr_set_node(lr, lr->create_path, NULL) == 0) {
		/* kazoo's fixed name: our own create, whose reply was lost,
		 * landed after we looked for it; pl_check tells. */
		pl_check(lr, &notify);
	} else {
		switch (lr_create_reply_locked(lr, rc, &err)) {
		case LR_CREATED:
			lr->czxid = st->czxid;
			if (lr_set_node(lr, name, NULL) < 0) {
				lr_to(lr, PH_GONE);
				pl_fail(lr, -ENAMETOOLONG, &notify);
			} else {
				pl_have_node(lr, &notify);
			}
			break;
		case LR_CREATED_MAYBE:
			lr_defer(lr, &notify);
			break;
		case LR_CREATE_AGAIN:
			pl_create(lr, &notify);
			break;
		case LR_CREATE_FAILED:
			pl_fail(lr, err, &notify);
			break;
		}
	}
	lr_call_end(c, &notify);
}

static void pl_on_checked(int rc, const struct Stat *st, const void *data)
{
	struct lr_call *c = (struct lr_call *)data;
	struct zkl_lockreq *lr = c->lr;
	struct zkl_link notify;

	session_enter(lr->s, &notify);
	if (!lr_call_current(c)) {
		/* stale */
	} else if (zkerr_is_connection_loss(rc)) {
		lr_defer(lr, &notify);
	} else if (rc == ZOK && st->ephemeralOwner == lr->s->client_id) {
		lr->czxid = st->czxid;
		pl_have_node(lr, &notify);
	} else if (rc == ZOK || rc == ZNONODE) {
		lr->node[0] = '\0'; /* not made, or not by us */
		if (lr->outcome == LR_FINISHED)
			lr_to(lr, PH_GONE);
		else if (pl_kazoo(lr))
			pl_count(lr, &notify);
		else
			pl_create(lr, &notify);
	} else {
		lr_to(lr, PH_GONE);
		pl_fail(lr, zkerr_errno(rc), &notify);
	}
	lr_call_end(c, &notify);
}

/* A lease in a peer's layout: the peer's lock first, then a lease node
 * counted against the limit; its own watches and session hooks. */
const struct lr_kind_ops peerlease_kind = {
	.name = "peer lease",
	.member_ops = &peerlease_member_ops,
	.watch_fired = pl_leases_fired,
	.limit_fired = pl_limit_fired,
	.start_locked = peerlease_start_locked,
	.abandon_locked = peerlease_abandon_locked,
	.owners_lock = 1,
	.own_count = 1,
	.has_subs = 1,
};
