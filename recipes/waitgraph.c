/*
 * waitgraph.c - deadlocks across hosts (waitgraph.h).
 *
 * One walk per waiting request that may close a cycle (its owner holds a
 * lock: LOCKREQ_MAY_DEADLOCK), made when it starts to wait and freed when
 * the wait ends and no reply of its is due.  Its steps are ZooKeeper
 * calls, one at a time, each completion running the next under the
 * session's mutex: the record, a sync, the list of records, then the
 * nodes reached (a listing of each queue, the data of each node), then,
 * for a cycle, the check of every part of it and the mark.
 */
#include "waitgraph.h"

#include "internal.h"
#include "lockrule.h"
#include "log.h"
#include "lr.h"
#include "zkerr.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

/* Room for an owner key: a host (255), two numbers, two '~'. */
#define WG_KEY_MAX 300
/* Queues listed in one walk. */
#define WG_MAX_DIRS 16

enum wg_todo {
	WG_EXPAND,   /* a waiting node: which nodes does it wait for? */
	WG_CLASSIFY, /* a node waited for: whose is it? */
	WG_FOLLOW,   /* a record of the owner of a held node: its wait */
	WG_DONE,
};

/* A node the walk reached: a wait (the start's node, a record's, or a
 * node waited for that itself waits), a node waited for that holds, or a
 * record of a holder. */
struct wg_item {
	enum wg_todo todo;
	int parent;           /* the item that reached this one; -1: start */
	unsigned holds : 1;   /* waited for, and holding */
	unsigned is_wait : 1; /* a waiting node: a member's wait */
	unsigned is_record : 1;
	unsigned read : 1; /* its data came back */
	/* A wait another walk has marked: its data, at the walk's read or
	 * at the check's, was the deadlock mark.  The cycle is reported
	 * already.  (Not its version: Curator's revoker, say, writes into a
	 * waiting node too.) */
	unsigned marked : 1;
	int64_t czxid; /* as read (a wait's: at the check) */
	int32_t version;
	char owner[WG_KEY_MAX + 1]; /* "" for another tool's node */
	char cmd[64];               /* the owner's command, for the log */
	char path[NAMES_MAX_NODE_PATH + 1]; /* a node's, or a record's */
};

struct wg_listing {
	char dir[NAMES_MAX_NODE_PATH + 1];
	struct String_vector names;
	struct zkl_node *nodes; /* in queue order */
	size_t n;
};

enum wg_stage {
	WG_WAITING,    /* in s->later until the deadlock timeout */
	WG_RECORDING,  /* the record's create sent */
	WG_MAKING_DIR, /* ... found no records' directory: made first */
	WG_SYNCING,
	WG_LISTING, /* the records' list */
	WG_WALKING,
	WG_CHECKING, /* a cycle found: every part read again */
	WG_MARKING,  /* the youngest wait's mark sent */
	WG_IDLE,     /* walked: the record stays while the wait does */
};

struct wg_walk {
	struct zkl_member timer; /* in s->later while WG_WAITING */
	struct zkl_session *s;
	struct zkl_lockreq *lr; /* NULL once the wait ended */
	enum wg_stage stage;
	unsigned in_flight; /* replies due; the walk stays for them */
	int64_t again_ms;   /* the wait to the next walk (doubles) */
	/* record_sent: a create of its records was sent (the wait's end
	 * deletes them); recorded: every one of them is there. */
	unsigned record_sent : 1, recorded : 1, parent_made : 1;
	unsigned records_due; /* WG_RECORDING: creates not yet answered */
	int record_rc;        /* ... and the first of them that failed */
	enum zkl_mode mode;
	/* The owners whose wait it is: its own process first, then (-o
	 * reentrant) the ancestors that held a lock on its mount when it
	 * asked; one record each, named by the owner. */
	char owner[1 + WAITGRAPH_TREE_MAX][WG_KEY_MAX + 1];
	char record[1 + WAITGRAPH_TREE_MAX]
		   [NAMES_MAX_NODE_PATH + WG_KEY_MAX + 64];
	unsigned nowners;
	char cmd[64];
	char node[NAMES_MAX_NODE_PATH + 1];
	struct String_vector records; /* names in WAITGRAPH_DIR */
	struct wg_listing dirs[WG_MAX_DIRS];
	size_t ndirs;
	struct wg_item items[WAITGRAPH_MAX_NODES];
	size_t nitems, next;
	int cycle_end; /* the item that closed the cycle */
	int victim;    /* WG_MARKING: the item of the wait marked */
	/* WG_CHECKING: the cycle's items in the order read again, how
	 * many, how many answered, and whether any changed. */
	int check_order[WAITGRAPH_MAX_NODES];
	unsigned nchecks, checked;
	int check_failed;
};

