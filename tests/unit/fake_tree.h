/*
 * fake_tree.h - a small ZooKeeper tree behind the scripted calls of
 * fake_zk.h, for the fault tests: the queued calls are answered from it as
 * a server would answer them (sequence numbers from the parent's cversion,
 * ephemeral owners, versions), and its watches fire as its nodes change.
 * A test that has no script of its own lets it run a scenario to its end.
 */
#ifndef FAKE_TREE_H
#define FAKE_TREE_H

#include "fake_zk.h"

/* Only "/" (and the watches gone). */
void fake_tree_reset(void);
/* A persistent node (its parent must be there); data may be NULL. */
void fake_tree_add(const char *path, const char *data);
/* Another client sets path's data: its watches fire now. */
void fake_tree_set(const char *path, const char *data);
/* The session expires (fake_expire, waiters queue again), the old
 * handle's calls fail, its nodes go, and a new session (the next client
 * id) is connected. */
void fake_tree_expire(struct zkl_session *s);
/* Make the n-th reply from now (1: the next) a connection loss, and only
 * that one: what it asked for is done all the same (a create's node is
 * there, unknown to the client), as when the connection drops after the
 * server applied it.  0 turns it off.  Has it happened? */
void fake_fail_reply_at(long n);
int fake_reply_failed(void);
/* Answer every queued call, and those they queue, in order; whenever the
 * queue is empty, resume what waits for the connection (after a lost
 * reply), until nothing is left to do.  Bounded: fails the test after
 * 10,000 replies. */
void fake_tree_settle(struct zkl_session *s);
/* While on, every delete is refused (ZNOAUTH), as an ACL without DELETE
 * would; fake_tree_reset turns it off. */
void fake_tree_refuse_deletes(int on);
/* Another client deletes the k-th ephemeral node under dir (0: the
 * oldest); its watches fire now.  Returns 0 if there is none. */
int fake_tree_delete_lock_node(const char *dir, int k);
/* How many ephemeral nodes of the fake session are in the tree. */
int fake_tree_ephemerals(void);

#endif
