/*
 * resource.c - list, create and remove resource znodes, and get and set
 * the limit in their data (see resource.h).
 *
 * Every operation is one struct resource_op, sent by resource_send_locked
 * and freed by its last completion.
 */
#include "resource.h"
#include "internal.h"
#include "limit.h"
#include "names.h"
#include "zkerr.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "log.h"

enum resource_verb {
	RES_LIST,
	RES_CREATE,
	RES_REMOVE,
	RES_GET_LIMIT,
	RES_SET_LIMIT,
	RES_CREATE_LIMIT, /* set found no znode: create it with the limit */
	RES_PIN,          /* a limit was stored: pin the znode (below) */
	RES_UNPIN_REMOVE, /* a remove found children: the pin and the znode */
};

/*
 * A resource's limit lives in its znode's data, so it lasts as long as the
 * znode.  A znode a lock makes is a container (session.c), as one Curator
 * created first is, which the server deletes once it has no children --
 * and ZooKeeper shows a container to clients as persistent, so that
 * cannot be told.  So storing a limit also creates a persistent child
 * RESOURCE_PIN, which keeps any znode in place: no container with a child
 * is deleted (a reaping between the set and the pin stores the limit
 * again, in a persistent znode: resource_on_pinned).  Its name is no resource's (it starts with '.') and no
 * lock node's.  Not in the kazoo dialect: kazoo counts every child of the
 * resource as a lease, and kazoo makes no containers.  Removing a
 * resource removes its pin with it, in one transaction, or neither.
 */
#define RESOURCE_PIN ".zklockfs-limit"

struct resource_op {
	enum resource_verb verb;
	union {
		resource_list_fn list;
		resource_done_fn done;
		resource_limit_fn limit;
	} cb;
	void *arg;
	struct zkl_session *s;
	char text[LIMIT_TEXT_MAX]; /* the limit to store */
	size_t textlen;
	char child[NAMES_MAX_NODE_PATH + sizeof(RESOURCE_PIN) + 1];
	zoo_op_t multi[2]; /* RES_UNPIN_REMOVE's, alive until its reply */
	zoo_op_result_t results[2];
	int created; /* RES_CREATE_LIMIT was sent once */
	char path[];
};

static void resource_on_listed(int rc, const struct String_vector *v,
			       const struct Stat *st, const void *data);
static void resource_on_created(int rc, const char *name, const void *data);
static void resource_on_removed(int rc, const void *data);
static void resource_on_limit(int rc, const char *value, int len,
			      const struct Stat *st, const void *data);
static void resource_on_set(int rc, const struct Stat *st, const void *data);
static void resource_on_pinned(int rc, const char *name, const void *data);
static void resource_on_unpinned(int rc, const void *data);

/* Queue the creation of every missing znode between the base and path's
 * parent, so that a create of path queued next finds them.  Returns 0 or
 * -errno. */
static int resource_create_parents_locked(struct zkl_session *s,
					  const char *path)
{
	char parent[NAMES_MAX_NODE_PATH + 1];
	const char *slash = strrchr(path, '/');
	size_t len = slash ? (size_t)(slash - path) : 0;

	if (len <= strlen(s->base) || len >= sizeof(parent))
		return 0;
	memcpy(parent, path, len);
	parent[len] = '\0';
	return session_create_parents_locked(s, parent);
}

/* Send op's request.  Returns ZooKeeper's code (ZOK: a completion will
 * come).  s->lock held: s->zh changes when a session expires. */