/* ---- the owner key and the mark ------------------------------------ */

int waitgraph_owner_key(const char *data, size_t len, char *out, size_t size)
{
	size_t hl, pl, sl;
	const char *h = data ? names_data_field(data, len, "host", &hl) : NULL;
	const char *p = data ? names_data_field(data, len, "pid", &pl) : NULL;
	const char *st = data ? names_data_field(data, len, "start", &sl)
			      : NULL;
	int n;

	if (!h || !p || !st || hl == 0 || memchr(h, '~', hl) || hl > 255 ||
	    pl == 0 || pl > 20 || sl == 0 || sl > 24)
		return -EINVAL;
	n = snprintf(out, size, "%.*s~%.*s~%.*s", (int)hl, h, (int)pl, p,
		     (int)sl, st);
	return n < 0 || (size_t)n >= size ? -EINVAL : n;
}

int waitgraph_tree_key(const char *data, size_t len, unsigned i, char *out,
		       size_t size)
{
	size_t hl, tl, at = 0;
	const char *h = data ? names_data_field(data, len, "host", &hl) : NULL;
	const char *t = data ? names_data_field(data, len, "tree", &tl) : NULL;
	const char *end, *tilde;
	int n;

	if (!t)
		return -ENOENT;
	for (;;) { /* the i-th of the space-separated "pid~start" */
		while (at < tl && t[at] == ' ')
			at++;
		if (at == tl)
			return -ENOENT;
		if (i-- == 0)
			break;
		while (at < tl && t[at] != ' ')
			at++;
	}
	end = memchr(t + at, ' ', tl - at);
	if (!end)
		end = t + tl;
	tilde = memchr(t + at, '~', (size_t)(end - (t + at)));
	if (!h || hl == 0 || memchr(h, '~', hl) || hl > 255 || !tilde ||
	    tilde == t + at || tilde + 1 == end || tilde - (t + at) > 20 ||
	    end - tilde - 1 > 24)
		return -EINVAL;
	for (const char *c = t + at; c < end; c++)
		if (c != tilde && (*c < '0' || *c > '9'))
			return -EINVAL;
	n = snprintf(out, size, "%.*s~%.*s", (int)hl, h, (int)(end - (t + at)),
		     t + at);
	return n < 0 || (size_t)n >= size ? -EINVAL : n;
}

int waitgraph_is_mark(const char *data, size_t len)
{
	size_t mlen = strlen(WAITGRAPH_MARK);

	return data && len >= mlen && memcmp(data, WAITGRAPH_MARK, mlen) == 0;
}

/* ---- the walk's life ------------------------------------------------ */

/* The "cmd" line of a node's data into out ("?" if none). */
static void wg_cmd(const char *data, size_t len, char *out, size_t size)
{
	size_t vlen;
	const char *v = data ? names_data_field(data, len, "cmd", &vlen) : NULL;

	snprintf(out, size, "%.*s", v ? (int)vlen : 1, v ? v : "?");
}

/* Forget what the last walk read: the next one reads it all anew. */
static void wg_reset(struct wg_walk *w)
{
	deallocate_String_vector(&w->records);
	for (size_t i = 0; i < w->ndirs; i++) {
		deallocate_String_vector(&w->dirs[i].names);
		free(w->dirs[i].nodes);
	}
	memset(&w->records, 0, sizeof(w->records));
	memset(w->dirs, 0, sizeof(w->dirs));
	w->ndirs = w->nitems = w->next = 0;
	w->cycle_end = -1;
}

static void wg_free(struct wg_walk *w)
{
	wg_reset(w);
	free(w);
}

/* The wait ended, or the walk has nothing more to do for it: free it once
 * no reply of its is due. */
static void wg_put_if_done_locked(struct wg_walk *w)
{
	if (!w->lr && w->in_flight == 0 && !list_linked(&w->timer.resume))
		wg_free(w);
}

static void wg_ignore_void(int rc, const void *data)
{
	(void)rc;
	(void)data;
}

void waitgraph_end_locked(struct zkl_lockreq *lr)
{
	struct wg_walk *w = lr->wg;

	if (!w)
		return;
	ZKL_ASSERT_HELD(&lr->s->lock);
	lr->wg = NULL;
	w->lr = NULL;
	if (list_linked(&w->timer.resume))
		list_del(&w->timer.resume);
	/* After its create, in the session's order: it goes (a closing
	 * session's ephemeral nodes go with it). */
	for (unsigned i = 0; w->record_sent && !w->s->closing && i < w->nowners;
	     i++)
		zoo_adelete(w->s->zh, w->record[i], -1, wg_ignore_void, NULL);
	wg_put_if_done_locked(w);
}

