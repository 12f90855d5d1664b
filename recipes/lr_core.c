/*
 * lr_core.c - a lock request's references, telling its owner, and its
 * node's name (see lr.h).
 */
#include "lr.h"
#include "lockrule.h"
#include "zkerr.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "log.h"

/* The create-path prefix of lr's node for tag into buf. */
static int lr_format_prefix(const struct zkl_session *s, enum zkl_mode mode,
			    int mutex_names, const char *tag, char *buf,
			    size_t size)
{
	return mutex_names
		       ? names_format_mutex(buf, size, s->dialect, tag)
		       : names_format_prefix(buf, size, s->dialect, mode, tag);
}

int lr_alloc(struct zkl_session *s, const char *dir, const char *res,
	     enum zkl_mode mode, int mutex_names, unsigned flags,
	     const void *data, size_t datalen, lockreq_done_fn done, void *arg,
	     struct zkl_lockreq **out)
{
	char prefix[NAMES_NODE_NAME_MAX + 1];
	char guid[NAMES_TAG_MAX + 1];
	struct zkl_lockreq *lr;
	size_t dirlen = strlen(dir), reslen = strlen(res), pathlen;
	int rc = names_tag_new(s->dialect, guid);

	if (rc >= 0)
		rc = lr_format_prefix(s, mode, mutex_names, guid, prefix,
				      sizeof(prefix));
	if (rc < 0)
		return rc;
	pathlen = dirlen + 1 + (size_t)rc;
	if (pathlen + LR_SEQ_ROOM - 1 > NAMES_MAX_NODE_PATH)
		return -ENAMETOOLONG; /* a peer's dirs lengthen the path */
	/* One allocation: nothing to free piecemeal, one malloc per lock. */
	lr = calloc(1, sizeof(*lr) + (pathlen + 1) + (pathlen + LR_SEQ_ROOM) +
			       (dirlen + 1) + (reslen + 1) + datalen);
	if (!lr)
		return -ENOMEM;
	sprintf(lr->create_path, "%s/%s", dir, prefix);
	lr->node = lr->create_path + pathlen + 1;
	lr->nodesize = pathlen + LR_SEQ_ROOM;
	lr->dir = lr->node + lr->nodesize;
	memcpy(lr->dir, dir, dirlen + 1);
	lr->res = lr->dir + dirlen + 1;
	memcpy(lr->res, res, reslen + 1);
	lr->data = lr->res + reslen + 1;
	memcpy(lr->data, data, datalen);
	lr->datalen = datalen;
	memcpy(lr->guid, guid, sizeof(guid));
	lr->s = s;
	lr->mode = mode;
	lr->mutex_names = mutex_names != 0;
	lr->try_only = (flags & LOCKREQ_TRY) != 0;
	lr->kind = (flags >> LOCKREQ_KIND_SHIFT) % ZKL_KINDS;
	lr->made_ms = session_clock_now();
	lr->done = done;
	lr->arg = arg;
	lr->owners = 1;
	lr_hold(lr, LR_HOLD_OWNER);
	lr->outcome = LR_PENDING;
	lr->phase = PH_NEW;
	lr->own_version = -1;
	list_init(&lr->member.live);
	list_init(&lr->member.resume);
	notice_init(&lr->notice, lr_notice_run);
	list_init(&lr->watch.link);
	list_init(&lr->limit_watch.link);
	list_init(&lr->own_watch.link);
	list_init(&lr->qwait.link);
	lr->qwait.wants_limit = mode == ZKL_MODE_LEASE;
	list_init(&lr->leaving.link);
	*out = lr;
	return 0;
}

int lr_use_tag(struct zkl_lockreq *lr, const char *tag)
{
	size_t at = strlen(lr->dir) + 1;
	/* A tag of the dialect's length: the prefix keeps its length. */
	int err = lr_format_prefix(lr->s, lr->mode, lr->mutex_names, tag,
				   lr->create_path + at,
				   strlen(lr->create_path + at) + 1);

	if (err < 0)
		return err;
	snprintf(lr->guid, sizeof(lr->guid), "%s", tag);
	lr->node[0] = '\0';
	lr->own_version = -1;
	lr->own_known = 0;
	lr->create_attempts = 0;
	lr->maybe_stray = 0;
	return 0;
}

int lr_new_tag(struct zkl_lockreq *lr)
{
	char guid[NAMES_TAG_MAX + 1];
	int err = names_tag_new(lr->s->dialect, guid);

	return err < 0 ? err : lr_use_tag(lr, guid);
}

