/*
 * lr.h - the lock request machine as the features that ride
 * on it see it: multilock.c, peerlease.c, revoke.c, holdlimit.c and
 * waitgraph.c.
 * Nobody else includes it.
 */
#ifndef ZKL_LR_H
#define ZKL_LR_H

#include "internal.h"
#include "lockreq.h"

enum lr_outcome { LR_PENDING, LR_HELD, LR_FINISHED };

enum lr_phase {
	PH_NEW,        /* not started */
	PH_MUTEX,      /* a peer lease: waiting for the peer's lock */
	PH_CREATING,   /* create in flight (a listing lined up behind it) */
	PH_RECOVERING, /* a create's reply was lost: looking for our GUID */
	PH_CHECKING,   /* found a node with our GUID: is it this session's? */
	PH_LISTING,    /* node known, listing the queue */
	PH_COUNTING,   /* a peer lease: reading the limit and the leases */
	PH_WATCHING,   /* waiting for one node ahead of us to go (a peer
			* lease: for a change of the leases or limit) */
	PH_IDLE,       /* node known, nothing in flight (held) */
	PH_DELETING,   /* deleting our node */
	PH_GONE,       /* no node of ours exists (or ever will) */
};

/*
 * What keeps a request alive.  Every reference is one of these holds,
 * taken with lr_hold by the one function that starts what needs it and
 * dropped with lr_drop_locked by the one that ends it; the count per kind
 * is checked, so a hold dropped twice or never taken stops a debug build
 * at the mistake rather than at a use after free.
 */
enum lr_hold {
	LR_HOLD_OWNER,  /* lockreq_new .. lockreq_release (lr_release_locked
			 * for a peer's lock) */
	LR_HOLD_CALL,   /* a ZooKeeper call in flight: its completion drops
			 * it (lr_end_completion); any number */
	LR_HOLD_LINE,   /* in line for a listing: lr_line_up .. lr_listed */
	LR_HOLD_WATCH,  /* lr->watch registered .. fired or removed */
	LR_HOLD_AHEAD,  /* lr->ahead allocated .. one fired or removed */
	LR_HOLD_LIMIT,  /* lr->limit_watch registered .. fired or removed */
	LR_HOLD_OWN,    /* lr->own_watch registered .. fired or removed */
	LR_HOLD_RESUME, /* lr_defer .. the resume hook, or the session's end */
	LR_HOLD_NOTICE, /* lr->notice posted .. run (lr_notice_run) */
	LR_HOLD_MUTEX,  /* a peer lease: its peer's lock's done is to come */
	LR_HOLD_SUB_GONE, /* a sub-request let go (a peer lease's lock, a
			   * multi-lock's member) is told gone: one per
			   * sub-request whose node is not gone yet */
	LR_HOLD_MEMBER,   /* a multi-lock: one per member whose done is
			   * still to come */
	LR_HOLD_ENTRY,    /* an entry point running (a hook, a fired watch, a
			 * listing, the owner's release): the hold that
			 * brought it there, passed over by
			 * lr_begin_entry_locked, so that what it starts
			 * may take that kind again; any number */
	LR_HOLDS
};

/*
 * What a lock request is.  Fixed when it is made; what differs between
 * kinds is in its struct lr_kind_ops (lr_kinds[]), never in a flag.
 * Adding a kind: a value here, a struct lr_kind_ops in the module that
 * carries it, its entry in lr_kinds[] and its phases in lr_kind_phases[]
 * (lockreq.c), and a test of its life in tests/unit (fake_zk.c scripts
 * ZooKeeper).
 */
enum lr_kind {
	LR_PLAIN,      /* a mount's own node in one resource: write, read or
			* a lease in the mount's own layout */
	LR_MULTI,      /* a multi-lock (multilock.c): no node of its own, one
			* LR_MEMBER per resource */
	LR_MEMBER,     /* a multi-lock's node in one resource (lr->group) */
	LR_PEER_LEASE, /* a lease in Curator's or kazoo's layout
			* (peerlease.c) */
	LR_PEER_MUTEX, /* the peer's own lock, taken on a peer lease's way
			* (the lease's lr->mutex) */
	LR_KINDS
};

