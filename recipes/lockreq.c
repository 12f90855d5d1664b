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
#include "revoke.h"
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
	char leases[NAMES_MAX_NODE_PATH + 1];
	int peer = mode == ZKL_MODE_LEASE && s->dialect != ZKL_STYLE_ZKLOCKFS;
	int rc = peer ? names_peer_dir(s->dialect, NAMES_PEER_LEASES, dir,
				       leases)
		      : 0;

	if (rc == 0)
		rc = lr_alloc(s, peer ? leases : dir, dir, mode, 0, flags, data,
			      datalen, done, arg, out);
	if (rc == 0)
		lr_wire(*out);
	if (rc == 0 && peer)
		peerlease_wire(*out);
	return rc;
}

/* ---- the owner's calls ------------------------------------------------ */

enum zkl_mode lockreq_mode(const struct zkl_lockreq *lr)
{
	return lr->mode;
}

const char *lockreq_guid(const struct zkl_lockreq *lr)
{
	return lr->guid;
}

int lockreq_start(struct zkl_lockreq *lr)
{
	struct zkl_session *s = lr->s;
	struct zkl_link notify;
	int err;

	session_enter(s, &notify);
	err = lr->multi  ? multilock_start_locked(lr, &notify)
	      : lr->peer ? peerlease_start_locked(lr)
			 : lr_start_locked(lr);
	session_leave(s, &notify);
	return err;
}

int lockreq_place_to_take(struct zkl_lockreq *from)
{
	int err;

	pthread_mutex_lock(&from->s->lock);
	if (!lr_heir_can_share(from))
		err = -EINVAL;
	else if (from->owners > 1)
		err = -EBUSY;
	else if (!session_is_connected_locked(from->s))
		err = -EAGAIN;
	else
		err = 0;
	pthread_mutex_unlock(&from->s->lock);
	return err;
}

int lockreq_start_in_place(struct zkl_lockreq *lr, struct zkl_lockreq *from)
{
	struct zkl_session *s = lr->s;
	struct zkl_link notify;
	int err = 0, heir;

	session_enter(s, &notify);
	heir = from->s == s && lr->mode == ZKL_MODE_READ && !lr->multi &&
	       !lr->peer && lr->phase == PH_NEW && !lr->heir_of &&
	       strcmp(lr->dir, from->dir) == 0 && lr_heir_can_take(from) &&
	       lr_use_tag(lr, from->guid) == 0;
	if (heir) {
		lr->heir_of = from; /* with the owner's hold */
		/* Nobody can block it: it waits for ZooKeeper alone. */
		lr->try_only = 0;
		err = lr_start_locked(lr);
		if (err < 0)
			lr_heir_detach_locked(lr, &notify);
	}
	session_leave(s, &notify);
	if (heir)
		return err;
	/* As flock(2) converts: let go, then queue at the end. */
	lockreq_release(from);
	return lockreq_start(lr);
}

/* Nobody wants the node any more. */
static void lockreq_abandon_locked(struct zkl_lockreq *lr,
				   struct zkl_link *notify)
{
	lr->outcome = LR_FINISHED;
	if (lr->multi)
		multilock_abandon_locked(lr, notify);
	else if (lr->peer)
		peerlease_abandon_locked(lr, notify);
	else
		lr_abandon_locked(lr, notify);
}

int lockreq_cancel(struct zkl_lockreq *lr)
{
	struct zkl_session *s = lr->s;
	struct zkl_link notify;
	int err = 0;

	session_enter(s, &notify);
	if (lr->outcome != LR_PENDING)
		err = -EALREADY;
	else
		lockreq_abandon_locked(lr, &notify);
	session_leave(s, &notify);
	return err;
}

int lockreq_share(struct zkl_lockreq *lr)
{
	int err;

	pthread_mutex_lock(&lr->s->lock);
	err = lr->multi || lr->peer || lr->mode == ZKL_MODE_LEASE
		      ? -EINVAL
		      : lr_held_err_locked(lr);
	if (err == 0)
		lr->owners++;
	pthread_mutex_unlock(&lr->s->lock);
	return err;
}

int lockreq_node_is(struct zkl_lockreq *lr, const char *node)
{
	int same;

	pthread_mutex_lock(&lr->s->lock);
	same = lr_has_node(lr) && strcmp(lr->node, node) == 0;
	/* A multi-lock has a node on each of its resources. */
	for (unsigned i = 0; !same && lr->multi && i < lr->nmembers; i++)
		same = lr_has_node(lr->members[i]) &&
		       strcmp(lr->members[i]->node, node) == 0;
	pthread_mutex_unlock(&lr->s->lock);
	return same;
}

unsigned lockreq_owners(struct zkl_lockreq *lr)
{
	unsigned n;

	pthread_mutex_lock(&lr->s->lock);
	n = lr->owners;
	pthread_mutex_unlock(&lr->s->lock);
	return n;
}