/* s->lock held if the request was started. */
void lr_free(struct zkl_lockreq *lr)
{
	/* Whoever waits for the delete is told before the last reference
	 * goes: a step in flight holds one until the node is gone. */
	assert(!lr->gone_fn || lr->gone_told);
	assert(!notice_posted(&lr->notice) && !list_linked(&lr->member.resume));
	assert(!lr->mutex && !lr->members);
	if (lr->q)
		queue_put_locked(lr->q);
	free(lr);
}

int lr_held_err_locked(const struct zkl_lockreq *lr)
{
	ZKL_ASSERT_HELD(&lr->s->lock);
	return lr->lost ? -EIO : lr->outcome != LR_HELD ? -ENOENT : 0;
}

int lr_has_node(const struct zkl_lockreq *lr)
{
	return lr->node[0] != '\0';
}

/* The child name of our node (after "<dir>/"). */
const char *lr_node_name(const struct zkl_lockreq *lr)
{
	return lr->node + strlen(lr->dir) + 1;
}

int lr_set_node(struct zkl_lockreq *lr, const char *dir, const char *name)
{
	int n = name ? snprintf(lr->node, lr->nodesize, "%s/%s", dir, name)
		     : snprintf(lr->node, lr->nodesize, "%s", dir);

	if (n < 0 || (size_t)n >= lr->nodesize) {
		lr->node[0] = '\0';
		return -ENAMETOOLONG;
	}
	return 0;
}

/* How many of each hold there can be at once: one, except for calls in
 * flight and hooks running. */
static int lr_hold_is_single(enum lr_hold h)
{
	return h != LR_HOLD_CALL && h != LR_HOLD_ENTRY &&
	       h != LR_HOLD_SUB_GONE && h != LR_HOLD_MEMBER;
}

void lr_hold(struct zkl_lockreq *lr, enum lr_hold h)
{
	assert(h < LR_HOLDS);
	assert(!lr_hold_is_single(h) || lr->holds[h] == 0);
	lr->holds[h]++;
	lr->refs++;
}

static void lr_free_locked(struct zkl_lockreq *lr)
{
	if (list_linked(&lr->member.live)) {
		list_del(&lr->member.live);
		if (list_empty(&lr->s->live)) /* session_close may wait */
			pthread_cond_broadcast(&lr->s->state_changed);
	}
	queue_leaving_done(&lr->leaving);
	lr_free(lr);
}

void lr_drop_locked(struct zkl_lockreq *lr, enum lr_hold h)
{
	ZKL_ASSERT_HELD(&lr->s->lock);
	assert(h < LR_HOLDS && lr->holds[h] > 0 && lr->refs > 0);
	lr->holds[h]--;
	if (--lr->refs == 0)
		lr_free_locked(lr);
}

void lr_pass_locked(struct zkl_lockreq *lr, enum lr_hold from, enum lr_hold to)
{
	lr_hold(lr, to);
	lr_drop_locked(lr, from); /* never the last: `to` is held */
}

/* ---- telling the owner ------------------------------------------------ */

/* Post the notice (done or gone_fn) for after unlock. */
static void lr_post_locked(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	assert(!lr->telling);
	lr->telling = 1;
	lr_hold(lr, LR_HOLD_NOTICE);
	notice_post(notify, &lr->notice);
}

int lr_is_owners_lock(const struct zkl_lockreq *lr)
{
	return !lr->group && !lr->mutex_names;
}

void lr_metrics_ended_locked(struct zkl_lockreq *lr, int lost)
{
	if (!lr_is_owners_lock(lr) || lr->told_ms == 0 || lr->metrics_ended)
		return;
	lr->metrics_ended = 1;
	session_metrics_ended_locked(lr->s, lr->mode, lr->kind, lost,
				     session_clock_now() - lr->told_ms);
}

/* Decide the owner's answer (at most once) and queue it for after unlock. */
void lr_tell_locked(struct zkl_lockreq *lr, int err, struct zkl_link *notify)
{
	if (lr->outcome != LR_PENDING)
		return;
	lr->grant_deferred = !err && lr->s->jeopardy_ms != 0;
	if (lr->grant_deferred)
		return;
	lr->outcome = err ? LR_FINISHED : LR_HELD;
	lr->notify_err = err;
	if (!lr->inherited) /* an heir goes on with its write lock's hold */
		lr->granted_ms = session_clock_now();
	if (!err && !lr->group) /* a multi-lock counts as one */
		session_count_grant_locked(lr->s);
	if (!err) {
		lr->told_ms = session_clock_now();
		if (lr_is_owners_lock(lr))
			session_metrics_granted_locked(
				lr->s, lr->mode, lr->kind,
				lr->told_ms - lr->made_ms);
	}
	lr_post_locked(lr, notify);
}

