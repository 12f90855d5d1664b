/*
 * waiter.c - parked requests (see waiter.h and lockfile.h): a lock call
 * that waits for its grant, answered from ZooKeeper's completions and
 * never by blocking a FUSE worker; its interrupt, error and cancel; two
 * calls of one holder at once; the waits kept for a restart; and the
 * explicit unlocks that return once ZooKeeper has deleted the nodes.
 */
#include "waiter.h"
#include "deadline.h"
#include "log.h"
#include "reentrant.h"
#include "deadlock.h"
#include "process.h"
#include "sigpend.h"
#include "lockfile.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <syslog.h>

/*
 * Parked lock requests.
 *
 * A waiter has two references while its handler runs: the handler's,
 * dropped when waiter_park returns, and the reply's, owned by whoever
 * answers.  Exactly one of grant (waiter_done), interrupt, the signal
 * poller and unmount answers: the one for which lockreq says so.  The
 * others may only call lockreq_cancel, and only under fs->lock while the
 * waiter is listed in fs->waiters; whoever answers unlists it first, so
 * its lock request is alive for every cancel.
 *
 * A failure is answered once the request's node is gone for every session
 * (lockreq_release_then): an open that failed with EAGAIN or EINTR leaves
 * nothing another host could still see.
 */
/* ---- the state, and the list it names ----------------------------------- */

#define WS(s) (1u << (s))

/* From each state, where a waiter may go next (lockfile.h's diagram). */
static const unsigned waiter_moves[WAITER_ANSWERED + 1] = {
	[WAITER_OFF] = WS(WAITER_PARKED) | WS(WAITER_FAILING) |
		       WS(WAITER_ANSWERED),
	[WAITER_PARKED] = WS(WAITER_OFF) | WS(WAITER_KEPT),
	[WAITER_KEPT] = WS(WAITER_ADOPTING) | WS(WAITER_ENDING) |
			WS(WAITER_EXPIRED),
	[WAITER_ADOPTING] = WS(WAITER_PARKED) | WS(WAITER_OFF),
	[WAITER_ENDING] = WS(WAITER_ANSWERED),
	[WAITER_EXPIRED] = WS(WAITER_ANSWERED),
	[WAITER_FAILING] = WS(WAITER_ANSWERED),
	[WAITER_ANSWERED] = 0,
};

/* The list of the daemon's a waiter in `state` is on, or NULL. */
static struct zkl_link *waiter_list_of(struct zkl_fs *fs,
				       enum waiter_state state)
{
	switch (state) {
	case WAITER_PARKED:
		return &fs->waiters;
	case WAITER_KEPT:
		return &fs->kept;
	case WAITER_FAILING:
		return &fs->failing;
	case WAITER_OFF:
	case WAITER_ADOPTING:
	case WAITER_ENDING:
	case WAITER_EXPIRED:
	case WAITER_ANSWERED:
		break;
	}
	return NULL;
}

/* The one place a waiter's state changes: off the list of the state it
 * leaves, on the list of the one it enters, with what each counts (the
 * poller's watched signals and tries) and the deadlines it starts.
 * fs->lock held. */
static void waiter_move_locked(struct waiter *w, enum waiter_state to)
{
	struct zkl_fs *fs = w->fs;
	enum waiter_state from = w->state;
	struct zkl_link *list;

	ZKL_ASSERT_HELD(&fs->lock);
	assert(waiter_moves[from] & WS(to));
	if (waiter_list_of(fs, from))
		list_del(&w->link);
	if (from == WAITER_PARKED && w->watch_signals) {
		w->watch_signals = 0;
		assert(fs->signal_watched > 0);
		fs->signal_watched--;
	}
	if (from == WAITER_PARKED)
		deadlock_unparked_locked(w, to == WAITER_KEPT);
	if (from == WAITER_PARKED && (w->flags & LOCKREQ_TRY)) {
		assert(fs->tries > 0);
		fs->tries--;
	}
	w->state = to;
	list = waiter_list_of(fs, to);
	if (list) {
		assert(!list_linked(&w->link));
		list_add_tail(list, &w->link);
	}
	switch (to) {
	case WAITER_PARKED:
		deadlock_parked_locked(w);
		if (!(w->flags & LOCKREQ_TRY))
			break;
		/* A try is answered in WAITER_ANSWER_MS, whatever ZooKeeper
		 * does. */
		w->answer_by = deadline_after_ms(WAITER_ANSWER_MS);
		fs->tries++;
		pthread_cond_signal(&fs->signal_poll);
		break;
	case WAITER_KEPT:
		w->keep_until = deadline_after_ms(WAITER_KEEP_MS);
		w->kept_answer = WAITER_NO_ANSWER;
		pthread_cond_signal(&fs->signal_poll); /* it ends them */
		break;
	case WAITER_FAILING:
		/* Answered when the node is gone, or at the deadline if
		 * ZooKeeper does not say (a server that hangs without
		 * closing the connection). */
		w->answer_by = deadline_after_ms(WAITER_ANSWER_MS);
		pthread_cond_signal(&fs->signal_poll);
		break;
	default:
		break;
	}
}

/* The waiter whose interrupt callback this thread is registering: a
 * callback libfuse runs inside that registration only marks the waiter. */
static __thread struct waiter *waiter_registering;

