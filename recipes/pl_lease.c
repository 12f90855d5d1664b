/*
 * pl_lease.c - the lease node of a lease in a peer's layout and its count
 * (pl.h): Curator creates, then counts; kazoo counts, then creates; after
 * a lost create reply, the node is looked for.  Above pl_base.c.
 */
#include "pl.h"
#include "resource.h"
#include "zkerr.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>

#include "log.h"

static void pl_on_created(int rc, const char *name, const struct Stat *st,
			  const void *data);
static void pl_on_checked(int rc, const struct Stat *st, const void *data);

void pl_create(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	int rc;

	lr_hold(lr, LR_HOLD_CALL);
	rc = zoo_acreate2(lr->s->zh, lr->create_path, lr->data,
			  (int)lr->datalen, lr->s->acl,
			  pl_kazoo(lr) ? ZOO_EPHEMERAL
				       : ZOO_EPHEMERAL_SEQUENTIAL,
			  pl_on_created, lr);
	if (rc != ZOK) {
		lr_drop_locked(lr, LR_HOLD_CALL);
		lr->phase = PH_GONE;
		pl_fail(lr, zkerr_errno(rc), notify);
		return;
	}
	lr->create_attempts++;
	lr->phase = PH_CREATING;
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
	struct zkl_lockreq *lr = (struct zkl_lockreq *)data;
	struct zkl_link notify;

	session_enter(lr->s, &notify);
	if (rc == ZOK && lr->maybe_stray && !pl_kazoo(lr) && lr_has_node(lr))
		pl_delete_strays(lr, sv);
	if (lr->phase != PH_COUNTING) {
		/* stale */
	} else if (lr_is_connection_loss(rc)) {
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
		lr->phase = PH_WATCHING;
	}
	lr_end_completion(lr, &notify);
}

