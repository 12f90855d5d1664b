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
#include "lockreq.h"
#include "internal.h"
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

enum lr_outcome { LR_PENDING, LR_HELD, LR_FINISHED };

enum lr_phase {
	PH_NEW,        /* not started */
	PH_CREATING,   /* create in flight (a listing lined up behind it) */
	PH_RECOVERING, /* a create's reply was lost: looking for our GUID */
	PH_CHECKING,   /* found a node with our GUID: is it this session's? */
	PH_LISTING,    /* node known, listing the queue */
	PH_WATCHING,   /* waiting for one node ahead of us to go */
	PH_IDLE,       /* node known, nothing in flight (held) */
	PH_DELETING,   /* deleting our node */
	PH_GONE,       /* no node of ours exists (or ever will) */
};

/* A resource removed between creating its znode and queueing in it is
 * recreated this many times before the open fails. */
#define LR_MAX_CREATE_ATTEMPTS 5

struct zkl_lockreq {
	struct zkl_session *s;
	struct zkl_queue *q;         /* the resource's queue, once started */
	struct zkl_queue_wait qwait; /* in q->waiting for a listing */
	struct zkl_queue_leaving leaving; /* in q->leaving while DELETING */
	struct zkl_member member; /* in s->live once started, in s->resume
				   * while waiting to reconnect */
	struct zkl_notice notice; /* posted until done() has run */
	struct zkl_watch watch;   /* in s->watches while PH_WATCHING */
	int refs; /* owner + queued ops + watch + resume + notify
				 * + line for a listing */
	enum lr_outcome outcome;
	enum lr_phase phase;
	int notify_err;
	unsigned notify_gone : 1; /* the notify entry is for gone_fn */
	unsigned gone_told : 1;   /* gone_fn has been queued */
	unsigned try_only : 1;
	unsigned lost : 1;
	unsigned maybe_stray : 1; /* a create's reply was lost: a duplicate
				   * node of ours may turn up */
	int create_attempts;
	enum zkl_mode mode;
	char guid[NAMES_TAG_MAX + 1];
	int64_t czxid;
	lockreq_done_fn done;
	void *arg;
	lockreq_gone_fn gone_fn; /* lockreq_release_then's, or NULL */
	void *gone_arg;
	/* All in the one allocation of the request, after create_path: */
	char *dir;
	char *node; /* full path of our node once known, else "" */
	size_t nodesize;
	char *data;
	size_t datalen;
	char create_path[]; /* dir + "/_c_<guid>-<mode>-" */
};

static void lr_notice_run(struct zkl_notice *n);
static void lr_watch_fired(struct zkl_watch *w, const char *gone,
			   struct zkl_link *notify);
static void lr_listed(struct zkl_queue_wait *w, int rc,
		      struct zkl_link *notify);
static void lr_resume(struct zkl_member *m, struct zkl_link *notify);
static void lr_expired(struct zkl_member *m, int requeue, struct zkl_link *lost,
		       struct zkl_link *notify);
static void lr_count(const struct zkl_member *m, uint64_t *held,
		     uint64_t *waiting);

static const struct zkl_member_ops lr_member_ops = {
	.resume_locked = lr_resume,
	.expired_locked = lr_expired,
	.count_locked = lr_count,
};

/* The room a node path needs beyond the create path: the sequence
 * ZooKeeper appends ("%010d" of an int32, sign included) and a NUL. */
#define LR_SEQ_ROOM 12

enum zkl_mode lockreq_mode(const struct zkl_lockreq *lr)
{
	return lr->mode;
}

const char *lockreq_guid(const struct zkl_lockreq *lr)
{
	return lr->guid;
}

/* s->lock held if the request was started. */
static void lr_free(struct zkl_lockreq *lr)
{
	/* Whoever waits for the delete is told before the last reference
	 * goes: a step in flight holds one until the node is gone. */
	assert(!lr->gone_fn || lr->gone_told);
	assert(!notice_posted(&lr->notice) && !list_linked(&lr->member.resume));
	if (lr->q)
		queue_put_locked(lr->q);
	free(lr);
}

