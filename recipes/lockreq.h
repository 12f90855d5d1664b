/*
 * lockreq.h - one lock request: an ephemeral-sequential znode that queues
 * for a shared (read) or exclusive (write) lock on a resource, driven by
 * ZooKeeper completions.  No call here blocks on the network.
 *
 * Life of a request, seen by its owner:
 *
 *   lockreq_new ─► lockreq_start ─► done(0)   : held ─► lockreq_release
 *                                 └► done(-e) : failed ─► lockreq_release
 *                  lockreq_cancel == 0        : gave up, done never comes
 *                                                       ─► lockreq_release
 *
 * `done` is called exactly once unless lockreq_cancel wins, and never from
 * inside a lockreq_* call: it runs on ZooKeeper's completion thread.  The
 * states and the races between grant, cancel and session loss are drawn in
 * doc/design.md.
 */
#ifndef ZKL_LOCKREQ_H
#define ZKL_LOCKREQ_H

#include <stddef.h>
#include <stdint.h>

#include "names.h"
#include "session.h"
#include "trace.h"

struct zkl_lockreq;

/* err: 0 granted; -EAGAIN a try that could not be granted at once;
 * -ENOTCONN the session ended; -ENOENT the resource vanished repeatedly;
 * -EIO anything else (our node deleted by someone else, ...). */
typedef void (*lockreq_done_fn)(struct zkl_lockreq *lr, int err, void *arg);

enum lockreq_flags {
	LOCKREQ_TRY = 1, /* fail with -EAGAIN instead of queueing */
};

/* A flag: the request is of kind k (0 to ZKL_KINDS - 1), the owner's name
 * for how it was asked, which the session's metrics count it by. */
#define LOCKREQ_KIND_SHIFT 8
#define LOCKREQ_KIND(k) ((unsigned)(k) << LOCKREQ_KIND_SHIFT)

/* Prepare a request for a lock on the resource znode `dir` (absolute, under
 * the session's base).  `data` (copied) becomes the node's content.
 * Returns 0 or -ENOMEM / -ENAMETOOLONG, or -EOPNOTSUPP for a lease on a
 * session of another dialect than zklockfs's; *out owns one owner
 * reference. */
int lockreq_new(struct zkl_session *s, const char *dir, enum zkl_mode mode,
		unsigned flags, const void *data, size_t datalen,
		lockreq_done_fn done, void *arg, struct zkl_lockreq **out);

/* At most this many resources in one multi-lock. */
#define LOCKREQ_MULTI_MAX 64

/* Prepare one request for a lock on every resource znode of dirs[0..n-1]
 * (distinct, 1 <= n <= LOCKREQ_MULTI_MAX) in `mode` (read or write): held
 * once all are, given up, failed and released whole.  Their nodes are
 * created in one ZooKeeper transaction, so that no two multi-locks (or a
 * multi-lock and plain requests) can wait for each other in a cycle
 * (multilock.c).  Every lockreq_* call works on it; lockreq_describe gives
 * the highest token and the first resource's node, lockreq_member_token
 * each one.  Returns 0, -EINVAL (n, mode), or as lockreq_new. */
int lockreq_new_multi(struct zkl_session *s, const char *const *dirs, size_t n,
		      enum zkl_mode mode, unsigned flags, const void *data,
		      size_t datalen, lockreq_done_fn done, void *arg,
		      struct zkl_lockreq **out);

/* The fencing token of the i-th resource of a held request (a plain one
 * has one, i = 0).  Returns 0, -ERANGE past the last, or as
 * lockreq_describe. */
int lockreq_member_token(struct zkl_lockreq *lr, size_t i, int64_t *token);

/* Queue the node.  Returns 0 (done will come), -ECANCELED if the request
 * was cancelled before it started, or -errno if nothing could be sent
 * (done will not come).  Any thread. */
int lockreq_start(struct zkl_lockreq *lr);

/* Its owner holds `from` and asks a lock of `mode` instead (flock(2)'s
 * conversion, an fcntl lock's new type): what becomes of it, in one look?
 * 1: from is held in that mode already, nothing to do.  For a read asked
 * over a write lock, can a read request take from's place (a downgrade,
 * lockreq_start_in_place)?  0: yes; -EAGAIN: yes, but the session is not
 * connected now, so a try must fail (the lock kept) and a blocking call
 * wait; -EBUSY: other owners hold it too (lockreq_share), so it stays a
 * write lock, which covers the read asked.  -EINVAL: no (another mode, a
 * multi-lock, a lock lost): convert the old way, release then queue. */
int lockreq_place_to_take(struct zkl_lockreq *from, enum zkl_mode mode);

/* lockreq_start for a read request lr that replaces `from`, a write lock
 * of the same session on the same resource (a downgrade): from's owner
 * reference passes to lr, whatever the outcome.  If lockreq_place_to_take
 * allows, lr takes from's place in the queue -- its node, with from's
 * number, tag and fencing token, is created as from's is deleted, in one
 * transaction -- and is granted as soon as ZooKeeper answers, never a
 * try: nobody can block it, so no writer queued behind from gets in
 * between.  If from is lost before the transaction is done, lr fails (as
 * a request whose node another client deleted: -EIO, or the errno of the
 * transaction's failure).  Otherwise from is released and lr queues at
 * the end, as lockreq_start.  Returns as lockreq_start. */
