/*
 * holders.c - list a resource and read each of its lock nodes (see
 * holders.h).  In a peer's semaphore layout (dialect curator or kazoo) the
 * tool's lease directory and its lock's queue are listed too, once the
 * resource's listing is back.  Every call but the first goes out from
 * ZooKeeper's completion thread, which also runs every reply, so counting
 * the replies needs no lock.
 */
#include "holders.h"
#include "internal.h"
#include "lockrule.h"
#include "resource.h"
#include "zkerr.h"

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The directories a query lists. */
enum holders_part {
	HOLDERS_RES,    /* every tool's lock nodes; kazoo's leases */
	HOLDERS_LEASES, /* Curator's <res>/leases */
	HOLDERS_QUEUE,  /* the peer's lock: who waits for a lease */
	HOLDERS_PARTS,
};

struct holders_query;

/* What the read of one node brought back. */
struct holders_read {
	struct holders_query *q;
	int gone;   /* deleted since the listing */
	int orphan; /* persistent: no session's, so nobody's to end */
	int64_t czxid;
	int64_t ctime_ms;
	int32_t version; /* of its data: a granted lease's is set again */
	char *data;
	size_t len;
};

/* One listed directory and the nodes of interest in it. */
struct holders_dir {
	struct holders_query *q;
	int used; /* listed in this layout */
	char path[NAMES_MAX_NODE_PATH + 1];
	char where[NAMES_MAX_NODE_PATH + 1]; /* see holders_node */
	size_t children;                     /* how many the listing had */
	char **names;                        /* copies of the listed names */
	size_t nnames;
	struct zkl_node *nodes; /* [0..nlocks) lock nodes in queue order,
				 * then [nlocks..n) the peer's leases */
	size_t nlocks, n;
	struct holders_read *reads; /* parallel to nodes */
};

struct holders_query {
	struct zkl_session *s;
	holders_fn cb;
	void *arg;
	int err;               /* the first failure's */
	int reading;           /* the listings are back: reads are out */
	size_t pending;        /* replies awaited, +1 while sending */
	enum zkl_style layout; /* the peer's, or ZKLOCKFS for the default */
	unsigned limit; /* read when leases are queued: 0 if not a limit */
	struct holders_dir dirs[HOLDERS_PARTS];
};

/* Free q and all it gathered. */
static void holders_free(struct holders_query *q);
/* Call q's callback with what it gathered (or its error), then free q. */
static void holders_answer(struct holders_query *q);

/* ---- the calls ---------------------------------------------------------- */

static void holders_send_reads(struct holders_query *q);

/* One awaited reply is in (or one call was sent). */
static void holders_step(struct holders_query *q)
{
	if (--q->pending > 0)
		return;
	if (!q->reading && q->err == 0)
		return holders_send_reads(q);
	holders_answer(q);
}

static void holders_on_data(int rc, const char *value, int len,
			    const struct Stat *st, const void *data)
{
	struct holders_read *r = (struct holders_read *)data;

	if (rc == ZNONODE) {
		r->gone = 1;
	} else if (rc != ZOK) {
		if (r->q->err == 0)
			r->q->err = zkerr_errno(rc);
	} else {
		r->czxid = st->czxid;
		r->ctime_ms = st->ctime;
		r->version = st->version;
		r->orphan = st->ephemeralOwner == 0;
		if (value && len > 0 && (r->data = malloc((size_t)len))) {
			memcpy(r->data, value, (size_t)len);
			r->len = (size_t)len;
		} else if (value && len > 0 && r->q->err == 0) {
			/* Not a node without data: a break would take a
			 * mount's for a peer's, and delete it untold. */
			r->q->err = -ENOMEM;
		}
	}
	holders_step(r->q);
}

static void holders_on_limit(int rc, const char *value, int len,
			     const struct Stat *st, const void *data)
{
	struct holders_query *q = (struct holders_query *)data;

	int err = resource_limit_of_reply(rc, value, len, &q->limit);

	(void)st;
	if (err == -EBADMSG)
		q->limit = 0;
	else if (err < 0 && err != -ENOENT && q->err == 0)
		q->err = err;
	holders_step(q);
}