static int lr_has_node(const struct zkl_lockreq *lr)
{
	return lr->node[0] != '\0';
}

/* The child name of our node (after "<dir>/"). */
static const char *lr_node_name(const struct zkl_lockreq *lr)
{
	return lr->node + strlen(lr->dir) + 1;
}

static int lr_set_node(struct zkl_lockreq *lr, const char *dir,
		       const char *name)
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
static void lr_unref_locked(struct zkl_lockreq *lr)
{
	ZKL_ASSERT_HELD(&lr->s->lock);
	assert(lr->refs > 1);
	lr->refs--;
}

static void lr_put_locked(struct zkl_lockreq *lr)
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

static void lr_put(struct zkl_lockreq *lr)
{
	struct zkl_session *s = lr->s;

	pthread_mutex_lock(&s->lock);
	lr_put_locked(lr);
	pthread_mutex_unlock(&s->lock);
}

int lockreq_new(struct zkl_session *s, const char *dir, enum zkl_mode mode,
		unsigned flags, const void *data, size_t datalen,
		lockreq_done_fn done, void *arg, struct zkl_lockreq **out)
{
	char prefix[NAMES_NODE_NAME_MAX + 1];
	char guid[NAMES_TAG_MAX + 1];
	struct zkl_lockreq *lr;
	size_t dirlen = strlen(dir), pathlen;
	int rc = names_tag_new(ZKL_STYLE_ZKLOCKFS, guid);

	if (rc < 0)
		return rc;
	rc = names_format_prefix(prefix, sizeof(prefix), ZKL_STYLE_ZKLOCKFS,
				 mode, guid);
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
	list_init(&lr->watch.link);
	lr->watch.fired_locked = lr_watch_fired;
	list_init(&lr->qwait.link);
	lr->qwait.listed_locked = lr_listed;
	list_init(&lr->leaving.link);
	*out = lr;
	return 0;
}

/* ---- telling the owner ------------------------------------------------ */

/* Decide the owner's answer (at most once) and queue it for after unlock. */
static void lr_tell_locked(struct zkl_lockreq *lr, int err,
			   struct zkl_link *notify)
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
static void lr_tell_gone_locked(struct zkl_lockreq *lr, struct zkl_link *notify)
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
static void lr_leave_locked(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	lr_tell_gone_locked(lr, notify);
	lr_put_locked(lr);
}

/* A posted notice: tell the owner, without the session's mutex. */
static void lr_notice_run(struct zkl_notice *n)
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
static void lr_exit(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	struct zkl_session *s = lr->s;

	lr_leave_locked(lr, notify);
	session_leave(s, notify);
}

/* ---- sending ---------------------------------------------------------- */

static void lr_on_created(int rc, const char *name, const struct Stat *st,
			  const void *data);
static void lr_on_checked(int rc, const struct Stat *st, const void *data);
static void lr_on_deleted(int rc, const void *data);
static void lr_finish_locked(struct zkl_lockreq *lr, int err,
			     struct zkl_link *notify);

/* Line up for the next listing of the queue (queue.h); the reply comes
 * to lr_listed.  Returns 0 or -errno. */
static int lr_line_up(struct zkl_lockreq *lr)
{
	int linked = list_linked(&lr->qwait.link);
	int err = queue_want_listing_locked(lr->q, &lr->qwait);

	if (err == 0 && !linked)
		lr->refs++;
	else if (err < 0 && linked)
		lr_unref_locked(lr); /* the caller holds one */
	return err;
}

static int lr_queue_create(struct zkl_lockreq *lr)
{
	int rc;

	lr->refs++;
	rc = zoo_acreate2(lr->s->zh, lr->create_path, lr->data,
			  (int)lr->datalen, lr->s->acl,
			  ZOO_EPHEMERAL_SEQUENTIAL, lr_on_created, lr);
	if (rc != ZOK) {
		lr->refs--;
		return zkerr_errno(rc);
	}
	lr->create_attempts++;
	lr->phase = PH_CREATING;
	/* Pipelined: the session orders our requests, so a listing sent now
	 * already contains the node created just before it.  If this fails,
	 * the create's reply lines up again. */
	lr_line_up(lr);
	return 0;
}