/* Past this the walks of a long wait come no further apart. */
#define WG_AGAIN_MAX_MS 60000

/* The walk ends here (why: NULL when it ran its course), counted.  While
 * the wait lasts another comes, further apart each time: a cycle can close
 * after this walk (a member of a multi-lock granted since, a thread of a
 * process that took a lock since), and this one may have stopped short (a
 * connection lost, a node changed while it was read, a bound).  A mark
 * sent ends the checks: the wait fails with it. */
static void wg_stop(struct wg_walk *w, const char *why)
{
	if (why)
		log_msg(LOG_DEBUG, "deadlock check of %s: %s", w->node, why);
	w->s->deadlock_checks++;
	w->stage = WG_IDLE;
	if (!w->lr || w->in_flight > 0 || list_linked(&w->timer.resume))
		return;
	w->again_ms = w->again_ms * 2 > WG_AGAIN_MAX_MS ? WG_AGAIN_MAX_MS
							: w->again_ms * 2;
	w->stage = WG_WAITING;
	session_resume_at_locked(w->s, &w->timer,
				 session_clock_now() + w->again_ms);
}

/* A reply came: 0 to go on, or -1 if the walk is over (the wait ended,
 * and it may be freed). */
static int wg_reply_locked(struct wg_walk *w)
{
	assert(w->in_flight > 0);
	w->in_flight--;
	if (w->lr)
		return 0;
	wg_put_if_done_locked(w);
	return -1;
}

/* Send one call (rc: the zoo_a* result): counted while due. */
static int wg_sent(struct wg_walk *w, int rc)
{
	if (rc != ZOK) {
		wg_stop(w, zerror(rc));
		return -1;
	}
	w->in_flight++;
	return 0;
}

static void wg_walk_on(struct wg_walk *w);
static void wg_check_start(struct wg_walk *w);
static int wg_add(struct wg_walk *w, enum wg_todo todo, int parent,
		  const char *path);

/* What a reply brought (the fields its call fills). */
struct wg_reply {
	const struct String_vector *names;
	const struct Stat *st;
	const char *value;
	int len;
};

static void wg_advance(struct wg_walk *w, int rc, const struct wg_reply *r);

/* Every reply: under the session's mutex, the walk moves on, unless its
 * wait ended meanwhile (then it may go: w is not used after). */
static void wg_deliver(const void *data, int rc, const struct wg_reply *r)
{
	struct wg_walk *w = (struct wg_walk *)data;
	struct zkl_session *s = w->s;
	struct zkl_link notify;

	session_enter(s, &notify);
	if (wg_reply_locked(w) == 0)
		wg_advance(w, rc, r);
	session_leave(s, &notify);
}

/* The completions of each call's type. */
static void wg_on_string(int rc, const char *value, const void *data)
{
	(void)value;
	wg_deliver(data, rc, &(struct wg_reply){ 0 });
}

static void wg_on_strings(int rc, const struct String_vector *names,
			  const void *data)
{
	wg_deliver(data, rc, &(struct wg_reply){ .names = names });
}

static void wg_on_strings_stat(int rc, const struct String_vector *names,
			       const struct Stat *st, const void *data)
{
	wg_deliver(data, rc, &(struct wg_reply){ .names = names, .st = st });
}

static void wg_on_data(int rc, const char *value, int len,
		       const struct Stat *st, const void *data)
{
	wg_deliver(data, rc,
		   &(struct wg_reply){ .st = st, .value = value, .len = len });
}

static void wg_on_stat(int rc, const struct Stat *st, const void *data)
{
	wg_deliver(data, rc, &(struct wg_reply){ .st = st });
}

/* ---- the record, the sync, the records' list ----------------------- */

/* A record for each owner, pipelined; the last reply goes on. */
static void wg_record(struct wg_walk *w)
{
	int rc = ZOK;

	w->records_due = 0;
	/* Its data is the waiting node's path: a walker reaching the owner
	 * follows it there. */
	for (unsigned i = 0; i < w->nowners && rc == ZOK; i++) {
		rc = zoo_acreate(w->s->zh, w->record[i], w->node,
				 (int)strlen(w->node), w->s->acl, ZOO_EPHEMERAL,
				 wg_on_string, w);
		if (rc == ZOK) {
			w->in_flight++;
			w->records_due++;
			w->record_sent = 1;
		}
	}
	/* Under the session's mutex: no reply is in before this. */
	w->record_rc = rc;
	if (w->records_due == 0)
		return wg_stop(w, zerror(rc));
	w->stage = WG_RECORDING;
}

