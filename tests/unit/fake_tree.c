/*
 * fake_tree.c - see fake_tree.h.
 */
#include "fake_tree.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TREE_MAX 256
#define TREE_PATH 512
#define TREE_WATCHES 256

struct tree_node {
	int used;
	char path[TREE_PATH];
	char value[64];
	int valuelen;
	int32_t version, cversion;
	int64_t czxid, owner;
};

struct tree_watch {
	int used, children; /* a child watch, else a data watch */
	char path[TREE_PATH];
	watcher_fn fn;
	void *ctx;
};

struct tree_event {
	int type;
	char path[TREE_PATH];
	watcher_fn fn;
	void *ctx;
};

static struct tree_node nodes[TREE_MAX];
/* Deletes refused (an ACL changed by another client) while set. */
static int tree_refuse_deletes;
static struct tree_watch watches[TREE_WATCHES];
static struct tree_event events[TREE_WATCHES];
static int nevents;
static int64_t zxid;
static int64_t tree_owner = 77; /* the client's, as of the last settle */
static long reply_countdown;
static int reply_failed;

void fake_fail_reply_at(long n)
{
	reply_countdown = n;
	reply_failed = 0;
}

int fake_reply_failed(void)
{
	return reply_failed;
}

static struct tree_node *tree_find(const char *path)
{
	for (int i = 0; i < TREE_MAX; i++)
		if (nodes[i].used && strcmp(nodes[i].path, path) == 0)
			return &nodes[i];
	return NULL;
}

/* The parent path of path into buf ("/" for a top-level node). */
static void tree_parent(const char *path, char buf[TREE_PATH])
{
	const char *slash = strrchr(path, '/');
	size_t len = slash && slash != path ? (size_t)(slash - path) : 1;

	memcpy(buf, path, len);
	buf[len] = '\0';
}

static int tree_is_child(const char *parent, const char *path)
{
	char p[TREE_PATH];

	tree_parent(path, p);
	return strcmp(p, parent) == 0 && strcmp(path, "/") != 0;
}

/* The watches on path of one kind fire (once each), delivered after the
 * reply being made. */
static void tree_trigger(const char *path, int children, int type)
{
	for (int i = 0; i < TREE_WATCHES; i++) {
		struct tree_watch *w = &watches[i];
		if (!w->used || w->children != children ||
		    strcmp(w->path, path) != 0)
			continue;
		cr_assert_lt(nevents, TREE_WATCHES, "too many events");
		events[nevents].type = type;
		snprintf(events[nevents].path, TREE_PATH, "%s", path);
		events[nevents].fn = w->fn;
		events[nevents].ctx = w->ctx;
		nevents++;
		w->used = 0;
	}
}

static void tree_watch(const struct fake_call *c, int children)
{
	for (int i = 0; i < TREE_WATCHES; i++) {
		struct tree_watch *w = &watches[i];
		if (w->used)
			continue;
		w->used = 1;
		w->children = children;
		snprintf(w->path, TREE_PATH, "%s", c->path);
		w->fn = c->watcher;
		w->ctx = c->watcher_ctx;
		return;
	}
	cr_assert_fail("too many watches");
}

void fake_tree_reset(void)
{
	memset(nodes, 0, sizeof(nodes));
	memset(watches, 0, sizeof(watches));
	nevents = 0;
	zxid = 1000;
	reply_countdown = 0;
	tree_refuse_deletes = 0;
	nodes[0].used = 1;
	strcpy(nodes[0].path, "/");
}

static struct tree_node *tree_new(const char *path, const char *value, int len,
				  int64_t owner)
{
	char parent[TREE_PATH];
	struct tree_node *p;

	tree_parent(path, parent);
	p = tree_find(parent);
	for (int i = 0; p && i < TREE_MAX; i++) {
		struct tree_node *n = &nodes[i];
		if (n->used)
			continue;
		n->used = 1;
		snprintf(n->path, TREE_PATH, "%s", path);
		n->valuelen = len;
		if (len > 0)
			memcpy(n->value, value, (size_t)len);
		n->czxid = ++zxid;
		n->owner = owner;
		n->version = n->cversion = 0;
		p->cversion++;
		tree_trigger(parent, 1, ZOO_CHILD_EVENT);
		return n;
	}
	cr_assert(p, "no parent for %s", path);
	cr_assert_fail("the tree is full");
	return NULL;
}

