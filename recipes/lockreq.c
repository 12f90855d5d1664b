/*
 * lockreq.c - the lock request machine (lockreq.h for its owner, lr.h for
 * the features that ride on it, doc/design.md for the diagram).
 *
 * Two variables describe a request:
 *   outcome  what the owner has been told: PENDING (nothing yet), HELD
 *            (done(0) was called), FINISHED (done(err) was called, the
 *            cancel won, or the owner released it).  It only moves forward
 *            and decides, under the session mutex, which of grant, cancel,
 *            failure and session loss wins: exactly one reply.
 *   phase    which ZooKeeper step is in flight for the node.
 * Completions arrive in the order the requests were sent (one session, one
 * completion thread).
 *
 * The queue itself is seen through the session's shared view of the
 * resource (queue.h): a request lines up for a listing after its create,
 * and a waiter whose watched node is deleted re-reads that view.
 *
 * The file reads from the owner's calls down: the owner's entry points,
 * references and telling the owner, the basic steps, the watches, the
 * loss, a downgrade's heir, the create, what a listing decides, and what
 * the session calls (resume, fired watches, the session's end).
 */
#include "lr.h"
#include "lockrule.h"
#include "revoke.h"
#include "waitgraph.h"
#include "zkerr.h"
#include "log.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

/* What lr_alloc wires a request to when its kind does not say. */
static const struct zkl_member_ops lr_member_ops;
static void lr_watch_fired(struct zkl_watch *w, const char *path,
			   enum zkl_watch_event ev, struct zkl_link *notify);
static void lr_limit_fired(struct zkl_watch *w, const char *path,
			   enum zkl_watch_event ev, struct zkl_link *notify);
static void lr_own_fired(struct zkl_watch *w, const char *path,
			 enum zkl_watch_event ev, struct zkl_link *notify);

/* The machine's own steps, declared here because they call each
 * other; lr.h has what the features riding on it call. */

/* The path of the queue's node `name` into path.  Returns 0 or
 * -ENAMETOOLONG. */
static int lr_child_path(const struct zkl_lockreq *lr, const char *name,
			 char path[NAMES_MAX_NODE_PATH + 1]);
/* Hand the hold `from` over as `to` (a fired watch of the ahead array
 * runs as the request's own watch). */
static void lr_pass_locked(struct zkl_lockreq *lr, enum lr_hold from,
			   enum lr_hold to);
static void lr_notice_run(struct zkl_notice *n);
static void lr_report_lost(struct zkl_lockreq *lr, struct zkl_link *lost);
static void lr_delete_strays(struct zkl_lockreq *lr, ssize_t me);
struct lr_call *lr_call_new(struct zkl_lockreq *lr)
{
	struct lr_call *c = malloc(sizeof(*c));

	if (!c)
		return NULL;
	c->lr = lr;
	c->step = UINT64_MAX; /* until sent */
	lr_hold(lr, LR_HOLD_CALL);
	return c;
}

void lr_call_sent(struct lr_call *c)
{
	ZKL_ASSERT_HELD(&c->lr->s->lock);
	c->step = c->lr->step;
}

void lr_call_unsent(struct lr_call *c)
{
	lr_drop_locked(c->lr, LR_HOLD_CALL);
	free(c);
}

int lr_call_sent_if(struct lr_call *c, int rc)
{
	if (!c)
		return -ENOMEM;
	if (rc != ZOK) {
		lr_call_unsent(c);
		return zkerr_errno(rc);
	}
	lr_call_sent(c);
	return 0;
}

int lr_call_current(const struct lr_call *c)
{
	ZKL_ASSERT_HELD(&c->lr->s->lock);
	return c->step == c->lr->step;
}

void lr_call_end(struct lr_call *c, struct zkl_link *notify)
{
	struct zkl_lockreq *lr = c->lr;

	free(c);
	lr_end_completion(lr, notify);
}

static void lr_ignore_void(int rc, const void *data);
/* The node `name` of the queue (a lease also for its mark). */
static int lr_watch_one(struct zkl_lockreq *lr, const char *name);
/* Every lease ahead of nodes[me] in the queue's view; a change of any is
 * reported to lr->watch.fired_locked, as if lr->watch had fired. */
static int lr_watch_ahead(struct zkl_lockreq *lr, size_t me);
/* A lease: the resource's data, for changes of the limit (once). */
static int lr_watch_limit(struct zkl_lockreq *lr);
/* How much of its watching a request stops (lr_unwatch_to): each level
 * takes the ones before it too. */
enum lr_unwatching {
	LR_UNWATCH_AHEAD, /* the nodes it waits for (lr_watch_one, _ahead) */
	LR_UNWATCH_WAITS, /* ... and the limit: what only a waiter watches */
	LR_UNWATCH_ALL,   /* ... and its own node (lr_unwatch_all) */
};
static void lr_unwatch_to(struct zkl_lockreq *lr, enum lr_unwatching upto);
/* The basic steps. */
static int lr_line_up(struct zkl_lockreq *lr);
/* ... or for ms, then resume once connected (a step ZooKeeper refused). */
/* lockreq_release of a plain request, s->lock held. */
static void lr_release_locked(struct zkl_lockreq *lr, struct zkl_link *notify);
/* An heir lets its write lock go (released: its node is deleted unless
 * it is known gone, PH_GONE).  Nothing if it has none. */
static void lr_heir_detach_locked(struct zkl_lockreq *lr,
				  struct zkl_link *notify);
/* A downgrade.  Can `from` be replaced by an heir now: a
 * plain write lock, held and not lost, with nothing in flight? */
static int lr_heir_can_take(const struct zkl_lockreq *from);
/* The same, whatever the number of its owners. */
static int lr_heir_can_share(const struct zkl_lockreq *from);
/* Send the transaction that creates lr's node in its write lock's place
 * and deletes that lock's node (lr_queue_create's step for an heir).
 * Returns 0 or -errno (nothing sent). */
static int lr_heir_send(struct zkl_lockreq *lr);
/* The heir's node exists (found after a lost reply): its write lock's
 * node is gone with that transaction. */
static void lr_heir_settle(struct zkl_lockreq *lr, struct zkl_link *notify);
static void lr_create(struct zkl_lockreq *lr, struct zkl_link *notify);
/* After a lost create reply, a listing: is there a node with our tag? */
static void lr_recover(struct zkl_lockreq *lr, struct zkl_link *notify);
/* A listing's verdict : `listed` when the view is a
 * listing that has just come back (it shows our node), else the view with
 * nodes marked gone since. */
static void lr_evaluate(struct zkl_lockreq *lr, int listed,
			struct zkl_link *notify);
static void lr_listed(struct zkl_queue_wait *w, int rc,
		      struct zkl_link *notify);
/* An owner's lock's hold ended: let go (lost 0) or lost, counted in the
 * metrics. */
static void lr_metrics_ended_locked(struct zkl_lockreq *lr, int lost);
static const char *lr_shared_node(const struct zkl_member *m, unsigned *owners);

/*
 * The phase: the one place it changes, checked against the diagram in
 * doc/design.md ("The lock request state machine").
 */
#define PH(p) (1u << (p))

/* From each phase, where a request may go next.  Besides these, every
 * phase but GONE may repeat itself (a step sent again), go back to NEW
 * (queued again on the next session) or end in GONE (no node of ours,
 * ever); GONE is the end. */
static const unsigned lr_moves[PH_GONE + 1] = {
	[PH_NEW] = PH(PH_MUTEX) | PH(PH_CREATING),
	[PH_MUTEX] = PH(PH_CREATING) | PH(PH_COUNTING),
	[PH_CREATING] = PH(PH_RECOVERING) | PH(PH_CHECKING) | PH(PH_LISTING) |
			PH(PH_COUNTING) | PH(PH_IDLE) | PH(PH_DELETING),
	[PH_RECOVERING] = PH(PH_CREATING) | PH(PH_CHECKING),
	[PH_CHECKING] = PH(PH_CREATING) | PH(PH_RECOVERING) | PH(PH_LISTING) |
			PH(PH_COUNTING) | PH(PH_IDLE) | PH(PH_DELETING),
	[PH_LISTING] = PH(PH_RECOVERING) | PH(PH_WATCHING) | PH(PH_IDLE) |
		       PH(PH_DELETING),
	[PH_COUNTING] = PH(PH_CREATING) | PH(PH_WATCHING) | PH(PH_IDLE) |
			PH(PH_DELETING),
	[PH_WATCHING] = PH(PH_LISTING) | PH(PH_COUNTING) | PH(PH_IDLE) |
			PH(PH_DELETING),
	[PH_IDLE] = PH(PH_LISTING) | PH(PH_DELETING),
	[PH_DELETING] = 0,
	[PH_GONE] = 0,
};

/* The phases each kind goes through: a multi-lock's own are its
 * members' sum (it has no node); only a peer lease waits for the peer's
 * lock and counts; it never lists a queue of its own. */
#define LR_PHASES_ALL (PH(PH_GONE + 1) - 1)
static const unsigned lr_kind_phases[LR_KINDS] = {
	[LR_PLAIN] = LR_PHASES_ALL & ~(PH(PH_MUTEX) | PH(PH_COUNTING)),
	[LR_MULTI] = PH(PH_NEW) | PH(PH_CREATING) | PH(PH_IDLE) | PH(PH_GONE),
	[LR_MEMBER] = LR_PHASES_ALL & ~(PH(PH_MUTEX) | PH(PH_COUNTING)),
	[LR_PEER_LEASE] = LR_PHASES_ALL & ~PH(PH_LISTING),
	[LR_PEER_MUTEX] = LR_PHASES_ALL & ~(PH(PH_MUTEX) | PH(PH_COUNTING)),
};

static const char *const lr_phase_names[PH_GONE + 1] = {
	[PH_NEW] = "NEW",           [PH_MUTEX] = "MUTEX",
	[PH_CREATING] = "CREATING", [PH_RECOVERING] = "RECOVERING",
	[PH_CHECKING] = "CHECKING", [PH_LISTING] = "LISTING",
	[PH_COUNTING] = "COUNTING", [PH_WATCHING] = "WATCHING",
	[PH_IDLE] = "IDLE",         [PH_DELETING] = "DELETING",
	[PH_GONE] = "GONE",
};

void lr_to(struct zkl_lockreq *lr, enum lr_phase to)
{
	enum lr_phase from = lr->phase;
	unsigned may = from == PH_GONE ? PH(PH_GONE)
				       : lr_moves[from] | PH(from) |
						 PH(PH_NEW) | PH(PH_GONE);

	ZKL_ASSERT_HELD(&lr->s->lock);
	if (!(may & lr_kind_phases[lr->kind] & PH(to))) {
		log_msg(LOG_CRIT,
			"lock request %s (%s): phase %s -> %s is not in the "
			"diagram",
			lr->create_path, lr_kinds[lr->kind]->name,
			lr_phase_names[from], lr_phase_names[to]);
		assert(!"a phase move outside the diagram");
	}
	lr->phase = to;
	lr->step++;
	/* Every move is one this session made or was told of: a holders
	 * text of the resource taken before it is old (holders_changes). */
	lr_changed_locked(lr);
}