static void lr_create(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	int err = lr_queue_create(lr);

	if (err < 0) {
		lr->phase = PH_GONE;
		lr_finish_locked(lr, err, notify);
	}
}

/* List the queue: phase stays as the caller set it (LISTING or
 * RECOVERING), which tells lr_listed what to do with it. */
static void lr_list(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	int err = lr_line_up(lr);

	if (err < 0) {
		lr->phase = PH_GONE;
		lr_finish_locked(lr, err, notify);
	}
}

static void lr_check_owner(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	int rc;

	lr->phase = PH_CHECKING;
	lr->refs++;
	rc = zoo_aexists(lr->s->zh, lr->node, 0, lr_on_checked, lr);
	if (rc != ZOK) {
		lr->refs--;
		lr->phase = PH_GONE;
		lr_finish_locked(lr, zkerr_errno(rc), notify);
	}
}

static void lr_delete(struct zkl_lockreq *lr)
{
	lr->phase = PH_DELETING;
	lr->leaving.name = lr_node_name(lr);
	queue_leaving_add(lr->q, &lr->leaving);
	lr->refs++;
	if (zoo_adelete(lr->s->zh, lr->node, -1, lr_on_deleted, lr) != ZOK) {
		/* Only a dead handle refuses; its nodes die with it. */
		lr->refs--;
		lr->phase = PH_GONE;
	}
}

static void lr_ignore_void(int rc, const void *data)
{
	(void)rc;
	(void)data;
}

/* Wait for the connection to come back, then lr_resume. */
static void lr_defer(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	if (list_linked(&lr->member.resume))
		return;
	lr->refs++;
	session_resume_when_connected_locked(lr->s, &lr->member, notify);
}

static int lr_is_connection_loss(int rc)
{
	return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT;
}

/* Stop waiting for the watched node; returns the watch's reference. */
static void lr_unwatch(struct zkl_lockreq *lr)
{
	if (watchtab_remove(&lr->s->watches, &lr->watch))
		lr_unref_locked(lr); /* the caller holds one */
}

/*
 * Nobody wants the node any more (the owner let go, or the request
 * failed): delete it now if we know it, or make sure the step in flight
 * deletes it when it learns the name (those check outcome == FINISHED).
 */
static void lr_abandon_locked(struct zkl_lockreq *lr)
{
	ZKL_ASSERT_HELD(&lr->s->lock);
	lr_unwatch(lr);
	switch (lr->phase) {
	case PH_CREATING:
	case PH_RECOVERING:
	case PH_CHECKING:
	case PH_DELETING:
		return;
	case PH_NEW:
	case PH_GONE:
		lr->phase = PH_GONE;
		return;
	case PH_LISTING:
	case PH_WATCHING:
	case PH_IDLE:
		lr_delete(lr);
		return;
	}
}

static void lr_finish_locked(struct zkl_lockreq *lr, int err,
			     struct zkl_link *notify)
{
	lr_tell_locked(lr, err, notify);
	lr->outcome = LR_FINISHED;
	lr_abandon_locked(lr);
}

/* ---- completions ------------------------------------------------------ */

