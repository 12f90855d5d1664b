/*
 * holders.h - everyone queued on a resource, read fresh from ZooKeeper: each
 * lock node in queue order with its state (holding or waiting), fencing
 * token, creation time and content (its holder's identity and note),
 * whichever tool made it.  In a mount of dialect curator or kazoo, the
 * leases of that tool's semaphore layout too, and the waiters in its
 * lock's queue.  A snapshot, stale as soon as it is taken; it takes no
 * lock and changes nothing.
 */
#ifndef ZKL_HOLDERS_H
#define ZKL_HOLDERS_H

#include <stddef.h>
#include <stdint.h>

#include "names.h"
#include "session.h"

enum holders_state {
	HOLDERS_HELD, /* nothing it must wait for is ahead of it (a lease:
		       * fewer leases than the limit) */
	HOLDERS_WAITING,
};

struct holders_node {
	const char *where; /* "" for a node of the resource; else the path of
			    * its directory relative to the resource, with a
			    * '/' at the end: "leases/", "../r-__lock__/" */
	const char *name;  /* the node's name in that directory */
	enum holders_state state;
	enum zkl_mode mode;
	enum zkl_style style; /* which tool made it */
	int64_t token;        /* czxid: the holder's fencing token */
	int64_t ctime_ms;     /* when it was created, by the server's clock */
	const char *data;     /* its content (len bytes, not NUL-ended) */
	size_t len;
	int orphan;     /* persistent (ephemeralOwner 0): it belongs to no
		     * session, so no session's end removes it */
	int lost;       /* this mount's, its lock declared lost (jeopardy): the
		     * node goes once the margin has run */
	unsigned holds; /* this mount's, held by so many owners at once
			 * (-o reentrant); 0 for one, or another's node */
	const char *waits_for; /* a waiting lock: the name of the node it
				* waits for (the one it watches), else NULL */
};

/* The semaphore's state, when leases are held or queued. */
struct holders_semaphore {
	unsigned limit; /* the resource's, read with the nodes; 0 if its data
			 * is not a limit (then no lease of the default
			 * layout holds; a peer's that exists does) */
	size_t held;    /* leases that hold */
	size_t free;    /* how many more may: the limit less those counted
			 * against it (kazoo counts every child of the
			 * resource), 0 if none or no limit */
};

/* err: 0, or -errno from zkerr_errno (a missing resource is 0 and no
 * node).  nodes[0..n) and what they point to are valid only during the
 * call: every tool's lock nodes in queue order (holders before waiters),
 * then a peer layout's leases by age and the waiters in its lock's queue
 * in order.  sem: NULL if no lease is held or queued. */
typedef void (*holders_fn)(int err, const struct holders_node *nodes, size_t n,
			   const struct holders_semaphore *sem, void *arg);

/* List the resource znode `dir` (and in the session's peer dialect, that
 * tool's lease directory and lock's queue) and read every lock node and
 * lease.  cb runs once, on ZooKeeper's completion thread, unless this
 * returns -errno. */
int holders_start(struct zkl_session *s, const char *dir, holders_fn cb,
		  void *arg);

/* A count that grows whenever this session changes, or is told of a
 * change to, anything a holders_start(s, dir) reads: one of its lock
 * requests on the resource moves (queued, granted, let go), a note or a
 * mark is set, a limit stored, a watch fires, the connection is lost or
 * back, the hold limits are read again.  Read before holders_start, it
 * says what the query will see: every change counted before it was read
 * (the session sends the change's call and the query's listing under its
 * lock, and ZooKeeper answers one session's requests in order); a change
 * counted after moves it.  Changes by other clients that this session is
 * not told of do not count.  Any thread. */
uint64_t holders_changes(struct zkl_session *s, const char *dir);

#endif