int lockreq_start_in_place(struct zkl_lockreq *lr, struct zkl_lockreq *from);

/* Give up a request that is not yet granted.  Returns 0 if the cancel won:
 * done will never be called and the node (if any) is being deleted.
 * Returns -EALREADY if done has been or is being called.  Any thread. */
int lockreq_cancel(struct zkl_lockreq *lr);

/* Give up whatever the request is (held, waiting or failed), delete its
 * node, and drop the owner's reference: lr must not be used afterwards.
 * Does not wait for ZooKeeper.  Any thread. */
void lockreq_release(struct zkl_lockreq *lr);

/* Called once the released request's node is deleted in ZooKeeper, or is
 * known never to have existed or to be gone with the session: after it,
 * no other session can see the node.  Runs on the completion thread, or
 * in the thread of lockreq_release_then before that returns when nothing
 * is in flight; never with a lock of ours held. */
typedef void (*lockreq_gone_fn)(void *arg);

/* lockreq_release, and tell gone(arg) when the node is gone for every
 * session.  gone may be NULL.  A lost connection delays it until the
 * delete is done or the session has expired.  Any thread. */
void lockreq_release_then(struct zkl_lockreq *lr, lockreq_gone_fn gone,
			  void *arg);

/* One more owner of lr, held (-o reentrant): each owner releases it
 * (lockreq_release, lockreq_release_then), and its node goes with the
 * last; an owner's release before that tells `gone` at once (nothing
 * leaves ZooKeeper).  Returns 0, -EINVAL for a lease or a multi-lock, or
 * as lockreq_describe (-ENOENT: not held; -EIO: lost). */
int lockreq_share(struct zkl_lockreq *lr);

/* Is `node` (a full path) lr's lock node (a multi-lock's: one of its
 * members')?  Whatever lr's state. */
int lockreq_node_is(struct zkl_lockreq *lr, const char *node);

/* How many owners lr has (1 unless shared). */
unsigned lockreq_owners(struct zkl_lockreq *lr);

/* Store new node data (the holder's identity and note).  cb(err, arg) runs
 * on the completion thread.  Returns 0 or -errno (cb will not come). */
int lockreq_set_data(struct zkl_lockreq *lr, const void *data, size_t len,
		     void (*cb)(int err, void *arg), void *arg);

/* What a holder may show: the fencing token (czxid of the node), the full
 * node path, the session id.  Returns 0, or -ENOENT if not held, -EIO if
 * held and then lost with the session, -ENAMETOOLONG if the path does not
 * fit in pathlen bytes (NAMES_MAX_NODE_PATH + 1 always do). */
int lockreq_describe(struct zkl_lockreq *lr, int64_t *token, char *path,
		     size_t pathlen, int64_t *session);

enum zkl_mode lockreq_mode(const struct zkl_lockreq *lr);

/* The GUID in the request's node name (NAMES_GUID_LEN characters and a
 * NUL), fixed at lockreq_new. */
const char *lockreq_guid(const struct zkl_lockreq *lr);

/* Was the held lock asked to let go (its node given the revocation mark,
 * revoke.h)?  1 and when (CLOCK_REALTIME ms) into *when_ms, else 0. */
int lockreq_revoke_asked(struct zkl_lockreq *lr, int64_t *when_ms);

/* The mode the lock is held in now (granted, not released, not lost),
 * or -EIO (lost) or -ENOLCK (not granted, or released): one look, where
 * asking lockreq_holds then lockreq_mode would be two. */
int lockreq_held_mode(struct zkl_lockreq *lr);
/* The same, and if held its fencing token into *token: which lock holds
 * (a lock let go and taken again has another; a downgrade keeps it). */
int lockreq_held_token(struct zkl_lockreq *lr, int64_t *token);
/* 1 if the lock is held now, else 0. */
int lockreq_holds(struct zkl_lockreq *lr);

/* The owner's moments of the request's timeline (trace.h): `at` from
 * trace_now(), taken when the moment came; nothing if tracing is off.
 * TRACE_ASKED also names how the owner asked (`what`, a static string:
 * "open", "flock", ...); other moments pass NULL. */
void lockreq_trace(struct zkl_lockreq *lr, enum zkl_trace_point p, int64_t at,
		   const char *what);

/* Deadlocks across hosts (waitgraph.h).  The owner of lr, a waiting lock
 * (a plain one or a multi-lock), is blocked in it, and nothing but the end
 * of that wait can let go of pins[0..n), held requests of this session
 * (the caller, fs/deadlock.h, made sure): publish that, with a multi-lock's
 * own members that hold, and look for a cycle of such waits; one found
 * fails lr with -EDEADLK through its done.  Counted as a check (the
 * session's deadlock_checks) if lr still waits; nothing more if it pins
 * nothing.  Calls no owner's callback: any thread, s->lock not held
 * (fs->lock may be). */
void lockreq_check_deadlock(struct zkl_lockreq *lr,
			    struct zkl_lockreq *const *pins, size_t n);

/* lr's owner runs again before its wait ends (a caught signal, its wait
 * kept): what lockreq_check_deadlock published goes.  s->lock not
 * held. */
void lockreq_uncheck_deadlock(struct zkl_lockreq *lr);

#endif
