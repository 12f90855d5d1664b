/*
 * internal.h - what the files of libzkrecipes share and nobody else sees.
 */
#ifndef ZKL_INTERNAL_H
#define ZKL_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <zookeeper/zookeeper.h>

#include "held.h"
#include "list.h"
#include "maxhold.h"
#include "notice.h"
#include "queue.h"
#include "heartbeat.h"
#include "session.h"
#include "strtab.h"
#include "watchtab.h"

/* The slots of the session's count of changes (struct zkl_session). */
#define SESSION_CHANGE_SLOTS 1024

struct zkl_session {
	char *base;
	char *hosts;
	char *auth; /* "user:password" for digest auth, or NULL */
	char *tls;  /* "CA,CERT,KEY[,PASSWORD]": speak TLS (tls.h), or NULL */
	/* The nodes we create are given to the identities ZooKeeper knows
	 * this mount by (CREATOR_ALL): with auth or x509_acl. */
	int owned;
	int x509_acl;   /* -o x509_acl: the TLS certificate is one of them */
	char *identity; /* with auth: "user:hash", as ACLs name it (from the
			 * start's probe), else NULL */
	char *x509_identity;    /* with x509_acl: the certificate's subject, as
			      * ACLs name it ("CN=...,O=..."), else NULL */
	struct ACL_vector *acl; /* of every node we create */
	int session_timeout_ms;
	enum zkl_style dialect; /* of the lock nodes we create */
	pthread_t keeper;       /* replaces an expired handle (session.c) */
	session_lost_fn lost_hook;
	void *lost_arg;
	session_lost_fn revoke_hook; /* a held lock asked to let go */
	void *revoke_arg;
	uint64_t revokes_seen; /* held locks asked to let go, counted */

	/* Guards everything below, and every field of every lock request of
	 * this session (its state, references and list links).  It is never
	 * held while calling an owner's callback, so callbacks may call back
	 * into the library.  It may be held while calling zoo_a*(), which
	 * only queues. */
	pthread_mutex_t lock;
	pthread_cond_t state_changed;
	zhandle_t *zh; /* replaced when the session expires: read it,
			     * and call zoo_a*() on it, with the lock held */
	int64_t client_id;
	enum zkl_conn_state state;
	int expired;  /* zh's session expired: the keeper replaces it */
	int draining; /* the old handle is closing: resume nothing yet */
	int closing;  /* session_close: the keeper stops */
	int dead;     /* authentication failed: no new session helps */
	struct zkl_link resume; /* lock requests to resume on (re)connect */
	struct zkl_link later;  /* ... at their due time (the clock thread:
				 * session_resume_at_locked) */
	struct zkl_link live;   /* every started, not yet freed request */
	struct watchtab watches;
	struct strtab queues; /* of struct zkl_queue, by resource path */
	uint64_t grants, losses, expirations; /* since session_open */
	uint64_t delete_retries; /* deletes of our nodes ZooKeeper refused */
	/* Resource znodes are containers (session_check_base learns
	 * whether the server has them), and how many the mount made
	 * (atomic: the creates' replies count them unlocked). */
	int containers;
	int persistent_resources; /* -o containers=no: never containers */
	/* The waits this mount failed with EDEADLK: they closed a cycle
	 * across hosts (waitgraph.c); its walks that ended. */
	uint64_t deadlocks;
	uint64_t deadlock_checks;
	/* The session (its id) that sent the create of the deadlock records'
	 * directory, first thing before its first record (waitgraph.c): the
	 * records it sends after are applied after it; 0 once a create found
	 * it gone (a container reaped), to send it again. */
	int64_t pins_dir_session;
	/* Checked waits whose record deletes were cut off and wait to be
	 * sent again: until then a record of this session may outlive its
	 * wait, and a cycle through one is looked at again like another
	 * session's (waitgraph.c). */
	unsigned pins_deletes_due;
	_Atomic uint64_t resources_created;
	struct zkl_session_metrics metrics; /* session.c */

	/* The hold limits (maxhold.c): the table as last read, a
	 * read of it in flight, another wanted after that one, and whether
	 * the copy is the table as of now (read since the connection and
	 * since the watch last fired); the replies' context, switched per
	 * handle. */
	struct maxhold_table maxhold;
	int maxhold_loading, maxhold_again, maxhold_current;
	struct zkl_maxhold_slot {
		struct zkl_session *s;
	} mh[2];
	int mh_slot;
	struct zkl_link maxhold_stores; /* edits no round took yet, and */
	int maxhold_storing;            /* ... a round is in flight */
	uint64_t maxhold_asks, maxhold_breaks; /* holds past their limit */
	/* The server's clock: the ctime of the latest node we created, and
	 * when its reply came (CLOCK_BOOTTIME ms); 0: none yet. */
	int64_t server_stamp_ms, server_stamp_at;

