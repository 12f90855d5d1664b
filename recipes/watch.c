/*
 * watch.c - the session's watches: one ZooKeeper watch per node path,
 * however many of the session's requests wait for that node, kept in a
 * table of path -> waiting watches (watchtab.h), and waking them when it
 * fires (internal.h).
 */
#include "watchtab.h"
#include "internal.h"
#include "names.h"
#include "zkerr.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/*
 * Path -> waiting watches (see watchtab.h).
 */
struct watchtab_entry {
	struct strtab_item item; /* key: path */
	struct zkl_link watches;
	unsigned connection; /* the table's, when the entry was made */
	char path[];
};

static struct watchtab_entry *watchtab_entry_of(struct strtab_item *item)
{
	return item ? ZKL_CONTAINER_OF(item, struct watchtab_entry, item)
		    : NULL;
}

int watchtab_init(struct watchtab *t)
{
	t->connection = 0;
	return strtab_init(&t->paths);
}

/* Move the entry's watches to `fired` (or just unlink them if NULL) and
 * free the entry, which is no longer in the table.  Returns how many
 * watches it had. */
static size_t watchtab_free_entry(struct watchtab_entry *e,
				  struct zkl_link *fired)
{
	size_t n = 0;

	while (!list_empty(&e->watches)) {
		struct zkl_watch *w = ZKL_CONTAINER_OF(e->watches.next,
						       struct zkl_watch, link);
		list_del(&w->link);
		w->entry = NULL;
		if (fired)
			list_add_tail(fired, &w->link);
		n++;
	}
	free(e);
	return n;
}

/* Empty the table, moving every watch to fired (or nowhere if NULL). */
static size_t watchtab_free_all(struct watchtab *t, struct zkl_link *fired)
{
	struct strtab_item *it = strtab_detach_all(&t->paths);
	size_t n = 0;

	while (it) {
		struct strtab_item *next = it->next;
		n += watchtab_free_entry(watchtab_entry_of(it), fired);
		it = next;
	}
	return n;
}

void watchtab_destroy(struct watchtab *t)
{
	watchtab_free_all(t, NULL);
	strtab_destroy(&t->paths);
}

int watchtab_add(struct watchtab *t, const char *path, struct zkl_watch *w)
{
	struct watchtab_entry *e =
		watchtab_entry_of(strtab_find(&t->paths, path));
	int first = 0;

	if (!e) {
		size_t len = strlen(path) + 1;
		e = malloc(sizeof(*e) + len);
		if (!e)
			return -ENOMEM;
		memcpy(e->path, path, len);
		e->item.key = e->path;
		e->connection = t->connection;
		list_init(&e->watches);
		strtab_insert(&t->paths, &e->item);
		first = 1;
	}
	list_add_tail(&e->watches, &w->link);
	w->entry = e;
	return first;
}

int watchtab_is_stale(const struct watchtab *t, const char *path)
{
	const struct watchtab_entry *e =
		watchtab_entry_of(strtab_find(&t->paths, path));

	return e && e->connection != t->connection;
}

int watchtab_remove(struct watchtab *t, struct zkl_watch *w)
{
	(void)t;
	if (!w->entry)
		return 0;
	list_del(&w->link);
	w->entry = NULL;
	/* The entry stays while ZooKeeper may still deliver its event: an
	 * empty entry is harmless and saves a second watch registration if
	 * another waiter picks the same node.  It goes when the event comes. */
	return 1;
}

size_t watchtab_take(struct watchtab *t, const char *path,
		     struct zkl_link *fired)
{
	struct watchtab_entry *e =
		watchtab_entry_of(strtab_find(&t->paths, path));

	list_init(fired);
	if (!e)
		return 0;
	strtab_remove(&t->paths, &e->item);
	return watchtab_free_entry(e, fired);
}

