/*
 * session_watch.c - one ZooKeeper watch per node path, however many of
 * the session's requests wait for that node (watchtab.h), and waking them
 * when it fires.
 */
#include "internal.h"
#include "zkerr.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Wake the requests watching path; `deleted`: the node is known gone. */
static void session_wake_path_locked(struct zkl_session *s, const char *path,
				     int deleted, struct zkl_link *notify)
{
	struct zkl_link fired;

	ZKL_ASSERT_HELD(&s->lock);
	watchtab_take(&s->watches, path, &fired);
	while (!list_empty(&fired)) {
		struct zkl_watch *w =
			ZKL_CONTAINER_OF(fired.next, struct zkl_watch, link);
		list_del(&w->link);
		w->fired_locked(w, deleted ? path : NULL, notify);
	}
}

/* The per-node watcher.  The client also copies every session event to it;
 * those are the default watcher's business. */
static void session_node_watcher(zhandle_t *zh, int type, int state,
				 const char *path, void *ctx)
{
	struct zkl_session *s = ctx;
	struct zkl_link notify;

	(void)zh;
	(void)state;
	if (type == ZOO_SESSION_EVENT || !path)
		return;
	session_enter(s, &notify);
	session_wake_path_locked(s, path, type == ZOO_DELETED_EVENT, &notify);
	session_leave(s, &notify);
}

struct session_watch_ctx {
	struct zkl_session *s;
	char path[];
};

/* The reply to the get that set a watch.  If no watch was set (the node is
 * already gone, or the connection broke), nobody will be told by ZooKeeper:
 * wake every request waiting for this path so each looks again. */
static void session_watch_reply(int rc, const char *value, int len,
				const struct Stat *stat, const void *data)
{
	struct session_watch_ctx *ctx = (struct session_watch_ctx *)data;
	struct zkl_session *s = ctx->s;

	(void)value;
	(void)len;
	(void)stat;
	if (rc != ZOK) {
		struct zkl_link notify;
		session_enter(s, &notify);
		session_wake_path_locked(s, ctx->path, rc == ZNONODE, &notify);
		session_leave(s, &notify);
	}
	free(ctx);
}

/* Undo the registration of w, the first watch on path, when ZooKeeper was
 * not asked to watch it after all.  The whole entry goes: an entry left
 * behind would tell the next waiter on path that a watch is already set,
 * and that waiter would wait for an event that never comes. */
static void session_unwatch_first_locked(struct zkl_session *s,
					 const char *path, struct zkl_watch *w)
{
	struct zkl_link taken;
	size_t n = watchtab_take(&s->watches, path, &taken);

	assert(n == 1 && taken.next == &w->link);
	(void)n;
	list_del(&w->link);
}

int session_watch_locked(struct zkl_session *s, const char *path,
			 struct zkl_watch *w)
{
	struct session_watch_ctx *ctx;
	size_t len = strlen(path) + 1;
	int first = watchtab_add(&s->watches, path, w);
	int rc;

	ZKL_ASSERT_HELD(&s->lock);
	if (first <= 0)
		return first;
	ctx = malloc(sizeof(*ctx) + len);
	if (!ctx) {
		session_unwatch_first_locked(s, path, w);
		return -ENOMEM;
	}
	ctx->s = s;
	memcpy(ctx->path, path, len);
	/* A get, not an exists: on a missing node exists would leave a watch
	 * for its creation behind, and lock node names are never reused. */
	rc = zoo_awget(s->zh, path, session_node_watcher, s,
		       session_watch_reply, ctx);
	if (rc != ZOK) {
		free(ctx);
		session_unwatch_first_locked(s, path, w);
		return zkerr_errno(rc);
	}
	return 0;
}