/* Is a lease held or queued?  Then the answer needs the limit. */
static int holders_has_leases(const struct holders_query *q)
{
	const struct holders_dir *res = &q->dirs[HOLDERS_RES];

	for (size_t i = 0; i < res->nlocks; i++)
		if (res->nodes[i].mode == ZKL_MODE_LEASE)
			return 1;
	return res->n > res->nlocks || q->dirs[HOLDERS_LEASES].n > 0 ||
	       q->dirs[HOLDERS_QUEUE].n > 0;
}

/* Send a call under the session lock (s->zh changes when a session
 * expires), counting it as awaited. */
static void holders_send(struct holders_query *q, const char *path,
			 data_completion_t done, const void *data)
{
	struct zkl_link notify;
	int rc = ZBADARGUMENTS;

	if (strlen(path) <= NAMES_MAX_NODE_PATH) {
		session_enter(q->s, &notify);
		rc = zoo_aget(q->s->zh, path, 0, done, data);
		session_leave(q->s, &notify);
	}
	if (rc == ZOK)
		q->pending++;
	else if (q->err == 0)
		q->err = zkerr_errno(rc);
}

static void holders_send_reads(struct holders_query *q)
{
	q->reading = 1;
	q->pending = 1;
	for (size_t d = 0; d < HOLDERS_PARTS; d++) {
		struct holders_dir *dir = &q->dirs[d];
		for (size_t i = 0; i < dir->n; i++) {
			char path[NAMES_MAX_NODE_PATH + 2];
			dir->reads[i].q = q;
			snprintf(path, sizeof(path), "%s/%s", dir->path,
				 dir->nodes[i].name);
			holders_send(q, path, holders_on_data, &dir->reads[i]);
		}
	}
	if (holders_has_leases(q))
		holders_send(q, q->dirs[HOLDERS_RES].path, holders_on_limit, q);
	holders_step(q);
}

/* kazoo's Semaphore counts every child of the resource as a lease held,
 * whatever its name (a sub-resource, another layout's directory): show
 * each such child as the lease kazoo takes it for.  Lock nodes are listed
 * already. */
static int holders_kazoo_counts(const struct holders_dir *dir, const char *name,
				struct zkl_node *out)
{
	if (dir->q->layout != ZKL_STYLE_KAZOO ||
	    dir != &dir->q->dirs[HOLDERS_RES] || names_parse(name, out) == 0)
		return 0;
	*out = (struct zkl_node){ .name = name,
				  .style = ZKL_STYLE_KAZOO,
				  .mode = ZKL_MODE_LEASE,
				  .tag = name,
				  .taglen = strlen(name) };
	return 1;
}

/* Keep copies of the names; parse into dir->nodes the lock nodes of every
 * tool, in queue order, then the peer's leases.  Returns 0 or -ENOMEM. */
static int holders_parse(struct holders_dir *dir, int locks, int leases,
			 char *const *names, size_t n, int32_t cversion)
{
	dir->children = n;
	dir->names = calloc(n + 1, sizeof(*dir->names));
	dir->nodes = calloc(n + 1, sizeof(*dir->nodes));
	dir->reads = calloc(n + 1, sizeof(*dir->reads));
	if (!dir->names || !dir->nodes || !dir->reads)
		return -ENOMEM;
	for (; dir->nnames < n; dir->nnames++)
		if (!(dir->names[dir->nnames] = strdup(names[dir->nnames])))
			return -ENOMEM;
	if (locks)
		dir->nlocks = lockrule_collect(dir->names, n,
					       LOCKRULE_QUEUED_STYLES, cversion,
					       dir->nodes);
	dir->n = dir->nlocks;
	for (size_t i = 0; leases && i < n; i++)
		if (names_parse_peer_lease(dir->q->layout, dir->names[i],
					   &dir->nodes[dir->n]) == 0 ||
		    holders_kazoo_counts(dir, dir->names[i],
					 &dir->nodes[dir->n]))
			dir->n++;
	return 0;
}