/* A NULL member says: as the plain machine does (LR_PLAIN is all NULL). */
struct lr_kind_ops {
	const char *name; /* for assertions and the log */
	/* What the session calls on it (internal.h). */
	const struct zkl_member_ops *member_ops;
	/* Its watches fired: a node ahead (a peer lease: its leases), and
	 * the resource's limit. */
	void (*watch_fired)(struct zkl_watch *w, const char *path,
			    enum zkl_watch_event ev, struct zkl_link *notify);
	void (*limit_fired)(struct zkl_watch *w, const char *path,
			    enum zkl_watch_event ev, struct zkl_link *notify);
	/* lockreq_start, s->lock held.  Returns 0 or -errno.  NULL: it is
	 * started by the request that made it, never by an owner. */
	int (*start_locked)(struct zkl_lockreq *lr, struct zkl_link *notify);
	/* Nobody wants its node any more (the outcome is FINISHED).  Every
	 * kind has one: an owner's release, cancel or failure ends here. */
	void (*abandon_locked)(struct zkl_lockreq *lr, struct zkl_link *notify);
	/* Its node's create step.  Returns 0 or -errno. */
	int (*create)(struct zkl_lockreq *lr);
	/* After a lost create reply, its node was found.  NULL: nothing
	 * more to do. */
	void (*found)(struct zkl_lockreq *lr, struct zkl_link *notify);
	/* Held, it lost its node to another client (`why`).  NULL: it is
	 * lost on its own (lr_lose_locked). */
	void (*lost)(struct zkl_lockreq *lr, const char *why,
		     struct zkl_link *notify);
	/* The recipe whose names its nodes take (a peer's mutex, or by
	 * default a lock's). */
	enum names_recipe names;
	/* A lock its owner holds as such, not a step of another request:
	 * counted, shared, limited in time, reported lost. */
	unsigned owners_lock : 1;
	/* It counts the holders itself (a peer lease): a listing of its
	 * queue reads no limit. */
	unsigned own_count : 1;
	/* It has requests of its own under it (a multi-lock's members, a
	 * peer lease's lock), which the session walks too: when the session
	 * ends it is told, and let go later, never then (lr_expired). */
	unsigned has_subs : 1;
};

/* The kinds (lockreq.c), by enum lr_kind. */
extern const struct lr_kind_ops *const lr_kinds[LR_KINDS];
extern const struct lr_kind_ops lr_plain_kind, lr_peer_mutex_kind;
extern const struct lr_kind_ops multilock_kind, multilock_member_kind;
extern const struct lr_kind_ops peerlease_kind;

/* A resource removed between creating its znode and queueing in it is
 * recreated this many times before the open fails. */
#define LR_MAX_CREATE_ATTEMPTS 5

/* A delete ZooKeeper refused is tried again after this long, doubled at
 * each refusal up to the most. */
#define LR_DELETE_RETRY_FIRST_MS 200
#define LR_DELETE_RETRY_MAX_MS 5000
/* A watch on its own node that could not be set is tried again after
 * this long. */
#define LR_WATCH_RETRY_MS 200
/* A holder that did not wait (its first listing granted it) watches its
 * own node this long after its grant, if it still holds: most such locks
 * (a command under flock(1), a loop's open and close) are let go sooner,
 * and the get, and the watch's firing at our own delete, cost ZooKeeper
 * and the daemon a round trip's work per lock (bench/RESULTS.md Run 23).
 * A deletion by another client, a revocation or a break mark in that time
 * is heard at its end. */
#define LR_OWN_WATCH_AFTER_MS 10