/* Read N and the leases, both watched: a change of either wakes us. */
void pl_count(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	struct zkl_session *s = lr->s;
	int err;

	lr_unwatch_all(lr);
	lr->recount = 0;
	lr->phase = PH_COUNTING;
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
	if (err == 0 && s->auth && !lr->acl_checked)
		err = pl_call(lr, zoo_aget_acl(s->zh, lr->dir, pl_on_acl, lr));
	if (err == 0)
		err = pl_call(lr, session_awget_children_locked(
					  s, lr->dir, pl_on_children, lr));
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

void pl_leases_fired(struct zkl_watch *w, const char *path,
		     enum zkl_watch_event ev, struct zkl_link *notify)
{
	(void)path;
	(void)ev;
	pl_fired(ZKL_CONTAINER_OF(w, struct zkl_lockreq, watch), LR_HOLD_WATCH,
		 notify);
}

void pl_limit_fired(struct zkl_watch *w, const char *path,
		    enum zkl_watch_event ev, struct zkl_link *notify)
{
	(void)path;
	(void)ev;
	pl_fired(ZKL_CONTAINER_OF(w, struct zkl_lockreq, limit_watch),
		 LR_HOLD_LIMIT, notify);
}

/* After a lost create reply: is lr->node ours? */
void pl_check(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	lr->phase = PH_CHECKING;
	if (pl_call(lr, zoo_aexists(lr->s->zh, lr->node, 0, pl_on_checked,
				    lr)) < 0) {
		lr->phase = PH_GONE;
		pl_fail(lr, -ENOTCONN, notify);
	}
}

static void pl_on_found(int rc, const struct String_vector *sv,
			const void *data)
{
	struct zkl_lockreq *lr = (struct zkl_lockreq *)data;
	const char *prefix = strrchr(lr->create_path, '/') + 1;
	size_t plen = strlen(prefix);
	struct zkl_link notify;
	int i;

	session_enter(lr->s, &notify);
	if (lr->phase != PH_RECOVERING) {
		/* stale */
	} else if (lr_is_connection_loss(rc)) {
		lr_defer(lr, &notify);
	} else if (rc != ZOK && rc != ZNONODE) {
		lr->phase = PH_GONE;
		pl_fail(lr, zkerr_errno(rc), &notify);
	} else {
		for (i = 0; rc == ZOK && i < sv->count; i++)
			if (strncmp(sv->data[i], prefix, plen) == 0)
				break;
		if (rc == ZOK && i < sv->count &&
		    lr_set_node(lr, lr->dir, sv->data[i]) == 0)
			pl_check(lr, &notify);
		else if (lr->outcome == LR_FINISHED)
			lr->phase = PH_GONE;
		else
			pl_create(lr, &notify);
	}
	lr_end_completion(lr, &notify);
}

/* A create whose reply was lost: find the node it may have made (a
 * Curator lease by its tag; kazoo's has a name known beforehand). */
void pl_recover(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	if (pl_kazoo(lr)) {
		if (lr_set_node(lr, lr->create_path, NULL) == 0) {
			pl_check(lr, notify);
			return;
		}
	} else {
		lr->phase = PH_RECOVERING;
		if (pl_call(lr, zoo_aget_children(lr->s->zh, lr->dir, 0,
						  pl_on_found, lr)) == 0)
			return;
	}
	lr->phase = PH_GONE;
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
	struct zkl_lockreq *lr = (struct zkl_lockreq *)data;
	struct zkl_link notify;

	session_enter(lr->s, &notify);
	if (lr->phase != PH_CREATING) {
		/* the session expired under us */
	} else if (rc == ZOK) {
		lr->czxid = st->czxid;
		if (lr_set_node(lr, name, NULL) < 0) {
			lr->phase = PH_GONE;
			pl_fail(lr, -ENAMETOOLONG, &notify);
		} else {
			pl_have_node(lr, &notify);
		}
	} else if (lr_is_connection_loss(rc)) {
		lr->phase = PH_RECOVERING; /* created or not: look */
		lr->maybe_stray = 1;
		lr_defer(lr, &notify);
	} else if (rc == ZNODEEXISTS && pl_kazoo(lr) &&
		   lr_set_node(lr, lr->create_path, NULL) == 0) {
		/* kazoo's fixed name: our own create, whose reply was lost,
		 * landed after we looked for it; pl_check tells. */
		pl_check(lr, &notify);
	} else if (rc == ZNONODE && lr->outcome == LR_PENDING &&
		   lr->create_attempts < LR_MAX_CREATE_ATTEMPTS) {
		int err = session_create_parents_locked(lr->s, lr->dir);

		if (err < 0) {
			lr->phase = PH_GONE;
			pl_fail(lr, err, &notify);
		} else {
			pl_create(lr, &notify);
		}
	} else {
		lr->phase = PH_GONE;
		pl_fail(lr, zkerr_errno(rc), &notify);
	}
	lr_end_completion(lr, &notify);
}

static void pl_on_checked(int rc, const struct Stat *st, const void *data)
{
	struct zkl_lockreq *lr = (struct zkl_lockreq *)data;
	struct zkl_link notify;

	session_enter(lr->s, &notify);
	if (lr->phase != PH_CHECKING) {
		/* stale */
	} else if (lr_is_connection_loss(rc)) {
		lr_defer(lr, &notify);
	} else if (rc == ZOK && st->ephemeralOwner == lr->s->client_id) {
		lr->czxid = st->czxid;
		pl_have_node(lr, &notify);
	} else if (rc == ZOK || rc == ZNONODE) {
		lr->node[0] = '\0'; /* not made, or not by us */
		if (lr->outcome == LR_FINISHED)
			lr->phase = PH_GONE;
		else if (pl_kazoo(lr))
			pl_count(lr, &notify);
		else
			pl_create(lr, &notify);
	} else {
		lr->phase = PH_GONE;
		pl_fail(lr, zkerr_errno(rc), &notify);
	}
	lr_end_completion(lr, &notify);
}