static void wg_records_dir(const struct wg_walk *w, char *out, size_t size)
{
	snprintf(out, size, "%s/%s", w->s->base, WAITGRAPH_DIR);
}

/* A record's create came back: the first failure of them all decides
 * once the last is in (one that exists already, from a try before, is
 * there). */
static void wg_recorded(struct wg_walk *w, int rc)
{
	char dir[NAMES_MAX_NODE_PATH + 64];

	if (rc != ZOK && rc != ZNODEEXISTS && w->record_rc == ZOK)
		w->record_rc = rc;
	assert(w->records_due > 0);
	if (--w->records_due > 0)
		return;
	rc = w->record_rc;
	wg_records_dir(w, dir, sizeof(dir));
	w->recorded = rc == ZOK;
	if (rc == ZNONODE && !w->parent_made) {
		/* The first record of the base, or the records' container
		 * reaped: make it, then record again. */
		w->parent_made = 1;
		if (wg_sent(w, zoo_acreate(w->s->zh, dir, "", 0, w->s->acl,
					   w->s->containers ? ZOO_CONTAINER
							    : ZOO_PERSISTENT,
					   wg_on_string, w)) == 0)
			w->stage = WG_MAKING_DIR;
	} else if (rc != ZOK) {
		wg_stop(w, zerror(rc));
	} else if (wg_sent(w, zoo_async(w->s->zh, w->s->base, wg_on_string,
					w)) == 0) {
		/* A sync: the list of records read next is the leader's as
		 * of now (design.md: of two walks racing, the later-recorded
		 * sees the other's record). */
		w->stage = WG_SYNCING;
	}
}

/* The records' list came back: walk from this wait's own node. */
static void wg_listed_records(struct wg_walk *w,
			      const struct String_vector *names)
{
	w->records.count = names->count;
	w->records.data = calloc((size_t)names->count + 1, sizeof(char *));
	for (int i = 0; w->records.data && i < names->count; i++)
		if (!(w->records.data[i] = strdup(names->data[i])))
			return wg_stop(w, "out of memory");
	if (!w->records.data)
		return wg_stop(w, "out of memory");
	w->stage = WG_WALKING;
	wg_add(w, WG_EXPAND, -1, w->node);
	w->items[0].is_wait = 1;
	memcpy(w->items[0].owner, w->owner[0], sizeof(w->owner[0]));
	memcpy(w->items[0].cmd, w->cmd, sizeof(w->cmd));
	wg_walk_on(w);
}

/* The deadlock timeout passed, and the wait goes on (the timer member's
 * resume hook, once connected). */
static void wg_due(struct zkl_member *m, struct zkl_link *notify)
{
	struct wg_walk *w = ZKL_CONTAINER_OF(m, struct wg_walk, timer);

	(void)notify;
	if (!w->lr) {
		wg_put_if_done_locked(w);
		return;
	}
	wg_reset(w);
	if (!w->recorded)
		return wg_record(w);
	if (wg_sent(w, zoo_async(w->s->zh, w->s->base, wg_on_string, w)) == 0)
		w->stage = WG_SYNCING;
}

/* The session ended while the timer ran: the wait ends with it (its
 * request is told by its own member), and so does the walk. */
static void wg_timer_expired(struct zkl_member *m, int requeue,
			     struct zkl_link *lost, struct zkl_link *notify)
{
	struct wg_walk *w = ZKL_CONTAINER_OF(m, struct wg_walk, timer);

	(void)requeue;
	(void)lost;
	(void)notify;
	if (w->lr) /* a new session: a new walk, if it waits again */
		w->lr->wg = NULL;
	w->lr = NULL;
	wg_put_if_done_locked(w);
}

static const struct zkl_member_ops wg_timer_ops = {
	.resume_locked = wg_due,
	.expired_locked = wg_timer_expired,
};

/* FNV-1a of the waiting node's path: in the record's name, so that the
 * members of one multi-lock (one owner, one tag, one mode, and often one
 * sequence number in their resources) have records of their own. */
static uint64_t wg_path_hash(const char *path)
{
	uint64_t h = 14695981039346656037ull;

	for (; *path; path++)
		h = (h ^ (unsigned char)*path) * 1099511628211ull;
	return h;
}