static void lr_on_created(int rc, const char *name, const struct Stat *st,
			  const void *data)
{
	struct zkl_lockreq *lr = (struct zkl_lockreq *)data;
	struct zkl_session *s = lr->s;
	struct zkl_link notify;

	session_enter(s, &notify);
	if (lr->phase != PH_CREATING) {
		/* The session expired under us: nothing to do. */
	} else if (rc == ZOK) {
		lr->czxid = st->czxid;
		if (lr_set_node(lr, name, NULL) < 0) {
			lr->phase = PH_GONE;
			lr_finish_locked(lr, -ENAMETOOLONG, &notify);
			/* the node dies with the session; nothing better */
		} else if (lr->outcome == LR_FINISHED) {
			lr_delete(lr);
		} else {
			lr->phase = PH_LISTING;
			if (!list_linked(&lr->qwait.link))
				lr_list(lr, &notify);
		}
	} else {
		if (lr_is_connection_loss(rc)) {
			/* Created or not?  Only a listing can tell. */
			lr->phase = PH_RECOVERING;
			lr->maybe_stray = 1;
			lr_defer(lr, &notify);
		} else if (rc == ZNONODE && lr->outcome == LR_PENDING &&
			   lr->create_attempts < LR_MAX_CREATE_ATTEMPTS) {
			int err = session_create_parents_locked(s, lr->dir);
			if (err < 0) {
				lr->phase = PH_GONE;
				lr_finish_locked(lr, err, &notify);
			} else {
				lr_create(lr, &notify);
			}
		} else {
			lr->phase = PH_GONE;
			lr_finish_locked(lr, zkerr_errno(rc), &notify);
		}
	}
	lr_exit(lr, &notify);
}

static void lr_delete_stray(struct zkl_lockreq *lr, const char *name)
{
	char path[NAMES_MAX_NODE_PATH + 1];

	/* A second node with our GUID is a create that was retried after a
	 * lost reply yet had succeeded: it would block the queue. */
	if (snprintf(path, sizeof(path), "%s/%s", lr->dir, name) <
	    (int)sizeof(path))
		zoo_adelete(lr->s->zh, path, -1, lr_ignore_void, NULL);
}

/* Delete every node with our GUID but ours: O(n), so only after a lost
 * create reply, the one way such a node comes about. */
static void lr_delete_strays(struct zkl_lockreq *lr, ssize_t me)
{
	const struct zkl_node *nodes = lr->q->nodes;
	size_t n = lr->q->n;

	for (ssize_t i = lockrule_find_tag(nodes, n, 0, lr->guid); i >= 0;
	     i = lockrule_find_tag(nodes, n, (size_t)i + 1, lr->guid))
		if (i != me)
			lr_delete_stray(lr, nodes[i].name);
}

/* Look at the queue (the session's view of it): held, or watch the one
 * node ahead. */
static void lr_evaluate(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	struct zkl_queue *q = lr->q;
	ssize_t me = queue_find(q, lr_node_name(lr));
	ssize_t ahead;
	char path[NAMES_MAX_NODE_PATH + 1];
	int err;

	if (lr->maybe_stray)
		lr_delete_strays(lr, me);
	if (me < 0) {
		/* Deleted by someone else while we queued. */
		log_msg(LOG_WARNING, "lock node %s vanished while queued",
			lr->node);
		lr->phase = PH_GONE;
		lr_finish_locked(lr, -EIO, notify);
		return;
	}
	ahead = queue_pick_watch(q, (size_t)me);
	if (ahead < 0) {
		lr->phase = PH_IDLE;
		lr_tell_locked(lr, 0, notify);
		return;
	}
	if (lr->try_only) {
		lr->phase = PH_IDLE;
		lr_finish_locked(lr, -EAGAIN, notify);
		return;
	}
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", lr->dir,
			     q->nodes[ahead].name) >= sizeof(path)) {
		/* A cut path would name no node: its watch would fire at
		 * once and the request would list again, for ever. */
		lr->phase = PH_IDLE;
		lr_finish_locked(lr, -ENAMETOOLONG, notify);
		return;
	}
	lr->phase = PH_WATCHING;
	lr->refs++;
	err = session_watch_locked(lr->s, path, &lr->watch);
	if (err < 0) {
		lr->refs--;
		lr->phase = PH_IDLE;
		lr_finish_locked(lr, err, notify);
	}
}

/* After a lost create reply: is there a node with our GUID? */
static void lr_recover(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	ssize_t found = lockrule_find_tag(lr->q->nodes, lr->q->n, 0, lr->guid);

	if (found < 0) {
		lr->node[0] = '\0';
		if (lr->outcome == LR_FINISHED)
			lr->phase = PH_GONE;
		else
			lr_create(lr, notify);
		return;
	}
	if (lr_set_node(lr, lr->dir, lr->q->nodes[found].name) < 0) {
		lr->phase = PH_GONE;
		lr_finish_locked(lr, -ENAMETOOLONG, notify);
		return;
	}
	lr_check_owner(lr, notify);
}