struct zkl_lockreq {
	struct zkl_session *s;
	struct zkl_queue *q;         /* the resource's queue, once started */
	struct zkl_queue_wait qwait; /* in q->waiting for a listing */
	struct zkl_queue_leaving leaving; /* in q->leaving while DELETING */
	struct zkl_member member; /* in s->live once started, in s->resume
				   * while waiting to reconnect */
	struct zkl_notice notice; /* posted until done() has run */
	struct zkl_watch watch;   /* in s->watches while PH_WATCHING for
				   * one node */
	struct lr_ahead *ahead;   /* a first waiter's watches on every lease
				 * ahead of it, or NULL */
	size_t nahead;
	struct zkl_watch limit_watch; /* a lease in line or waiting: on the
				       * resource's data, its limit */
	/* On our own node, from its first wait, or LR_OWN_WATCH_AFTER_MS
	 * after a grant that did not wait (lr_watch_own): its deletion by
	 * anyone else fails a waiter and loses a holder. */
	struct zkl_watch own_watch;
	struct zkl_lockreq *mutex; /* a peer lease: the request for the
				    * peer's own lock, while it has one */
	/* A multi-lock (multilock.c): its members, one plain request per
	 * resource, created together in one transaction; NULL while it
	 * has none (between two sessions). */
	struct zkl_lockreq **members;
	unsigned nmembers;
	unsigned members_granted; /* members whose done(0) has run */
	/* A downgrade: the write lock whose place this read
	 * request takes, with its owner's hold, until its node is known
	 * gone or the request lets it go (lr_heir_detach_locked). */
	struct zkl_lockreq *heir_of;
	/* A member's multi-lock; NULL for every other kind. */
	struct zkl_lockreq *group;
	enum lr_kind kind;
	int refs;        /* the sum of holds[] */
	unsigned owners; /* the owner's OWNER hold stands for this many
			  * releases to come (lockreq_share) */
	unsigned short holds[LR_HOLDS]; /* per kind (enum lr_hold) */
	enum lr_outcome outcome;
	enum lr_phase phase;
	uint64_t step; /* moves so far (lr_to): what a reply is checked
			* against (struct lr_call) */
	int notify_err;
	unsigned notify_gone : 1; /* the notify entry is for gone_fn */
	unsigned gone_told : 1;   /* gone_fn has been queued */
	unsigned telling : 1;     /* the notice is posted or running: a
				   * 'gone' waits for the end of its run */
	unsigned try_only : 1;
	unsigned lost : 1;
	unsigned maybe_stray : 1;    /* a create's reply was lost: a duplicate
				   * node of ours may turn up */
	unsigned marked : 1;         /* a held lease: its node bears the mark */
	unsigned marking : 1;        /* ... its mark's set is on its way */
	unsigned jeopardy_wait : 1;  /* lost in jeopardy at lost_ms: its node
				     * stays for the margin (lr_jeopardy) */
	unsigned grant_deferred : 1; /* granted in a jeopardy: told once it
				      * ends (lr_tell_locked), unless the
				      * session does first */
	unsigned wants_create : 1;   /* a member: waits, in PH_NEW, for its
				    * multi-lock's transaction */
	unsigned passing : 1;        /* held, and being replaced by an heir:
				      * its node's changes are the heir's */
	unsigned inherited : 1;      /* an heir: czxid is its write lock's
				      * token, kept in its data */
	unsigned revoke_asked : 1;   /* held, and asked to let go (its node
				      * got the revocation mark) at revoke_ms */
	unsigned revoke_told : 1;    /* ... and its owner was told so */
	unsigned own_known : 1;      /* own_watch's get came back: the node
				      * existed then, and any deletion since
				      * is told before any later news (on
				      * connection own_conn only) */
	unsigned grant_awaits_own : 1; /* PH_WATCHING for own_known alone: the
				  * view grants, but only a listing or
				  * own_known proves the node is there */

