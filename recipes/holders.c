/*
 * holders.c - list a resource and read each of its lock nodes (see
 * holders.h).  In a peer's semaphore layout (dialect curator or kazoo) the
 * tool's lease directory and its lock's queue are listed too, once the
 * resource's listing is back.  Every call but the first goes out from
 * ZooKeeper's completion thread, which also runs every reply, so counting
 * the replies needs no lock.
 */
#include "holders_query.h"
#include "lockrule.h"
#include "resource.h"
#include "zkerr.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	int rc = ZBADARGUMENTS;

	if (strlen(path) <= NAMES_MAX_NODE_PATH) {
		pthread_mutex_lock(&q->s->lock);
		rc = zoo_aget(q->s->zh, path, 0, done, data);
		pthread_mutex_unlock(&q->s->lock);
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