static void lr_listed(struct zkl_queue_wait *w, int rc, struct zkl_link *notify)
{
	struct zkl_lockreq *lr = ZKL_CONTAINER_OF(w, struct zkl_lockreq, qwait);

	if (lr->phase != PH_LISTING && lr->phase != PH_RECOVERING) {
		/* stale: the request moved on (cancelled, expired, or its
		 * create failed and it lined up again) */
	} else if (lr_is_connection_loss(rc)) {
		lr_defer(lr, notify);
	} else if (rc == ZOK && lr->phase == PH_LISTING) {
		lr_evaluate(lr, notify);
	} else if ((rc == ZOK || rc == ZNONODE) && lr->phase == PH_RECOVERING) {
		lr_recover(lr, notify);
	} else {
		lr->phase = lr->phase == PH_LISTING ? PH_IDLE : PH_GONE;
		lr_finish_locked(lr, rc == ZNONODE ? -EIO : zkerr_errno(rc),
				 notify);
	}
	lr_leave_locked(lr, notify);
}

static void lr_on_checked(int rc, const struct Stat *st, const void *data)
{
	struct zkl_lockreq *lr = (struct zkl_lockreq *)data;
	struct zkl_session *s = lr->s;
	struct zkl_link notify;

	session_enter(s, &notify);
	if (lr->phase != PH_CHECKING) {
		/* stale */
	} else if (lr_is_connection_loss(rc)) {
		lr_defer(lr, &notify);
	} else if (rc == ZOK && st->ephemeralOwner == s->client_id) {
		lr->czxid = st->czxid;
		if (lr->outcome == LR_FINISHED) {
			lr_delete(lr);
		} else {
			lr->phase = PH_LISTING;
			lr_list(lr, &notify);
		}
	} else if (rc == ZOK || rc == ZNONODE) {
		/* Not ours after all (an earlier session's, or gone). */
		if (rc == ZOK)
			log_msg(LOG_WARNING,
				"%s carries our GUID but another session "
				"(0x%" PRIx64 ") owns it",
				lr->node, (uint64_t)st->ephemeralOwner);
		lr->node[0] = '\0';
		if (lr->outcome == LR_FINISHED)
			lr->phase = PH_GONE;
		else
			lr_create(lr, &notify);
	} else {
		lr->phase = PH_GONE;
		lr_finish_locked(lr, zkerr_errno(rc), &notify);
	}
	lr_exit(lr, &notify);
}

static void lr_on_deleted(int rc, const void *data)
{
	struct zkl_lockreq *lr = (struct zkl_lockreq *)data;
	struct zkl_session *s = lr->s;
	struct zkl_link notify;

	session_enter(s, &notify);
	if (lr->phase == PH_DELETING) {
		if (lr_is_connection_loss(rc)) {
			lr_defer(lr, &notify); /* must not leave it behind */
		} else {
			lr->phase = PH_GONE;
			queue_leaving_done(&lr->leaving);
		}
	}
	lr_exit(lr, &notify);
}

/* ---- hooks called by the session -------------------------------------- */

/* Queue anew on a new session: a fresh GUID, so that nothing of an earlier
 * session (which ZooKeeper deletes anyway) is ever taken for ours. */
static void lr_restart(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	char guid[NAMES_TAG_MAX + 1];
	size_t at = strlen(lr->dir) + 1;
	int err = names_tag_new(ZKL_STYLE_ZKLOCKFS, guid);

	/* A new tag of the same length: the prefix keeps its length. */
	if (err >= 0)
		err = names_format_prefix(lr->create_path + at,
					  strlen(lr->create_path + at) + 1,
					  ZKL_STYLE_ZKLOCKFS, lr->mode, guid);
	if (err < 0) {
		lr->phase = PH_GONE;
		lr_finish_locked(lr, err, notify);
		return;
	}
	memcpy(lr->guid, guid, sizeof(guid));
	lr->node[0] = '\0';
	lr->create_attempts = 0;
	lr->maybe_stray = 0;
	lr_create(lr, notify);
}