size_t watchtab_take_marks(struct watchtab *t, const char *path,
			   struct zkl_link *fired)
{
	struct watchtab_entry *e =
		watchtab_entry_of(strtab_find(&t->paths, path));
	size_t n = 0;

	list_init(fired);
	if (!e)
		return 0;
	for (struct zkl_link *l = e->watches.next; l != &e->watches;) {
		struct zkl_watch *w =
			ZKL_CONTAINER_OF(l, struct zkl_watch, link);
		l = l->next;
		if (!w->wants_marks)
			continue;
		list_del(&w->link);
		w->entry = NULL;
		list_add_tail(fired, &w->link);
		n++;
	}
	/* The entry stays: ZooKeeper still watches the node for the rest. */
	return n;
}

size_t watchtab_take_all(struct watchtab *t, struct zkl_link *fired)
{
	list_init(fired);
	return watchtab_free_all(t, fired);
}

/*
 * One ZooKeeper watch per node path, however many of
 * the session's requests wait for that node (watchtab.h), and waking them
 * when it fires.
 */
/* Tell the watches taken into `fired` what became of path. */
static void session_fire_locked(struct zkl_link *fired, const char *path,
				enum zkl_watch_event ev,
				struct zkl_link *notify)
{
	while (!list_empty(fired)) {
		struct zkl_watch *w =
			ZKL_CONTAINER_OF(fired->next, struct zkl_watch, link);
		list_del(&w->link);
		w->fired_locked(w, path, ev, notify);
	}
}

/* Wake every request watching path. */
void session_wake_path_locked(struct zkl_session *s, const char *path,
			      enum zkl_watch_event ev, struct zkl_link *notify)
{
	struct zkl_link fired;

	ZKL_ASSERT_HELD(&s->lock);
	watchtab_take(&s->watches, path, &fired);
	session_fire_locked(&fired, path, ev, notify);
}

/* The table's key for the watches on path's children: path and a '/',
 * which no znode path ends with.  Returns 0 or -ENAMETOOLONG. */
static int session_children_key(const char *path,
				char key[NAMES_MAX_NODE_PATH + 2])
{
	size_t len = strlen(path);

	if (len > NAMES_MAX_NODE_PATH)
		return -ENAMETOOLONG;
	memcpy(key, path, len);
	key[len] = '/';
	key[len + 1] = '\0';
	return 0;
}

/* The per-node watcher.  The client also copies every session event to it;
 * those are the default watcher's business.  A deleted node fires both
 * its data watches and its children's. */
static void session_node_watcher(zhandle_t *zh, int type, int state,
				 const char *path, void *ctx)
{
	struct zkl_session *s = ctx;
	char key[NAMES_MAX_NODE_PATH + 2];
	struct zkl_link notify;
	int children;

	(void)zh;
	(void)state;
	if (type == ZOO_SESSION_EVENT || !path)
		return;
	/* Only these concern the watches on a node's children. */
	children = (type == ZOO_CHILD_EVENT || type == ZOO_DELETED_EVENT) &&
		   session_children_key(path, key) == 0;
	session_enter(s, &notify);
	session_changed(s, path); /* before anyone is woken */
	if (type == ZOO_DELETED_EVENT)
		session_wake_path_locked(s, path,
					 watchtab_is_stale(&s->watches, path)
						 ? WATCH_VANISHED
						 : WATCH_GONE,
					 &notify);
	else if (type != ZOO_CHILD_EVENT)
		session_wake_path_locked(s, path,
					 type == ZOO_CHANGED_EVENT
						 ? WATCH_CHANGED
						 : WATCH_UNKNOWN,
					 &notify);
	if (children)
		session_wake_path_locked(s, key, WATCH_UNKNOWN, &notify);
	session_leave(s, &notify);
}

struct session_watch_ctx {
	struct zkl_session *s;
	int wants_marks; /* the sender's: only then can the version matter */
	char path[];
};