static int resource_send_locked(struct resource_op *op)
{
	struct zkl_session *s = op->s;
	const char *p = op->path;
	int err;

	/* A create, a removal, a limit: holders of p changes (its limit
	 * line, or it is gone). */
	if (op->verb != RES_LIST && op->verb != RES_GET_LIMIT)
		session_changed(s, p);
	switch (op->verb) {
	case RES_LIST:
		return zoo_aget_children2(s->zh, p, 0, resource_on_listed, op);
	case RES_CREATE:
	case RES_CREATE_LIMIT:
		/* Parents first, queued in order before the create that
		 * reports; their own errors show in its reply. */
		err = resource_create_parents_locked(s, p);
		if (err < 0)
			return ZSYSTEMERROR;
		/* Empty data, not none (session.c says why). */
		return zoo_acreate(
			s->zh, p, op->verb == RES_CREATE ? "" : op->text,
			op->verb == RES_CREATE ? 0 : (int)op->textlen, s->acl,
			ZOO_PERSISTENT, resource_on_created, op);
	case RES_REMOVE:
		return zoo_adelete(s->zh, p, -1, resource_on_removed, op);
	case RES_GET_LIMIT:
		return zoo_aget(s->zh, p, 0, resource_on_limit, op);
	case RES_PIN:
		if (snprintf(op->child, sizeof(op->child), "%s/%s", p,
			     RESOURCE_PIN) >= (int)sizeof(op->child))
			return ZBADARGUMENTS;
		return zoo_acreate(s->zh, op->child, "", 0, s->acl,
				   ZOO_PERSISTENT, resource_on_pinned, op);
	case RES_UNPIN_REMOVE:
		if (snprintf(op->child, sizeof(op->child), "%s/%s", p,
			     RESOURCE_PIN) >= (int)sizeof(op->child))
			return ZBADARGUMENTS;
		zoo_delete_op_init(&op->multi[0], op->child, -1);
		zoo_delete_op_init(&op->multi[1], p, -1);
		return zoo_amulti(s->zh, 2, op->multi, op->results,
				  resource_on_unpinned, op);
	case RES_SET_LIMIT:
		return zoo_aset(s->zh, p, op->text, (int)op->textlen, -1,
				resource_on_set, op);
	}
	return ZBADARGUMENTS;
}

/* Finish a create, remove or set with ZooKeeper's code rc. */
static void resource_done(struct resource_op *op, int rc)
{
	op->cb.done(zkerr_errno(rc), op->arg);
	free(op);
}

/* Send op again (its verb changed), from its completion. */
static void resource_resend(struct resource_op *op)
{
	struct zkl_link notify;
	struct zkl_session *s = op->s; /* op may be gone once it is sent */
	int rc;

	session_enter(s, &notify);
	rc = resource_send_locked(op);
	session_leave(s, &notify);
	if (rc != ZOK)
		resource_done(op, rc);
}

/* A limit was stored: pin the znode, unless kazoo's semaphore counts its
 * children (RESOURCE_PIN above): in dialect kazoo, and with -o
 * containers=no, which is for a base that kazoo-dialect mounts share
 * (every mount of it makes persistent resource znodes then).  From a
 * completion. */
static void resource_pin(struct resource_op *op)
{
	if (op->s->dialect == ZKL_STYLE_KAZOO || op->s->persistent_resources)
		return resource_done(op, ZOK);
	op->verb = RES_PIN;
	resource_resend(op);
}

static struct resource_op *resource_op_new(struct zkl_session *s,
					   enum resource_verb verb,
					   const char *path, void *arg)
{
	size_t len = strlen(path) + 1;
	struct resource_op *op = calloc(1, sizeof(*op) + len);

	if (op) {
		op->verb = verb;
		op->s = s;
		op->arg = arg;
		memcpy(op->path, path, len);
	}
	return op;
}

/* A new op whose callback is a resource_done_fn. */
static struct resource_op *resource_done_op(struct zkl_session *s,
					    enum resource_verb verb,
					    const char *path,
					    resource_done_fn cb, void *arg)
{
	struct resource_op *op = resource_op_new(s, verb, path, arg);

	if (op)
		op->cb.done = cb;
	return op;
}

/* Send a new op; returns 0, or -errno with op freed (no callback). */
static int resource_start(struct resource_op *op)
{
	struct zkl_link notify;
	struct zkl_session *s;
	int rc;

	if (!op)
		return -ENOMEM;
	s = op->s; /* op may be gone once it is sent */
	session_enter(s, &notify);
	rc = resource_send_locked(op);
	session_leave(s, &notify);
	if (rc != ZOK) {
		free(op);
		return zkerr_errno(rc);
	}
	return 0;
}

/* ---- list, create, remove --------------------------------------------- */

static void resource_on_listed(int rc, const struct String_vector *v,
			       const struct Stat *st, const void *data)
{
	struct resource_op *op = (struct resource_op *)data;

	if (rc == ZOK)
		op->cb.list(0, v->data, (size_t)v->count, st->cversion,
			    op->arg);
	else
		op->cb.list(zkerr_errno(rc), NULL, 0, 0, op->arg);
	free(op);
}

int resource_list(struct zkl_session *s, const char *path, resource_list_fn cb,
		  void *arg)
{
	struct resource_op *op = resource_op_new(s, RES_LIST, path, arg);

	if (op)
		op->cb.list = cb;
	return resource_start(op);
}