	unsigned recount : 1;     /* a peer lease: a watch fired while the
				   * count was on its way */
	unsigned acl_checked : 1; /* a peer lease with credentials: the ACL
				   * of the lease directory was read ... */
	unsigned acl_open : 1;    /* ... and lets another identity in */
	unsigned peer_limit;      /* a peer lease: N as last read */
	unsigned subs_leaving; /* sub-requests let go (a peer lease's locks, a
			   * multi-lock's members) whose nodes are not
			   * deleted yet */
	int peer_limit_err;
	int create_attempts;
	/* A delete ZooKeeper refused: the back-off before the next try (0:
	 * none refused), and how many were. */
	int delete_retry_ms;
	unsigned delete_retries;
	enum zkl_mode mode;
	char guid[NAMES_TAG_MAX + 1];
	int64_t czxid;
	/* Its node's data version as its own watch last read it (or our own
	 * set made it), -1 if unknown: a note is set only over that version
	 * (lr_note_version), so that it never overwrites a mark it has not
	 * seen. */
	int32_t own_version;
	/* A note written while a lease's grant mark is on its way (marking),
	 * sent once the mark is answered: the mark moves the version the
	 * note must be set over (lockreq_set_data). */
	struct lr_set_ctx *note_after_mark;
	unsigned own_conn; /* s->watches.connection when own_known was set:
			    * a reconnection tells missed deletions in no
			    * particular order (the client's SetWatches) */
	int64_t lost_ms;   /* jeopardy_wait's start, CLOCK_BOOTTIME ms */
	int64_t revoke_ms; /* revoke_asked: when seen, CLOCK_REALTIME ms */
	/* The hold's limit (holdlimit.c), CLOCK_BOOTTIME ms: its grant (a
	 * downgrade's write lock's); when asked to let go for passing its
	 * limit, and when last told to break (0: not yet). */
	int64_t granted_ms, maxhold_ask_ms, maxhold_break_ms;
	/* Its metrics (session.c): its kind (LOCKREQ_KIND), its hold
	 * counted as ended (once); when it was made and when its owner was
	 * told it holds, CLOCK_BOOTTIME ms; when its create and its delete
	 * were sent, CLOCK_MONOTONIC us. */
	unsigned metrics_kind : 2, metrics_ended : 1;
	int64_t made_ms, told_ms, create_sent_us, delete_sent_us;
	/* Its timeline, when tracing (trace.h): a moment's time, or 0; and
	 * how its owner asked ("open", "flock", ...: a static string). */
	int64_t trace[TRACE_POINTS];
	const char *trace_what;
	/* Its check for a cycle of waits across hosts (waitgraph.c): from
	 * its owner's check (lockreq_check_deadlock) to its wait's end. */
	struct wg_wait *wg;
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
	char *res; /* the resource: dir, or for a Curator lease its parent */
	char create_path[]; /* dir + "/_c_<guid>-<mode>-" */
};

/* Its node holds: the owner was told so, or will be once the jeopardy
 * ends (grant_deferred).  What keeps a held node right (its watch, a
 * lease's mark) applies to both. */
/* Is lr a lock its owner holds as such (not a multi-lock's member, nor a
 * peer lease's step)?  Only those count. */
static inline int lr_is_owners_lock(const struct zkl_lockreq *lr)
{
	return lr_kinds[lr->kind]->owners_lock;
}

static inline int lr_node_holds(const struct zkl_lockreq *lr)
{
	return lr->outcome == LR_HELD || lr->grant_deferred;
}

/* The room a node path needs beyond the create path: the sequence
 * ZooKeeper appends ("%010d" of an int32, sign included) and a NUL. */
#define LR_SEQ_ROOM 12

/* The one place a request's phase changes. */
void lr_to(struct zkl_lockreq *lr, enum lr_phase to);
/* What a holders text of lr's resources shows of it changed (its phase,
 * lost, its owners): counted for each (session_changed; a multi-lock's
 * members too).  s->lock held. */
void lr_changed_locked(struct zkl_lockreq *lr);

/* One allocation for a request of `kind` on `dir` (where its node goes)
 * of the resource `res`, its node named for `tag` (NULL: a fresh one):
 * the fields lockreq_new documents, the OWNER hold, phase NEW, the
 * kind's handlers. */
int lr_alloc(struct zkl_session *s, const char *dir, const char *res,
	     enum lr_kind kind, const char *tag, enum zkl_mode mode,
	     unsigned flags, const void *data, size_t datalen,
	     lockreq_done_fn done, void *arg, struct zkl_lockreq **out);
/* A fresh tag in the create path (same length), for a new session; or
 * the given one (a write lock's, which its downgrade takes over). */
int lr_new_tag(struct zkl_lockreq *lr);
int lr_use_tag(struct zkl_lockreq *lr, const char *tag);
void lr_free(struct zkl_lockreq *lr);
/* What a holder's call gets: 0 while held, -EIO once lost, else
 * -ENOENT (lockreq_describe's codes). */
int lr_held_err_locked(const struct zkl_lockreq *lr);
int lr_has_node(const struct zkl_lockreq *lr);
const char *lr_node_name(const struct zkl_lockreq *lr);
int lr_set_node(struct zkl_lockreq *lr, const char *dir, const char *name);
/* Take and drop a hold (enum lr_hold); the last one dropped frees the
 * request. */
