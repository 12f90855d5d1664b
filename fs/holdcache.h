/*
 * holdcache.h - the holders texts that the opens of a resource's holders
 * file share, so that reading it costs what one reader can justify.
 *
 * A holders text costs one ZooKeeper request per node queued on the
 * resource (holders.h).  Taken at every open, it let anyone who may read
 * the file (everyone) make the mount send as many requests as they liked:
 * 100 reads with 300 waiters queued cost 30,000.  So per resource the
 * mount keeps the text of its last fetch, and an open shares it while it
 * is fresh: its fetch was sent less than HOLDCACHE_WINDOW_MS before, and
 * this session has made no change to the resource since, nor been told of
 * one (holders_changes has not moved: a lock of this mount queued,
 * granted or let go, a note, a mark, a limit, a watch that fired, the
 * connection lost or back).  Otherwise the open waits for a fetch: the
 * one in flight if it is fresh for the open, else the next one, sent as
 * soon as the one in flight is back.  One fetch per resource at most is
 * on the wire, and it answers every open that waits for it.
 *
 * So an open reads the queue as ZooKeeper had it at most
 * HOLDCACHE_WINDOW_MS before the open, with everything this mount did or
 * was told of before the open (doc/operations.md says so to users).  A
 * fetch that fails answers every open waiting for it, and for the next
 * one, with its error, and leaves no text: the open after it asks again.
 *
 * Memory: a text is kept only while fresh by its age (the window), and
 * for HOLDCACHE_KEPT_MAX resources at most (the oldest goes first); an
 * entry lives while it keeps a text or a fetch of it is in flight.
 *
 * Threads: opens come on libfuse's workers, fetches end on ZooKeeper's
 * completion thread (or on the worker whose fetch could not be sent).
 */
#ifndef ZKL_HOLDCACHE_H
#define ZKL_HOLDCACHE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "list.h"
#include "strtab.h"

/* How long a holders text answers opens, if nothing changes meanwhile
 * that the mount knows of: changes by other hosts show after this long at
 * most.  A second: a person reading or a script polling sees no lag, and
 * 100 reads in a loop cost one fetch, or one per second. */
#define HOLDCACHE_WINDOW_MS 1000

/* The most resources whose text is kept at once: bounds the memory that
 * reads of many resources within one window can hold. */
#define HOLDCACHE_KEPT_MAX 64

/* When a text was fetched, or an open asked for one: holders_changes,
 * then CLOCK_MONOTONIC in ms, read in that order (before the fetch is
 * sent). */
struct holdcache_stamp {
	uint64_t changes;
	int64_t ms;
};

/* Has a text stamped `taken` outlived the window at now_ms?  Pure. */
int holdcache_expired(const struct holdcache_stamp *taken, int64_t now_ms);

/* May a text stamped `taken` answer an open stamped `now`: nothing
 * counted since, and not expired?  Pure. */
int holdcache_fresh(const struct holdcache_stamp *taken,
		    const struct holdcache_stamp *now);

struct snapshot_pending;

struct holdcache {
	/* Guards the fields below and every entry.  A leaf: taken alone,
	 * and nothing but malloc and free runs under it (replies to the
	 * opens are sent after it is dropped). */
	pthread_mutex_t lock;
	struct strtab entries; /* struct holdcache_entry (holdcache.c), by
				* resource znode path; made at first use */
	struct zkl_link kept;  /* entries that keep a text, oldest first */
	size_t nkept;
};

/* An empty cache; and everything in it freed (the opens still waiting go
 * unanswered: only once FUSE and ZooKeeper have stopped). */
void holdcache_init(struct holdcache *c);
void holdcache_destroy(struct holdcache *c);

/* An open of the holders of resource znode `dir`, stamped `now`.  Answers
 * it with a copy of the kept text, or parks it (a copy of *open) on the
 * fetch in flight or the next.  Returns 1 when the caller must send a
 * fetch of dir now and end it with holdcache_fetched (the open is parked
 * on it, stamped `now`); 0 when the open is answered or parked; -errno
 * (not parked: the caller answers it). */
int holdcache_open(struct holdcache *c, const char *dir,
		   const struct holdcache_stamp *now,
		   const struct snapshot_pending *open);

/* The fetch of dir ended: err (-errno), or text (len bytes, malloc'd: the
 * cache takes it; NULL with an error).  Answers the opens parked on it, a
 * copy of the text each (or the error), and keeps the text.  Returns 1
 * when opens wait for the next fetch: it is under way, stamped `now`
 * (read before this call), and the caller sends it as above; else 0. */
int holdcache_fetched(struct holdcache *c, const char *dir, int err, char *text,
		      size_t len, const struct holdcache_stamp *now);

#endif
