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

enum zkl_mode lockreq_mode(const struct zkl_lockreq *lr)
{
	return lr->mode;
}

const char *lockreq_guid(const struct zkl_lockreq *lr)
{
	return lr->guid;
}

/* s->lock held if the request was started. */
void lr_free(struct zkl_lockreq *lr)
{
	/* Whoever waits for the delete is told before the last reference
	 * goes: a step in flight holds one until the node is gone. */
	assert(!lr->gone_fn || lr->gone_told);
	assert(!notice_posted(&lr->notice) && !list_linked(&lr->member.resume));
	if (lr->q)
		queue_put_locked(lr->q);
	free(lr);
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

/* Drop a reference that is never the last: the caller still holds one. */
void lr_unref_locked(struct zkl_lockreq *lr)
{
	ZKL_ASSERT_HELD(&lr->s->lock);
	assert(lr->refs > 1);
	lr->refs--;
}

void lr_put_locked(struct zkl_lockreq *lr)
{
	ZKL_ASSERT_HELD(&lr->s->lock);
	assert(lr->refs > 0);
	if (--lr->refs > 0)
		return;
	if (list_linked(&lr->member.live)) {
		list_del(&lr->member.live);
		if (list_empty(&lr->s->live)) /* session_close may wait */
			pthread_cond_broadcast(&lr->s->state_changed);
	}
	queue_leaving_done(&lr->leaving);
	lr_free(lr);
}

void lr_put(struct zkl_lockreq *lr)
{
	struct zkl_session *s = lr->s;

	pthread_mutex_lock(&s->lock);
	lr_put_locked(lr);
	pthread_mutex_unlock(&s->lock);
}

/* ---- telling the owner ------------------------------------------------ */

/* Decide the owner's answer (at most once) and queue it for after unlock. */
void lr_tell_locked(struct zkl_lockreq *lr, int err, struct zkl_link *notify)
{
	if (lr->outcome != LR_PENDING)
		return;
	lr->outcome = err ? LR_FINISHED : LR_HELD;
	lr->notify_err = err;
	if (!err)
		lr->s->grants++;
	lr->refs++;
	notice_post(notify, &lr->notice);
}

/* If the owner waits for the node to be gone and it is, queue that news
 * (once).  Every entry point calls this before dropping its reference. */
void lr_tell_gone_locked(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	if (!lr->gone_fn || lr->gone_told || lr->phase != PH_GONE)
		return;
	/* The owner's done has run (it released the request), so the notify
	 * link is free for this. */
	assert(!notice_posted(&lr->notice));
	lr->gone_told = 1;
	lr->notify_gone = 1;
	lr->refs++;
	notice_post(notify, &lr->notice);
}

/* The end of every entry point that may have moved the request: report a
 * node that is gone, then drop the entry point's reference. */
void lr_leave_locked(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	lr_tell_gone_locked(lr, notify);
	lr_put_locked(lr);
}

/* A posted notice: tell the owner, without the session's mutex. */
void lr_notice_run(struct zkl_notice *n)
{
	struct zkl_lockreq *lr =
		ZKL_CONTAINER_OF(n, struct zkl_lockreq, notice);

	if (lr->notify_gone)
		lr->gone_fn(lr->gone_arg);
	else
		lr->done(lr, lr->notify_err, lr->arg);
	lr_put(lr);
}

/* The end of a completion: report a node that is gone, drop the
 * completion's reference, unlock and run the notices. */
void lr_exit(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	struct zkl_session *s = lr->s;

	lr_leave_locked(lr, notify);
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

void lr_report_lost(struct zkl_lockreq *lr, struct zkl_link *lost)
{
	struct zkl_lost *item = malloc(sizeof(*item) + lr->datalen);

	lr->s->losses++;
	if (!item)
		return; /* the loss still shows as EIO; only the report is lost */
	item->node = strdup(lr_has_node(lr) ? lr->node : lr->dir);
	if (!item->node) {
		free(item);
		return;
	}
	item->len = lr->datalen;
	memcpy(item->data, lr->data, lr->datalen);
	list_add_tail(lost, &item->link);
}