void lr_hold(struct zkl_lockreq *lr, enum lr_hold h);
void lr_drop_locked(struct zkl_lockreq *lr, enum lr_hold h);
/* waitgraph.c, all with s->lock held: the owner of the waiting request lr
 * (a plain lock or a multi-lock) is blocked in it and nothing else can
 * let go of the held requests pins[0..n) (lockreq_check_deadlock):
 * publish them, with a multi-lock's members that hold, and walk; a
 * multi-lock's member m was granted while others wait: one pin more; lr's
 * wait ended (granted, failed, let go, its owner ran again, or its
 * session over): the check ends, its records go.  Each may come more than
 * once. */
void waitgraph_check_locked(struct zkl_lockreq *lr,
			    struct zkl_lockreq *const *pins, size_t n,
			    struct zkl_link *notify);
void waitgraph_member_held_locked(struct zkl_lockreq *g, struct zkl_lockreq *m,
				  struct zkl_link *notify);
void waitgraph_end_locked(struct zkl_lockreq *lr);
/* A waiting lr closes a cycle (waitgraph.c): it fails with EDEADLK. */
void lr_deadlock_locked(struct zkl_lockreq *lr, struct zkl_link *notify);

/* Note that lr reached moment p now, the first time (trace.h). */
void lr_trace(struct zkl_lockreq *lr, enum zkl_trace_point p);
/* Tell the owner err (0: granted) once.  A grant during a jeopardy is
 * held back until it ends (lr_tell_deferred_locked): told then, its
 * holder would hear of a lock the server may already have given away. */
void lr_tell_locked(struct zkl_lockreq *lr, int err, struct zkl_link *notify);
/* The jeopardy is over: a grant held back is told now. */
void lr_tell_deferred_locked(struct zkl_lockreq *lr, struct zkl_link *notify);
void lr_tell_gone_locked(struct zkl_lockreq *lr, struct zkl_link *notify);
/* The start of every entry point but a completion (a hook, a fired
 * watch, a listing, the owner's release): the hold `h` that brought it
 * becomes an ENTRY hold.  Its end: report a node that is gone, drop the
 * ENTRY hold. */
void lr_begin_entry_locked(struct zkl_lockreq *lr, enum lr_hold h);
void lr_end_entry_locked(struct zkl_lockreq *lr, struct zkl_link *notify);
/* The end of a completion: report a node that is gone, drop its CALL
 * hold, unlock and run the notices. */
void lr_end_completion(struct zkl_lockreq *lr, struct zkl_link *notify);

/*
 * A call sent for one step of the machine (a create, an exists, a
 * delete, a listing of a peer's leases) has a record of the request and
 * of the step it was sent for as its `data`.  lr_to counts every move
 * (lr->step), so the reply answers the request's present step only if it
 * has not moved since.  The phase alone cannot tell: a request queued
 * again on a new session is CREATING again while the old session's
 * reply to its first create may still be on its way.  A transaction
 * keeps the step in its own record (lr_heir_txn, ml_create).
 */
struct lr_call {
	struct zkl_lockreq *lr;
	uint64_t step;
};
/* A record for a call lr is about to send, with the call's CALL hold.
 * Returns NULL when out of memory (nothing held then). */
struct lr_call *lr_call_new(struct zkl_lockreq *lr);
/* Sent, for the step lr has moved to (call it after that lr_to). */
void lr_call_sent(struct lr_call *c);
/* Not sent: the record and its hold go. */
void lr_call_unsent(struct lr_call *c);
/* The outcome of sending c's call: rc, or no record (c NULL, nothing
 * sent).  Returns 0 (sent: lr_call_sent), or -errno (-ENOMEM without a
 * record; the record is gone). */
int lr_call_sent_if(struct lr_call *c, int rc);
/* Its reply: does it answer lr's present step?  Session lock held. */
int lr_call_current(const struct lr_call *c);
/* The end of its reply: the record goes, then lr_end_completion. */
void lr_call_end(struct lr_call *c, struct zkl_link *notify);
/* A held lock is lost for a reason other than the session's end (`why`, a
 * string constant): mark it, count it, and post its report. */