/* lockreq's answer, on the completion thread. */
static void waiter_done(struct zkl_lockreq *lr, int err, void *arg)
{
	struct waiter *w = arg;
	struct zkl_fs *fs = w->fs;
	const char *mode;
	int expired;

	pthread_mutex_lock(&fs->lock);
	if (w->state == WAITER_KEPT || w->state == WAITER_ADOPTING ||
	    w->state == WAITER_EXPIRED) {
		/* Its caller was told EINTR and has not asked again: the
		 * answer waits for the call again (waiter_adopt), a grant
		 * only WAITER_KEEP_GRANTED_MS, not to hold the lock from the
		 * others for long; one given up already ends here. */
		expired = w->state == WAITER_EXPIRED;
		w->kept_answer = err;
		if (err == 0 && w->state == WAITER_KEPT)
			waiter_keep_granted_locked(w);
		pthread_mutex_unlock(&fs->lock);
		if (expired)
			waiter_end_kept(w);
		return;
	}
	/* Unlisted first: an interrupt from now on finds nothing to do. */
	if (w->state == WAITER_PARKED)
		waiter_move_locked(w, WAITER_OFF);
	/* A grant either fails here, or is counted until it has handed its
	 * lock to a lock file, where the unmount finds it: none slips
	 * between the unmount's two steps (lockfile_shutdown_all). */
	if (err == 0 && fs->stopping)
		err = -EIO;
	else if (err == 0)
		fs->granting++;
	pthread_mutex_unlock(&fs->lock);
	/* Waits for an interrupt callback running now; none runs after. */
	fuse_req_interrupt_func(w->req, NULL, NULL);
	if (err != 0)
		return waiter_fail(w, err);
	/* Read before the reply: the holder may release lr at once. */
	mode = names_mode_str(lockreq_mode(lr));
	lockreq_trace(lr, TRACE_ANSWERED, trace_now(), NULL);
	w->lr = NULL;
	w->ops->granted(w, lr);
	waiter_answer_same_holder(w);
	pthread_mutex_lock(&fs->lock);
	if (--fs->granting == 0)
		pthread_cond_broadcast(&fs->grants_done);
	pthread_mutex_unlock(&fs->lock);
	log_msg(LOG_INFO, "granted %s lock on %s to pid %d (%s)", mode,
		w->lf->zpath, (int)w->tid, w->ops->what);
	waiter_put(w);
}

/* A caught signal: answer EINTR now, for the handler to run, and keep
 * the request in its place for the call again (waiter.h).  Returns 0 if
 * w cannot be kept (not started yet, or unmounting): cancel it. */
static int waiter_keep(struct waiter *w)
{
	struct zkl_fs *fs = w->fs;
	/* The answer goes to this call, through a stand-in: once kept, w
	 * may be taken back by the call again before the reply returns. */
	struct waiter answer = { .fs = fs, .ops = w->ops, .tid = w->tid };
	int listed, kept;

	pthread_mutex_lock(&fs->lock);
	listed = w->state == WAITER_PARKED;
	kept = listed && w->started && !fs->stopping;
	if (kept) {
		answer.req = w->req;
		answer.lf = w->lf;
		w->req = NULL;
		waiter_keep_locked(w);
	}
	pthread_mutex_unlock(&fs->lock);
	if (!kept)
		return !listed; /* answered by someone else, or cancel it */
	log_msg(LOG_DEBUG, "pid %d: a caught signal; EINTR, its place kept",
		(int)answer.tid);
	if (answer.ops->failed)
		answer.ops->failed(&answer, -EINTR);
	else
		fs_reply_err(answer.req, EINTR);
	waiter_put(w); /* the reply's */
	return 1;
}

/* A signal reached the waiting thread: cancel the wait if the signal is
 * one that should, keep its place if the process catches it, else keep
 * waiting and look again now and then (the kernel sends no second
 * interrupt for a later signal). */
static void waiter_signalled(struct waiter *w)
{
	struct zkl_fs *fs = w->fs;
	enum sigpend_verdict verdict = sigpend_thread_classify(w->tid);

	if (verdict == SIGPEND_HANDLED && w->in_place)
		verdict = SIGPEND_WAIT;
	switch (verdict) {
	case SIGPEND_WAIT:
		log_msg(LOG_DEBUG,
			"pid %d: signal that does not cancel a wait, ignored",
			(int)w->tid);
		pthread_mutex_lock(&fs->lock);
		if (w->state == WAITER_PARKED && !w->watch_signals) {
			w->watch_signals = 1;
			fs->signal_watched++;
			pthread_cond_signal(&fs->signal_poll);
		}
		pthread_mutex_unlock(&fs->lock);
		return;
	case SIGPEND_HANDLED:
		if (waiter_keep(w))
			return;
		/* fall through */
	case SIGPEND_CANCEL:
		if (waiter_cancel(w))
			waiter_fail(w, -EINTR);
		/* else the grant (or unmount) won; it answers */
		return;
	}
}

/* libfuse's interrupt callback: runs with the request's lock held, maybe
 * inside fuse_req_interrupt_func() of the parking handler itself, where a
 * reply would free the request under libfuse's feet: there it only
 * marks the waiter, and waiter_park acts once the registration is done. */
static void waiter_interrupted(fuse_req_t req, void *arg)
{
	struct waiter *w = arg;

	(void)req;
	if (waiter_registering == w) {
		w->interrupted_early = 1;
		return;
	}
	waiter_signalled(w);
}

/* The call again of a kept wait (waiter.h): `kept` answers the new call
 * `fresh` (a stand-in never started, freed here), from the place it kept,
 * or at once with the answer that came meanwhile. */
static void waiter_adopt(struct waiter *kept, struct waiter *fresh)
{
	struct zkl_fs *fs = kept->fs;
	struct zkl_lockreq *dropped = NULL;
	int answered, answer, holder = 0, holder_answer = 0;

	atomic_fetch_add(&kept->refs, 1); /* ours, while here */
	/* The call again's range, not the one the interrupted call asked:
	 * that call failed (EINTR), and holds nothing. */
	kept->range = fresh->range;
	kept->req = fresh->req;
	lockfile_get(fresh->lf);
	lockfile_put(kept->lf);
	kept->lf = fresh->lf;
	kept->interrupted_early = 0;
	fresh->lr = NULL;
	waiter_put(fresh);
	waiter_put(fresh);
	/* As waiter_park: the callback first, then where answers see it.
	 * An answer meanwhile finds it kept, and waits for us. */
	waiter_registering = kept;
	fuse_req_interrupt_func(kept->req, waiter_interrupted, kept);
	waiter_registering = NULL;
	pthread_mutex_lock(&fs->lock);
	answer = kept->kept_answer;
	answered = answer != WAITER_NO_ANSWER;
	/* Its holder may hold since: answered from that lock, if its own
	 * request can still be given up. */
	if (!answered)
		holder = waiter_holder_answer_locked(kept, &dropped);
	/* Waiting again may close a cycle that formed meanwhile. */
	if (!answered && holder == 0 &&
	    waiter_would_deadlock_locked(kept, lockreq_mode(kept->lr)))
		holder = -EDEADLK;
	if (holder != 0 && lockreq_cancel(kept->lr) != 0)
		holder = 0; /* its answer is on its way: it decides */
	waiter_move_locked(kept, !answered && holder == 0 ? WAITER_PARKED
							  : WAITER_OFF);
	if (holder != 0)
		holder_answer = waiter_holder_answered_locked(kept, holder);
	pthread_mutex_unlock(&fs->lock);
	if (dropped)
		lockreq_release(dropped); /* a conversion's old lock */
	log_msg(LOG_DEBUG, "pid %d asks again: its %s wait keeps its place",
		(int)kept->tid, kept->ops->what);
	if (answered)
		waiter_done(kept->lr, answer, kept);
	else if (holder != 0)
		waiter_fail(kept, holder_answer);
	else if (kept->interrupted_early ||
		 sigpend_thread_classify(kept->tid) != SIGPEND_WAIT)
		waiter_signalled(kept); /* a signal no callback saw */
	waiter_put(kept);
}

