/*
 * fake_zk.h - a scripted stand-in for the ZooKeeper client's asynchronous
 * calls, for unit tests of the lock request state machine only.  The test
 * executable defines zoo_acreate2() & co., which take precedence over the
 * shared library's; each call is queued and the test completes it with the
 * result it chooses, in order, as the real client would.
 */
#ifndef FAKE_ZK_H
#define FAKE_ZK_H

#include <zookeeper/zookeeper.h>

#include "internal.h"

enum fake_op {
	FAKE_CREATE,
	FAKE_CHILDREN,
	FAKE_EXISTS,
	FAKE_GET,
	FAKE_DELETE,
	FAKE_SET,
	FAKE_CREATE_PARENT,
	FAKE_READ,      /* zoo_aget: no watch */
	FAKE_WCHILDREN, /* zoo_awget_children: a watch on the children */
	FAKE_MULTI      /* zoo_amulti: path is its first op's */
};

struct fake_call {
	enum fake_op op;
	char path[512];
	const void *completion;
	const void *data;
	watcher_fn watcher;
	void *watcher_ctx;
	int version;    /* of a set */
	int with_stat;  /* a getChildren2: its reply carries the parent's */
	int mode;       /* of a create */
	char value[64]; /* what a create or set stores */
	int valuelen;
	const zoo_op_t *ops; /* a multi's, kept by the caller until its end */
	zoo_op_result_t *results;
	int count;
};

extern int fake_zoo_state;
/* Keep what a create or set stores in c (cut to the record's room). */
void fake_call_value_of(struct fake_call *c, const char *value, int len);
/* When not ZOK, the next zoo_awget() returns it and queues nothing, as the
 * client does when it cannot send (ZMARSHALLINGERROR, ZINVALIDSTATE). */
extern int fake_awget_fails_with;

/* The owner of the requests a test makes (done callback fake_on_done):
 * how many times done was called, and its last error (12345 before). */
extern int fake_done_calls, fake_done_err;
struct zkl_lockreq;
void fake_on_done(struct zkl_lockreq *lr, int err, void *arg);

/* A session for tests: connected, id 77, base "/b", no real handle.  The
 * owner's counts start again. */
struct zkl_session *fake_session(void);
void fake_session_free(struct zkl_session *s);

/* Refuse the n-th ZooKeeper call from now (1: the next), and only that
 * one: the call returns fake_refused_rc and queues nothing.  0 turns
 * it off (and so does fake_session).  Has it been refused? */
void fake_fail_call_at(long n);
/* What the refused call returns instead (fake_session resets it). */
extern int fake_refused_rc;
int fake_call_failed(void);
/* The oldest queued call, taken off the queue (fake_tree.c answers it). */
struct fake_call fake_take(void);

/* The oldest queued call's op (asserts there is one). */
enum fake_op fake_peek_op(void);
/* Number of queued calls; the oldest one (asserts its op). */
int fake_pending(void);
struct fake_call *fake_peek(enum fake_op op);

/* Complete the oldest call. */
void fake_complete_create(int rc, const char *seq_suffix, int64_t czxid);
/* A listing's reply.  A getChildren2's stat has the parent's cversion as
 * ZooKeeper would have it just after the newest of the names was created
 * (the newest by the old rule: the greatest number within 2^31), unless
 * a test sets fake_next_cversion (used once). */
void fake_complete_children(int rc, const char *const *names, int n);
extern int fake_has_next_cversion;
extern int32_t fake_next_cversion;
void fake_complete_exists(int rc, int64_t owner, int64_t czxid);
void fake_complete_get(int rc);
/* The reply to the get by which a holder watches its own node `name`
 * (asserted): the node is there. */
void fake_complete_own_watch(const char *name);
/* A get's reply with the node's data and version. */
void fake_complete_get_data(int rc, const char *value, int32_t version);
void fake_complete_read(int rc, const char *value, int64_t czxid,
			int64_t ctime_ms);
void fake_complete_void(enum fake_op op, int rc);
/* A set's reply. */
void fake_complete_set(int rc);
/* A multi's reply: rc for the whole; on ZOK each create op's node is its
 * path and suffixes[i] (suffixes NULL: the path alone), and each set's
 * stat has mzxid fake_multi_zxid (the transaction's zxid). */
void fake_complete_multi(int rc, const char *const *suffixes);
extern int64_t fake_multi_zxid;
/* A zoo_awget_children's reply. */
void fake_complete_wchildren(int rc, const char *const *names, int n);
/* What the session does when ZooKeeper says the session expired; lost
 * gets the locks lost (free them with fake_free_lost). */
void fake_expire(struct zkl_session *s, int requeue, struct zkl_link *lost);
void fake_free_lost(struct zkl_link *lost);
/* Every time the session's clock waits for has come
 * (session_resume_at_locked): resume what waits for one.  Returns how
 * many. */
int fake_run_due(struct zkl_session *s);
/* The connection is back: resume what waits for it. */
void fake_resume_all(struct zkl_session *s);
/* Fire the watcher registered by a get on path. */
void fake_fire_watch(const char *path); /* the node was deleted */
/* Any event type (ZOO_CHANGED_EVENT, ...). */
void fake_fire_watch_event(int type, const char *path);

/* Set the session's connection state, as its watcher would. */
void fake_set_state(struct zkl_session *s, enum zkl_conn_state state);
/* A transaction's reply is lost with the connection; nothing is sent
 * until it comes back; then what waits for it resumes. */
void fake_lose_multi_reply_and_reconnect(struct zkl_session *s);
/* The oldest call is the delete of a node whose path holds `name`:
 * complete it. */
void fake_expect_delete_of(const char *name);

#endif
