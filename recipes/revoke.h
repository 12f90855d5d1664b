/*
 * revoke.h - ask every holder of a resource to let go, or take its lock
 * away (MOUNT/<resource>/revoke): the holding nodes of every tool, as
 * holders.h finds them, get Curator's revocation mark as their data, or
 * are deleted.
 *
 * Asking takes nothing away: a Curator holder made revocable hears of
 * it (its RevocationListener), a mount's holder is told (a later step),
 * and anyone else goes on holding.  Breaking deletes the nodes: the next
 * waiter of any tool is granted, and a mount whose held node is deleted
 * treats its lock as lost.  Orphans (persistent lock nodes of no
 * session, which no session's end removes) are deleted by a break too.
 */
#ifndef ZKL_REVOKE_H
#define ZKL_REVOKE_H

#include <stddef.h>
#include <string.h>

#include "session.h"

/* The data Curator's Revoker.attemptRevoke sets on a node to ask its
 * holder to let go (and its RevocationListener looks for). */
#define REVOKE_MARK "__REVOKE__"

/* Is a node's data the mark?  Curator's, alone; or, on the nodes a mount
 * asks itself (maxhold), the mark's line followed by what the node held
 * (its holder's identity, a downgrade's token), which every host still
 * reads. */
static inline int revoke_is_marked(const char *data, size_t len)
{
	size_t n = sizeof(REVOKE_MARK) - 1;

	return data && len >= n && memcmp(data, REVOKE_MARK, n) == 0 &&
	       (len == n || data[n] == '\n');
}

/* The data a break sets first on a mount's holding node (revoke.c), the
 * mark's line followed by what the node held: its mount tells the
 * holder, then deletes the node itself. */
#define REVOKE_BREAK_MARK "__ZKLOCKFS_BREAK__"

static inline int revoke_is_break(const char *data, size_t len)
{
	size_t n = sizeof(REVOKE_BREAK_MARK) - 1;

	return data && len >= n && memcmp(data, REVOKE_BREAK_MARK, n) == 0 &&
	       (len == n || data[n] == '\n');
}

enum revoke_how {
	REVOKE_ASK,   /* set the mark on every holding node */
	REVOKE_BREAK, /* take every holding node away: a mount's is marked
		       * and let go by its mount, or deleted once the
		       * session timeout has run; a peer's, and orphans,
		       * are deleted at once */
};

/* What was done: nodes marked or deleted; nodes found gone already
 * (released meanwhile) are neither. */
struct revoke_result {
	size_t done;
	size_t failed;
};

/* err: 0, or -errno of the listing (a missing resource is 0 and nothing
 * done); each node's own failure is counted in r->failed. */
typedef void (*revoke_fn)(int err, const struct revoke_result *r, void *arg);

/* Ask or break the holders of the resource znode `dir`.  cb runs once, on
 * ZooKeeper's completion thread, unless this returns -errno. */
int revoke_start(struct zkl_session *s, const char *dir, enum revoke_how how,
		 revoke_fn cb, void *arg);

#endif
