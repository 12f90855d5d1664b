/*
 * internal.h - what the files of libzkrecipes share and nobody else sees.
 */
#ifndef ZKL_INTERNAL_H
#define ZKL_INTERNAL_H

#include <pthread.h>
#include <zookeeper/zookeeper.h>

#include "held.h"
#include "list.h"
#include "queue.h"
#include "session.h"
#include "strtab.h"
#include "watchtab.h"

struct zkl_lockreq;

struct zkl_session {
	char *base;
	char *hosts;
	char *auth;             /* "user:password" for digest auth, or NULL */
	struct ACL_vector *acl; /* of every node we create */
	int session_timeout_ms;
	pthread_t keeper; /* replaces an expired handle (session.c) */
	session_lost_fn lost_hook;
	void *lost_arg;

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
	struct zkl_link live;   /* every started, not yet freed request */
	struct watchtab watches;
	struct strtab queues; /* of struct zkl_queue, by resource path */
	uint64_t grants, losses, expirations; /* since session_open */
};

/*
 * Hooks of the lock requests, called with s->lock held.  Whatever owner
 * callbacks they decide on are collected in `notify` and run by
 * lockreq_notify_all() once the caller has dropped the lock.
 */
/* The connection is back: redo the step that failed.  Consumes the
 * reference taken by session_resume_when_connected_locked. */
void lockreq_resume_locked(struct zkl_lockreq *lr, struct zkl_link *notify);
/* The watched node changed or went: look at the queue again.  `gone` is
 * the watched node's path when it is known to be deleted, else NULL.
 * Consumes the reference held by the watch registration. */
void lockreq_kick_locked(struct zkl_lockreq *lr, const char *gone,
			 struct zkl_link *notify);
/* The listing w lined up for (queue_want_listing_locked) came back with
 * ZooKeeper code rc; on ZOK the queue's view is that listing.  Consumes
 * the reference taken for the line. */
void lockreq_listed_locked(struct zkl_queue_wait *w, int rc,
			   struct zkl_link *notify);
/* A held lock lost with its session, to be reported (session_lost_fn). */
struct zkl_lost {
	struct zkl_link link;
	char *node;
	size_t len;
	char data[];
};

/* The session is gone: a holder is lost (an entry is appended to `lost`);
 * a waiter is queued again, from scratch, on the next session (requeue)
 * or fails with -ENOTCONN (no next session); the rest is forgotten. */
void lockreq_session_expired_locked(struct zkl_lockreq *lr, int requeue,
				    struct zkl_link *lost,
				    struct zkl_link *notify);
/* Count lr into *held or *waiting if it is either.  s->lock held. */
void lockreq_count_locked(const struct zkl_lockreq *lr, uint64_t *held,
			  uint64_t *waiting);
/* Called without the lock: run the owner callbacks collected in notify. */
void lockreq_notify_all(struct zkl_link *notify);

/* Resume lr when the session is connected again (at once if the handle is
 * connected now).  The caller has taken a reference for it and made sure
 * `link` is not queued already.  s->lock held. */
void session_resume_when_connected_locked(struct zkl_session *s,
					  struct zkl_lockreq *lr,
					  struct zkl_link *link,
					  struct zkl_link *notify);

/* Ask ZooKeeper to tell us when `path` goes away or changes, and wake the
 * watches registered for it then.  s->lock held. */
int session_watch_locked(struct zkl_session *s, const char *path,
			 struct zkl_watch *w);

/* Create every missing znode from the base down to and including dir
 * ("<base>/a/b"): one asynchronous create per level, queued in order so a
 * request queued after them sees them.  Errors (ZNODEEXISTS) are ignored:
 * the caller's own next request tells whether the path exists. */
int session_create_parents_locked(struct zkl_session *s, const char *dir);

/* Resume the request owning link (a zkl_lockreq).  s->lock held. */
struct zkl_lockreq *lockreq_from_resume_link(struct zkl_link *link);
struct zkl_lockreq *lockreq_from_watch(struct zkl_watch *w);
struct zkl_lockreq *lockreq_from_live_link(struct zkl_link *link);

#endif
