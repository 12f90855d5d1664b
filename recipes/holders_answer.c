/*
 * holders_answer.c - a gathered holders query becomes its answer (see
 * holders.h): the lock nodes in queue order, then a peer's leases by age
 * and who waits for one, and the semaphore's line.
 */
#include "holders_query.h"
#include "lockrule.h"

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void holders_free(struct holders_query *q)
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
			held = lockrule_watch(dir->nodes, gone, 0, i, 1) < 0;
		holders_emit(out, dir, i,
			     held ? HOLDERS_HELD : HOLDERS_WAITING);
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
	struct zkl_session *s = q->s;

	pthread_mutex_lock(&s->lock);
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
	pthread_mutex_unlock(&s->lock);
}

void holders_answer(struct holders_query *q)
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