void lr_changed_locked(struct zkl_lockreq *lr)
{
	ZKL_ASSERT_HELD(&lr->s->lock);
	session_changed(lr->s, lr->dir);
	for (unsigned i = 0; lr->kind == LR_MULTI && i < lr->nmembers; i++)
		session_changed(lr->s, lr->members[i]->dir);
}

/*
 * The owner's calls.
 */
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
		rc = lr_alloc(s, peer ? leases : dir, dir,
			      peer ? LR_PEER_LEASE : LR_PLAIN, NULL, mode,
			      flags, data, datalen, done, arg, out);
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
	err = lr_kinds[lr->kind]->start_locked
		      ? lr_kinds[lr->kind]->start_locked(lr, &notify)
		      : lr_start_locked(lr);
	session_leave(s, &notify);
	return err;
}

int lockreq_place_to_take(struct zkl_lockreq *from, enum zkl_mode mode)
{
	struct zkl_link notify;
	int err;

	session_enter(from->s, &notify);
	if (from->outcome == LR_HELD && !from->lost && from->mode == mode)
		err = 1;
	else if (mode != ZKL_MODE_READ || !lr_heir_can_share(from))
		err = -EINVAL;
	else if (from->owners > 1)
		err = -EBUSY;
	else if (!session_is_connected_locked(from->s))
		err = -EAGAIN;
	else
		err = 0;
	session_leave(from->s, &notify);
	return err;
}

int lockreq_start_in_place(struct zkl_lockreq *lr, struct zkl_lockreq *from)
{
	struct zkl_session *s = lr->s;
	struct zkl_link notify;
	int err = 0, heir;

	session_enter(s, &notify);
	heir = from->s == s && lr->mode == ZKL_MODE_READ &&
	       lr->kind == LR_PLAIN && lr->phase == PH_NEW && !lr->heir_of &&
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
	lr_kinds[lr->kind]->abandon_locked(lr, notify);
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
	struct zkl_link notify;
	int err;

	session_enter(lr->s, &notify);
	err = lr->kind != LR_PLAIN || lr->mode == ZKL_MODE_LEASE
		      ? -EINVAL
		      : lr_held_err_locked(lr);
	if (err == 0) {
		lr->owners++;
		lr_changed_locked(lr); /* holders says holds=N */
	}
	session_leave(lr->s, &notify);
	return err;
}

int lockreq_node_is(struct zkl_lockreq *lr, const char *node)
{
	struct zkl_link notify;
	int same;

	session_enter(lr->s, &notify);
	same = lr_has_node(lr) && strcmp(lr->node, node) == 0;
	/* A multi-lock has a node on each of its resources. */
	for (unsigned i = 0; !same && lr->kind == LR_MULTI && i < lr->nmembers;
	     i++)
		same = lr_has_node(lr->members[i]) &&
		       strcmp(lr->members[i]->node, node) == 0;
	session_leave(lr->s, &notify);
	return same;
}

unsigned lockreq_owners(struct zkl_lockreq *lr)
{
	struct zkl_link notify;
	unsigned n;

	session_enter(lr->s, &notify);
	n = lr->owners;
	session_leave(lr->s, &notify);
	return n;
}

void lockreq_release_then(struct zkl_lockreq *lr, lockreq_gone_fn gone,
			  void *arg)
{
	struct zkl_session *s = lr->s;
	struct zkl_link notify;

	session_enter(s, &notify);
	if (lr->owners > 1) {
		/* Another owner holds on: nothing leaves ZooKeeper. */
		lr->owners--;
		lr_changed_locked(lr);
		session_leave(s, &notify);
		if (gone)
			gone(arg);
		return;
	}
	lr_begin_entry_locked(lr, LR_HOLD_OWNER);
	lr_trace(lr, TRACE_RELEASED);
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
	char *note; /* the data to set, owned */
	size_t notelen;
};

int lr_note_err(int rc)
{
	return rc == ZNONODE       ? -EIO
	       : rc == ZBADVERSION ? -EAGAIN
				   : zkerr_errno(rc);
}