void waitgraph_waiting_locked(struct zkl_lockreq *lr)
{
	struct zkl_session *s = lr->s;
	struct wg_walk *w;
	const char *name;

	ZKL_ASSERT_HELD(&s->lock);
	if (lr->wg || !lr->may_deadlock || s->deadlock_timeout_ms <= 0 ||
	    lr->mode == ZKL_MODE_LEASE || lr->try_only ||
	    (lr->kind != LR_PLAIN && lr->kind != LR_MEMBER) || !lr_has_node(lr))
		return;
	w = calloc(1, sizeof(*w));
	if (!w)
		return; /* unchecked: it waits as before */
	w->s = s;
	w->lr = lr;
	w->mode = lr->mode;
	w->cycle_end = -1;
	name = lr_node_name(lr);
	wg_cmd(lr->data, lr->datalen, w->cmd, sizeof(w->cmd));
	if (waitgraph_owner_key(lr->data, lr->datalen, w->owner[0],
				sizeof(w->owner[0])) < 0 ||
	    snprintf(w->node, sizeof(w->node), "%s", lr->node) >=
		    (int)sizeof(w->node)) {
		free(w);
		return;
	}
	w->nowners = 1;
	while (w->nowners < 1 + WAITGRAPH_TREE_MAX &&
	       waitgraph_tree_key(lr->data, lr->datalen, w->nowners - 1,
				  w->owner[w->nowners],
				  sizeof(w->owner[0])) > 0)
		w->nowners++;
	for (unsigned i = 0; i < w->nowners; i++) {
		char record[sizeof(w->record[0])];

		if (snprintf(record, sizeof(record), "%s/%s/%s~%s~%016" PRIx64,
			     s->base, WAITGRAPH_DIR, w->owner[i], name,
			     wg_path_hash(lr->node)) >= (int)sizeof(record)) {
			free(w);
			return;
		}
		memcpy(w->record[i], record, sizeof(record));
	}
	list_init(&w->timer.live);
	list_init(&w->timer.resume);
	w->timer.ops = &wg_timer_ops;
	lr->wg = w;
	w->again_ms = s->deadlock_timeout_ms;
	session_resume_at_locked(s, &w->timer,
				 session_clock_now() + s->deadlock_timeout_ms);
}

/* ---- the walk ------------------------------------------------------- */

static const char *wg_basename(const char *path)
{
	return strrchr(path, '/') + 1;
}

static void wg_dirname(const char *path, char *out, size_t size)
{
	size_t n = (size_t)(strrchr(path, '/') - path);

	snprintf(out, size, "%.*s", (int)n, path);
}

static struct wg_listing *wg_listing_of(struct wg_walk *w, const char *dir)
{
	for (size_t i = 0; i < w->ndirs; i++)
		if (strcmp(w->dirs[i].dir, dir) == 0)
			return &w->dirs[i];
	return NULL;
}

/* Add an item for path (a node's or a record's): its index, -EEXIST if
 * the walk has one for it already, -ENOSPC when the walk is full. */
static int wg_add(struct wg_walk *w, enum wg_todo todo, int parent,
		  const char *path)
{
	struct wg_item *it;

	for (size_t i = 0; i < w->nitems; i++)
		if (strcmp(w->items[i].path, path) == 0)
			return -EEXIST;
	if (w->nitems == WAITGRAPH_MAX_NODES)
		return -ENOSPC;
	it = &w->items[w->nitems];
	memset(it, 0, sizeof(*it));
	it->todo = todo;
	it->parent = parent;
	it->is_record = todo == WG_FOLLOW;
	snprintf(it->path, sizeof(it->path), "%s", path);
	return (int)w->nitems++;
}

/* The nodes the waiting node of item i waits for, from its queue's
 * listing: each a new item to classify.  Returns 1 if one of them is the
 * start's own node (a cycle through the start's wait, ending at i), -1 if
 * the walk is full, else 0. */
static int wg_expand(struct wg_walk *w, size_t i, struct wg_listing *l)
{
	const char *name = wg_basename(w->items[i].path);
	ssize_t me = -1;
	char path[NAMES_MAX_NODE_PATH + 1];

	for (size_t k = 0; k < l->n; k++)
		if (strcmp(l->nodes[k].name, name) == 0)
			me = (ssize_t)k;
	if (me < 0) /* gone: it waits no more */
		return 0;
	for (ssize_t k = 0; k < me; k++) {
		int added;

		if (!lockrule_waits_for(l->nodes[me].mode, l->nodes[k].mode))
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", l->dir,
				     l->nodes[k].name) >= sizeof(path))
			continue; /* no such node: a listing's names fit */
		if (i != 0 && strcmp(path, w->items[0].path) == 0)
			return 1;
		added = wg_add(w, WG_CLASSIFY, (int)i, path);
		if (added == -ENOSPC)
			return -1;
		if (added >= 0) {
			struct wg_item *it = &w->items[added];

			it->holds = lockrule_watch(l->nodes, NULL, 0, (size_t)k,
						   1) < 0;
			it->is_wait = !it->holds;
		}
	}
	return 0;
}

