/*
 * lockreq.c - the lock request state machine (see lockreq.h and the
 * diagram in doc/design.md).
 *
 * Two variables describe a request:
 *   outcome  what the owner has been told: PENDING (nothing yet), HELD
 *            (done(0) was called), FINISHED (done(err) was called, the
 *            cancel won, or the owner released it).  It only moves forward
 *            and decides, under the session mutex, which of grant, cancel,
 *            failure and session loss wins: exactly one reply.
 *   phase    which ZooKeeper step is in flight for the node.
 * Completions arrive in the order the requests were sent (one session, one
 * completion thread), which is what lets a handler recognise a stale reply
 * by the phase alone.
 *
 * The queue itself is seen through the session's shared view of the
 * resource (queue.h): a request lines up for a listing after its create,
 * and a waiter whose watched node is deleted re-reads that view.
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

int lockreq_new(struct zkl_session *s, const char *dir, enum zkl_mode mode,
		unsigned flags, const void *data, size_t datalen,
		lockreq_done_fn done, void *arg, struct zkl_lockreq **out)
{
	char prefix[NAMES_NODE_NAME_MAX + 1];
	char guid[NAMES_TAG_MAX + 1];
	struct zkl_lockreq *lr;
	size_t dirlen = strlen(dir), pathlen;
	int rc;

	if (mode == ZKL_MODE_LEASE && s->dialect != ZKL_STYLE_ZKLOCKFS) {
		/* Curator's and kazoo's semaphores keep their leases elsewhere
		 * and behind a lock of their own: a lease of ours beside the
		 * locks would be invisible to them. */
		log_msg(LOG_WARNING,
			"dialect=%s has no leases yet: %s/lease is refused "
			"(the default dialect has them)",
			names_style_str(s->dialect), dir);
		return -EOPNOTSUPP;
	}
	rc = names_tag_new(s->dialect, guid);
	if (rc < 0)
		return rc;
	rc = names_format_prefix(prefix, sizeof(prefix), s->dialect, mode,
				 guid);
	if (rc < 0)
		return rc;
	/* One allocation: nothing to free piecemeal, one malloc per lock. */
	pathlen = dirlen + 1 + (size_t)rc;
	lr = calloc(1, sizeof(*lr) + (pathlen + 1) + (pathlen + LR_SEQ_ROOM) +
			       (dirlen + 1) + datalen);
	if (!lr)
		return -ENOMEM;
	sprintf(lr->create_path, "%s/%s", dir, prefix);
	lr->node = lr->create_path + pathlen + 1;
	lr->nodesize = pathlen + LR_SEQ_ROOM;
	lr->dir = lr->node + lr->nodesize;
	memcpy(lr->dir, dir, dirlen + 1);
	lr->data = lr->dir + dirlen + 1;
	memcpy(lr->data, data, datalen);
	lr->datalen = datalen;
	memcpy(lr->guid, guid, sizeof(guid));
	lr->s = s;
	lr->mode = mode;
	lr->try_only = (flags & LOCKREQ_TRY) != 0;
	lr->done = done;
	lr->arg = arg;
	lr->refs = 1;
	lr->outcome = LR_PENDING;
	lr->phase = PH_NEW;
	lr->member.ops = &lr_member_ops;
	list_init(&lr->member.live);
	list_init(&lr->member.resume);
	notice_init(&lr->notice, lr_notice_run);
	lr_wire_watches(lr);
	list_init(&lr->qwait.link);
	lr->qwait.listed_locked = lr_listed;
	lr->qwait.wants_limit = mode == ZKL_MODE_LEASE;
	list_init(&lr->leaving.link);
	*out = lr;
	return 0;
}

/* ---- the owner's calls ------------------------------------------------ */