void fake_tree_add(const char *path, const char *data)
{
	tree_new(path, data, data ? (int)strlen(data) : 0, 0);
}

int fake_tree_ephemerals(void)
{
	int n = 0;

	for (int i = 0; i < TREE_MAX; i++)
		n += nodes[i].used && nodes[i].owner != 0;
	return n;
}

static struct Stat tree_stat(const struct tree_node *n)
{
	struct Stat st = { .czxid = n->czxid,
			   .version = n->version,
			   .cversion = n->cversion,
			   .ephemeralOwner = n->owner };
	return st;
}

/* A create: 0 or the error code; the node's path into name. */
static int tree_create(const struct fake_call *c, char name[TREE_PATH],
		       struct Stat *st)
{
	char parent[TREE_PATH];
	struct tree_node *p, *n;

	tree_parent(c->path, parent);
	p = tree_find(parent);
	if (!p)
		return ZNONODE;
	if ((c->mode & ZOO_SEQUENCE
		     ? snprintf(name, TREE_PATH, "%s%010d", c->path,
				p->cversion)
		     : snprintf(name, TREE_PATH, "%s", c->path)) >= TREE_PATH)
		return ZBADARGUMENTS;
	if (tree_find(name))
		return ZNODEEXISTS;
	n = tree_new(name, c->value, c->valuelen,
		     c->mode & ZOO_EPHEMERAL ? tree_owner : 0);
	*st = tree_stat(n);
	return ZOK;
}

static int tree_delete(const char *path)
{
	struct tree_node *n = tree_find(path);
	char parent[TREE_PATH];

	if (!n)
		return ZNONODE;
	if (tree_refuse_deletes)
		return ZNOAUTH;
	for (int i = 0; i < TREE_MAX; i++)
		if (nodes[i].used && tree_is_child(path, nodes[i].path))
			return ZNOTEMPTY;
	n->used = 0;
	tree_parent(path, parent);
	tree_find(parent)->cversion++;
	tree_trigger(path, 0, ZOO_DELETED_EVENT);
	tree_trigger(path, 1, ZOO_DELETED_EVENT);
	tree_trigger(parent, 1, ZOO_CHILD_EVENT);
	return ZOK;
}

static int tree_set(const struct fake_call *c, struct Stat *st)
{
	struct tree_node *n = tree_find(c->path);

	if (!n)
		return ZNONODE;
	if (c->version != -1 && c->version != n->version)
		return ZBADVERSION;
	n->valuelen = c->valuelen;
	memcpy(n->value, c->value, (size_t)c->valuelen);
	n->version++;
	*st = tree_stat(n);
	tree_trigger(c->path, 0, ZOO_CHANGED_EVENT);
	return ZOK;
}

/* The children of c->path into a vector (the names live in nodes[]). */
static int tree_children(const struct fake_call *c, struct String_vector *v,
			 char *names[TREE_MAX], struct Stat *st)
{
	struct tree_node *p = tree_find(c->path);
	size_t plen = strlen(c->path);

	v->count = 0;
	v->data = names;
	if (!p)
		return ZNONODE;
	for (int i = 0; i < TREE_MAX; i++)
		if (nodes[i].used && tree_is_child(c->path, nodes[i].path))
			names[v->count++] =
				nodes[i].path + plen + (plen > 1 ? 1 : 0);
	*st = tree_stat(p);
	if (c->op == FAKE_WCHILDREN)
		tree_watch(c, 1);
	return ZOK;
}