	/* The clock (session_clock.c): until when the server keeps the
	 * session for sure.  Times are CLOCK_BOOTTIME milliseconds. */
	pthread_t clock;
	pthread_cond_t clock_changed; /* waited on with CLOCK_MONOTONIC */
	/* When the clock's last nap ends at the latest (CLOCK_BOOTTIME ms):
	 * it looks at s->later after every wake, so a time due no earlier
	 * needs no signal while that wake is still to come (a grant's
	 * LR_OWN_WATCH_AFTER_MS, for one). */
	int64_t clock_wake_ms;
	int margin_ms;      /* asked (0: the default, heartbeat_margin) */
	int64_t hb_sent_ms; /* the heartbeat in flight: its send time */
	int64_t hb_sent_us; /* ... by session_metrics_now_us */
	int64_t hb_next_ms; /* when the next one is due */
	int hb_slot;        /* its context (hb[]), switched per handle */
	struct zkl_heartbeat {
		struct zkl_session *s;
	} hb[2];
	struct heartbeat_proof proof; /* what answered heartbeats prove */
	int64_t jeopardy_ms;      /* when declared, 0 when not in jeopardy */
	int64_t jeopardy_wall_ms; /* the same, CLOCK_REALTIME, kept after */
	int jeopardy_pending;     /* lost nodes waiting for the margin */
	uint64_t jeopardies;

	/* What this session changed, or was told of, counted by path
	 * (session_changed): a slot per hash, so that the count is a few
	 * kilobytes however many resources there are, and two paths that
	 * share a slot only count each other's changes too.  `changes_all`
	 * counts what every path's count includes: the connection's changes
	 * of state, and new copies of the hold limits.  Atomic: counted
	 * where the change is made or heard of, read by anyone
	 * (holders_changes). */
	_Atomic uint64_t changes[SESSION_CHANGE_SLOTS];
	_Atomic uint64_t changes_all;
};

/*
 * What the session calls back.  The session knows these by their links
 * and callbacks only, never what owns them (a lock request today): so it
 * does not depend on lockreq.c, which depends on it.
 */

/* What a sweep of the jeopardy clock tells the members (session_clock.c):
 * is the jeopardy declared (the server may end the session before it
 * answers again), the time now and the margin (CLOCK_BOOTTIME ms). */
struct zkl_jeopardy {
	int declared;
	int64_t now, margin;
};

/* A member of the session: a started lock request. */
struct zkl_member;
struct zkl_member_ops {
	/* The connection is back: redo the step that failed (after
	 * session_resume_when_connected_locked; consumes its reference). */
	void (*resume_locked)(struct zkl_member *m, struct zkl_link *notify);
	/* The session is gone: a holder is lost (an entry is appended to
	 * `lost`); a waiter is queued again, from scratch, on the next
	 * session (requeue) or fails with -ENOTCONN (no next session). */
	void (*expired_locked)(struct zkl_member *m, int requeue,
			       struct zkl_link *lost, struct zkl_link *notify);
	/* The jeopardy clock's sweep (struct zkl_jeopardy).  While declared,
	 * a holder is lost; a margin after that, its node is deleted once
	 * connected; a waiter keeps its place.  Returns 1 while its node
	 * waits for the margin, else 0. */
	int (*jeopardy_locked)(struct zkl_member *m,
			       const struct zkl_jeopardy *j,
			       struct zkl_link *notify);
	/* The path of m's node if its lock was lost while the node is still
	 * there (its delete waits for the jeopardy's margin, or for
	 * ZooKeeper), else NULL. */
	const char *(*lost_node_locked)(const struct zkl_member *m);
	/* The path of m's node if it holds for more than one owner
	 * (lockreq_share), with their number in *owners, else NULL.  NULL
	 * function: never. */
	const char *(*shared_node_locked)(const struct zkl_member *m,
					  unsigned *owners);
	/* The hold limits' sweep (holdlimit.c): a holder past its
	 * resource's limit is asked to let go, and broken a grace later.
	 * now: CLOCK_BOOTTIME ms.  NULL function: never. */
	void (*hold_check_locked)(struct zkl_member *m, int64_t now,
				  struct zkl_link *notify);
	/* Count m into the held or waiting counters of st, if it is either. */
	void (*count_locked)(const struct zkl_member *m,
			     struct zkl_session_stats *st);
};
struct zkl_member {
	const struct zkl_member_ops *ops;
	struct zkl_link live;   /* in s->live while started */
	struct zkl_link resume; /* in s->resume while waiting to reconnect,
				 * in s->later while waiting for due_ms */
	int64_t due_ms;         /* CLOCK_BOOTTIME */
};

