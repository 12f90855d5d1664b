/*
 * queue.h - what one session knows of one resource's queue of lock nodes,
 * shared by all the session's requests on that resource: the latest
 * listing of its children, the nodes seen to go since, and the one listing
 * in flight.
 *
 * Why: with N requests of one mount queued on one resource, looking at the
 * queue with a fresh listing at every handoff costs N names each time
 * (O(N^2) over the queue), and N openers arriving together would send N
 * listings.  Instead:
 *  - a request that needs to see the queue waits for the next listing sent
 *    after its need arose.  At most one listing per resource is on the wire;
 *    its reply serves every request that was waiting when it was sent, and
 *    the next one leaves as soon as it is back;
 *  - a waiter whose watched node is deleted looks again at the listing the
 *    session already has, with that node marked gone.  Sequence numbers only
 *    grow, so every node that can be ahead of the waiter is in any listing
 *    taken after its own node was created.  It then watches the nearest node
 *    still there ahead of it; one found gone already (ZNONODE) is marked in
 *    turn.  A handoff costs one notification, however long the queue.
 *    Except after a downgrade, which puts a read node with the write
 *    node's number in its place (lockreq.c): a write node whose deletion
 *    was not seen as it happened, or a Curator one, is followed by a
 *    listing (lr_gone_for_sure, lockreq.c).
 * Each waiter still watches exactly one node: herd-freedom is unchanged.
 *
 * Leases (doc/design.md) need two more things, which the view keeps too:
 * the limit N, read from the resource's data by a get sent just before
 * the listing whenever a lease is in line for it (the get also watches the
 * data, so that a change of N wakes the session's lease waiters), and
 * which lease nodes are known to be granted.
 *
 * Everything here is guarded by the session mutex.
 */
#ifndef ZKL_QUEUE_H
#define ZKL_QUEUE_H

#include <stdint.h>
#include <sys/types.h>

#include "list.h"
#include "names.h"
#include "strtab.h"

struct zkl_session;

/* A node of this session being deleted: nobody holds it any more, so the
 * session's requests behind it need not wait for ZooKeeper to say so. */
struct zkl_queue_leaving {
	struct zkl_link link; /* in q->leaving */
	const char *name;     /* child name; stays valid while listed */
};

/* A request's place in the line for the next listing. */
struct zkl_queue_wait {
	struct zkl_link link;     /* in q->waiting, in order of gen */
	uint64_t gen;             /* the listing that will serve it */
	unsigned wants_limit : 1; /* a lease: the listing reads the limit */
	/* The listing came back with ZooKeeper code rc; on ZOK the queue's
	 * view is that listing.  Session mutex held; consumes the reference
	 * the owner took to line up. */
	void (*listed_locked)(struct zkl_queue_wait *w, int rc,
			      struct zkl_link *notify);
};

struct zkl_queue {
	struct strtab_item item; /* in the session's table; key: dir */
	struct zkl_session *s;
	int refs; /* requests + the listing in flight */

	/* The latest listing, in queue order; gone[i] once nodes[i] is known
	 * to be deleted; every node before lo is gone; granted[i] once the
	 * lease nodes[i] is known to be granted. */
	struct zkl_node *nodes;
	unsigned char *gone, *granted;
	size_t n, lo;
	int32_t cversion; /* the resource's, with that listing: the order's
			   * anchor (lockrule.h) */

	/* The limit of the resource's leases, as the latest get read it:
	 * limit_err is 0, -EBADMSG (the data is not a limit), -ENOENT (no
	 * resource znode), or -ENODATA (none read yet): facts, shared by
	 * every request.  A get that failed otherwise (a lost connection)
	 * fails the listing it went with instead (limit_rc), so that only
	 * the requests it served see it, as the transient error it is. */
	unsigned limit;
	int limit_err;
	int limit_rc; /* ZooKeeper's code of the get in flight, if it failed */

	/* With credentials: the resource znode's ACL, read with the first
	 * listing (session_acl.c): checked once it was read, and open if it
	 * lets another client in (then nobody queues here). */
	unsigned acl_checked : 1, acl_open : 1;

	uint64_t sent;           /* generation of the last listing sent */
	int in_flight;           /* ... and its reply is still due */
	struct zkl_link waiting; /* of struct zkl_queue_wait */
	struct zkl_link leaving; /* of struct zkl_queue_leaving */
	char dir[];
};

/* The queue of resource znode `dir`, with a reference for the caller.
 * Returns NULL when out of memory. */
struct zkl_queue *queue_get_locked(struct zkl_session *s, const char *dir);
/* Drop a reference; a request's leaving mark (below), if given, goes with
 * it. */
void queue_put_locked(struct zkl_queue *q, struct zkl_queue_leaving *l);

/* Line up w for a listing that reflects every request the session has
 * sent so far; w->listed_locked is called when it comes.
 * If w was in line already it moves to the back.  Returns 0, or -errno if
 * no listing could be sent (w is not in line then). */
int queue_want_listing_locked(struct zkl_queue *q, struct zkl_queue_wait *w);

/* Take w out of the line, if it is in it.  Returns 1 if it was. */
int queue_leave_line_locked(struct zkl_queue_wait *w);

/* Index of the node called `name` (a child name, not a path) in the
 * latest listing, or -1. */
ssize_t queue_find(const struct zkl_queue *q, const char *name);

/* Note that the node called `name` has been deleted. */
void queue_mark_gone(struct zkl_queue *q, const char *name);

/* Note that the lease node called `name` is granted. */
void queue_mark_granted(struct zkl_queue *q, const char *name);

/* Our node l->name is being deleted: count it as gone in this view and in
 * every later one, until queue_leaving_done.  Why this is safe: the lock
 * it stood for is released here and now; other sessions still see the node
 * until the delete is applied, which only makes them wait longer.  Why it
 * matters: a close's RELEASE may reach the daemon just after the next open
 * of the same lock sent its create, and that open would otherwise wait for
 * the delete to be committed and notified. */
void queue_leaving_add(struct zkl_queue *q, struct zkl_queue_leaving *l);
void queue_leaving_done(struct zkl_queue_leaving *l);

/* The node that nodes[self] must watch (lockrule_watch), or -1. */
ssize_t queue_pick_watch(const struct zkl_queue *q, size_t self);

/* The session expired: its listings describe nothing that is left, and
 * the reply of a listing in flight, if it comes, is to be ignored. */
void queue_session_expired_locked(struct zkl_session *s);

#endif