static void resource_on_created(int rc, const char *name, const void *data)
{
	struct resource_op *op = (struct resource_op *)data;

	(void)name;
	if (op->verb == RES_CREATE_LIMIT && rc == ZNODEEXISTS) {
		/* Another host created it in between: set it after all. */
		op->verb = RES_SET_LIMIT;
		return resource_resend(op);
	}
	if (op->verb == RES_CREATE_LIMIT && rc == ZOK)
		return resource_pin(op);
	resource_done(op, rc);
}

int resource_create(struct zkl_session *s, const char *path,
		    resource_done_fn cb, void *arg)
{
	return resource_start(resource_done_op(s, RES_CREATE, path, cb, arg));
}

static void resource_on_removed(int rc, const void *data)
{
	struct resource_op *op = (struct resource_op *)data;

	if (rc == ZNOTEMPTY && op->verb == RES_REMOVE) {
		/* Perhaps its only child is the pin of its limit. */
		op->verb = RES_UNPIN_REMOVE;
		return resource_resend(op);
	}
	resource_done(op, rc == ZNONODE ? ZOK : rc);
}

static void resource_on_unpinned(int rc, const void *data)
{
	struct resource_op *op = (struct resource_op *)data;

	/* The multi's first failure: no pin (ZNONODE on it) means the
	 * children are others'; a child beside the pin fails the delete. */
	if (rc == ZNONODE || rc == ZNOTEMPTY)
		rc = ZNOTEMPTY;
	resource_done(op, rc);
}

int resource_remove(struct zkl_session *s, const char *path,
		    resource_done_fn cb, void *arg)
{
	return resource_start(resource_done_op(s, RES_REMOVE, path, cb, arg));
}

/* ---- the limit -------------------------------------------------------- */

int resource_limit_of_reply(int rc, const char *value, int len, unsigned *n)
{
	*n = 1;
	if (rc != ZOK)
		return zkerr_errno(rc);
	if (limit_parse(value, len > 0 ? (size_t)len : 0, 1, n) < 0)
		return -EBADMSG;
	return 0;
}

static void resource_on_limit(int rc, const char *value, int len,
			      const struct Stat *st, const void *data)
{
	struct resource_op *op = (struct resource_op *)data;
	unsigned n;
	int err = resource_limit_of_reply(rc, value, len, &n);

	(void)st;
	if (err == -ENOENT) /* a resource never locked: never set */
		err = 0;
	op->cb.limit(err, n, op->arg);
	free(op);
}

int resource_get_limit(struct zkl_session *s, const char *path,
		       resource_limit_fn cb, void *arg)
{
	struct resource_op *op = resource_op_new(s, RES_GET_LIMIT, path, arg);

	if (op)
		op->cb.limit = cb;
	return resource_start(op);
}

static void resource_on_set(int rc, const struct Stat *st, const void *data)
{
	struct resource_op *op = (struct resource_op *)data;

	(void)st;
	if (rc == ZNONODE && !op->created) {
		/* A resource nobody locked yet has no znode: create it with
		 * the limit as its data, once. */
		op->created = 1;
		op->verb = RES_CREATE_LIMIT;
		return resource_resend(op);
	}
	if (rc == ZOK)
		return resource_pin(op);
	resource_done(op, rc);
}

static void resource_on_pinned(int rc, const char *name, const void *data)
{
	struct resource_op *op = (struct resource_op *)data;

	(void)name;
	if (rc == ZNONODE && !op->created) {
		/* The server reaped the container between the set and the
		 * pin, and the limit with it: store it again in a znode of
		 * our own (persistent), once. */
		op->created = 1;
		op->verb = RES_CREATE_LIMIT;
		return resource_resend(op);
	}
	if (rc == ZNONODE) /* gone twice: deleted by another client */
		return resource_done(op, rc);
	if (rc != ZOK && rc != ZNODEEXISTS)
		log_msg(LOG_WARNING,
			"%s: limit stored, but not pinned (%s): should the "
			"znode be a container, it and the limit go once it "
			"is empty",
			op->path, zerror(rc));
	resource_done(op, ZOK);
}

int resource_set_limit(struct zkl_session *s, const char *path, unsigned n,
		       resource_done_fn cb, void *arg)
{
	struct resource_op *op =
		resource_done_op(s, RES_SET_LIMIT, path, cb, arg);

	if (op)
		op->textlen = limit_format(n, op->text, sizeof(op->text));
	return resource_start(op);
}