/* A transaction: its creates, sets and deletes, all or none (a failed
 * op takes back the creates before it; a set or delete fails only on a
 * node that is not there, before anything but creates was done: notes
 * are written on nodes that are, and a downgrade sets, then deletes, its
 * write node). */
static int tree_multi(const struct fake_call *c)
{
	char made[64][TREE_PATH];
	int nmade = 0, rc = ZOK;

	cr_assert_leq(c->count, 64);
	for (int i = 0; i < c->count && rc == ZOK; i++) {
		const zoo_op_t *op = &c->ops[i];
		struct fake_call one = { .op = FAKE_CREATE };
		struct Stat st;
		if (op->type == ZOO_CREATE_OP) {
			snprintf(one.path, sizeof(one.path), "%s",
				 op->create_op.path);
			one.mode = op->create_op.flags;
			fake_call_value_of(&one, op->create_op.data,
					   op->create_op.datalen);
			rc = tree_create(&one, made[nmade], &st);
			if (rc == ZOK)
				snprintf(op->create_op.buf,
					 (size_t)op->create_op.buflen, "%s",
					 made[nmade++]);
		} else if (op->type == ZOO_SETDATA_OP) {
			one.op = FAKE_SET;
			one.version = op->set_op.version;
			snprintf(one.path, sizeof(one.path), "%s",
				 op->set_op.path);
			fake_call_value_of(&one, op->set_op.data,
					   op->set_op.datalen);
			rc = tree_set(&one, &st);
			if (rc == ZOK && op->set_op.stat)
				*op->set_op.stat = st;
		} else {
			rc = tree_delete(op->delete_op.path);
		}
	}
	if (rc != ZOK)
		while (nmade-- > 0)
			tree_delete(made[nmade]);
	for (int i = 0; i < c->count; i++)
		c->results[i].err = rc;
	return rc;
}

/* Is this reply the one to lose? */
static int tree_lose_reply(void)
{
	if (reply_countdown <= 0 || --reply_countdown > 0)
		return 0;
	reply_failed = 1;
	return 1;
}

/* Call c's completion with rc and what the reply carries. */
static void tree_reply(const struct fake_call *c, int rc, const char *name,
		       const struct Stat *st, const struct String_vector *v,
		       const struct tree_node *n)
{
	switch (c->op) {
	case FAKE_CREATE:
		((string_stat_completion_t)c->completion)(
			rc, rc == ZOK ? name : NULL, rc == ZOK ? st : NULL,
			c->data);
		break;
	case FAKE_CREATE_PARENT:
		((string_completion_t)c->completion)(
			rc, rc == ZOK ? name : NULL, c->data);
		break;
	case FAKE_DELETE:
		if (c->completion)
			((void_completion_t)c->completion)(rc, c->data);
		break;
	case FAKE_SET:
	case FAKE_EXISTS:
		if (c->completion)
			((stat_completion_t)c->completion)(
				rc, rc == ZOK ? st : NULL, c->data);
		break;
	case FAKE_CHILDREN:
	case FAKE_WCHILDREN:
		if (c->with_stat)
			((strings_stat_completion_t)c->completion)(
				rc, rc == ZOK ? v : NULL, rc == ZOK ? st : NULL,
				c->data);
		else
			((strings_completion_t)c->completion)(
				rc, rc == ZOK ? v : NULL, c->data);
		break;
	case FAKE_MULTI:
		((void_completion_t)c->completion)(rc, c->data);
		break;
	case FAKE_GET:
	case FAKE_READ:
		((data_completion_t)c->completion)(rc,
						   rc == ZOK ? n->value : NULL,
						   rc == ZOK ? n->valuelen : -1,
						   rc == ZOK ? st : NULL,
						   c->data);
		break;
	}
}