static inline struct zkl_member *member_of_live(struct zkl_link *l)
{
	return ZKL_CONTAINER_OF(l, struct zkl_member, live);
}

/* A held lock lost, to be reported (session_lost_fn): in a list of the
 * losses of an expired session, or posted alone as a notice. */
struct zkl_lost {
	struct zkl_link link;
	struct zkl_notice notice;
	struct zkl_session *s;
	const char *why; /* a string constant */
	char *node;
	size_t len;
	char data[];
};

/* Count a change of the znode `path`, or of its children: this session
 * made it (a create, a delete, a set) or was told of it (a watch fired),
 * for path and for the directory it is in (session.c).  Counted in the
 * same hold of s->lock as the call that makes the change, or once it is
 * answered: a holders fetch reads the count, then sends its listing
 * under the lock, so either its listing comes after the change or its
 * count is older than the change's (holders_changes). */
void session_changed(struct zkl_session *s, const char *path);
/* A change that concerns every path (s->changes_all). */
void session_changed_all(struct zkl_session *s);
/* The count of path's slot, with the changes of every path. */
uint64_t session_changes(struct zkl_session *s, const char *path);

/* Free what session_open allocated (session.c; session_close's end). */
void session_free(struct zkl_session *s);

/* Tell the session's owner of a lost lock, and free the report.  No lock
 * of ours held. */
void session_tell_lost(struct zkl_lost *item);
/* Tell the owner of each lock lost with the session, then free the list
 * (session.c). */
void session_report_lost(struct zkl_link *lost);

/* Take the session's mutex for an entry point that may post notices;
 * session_leave drops it and runs them. */
static inline void session_enter(struct zkl_session *s, struct zkl_link *notify)
{
	list_init(notify);
	pthread_mutex_lock(&s->lock);
}

static inline void session_leave(struct zkl_session *s, struct zkl_link *notify)
{
	pthread_mutex_unlock(&s->lock);
	notice_run_all(notify);
}

/* Is the session connected now, able to send a request and be answered
 * (not between two sessions, not closing)?  s->lock held. */
static inline int session_is_connected_locked(const struct zkl_session *s)
{
	return s->state == ZKL_CONN_CONNECTED && !s->draining &&
	       zoo_state(s->zh) == ZOO_CONNECTED_STATE;
}

/* m is started (session_join_locked) until it is freed
 * (session_part_locked): the session's end walks the started ones, and
 * session_close waits for them to go.  s->lock held. */
void session_join_locked(struct zkl_session *s, struct zkl_member *m);
void session_part_locked(struct zkl_session *s, struct zkl_member *m);

/* Call m->ops->resume_locked when the session is connected again (at once
 * if the handle is connected now).  The caller has taken a reference for
 * it and made sure m is not waiting already.  s->lock held. */
void session_resume_when_connected_locked(struct zkl_session *s,
					  struct zkl_member *m,
					  struct zkl_link *notify);
/* The same, once CLOCK_BOOTTIME reaches due_ms (session_clock.c): a step
 * ZooKeeper refused, tried again after a back-off.  The session's end
 * takes m off the list as it does off the resume list.  Returns 1, or 0
 * if m waits already (for the connection or a time: it keeps that), in
 * which case the caller takes no reference for it. */
int session_resume_at_locked(struct zkl_session *s, struct zkl_member *m,
			     int64_t due_ms);
/* How long a break waits for the holder's mount to let go (revoke.c): the
 * session timeout, after which a mount cut off before the mark has
 * declared its jeopardy (mounts of one base share it). */
int64_t session_break_bound_ms_locked(const struct zkl_session *s);

/* Ask ZooKeeper to tell us when `path` goes away or changes, and call
 * w->fired_locked then (watchtab.h).  s->lock held.  Returns 0 or -errno. */
int session_watch_locked(struct zkl_session *s, const char *path,
			 struct zkl_watch *w);

/* zoo_awget on path with the session's watcher, so that the watches
 * registered by session_watch_armed_locked hear of its changes; done gets
 * the data.  Returns ZooKeeper's code.  s->lock held. */
int session_awget_locked(struct zkl_session *s, const char *path,
			 data_completion_t done, const void *data);

/* Take back a watch w that watchtab_add registered on path (`first`: its
 * answer) when the get that was to set it could not be sent.  s->lock
 * held. */
void session_watch_undo_locked(struct zkl_session *s, const char *path,
			       struct zkl_watch *w, int first);

/* Wake every watch registered for path with ev, and forget the path: no
 * ZooKeeper watch is set on it (the get that would have set one found the
 * node gone, or could not be answered).  s->lock held. */
void session_wake_path_locked(struct zkl_session *s, const char *path,
			      enum zkl_watch_event ev, struct zkl_link *notify);