static void lr_resume(struct zkl_member *m, struct zkl_link *notify)
{
	struct zkl_lockreq *lr =
		ZKL_CONTAINER_OF(m, struct zkl_lockreq, member);

	ZKL_ASSERT_HELD(&lr->s->lock);
	switch (lr->phase) {
	case PH_NEW:
		if (lr->outcome == LR_PENDING)
			lr_restart(lr, notify);
		else
			lr->phase = PH_GONE;
		break;
	case PH_RECOVERING:
	case PH_CHECKING:
		lr->phase = PH_RECOVERING;
		lr_list(lr, notify);
		break;
	case PH_LISTING:
		lr_list(lr, notify);
		break;
	case PH_DELETING:
		lr_delete(lr);
		break;
	default:
		break;
	}
	lr_leave_locked(lr, notify);
}

static void lr_watch_fired(struct zkl_watch *w, const char *gone,
			   struct zkl_link *notify)
{
	struct zkl_lockreq *lr = ZKL_CONTAINER_OF(w, struct zkl_lockreq, watch);
	size_t dirlen = strlen(lr->dir);

	ZKL_ASSERT_HELD(&lr->s->lock);
	if (lr->phase == PH_WATCHING) {
		lr->phase = PH_LISTING;
		if (gone && strncmp(gone, lr->dir, dirlen) == 0 &&
		    gone[dirlen] == '/') {
			/* No listing needed: see queue.h. */
			queue_mark_gone(lr->q, gone + dirlen + 1);
			lr_evaluate(lr, notify);
		} else {
			lr_list(lr, notify); /* changed, or we cannot tell */
		}
	}
	lr_leave_locked(lr, notify);
}

static void lr_report_lost(struct zkl_lockreq *lr, struct zkl_link *lost)
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

static void lr_expired(struct zkl_member *m, int requeue, struct zkl_link *lost,
		       struct zkl_link *notify)
{
	struct zkl_lockreq *lr =
		ZKL_CONTAINER_OF(m, struct zkl_lockreq, member);
	int queued = list_linked(&lr->member.resume);

	ZKL_ASSERT_HELD(&lr->s->lock);
	/* Ours, so that dropping the references of the resume list and the
	 * line cannot free the request under us (a released one may have
	 * no other). */
	lr->refs++;
	lr_unwatch(lr);
	if (queue_leave_line_locked(&lr->qwait))
		lr_unref_locked(lr); /* the session's list holds one */
	/* Replies still to come from the old handle find a phase that does
	 * not expect them, and are dropped. */
	if (lr->outcome == LR_PENDING && requeue) {
		lr->phase = PH_NEW;
		if (!queued) {
			lr->refs++;
			list_add_tail(&lr->s->resume, &lr->member.resume);
		}
		lr_unref_locked(lr); /* the resume list holds one */
		return;
	}
	if (queued) {
		list_del(&lr->member.resume);
		lr->refs--;
	}
	if (lr->outcome == LR_HELD && !lr->lost) {
		lr->lost = 1;
		lr_report_lost(lr, lost);
	}
	queue_leaving_done(&lr->leaving);
	lr->phase = PH_GONE;
	lr_finish_locked(lr, -ENOTCONN, notify);
	lr_leave_locked(lr, notify);
}

static void lr_count(const struct zkl_member *m, uint64_t *held,
		     uint64_t *waiting)
{
	const struct zkl_lockreq *lr =
		ZKL_CONTAINER_OF(m, struct zkl_lockreq, member);

	ZKL_ASSERT_HELD(&lr->s->lock);
	if (lr->outcome == LR_HELD && !lr->lost)
		++*held;
	else if (lr->outcome == LR_PENDING)
		++*waiting;
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