static void holders_on_listed(int err, char *const *names, size_t n,
			      int32_t cversion, void *arg)
{
	struct holders_dir *dir = arg;
	struct holders_query *q = dir->q;
	enum holders_part part = (enum holders_part)(dir - q->dirs);

	if (err == -ENOENT) /* nobody made it: nobody queued */
		err = 0;
	if (err == 0 && n > 0)
		err = holders_parse(dir, part != HOLDERS_LEASES,
				    part == HOLDERS_LEASES ||
					    (part == HOLDERS_RES &&
					     q->layout == ZKL_STYLE_KAZOO),
				    names, n, cversion);
	if (err < 0 && q->err == 0)
		q->err = err;
	if (part == HOLDERS_RES && q->err == 0) { /* now the peer's parts */
		q->pending++;
		for (size_t d = HOLDERS_RES + 1; d < HOLDERS_PARTS; d++) {
			if (!q->dirs[d].used)
				continue;
			err = resource_list(q->s, q->dirs[d].path,
					    holders_on_listed, &q->dirs[d]);
			if (err == 0)
				q->pending++;
			else if (q->err == 0)
				q->err = err;
		}
		holders_step(q);
	}
	holders_step(q);
}

/* The directories of the session's layout: the resource, and a peer's
 * lease directory and lock.  Returns 0 or -ENAMETOOLONG. */
static int holders_layout(struct holders_query *q, const char *res)
{
	static const enum names_peer_dir which[HOLDERS_PARTS] = {
		[HOLDERS_LEASES] = NAMES_PEER_LEASES,
		[HOLDERS_QUEUE] = NAMES_PEER_LOCK,
	};
	const char *name = strrchr(res, '/');
	size_t len = strlen(res);

	assert(name); /* a znode path */
	snprintf(q->dirs[HOLDERS_RES].path, sizeof(q->dirs[0].path), "%s", res);
	q->dirs[HOLDERS_RES].used = 1;
	if (q->layout == ZKL_STYLE_ZKLOCKFS)
		return 0;
	for (size_t d = HOLDERS_RES + 1; d < HOLDERS_PARTS; d++) {
		struct holders_dir *dir = &q->dirs[d];
		int err = names_peer_dir(q->layout, which[d], res, dir->path);
		if (err < 0)
			return err;
		/* kazoo's leases are in the resource itself */
		if (!(dir->used = strcmp(dir->path, res) != 0))
			continue;
		/* The path from the resource: a child ("leases/") or a
		 * sibling ("../r-__lock__/"). */
		if (dir->path[len] == '/')
			snprintf(dir->where, sizeof(dir->where), "%s/",
				 dir->path + len + 1);
		else
			snprintf(dir->where, sizeof(dir->where), "../%s/",
				 dir->path + (name - res) + 1);
	}
	return 0;
}

int holders_start(struct zkl_session *s, const char *dir, holders_fn cb,
		  void *arg)
{
	struct holders_query *q = calloc(1, sizeof(*q));
	int err;

	if (!q)
		return -ENOMEM;
	q->s = s;
	q->cb = cb;
	q->arg = arg;
	q->layout = s->dialect;
	for (size_t d = 0; d < HOLDERS_PARTS; d++)
		q->dirs[d].q = q;
	q->pending = 1; /* the resource's listing */
	err = holders_layout(q, dir);
	if (err == 0)
		err = resource_list(s, dir, holders_on_listed,
				    &q->dirs[HOLDERS_RES]);
	if (err < 0)
		free(q);
	return err;
}

uint64_t holders_changes(struct zkl_session *s, const char *dir)
{
	struct holders_query q = { .layout = s->dialect };
	uint64_t n = 0;

	/* Too long a path: the query fails, and counts nothing. */
	if (holders_layout(&q, dir) < 0)
		return session_changes(s, dir);
	/* A sum of counts that only grow moves when any of them does. */
	for (size_t d = 0; d < HOLDERS_PARTS; d++)
		if (q.dirs[d].used)
			n += session_changes(s, q.dirs[d].path);
	return n;
}

/*
 * A gathered holders query becomes its answer (see
 * holders.h): the lock nodes in queue order, then a peer's leases by age
 * and who waits for one, and the semaphore's line.
 */
static void holders_free(struct holders_query *q)
{
	for (size_t d = 0; d < HOLDERS_PARTS; d++) {
		struct holders_dir *dir = &q->dirs[d];
		for (size_t i = 0; i < dir->n; i++)
			free(dir->reads[i].data);
		for (size_t i = 0; i < dir->nnames; i++)
			free(dir->names[i]);
		free(dir->names);
		free(dir->reads);
		free(dir->nodes);
	}
	free(q);
}

/* An answer being built: the nodes still there, and what the semaphore's
 * line needs. */
