/*
 * waitgraph.h - deadlocks across hosts: a wait that closes a cycle of
 * waits, whatever hosts its members are on, fails with EDEADLK.
 *
 * The graph's nodes are owners, processes named by the host, pid and
 * start time a lock node's data carries (the identity the daemon writes:
 * fs/identity.h); an owner waits for the owners of the nodes ahead of its
 * waiting node that it waits for (lockrule.h).  What a mount publishes is
 * only what nobody else can see: that an owner which holds a lock also
 * waits.  Once such a wait is older than the session's deadlock timeout
 * (-o deadlock_timeout, a second by default), the mount creates an
 * ephemeral record of it, <base>/.zklockfs-waits/<host>~<pid>~<start>~
 * <node name>, whose data is the waiting node's path, syncs, and walks:
 * from its node to the nodes it waits for; from a held node to its
 * owner's records, hence to the nodes those wait for; from a waiting node
 * to the nodes it waits for, in its own queue.  A walk that comes back to
 * a node its own owner holds has found a cycle.  It reads every part of
 * the cycle again and reports it only if nothing changed in between: then
 * all of it stood at one instant, and no member can move.  The member that
 * fails is the youngest wait of the cycle (the waiting node created last);
 * the walker writes the cycle into that node's data, and its mount, which
 * watches the node, fails it with EDEADLK.  doc/design.md ("Deadlocks
 * across hosts") has why every cycle is reported once and no other.
 *
 * An owner that holds nothing publishes nothing and never walks: it takes
 * part in a cycle only through its place in a queue, which the walkers
 * read there.  Waits shorter than the timeout cost nothing.
 */
#ifndef ZKL_WAITGRAPH_H
#define ZKL_WAITGRAPH_H

#include <stddef.h>

/* The child of the base path that holds the records. */
#define WAITGRAPH_DIR ".zklockfs-waits"

/* The mark a walker writes into the data of the wait it fails, followed
 * by a line naming the cycle. */
#define WAITGRAPH_MARK "__ZKLOCKFS_DEADLOCK__\n"

/* A walk gives up (reports nothing) past this many nodes read. */
#define WAITGRAPH_MAX_NODES 64

/* "<host>~<pid>~<start>" of an identity text (fs/identity.h) into out:
 * its length, or -EINVAL if the data names no process (a peer's node). */
int waitgraph_owner_key(const char *data, size_t len, char *out, size_t size);

/* Under -o reentrant a process tree is one owner: a wait's identity
 * names, in a "tree" line ("pid~start" each, space-separated), at most
 * this many ancestors of its process that held a lock on its mount when it
 * asked.  The wait is theirs too: it is recorded under each of them, and a
 * walk that reaches a node any of them holds has closed its cycle. */
#define WAITGRAPH_TREE_MAX 3

/* The i-th (from 0) owner key of that tree line, "<host>~<pid>~<start>",
 * into out: its length, -ENOENT past the last, -EINVAL if malformed. */
int waitgraph_tree_key(const char *data, size_t len, unsigned i, char *out,
		       size_t size);

/* Does data (a node's) carry the deadlock mark? */
int waitgraph_is_mark(const char *data, size_t len);

#endif