/* Is key one of the owners whose wait the walk's is? */
static int wg_is_own(const struct wg_walk *w, const char *key)
{
	for (unsigned i = 0; key[0] && i < w->nowners; i++)
		if (strcmp(key, w->owner[i]) == 0)
			return 1;
	return 0;
}

/* Follow every record of `owner`: the waits of a holder. */
static int wg_follow(struct wg_walk *w, size_t i, const char *owner)
{
	size_t olen = strlen(owner);
	char path[NAMES_MAX_NODE_PATH + 1];

	for (int r = 0; r < w->records.count; r++) {
		const char *rec = w->records.data[r];

		if (!rec || strncmp(rec, owner, olen) != 0 || rec[olen] != '~')
			continue;
		if (snprintf(path, sizeof(path), "%s/%s/%s", w->s->base,
			     WAITGRAPH_DIR, rec) >= (int)sizeof(path))
			continue;
		if (wg_add(w, WG_FOLLOW, (int)i, path) == -ENOSPC)
			return -1;
	}
	return 0;
}

/* Go on with the next item, sending the call it needs, if any. */
static void wg_walk_on(struct wg_walk *w)
{
	char dir[NAMES_MAX_NODE_PATH + 1];

	while (w->next < w->nitems) {
		struct wg_item *it = &w->items[w->next];
		struct wg_listing *l;

		switch (it->todo) {
		case WG_EXPAND:
			wg_dirname(it->path, dir, sizeof(dir));
			l = wg_listing_of(w, dir);
			if (!l) {
				if (w->ndirs == WG_MAX_DIRS)
					return wg_stop(w, "too many queues");
				l = &w->dirs[w->ndirs];
				snprintf(l->dir, sizeof(l->dir), "%s", dir);
				(void)wg_sent(w,
					      zoo_aget_children2(
						      w->s->zh, dir, 0,
						      wg_on_strings_stat, w));
				return;
			}
			switch (wg_expand(w, w->next, l)) {
			case -1:
				return wg_stop(w, "too many nodes");
			case 1:
				w->cycle_end = (int)w->next;
				return wg_check_start(w);
			}
			it->todo = WG_DONE;
			w->next++;
			break;
		case WG_CLASSIFY:
		case WG_FOLLOW:
			if (!it->read) {
				(void)wg_sent(w, zoo_aget(w->s->zh, it->path, 0,
							  wg_on_data, w));
				return;
			}
			if (it->holds && wg_is_own(w, it->owner)) {
				w->cycle_end = (int)w->next;
				return wg_check_start(w);
			}
			if (it->holds) {
				if (it->owner[0] &&
				    wg_follow(w, w->next, it->owner) < 0)
					return wg_stop(w, "too many nodes");
				it->todo = WG_DONE;
				w->next++;
			} else {
				/* A waiting node: what it waits for, in
				 * its own queue. */
				it->todo = WG_EXPAND;
			}
			break;
		case WG_DONE:
			w->next++;
			break;
		}
	}
	wg_stop(w, NULL); /* no cycle */
}

/* A queue's listing came back (WG_WALKING, an item to expand). */
static void wg_dir_listed(struct wg_walk *w, int rc, const struct wg_reply *r)
{
	struct wg_listing *l = &w->dirs[w->ndirs];

	if (rc == ZNONODE) { /* the resource went: nothing waits there */
		l->n = 0;
		w->ndirs++;
		return wg_walk_on(w);
	}
	if (rc != ZOK || !r->names || !r->st)
		return wg_stop(w, zerror(rc));
	l->names.count = r->names->count;
	l->names.data = calloc((size_t)r->names->count + 1, sizeof(char *));
	l->nodes = calloc((size_t)r->names->count + 1, sizeof(*l->nodes));
	w->ndirs++; /* wg_reset frees what there is */
	for (int i = 0; l->names.data && i < r->names->count; i++)
		if (!(l->names.data[i] = strdup(r->names->data[i])))
			return wg_stop(w, "out of memory");
	if (!l->names.data || !l->nodes)
		return wg_stop(w, "out of memory");
	l->n = lockrule_collect(l->names.data, (size_t)l->names.count,
				LOCKRULE_QUEUED_STYLES, r->st->cversion,
				l->nodes);
	wg_walk_on(w);
}