struct holders_out {
	struct holders_node *nodes;
	size_t n;
	size_t leases;  /* lease nodes, held or waiting */
	size_t counted; /* nodes the peer's rule counts against the limit */
	int any;        /* a lease is held or queued */
};

static struct holders_node *holders_emit(struct holders_out *out,
					 const struct holders_dir *dir,
					 size_t i, enum holders_state state)
{
	const struct holders_read *r = &dir->reads[i];
	struct holders_node *o = &out->nodes[out->n++];

	*o = (struct holders_node){
		.where = dir->where,
		.name = dir->nodes[i].name,
		.state = state,
		.mode = dir->nodes[i].mode,
		.style = dir->nodes[i].style,
		.token = r->czxid,
		.ctime_ms = r->ctime_ms,
		.data = r->data,
		.len = r->len,
		.orphan = r->orphan,
	};
	out->any |= o->mode == ZKL_MODE_LEASE;
	return o;
}

/* The resource's lock nodes, judged by the rule the recipe uses; a node
 * deleted since the listing is left out, and no longer holds back those
 * behind it. */
static int holders_emit_locks(const struct holders_query *q,
			      struct holders_out *out)
{
	const struct holders_dir *dir = &q->dirs[HOLDERS_RES];
	unsigned char *gone = calloc(dir->nlocks + 1, 1);

	if (!gone)
		return -ENOMEM;
	for (size_t i = 0; i < dir->nlocks; i++)
		gone[i] = (unsigned char)dir->reads[i].gone;
	for (size_t i = 0; i < dir->nlocks; i++) {
		struct holders_node *o;
		ssize_t ahead = -1;
		int held;

		if (gone[i])
			continue;
		/* A lease granted once holds whatever the limit is now
		 * (lowering it takes nothing away): its mount set its data
		 * again at the grant (lr_mark), so its version is past 0. */
		if (dir->nodes[i].mode == ZKL_MODE_LEASE)
			held = dir->reads[i].version > 0 ||
			       lockrule_count_ahead(dir->nodes, gone, 0, i) <
				       q->limit;
		else
			held = (ahead = lockrule_watch(dir->nodes, gone, 0, i,
						       1)) < 0;
		o = holders_emit(out, dir, i,
				 held ? HOLDERS_HELD : HOLDERS_WAITING);
		if (!held && dir->nodes[i].mode != ZKL_MODE_LEASE)
			o->waits_for = dir->nodes[ahead].name;
		out->counted += held && dir->nodes[i].mode == ZKL_MODE_LEASE;
	}
	free(gone);
	return 0;
}

static int holders_by_token(const void *a, const void *b)
{
	const struct holders_node *x = a, *y = b;

	return (x->token > y->token) - (x->token < y->token);
}

/* The first waiter still queued for the peer's lock: the one that counts
 * the leases, and may have made one already.  -1 if none. */
static ssize_t holders_counter(const struct holders_query *q)
{
	const struct holders_dir *dir = &q->dirs[HOLDERS_QUEUE];

	for (size_t i = 0; i < dir->n; i++)
		if (!dir->reads[i].gone)
			return (ssize_t)i;
	return -1;
}

/* The peer's leases, oldest first.  Only the holder of the peer's lock
 * makes a lease.  In Curator's layout it makes it, then counts, and waits
 * while more than N are there: so with more than N, a lease made after
 * the lock node of the first waiter in the lock's queue is that waiter's,
 * and waits.  (Unless N was lowered since the lease before it was made;
 * a snapshot cannot tell, and shows it waiting.)  Returns 1 if a lease
 * waits. */
static int holders_emit_leases(const struct holders_query *q,
			       struct holders_out *out, int64_t counter)
{
	const struct holders_dir *dir =
		&q->dirs[q->layout == ZKL_STYLE_KAZOO ? HOLDERS_RES
						      : HOLDERS_LEASES];
	size_t first = out->n, live = 0;
	int waiting = 0;

	for (size_t i = dir->nlocks; i < dir->n; i++)
		live += !dir->reads[i].gone;
	for (size_t i = dir->nlocks; i < dir->n; i++) {
		int waits = q->layout == ZKL_STYLE_CURATOR && q->limit > 0 &&
			    live > q->limit && dir->reads[i].czxid > counter;
		if (dir->reads[i].gone)
			continue;
		holders_emit(out, dir, i,
			     waits ? HOLDERS_WAITING : HOLDERS_HELD);
		waiting |= waits;
	}
	if (out->n > first) /* none, and out->nodes may be NULL */
		qsort(out->nodes + first, out->n - first, sizeof(*out->nodes),
		      holders_by_token);
	out->counted = q->layout == ZKL_STYLE_KAZOO
			       ? q->dirs[HOLDERS_RES].children
			       : live;
	return waiting;
}