int lockreq_start(struct zkl_lockreq *lr)
{
	struct zkl_session *s = lr->s;
	int err = 0;

	pthread_mutex_lock(&s->lock);
	if (lr->outcome != LR_PENDING) {
		err = -ECANCELED;
	} else if (s->dead) {
		err = -ENOTCONN;
	} else if (!lr->q && !(lr->q = queue_get_locked(s, lr->dir))) {
		err = -ENOMEM;
	} else if (s->state == ZKL_CONN_EXPIRED || s->draining) {
		/* Between two sessions: queue on the next one. */
		list_add_tail(&s->live, &lr->member.live);
		lr->refs++;
		list_add_tail(&s->resume, &lr->member.resume);
	} else {
		list_add_tail(&s->live, &lr->member.live);
		err = lr_queue_create(lr);
	}
	if (err < 0 && err != -ECANCELED) {
		lr->outcome = LR_FINISHED;
		lr->phase = PH_GONE;
	}
	pthread_mutex_unlock(&s->lock);
	return err;
}

int lockreq_cancel(struct zkl_lockreq *lr)
{
	struct zkl_session *s = lr->s;
	int err = 0;

	pthread_mutex_lock(&s->lock);
	if (lr->outcome != LR_PENDING) {
		err = -EALREADY;
	} else {
		lr->outcome = LR_FINISHED;
		lr_abandon_locked(lr);
	}
	pthread_mutex_unlock(&s->lock);
	return err;
}

void lockreq_release_then(struct zkl_lockreq *lr, lockreq_gone_fn gone,
			  void *arg)
{
	struct zkl_session *s = lr->s;
	struct zkl_link notify;

	session_enter(s, &notify);
	if (lr->outcome == LR_HELD && !lr->lost)
		log_msg(LOG_DEBUG, "released %s lock %s",
			names_mode_str(lr->mode), lr->node);
	lr->gone_fn = gone;
	lr->gone_arg = arg;
	if (lr->outcome != LR_FINISHED) {
		lr->outcome = LR_FINISHED;
		lr_abandon_locked(lr);
	}
	lr_exit(lr, &notify);
}

void lockreq_release(struct zkl_lockreq *lr)
{
	lockreq_release_then(lr, NULL, NULL);
}

struct lr_set_ctx {
	void (*cb)(int err, void *arg);
	void *arg;
};

static void lr_on_set(int rc, const struct Stat *st, const void *data)
{
	struct lr_set_ctx *ctx = (struct lr_set_ctx *)data;

	(void)st;
	ctx->cb(zkerr_errno(rc), ctx->arg);
	free(ctx);
}

int lockreq_set_data(struct zkl_lockreq *lr, const void *data, size_t len,
		     void (*cb)(int err, void *arg), void *arg)
{
	struct zkl_session *s = lr->s;
	struct lr_set_ctx *ctx = malloc(sizeof(*ctx));
	int err = 0;

	if (!ctx)
		return -ENOMEM;
	ctx->cb = cb;
	ctx->arg = arg;
	pthread_mutex_lock(&s->lock);
	if (lr->lost)
		err = -EIO;
	else if (lr->outcome != LR_HELD)
		err = -ENOENT;
	else
		err = zkerr_errno(zoo_aset(s->zh, lr->node, data, (int)len, -1,
					   lr_on_set, ctx));
	pthread_mutex_unlock(&s->lock);
	if (err < 0)
		free(ctx);
	return err;
}

int lockreq_describe(struct zkl_lockreq *lr, int64_t *token, char *path,
		     size_t pathlen, int64_t *session)
{
	struct zkl_session *s = lr->s;
	int err = 0;

	pthread_mutex_lock(&s->lock);
	if (lr->lost)
		err = -EIO;
	else if (lr->outcome != LR_HELD)
		err = -ENOENT;
	else {
		*token = lr->czxid;
		*session = s->client_id;
		if ((size_t)snprintf(path, pathlen, "%s", lr->node) >= pathlen)
			err = -ENAMETOOLONG;
	}
	pthread_mutex_unlock(&s->lock);
	return err;
}

int lockreq_holds(struct zkl_lockreq *lr)
{
	struct zkl_session *s = lr->s;
	int held;

	pthread_mutex_lock(&s->lock);
	held = lr->outcome == LR_HELD && !lr->lost;
	pthread_mutex_unlock(&s->lock);
	return held;
}