/* A node's data came back (WG_WALKING): its owner; or a record's: the
 * path of its owner's waiting node, a new item to expand. */
static void wg_node_read(struct wg_walk *w, int rc, const struct wg_reply *r)
{
	struct wg_item *it = &w->items[w->next];
	size_t len = r->len > 0 ? (size_t)r->len : 0;

	if (rc == ZNONODE) { /* gone: nobody waits for it any more */
		it->todo = WG_DONE;
		w->next++;
		return wg_walk_on(w);
	}
	if (rc != ZOK || !r->st)
		return wg_stop(w, zerror(rc));
	it->read = 1;
	it->czxid = r->st->czxid;
	it->version = r->st->version;
	if (it->todo == WG_FOLLOW) {
		char path[NAMES_MAX_NODE_PATH + 1];
		int added = -1;

		it->todo = WG_DONE;
		w->next++;
		if (len > 0 && len < sizeof(path) && r->value[0] == '/') {
			memcpy(path, r->value, len);
			path[len] = '\0';
			added = wg_add(w, WG_EXPAND, (int)(it - w->items),
				       path);
		}
		if (added == -ENOSPC)
			return wg_stop(w, "too many nodes");
		if (added >= 0) {
			/* The record's owner's wait: the owner of the held
			 * node whose records are followed. */
			w->items[added].is_wait = 1;
			memcpy(w->items[added].owner,
			       w->items[it->parent].owner, sizeof(it->owner));
			memcpy(w->items[added].cmd, w->items[it->parent].cmd,
			       sizeof(it->cmd));
		}
	} else if (waitgraph_is_mark(r->value, len)) {
		it->marked = 1;
		it->owner[0] = '\0';
	} else if (waitgraph_owner_key(r->value, len, it->owner,
				       sizeof(it->owner)) < 0) {
		it->owner[0] = '\0'; /* a peer's node */
	} else {
		wg_cmd(r->value, len, it->cmd, sizeof(it->cmd));
	}
	wg_walk_on(w);
}

/* ---- a cycle: read again, choose, mark ----------------------------- */

static void wg_check_start(struct wg_walk *w)
{
	w->stage = WG_CHECKING;
	w->nchecks = 0;
	w->checked = 0;
	w->check_failed = 0;
	/* Every node and record of the cycle, read again: each existed at
	 * its first read and does now, so it did in between (no name comes
	 * back), and with its data unchanged so did its owner.  All first
	 * reads came before all of these: the whole cycle stood at one
	 * instant.  Replies come in the order sent (one session).  A wait's
	 * data is read too: a deadlock mark there means another walk
	 * reported the cycle first. */
	for (int i = w->cycle_end; i >= 0; i = w->items[i].parent) {
		const char *path = w->items[i].path;

		if ((w->items[i].is_wait
			     ? zoo_aget(w->s->zh, path, 0, wg_on_data, w)
			     : zoo_aexists(w->s->zh, path, 0, wg_on_stat, w)) !=
		    ZOK) {
			/* The replies of those sent still come: the check
			 * ends with the last of them, failed. */
			w->check_failed = 1;
			break;
		}
		w->in_flight++;
		w->check_order[w->nchecks++] = i;
	}
	if (w->nchecks == 0)
		wg_stop(w, "the cycle could not be read again");
}

/* "host~pid~start waits in /r <- ..." from the end of the cycle back. */
static void wg_describe(const struct wg_walk *w, char *out, size_t size)
{
	size_t n = 0, base = strlen(w->s->base);

	out[0] = '\0';
	for (int i = w->cycle_end; i >= 0; i = w->items[i].parent) {
		const struct wg_item *it = &w->items[i];
		char dir[NAMES_MAX_NODE_PATH + 1];
		int k;

		if (it->is_record)
			continue;
		wg_dirname(it->path, dir, sizeof(dir));
		k = snprintf(out + n, size - n, "%s%s (%s) %s %s",
			     n ? ", for " : "",
			     it->owner[0] ? it->owner : "another tool",
			     it->owner[0] ? it->cmd : "-",
			     it->is_wait ? "waits in" : "holds",
			     strlen(dir) > base ? dir + base + 1 : dir);
		if (k < 0 || (size_t)k >= size - n)
			break;
		n += (size_t)k;
	}
}