int32_t lr_note_version(const struct zkl_lockreq *lr)
{
	return lr->own_version < 0 ? 0 : lr->own_version;
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

static void lr_set_ctx_free(struct lr_set_ctx *ctx)
{
	if (ctx)
		free(ctx->note);
	free(ctx);
}

static void lr_on_set(int rc, const struct Stat *st, const void *data)
{
	struct lr_set_ctx *ctx = (struct lr_set_ctx *)data;
	struct zkl_lockreq *lr = ctx->lr;
	void (*cb)(int err, void *arg) = ctx->cb;
	void *arg = ctx->arg;
	struct zkl_link notify;

	lr_set_ctx_free(ctx);
	session_enter(lr->s, &notify);
	if (rc == ZOK && st)
		lr->own_version = st->version;
	lr_end_completion(lr, &notify);
	cb(rc == ZOK ? 0 : lr_note_err(rc), arg);
}

/* Send ctx's note, only over the data we last read: a mark set since
 * must not be lost (the own watch reads it, and tells).  Returns 0 (its
 * answer comes to lr_on_set) or -errno (not sent; ctx is the caller's
 * again). */
static int lr_send_note_locked(struct lr_set_ctx *ctx)
{
	struct zkl_lockreq *lr = ctx->lr;

	session_changed(lr->s, lr->node);
	return zkerr_errno(zoo_aset(lr->s->zh, lr->node, ctx->note,
				    (int)ctx->notelen, lr_note_version(lr),
				    lr_on_set, ctx));
}

int lockreq_set_data(struct zkl_lockreq *lr, const void *data, size_t len,
		     void (*cb)(int err, void *arg), void *arg)
{
	struct zkl_link notify;
	struct zkl_session *s = lr->s;
	struct lr_set_ctx *ctx = calloc(1, sizeof(*ctx));
	int err;

	if (!ctx)
		return -ENOMEM;
	ctx->lr = lr;
	ctx->cb = cb;
	ctx->arg = arg;
	session_enter(s, &notify);
	err = lr_held_err_locked(lr);
	if (err == 0 && lr->kind == LR_MULTI) {
		err = multilock_set_data_locked(lr, data, len, cb, arg);
		lr_set_ctx_free(ctx);
		ctx = NULL;
	} else if (err == 0) {
		err = lr_note_data(lr, lr->revoke_asked, data, len, &ctx->note,
				   &ctx->notelen);
	}
	if (err == 0 && ctx) {
		lr_hold(lr, LR_HOLD_CALL);
		if (lr->marking && !lr->note_after_mark) {
			/* A lease's grant mark is on its way and moves the
			 * version: the note follows its answer. */
			lr->note_after_mark = ctx;
			ctx = NULL;
		} else if ((err = lr_send_note_locked(ctx)) < 0) {
			lr_drop_locked(lr, LR_HOLD_CALL);
		} else {
			ctx = NULL;
		}
	}
	session_leave(s, &notify);
	lr_set_ctx_free(ctx);
	return err;
}

int lockreq_describe(struct zkl_lockreq *lr, int64_t *token, char *path,
		     size_t pathlen, int64_t *session)
{
	struct zkl_link notify;
	struct zkl_session *s = lr->s;
	int err = 0;

	session_enter(s, &notify);
	err = lr_held_err_locked(lr);
	if (err == 0) {
		*token = lr->czxid;
		*session = s->client_id;
		if ((size_t)snprintf(path, pathlen, "%s", lr->node) >= pathlen)
			err = -ENAMETOOLONG;
	}
	session_leave(s, &notify);
	return err;
}

int lockreq_revoke_asked(struct zkl_lockreq *lr, int64_t *when_ms)
{
	struct zkl_link notify;
	int asked;

	session_enter(lr->s, &notify);
	asked = lr->revoke_asked && lr->outcome == LR_HELD && !lr->lost;
	if (asked)
		*when_ms = lr->revoke_ms;
	/* A multi-lock is asked when any of its members is. */
	for (unsigned i = 0; !asked && lr->kind == LR_MULTI && i < lr->nmembers;
	     i++) {
		const struct zkl_lockreq *m = lr->members[i];
		asked = m->revoke_asked && lr->outcome == LR_HELD && !lr->lost;
		if (asked)
			*when_ms = m->revoke_ms;
	}
	session_leave(lr->s, &notify);
	return asked;
}

int lockreq_held_token(struct zkl_lockreq *lr, int64_t *token)
{
	struct zkl_link notify;
	struct zkl_session *s = lr->s;
	int mode;

	session_enter(s, &notify);
	/* Lost first, as lr_held_err_locked: a lock lost with its session
	 * reads as EIO whatever its outcome became. */
	mode = lr->lost                 ? -EIO
	       : lr->outcome != LR_HELD ? -ENOLCK
					: (int)lr->mode;
	if (mode >= 0 && token)
		*token = lr->czxid;
	session_leave(s, &notify);
	return mode;
}

int lockreq_held_mode(struct zkl_lockreq *lr)
{
	return lockreq_held_token(lr, NULL);
}

int lockreq_holds(struct zkl_lockreq *lr)
{
	return lockreq_held_mode(lr) >= 0;
}

void lockreq_trace(struct zkl_lockreq *lr, enum zkl_trace_point p, int64_t at,
		   const char *what)
{
	struct zkl_link notify;

	if (!trace_on())
		return;
	session_enter(lr->s, &notify);
	if (!lr->trace[p])
		lr->trace[p] = at;
	if (what)
		lr->trace_what = what;
	session_leave(lr->s, &notify);
}

void lr_trace(struct zkl_lockreq *lr, enum zkl_trace_point p)
{
	if (trace_on() && !lr->trace[p])
		lr->trace[p] = trace_now();
}

/*
 * A lock request's references, telling its owner, and its
 * node's name (see lr.h).
 */
int lr_alloc(struct zkl_session *s, const char *dir, const char *res,
	     enum lr_kind kind, const char *tag, enum zkl_mode mode,
	     unsigned flags, const void *data, size_t datalen,
	     lockreq_done_fn done, void *arg, struct zkl_lockreq **out)
{
	const struct lr_kind_ops *k = lr_kinds[kind];
	char prefix[NAMES_NODE_NAME_MAX + 1];
	char guid[NAMES_TAG_MAX + 1];
	struct zkl_lockreq *lr;
	size_t dirlen = strlen(dir), reslen = strlen(res), pathlen;
	int rc;

	assert(!tag || strlen(tag) < sizeof(guid));
	rc = tag ? snprintf(guid, sizeof(guid), "%s", tag)
		 : names_tag_new(s->dialect, guid);
	if (rc >= 0)
		rc = names_format_prefix(prefix, sizeof(prefix), s->dialect,
					 k->names, mode, guid);
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
	lr->kind = kind;
	lr->try_only = (flags & LOCKREQ_TRY) != 0;
	lr->metrics_kind = (flags >> LOCKREQ_KIND_SHIFT) % ZKL_KINDS;
	lr->made_ms = session_clock_now();
	lr->done = done;
	lr->arg = arg;
	lr->owners = 1;
	lr_hold(lr, LR_HOLD_OWNER);
	lr->outcome = LR_PENDING;
	static_assert(PH_NEW == 0, "calloc makes a request NEW");
	lr->own_version = -1;
	list_init(&lr->member.live);
	list_init(&lr->member.resume);
	notice_init(&lr->notice, lr_notice_run);
	list_init(&lr->watch.link);
	list_init(&lr->limit_watch.link);
	list_init(&lr->own_watch.link);
	list_init(&lr->qwait.link);
	lr->qwait.wants_limit = mode == ZKL_MODE_LEASE && !k->own_count;
	lr->member.ops = k->member_ops ? k->member_ops : &lr_member_ops;
	lr->watch.fired_locked = k->watch_fired ? k->watch_fired
						: lr_watch_fired;
	lr->limit_watch.fired_locked = k->limit_fired ? k->limit_fired
						      : lr_limit_fired;
	lr->own_watch.fired_locked = lr_own_fired;
	lr->qwait.listed_locked = lr_listed;
	list_init(&lr->leaving.link);
	*out = lr;
	return 0;
}

int lr_use_tag(struct zkl_lockreq *lr, const char *tag)
{
	size_t at = strlen(lr->dir) + 1;
	/* A tag of the dialect's length: the prefix keeps its length. */
	int err = names_format_prefix(lr->create_path + at,
				      strlen(lr->create_path + at) + 1,
				      lr->s->dialect, lr_kinds[lr->kind]->names,
				      lr->mode, tag);

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
	assert(!lr->mutex && !lr->members && !lr->wg && !lr->note_after_mark);
	if (lr->q)
		queue_put_locked(lr->q, &lr->leaving);
	if (lr->trace_what)
		trace_write(names_mode_str(lr->mode), lr->trace_what,
			    lr->trace);
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
	session_part_locked(lr->s, &lr->member);
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

/* The reference stays; only its reason changes. */
static void lr_pass_locked(struct zkl_lockreq *lr, enum lr_hold from,
			   enum lr_hold to)
{
	assert(from < LR_HOLDS && lr->holds[from] > 0 && lr->refs > 0);
	assert(to < LR_HOLDS && (!lr_hold_is_single(to) || lr->holds[to] == 0));
	lr->holds[from]--;
	lr->holds[to]++;
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

static void lr_metrics_ended_locked(struct zkl_lockreq *lr, int lost)
{
	if (!lr_is_owners_lock(lr) || lr->told_ms == 0 || lr->metrics_ended)
		return;
	lr->metrics_ended = 1;
	session_metrics_ended_locked(lr->s, lr->mode, lr->metrics_kind, lost,
				     session_clock_now() - lr->told_ms);
}

/* Decide the owner's answer (at most once) and queue it for after unlock. */
void lr_tell_locked(struct zkl_lockreq *lr, int err, struct zkl_link *notify)
{
	if (lr->outcome != LR_PENDING)
		return;
	waitgraph_end_locked(lr);
	lr->grant_deferred = !err && lr->s->jeopardy_ms != 0;
	if (lr->grant_deferred)
		return;
	lr->outcome = err ? LR_FINISHED : LR_HELD;
	lr->notify_err = err;
	if (!lr->inherited) /* an heir goes on with its write lock's hold */
		lr->granted_ms = session_clock_now();
	if (!err && lr->kind != LR_MEMBER) /* a multi-lock counts as one */
		session_count_grant_locked(lr->s);
	if (!err) {
		lr_trace(lr, TRACE_GRANTED);
		lr->told_ms = session_clock_now();
		if (lr_is_owners_lock(lr))
			session_metrics_granted_locked(
				lr->s, lr->mode, lr->metrics_kind,
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
static void lr_notice_run(struct zkl_notice *n)
{
	struct zkl_lockreq *lr =
		ZKL_CONTAINER_OF(n, struct zkl_lockreq, notice);

	struct zkl_session *s = lr->s;
	struct zkl_link notify;
	int gone;

	session_enter(s, &notify);
	lr_begin_entry_locked(lr, LR_HOLD_NOTICE);
	gone = lr->notify_gone;
	session_leave(s, &notify);
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

static void lr_ignore_void(int rc, const void *data)
{
	(void)rc;
	(void)data;
}

static int lr_child_path(const struct zkl_lockreq *lr, const char *name,
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
	if (lr_child_path(lr, name, path) == 0 &&
	    zoo_adelete(lr->s->zh, path, -1, lr_ignore_void, NULL) == ZOK)
		session_changed(lr->s, path);
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

/*
 * The lock request's basic steps (lr.h): lining up for a
 * listing, deleting its node, marking a granted lease, waiting for the
 * connection, giving up.
 */
static void lr_on_deleted(int rc, const void *data);

/* Line up for the next listing of the queue (queue.h); the reply comes
 * to lr_listed.  A lease watches the limit from now on: the listing reads
 * it, and a change after that read must not go unseen.  One already in
 * line goes to the back.  The LINE hold follows the place in line: taken
 * on joining, dropped on a failure that leaves the line (the caller holds
 * another).  Returns 0 or -errno. */
static int lr_line_up(struct zkl_lockreq *lr)
{
	int was_in_line = list_linked(&lr->qwait.link);
	int err = lr_watch_limit(lr);

	if (err == 0)
		err = queue_want_listing_locked(lr->q, &lr->qwait);
	if (err < 0)
		queue_leave_line_locked(&lr->qwait);
	if (!was_in_line && list_linked(&lr->qwait.link))
		lr_hold(lr, LR_HOLD_LINE);
	else if (was_in_line && !list_linked(&lr->qwait.link))
		lr_drop_locked(lr, LR_HOLD_LINE);
	return err;
}

/* List the queue: phase stays as the caller set it (LISTING or
 * RECOVERING), which tells lr_listed what to do with it. */
void lr_list(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	int err = lr_line_up(lr);

	if (err < 0) {
		/* A node we know is deleted by the finish; one we look for
		 * dies with the session. */
		lr_to(lr, lr->phase == PH_LISTING ? PH_IDLE : PH_GONE);
		lr_finish_locked(lr, err, notify);
	}
}

/* Waiting for the connection or a time no more: the caller takes up
 * what the resume would have redone. */
static void lr_undefer_locked(struct zkl_lockreq *lr)
{
	if (!list_linked(&lr->member.resume))
		return;
	list_del(&lr->member.resume);
	lr_drop_locked(lr, LR_HOLD_RESUME); /* the caller holds one */
}

void lr_delete_begin_locked(struct zkl_lockreq *lr)
{
	/* Its node goes: what a resume would redo before (a watch, a mark,
	 * a listing) nobody wants now; a delete that fails defers again. */
	lr_undefer_locked(lr);
	lr_to(lr, PH_DELETING);
	lr->leaving.name = lr_node_name(lr);
	queue_leaving_add(lr->q, &lr->leaving);
}

void lr_delete_unsent_locked(struct zkl_lockreq *lr)
{
	/* Only a dead handle refuses; its nodes die with it. */
	lr_to(lr, PH_GONE);
}

static void lr_delete_refused(struct zkl_lockreq *lr, int rc);

void lr_delete(struct zkl_lockreq *lr)
{
	struct lr_call *c;

	lr_delete_begin_locked(lr);
	c = lr_call_new(lr);
	if (!c)
		return lr_delete_refused(lr, ZSYSTEMERROR); /* again soon */
	lr->delete_sent_us = session_metrics_now_us();
	lr_trace(lr, TRACE_DELETE_SENT);
	if (zoo_adelete(lr->s->zh, lr->node, -1, lr_on_deleted, c) != ZOK) {
		lr_delete_unsent_locked(lr);
		lr_call_unsent(c);
		return;
	}
	lr_call_sent(c);
}

/* ZooKeeper refused to delete our node (an ACL changed by another
 * client, say): every other host would wait for it for the session's
 * life.  Try again after a back-off, doubling up to LR_DELETE_RETRY_MAX_MS,
 * until it lands or the session ends; the owner is not kept waiting
 * (lr_tell_gone_locked). */
static void lr_delete_refused(struct zkl_lockreq *lr, int rc)
{
	if (lr->delete_retry_ms == 0) {
		lr->delete_retry_ms = LR_DELETE_RETRY_FIRST_MS;
		log_msg(LOG_ERR,
			"cannot delete lock node %s (%s): other hosts see the "
			"lock held until it goes; trying again until it does",
			lr->node, zerror(rc));
	} else if (lr->delete_retry_ms < LR_DELETE_RETRY_MAX_MS) {
		lr->delete_retry_ms *= 2;
	}
	lr->delete_retries++;
	lr->s->delete_retries++;
	lr_defer_for(lr, lr->delete_retry_ms);
}

void lr_deleted_locked(struct zkl_lockreq *lr, int rc, struct zkl_link *notify)
{
	assert(lr->phase == PH_DELETING);
	if (zkerr_is_connection_loss(rc)) {
		lr_defer(lr, notify); /* must not leave it behind */
	} else if (rc != ZOK && rc != ZNONODE && rc != ZSESSIONEXPIRED &&
		   rc != ZCLOSING && rc != ZINVALIDSTATE) {
		/* (Those three: the node went with the session.) */
		lr_delete_refused(lr, rc);
	} else {
		if (lr->delete_retry_ms != 0)
			log_msg(LOG_NOTICE,
				"lock node %s deleted after %u refusals",
				lr->node, lr->delete_retries);
		lr->delete_retry_ms = 0;
		lr_to(lr, PH_GONE);
		queue_leaving_done(&lr->leaving);
	}
}

/* Wait for the connection to come back, then the resume hook. */
void lr_defer(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	if (list_linked(&lr->member.resume))
		return;
	lr_hold(lr, LR_HOLD_RESUME);
	session_resume_when_connected_locked(lr->s, &lr->member, notify);
}

void lr_defer_for(struct zkl_lockreq *lr, int ms)
{
	/* Waiting already (for the connection, or a time): the resume hook
	 * redoes whatever its phase wants. */
	if (session_resume_at_locked(lr->s, &lr->member,
				     session_clock_now() + ms))
		lr_hold(lr, LR_HOLD_RESUME);
}

/*
 * Nobody wants the node any more (the owner let go, or the request
 * failed): delete it now if we know it, or make sure the step in flight
 * deletes it when it learns the name (those check outcome == FINISHED).
 */
void lr_abandon_locked(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	/* Only a request with a node of its own waits (lr_evaluate): a
	 * multi-lock's members, a peer lease's mutex end theirs here. */
	waitgraph_end_locked(lr);
	ZKL_ASSERT_HELD(&lr->s->lock);
	/* A peer lease gives up its own way (peerlease_abandon_locked). */
	assert(lr->kind != LR_PEER_LEASE);
	/* An heir's write lock goes too: a transaction in flight was sent
	 * before this delete, which it leaves nothing to do if it is done. */
	lr_heir_detach_locked(lr, notify);
	lr_unwatch_all(lr);
	switch (lr->phase) {
	case PH_CREATING:
	case PH_RECOVERING:
	case PH_CHECKING:
	case PH_DELETING:
		return;
	case PH_MUTEX:
	case PH_COUNTING:
		assert(!"a peer lease's phase in a plain request");
		/* fall through */
	case PH_NEW:
	case PH_GONE:
		lr_to(lr, PH_GONE);
		return;
	case PH_LISTING:
	case PH_WATCHING:
	case PH_IDLE:
		lr_delete(lr);
		return;
	}
}

void lr_finish_locked(struct zkl_lockreq *lr, int err, struct zkl_link *notify)
{
	lr_tell_locked(lr, err, notify);
	lr->outcome = LR_FINISHED;
	lr_abandon_locked(lr, notify);
}

static void lr_release_locked(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	lr_begin_entry_locked(lr, LR_HOLD_OWNER);
	if (lr->outcome != LR_FINISHED) {
		lr->outcome = LR_FINISHED;
		lr_abandon_locked(lr, notify);
	}
	lr_end_entry_locked(lr, notify);
}

static void lr_heir_detach_locked(struct zkl_lockreq *lr,
				  struct zkl_link *notify)
{
	struct zkl_lockreq *from = lr->heir_of;

	if (!from)
		return;
	lr->heir_of = NULL;
	from->passing = 0;
	/* Not passed on (a downgrade that failed): let go here. */
	if (from->outcome == LR_HELD && !from->lost)
		lr_metrics_ended_locked(from, 0);
	lr_release_locked(from, notify);
}

static void lr_on_marked(int rc, const struct Stat *st, const void *data)
{
	struct zkl_lockreq *lr = (struct zkl_lockreq *)data;
	struct zkl_session *s = lr->s;
	struct zkl_link notify;
	struct lr_set_ctx *note;
	int err = 0;

	session_enter(s, &notify);
	lr->marking = 0;
	if (rc == ZOK && st)
		lr->own_version = st->version; /* a note next sets over it */
	note = lr->note_after_mark;
	lr->note_after_mark = NULL;
	if (note && (err = lr_send_note_locked(note)) < 0)
		lr_drop_locked(lr, LR_HOLD_CALL); /* the note's, not the last */
	if (rc == ZOK || rc == ZBADVERSION) {
		/* ZBADVERSION: a note was stored first; that is a mark too. */
		lr->marked = 1;
	} else if (zkerr_is_connection_loss(rc)) {
		if (lr_node_holds(lr) && lr->phase == PH_IDLE)
			lr_defer(lr, &notify); /* lr_resume marks again */
	} else if (rc != ZNONODE) {            /* ZNONODE: returned already */
		log_msg(LOG_WARNING,
			"lease %s: could not mark it granted (%s); the "
			"waiter behind it will wait for its return",
			lr->node, zerror(rc));
	}
	lr_end_completion(lr, &notify);
	if (err < 0) { /* not sent: answered here */
		note->cb(err, note->arg);
		lr_set_ctx_free(note);
	}
}

/* Tell the waiters behind a granted lease that it is (doc/design.md):
 * its data set again, only if nothing was set before (version 0), so that
 * a note stored since is kept. */
void lr_mark(struct zkl_lockreq *lr)
{
	lr_hold(lr, LR_HOLD_CALL);
	if (zoo_aset(lr->s->zh, lr->node, lr->data, (int)lr->datalen, 0,
		     lr_on_marked, lr) == ZOK) {
		lr->marking = 1;
		session_changed(lr->s, lr->node);
	} else /* only a dead handle refuses: the node dies too */
		lr_drop_locked(lr, LR_HOLD_CALL);
}

static void lr_on_deleted(int rc, const void *data)
{
	struct lr_call *c = (struct lr_call *)data;
	struct zkl_lockreq *lr = c->lr;
	struct zkl_session *s = lr->s;
	struct zkl_link notify;

	session_enter(s, &notify);
	if (lr_call_current(c)) {
		session_metrics_answered_locked(s, ZKL_OP_DELETE, rc,
						lr->delete_sent_us);
		lr_trace(lr, TRACE_DELETED);
		lr_deleted_locked(lr, rc, &notify);
	}
	lr_call_end(c, &notify);
}

/*
 * What a waiting lock request watches (lr.h): the one node
 * ahead of it that can unblock it; for the first waiter of a semaphore,
 * every lease ahead of it (any holder's return can unblock it); for a
 * lease, the resource's data, where the limit is kept; and from its first
 * wait (or its grant) on, its own node, so that a deletion by anyone else
 * is news it hears before it can be granted, or a loss once held.
 */
/* One of a first waiter's watches on the leases ahead of it. */
struct lr_ahead {
	struct zkl_watch watch;
	struct zkl_lockreq *lr;
};

static int lr_watch_one(struct zkl_lockreq *lr, const char *name)
{
	char path[NAMES_MAX_NODE_PATH + 1];
	int err = lr_child_path(lr, name, path);

	if (err < 0)
		return err;
	lr->watch.wants_marks = lr->mode == ZKL_MODE_LEASE;
	err = session_watch_locked(lr->s, path, &lr->watch);
	if (err == 0)
		lr_hold(lr, LR_HOLD_WATCH);
	return err;
}

/* Forget the first waiter's watches; the AHEAD hold stays with the
 * caller. */
static void lr_drop_ahead(struct zkl_lockreq *lr)
{
	for (size_t i = 0; i < lr->nahead; i++)
		watchtab_remove(&lr->s->watches, &lr->ahead[i].watch);
	free(lr->ahead);
	lr->ahead = NULL;
	lr->nahead = 0;
}

/* One lease ahead changed: the others no longer matter, and the array's
 * hold passes to the request's own handler, which looks again. */
static void lr_ahead_fired(struct zkl_watch *w, const char *path,
			   enum zkl_watch_event ev, struct zkl_link *notify)
{
	struct zkl_lockreq *lr =
		ZKL_CONTAINER_OF(w, struct lr_ahead, watch)->lr;

	lr_drop_ahead(lr); /* frees w */
	lr_pass_locked(lr, LR_HOLD_AHEAD, LR_HOLD_WATCH);
	lr->watch.fired_locked(&lr->watch, path, ev, notify);
}

static int lr_watch_ahead(struct zkl_lockreq *lr, size_t me)
{
	const struct zkl_queue *q = lr->q;
	size_t n = lockrule_count_ahead(q->nodes, q->gone, q->lo, me);
	char path[NAMES_MAX_NODE_PATH + 1];

	assert(!lr->ahead && n > 0);
	lr->ahead = calloc(n, sizeof(*lr->ahead));
	if (!lr->ahead)
		return -ENOMEM;
	lr_hold(lr, LR_HOLD_AHEAD);
	for (size_t i = q->lo; i < me; i++) {
		struct lr_ahead *a = &lr->ahead[lr->nahead];
		int err;

		if (q->gone[i] ||
		    !lockrule_waits_for(lr->mode, q->nodes[i].mode))
			continue;
		assert(lr->nahead < n);
		list_init(&a->watch.link);
		a->watch.fired_locked = lr_ahead_fired;
		a->lr = lr;
		err = lr_child_path(lr, q->nodes[i].name, path);
		if (err == 0)
			err = session_watch_locked(lr->s, path, &a->watch);
		if (err < 0) {
			lr_unwatch_to(lr, LR_UNWATCH_AHEAD);
			return err;
		}
		lr->nahead++;
	}
	return 0;
}

static int lr_watch_limit(struct zkl_lockreq *lr)
{
	int err;

	/* One given up already lists only to find its node (a lost create
	 * reply): a watch set now would keep it alive until the limit
	 * changes. */
	if (lr->mode != ZKL_MODE_LEASE || lr->outcome != LR_PENDING ||
	    lr->limit_watch.entry)
		return 0;
	/* The get that arms it is sent with the listing (queue.c). */
	err = session_watch_armed_locked(lr->s, lr->dir, &lr->limit_watch);
	if (err == 0)
		lr_hold(lr, LR_HOLD_LIMIT);
	return err;
}

/* Each watch armed keeps a hold of its own, dropped with it. */
static void lr_unwatch_to(struct zkl_lockreq *lr, enum lr_unwatching upto)
{
	const struct {
		struct zkl_watch *watch;
		enum lr_hold hold;
	} armed[] = {
		[LR_UNWATCH_AHEAD] = { &lr->watch, LR_HOLD_WATCH },
		[LR_UNWATCH_WAITS] = { &lr->limit_watch, LR_HOLD_LIMIT },
		[LR_UNWATCH_ALL] = { &lr->own_watch, LR_HOLD_OWN },
	};

	if (lr->ahead) {
		lr_drop_ahead(lr);
		lr_drop_locked(lr, LR_HOLD_AHEAD);
	}
	for (size_t i = 0; i <= upto; i++)
		if (watchtab_remove(&lr->s->watches, armed[i].watch))
			lr_drop_locked(lr, armed[i].hold);
}

void lr_deadlock_locked(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	if (lr->phase == PH_WATCHING)
		lr_to(lr, PH_IDLE);
	lr_finish_locked(lr, -EDEADLK, notify);
}

/* The get that set the own watch: the node's data (is it the revocation
 * mark?), or no watch set: the node is gone (a waiter fails, a holder
 * loses), or the connection broke (set it again once connected:
 * lr_own_fired's UNKNOWN), for every watch of that path.  Its answer
 * comes before any news of a later change: a grant the view alone gave
 * waits for it (grant_awaits_own). */
static void lr_on_own_armed(int rc, const char *value, int len,
			    const struct Stat *st, const void *data)
{
	struct zkl_lockreq *lr = (struct zkl_lockreq *)data;
	struct zkl_session *s = lr->s;
	struct lr_revoke_report report = { 0 };
	struct zkl_link notify;

	session_enter(s, &notify);
	lr_trace(lr, TRACE_OWN_WATCHED);
	if (rc == ZOK && lr->own_watch.entry &&
	    revoke_is_break(value, len > 0 ? (size_t)len : 0)) {
		lr_break_seen_locked(lr, &notify);
	} else if (rc == ZOK && lr->own_watch.entry) {
		lr->own_known = 1;
		lr->own_conn = s->watches.connection;
		lr->own_version = st ? st->version : -1;
		/* A waiter's mark is told at its grant (lr_grant). */
		lr_revoke_check_locked(lr, value, len, &report);
		if (lr->grant_awaits_own && lr->phase == PH_WATCHING &&
		    lr->outcome == LR_PENDING)
			lr_evaluate(lr, 0, &notify);
	} else if (rc != ZOK) {
		session_wake_path_locked(s, lr->node,
					 rc == ZNONODE ? WATCH_VANISHED
						       : WATCH_UNKNOWN,
					 &notify);
	}
	lr_end_completion(lr, &notify);
	lr_revoke_tell(&report);
}

/* Does lr want its own node watched, and is it not yet?  A peer's lock
 * taken on a lease's way is let go at its grant; a lock that an heir
 * replaces sees its own node deleted by the heir. */
static int lr_wants_own_watch(const struct zkl_lockreq *lr)
{
	return lr_has_node(lr) && lr->outcome != LR_FINISHED && !lr->lost &&
	       !(lr->kind == LR_PEER_MUTEX && lr_node_holds(lr)) &&
	       !lr->passing && !lr->own_watch.entry;
}

void lr_watch_own(struct zkl_lockreq *lr)
{
	struct zkl_session *s = lr->s;
	int err;

	if (!lr_wants_own_watch(lr))
		return;
	err = watchtab_add(&s->watches, lr->node, &lr->own_watch);
	/* Our own get even when a waiter of ours behind it set the watch
	 * already: its answer is what proves the node (own_known), and it
	 * carries the data, where a request to let go may be already. */
	if (err >= 0) {
		lr->own_known = 0;
		lr_hold(lr, LR_HOLD_CALL);
		if (session_awget_locked(s, lr->node, lr_on_own_armed, lr) ==
		    ZOK) {
			lr_hold(lr, LR_HOLD_OWN);
			return;
		}
		lr_drop_locked(lr, LR_HOLD_CALL);
		/* No entry may claim a watch nobody asked for. */
		session_watch_undo_locked(s, lr->node, &lr->own_watch, err > 0);
		err = -ENOTCONN;
	}
	/* Unwatched, a deletion or a break mark would go unseen: try
	 * again soon (lr_resume sets it in every phase that wants it). */
	log_msg(LOG_WARNING,
		"%s: cannot watch the lock node (%s): trying again in %d ms",
		lr->node, strerror(-err), LR_WATCH_RETRY_MS);
	lr_defer_for(lr, LR_WATCH_RETRY_MS);
}

void lr_unwatch_all(struct zkl_lockreq *lr)
{
	lr_unwatch_to(lr, LR_UNWATCH_ALL);
}

/*
 * A lock request's loss (lr.h): reported to the daemon once,
 * with its session's end or on its own (a node deleted by another
 * client, the jeopardy), and a waiter queued again on the next session.
 */
/* The report of lr's loss, counted; NULL when out of memory (the loss
 * still shows as EIO: only the report is lost). */
static struct zkl_lost *lr_lost_report(struct zkl_lockreq *lr, const char *why)
{
	struct zkl_lost *item = malloc(sizeof(*item) + lr->datalen);

	lr->s->losses++;
	lr_metrics_ended_locked(lr, 1);
	if (!item)
		return NULL;
	item->node = strdup(lr_has_node(lr) ? lr->node : lr->dir);
	if (!item->node) {
		free(item);
		return NULL;
	}
	item->s = lr->s;
	item->why = why;
	item->len = lr->datalen;
	memcpy(item->data, lr->data, lr->datalen);
	return item;
}

static void lr_report_lost(struct zkl_lockreq *lr, struct zkl_link *lost)
{
	struct zkl_lost *item =
		lr_lost_report(lr, "its ZooKeeper session expired");

	if (item)
		list_add_tail(lost, &item->link);
}

static void lr_lost_notice_run(struct zkl_notice *n)
{
	session_tell_lost(ZKL_CONTAINER_OF(n, struct zkl_lost, notice));
}

void lr_lose_locked(struct zkl_lockreq *lr, const char *why,
		    struct zkl_link *notify)
{
	struct zkl_lost *item;

	assert(lr->outcome == LR_HELD && !lr->lost);
	lr->lost = 1;
	lr_changed_locked(lr); /* holders says lost */
	item = lr_lost_report(lr, why);
	if (item) {
		notice_init(&item->notice, lr_lost_notice_run);
		notice_post(notify, &item->notice);
	}
}

/* Delete the node of a lock taken away here, unless its owner let go of
 * it meanwhile (the release deletes it then). */
static void lr_let_go_locked(struct zkl_lockreq *lr)
{
	if (lr->outcome != LR_HELD || !lr->lost)
		return;
	if (lr->kind == LR_MULTI) {
		ml_delete_together_locked(lr);
	} else if (lr->phase == PH_IDLE && lr_has_node(lr)) {
		lr_unwatch_all(lr);
		lr_delete(lr);
	}
}

struct lr_break {
	struct zkl_notice notice;
	struct zkl_lost *report; /* NULL when out of memory */
	struct zkl_lockreq *lr;  /* with a CALL hold */
};

/* Tell, then let go: the report's hook (on_lost's signal) has returned
 * when the delete is sent. */
static void lr_break_notice_run(struct zkl_notice *n)
{
	struct lr_break *b = ZKL_CONTAINER_OF(n, struct lr_break, notice);
	struct zkl_lockreq *lr = b->lr;
	struct zkl_link notify;

	if (b->report)
		session_tell_lost(b->report);
	free(b);
	session_enter(lr->s, &notify);
	lr_let_go_locked(lr);
	lr_end_completion(lr, &notify);
}

void lr_lose_then_let_go_locked(struct zkl_lockreq *lr, const char *why,
				struct zkl_link *notify)
{
	struct lr_break *b = malloc(sizeof(*b));

	if (b) {
		assert(lr->outcome == LR_HELD && !lr->lost);
		lr->lost = 1;
		lr_changed_locked(lr);
		b->report = lr_lost_report(lr, why);
	} else {
		/* Out of memory: told without waiting for the telling (its
		 * descriptor reads EIO already). */
		lr_lose_locked(lr, why, notify);
	}
	if (lr->kind != LR_MULTI)
		lr_unwatch_all(lr); /* its own delete is no news */
	if (!b) {
		lr_let_go_locked(lr);
		return;
	}
	b->lr = lr;
	lr_hold(lr, LR_HOLD_CALL);
	notice_init(&b->notice, lr_break_notice_run);
	notice_post(notify, &b->notice);
}

void lr_requeue_locked(struct zkl_lockreq *lr)
{
	lr_to(lr, PH_NEW);
	lr->node[0] = '\0'; /* its node went with the session */
	lr->grant_deferred = 0;
	if (list_linked(&lr->member.resume)) {
		/* Waiting for a time (lr_defer_for): for the next session
		 * instead, with the same hold. */
		list_del(&lr->member.resume);
	} else {
		lr_hold(lr, LR_HOLD_RESUME);
	}
	list_add_tail(&lr->s->resume, &lr->member.resume);
}

void lr_end_with_session_locked(struct zkl_lockreq *lr, struct zkl_link *lost)
{
	lr_undefer_locked(lr);
	if (lr->outcome == LR_HELD && !lr->lost) {
		lr->lost = 1;
		/* A peer's lock held by a lease on its way is no lock of the
		 * owner's: the lease queues again (peerlease.c).  A member's
		 * loss is its multi-lock's, reported once by it. */
		if (lr_is_owners_lock(lr))
			lr_report_lost(lr, lost);
	}
	lr_to(lr, PH_GONE);
}

/*
 * A downgrade (lockreq_start_in_place): a read request takes
 * the place of a write lock its owner holds, so that no writer queued
 * behind that lock gets in between (Curator's CURATOR-621 fix, 5.5).
 *
 * One transaction creates the heir's node, not sequential, named with
 * the write node's own number and tag, and deletes the write node.  The
 * number puts the heir in the write node's place in every listing
 * (lockrule.h: for one age, the write node first, so the heir stands
 * right behind where it stood, and ahead of every node behind it).  The
 * transaction sets the write node's data before deleting it: its
 * watchers, whose views of the queue are older than the heir, hear of a
 * change rather than a deletion, and list again.  The heir
 * holds at once: nothing a reader waits for stood ahead of a held write
 * lock.
 *
 * The heir keeps its write lock's fencing token: it is the same hold
 * going on, above every earlier holder's and below every later one's
 * (a writer queued behind has a greater czxid than the write node, and
 * a smaller one than the heir's node).  Its node's data says so, in a
 * "token" line, for holders on every host (lr_heir_data).
 *
 * After a lost reply the heir is looked for by its name (lr_recover):
 * found, the transaction happened; not found, it did not, and is sent
 * again while the write lock still holds.
 */
struct lr_heir_txn {
	struct lr_call call; /* the request, and the step it is sent for */
	zoo_op_t ops[3];
	zoo_op_result_t results[3];
	struct Stat set_stat; /* room for the set's answer (unused) */
	char *data;           /* the heir's node data */
	char created[NAMES_MAX_NODE_PATH + 1];
};

static int lr_heir_can_take(const struct zkl_lockreq *from)
{
	/* A lock of several owners stays theirs (lockreq_share). */
	return from->owners == 1 && lr_heir_can_share(from);
}

static int lr_heir_can_share(const struct zkl_lockreq *from)
{
	return from->mode == ZKL_MODE_WRITE && from->outcome == LR_HELD &&
	       !from->lost && !from->grant_deferred && from->phase == PH_IDLE &&
	       from->kind == LR_PLAIN && lr_has_node(from);
}

int lr_heir_data(int64_t token, const void *data, size_t len, char **out,
		 size_t *outlen)
{
	char line[32];
	int n = snprintf(line, sizeof(line), "token %" PRId64 "\n", token);

	*out = malloc(len + (size_t)n);
	if (!*out)
		return -ENOMEM;
	memcpy(*out, data, len);
	memcpy(*out + len, line, (size_t)n);
	*outlen = len + (size_t)n;
	return 0;
}

static void lr_heir_settle(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	if (!lr->heir_of)
		return;
	lr->czxid = lr->heir_of->czxid;
	lr->inherited = 1;
	/* Asked to let go, it still is: the same hold goes on. */
	lr->revoke_asked = lr->heir_of->revoke_asked;
	lr->revoke_told = lr->heir_of->revoke_told;
	lr->revoke_ms = lr->heir_of->revoke_ms;
	lr->granted_ms = lr->heir_of->granted_ms;
	lr->maxhold_ask_ms = lr->heir_of->maxhold_ask_ms;
	lr->maxhold_break_ms = lr->heir_of->maxhold_break_ms;
	lr_to(lr->heir_of, PH_GONE);             /* nothing left to delete */
	lr_metrics_ended_locked(lr->heir_of, 0); /* the write lock's hold */
	lr_heir_detach_locked(lr, notify);
}

static void lr_heir_on_sent(int rc, const void *data)
{
	struct lr_heir_txn *t = (struct lr_heir_txn *)data;
	struct zkl_lockreq *lr = t->call.lr;
	struct zkl_session *s = lr->s;
	struct zkl_link notify;

	session_enter(s, &notify);
	if (!lr_call_current(&t->call)) {
		/* The session expired under us: nothing to do. */
	} else if (rc == ZOK) {
		lr_heir_settle(lr, &notify);
		if (lr->outcome == LR_FINISHED) {
			lr_delete(lr);
		} else {
			lr_to(lr, PH_IDLE);
			log_msg(LOG_DEBUG, "%s takes its write lock's place",
				lr->node);
			lr_tell_locked(lr, 0, &notify);
			lr_watch_own(lr);
		}
	} else if (zkerr_is_connection_loss(rc)) {
		/* Done or not?  The heir's name tells, once connected. */
		lr_to(lr, PH_RECOVERING);
		if (lr->try_only)
			lr_finish_locked(lr, -EAGAIN, &notify);
		lr_defer(lr, &notify);
	} else {
		/* Atomic: nothing happened.  The write node is gone (lost to
		 * another client) or cannot be touched: the lock is not ours
		 * to pass on. */
		log_msg(LOG_WARNING,
			"%s: cannot take the place of %s (%s): the downgrade "
			"fails",
			lr->node, lr->heir_of ? lr->heir_of->node : "its lock",
			zerror(rc));
		lr->node[0] = '\0';
		lr_to(lr, PH_GONE);
		if (rc == ZNONODE && lr->heir_of) /* deleted by another */
			lr_metrics_ended_locked(lr->heir_of, 1);
		lr_finish_locked(lr, rc == ZNONODE ? -EIO : zkerr_errno(rc),
				 &notify);
	}
	lr_end_completion(lr, &notify);
	free(t->data);
	free(t);
}

static int lr_heir_send(struct zkl_lockreq *lr)
{
	struct zkl_lockreq *from = lr->heir_of;
	struct lr_heir_txn *t;
	size_t len;
	int n, rc;

	if (!lr_heir_can_take(from))
		return -EIO; /* lost while the connection was down */
	/* The write node's number, as ZooKeeper wrote it, after our prefix
	 * (the same tag, lr_use_tag). */
	n = snprintf(lr->node, lr->nodesize, "%s%s", lr->create_path,
		     from->node + strlen(from->create_path));
	if (n < 0 || (size_t)n >= lr->nodesize) {
		lr->node[0] = '\0';
		return -ENAMETOOLONG;
	}
	t = calloc(1, sizeof(*t));
	if (!t || lr_heir_data(from->czxid, lr->data, lr->datalen, &t->data,
			       &len) < 0) {
		free(t);
		return -ENOMEM;
	}
	t->call.lr = lr;
	zoo_create_op_init(&t->ops[0], lr->node, t->data, (int)len, lr->s->acl,
			   ZOO_EPHEMERAL, t->created, sizeof(t->created));
	zoo_set_op_init(&t->ops[1], from->node, "", 0, -1, &t->set_stat);
	zoo_delete_op_init(&t->ops[2], from->node, -1);
	rc = zoo_amulti(lr->s->zh, 3, t->ops, t->results, lr_heir_on_sent, t);
	if (rc != ZOK) {
		free(t->data);
		free(t);
		return zkerr_errno(rc);
	}
	lr_hold(lr, LR_HOLD_CALL);
	lr_to(lr, PH_CREATING);
	lr_call_sent(&t->call);
	from->passing = 1;
	lr_unwatch_all(from); /* its node's changes are ours now */
	return 0;
}

/*
 * A lock request's node: the owner's start and release,
 * the create, and after a lost create reply the search for the node by
 * its tag.
 */
static void lr_on_created(int rc, const char *name, const struct Stat *st,
			  const void *data);
static void lr_on_checked(int rc, const struct Stat *st, const void *data);

int lr_queue_create(struct zkl_lockreq *lr)
{
	struct lr_call *c;
	int rc;

	if (lr_kinds[lr->kind]->create) /* a member: by its multi-lock */
		return lr_kinds[lr->kind]->create(lr);
	if (lr->heir_of) /* a downgrade: in its write lock's place */
		return lr_heir_send(lr);
	c = lr_call_new(lr);
	if (!c)
		return -ENOMEM;
	lr->create_sent_us = session_metrics_now_us();
	lr_trace(lr, TRACE_CREATE_SENT);
	rc = zoo_acreate2(lr->s->zh, lr->create_path, lr->data,
			  (int)lr->datalen, lr->s->acl,
			  ZOO_EPHEMERAL_SEQUENTIAL, lr_on_created, c);
	if (rc != ZOK) {
		lr_call_unsent(c);
		return zkerr_errno(rc);
	}
	lr->create_attempts++;
	lr_to(lr, PH_CREATING);
	lr_call_sent(c);
	/* Pipelined: the session orders our requests, so a listing sent now
	 * already contains the node created just before it.  If this fails,
	 * the create's reply lines up again. */
	lr_line_up(lr);
	return 0;
}

static void lr_create(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	int err = lr_queue_create(lr);

	if (err == -ENOTCONN && !lr->try_only) {
		/* The handle has ended: its event requeues us (see
		 * lr_first_step). */
		lr_to(lr, PH_NEW);
		return;
	}
	if (err == -ENOTCONN)
		err = -EAGAIN; /* a try is answered now */
	if (err < 0) {
		lr_to(lr, PH_GONE);
		lr_finish_locked(lr, err, notify);
	}
}

int lr_start_with_locked(struct zkl_lockreq *lr,
			 int (*first_step)(struct zkl_lockreq *lr))
{
	int err;

	ZKL_ASSERT_HELD(&lr->s->lock);
	err = lr->outcome != LR_PENDING ? -ECANCELED
	      : lr->s->dead             ? -ENOTCONN
	      : lr->try_only && !session_is_connected_locked(lr->s)
		      ? -EAGAIN /* a try is answered now, not on reconnection */
		      : first_step(lr);
	if (err < 0 && err != -ECANCELED) {
		lr->outcome = LR_FINISHED;
		lr_to(lr, PH_GONE);
	}
	return err;
}

static int lr_first_step(struct zkl_lockreq *lr)
{
	struct zkl_session *s = lr->s;
	int err;

	if (!lr->q && !(lr->q = queue_get_locked(s, lr->dir)))
		return -ENOMEM;
	session_join_locked(s, &lr->member);
	if (s->state == ZKL_CONN_EXPIRED || s->draining) {
		/* Between two sessions: queue on the next one. */
		lr_hold(lr, LR_HOLD_RESUME);
		list_add_tail(&s->resume, &lr->member.resume);
		return 0;
	}
	err = lr_queue_create(lr);
	if (err == -ENOTCONN)
		/* The handle has ended and its event is on its way: that
		 * event requeues every live request on the next session (or
		 * fails them, if there is none).  A try is answered now. */
		return lr->try_only ? -EAGAIN : 0;
	return err;
}

int lr_start_locked(struct zkl_lockreq *lr)
{
	return lr_start_with_locked(lr, lr_first_step);
}

/* The node of a sub-request is gone: its parent's owner may be told that
 * the parent's is (lockreq_release_then) once every one is. */
static void lr_sub_gone(void *arg)
{
	struct zkl_lockreq *lr = arg;
	struct zkl_session *s = lr->s;
	struct zkl_link notify;

	session_enter(s, &notify);
	lr_begin_entry_locked(lr, LR_HOLD_SUB_GONE);
	assert(lr->subs_leaving > 0);
	lr->subs_leaving--;
	lr_end_entry_locked(lr, &notify);
	session_leave(s, &notify);
}

void lr_release_sub_locked(struct zkl_lockreq *lr, struct zkl_lockreq *sub,
			   struct zkl_link *notify)
{
	lr->subs_leaving++;
	lr_hold(lr, LR_HOLD_SUB_GONE);
	sub->gone_fn = lr_sub_gone;
	sub->gone_arg = lr;
	lr_release_locked(sub, notify);
}

static void lr_check_owner(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	struct lr_call *c;
	int rc = ZSYSTEMERROR; /* no record, no call */

	lr_to(lr, PH_CHECKING);
	c = lr_call_new(lr);
	if (c)
		rc = zoo_aexists(lr->s->zh, lr->node, 0, lr_on_checked, c);
	if (rc == ZOK)
		return lr_call_sent(c);
	if (c)
		lr_call_unsent(c);
	lr_to(lr, PH_GONE);
	lr_finish_locked(lr, zkerr_errno(rc), notify);
}

static void lr_on_created(int rc, const char *name, const struct Stat *st,
			  const void *data)
{
	struct lr_call *c = (struct lr_call *)data;
	struct zkl_lockreq *lr = c->lr;
	struct zkl_session *s = lr->s;
	struct zkl_link notify;
	int err;

	session_enter(s, &notify);
	if (!lr_call_current(c)) /* the session expired under us */
		return lr_call_end(c, &notify);
	session_metrics_answered_locked(s, ZKL_OP_CREATE, rc,
					lr->create_sent_us);
	lr_trace(lr, TRACE_CREATED);
	switch (lr_create_reply_locked(lr, rc, &err)) {
	case LR_CREATED:
		lr->czxid = st->czxid;
		session_note_server_time_locked(s, st->ctime);
		if (lr_set_node(lr, name, NULL) < 0) {
			lr_to(lr, PH_GONE);
			lr_finish_locked(lr, -ENAMETOOLONG, &notify);
			/* the node dies with the session; nothing better */
		} else if (lr->outcome == LR_FINISHED) {
			lr_delete(lr);
		} else {
			lr_to(lr, PH_LISTING);
			if (!list_linked(&lr->qwait.link))
				lr_list(lr, &notify);
		}
		break;
	case LR_CREATED_MAYBE:
		/* A try is answered now; once connected, the node is found
		 * by its tag and deleted, as for a cancel. */
		if (lr->try_only)
			lr_finish_locked(lr, -EAGAIN, &notify);
		lr_defer(lr, &notify);
		break;
	case LR_CREATE_AGAIN:
		lr_create(lr, &notify);
		break;
	case LR_CREATE_FAILED:
		lr_finish_locked(lr, err, &notify);
		break;
	}
	lr_call_end(c, &notify);
}

enum lr_created lr_create_reply_locked(struct zkl_lockreq *lr, int rc, int *err)
{
	ZKL_ASSERT_HELD(&lr->s->lock);
	*err = 0;
	if (rc == ZOK)
		return LR_CREATED;
	if (zkerr_is_connection_loss(rc)) {
		lr_to(lr, PH_RECOVERING);
		lr->maybe_stray = 1;
		return LR_CREATED_MAYBE;
	}
	if (rc == ZNONODE && lr->outcome == LR_PENDING &&
	    lr->create_attempts < LR_MAX_CREATE_ATTEMPTS) {
		*err = session_create_parents_locked(lr->s, lr->dir);
		if (*err == 0)
			return LR_CREATE_AGAIN;
	} else {
		*err = zkerr_errno(rc);
	}
	lr_to(lr, PH_GONE);
	return LR_CREATE_FAILED;
}

/* After a lost create reply: is there a node with our GUID?  An heir
 * shares its tag with its write lock: it looks for its own name. */
static void lr_recover(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	ssize_t found = lr->heir_of ? queue_find(lr->q, lr_node_name(lr))
				    : lockrule_find_tag(lr->q->nodes, lr->q->n,
							0, lr->guid);

	if (found < 0) {
		lr->node[0] = '\0';
		if (lr->outcome == LR_FINISHED) {
			/* given up meanwhile: nothing to delete, and the limit
			 * watch its listing set is not wanted either */
			lr_to(lr, PH_GONE);
			lr_unwatch_all(lr);
		} else {
			lr_create(lr, notify);
		}
		return;
	}
	if (lr_set_node(lr, lr->dir, lr->q->nodes[found].name) < 0) {
		lr_to(lr, PH_GONE);
		lr_finish_locked(lr, -ENAMETOOLONG, notify);
		return;
	}
	lr_check_owner(lr, notify);
}

static void lr_on_checked(int rc, const struct Stat *st, const void *data)
{
	struct lr_call *c = (struct lr_call *)data;
	struct zkl_lockreq *lr = c->lr;
	struct zkl_session *s = lr->s;
	struct zkl_link notify;

	session_enter(s, &notify);
	if (!lr_call_current(c)) {
		/* stale */
	} else if (zkerr_is_connection_loss(rc)) {
		lr_defer(lr, &notify);
	} else if (rc == ZOK && st->ephemeralOwner == s->client_id) {
		lr->czxid = st->czxid;
		lr_heir_settle(lr, &notify);
		if (lr_kinds[lr->kind]->found && lr->outcome == LR_PENDING)
			lr_kinds[lr->kind]->found(lr, &notify); /* may let go */
		if (lr->outcome == LR_FINISHED) {
			lr_delete(lr);
		} else {
			lr_to(lr, PH_LISTING);
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
			lr_to(lr, PH_GONE);
		else
			lr_create(lr, &notify);
	} else {
		lr_to(lr, PH_GONE);
		lr_finish_locked(lr, zkerr_errno(rc), &notify);
	}
	lr_call_end(c, &notify);
}

/*
 * What a lock request does with a listing of its queue:
 * hold, fail, or watch what can unblock it (the file's top says the two
 * variables, outcome and phase, and doc/design.md for the diagram).
 */
static void lr_grant(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	lr_to(lr, PH_IDLE);
	lr_unwatch_to(lr, LR_UNWATCH_WAITS); /* its own node stays watched */
	if (lr->mode == ZKL_MODE_LEASE) {
		queue_mark_granted(lr->q, lr_node_name(lr));
		lr_mark(lr);
	}
	lr_tell_locked(lr, 0, notify);
	lr_revoke_post_locked(lr, notify); /* a mark seen while it waited */
	/* A waiter watches its node already; one that did not wait, a
	 * moment later if it still holds then (lr_resume). */
	if (lr_wants_own_watch(lr))
		lr_defer_for(lr, LR_OWN_WATCH_AFTER_MS);
}

/* A lease whose limit could not be read with its listing. */
static void lr_limit_unknown(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	int err = lr->q->limit_err;

	if (err == -ENOENT || err == -ENODATA) {
		/* The resource appeared between the get and the listing, or
		 * the listing had no get with it: read it with the next. */
		lr_to(lr, PH_LISTING);
		lr_list(lr, notify);
		return;
	}
	if (err == -EBADMSG)
		log_msg(LOG_ERR,
			"%s: its data is not a limit (set one with "
			"MOUNT/<resource>/limit)",
			lr->dir);
	lr_to(lr, PH_IDLE);
	lr_finish_locked(lr, err == -EBADMSG ? -EIO : err, notify);
}

/* Look at the queue (the session's view of it): held, or watch what can unblock
 * us -- the one node ahead, or for the first waiter of a semaphore every lease
 * ahead. A grant needs our node to be there as late as the news that cleared
 * the way.  A listing just back shows both at once.  The view with nodes marked
 * gone since does not: another client may have deleted our node meanwhile, and
 * the next waiter, on any host, be granted too.  Our own watch is set before
 * the first watch on a node ahead, and so before any news that can clear the
 * way from the view, and ZooKeeper tells a client of changes in the order they
 * happened, so once its get is back (own_known) a deletion of our node would
 * have been told first (lr_own_fired).  Until then the grant waits for that
 * answer. */
static void lr_evaluate(struct zkl_lockreq *lr, int listed,
			struct zkl_link *notify)
{
	struct zkl_queue *q = lr->q;
	ssize_t me = queue_find(q, lr_node_name(lr));
	ssize_t ahead = -1;
	int all = 0, err;

	if (lr->maybe_stray)
		lr_delete_strays(lr, me);
	if (me < 0) {
		/* Not in a listing taken after it was made: deleted by another
		 * client while we queued.  Should it be there after all, it
		 * must not block the queue: the finish deletes it. */
		log_msg(LOG_WARNING,
			"lock node %s is not in its queue's listing (deleted "
			"by another client?): deleting it, the request fails",
			lr->node);
		lr_finish_locked(lr, -EIO, notify);
		return;
	}
	if (lr->mode != ZKL_MODE_LEASE) {
		ahead = queue_pick_watch(q, (size_t)me);
	} else if (q->limit_err < 0) {
		lr_limit_unknown(lr, notify);
		return;
	} else {
		switch (lockrule_lease(q->nodes, q->gone, q->granted, q->lo,
				       (size_t)me, q->limit, &ahead)) {
		case LOCKRULE_LEASE_HOLD:
			ahead = -1;
			break;
		case LOCKRULE_LEASE_AHEAD:
			all = 1;
			break;
		case LOCKRULE_LEASE_ONE:
			break;
		}
	}
	lr->grant_awaits_own = 0;
	if (ahead < 0 && !listed && !lr->own_known && lr->own_watch.entry) {
		lr_to(lr, PH_WATCHING);
		lr->grant_awaits_own = 1; /* lr_on_own_armed looks again */
		return;
	}
	if (ahead < 0 && !listed &&
	    (!lr->own_known || lr->own_conn != lr->s->watches.connection)) {
		/* Its own watch could not be set, or proved the node on a
		 * connection since lost (after a reconnection the server
		 * tells missed deletions in no particular order): only a
		 * listing can show its node is still there. */
		lr_to(lr, PH_LISTING);
		lr_list(lr, notify);
		return;
	}
	if (ahead < 0) {
		lr_grant(lr, notify);
		return;
	}
	if (lr->try_only) {
		lr_to(lr, PH_IDLE);
		lr_finish_locked(lr, -EAGAIN, notify);
		return;
	}
	lr_to(lr, PH_WATCHING);
	lr_watch_own(lr); /* first: see above */
	err = all ? lr_watch_ahead(lr, (size_t)me)
		  : lr_watch_one(lr, q->nodes[ahead].name);
	if (err < 0) {
		lr_to(lr, PH_IDLE);
		lr_finish_locked(lr, err, notify);
		return;
	}
}

static void lr_listed(struct zkl_queue_wait *w, int rc, struct zkl_link *notify)
{
	struct zkl_lockreq *lr = ZKL_CONTAINER_OF(w, struct zkl_lockreq, qwait);

	lr_begin_entry_locked(lr, LR_HOLD_LINE);
	if (lr->phase == PH_LISTING)
		lr_trace(lr, TRACE_LISTED);
	if (lr->phase != PH_LISTING && lr->phase != PH_RECOVERING) {
		/* stale: the request moved on (cancelled, expired, or its
		 * create failed and it lined up again) */
	} else if (zkerr_is_connection_loss(rc) && lr->try_only &&
		   lr->phase == PH_LISTING && lr->outcome == LR_PENDING) {
		/* A try is answered now: its node is deleted once connected. */
		lr_finish_locked(lr, -EAGAIN, notify);
	} else if (zkerr_is_connection_loss(rc)) {
		lr_defer(lr, notify);
	} else if (rc == ZOK && lr->phase == PH_LISTING && lr->q->acl_open) {
		lr_to(lr, PH_IDLE); /* so that the finish deletes our node */
		lr_finish_locked(lr, -EACCES, notify);
	} else if (rc == ZOK && lr->phase == PH_LISTING) {
		lr_evaluate(lr, 1, notify);
	} else if ((rc == ZOK || rc == ZNONODE) && lr->phase == PH_RECOVERING) {
		lr_recover(lr, notify);
	} else {
		lr_to(lr, lr->phase == PH_LISTING ? PH_IDLE : PH_GONE);
		lr_finish_locked(lr, rc == ZNONODE ? -EIO : zkerr_errno(rc),
				 notify);
	}
	lr_end_entry_locked(lr, notify);
}

/*
 * What the session calls on a lock request (lr.h): resume
 * after a reconnection, a fired watch, the end of the session, counting.
 */
/* Queue anew on a new session: a fresh GUID, so that nothing of an earlier
 * session (which ZooKeeper deletes anyway) is ever taken for ours. */
static void lr_restart(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	int err;

	/* A downgrade's write lock ended with the old session: this is a
	 * plain read request now. */
	lr_heir_detach_locked(lr, notify);
	err = lr_new_tag(lr);

	if (err < 0) {
		lr_to(lr, PH_GONE);
		lr_finish_locked(lr, err, notify);
		return;
	}
	lr_create(lr, notify);
}

static void lr_resume(struct zkl_member *m, struct zkl_link *notify)
{
	struct zkl_lockreq *lr =
		ZKL_CONTAINER_OF(m, struct zkl_lockreq, member);

	lr_begin_entry_locked(lr, LR_HOLD_RESUME);
	switch (lr->phase) {
	case PH_NEW:
		if (lr->outcome == LR_PENDING)
			lr_restart(lr, notify);
		else
			lr_to(lr, PH_GONE);
		break;
	case PH_RECOVERING:
	case PH_CHECKING:
		lr_to(lr, PH_RECOVERING);
		lr_list(lr, notify);
		break;
	case PH_LISTING:
		lr_watch_own(lr); /* if it could not be set */
		lr_list(lr, notify);
		break;
	case PH_WATCHING:
		lr_watch_own(lr); /* if it could not be set */
		break;
	case PH_DELETING:
		lr_delete(lr);
		break;
	case PH_IDLE:
		if (lr->lost) { /* in jeopardy: after its margin */
			if (!lr->jeopardy_wait)
				lr_delete(lr);
			break;
		}
		if (lr->mode == ZKL_MODE_LEASE && lr_node_holds(lr) &&
		    !lr->marked && !lr->marking)
			lr_mark(lr); /* its reply was lost with the connection */
		lr_watch_own(lr);    /* if it could not be set */
		break;
	case PH_CREATING: /* its reply comes, with the connection's loss */
	case PH_GONE:
		break;
	case PH_MUTEX:
	case PH_COUNTING:
		assert(!"a peer lease's phase in a plain request");
		break;
	}
	lr_end_entry_locked(lr, notify);
}

/*
 * Did the node `name` (a child of our resource) go with nothing in its
 * place, so that the session's view, with it marked gone, is right?
 * A write node may leave an heir: a downgrade creates a read node with
 * its number in the same transaction (lr_heir_send), in its place in the
 * queue, after every listing we have.  That transaction sets the write
 * node's data first, so its watchers hear of a change and list again;
 * a deletion alone, heard on the connection that set the watch, left no
 * heir.  Not so when the deletion was not seen as it happened
 * (WATCH_VANISHED), nor for a Curator read-write lock's write node:
 * Curator 5.5 creates its heir before, and apart from, the delete.
 */
static int lr_gone_for_sure(const char *name, enum zkl_watch_event ev)
{
	struct zkl_node node;

	if (ev != WATCH_GONE && ev != WATCH_VANISHED)
		return 0;
	if (names_parse(name, &node) < 0 || node.mode != ZKL_MODE_WRITE ||
	    node.style == ZKL_STYLE_ZOOKEEPER)
		return 1;
	/* Curator's mutex ("-lock-") has no reader to leave. */
	return ev == WATCH_GONE &&
	       (node.style != ZKL_STYLE_CURATOR || !strstr(name, "-__WRIT__"));
}

static void lr_watch_fired(struct zkl_watch *w, const char *path,
			   enum zkl_watch_event ev, struct zkl_link *notify)
{
	struct zkl_lockreq *lr = ZKL_CONTAINER_OF(w, struct zkl_lockreq, watch);
	size_t dirlen = strlen(lr->dir);
	const char *name = path + dirlen + 1;

	lr_begin_entry_locked(lr, LR_HOLD_WATCH);
	if (lr->phase == PH_WATCHING) {
		lr_to(lr, PH_LISTING);
		if (strncmp(path, lr->dir, dirlen) != 0 ||
		    path[dirlen] != '/') {
			lr_list(lr, notify); /* not a node of ours to name */
		} else if (lr_gone_for_sure(name, ev)) {
			/* No listing needed: see queue.h. */
			queue_mark_gone(lr->q, name);
			lr_evaluate(lr, 0, notify);
		} else if (ev == WATCH_CHANGED && lr->mode == ZKL_MODE_LEASE) {
			/* Set data on a lease is its mark, or a holder's
			 * note: granted either way. */
			queue_mark_granted(lr->q, name);
			lr_evaluate(lr, 0, notify);
		} else {
			lr_list(lr, notify); /* changed, or we cannot tell */
		}
	}
	lr_end_entry_locked(lr, notify);
}

/* The resource's data changed (or went): a new limit.  A waiting lease
 * looks again with it, in the next listing, which reads it. */
static void lr_limit_fired(struct zkl_watch *w, const char *path,
			   enum zkl_watch_event ev, struct zkl_link *notify)
{
	struct zkl_lockreq *lr =
		ZKL_CONTAINER_OF(w, struct zkl_lockreq, limit_watch);

	lr_begin_entry_locked(lr, LR_HOLD_LIMIT);
	(void)path;
	(void)ev;
	if (lr->outcome != LR_PENDING) {
		/* stale */
	} else if (lr->phase == PH_WATCHING || lr->phase == PH_LISTING) {
		lr_unwatch_to(lr, LR_UNWATCH_AHEAD);
		lr_to(lr, PH_LISTING);
		lr_list(lr, notify); /* to the back: a listing in flight may
				      * have read the old limit */
	} else if (lr->phase == PH_CREATING && list_linked(&lr->qwait.link)) {
		/* If this fails, the create's reply lines up again. */
		lr_line_up(lr);
	}
	/* Any other phase lines up later, reading the limit then. */
	lr_end_entry_locked(lr, notify);
}

/* A waiter's node is gone.  Nothing may grant it from now on: it stops
 * watching what is ahead and looks at a fresh listing, which cannot show
 * the node, and so fails it (lr_evaluate: EIO, logged).  Not at once: the
 * news may be our own session's end, told by a server that had not
 * closed the connection yet; then the listing fails too, and the
 * session's end queues the request again (lr_expired). */
static void lr_waiter_gone(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	lr->grant_awaits_own = 0;
	lr_unwatch_to(lr, LR_UNWATCH_AHEAD);
	lr_to(lr, PH_LISTING);
	lr_list(lr, notify);
}

/* A grant held back by a jeopardy, its node deleted by another client:
 * nothing of it is left to delete or let go (a peer lease let its tool's
 * lock go at the grant). */
static void lr_deferred_gone(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	log_msg(LOG_WARNING,
		"lock node %s was deleted by another client before its grant "
		"could be told: the request fails",
		lr->node);
	lr_to(lr, PH_GONE);
	lr_unwatch_all(lr);
	lr_tell_locked(lr, -EIO, notify);
	lr->outcome = LR_FINISHED;
}

/* Our own node changed.  Deleted (not by us: the release takes the watch
 * away first): a waiter fails, a held lock is lost, whoever deleted it,
 * and the next waiter may hold already.  Its data set (a note, a lease's
 * mark, someone else's write): watch again. */
static void lr_own_fired(struct zkl_watch *w, const char *path,
			 enum zkl_watch_event ev, struct zkl_link *notify)
{
	struct zkl_lockreq *lr =
		ZKL_CONTAINER_OF(w, struct zkl_lockreq, own_watch);
	int gone = ev == WATCH_GONE || ev == WATCH_VANISHED;
	int waits = lr->outcome == LR_PENDING &&
		    (lr->phase == PH_LISTING || lr->phase == PH_WATCHING ||
		     (lr->grant_deferred && lr->phase == PH_IDLE));

	lr_begin_entry_locked(lr, LR_HOLD_OWN);
	(void)path;
	lr->own_known = 0;
	if (waits && gone && lr->grant_deferred) {
		lr_deferred_gone(lr, notify);
	} else if (waits && gone) {
		lr_waiter_gone(lr, notify);
	} else if (waits && ev == WATCH_UNKNOWN) {
		/* lr_resume sets it again, a moment later: the get may have
		 * been refused while connected (an ACL changed). */
		lr_defer_for(lr, LR_WATCH_RETRY_MS);
	} else if (waits) {
		lr_watch_own(lr); /* its data set: watch again */
	} else if (!lr_node_holds(lr) || lr->lost || lr->phase != PH_IDLE ||
		   lr->passing) {
		/* released, lost already, or being replaced by its heir */
	} else if (gone) {
		const char *why = "its lock node was deleted by another client";
		log_msg(LOG_WARNING, "lock node %s: %s: the lock is lost",
			lr->node, why);
		lr_to(lr, PH_GONE);
		if (lr_kinds[lr->kind]->lost) {
			lr->lost = 1;
			lr_kinds[lr->kind]->lost(lr, why, notify);
		} else {
			lr_lose_locked(lr, why, notify);
		}
	} else if (ev == WATCH_UNKNOWN) {
		/* No watch is set (the connection broke while setting it,
		 * or the get was refused): set it again a moment later, once
		 * connected (lr_resume). */
		lr_defer_for(lr, LR_WATCH_RETRY_MS);
	} else {
		/* Its data set: a note of ours, a lease's mark, or someone
		 * asking it to let go.  Watch again, and look. */
		lr_watch_own(lr); /* its get reads the data */
	}
	lr_end_entry_locked(lr, notify);
}

void lr_expired(struct zkl_member *m, int requeue, struct zkl_link *lost,
		struct zkl_link *notify)
{
	struct zkl_lockreq *lr =
		ZKL_CONTAINER_OF(m, struct zkl_lockreq, member);

	ZKL_ASSERT_HELD(&lr->s->lock);
	/* Ours, so that dropping the holds of the resume list and the line
	 * cannot free the request under us (a released one may have no
	 * other). */
	lr_hold(lr, LR_HOLD_ENTRY);
	waitgraph_end_locked(lr); /* its record goes with the session */
	lr_unwatch_all(lr);
	if (queue_leave_line_locked(&lr->qwait))
		lr_drop_locked(lr, LR_HOLD_LINE);
	/* Replies still to come from the old handle answer a step moved
	 * past (struct lr_call), and are dropped.  A member queues again
	 * only with its multi-lock's next transaction (multilock.c): it ends
	 * here.  A peer lease waiting for the peer's lock waits on: that
	 * lock, a request of its own, queues again by itself. */
	if (lr->outcome == LR_PENDING && requeue && lr->kind != LR_MEMBER) {
		if (lr->phase != PH_MUTEX)
			lr_requeue_locked(lr);
	} else {
		lr_end_with_session_locked(lr, lost);
		queue_leaving_done(&lr->leaving);
		if (lr_kinds[lr->kind]->has_subs) {
			lr_tell_locked(lr, -ENOTCONN, notify);
			lr->outcome = LR_FINISHED;
		} else {
			lr_finish_locked(lr, -ENOTCONN, notify);
		}
	}
	lr_end_entry_locked(lr, notify);
}

/* The holder is told first; its node goes only a margin later, so that
 * it has that long to act before the next waiter of another host can be
 * granted, even when the session lives. */
int lr_jeopardy(struct zkl_member *m, const struct zkl_jeopardy *j,
		struct zkl_link *notify)
{
	struct zkl_lockreq *lr =
		ZKL_CONTAINER_OF(m, struct zkl_lockreq, member);

	lr_hold(lr, LR_HOLD_ENTRY);
	if (!j->declared)
		lr_tell_deferred_locked(lr, notify);
	/* A peer's lock taken by a lease on its way is no lock of the
	 * owner's: if the session lives, the lease goes on.  A member is
	 * declared lost by its multi-lock, which alone the owner holds; its
	 * margin runs here as any node's. */
	if (j->declared && lr->outcome == LR_HELD && !lr->lost &&
	    lr_is_owners_lock(lr)) {
		lr_lose_locked(lr,
			       "ZooKeeper did not answer in time: the session "
			       "may end before it does (jeopardy)",
			       notify);
		lr_unwatch_all(lr);
		lr->jeopardy_wait = 1;
		lr->lost_ms = j->now;
	} else if (lr->jeopardy_wait && j->now >= lr->lost_ms + j->margin) {
		lr->jeopardy_wait = 0;
		/* Released since: the release deleted it already. */
		if (lr->outcome == LR_HELD && lr->phase == PH_IDLE)
			lr_defer(lr, notify);
	}
	lr_end_entry_locked(lr, notify);
	return lr->jeopardy_wait;
}

const char *lr_lost_node(const struct zkl_member *m)
{
	const struct zkl_lockreq *lr =
		ZKL_CONTAINER_OF(m, struct zkl_lockreq, member);

	ZKL_ASSERT_HELD(&lr->s->lock);
	if (!lr->lost || !lr_has_node(lr) ||
	    (lr->phase != PH_IDLE && lr->phase != PH_DELETING))
		return NULL;
	return lr->node;
}

static const char *lr_shared_node(const struct zkl_member *m, unsigned *owners)
{
	const struct zkl_lockreq *lr =
		ZKL_CONTAINER_OF(m, struct zkl_lockreq, member);

	ZKL_ASSERT_HELD(&lr->s->lock);
	if (lr->owners < 2 || lr->outcome != LR_HELD || !lr_has_node(lr))
		return NULL;
	*owners = lr->owners;
	return lr->node;
}

void lr_count(const struct zkl_member *m, struct zkl_session_stats *st)
{
	const struct zkl_lockreq *lr =
		ZKL_CONTAINER_OF(m, struct zkl_lockreq, member);
	int lease = lr->mode == ZKL_MODE_LEASE;

	ZKL_ASSERT_HELD(&lr->s->lock);
	if (!lr_is_owners_lock(lr))
		return; /* a peer lease's or a multi-lock's step, counted as
			 * that lease or multi-lock */
	if (lr->outcome == LR_HELD && !lr->lost) {
		st->held++;
		st->leases_held += lease;
		st->held_by[lr->mode][lr->metrics_kind]++;
	} else if (lr->outcome == LR_PENDING) {
		st->waiting++;
		st->leases_waiting += lease;
		st->waiting_by[lr->mode][lr->metrics_kind]++;
	}
}

static const struct zkl_member_ops lr_member_ops = {
	.resume_locked = lr_resume,
	.expired_locked = lr_expired,
	.jeopardy_locked = lr_jeopardy,
	.lost_node_locked = lr_lost_node,
	.shared_node_locked = lr_shared_node,
	.count_locked = lr_count,
	.hold_check_locked = lr_hold_check,
};

/* The plain machine: every step its own. */
const struct lr_kind_ops lr_plain_kind = {
	.name = "plain",
	.abandon_locked = lr_abandon_locked,
	.owners_lock = 1,
};

/* A peer's own lock on a peer lease's way: the plain machine with the
 * peer's names; the lease is what its owner holds. */
const struct lr_kind_ops lr_peer_mutex_kind = {
	.name = "peer mutex",
	.abandon_locked = lr_abandon_locked,
	.names = NAMES_RECIPE_MUTEX,
};

const struct lr_kind_ops *const lr_kinds[LR_KINDS] = {
	[LR_PLAIN] = &lr_plain_kind,
	[LR_MULTI] = &multilock_kind,
	[LR_MEMBER] = &multilock_member_kind,
	[LR_PEER_LEASE] = &peerlease_kind,
	[LR_PEER_MUTEX] = &lr_peer_mutex_kind,
};

void lockreq_check_deadlock(struct zkl_lockreq *lr,
			    struct zkl_lockreq *const *pins, size_t n)
{
	struct zkl_link notify;

	session_enter(lr->s, &notify);
	waitgraph_check_locked(lr, pins, n, &notify);
	/* Its caller may hold fs->lock, which owners' callbacks take. */
	assert(list_empty(&notify));
	session_leave(lr->s, &notify);
}

void lockreq_uncheck_deadlock(struct zkl_lockreq *lr)
{
	struct zkl_link notify;

	session_enter(lr->s, &notify);
	waitgraph_end_locked(lr);
	session_leave(lr->s, &notify);
}