/* Everyone queued for the peer's lock waits for a lease; but if the first
 * of them has a lease that waits, that lease stands for it. */
static void holders_emit_queue(const struct holders_query *q,
			       struct holders_out *out, ssize_t counter,
			       int counter_shown)
{
	const struct holders_dir *dir = &q->dirs[HOLDERS_QUEUE];

	for (size_t i = 0; i < dir->n; i++) {
		if (dir->reads[i].gone ||
		    ((ssize_t)i == counter && counter_shown))
			continue;
		holders_emit(out, dir, i, HOLDERS_WAITING)->mode =
			ZKL_MODE_LEASE;
	}
}

/* Mark the answer's node called `node` (a full path) with what this
 * mount knows of it: lost, or held by several owners. */
static void holders_mark_node(const struct holders_query *q,
			      struct holders_out *out, const char *node,
			      int lost, unsigned holds)
{
	const char *name = strrchr(node, '/');

	if (!name)
		return;
	for (size_t d = 0; d < HOLDERS_PARTS; d++) {
		const struct holders_dir *dir = &q->dirs[d];
		if (!dir->used || strlen(dir->path) != (size_t)(name - node) ||
		    strncmp(dir->path, node, (size_t)(name - node)) != 0)
			continue;
		for (size_t i = 0; i < out->n; i++) {
			struct holders_node *n = &out->nodes[i];
			if (strcmp(n->where, dir->where) != 0 ||
			    strcmp(n->name, name + 1) != 0)
				continue;
			n->lost |= lost;
			if (holds)
				n->holds = holds;
		}
	}
}

/* This mount's own nodes whose locks were lost while they are still there
 * (their delete waits for the jeopardy's margin, or for ZooKeeper), and
 * those held by several owners (-o reentrant). */
static void holders_mark_local(const struct holders_query *q,
			       struct holders_out *out)
{
	struct zkl_link notify;
	struct zkl_session *s = q->s;

	session_enter(s, &notify);
	for (struct zkl_link *l = s->live.next; l != &s->live; l = l->next) {
		const struct zkl_member *m = member_of_live(l);
		const char *node = m->ops->lost_node_locked(m);
		unsigned owners = 0;

		if (node)
			holders_mark_node(q, out, node, 1, 0);
		node = m->ops->shared_node_locked
			       ? m->ops->shared_node_locked(m, &owners)
			       : NULL;
		if (node)
			holders_mark_node(q, out, node, 0, owners);
	}
	session_leave(s, &notify);
}

static void holders_answer(struct holders_query *q)
{
	struct holders_out out = { 0 };
	struct holders_semaphore sem = { .limit = q->limit };
	size_t total = 0;

	for (size_t d = 0; d < HOLDERS_PARTS; d++)
		total += q->dirs[d].n;
	if (q->err == 0 && total > 0 &&
	    !(out.nodes = calloc(total, sizeof(*out.nodes))))
		q->err = -ENOMEM;
	if (q->err == 0)
		q->err = holders_emit_locks(q, &out);
	if (q->err == 0 && q->layout != ZKL_STYLE_ZKLOCKFS) {
		ssize_t counter = holders_counter(q);
		int shown = holders_emit_leases(
			q, &out,
			counter < 0
				? INT64_MAX
				: q->dirs[HOLDERS_QUEUE].reads[counter].czxid);
		holders_emit_queue(q, &out, counter, shown);
	}
	assert(out.n <= total);
	if (q->err == 0)
		holders_mark_local(q, &out);
	for (size_t i = 0; i < out.n; i++)
		sem.held += out.nodes[i].mode == ZKL_MODE_LEASE &&
			    out.nodes[i].state == HOLDERS_HELD;
	sem.free = q->limit > out.counted ? q->limit - out.counted : 0;
	if (q->err)
		q->cb(q->err, NULL, 0, NULL, q->arg);
	else
		q->cb(0, out.nodes, out.n, out.any ? &sem : NULL, q->arg);
	free(out.nodes);
	holders_free(q);
}