/* The cycle stood: fail its youngest wait (the waiting node created
 * last), by writing the cycle into that node's data; the node's mount
 * watches it (lr_on_own_armed), this one's too. */
static void wg_mark(struct wg_walk *w)
{
	char text[1024], mark[sizeof(text) + 64];
	int victim = -1;

	for (unsigned k = 0; k < w->nchecks; k++) {
		const struct wg_item *it = &w->items[w->check_order[k]];

		if (it->is_wait && it->owner[0] &&
		    (victim < 0 || it->czxid > w->items[victim].czxid))
			victim = w->check_order[k];
	}
	if (victim < 0)
		return wg_stop(w, "no wait of a mount in the cycle");
	wg_describe(w, text, sizeof(text));
	snprintf(mark, sizeof(mark), "%s%s\n", WAITGRAPH_MARK, text);
	/* On condition of the version read: a mark set meanwhile, or the
	 * node gone, means another walk or the wait's end came first. */
	if (wg_sent(w, zoo_aset(w->s->zh, w->items[victim].path, mark,
				(int)strlen(mark), w->items[victim].version,
				wg_on_stat, w)) == 0) {
		w->victim = victim;
		w->stage = WG_MARKING;
	}
}

/* The mark's reply (WG_MARKING): the walk whose mark landed logs the
 * cycle, so that one cycle is logged once by its walkers, however many
 * saw it. */
static void wg_marked(struct wg_walk *w, int rc)
{
	char text[1024];

	if (rc != ZOK)
		return wg_stop(w, "the cycle broke before its mark");
	wg_describe(w, text, sizeof(text));
	log_msg(LOG_INFO,
		"deadlock across hosts: %s; the youngest wait (%s's in %s) "
		"fails with EDEADLK",
		text, w->items[w->victim].owner, w->items[w->victim].path);
	wg_stop(w, NULL);
}

/* One part of the cycle read again (WG_CHECKING). */
static void wg_checked(struct wg_walk *w, int rc, const struct wg_reply *r)
{
	struct wg_item *it = &w->items[w->check_order[w->checked++]];
	const struct Stat *st = r->st;

	if (rc != ZOK || !st)
		w->check_failed = 1;
	else if (!it->is_wait && !it->is_record &&
		 (st->czxid != it->czxid || st->version != it->version))
		w->check_failed = 1;
	else if (it->is_wait) {
		it->czxid = st->czxid;
		it->version = st->version; /* the mark's condition */
		it->marked |= waitgraph_is_mark(
			r->value, r->len > 0 ? (size_t)r->len : 0);
	}
	if (w->checked < w->nchecks)
		return; /* more to come */
	if (w->check_failed)
		return wg_stop(w, "the cycle changed while it was read");
	/* Another walk of the same cycle marked its wait first: one report
	 * (its walker logs it). */
	for (unsigned k = 0; k < w->nchecks; k++)
		if (w->items[w->check_order[k]].marked)
			return wg_stop(w, "the cycle is reported already");
	wg_mark(w);
}

/*
 * The walk's one place of moves: each reply, by the stage it came in.
 */
static void wg_advance(struct wg_walk *w, int rc, const struct wg_reply *r)
{
	char dir[NAMES_MAX_NODE_PATH + 64];

	switch (w->stage) {
	case WG_RECORDING:
		return wg_recorded(w, rc);
	case WG_MAKING_DIR:
		if (rc != ZOK && rc != ZNODEEXISTS)
			return wg_stop(w, zerror(rc));
		return wg_record(w);
	case WG_SYNCING:
		wg_records_dir(w, dir, sizeof(dir));
		if (rc != ZOK)
			return wg_stop(w, zerror(rc));
		if (wg_sent(w, zoo_aget_children(w->s->zh, dir, 0,
						 wg_on_strings, w)) == 0)
			w->stage = WG_LISTING;
		return;
	case WG_LISTING:
		if (rc != ZOK || !r->names)
			return wg_stop(w, zerror(rc));
		return wg_listed_records(w, r->names);
	case WG_WALKING:
		if (w->items[w->next].todo == WG_EXPAND)
			return wg_dir_listed(w, rc, r);
		return wg_node_read(w, rc, r);
	case WG_CHECKING:
		return wg_checked(w, rc, r);
	case WG_MARKING:
		return wg_marked(w, rc);
	case WG_WAITING:
	case WG_IDLE:
		/* A walk that stopped short: the replies of what it had
		 * sent still come, and change nothing. */
		return;
	}
}