/* The reply to the get that set a watch.  If no watch was set (the node is
 * already gone, or the connection broke), nobody will be told by ZooKeeper:
 * wake every request waiting for this path so each looks again.  If the
 * node's data had been set, ZooKeeper will not say so: tell those who want
 * to know now. */
static void session_watch_reply(int rc, const char *value, int len,
				const struct Stat *stat, const void *data)
{
	struct session_watch_ctx *ctx = (struct session_watch_ctx *)data;
	struct zkl_session *s = ctx->s;
	struct zkl_link notify, fired;

	(void)value;
	(void)len;
	if (rc == ZOK && (!ctx->wants_marks || stat->version == 0)) {
		free(ctx); /* the watch is set, and there is no news */
		return;
	}
	session_enter(s, &notify);
	session_changed(s, ctx->path); /* news, as a watch's would be */
	if (rc != ZOK) {
		session_wake_path_locked(s, ctx->path,
					 rc == ZNONODE ? WATCH_VANISHED
						       : WATCH_UNKNOWN,
					 &notify);
	} else {
		watchtab_take_marks(&s->watches, ctx->path, &fired);
		session_fire_locked(&fired, ctx->path, WATCH_CHANGED, &notify);
	}
	session_leave(s, &notify);
	free(ctx);
}

/* Undo the registration of w when ZooKeeper was not asked to watch path
 * after all.  When w was the first watch on path, the whole entry goes:
 * an entry left behind would tell the next waiter on path that a watch
 * is already set, and that waiter would wait for an event that never
 * comes. */
void session_watch_undo_locked(struct zkl_session *s, const char *path,
			       struct zkl_watch *w, int first)
{
	struct zkl_link taken;
	size_t n;

	ZKL_ASSERT_HELD(&s->lock);
	if (!first) {
		watchtab_remove(&s->watches, w);
		return;
	}
	n = watchtab_take(&s->watches, path, &taken);
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
	int err;

	ZKL_ASSERT_HELD(&s->lock);
	/* One who wants marks needs the version as of its own watch. */
	if (first < 0 || (first == 0 && !w->wants_marks))
		return first;
	ctx = malloc(sizeof(*ctx) + len);
	/* A get, not an exists: on a missing node exists would leave a watch
	 * for its creation behind, and lock node names are never reused. */
	if (!ctx) {
		err = -ENOMEM;
	} else {
		ctx->s = s;
		ctx->wants_marks = w->wants_marks;
		memcpy(ctx->path, path, len);
		err = zkerr_errno(zoo_awget(s->zh, path, session_node_watcher,
					    s, session_watch_reply, ctx));
	}
	if (err == 0)
		return 0;
	free(ctx);
	session_watch_undo_locked(s, path, w, first);
	return err;
}

int session_awget_locked(struct zkl_session *s, const char *path,
			 data_completion_t done, const void *data)
{
	ZKL_ASSERT_HELD(&s->lock);
	return zoo_awget(s->zh, path, session_node_watcher, s, done, data);
}

int session_watch_armed_locked(struct zkl_session *s, const char *path,
			       struct zkl_watch *w)
{
	ZKL_ASSERT_HELD(&s->lock);
	return watchtab_add(&s->watches, path, w) < 0 ? -ENOMEM : 0;
}

int session_awget_children_locked(struct zkl_session *s, const char *path,
				  strings_completion_t done, const void *data)
{
	ZKL_ASSERT_HELD(&s->lock);
	return zoo_awget_children(s->zh, path, session_node_watcher, s, done,
				  data);
}

int session_watch_children_armed_locked(struct zkl_session *s, const char *path,
					struct zkl_watch *w)
{
	char key[NAMES_MAX_NODE_PATH + 2];
	int err = session_children_key(path, key);

	ZKL_ASSERT_HELD(&s->lock);
	if (err == 0 && watchtab_add(&s->watches, key, w) < 0)
		err = -ENOMEM;
	return err;
}