void lockreq_release_then(struct zkl_lockreq *lr, lockreq_gone_fn gone,
			  void *arg)
{
	struct zkl_session *s = lr->s;
	struct zkl_link notify;

	pthread_mutex_lock(&s->lock);
	if (lr->owners > 1) {
		/* Another owner holds on: nothing leaves ZooKeeper. */
		lr->owners--;
		pthread_mutex_unlock(&s->lock);
		if (gone)
			gone(arg);
		return;
	}
	pthread_mutex_unlock(&s->lock);
	session_enter(s, &notify);
	lr_begin_entry_locked(lr, LR_HOLD_OWNER);
	if (lr->outcome == LR_HELD && !lr->lost) {
		log_msg(LOG_DEBUG, "released %s lock %s",
			names_mode_str(lr->mode), lr->node);
		lr_metrics_ended_locked(lr, 0);
	}
	lr->gone_fn = gone;
	lr->gone_arg = arg;
	/* A multi-lock that ended with its session keeps its members until
	 * now: they could not be let go while the session walked them. */
	if (lr->outcome != LR_FINISHED || lr->members)
		lockreq_abandon_locked(lr, &notify);
	lr_end_entry_locked(lr, &notify);
	session_leave(s, &notify);
}

void lockreq_release(struct zkl_lockreq *lr)
{
	lockreq_release_then(lr, NULL, NULL);
}

struct lr_set_ctx {
	struct zkl_lockreq *lr; /* with a CALL hold */
	void (*cb)(int err, void *arg);
	void *arg;
};

int lr_note_err(int rc)
{
	return rc == ZNONODE       ? -EIO
	       : rc == ZBADVERSION ? -EAGAIN
				   : zkerr_errno(rc);
}

int lr_note_data(const struct zkl_lockreq *lr, int asked, const void *data,
		 size_t len, char **out, size_t *outlen)
{
	size_t mark = asked ? sizeof(REVOKE_MARK) : 0; /* with its newline */
	char *body = NULL;
	int err = 0;

	if (lr->inherited)
		err = lr_heir_data(lr->czxid, data, len, &body, &len);
	if (err < 0)
		return err;
	*out = malloc(mark + len + 1);
	if (*out) {
		memcpy(*out, REVOKE_MARK "\n", mark);
		memcpy(*out + mark, body ? body : data, len);
		*outlen = mark + len;
	}
	free(body);
	return *out ? 0 : -ENOMEM;
}

static void lr_on_set(int rc, const struct Stat *st, const void *data)
{
	struct lr_set_ctx *ctx = (struct lr_set_ctx *)data;
	struct zkl_lockreq *lr = ctx->lr;
	void (*cb)(int err, void *arg) = ctx->cb;
	void *arg = ctx->arg;
	struct zkl_link notify;

	free(ctx);
	session_enter(lr->s, &notify);
	if (rc == ZOK && st)
		lr->own_version = st->version;
	lr_end_completion(lr, &notify);
	cb(rc == ZOK ? 0 : lr_note_err(rc), arg);
}

int lockreq_set_data(struct zkl_lockreq *lr, const void *data, size_t len,
		     void (*cb)(int err, void *arg), void *arg)
{
	struct zkl_session *s = lr->s;
	struct lr_set_ctx *ctx = malloc(sizeof(*ctx));
	char *note = NULL;
	size_t notelen;
	int err;

	if (!ctx)
		return -ENOMEM;
	ctx->lr = lr;
	ctx->cb = cb;
	ctx->arg = arg;
	/* lr->multi shares its word with bits written under the lock. */
	pthread_mutex_lock(&s->lock);
	err = lr_held_err_locked(lr);
	if (err == 0 && lr->multi) {
		err = multilock_set_data_locked(lr, data, len, cb, arg);
		free(ctx);
		ctx = NULL;
	} else if (err == 0) {
		err = lr_note_data(lr, lr->revoke_asked, data, len, &note,
				   &notelen);
	}
	if (err == 0 && ctx) {
		/* Only over the data we last read: a mark set since must
		 * not be lost (the own watch reads it, and tells). */
		lr_hold(lr, LR_HOLD_CALL);
		err = zkerr_errno(zoo_aset(s->zh, lr->node, note, (int)notelen,
					   lr->own_version, lr_on_set, ctx));
		if (err < 0)
			lr_drop_locked(lr, LR_HOLD_CALL);
		else
			ctx = NULL;
	}
	pthread_mutex_unlock(&s->lock);
	free(note);
	free(ctx);
	return err;
}

int lockreq_describe(struct zkl_lockreq *lr, int64_t *token, char *path,
		     size_t pathlen, int64_t *session)
{
	struct zkl_session *s = lr->s;
	int err = 0;

	pthread_mutex_lock(&s->lock);
	err = lr_held_err_locked(lr);
	if (err == 0) {
		*token = lr->czxid;
		*session = s->client_id;
		if ((size_t)snprintf(path, pathlen, "%s", lr->node) >= pathlen)
			err = -ENAMETOOLONG;
	}
	pthread_mutex_unlock(&s->lock);
	return err;
}

int lockreq_revoke_asked(struct zkl_lockreq *lr, int64_t *when_ms)
{
	int asked;

	pthread_mutex_lock(&lr->s->lock);
	asked = lr->revoke_asked && lr->outcome == LR_HELD && !lr->lost;
	if (asked)
		*when_ms = lr->revoke_ms;
	/* A multi-lock is asked when any of its members is. */
	for (unsigned i = 0; !asked && lr->multi && i < lr->nmembers; i++) {
		const struct zkl_lockreq *m = lr->members[i];
		asked = m->revoke_asked && lr->outcome == LR_HELD && !lr->lost;
		if (asked)
			*when_ms = m->revoke_ms;
	}
	pthread_mutex_unlock(&lr->s->lock);
	return asked;
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