/* Register w for path, to be woken by the changes that a get sent with
 * session_awget_locked (by the caller, now or soon) asks ZooKeeper to
 * report.  Returns 0 or -ENOMEM.  s->lock held. */
int session_watch_armed_locked(struct zkl_session *s, const char *path,
			       struct zkl_watch *w);

/* zoo_awget_children on path with the session's watcher: a change of its
 * children wakes the watches registered for them with
 * session_watch_children_armed_locked (as WATCH_UNKNOWN), and so does the
 * deletion of path.  Returns ZooKeeper's code.  s->lock held. */
int session_awget_children_locked(struct zkl_session *s, const char *path,
				  strings_completion_t done, const void *data);

/* Register w for a change of path's children, to be woken as a get sent
 * with session_awget_children_locked asks ZooKeeper to report.  Returns 0,
 * -ENAMETOOLONG or -ENOMEM.  s->lock held. */
int session_watch_children_armed_locked(struct zkl_session *s, const char *path,
					struct zkl_watch *w);

/* session_clock.c.  Its fields set up (before the first handle) and
 * freed; its thread started (once connected: 0 or -errno) and stopped
 * (`closing` set, before the handle is closed).  A new handle is about
 * to be made (its session's time starts now); the handle connected (a
 * heartbeat goes at once); a grant told (counted). */
void session_clock_init(struct zkl_session *s, int margin_ms);
void session_clock_destroy(struct zkl_session *s);
int session_clock_start(struct zkl_session *s);
void session_clock_stop(struct zkl_session *s);
void session_clock_new_handle_locked(struct zkl_session *s);
void session_clock_connected_locked(struct zkl_session *s);
void session_count_grant_locked(struct zkl_session *s);
/* Its part of session_stats. */
void session_clock_stats_locked(const struct zkl_session *s,
				struct zkl_session_stats *st);

/* maxhold.c.  The connection is (back) up: read the hold limits
 * and watch them.  A limit of resource znode dir as last read (0: none).
 * The server stamped ctime_ms on a node of ours just created. */
void session_maxhold_connected_locked(struct zkl_session *s);
/* A new handle is about to be made: the old one's replies are stale (and
 * the copy is not current: s->maxhold_current). */
void session_maxhold_new_handle_locked(struct zkl_session *s);
unsigned session_maxhold_of_locked(struct zkl_session *s, const char *dir);
void session_note_server_time_locked(struct zkl_session *s, int64_t ctime_ms);

/* CLOCK_BOOTTIME in ms: the session's clock (session_clock.c). */
int64_t session_clock_now(void);

/* session.c: CLOCK_MONOTONIC in us, to time requests; a lock of
 * mode and kind granted after wait_ms, or ended (released by its owner,
 * or lost) after holding hold_ms; a request sent at sent_us answered with
 * ZooKeeper's code rc (one that never reached the server is not timed). */
int64_t session_metrics_now_us(void);
void session_metrics_granted_locked(struct zkl_session *s, enum zkl_mode mode,
				    unsigned kind, int64_t wait_ms);
void session_metrics_ended_locked(struct zkl_session *s, enum zkl_mode mode,
				  unsigned kind, int lost, int64_t hold_ms);
void session_metrics_answered_locked(struct zkl_session *s,
				     enum zkl_request_op op, int rc,
				     int64_t sent_us);

/* session_acl.c.  With credentials: does acl grant anything to an id other
 * than the mount's identity?  Then 1, and that entry as "scheme:id:perms"
 * into out. */
int session_acl_foreign(const struct zkl_session *s,
			const struct ACL_vector *acl, char *out, size_t size);
/* -o x509_acl, and ZooKeeper refused CREATOR_ALL (it knows the client by
 * no identity): say so in err; -EACCES. */
int session_acl_no_x509(const struct zkl_session *s, const char *path,
			char *err, size_t errlen);

/* The zkCli command that gives path to the mount's identity alone. */
void session_acl_fix(const struct zkl_session *s, const char *path, char *out,
		     size_t size);
/* At start, after the base path exists: may the mount create, list and
 * delete there, and (with credentials) is the base theirs alone?  Returns
 * 0 or -errno with a message naming the znode and what is missing. */
int session_check_base(struct zkl_session *s, char *err, size_t errlen);

/* Create every missing znode from the base down to and including dir
 * ("<base>/a/b"): one asynchronous create per level, queued in order so a
 * request queued after them sees them.  Errors (ZNODEEXISTS) are ignored:
 * the caller's own next request tells whether the path exists. */
int session_create_parents_locked(struct zkl_session *s, const char *dir);

/* Create the base path and its parents, synchronously (startup only).
 * Returns 0 or -errno with a message in err (session.c). */
int session_create_base(struct zkl_session *s, char *err, size_t errlen);

#endif