void lr_lose_locked(struct zkl_lockreq *lr, const char *why,
		    struct zkl_link *notify);
/* A held lock this session takes away (a break): lost as above, and its
 * node (a multi-lock's, every member's) deleted only once its report has
 * been told, so that its holder hears of it before any other host can be
 * granted.  Its descriptor reads EIO from now on. */
void lr_lose_then_let_go_locked(struct zkl_lockreq *lr, const char *why,
				struct zkl_link *notify);
/* Session expiry: a waiting request queues again on the next session
 * (phase NEW, on the resume list); any other is done with it (off the
 * resume list, lost if it held, phase GONE; its owner is told by the
 * caller). */
void lr_requeue_locked(struct zkl_lockreq *lr);
void lr_end_with_session_locked(struct zkl_lockreq *lr, struct zkl_link *lost);
void lr_delete_stray(struct zkl_lockreq *lr, const char *name);

/* Watch its own node, for a deletion not its own (once, taking the OWN
 * hold; a failure is logged and tried again a moment later).  Set before
 * the first watch on a node ahead, so that ZooKeeper tells the deletion
 * of our node before any later change of a node ahead (lr_evaluate), and
 * LR_OWN_WATCH_AFTER_MS after a grant that did not wait. */
void lr_watch_own(struct zkl_lockreq *lr);
/* Stop watching anything: the nodes ahead, the limit, its own node. */
void lr_unwatch_all(struct zkl_lockreq *lr);

/* What a create's reply rc means, one policy for every kind (lockreq.c,
 * peerlease.c, multilock.c): the phase it moves lr to, and what its
 * caller does next. */
enum lr_created {
	LR_CREATED,       /* ZOK: the caller records the node */
	LR_CREATED_MAYBE, /* the connection was lost: created or not, only a
			   * listing can tell.  RECOVERING, a stray maybe;
			   * the caller defers */
	LR_CREATE_AGAIN,  /* ZNONODE while it still waits, within
			   * LR_MAX_CREATE_ATTEMPTS: a parent was missing
			   * (a container reaped), made again; the caller
			   * creates again */
	LR_CREATE_FAILED, /* anything else, or the parents could not be
			   * made: GONE; the caller fails it with *err */
};
enum lr_created lr_create_reply_locked(struct zkl_lockreq *lr, int rc,
				       int *err);

/* The basic steps: list the queue, delete the node. */
void lr_list(struct zkl_lockreq *lr, struct zkl_link *notify);
void lr_delete(struct zkl_lockreq *lr);
/* lr_delete in parts, for a delete sent in a transaction: the phase, the
 * queue's 'leaving' entry and the CALL hold; the call could not be sent;
 * its answer (rc), before the completion's end. */
void lr_delete_begin_locked(struct zkl_lockreq *lr);
void lr_delete_unsent_locked(struct zkl_lockreq *lr);
void lr_deleted_locked(struct zkl_lockreq *lr, int rc, struct zkl_link *notify);
/* The session ended (member ops, every kind): queued again on the next
 * one if it waits and `requeue`, else ended, a held lock lost. */
void lr_expired(struct zkl_member *m, int requeue, struct zkl_link *lost,
		struct zkl_link *notify);
/* Wait for the connection to come back, then resume (member ops). */
void lr_defer(struct zkl_lockreq *lr, struct zkl_link *notify);
/* ... or for ms, then resume once connected (a step ZooKeeper refused, a
 * holder's own watch). */
void lr_defer_for(struct zkl_lockreq *lr, int ms);
void lr_finish_locked(struct zkl_lockreq *lr, int err, struct zkl_link *notify);
/* The abandon of the kinds with a node of their own (plain, member, peer
 * mutex): delete it, or leave that to the step in flight. */
void lr_abandon_locked(struct zkl_lockreq *lr, struct zkl_link *notify);

/* An heir's node data: data[0..len) and a "token N" line (its write
 * lock's token, which is the heir's), in a new *out of *outlen bytes.
 * Returns 0 or -ENOMEM. */
int lr_heir_data(int64_t token, const void *data, size_t len, char **out,
		 size_t *outlen);
void lr_mark(struct zkl_lockreq *lr);

