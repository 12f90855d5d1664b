/*
 * revoke.c - ask or break a resource's holders (revoke.h): the holders'
 * answer (holders.h) tells which nodes hold; one set or delete each, all
 * sent at once, and the owner told when the last is answered.
 */
#include "revoke.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "holders.h"
#include "internal.h"
#include "log.h"
#include "names.h"
#include "zkerr.h"

struct revoke_ctx {
	struct zkl_session *s;
	enum revoke_how how;
	revoke_fn cb;
	void *arg;
	struct revoke_result r;
	/* Calls to be answered, and one for the sender.  No mutex: the
	 * listing's answer sends them, and theirs come, on ZooKeeper's one
	 * completion thread. */
	size_t pending;
	char dir[];
};

/* One answer (or the sender's own share): the last tells the owner. */
static void revoke_one_done(struct revoke_ctx *c, int rc)
{
	if (rc == ZOK)
		c->r.done++;
	else if (rc != ZNONODE) /* released meanwhile: nothing to do */
		c->r.failed++;
	if (--c->pending > 0)
		return;
	c->cb(0, &c->r, c->arg);
	free(c);
}

static void revoke_on_set(int rc, const struct Stat *st, const void *data)
{
	(void)st;
	revoke_one_done((struct revoke_ctx *)data, rc);
}

static void revoke_on_deleted(int rc, const void *data)
{
	revoke_one_done((struct revoke_ctx *)data, rc);
}

/* Does the how take this node?  Holders, and for a break orphans too;
 * only lock nodes and leases: in kazoo's layout holders counts every
 * child of the resource as a lease (kazoo does), sub-resources too, and
 * those are no one's lock to ask or break. */
static int revoke_takes(const struct revoke_ctx *c,
			const struct holders_node *n)
{
	struct zkl_node parsed;

	if (names_parse(n->name, &parsed) < 0 &&
	    names_parse_peer_lease(ZKL_STYLE_KAZOO, n->name, &parsed) < 0)
		return 0;
	return n->state == HOLDERS_HELD ||
	       (c->how == REVOKE_BREAK && n->orphan);
}

/* Send the set or delete of node n; counted pending first, so that its
 * answer cannot be the last before the sender's share. */
static void revoke_send(struct revoke_ctx *c, const struct holders_node *n)
{
	char path[NAMES_MAX_NODE_PATH + 1];
	int rc = ZBADARGUMENTS;

	c->pending++;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s%s", c->dir, n->where,
			     n->name) < sizeof(path)) {
		pthread_mutex_lock(&c->s->lock);
		rc = c->how == REVOKE_ASK
			     ? zoo_aset(c->s->zh, path, REVOKE_MARK,
					(int)strlen(REVOKE_MARK), -1,
					revoke_on_set, c)
			     : zoo_adelete(c->s->zh, path, -1,
					   revoke_on_deleted, c);
		pthread_mutex_unlock(&c->s->lock);
	}
	if (rc != ZOK)
		revoke_one_done(c, rc); /* not sent: no answer will come */
	else
		log_msg(LOG_DEBUG, "%s %s",
			c->how == REVOKE_ASK ? "asked" : "broke", path);
}

static void revoke_listed(int err, const struct holders_node *nodes, size_t n,
			  const struct holders_semaphore *sem, void *arg)
{
	struct revoke_ctx *c = arg;

	(void)sem;
	if (err < 0) {
		c->cb(err, &c->r, c->arg);
		free(c);
		return;
	}
	for (size_t i = 0; i < n; i++)
		if (revoke_takes(c, &nodes[i]))
			revoke_send(c, &nodes[i]);
	revoke_one_done(c, ZNONODE); /* the sender's share */
}

int revoke_start(struct zkl_session *s, const char *dir, enum revoke_how how,
		 revoke_fn cb, void *arg)
{
	size_t len = strlen(dir) + 1;
	struct revoke_ctx *c = calloc(1, sizeof(*c) + len);
	int err;

	if (!c)
		return -ENOMEM;
	c->s = s;
	c->how = how;
	c->cb = cb;
	c->arg = arg;
	c->pending = 1;
	memcpy(c->dir, dir, len);
	err = holders_start(s, dir, revoke_listed, c);
	if (err < 0)
		free(c);
	return err;
}