void waiter_park(fuse_req_t req, const struct waiter_ops *ops,
		 struct lockfile *lf, enum zkl_mode mode, unsigned flags,
		 uint64_t owner, const struct lockrange *range)
{
	waiter_park_in_place(req, ops, lf, mode, flags, owner, range, NULL);
}

/* A waiter for req on lf, with two references (the caller's and its
 * request's), its asker's identity, its range (fcntl) and, under
 * -o reentrant, its lineage.  NULL when out of memory. */
static struct waiter *waiter_new(fuse_req_t req, const struct waiter_ops *ops,
				 struct lockfile *lf, enum zkl_mode mode,
				 unsigned flags, uint64_t owner,
				 const struct lockrange *range, int in_place)
{
	struct zkl_fs *fs = fuse_req_userdata(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct waiter *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	list_init(&w->link);
	list_init(&w->due_link);
	w->fs = fs;
	w->ops = ops;
	w->req = req;
	w->tid = ctx->pid;
	w->lf = lf;
	w->owner = owner;
	if (range)
		w->range = *range;
	w->flags = flags;
	w->in_place = in_place;
	w->kept_answer = WAITER_NO_ANSWER;
	atomic_init(&w->refs, 2);
	lockfile_get(lf);
	w->identity_len = identity_format(w->identity, sizeof(w->identity),
					  fs->hostname, ctx->pid, ctx->uid);
	if (lf->multi)
		w->identity_len =
			identity_add_multi(w->identity, w->identity_len,
					   sizeof(w->identity), lf->res->name);
	if (identity_holder(w->identity, w->identity_len, &w->taker) < 0)
		w->taker = (struct lineage_proc){ 0 }; /* gone already */
	log_msg(LOG_DEBUG, "pid %d asks a %s lock on %s (%s%s)", (int)w->tid,
		names_mode_str(mode), lf->zpath, ops->what,
		flags & LOCKREQ_TRY ? ", try" : "");
	if (fs->reentrant && mode != ZKL_MODE_LEASE)
		w->nlineage = lineage_of(w->tid, w->lineage, LINEAGE_MAX);
	return w;
}

/* Start w's request (a downgrade's in place of `from`), or answer w at
 * once where its holder holds already.  `from` is let go here unless the
 * downgrade took it, before w is answered. */
static void waiter_start(struct waiter *w, struct zkl_lockreq *from)
{
	struct zkl_fs *fs = w->fs;
	struct zkl_lockreq *dropped = NULL;
	int err = -ECANCELED, answer = 0, answered = 0;

	/* Before the request can be answered, so that an interrupt that
	 * comes later finds the callback; one that came first runs it right
	 * here, and is handled once libfuse has let go of the request. */
	waiter_registering = w;
	fuse_req_interrupt_func(w->req, waiter_interrupted, w);
	waiter_registering = NULL;
	if (w->interrupted_early)
		waiter_signalled(w);
	/* Under fs->lock, and only while listed: a cancel that won
	 * meanwhile (an interrupt on another worker, the signal poller) has
	 * unlisted w and given its lock request up.  Not started if its
	 * holder holds already (a grant came since the caller looked): this
	 * sees that lock, or the grant's waiter_answer_same_holder sees w
	 * started. */
	pthread_mutex_lock(&fs->lock);
	if (w->state == WAITER_PARKED) {
		answer = waiter_holder_answer_locked(w, &dropped);
		answered = answer != 0;
		if (answered) {
			waiter_move_locked(w, WAITER_OFF);
			answer = waiter_holder_answered_locked(w, answer);
		} else if (from) {
			err = lockreq_start_in_place(w->lr, from);
			from = NULL;
		} else {
			err = lockreq_start(w->lr);
		}
	}
	w->started = err == 0;
	pthread_mutex_unlock(&fs->lock);
	if (dropped)
		lockreq_release(dropped); /* a conversion's old lock */
	if (from)
		lockreq_release(from); /* the downgrade did not start */
	if (answered) {
		fuse_req_interrupt_func(w->req, NULL, NULL);
		waiter_fail(w, answer);
	} else if (err < 0 && err != -ECANCELED) {
		/* Nothing was sent, and start has decided the outcome: no
		 * cancel can win now. */
		fuse_req_interrupt_func(w->req, NULL, NULL);
		waiter_fail(w, err);
	}
}

void waiter_park_in_place(fuse_req_t req, const struct waiter_ops *ops,
			  struct lockfile *lf, enum zkl_mode mode,
			  unsigned flags, uint64_t owner,
			  const struct lockrange *range,
			  struct zkl_lockreq *from)
{
	struct zkl_fs *fs = fuse_req_userdata(req);
	struct waiter *w = waiter_new(req, ops, lf, mode, flags, owner, range,
				      from != NULL);
	int64_t asked = trace_now();
	struct zkl_link ending;
	struct waiter *kept;
	int err;

	if (!w) {
		if (from)
			lockreq_release(from);
		/* A stand-in, so the answer goes the usual way. */
		struct waiter failed = { .req = req, .lf = lf, .ops = ops };
		if (ops->failed)
			ops->failed(&failed, -ENOMEM);
		else
			fs_reply_err(req, ENOMEM);
		return;
	}
	list_init(&ending);
	pthread_mutex_lock(&fs->lock);
	kept = waiter_take_kept_locked(fs, w, mode, &ending);
	pthread_mutex_unlock(&fs->lock);
	waiter_end_kept_all(&ending); /* a downgrade's (waiter.h) */
	if (kept) {
		if (from)
			lockreq_release(from);
		return waiter_adopt(kept, w);
	}
	if (w->nlineage) {
		struct zkl_lockreq *held = NULL;
		int verdict = reentrant_take(lf, mode, w->lineage, w->nlineage,
					     &held);
		if (verdict > 0) {
			w->lr = held; /* an unmount's failure lets it go */
			waiter_done(held, 0, w);
		} else if (verdict < 0)
			waiter_fail(w, verdict);
		if (verdict != 0) {
			if (from) /* after: it may be the lock taken again */
				lockreq_release(from);
			waiter_put(w); /* ours */
			return;
		}
	}
	err = lockfile_new_request(lf, mode, flags | LOCKREQ_KIND(ops->kind),
				   w->identity, w->identity_len, waiter_done, w,
				   &w->lr);
	if (err < 0)
		w->lr = NULL;
	else
		lockreq_trace(w->lr, TRACE_ASKED, asked, ops->what);
	if (err == 0)
		err = waiter_list_unless_deadlock(w, mode);
	if (err < 0) {
		if (from)
			lockreq_release(from);
		waiter_fail(w, err);
	} else {
		waiter_start(w, from);
	}
	waiter_put(w); /* ours */
}

void waiter_shutdown_all(struct zkl_fs *fs)
{
	struct zkl_link mine, ending, *l, *next;

	list_init(&mine);
	list_init(&ending);
	pthread_mutex_lock(&fs->lock);
	waiter_take_expired_locked(fs, 1, &ending);
	for (l = fs->waiters.next; l != &fs->waiters; l = next) {
		struct waiter *w = ZKL_CONTAINER_OF(l, struct waiter, link);
		next = l->next;
		if (lockreq_cancel(w->lr) == 0) {
			waiter_move_locked(w, WAITER_OFF);
			list_add_tail(&mine, &w->link);
		}
	}
	pthread_mutex_unlock(&fs->lock);
	while (!list_empty(&mine)) {
		struct waiter *w =
			ZKL_CONTAINER_OF(mine.next, struct waiter, link);
		list_del(&w->link);
		fuse_req_interrupt_func(w->req, NULL, NULL);
		waiter_fail(w, -EIO);
	}
	waiter_end_kept_all(&ending);
}

void waiter_recheck_signals(struct waiter *w)
{
	if (sigpend_thread_classify(w->tid) != SIGPEND_WAIT) {
		log_msg(LOG_DEBUG, "pid %d: a later signal", (int)w->tid);
		waiter_signalled(w);
	}
	waiter_put(w);
}

/*
 * How a parked request (waiter.c) is answered with an
 * error or cancelled, and the list of waits kept for a restart (see
 * waiter.h).
 */
void waiter_put(struct waiter *w)
{
	if (atomic_fetch_sub(&w->refs, 1) != 1)
		return;
	assert(!w->lr); /* adopted by the grant, or released by the failure */
	lockfile_put(w->lf);
	free(w);
}

/* ---- the poller's one scan ---------------------------------------------- */

/* take(l, out, n): the entry l links, looked at (it may leave its list):
 * 1 if taken, put with the reference its answer needs in slot n of out,
 * an array of the entry's type; else 0.  fs->lock held. */
typedef int poll_take_fn(struct zkl_link *l, void *out, size_t n);

/* What the poller answers or looks at again (a failure, a try, an unlock
 * past its deadline; a wait that ignored a signal): the entries of `list`
 * that `take` takes, after the n already in out, up to max in all.
 * Returns how many out holds now.  fs->lock held. */
static size_t poll_take_locked(struct zkl_fs *fs, struct zkl_link *list,
			       poll_take_fn *take, void *out, size_t n,
			       size_t max)
{
	ZKL_ASSERT_HELD(&fs->lock);
	for (struct zkl_link *l = list->next, *next; l != list && n < max;
	     l = next) {
		next = l->next;
		n += (size_t)take(l, out, n);
	}
	return n;
}

/* ---- deadlocks, failures and cancels ------------------------------------ */

int waiter_would_deadlock_locked(const struct waiter *w, enum zkl_mode mode)
{
	return w->owner && !(w->flags & LOCKREQ_TRY) &&
	       deadlock_would_close_locked(w->lf, w->owner, mode);
}

int waiter_list_unless_deadlock(struct waiter *w, enum zkl_mode mode)
{
	struct zkl_fs *fs = w->fs;
	int cycle;

	pthread_mutex_lock(&fs->lock);
	cycle = waiter_would_deadlock_locked(w, mode);
	w->check_candidate = deadlock_candidate_locked(w, mode);
	if (!cycle)
		waiter_move_locked(w, WAITER_PARKED);
	pthread_mutex_unlock(&fs->lock);
	if (cycle)
		log_msg(LOG_DEBUG,
			"pid %d's fcntl wait would close a cycle: EDEADLK",
			(int)w->tid);
	return cycle ? -EDEADLK : 0;
}

static void waiter_reply_failure(struct waiter *w)
{
	log_msg(LOG_DEBUG, "%s by pid %d failed: %s", w->ops->what, (int)w->tid,
		strerror(-w->fail_err));
	if (w->ops->failed)
		w->ops->failed(w, w->fail_err);
	else
		fs_reply_err(w->req, -w->fail_err);
	waiter_put(w); /* the reply's */
}

/* Whoever claims a failing waiter's answer gives it: the node's 'gone',
 * or the poller at the deadline.  fs->lock held. */
static int waiter_claim_reply_locked(struct waiter *w)
{
	if (w->state != WAITER_FAILING)
		return 0;
	waiter_move_locked(w, WAITER_ANSWERED);
	return 1;
}

static void waiter_node_gone(void *arg)
{
	struct waiter *w = arg;
	struct zkl_fs *fs = w->fs;
	int mine;

	pthread_mutex_lock(&fs->lock);
	mine = waiter_claim_reply_locked(w);
	pthread_mutex_unlock(&fs->lock);
	if (mine)
		waiter_reply_failure(w);
	waiter_put(w); /* the node's 'gone' */
}

void waiter_fail(struct waiter *w, int err)
{
	struct zkl_fs *fs = w->fs;
	struct zkl_lockreq *lr = w->lr;

	assert(err <= 0);
	w->fail_err = err;
	w->lr = NULL;
	pthread_mutex_lock(&fs->lock);
	if (w->state == WAITER_PARKED)
		waiter_move_locked(w, WAITER_OFF);
	waiter_move_locked(w, lr ? WAITER_FAILING : WAITER_ANSWERED);
	if (lr)
		atomic_fetch_add(&w->refs, 1); /* the node's 'gone' */
	pthread_mutex_unlock(&fs->lock);
	if (lr)
		lockreq_release_then(lr, waiter_node_gone, w);
	else
		waiter_reply_failure(w);
}

/* A failure past its deadline whose answer is ours now (poll_take_fn). */
static int waiter_take_failed_late(struct zkl_link *l, void *out, size_t n)
{
	struct waiter *w = ZKL_CONTAINER_OF(l, struct waiter, link);

	if (!deadline_reached(&w->answer_by) || !waiter_claim_reply_locked(w))
		return 0;
	atomic_fetch_add(&w->refs, 1); /* alive until answered */
	((struct waiter **)out)[n] = w;
	return 1;
}

/* A try past its deadline, cancelled now (poll_take_fn). */
static int waiter_take_try_late(struct zkl_link *l, void *out, size_t n)
{
	struct waiter *w = ZKL_CONTAINER_OF(l, struct waiter, link);

	if (!(w->flags & LOCKREQ_TRY) || !deadline_reached(&w->answer_by) ||
	    lockreq_cancel(w->lr) != 0)
		return 0;
	/* The cancel's winner answers: the reply's reference. */
	waiter_move_locked(w, WAITER_OFF);
	((struct waiter **)out)[n] = w;
	return 1;
}

size_t waiter_take_late_locked(struct zkl_fs *fs, struct waiter **late,
			       size_t max)
{
	size_t n = poll_take_locked(fs, &fs->failing, waiter_take_failed_late,
				    late, 0, max);

	if (fs->tries > 0)
		n = poll_take_locked(fs, &fs->waiters, waiter_take_try_late,
				     late, n, max);
	return n;
}

void waiter_answer_late(struct waiter *w)
{
	/* A try (taken OFF: the cancel won) or a failure (ANSWERED: its
	 * reply claimed).  A try's request goes, its node once ZooKeeper
	 * answers. */
	int try = w->state == WAITER_OFF;

	if (try) {
		struct zkl_lockreq *lr = w->lr;
		w->lr = NULL;
		lockreq_release(lr);
		fuse_req_interrupt_func(w->req, NULL, NULL);
		w->fail_err = -EAGAIN;
	}
	log_msg(LOG_DEBUG,
		"pid %d's %s: no word from ZooKeeper, answered without it",
		(int)w->tid, w->ops->what);
	waiter_reply_failure(w); /* drops the reply's reference */
	if (!try)
		waiter_put(w); /* the one waiter_take_late_locked took */
}

int waiter_cancel(struct waiter *w)
{
	struct zkl_fs *fs = w->fs;
	int won;

	pthread_mutex_lock(&fs->lock);
	won = w->state == WAITER_PARKED && lockreq_cancel(w->lr) == 0;
	if (won)
		waiter_move_locked(w, WAITER_OFF);
	pthread_mutex_unlock(&fs->lock);
	return won;
}

/* ---- waits kept for a restart ------------------------------------------- */

void waiter_keep_locked(struct waiter *w)
{
	ZKL_ASSERT_HELD(&w->fs->lock);
	waiter_move_locked(w, WAITER_KEPT);
	atomic_fetch_add(&w->refs, 1); /* the kept list's */
}

void waiter_keep_granted_locked(struct waiter *w)
{
	struct timespec until = deadline_after_ms(WAITER_KEEP_GRANTED_MS);

	ZKL_ASSERT_HELD(&w->fs->lock);
	if (deadline_before(&until, &w->keep_until))
		w->keep_until = until;
}

static void waiter_take_kept_one_locked(struct waiter *w,
					struct zkl_link *ending);

struct waiter *waiter_take_kept_locked(struct zkl_fs *fs,
				       const struct waiter *asking,
				       enum zkl_mode mode,
				       struct zkl_link *ending)
{
	ZKL_ASSERT_HELD(&fs->lock);
	for (struct zkl_link *l = fs->kept.next; l != &fs->kept; l = l->next) {
		struct waiter *w = ZKL_CONTAINER_OF(l, struct waiter, link);
		if (w->ops != asking->ops || w->tid != asking->tid ||
		    w->lf->ino != asking->lf->ino ||
		    w->owner != asking->owner || w->flags != asking->flags ||
		    lockreq_mode(w->lr) != mode)
			continue;
		/* flock's holder is the open file description; an open's is
		 * the new one. */
		if (w->ops->holder_lock_locked && !w->owner &&
		    w->lf != asking->lf)
			continue;
		if (asking->in_place) {
			waiter_take_kept_one_locked(w, ending);
			return NULL;
		}
		waiter_move_locked(w, WAITER_ADOPTING);
		return w;
	}
	return NULL;
}

/* Is nr a call that takes a lock here (the call a restart makes again),
 * or a close or an exit (whose FLUSH ends the kept wait itself, and
 * answers once its node is gone: lockfile_flush)?  A 32-bit program's
 * calls have other numbers: it loses its place, never keeps a node. */
static int waiter_is_lock_call(long nr)
{
	return nr == SYS_flock || nr == SYS_fcntl || nr == SYS_openat ||
	       nr == SYS_close || nr == SYS_exit || nr == SYS_exit_group ||
#ifdef SYS_open
	       nr == SYS_open ||
#endif
#ifdef SYS_creat
	       nr == SYS_creat ||
#endif
#ifdef SYS_openat2
	       nr == SYS_openat2 ||
#endif
	       0;
}

/* Has the thread of a kept wait gone on without asking again?  Its call
 * returned EINTR to run the handler; a call that restarts (SA_RESTART, a
 * runtime's loop) is back in a lock call at once, and meanwhile the thread
 * runs (the handler).  Blocked in any other call, or gone, it went on: its
 * place must not stay in the queue while it does (a timeout's handler:
 * flock -w).  Reads /proc: kept waits only. */
static int waiter_went_on(const struct waiter *w)
{
	char text[512];
	const char *state;
	ssize_t n = procfile_read(w->tid, "syscall", text, sizeof(text));
	long nr;

	if (n <= 0) /* gone; else we may not look, and keep it */
		return n == -ENOENT || n == -ESRCH;
	nr = kernelopen_syscall_of(text);
	if (nr >= 0)
		return !waiter_is_lock_call(nr);
	/* Running, or stopped (it keeps its place); or dead, not reaped
	 * yet: its state, after the command's ')', tells. */
	if (procfile_read(w->tid, "stat", text, sizeof(text)) <= 0)
		return 1;
	state = strrchr(text, ')');
	return !state || state[1] != ' ' || state[2] == 'Z' || state[2] == 'X';
}

/* Take kept wait w (off fs->kept) to end: onto `ending`, or marked to end
 * with its answer, which is on its way. */
static void waiter_take_kept_one_locked(struct waiter *w,
					struct zkl_link *ending)
{
	/* Answered, or cancelled now: no answer is on its way. */
	if (w->kept_answer != WAITER_NO_ANSWER || lockreq_cancel(w->lr) == 0) {
		waiter_move_locked(w, WAITER_ENDING);
		list_add_tail(ending, &w->link);
	} else {
		waiter_move_locked(w, WAITER_EXPIRED);
	}
}

void waiter_take_expired_locked(struct zkl_fs *fs, int all,
				struct zkl_link *ending)
{
	ZKL_ASSERT_HELD(&fs->lock);
	for (struct zkl_link *l = fs->kept.next, *next; l != &fs->kept;
	     l = next) {
		struct waiter *w = ZKL_CONTAINER_OF(l, struct waiter, link);
		next = l->next;
		if (all || deadline_reached(&w->keep_until) ||
		    waiter_went_on(w))
			waiter_take_kept_one_locked(w, ending);
	}
}

void waiter_take_kept_of_locked(struct zkl_fs *fs, const struct lockfile *lf,
				pid_t tid, struct zkl_link *ending)
{
	struct lineage_proc closing, waiting;

	ZKL_ASSERT_HELD(&fs->lock);
	if (list_empty(&fs->kept) || lineage_of(tid, &closing, 1) == 0)
		return;
	for (struct zkl_link *l = fs->kept.next, *next; l != &fs->kept;
	     l = next) {
		struct waiter *w = ZKL_CONTAINER_OF(l, struct waiter, link);
		next = l->next;
		if (w->lf != lf)
			continue;
		/* Its thread gone, or of the process that closes. */
		if (lineage_of(w->tid, &waiting, 1) == 0 ||
		    waiting.pid == closing.pid)
			waiter_take_kept_one_locked(w, ending);
	}
}

static void waiter_end_kept_then(struct waiter *w, struct unlock *u)
{
	struct zkl_lockreq *lr = w->lr;

	log_msg(LOG_DEBUG, "pid %d did not ask again: its %s wait is given up",
		(int)w->tid, w->ops->what);
	pthread_mutex_lock(&w->fs->lock);
	waiter_move_locked(w, WAITER_ANSWERED);
	pthread_mutex_unlock(&w->fs->lock);
	w->lr = NULL;
	if (u)
		unlock_add(u, lr);
	else
		lockreq_release(lr);
	waiter_put(w); /* the kept list's */
}

void waiter_end_kept(struct waiter *w)
{
	waiter_end_kept_then(w, NULL);
}

void waiter_end_kept_all_then(struct zkl_link *ending, struct unlock *u)
{
	while (!list_empty(ending)) {
		struct waiter *w =
			ZKL_CONTAINER_OF(ending->next, struct waiter, link);
		list_del(&w->link);
		waiter_end_kept_then(w, u);
	}
}

void waiter_end_kept_all(struct zkl_link *ending)
{
	waiter_end_kept_all_then(ending, NULL);
}

/*
 * Two lock calls of one holder at once (see waiter.h):
 * two processes that flock one inherited descriptor, two threads of a
 * process taking fcntl locks on one file.  Local locks answer the second
 * from the first's grant; queued behind it, it would wait for its own
 * holder for ever.
 */
int waiter_holder_answer_locked(const struct waiter *w,
				struct zkl_lockreq **dropped)
{
	struct zkl_lockreq *held;
	int mode;

	ZKL_ASSERT_HELD(&w->fs->lock);
	if (!w->ops->holder_lock_locked)
		return 0;
	held = w->ops->holder_lock_locked(w);
	mode = held ? lockreq_held_mode(held) : -ENOLCK;
	if (mode < 0)
		return 0;
	if (lockfile_mode_covers(mode, lockreq_mode(w->lr)))
		return 1;
	if (!w->ops->holder_drop_locked)
		return -EDEADLK; /* fcntl: waiting would be for ourselves */
	/* flock: a conversion, as flock(2) does one: the holder's lock goes
	 * (the caller releases it) and w waits its turn behind it. */
	*dropped = w->ops->holder_drop_locked(w);
	return 0;
}

int waiter_holder_answered_locked(struct waiter *w, int answer)
{
	ZKL_ASSERT_HELD(&w->fs->lock);
	assert(answer != 0);
	if (answer < 0)
		return answer;
	/* Granted from the holder's lock: as good as a grant of its own,
	 * so what it asked is the holder's now, before anyone else (another
	 * thread's unlock of the owner) can look. */
	return w->ops->holder_answered_locked
		       ? w->ops->holder_answered_locked(w)
		       : 0;
}

/* The first started waiter of w's holder that its lock answers, unlisted
 * and its request cancelled (its answer, 0 or -errno, in *answer); NULL
 * if none.  A conversion's old lock into *dropped.  fs->lock held. */
static struct waiter *waiter_next_of_holder_locked(struct waiter *w,
						   int *answer,
						   struct zkl_lockreq **dropped)
{
	struct zkl_fs *fs = w->fs;

	for (struct zkl_link *l = fs->waiters.next; l != &fs->waiters;
	     l = l->next) {
		struct waiter *o = ZKL_CONTAINER_OF(l, struct waiter, link);
		/* One not started yet looks for itself when it starts. */
		if (o->ops != w->ops || !o->started ||
		    o->lf->ino != w->lf->ino || o->owner != w->owner ||
		    (!o->owner && o->lf != w->lf))
			continue;
		*answer = waiter_holder_answer_locked(o, dropped);
		if (*dropped)
			return NULL; /* the holder holds nothing now */
		if (*answer != 0 && lockreq_cancel(o->lr) == 0) {
			waiter_move_locked(o, WAITER_OFF);
			*answer = waiter_holder_answered_locked(o, *answer);
			return o;
		}
	}
	return NULL;
}

void waiter_answer_same_holder(struct waiter *w)
{
	struct zkl_fs *fs = w->fs;

	if (!w->ops->holder_lock_locked)
		return;
	/* One at a time: an answered waiter is on no list of ours, where
	 * an interrupt could find it linked. */
	for (;;) {
		struct zkl_lockreq *dropped = NULL;
		struct waiter *o;
		int answer = 0;

		pthread_mutex_lock(&fs->lock);
		o = waiter_next_of_holder_locked(w, &answer, &dropped);
		pthread_mutex_unlock(&fs->lock);
		if (dropped)
			lockreq_release(dropped);
		if (!o)
			return;
		fuse_req_interrupt_func(o->req, NULL, NULL);
		log_msg(LOG_DEBUG,
			"pid %d's %s answered from its holder's lock",
			(int)o->tid, o->ops->what);
		waiter_fail(o, answer); /* its node goes first */
	}
}

/*
 * The waiters that ignored a first signal, looked at again
 * (see waiter.c): the kernel sends one FUSE_INTERRUPT per request; and the
 * waits kept for a restart that did not come, given up (waiter.h).
 */
/* How often waiters that ignored a first signal are looked at again. */
#define WAITER_POLL_MS 100
/* ... and, while there are waits kept for a restart, how often their
 * threads are looked at (has one gone on without asking again?). */
#define WAITER_KEPT_POLL_MS 2

/* A waiter that ignored a signal, to look at again (poll_take_fn). */
static int waiter_take_watched(struct zkl_link *l, void *out, size_t n)
{
	struct waiter *w = ZKL_CONTAINER_OF(l, struct waiter, link);

	if (!w->watch_signals)
		return 0;
	atomic_fetch_add(&w->refs, 1);
	((struct waiter **)out)[n] = w;
	return 1;
}

/*
 * The kernel sends FUSE_INTERRUPT once per request.  When the first
 * signal did not cancel the wait (SIGCHLD of a shell's background job),
 * a later SIGTERM, SIGINT or SIGKILL brings no new interrupt: it only
 * stays pending on the waiting thread.  So those waiters' pending
 * signals are read again every WAITER_POLL_MS; nobody else is polled,
 * and the thread sleeps while there are none, no kept wait, no try and
 * no failure waiting for ZooKeeper (their deadlines are kept here too).
 */
static void *waiter_poller(void *arg)
{
	struct zkl_fs *fs = arg;
	struct waiter *batch[64], *late[64];
	struct unlock *unlocks[64];
	struct zkl_link ending;
	size_t n, nlate, nunlocks;

	list_init(&ending);
	pthread_mutex_lock(&fs->lock);
	while (!fs->stopping) {
		if (fs->signal_watched == 0 && list_empty(&fs->kept) &&
		    fs->tries == 0 && list_empty(&fs->failing) &&
		    list_empty(&fs->unlocks)) {
			pthread_cond_wait(&fs->signal_poll, &fs->lock);
			continue;
		}
		struct timespec t = deadline_after_ms(
			list_empty(&fs->kept) ? WAITER_POLL_MS
					      : WAITER_KEPT_POLL_MS);
		pthread_cond_timedwait(&fs->signal_poll, &fs->lock, &t);
		if (fs->stopping)
			break;
		n = poll_take_locked(fs, &fs->waiters, waiter_take_watched,
				     batch, 0, 64);
		nlate = waiter_take_late_locked(fs, late, 64);
		nunlocks = unlock_take_late_locked(fs, unlocks, 64);
		waiter_take_expired_locked(fs, 0, &ending);
		pthread_mutex_unlock(&fs->lock);
		for (size_t i = 0; i < n; i++)
			waiter_recheck_signals(batch[i]);
		for (size_t i = 0; i < nlate; i++)
			waiter_answer_late(late[i]);
		for (size_t i = 0; i < nunlocks; i++)
			unlock_answer_late(unlocks[i]);
		waiter_end_kept_all(&ending);
		pthread_mutex_lock(&fs->lock);
	}
	pthread_mutex_unlock(&fs->lock);
	return NULL;
}

int waiter_poller_start(struct zkl_fs *fs)
{
	return -pthread_create(&fs->signal_poller, NULL, waiter_poller, fs);
}

void waiter_poller_stop(struct zkl_fs *fs)
{
	pthread_mutex_lock(&fs->lock);
	assert(fs->stopping);
	pthread_cond_signal(&fs->signal_poll);
	pthread_mutex_unlock(&fs->lock);
	pthread_join(fs->signal_poller, NULL);
}

/*
 * Explicit unlocks that return only once ZooKeeper has deleted
 * the nodes (see lockfile.h).
 *
 * A delete queued on this mount's session is ordered before this mount's
 * later requests, but another session may still see the node until the
 * server has applied it.  So flock(LOCK_UN), F_UNLCK, the drop half of a
 * conversion and a FLUSH that ends fcntl locks wait for every delete they
 * caused: after the call returns, no other host's try-lock fails because
 * of that lock.
 */
/* A server that hangs without closing the connection is noticed by the
 * client only after two thirds of the session timeout: an unlock is
 * answered after this long at the latest (a killed process whose exit
 * drops an fcntl lock must not stay in D state); its deletes go on. */
#define UNLOCK_ANSWER_MS 1000

struct unlock {
	struct zkl_link link; /* in fs->unlocks from *_when_done until
			       * answered; fs->lock */
	struct zkl_fs *fs;
	struct timespec answer_by;
	int answered; /* fs->lock */
	fuse_req_t req;
	/* Releases not yet gone, plus one while the unlock is being built
	 * (it cannot complete before unlock_*_when_done), plus one while the
	 * poller answers it.  The last one frees it. */
	atomic_int pending;
	/* The lock to queue once the old one is gone (a conversion), or
	 * park_ops NULL: just reply 0. */
	const struct waiter_ops *park_ops;
	struct lockfile *lf; /* with a reference while parking is due */
	enum zkl_mode mode;
	unsigned flags;
	uint64_t owner;
	struct lockrange range; /* fcntl's, for the lock to queue */
};

struct unlock *unlock_begin(fuse_req_t req)
{
	struct unlock *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->req = req;
	u->fs = fuse_req_userdata(req);
	list_init(&u->link);
	atomic_init(&u->pending, 1);
	return u;
}

/* Answer the unlock: reply, or queue the conversion's new lock. */
static void unlock_answer(struct unlock *u)
{
	struct lockfile *lf = u->lf;
	int stopping;

	if (!u->park_ops)
		return (void)fuse_reply_err(u->req, 0);
	pthread_mutex_lock(&lf->fs->lock);
	stopping = lf->fs->stopping;
	pthread_mutex_unlock(&lf->fs->lock);
	if (stopping) /* the session is closing: nothing can be queued */
		fs_reply_err(u->req, EIO);
	else
		waiter_park(u->req, u->park_ops, lf, u->mode, u->flags,
			    u->owner, &u->range);
	lockfile_put(lf);
}

/* Whoever claims the answer gives it: the last delete, or the poller at
 * the deadline.  fs->lock held. */
static int unlock_claim_locked(struct unlock *u)
{
	int mine = !u->answered;

	u->answered = 1;
	if (list_linked(&u->link))
		list_del(&u->link);
	return mine;
}

static void unlock_put(struct unlock *u)
{
	struct zkl_fs *fs = u->fs;
	int mine;

	if (atomic_fetch_sub(&u->pending, 1) != 1)
		return;
	pthread_mutex_lock(&fs->lock);
	mine = unlock_claim_locked(u);
	pthread_mutex_unlock(&fs->lock);
	if (mine)
		unlock_answer(u);
	free(u);
}

static void unlock_one_gone(void *arg)
{
	unlock_put(arg);
}

/* Built: answered once every delete is confirmed, or at the deadline. */
static void unlock_seal(struct unlock *u)
{
	struct zkl_fs *fs = u->fs;

	pthread_mutex_lock(&fs->lock);
	u->answer_by = deadline_after_ms(UNLOCK_ANSWER_MS);
	list_add_tail(&fs->unlocks, &u->link);
	pthread_cond_signal(&fs->signal_poll); /* it keeps the deadline */
	pthread_mutex_unlock(&fs->lock);
	unlock_put(u); /* the builder's */
}

/* A reference of ours, unless the last one is being dropped (its put,
 * waiting for fs->lock, answers and frees it): 1 if taken. */
static int unlock_hold_if_alive(struct unlock *u)
{
	int p = atomic_load(&u->pending);

	do {
		if (p == 0)
			return 0;
	} while (!atomic_compare_exchange_weak(&u->pending, &p, p + 1));
	return 1;
}

/* An unlock past its deadline, still alive, claimed (poll_take_fn). */
static int unlock_take_late(struct zkl_link *l, void *out, size_t n)
{
	struct unlock *u = ZKL_CONTAINER_OF(l, struct unlock, link);

	if (!deadline_reached(&u->answer_by) || !unlock_hold_if_alive(u))
		return 0;
	unlock_claim_locked(u);
	((struct unlock **)out)[n] = u;
	return 1;
}

size_t unlock_take_late_locked(struct zkl_fs *fs, struct unlock **late,
			       size_t max)
{
	return poll_take_locked(fs, &fs->unlocks, unlock_take_late, late, 0,
				max);
}

void unlock_answer_late(struct unlock *u)
{
	log_msg(LOG_DEBUG, "an unlock answered without ZooKeeper's word");
	unlock_answer(u);
	unlock_put(u);
}

void unlock_add(struct unlock *u, struct zkl_lockreq *lr)
{
	if (!u) {
		/* Out of memory for the wait: still let go, at once. */
		log_msg(LOG_WARNING, "out of memory: an unlock returns before "
				     "ZooKeeper confirmed it");
		return lockreq_release(lr);
	}
	atomic_fetch_add(&u->pending, 1);
	lockreq_release_then(lr, unlock_one_gone, u);
}

void unlock_reply_when_done(struct unlock *u, fuse_req_t req)
{
	if (!u)
		return fs_reply_err(req, 0);
	unlock_seal(u);
}

void unlock_park_when_done(struct unlock *u, fuse_req_t req,
			   const struct waiter_ops *ops, struct lockfile *lf,
			   enum zkl_mode mode, unsigned flags, uint64_t owner,
			   const struct lockrange *range)
{
	if (!u)
		return waiter_park(req, ops, lf, mode, flags, owner, range);
	if (range)
		u->range = *range;
	u->park_ops = ops;
	u->lf = lf;
	lockfile_get(lf);
	u->mode = mode;
	u->flags = flags;
	u->owner = owner;
	unlock_seal(u);
}

void posix_drop(struct zkl_fs *fs, fuse_ino_t ino, uint64_t owner,
		const struct lockfile *via, struct unlock *u)
{
	struct zkl_link taken;

	list_init(&taken);
	posix_take(fs, ino, owner, via, &taken);
	while (!list_empty(&taken)) {
		struct posixlock *p =
			ZKL_CONTAINER_OF(taken.next, struct posixlock, link);
		list_del(&p->link);
		log_msg(LOG_DEBUG, "fcntl lock of owner %016" PRIx64 " dropped",
			p->owner);
		if (u)
			unlock_add(u, p->lr);
		else
			lockreq_release(p->lr);
		posix_free(p);
	}
}