/* The node's creation. */
int lr_queue_create(struct zkl_lockreq *lr);
/* lockreq_start of a plain request (s->lock held), and the checks every
 * request's start makes before its first step (a peer lease's, too). */
int lr_start_locked(struct zkl_lockreq *lr);
int lr_start_with_locked(struct zkl_lockreq *lr,
			 int (*first_step)(struct zkl_lockreq *lr));
/* Release a sub-request of lr (a peer lease's lock, a multi-lock's
 * member): lr's owner is told gone only once its node is gone too. */
void lr_release_sub_locked(struct zkl_lockreq *lr, struct zkl_lockreq *sub,
			   struct zkl_link *notify);

/* The session's calls on a plain request (its kind's member_ops may use
 * them): a request's count, */
void lr_count(const struct zkl_member *m, struct zkl_session_stats *st);
/* The jeopardy clock's sweep (internal.h): a held lock is lost while the
 * jeopardy is declared; its node is deleted a margin later, once
 * connected (the resume hook); nothing else changes. */
int lr_jeopardy(struct zkl_member *m, const struct zkl_jeopardy *j,
		struct zkl_link *notify);
const char *lr_lost_node(const struct zkl_member *m);
/* The hold limits' sweep (internal.h, holdlimit.c). */
void lr_hold_check(struct zkl_member *m, int64_t now, struct zkl_link *notify);

/* A held request asked to let go (revoke.c): what to tell the daemon,
 * gathered under the session's lock and told without it. */
struct lr_revoke_report {
	session_lost_fn hook;
	void *arg;
	char *node; /* NULL: nothing to tell */
	char *who;
	size_t wholen;
};
/* The held node's data, as the get that watches it read it: the
 * revocation mark there is remembered, and *r filled if it is news to
 * tell (r zeroed by the caller). */
void lr_revoke_check_locked(struct zkl_lockreq *lr, const char *value, int len,
			    struct lr_revoke_report *r);
/* lr's node got the break mark (revoke.c): a holder is told its lock is
 * lost, and only then is its node deleted; a waiter (a peer's break may
 * mark it) fails the same way. */
void lr_break_seen_locked(struct zkl_lockreq *lr, struct zkl_link *notify);
/* Fill *r if lr was asked and its owner holds and was not told yet. */
void lr_revoke_report_locked(struct zkl_lockreq *lr,
			     struct lr_revoke_report *r);
/* At a grant: a mark seen while it waited is told now (after unlock). */
void lr_revoke_post_locked(struct zkl_lockreq *lr, struct zkl_link *notify);
/* Tell it (no lock of ours held), and free what *r holds. */
void lr_revoke_tell(struct lr_revoke_report *r);
/* Forget lr (and its members) was asked: a new ask is news again. */
void lr_revoke_forget_locked(struct zkl_lockreq *lr);

/* A multi-lock (multilock.c). */
/* Delete the nodes of every member that has one to delete now: two or
 * more in one transaction, a single one alone.  Each member, let go
 * later, finds its delete on its way or done.  s->lock held. */
void ml_delete_together_locked(struct zkl_lockreq *g);
int multilock_set_data_locked(struct zkl_lockreq *g, const void *data,
			      size_t len, void (*cb)(int err, void *arg),
			      void *arg);
/* The version a note is set over: the one last read, or before any read
 * 0, the version ZooKeeper gives a node at its create (a holder's own
 * watch comes a moment after its grant).  A mark set since fails the
 * note with EAGAIN; never is a version of "any" (-1) sent, which would
 * overwrite it. */
int32_t lr_note_version(const struct zkl_lockreq *lr);
/* A note's data for lr's node (lockreq_set_data): data[0..len), after the
 * revocation mark's line if it was asked (a note must not hide that from
 * other hosts), with an heir's token line; in a new *out of *outlen
 * bytes.  Returns 0 or -ENOMEM. */
int lr_note_data(const struct zkl_lockreq *lr, int asked, const void *data,
		 size_t len, char **out, size_t *outlen);
/* A note's ZooKeeper code as the writer's errno: its node gone is the
 * lock lost (-EIO); its data changed since read (a mark from another
 * host) is -EAGAIN, for the writer to try again. */
int lr_note_err(int rc);

#endif