static void tree_answer(struct fake_call *c)
{
	char name[TREE_PATH], *names[TREE_MAX];
	struct String_vector v = { 0 };
	struct Stat st = { 0 };
	struct tree_node *n = NULL;
	int rc = ZOK;

	switch (c->op) {
	case FAKE_CREATE:
	case FAKE_CREATE_PARENT:
		rc = tree_create(c, name, &st);
		break;
	case FAKE_DELETE:
		rc = tree_delete(c->path);
		break;
	case FAKE_SET:
		rc = tree_set(c, &st);
		break;
	case FAKE_CHILDREN:
	case FAKE_WCHILDREN:
		rc = tree_children(c, &v, names, &st);
		break;
	case FAKE_MULTI:
		rc = tree_multi(c);
		break;
	case FAKE_EXISTS:
	case FAKE_GET:
	case FAKE_READ:
		n = tree_find(c->path);
		rc = n ? ZOK : ZNONODE;
		if (n)
			st = tree_stat(n);
		if (n && c->op == FAKE_GET)
			tree_watch(c, 0);
		break;
	}
	if (tree_lose_reply())
		rc = ZCONNECTIONLOSS; /* done, but the client cannot know */
	tree_reply(c, rc, name, &st, &v, n);
}

/* Deliver the events the last reply caused, in order. */
static void tree_deliver(void)
{
	struct tree_event ev[TREE_WATCHES];
	int n = nevents;

	memcpy(ev, events, sizeof(ev[0]) * (size_t)n);
	nevents = 0;
	for (int i = 0; i < n; i++)
		ev[i].fn(NULL, ev[i].type, ZOO_CONNECTED_STATE, ev[i].path,
			 ev[i].ctx);
}

void fake_tree_set(const char *path, const char *data)
{
	struct fake_call c = { .op = FAKE_SET, .version = -1 };
	struct Stat st;

	snprintf(c.path, sizeof(c.path), "%s", path);
	c.valuelen = (int)strlen(data);
	memcpy(c.value, data, (size_t)c.valuelen);
	cr_assert_eq(tree_set(&c, &st), ZOK, "no node %s", path);
	tree_deliver();
}

void fake_tree_refuse_deletes(int on)
{
	tree_refuse_deletes = on;
}

int fake_tree_delete_lock_node(const char *dir, int k)
{
	struct tree_node *found[TREE_MAX];
	int n = 0;

	for (int i = 0; i < TREE_MAX; i++)
		if (nodes[i].used && nodes[i].owner != 0 &&
		    tree_is_child(dir, nodes[i].path))
			found[n++] = &nodes[i];
	/* By creation: the order of their sequence numbers here. */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && found[j]->czxid < found[j - 1]->czxid;
		     j--) {
			struct tree_node *t = found[j];
			found[j] = found[j - 1];
			found[j - 1] = t;
		}
	if (k >= n)
		return 0;
	cr_assert_eq(tree_delete(found[k]->path), ZOK);
	tree_deliver();
	return 1;
}

void fake_tree_expire(struct zkl_session *s)
{
	struct zkl_link lost;

	fake_expire(s, 1, &lost);
	fake_free_lost(&lost);
	/* The old handle's calls fail; its nodes and watches are gone. */
	while (fake_pending() > 0) {
		struct fake_call c = fake_take();
		tree_reply(&c, ZSESSIONEXPIRED, NULL, NULL, NULL, NULL);
	}
	for (int i = 0; i < TREE_MAX; i++)
		if (nodes[i].used && nodes[i].owner == s->client_id)
			nodes[i].used = 0;
	memset(watches, 0, sizeof(watches));
	nevents = 0;
	s->client_id++;
	s->state = ZKL_CONN_CONNECTED;
}

void fake_tree_settle(struct zkl_session *s)
{
	int replies = 0;

	tree_owner = s->client_id;
	for (;;) {
		if (fake_pending() > 0) {
			struct fake_call c = fake_take();
			tree_answer(&c);
			tree_deliver();
			cr_assert_lt(++replies, 10000,
				     "the scenario never ends");
		} else if (!list_empty(&s->resume)) {
			fake_resume_all(s);
		} else {
			return;
		}
	}
}
