/*
 * session.h - the one ZooKeeper session of a mount.
 *
 * Opens the handle, waits (bounded) for the first connection, creates the
 * base path, tracks connection state and hands ZooKeeper's watch events to
 * the lock requests that wait for them.  All lock requests of a mount share
 * the session and its mutex.
 */
#ifndef ZKL_SESSION_H
#define ZKL_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "histogram.h"
#include "names.h"

struct zkl_session;

struct zkl_session_opts {
	const char *hosts;      /* "host:port[,host:port...]" */
	const char *base;       /* absolute znode path, e.g. "/zklockfs" */
	int session_timeout_ms; /* requested session timeout */
	int connect_timeout_ms; /* give up on the first connection after this */
	int zk_log_level;       /* ZOO_LOG_LEVEL_*; 0 keeps the client's */
	/* "user:password": authenticate with ZooKeeper's digest scheme and
	 * give every node we create to that identity alone.  NULL: no
	 * authentication, nodes open to all. */
	const char *digest_auth;
	/* "CA,CERT,KEY[,KEY_PASSWORD]": speak TLS to the servers (mutual: the
	 * server's certificate checked against CA, ours sent), in a build
	 * with TLS (tls.h).  NULL: in clear. */
	const char *tls_files;
	/* With tls_files: give every node we create to the certificate's
	 * identity (ZooKeeper's x509 scheme, the subject) too, as
	 * digest_auth does to its user. */
	int x509_acl;
	/* Whose names the lock nodes this session creates have (names.h):
	 * zklockfs's own, Curator's or kazoo's. */
	enum zkl_style dialect;
	/* Every held lock is declared lost this long before the server may
	 * end the session, if it has not answered by then (jeopardy,
	 * session_clock.c).  0: a tenth of the timeout the server granted,
	 * and at least half a second (heartbeat.h).  Kept under a quarter
	 * of that timeout. */
	int jeopardy_margin_ms;
	/* Make resource znodes persistent even where they could be
	 * containers (session.c says when they are). */
	int persistent_resources;
};

enum zkl_conn_state {
	ZKL_CONN_CONNECTING, /* no server yet, or the connection broke */
	ZKL_CONN_CONNECTED,
	ZKL_CONN_EXPIRED, /* the session ended; a new one is on its way */
};

/* A held lock was lost: `node` (its path), `why` (its session expired,
 * or the node was deleted by someone else) and `data` (the content it was
 * created with).  Called once per lost lock, on ZooKeeper's completion
 * thread, without any lock of ours held. */
typedef void (*session_lost_fn)(const char *node, const char *why,
				const void *data, size_t len, void *arg);

/* Connect and create the base path.  Blocks the calling thread (startup
 * only).  On failure returns -errno (-ETIMEDOUT when no server answered in
 * time) and writes a message for the user into err.  *out is set on 0. */
int session_open(const struct zkl_session_opts *opts, struct zkl_session **out,
		 char *err, size_t errlen);

/* Who to tell about lost locks.  Set it before the first lock request. */
void session_set_lost_hook(struct zkl_session *s, session_lost_fn fn,
			   void *arg);

/* Who to tell about held locks asked to let go (a node of ours given
 * the revocation mark, revoke.h): called once per lock, as the lost hook
 * is, with why "it was asked to let go" and the holder's identity (the
 * node's data before the mark replaced it).  Set it before the first
 * lock request. */
void session_set_revoke_hook(struct zkl_session *s, session_lost_fn fn,
			     void *arg);

/* Close the ZooKeeper handle (deleting this session's ephemeral nodes) and
 * free the session.  Every lock request must have been released before. */
void session_close(struct zkl_session *s);

/* Base path, as given at open; valid until session_close. */
const char *session_base(const struct zkl_session *s);

/* ZooKeeper session id (0 before the first connection). */
int64_t session_id(struct zkl_session *s);

enum zkl_conn_state session_state(struct zkl_session *s);

/* What .status shows: the state of the session and what it did. */
/* Lock requests are counted by mode (enum zkl_mode) and by the kind their
 * owner gave them (LOCKREQ_KIND: how the lock was asked for; 0 if none). */
#define ZKL_MODES 3
#define ZKL_KINDS 4

struct zkl_session_stats {
	enum zkl_conn_state state;
	int dead; /* no new session can help (authentication) */
	int64_t session_id;
	int timeout_ms;   /* as the server granted it */
	char server[128]; /* the server connected to (or being tried) */
	uint64_t held;    /* lock requests holding now (leases included) */
	uint64_t waiting; /* ... queued or about to be */
	uint64_t leases_held, leases_waiting;   /* of those, the leases */
	uint64_t held_by[ZKL_MODES][ZKL_KINDS]; /* held, by mode and kind */
	uint64_t waiting_by[ZKL_MODES][ZKL_KINDS];
	uint64_t grants; /* since the mount, over all its sessions */
	uint64_t losses; /* held locks lost (session ended, node deleted,
			  * jeopardy) */
	uint64_t expirations;
	uint64_t delete_retries; /* deletes of our nodes ZooKeeper refused
				   * (each tried again until it lands) */
	int containers;          /* resource znodes are containers */
	uint64_t deadlocks; /* waits failed with EDEADLK: they closed a cycle
			     * across hosts (waitgraph.h) */
	uint64_t deadlock_checks;   /* long waits checked for a cycle
				     * (lockreq_check_deadlock) */
	uint64_t resources_created; /* resource znodes this mount made (new
				     * names, and names made again after
				     * the server reaped them: a create
				     * cannot tell which) */
	uint64_t asked;             /* held locks asked to let go (revoke.h) */
	uint64_t maxhold_asks;      /* holds past their limit asked to let go */
	uint64_t maxhold_breaks;    /* ... and broken (maxhold.h) */
	int jeopardy;               /* declared, no answer since */
	uint64_t jeopardies;        /* declared since the mount */
	int64_t jeopardy_wall_ms;   /* the last one, CLOCK_REALTIME; 0: none */
	int margin_ms;              /* the jeopardy margin in use */
	int64_t heartbeat_age_ms;   /* since the send of the newest heartbeat
				   * answered (or of the session's start) */
};

/* A consistent snapshot; counts every live request (O(requests)). */
void session_stats(struct zkl_session *s, struct zkl_session_stats *out);

/* The requests ZooKeeper's answer times are kept for. */
enum zkl_request_op {
	ZKL_OP_SYNC,   /* the session's heartbeat */
	ZKL_OP_CREATE, /* a lock node's */
	ZKL_OP_DELETE, /* ... and its release */
	ZKL_OPS
};

/* Since session_open, by mode and kind: locks granted, released (by
 * their owner) and lost, with how long each was waited for (its request's
 * start to its grant) and held (its grant to its release or loss). */
struct zkl_lock_metrics {
	uint64_t grants, releases, losses;
	struct histogram wait, hold;
};

struct zkl_session_metrics {
	struct zkl_lock_metrics locks[ZKL_MODES][ZKL_KINDS];
	struct histogram requests[ZKL_OPS]; /* answer times, seconds */
	uint64_t disconnects; /* connections lost (not sessions) */
};

/* A consistent copy of the session's metrics, without asking ZooKeeper
 * (session.c).  Any thread. */
void session_metrics(struct zkl_session *s, struct zkl_session_metrics *out);

/* The server list, as given at open. */
const char *session_hosts(const struct zkl_session *s);

#endif