void lr_tell_deferred_locked(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	if (!lr->grant_deferred)
		return;
	lr_tell_locked(lr, 0, notify);
	lr_revoke_post_locked(lr, notify); /* a mark seen meanwhile */
}

/* If the owner waits for the node to be gone and it is, queue that news
 * (once).  Every entry point calls this before dropping its reference.
 * While the connection is down the owner is told at once too: nobody may
 * wait for ZooKeeper to answer a failed try, a signal or an unlock (a
 * killed process would hang in its exit); the node is deleted once the
 * connection is back, or goes with the session. */
void lr_tell_gone_locked(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	if (!lr->gone_fn || lr->gone_told)
		return;
	if ((lr->phase != PH_GONE || lr->subs_leaving > 0) &&
	    session_is_connected_locked(lr->s) && lr->delete_retry_ms == 0)
		return;
	/* The owner's done is still to run, or running (it may release the
	 * request right there): the end of that run tells. */
	if (lr->telling)
		return;
	lr->gone_told = 1;
	lr->notify_gone = 1;
	lr_post_locked(lr, notify);
}

void lr_begin_entry_locked(struct zkl_lockreq *lr, enum lr_hold h)
{
	ZKL_ASSERT_HELD(&lr->s->lock);
	lr_pass_locked(lr, h, LR_HOLD_ENTRY);
}

void lr_end_entry_locked(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	lr_tell_gone_locked(lr, notify);
	lr_drop_locked(lr, LR_HOLD_ENTRY);
}

/* A posted notice: tell the owner, without the session's mutex. */
void lr_notice_run(struct zkl_notice *n)
{
	struct zkl_lockreq *lr =
		ZKL_CONTAINER_OF(n, struct zkl_lockreq, notice);

	struct zkl_session *s = lr->s;
	struct zkl_link notify;
	int gone;

	pthread_mutex_lock(&s->lock);
	lr_begin_entry_locked(lr, LR_HOLD_NOTICE);
	gone = lr->notify_gone;
	pthread_mutex_unlock(&s->lock);
	if (gone)
		lr->gone_fn(lr->gone_arg);
	else
		lr->done(lr, lr->notify_err, lr->arg);
	/* The owner may have released the request in its done: its 'gone'
	 * is told now, if it is. */
	session_enter(s, &notify);
	lr->telling = 0;
	lr_end_entry_locked(lr, &notify);
	session_leave(s, &notify);
}

void lr_end_completion(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	struct zkl_session *s = lr->s;

	lr_tell_gone_locked(lr, notify);
	lr_drop_locked(lr, LR_HOLD_CALL);
	session_leave(s, notify);
}

void lr_ignore_void(int rc, const void *data)
{
	(void)rc;
	(void)data;
}

int lr_child_path(const struct zkl_lockreq *lr, const char *name,
		  char path[NAMES_MAX_NODE_PATH + 1])
{
	/* A cut path would name no node, or another one: a watch on it
	 * would fire at once and its request look again, for ever. */
	if ((size_t)snprintf(path, NAMES_MAX_NODE_PATH + 1, "%s/%s", lr->dir,
			     name) > NAMES_MAX_NODE_PATH)
		return -ENAMETOOLONG;
	return 0;
}

void lr_delete_stray(struct zkl_lockreq *lr, const char *name)
{
	char path[NAMES_MAX_NODE_PATH + 1];

	/* A second node with our GUID is a create that was retried after a
	 * lost reply yet had succeeded: it would block the queue. */
	if (lr_child_path(lr, name, path) == 0)
		zoo_adelete(lr->s->zh, path, -1, lr_ignore_void, NULL);
}

/* Delete every node with our GUID but ours: O(n), so only after a lost
 * create reply, the one way such a node comes about. */
void lr_delete_strays(struct zkl_lockreq *lr, ssize_t me)
{
	const struct zkl_node *nodes = lr->q->nodes;
	size_t n = lr->q->n;

	for (ssize_t i = lockrule_find_tag(nodes, n, 0, lr->guid); i >= 0;
	     i = lockrule_find_tag(nodes, n, (size_t)i + 1, lr->guid))
		if (i != me)
			lr_delete_stray(lr, nodes[i].name);
}
