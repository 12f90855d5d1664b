/*
 * watchtab.h - which watches wait for which znode path.
 *
 * ZooKeeper's C client calls a watcher once per (function, context, path),
 * so zklockfs registers one watcher per session and keeps here the list of
 * requests that care about each path.  When several waiters of one mount
 * watch the same node (readers behind one writer), ZooKeeper sends one
 * notification and this table wakes them all.
 *
 * Not thread-safe: the owner (the session) guards it with its mutex.
 */
#ifndef ZKL_WATCHTAB_H
#define ZKL_WATCHTAB_H

#include <stddef.h>

#include "list.h"
#include "strtab.h"

/* What became of a watched node. */
enum zkl_watch_event {
	WATCH_GONE,     /* it was deleted */
	WATCH_CHANGED,  /* its data was set (for a watch that wants marks:
			* or had been, before the watch was set) */
	WATCH_VANISHED, /* it is gone, but a change of its data just
			 * before may have gone unseen: the node was
			 * missing when the watch was set, or its deletion
			 * was reported after a reconnection (ZooKeeper
			 * then tells a deletion alone) */
	WATCH_UNKNOWN,  /* anything else, or no watch could be set: the
			 * watcher must look again */
};

struct zkl_watch {
	struct zkl_link link; /* in its entry's list while registered */
	struct watchtab_entry *entry;
	/* Set data is news to this watcher: a lease node's data is set
	 * again when it is granted (its mark, doc/design.md), so a version
	 * above 0 in the reply that sets the watch means "granted". */
	unsigned wants_marks : 1;
	/* The watched node (its path) changed or went.  Called by the
	 * table's owner with its mutex held; the owner's notices go on
	 * `notify`.  w may be freed by it. */
	void (*fired_locked)(struct zkl_watch *w, const char *path,
			     enum zkl_watch_event ev, struct zkl_link *notify);
};

struct watchtab {
	struct strtab paths; /* of struct watchtab_entry */
	unsigned connection; /* counts the owner's connections: an entry
			      * made under an earlier one is stale */
};

/* Returns 0 or -ENOMEM. */
int watchtab_init(struct watchtab *t);
/* Frees the table; registered watches are simply forgotten. */
void watchtab_destroy(struct watchtab *t);

/* Register w for path.  Returns 1 if this is the first watch on path (the
 * caller must then ask ZooKeeper for a watch), 0 if ZooKeeper already
 * watches it for this table, or -ENOMEM. */
int watchtab_add(struct watchtab *t, const char *path, struct zkl_watch *w);

/* Is the watch on path older than the current connection (its events
 * may have been sent again by the server after a reconnection)?  0 if
 * there is no watch on path. */
int watchtab_is_stale(const struct watchtab *t, const char *path);

/* Unregister w if registered.  Returns 1 if it was, 0 if not. */
int watchtab_remove(struct watchtab *t, struct zkl_watch *w);

/* Move every watch registered for path to `fired` (initialised here) and
 * forget the path.  Returns how many were moved. */
size_t watchtab_take(struct watchtab *t, const char *path,
		     struct zkl_link *fired);

/* Move the watches registered for path that want marks to `fired`
 * (initialised here); the others stay.  Returns how many were moved. */
size_t watchtab_take_marks(struct watchtab *t, const char *path,
			   struct zkl_link *fired);

/* Move every watch of every path to `fired`, leaving the table empty. */
size_t watchtab_take_all(struct watchtab *t, struct zkl_link *fired);

#endif
