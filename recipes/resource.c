/*
 * resource.c - list, create and remove resource znodes (see resource.h).
 */
#include "resource.h"
#include "internal.h"
#include "zkerr.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct resource_op {
	union {
		resource_list_fn list;
		resource_done_fn done;
	} cb;
	void *arg;
};

static struct resource_op *resource_op_new(void *arg)
{
	struct resource_op *op = malloc(sizeof(*op));

	if (op)
		op->arg = arg;
	return op;
}

static void resource_on_listed(int rc, const struct String_vector *v,
			       const void *data)
{
	struct resource_op *op = (struct resource_op *)data;

	if (rc == ZOK)
		op->cb.list(0, v->data, (size_t)v->count, op->arg);
	else
		op->cb.list(zkerr_errno(rc), NULL, 0, op->arg);
	free(op);
}

int resource_list(struct zkl_session *s, const char *path, resource_list_fn cb,
		  void *arg)
{
	struct resource_op *op = resource_op_new(arg);
	int rc;

	if (!op)
		return -ENOMEM;
	op->cb.list = cb;
	pthread_mutex_lock(&s->lock); /* s->zh changes when a session expires */
	rc = zoo_aget_children(s->zh, path, 0, resource_on_listed, op);
	pthread_mutex_unlock(&s->lock);
	if (rc != ZOK) {
		free(op);
		return zkerr_errno(rc);
	}
	return 0;
}

static void resource_on_created(int rc, const char *name, const void *data)
{
	struct resource_op *op = (struct resource_op *)data;

	(void)name;
	op->cb.done(zkerr_errno(rc), op->arg);
	free(op);
}

int resource_create(struct zkl_session *s, const char *path,
		    resource_done_fn cb, void *arg)
{
	struct resource_op *op = resource_op_new(arg);
	char parent[1024];
	const char *slash = strrchr(path, '/');
	int rc = 0;

	if (!op)
		return -ENOMEM;
	op->cb.done = cb;
	pthread_mutex_lock(&s->lock);
	/* Parents first, queued in order before the create that reports. */
	if (slash && (size_t)(slash - path) > strlen(s->base) &&
	    (size_t)(slash - path) < sizeof(parent)) {
		memcpy(parent, path, (size_t)(slash - path));
		parent[slash - path] = '\0';
		rc = session_create_parents_locked(s, parent);
	}
	if (rc == 0)
		rc = zkerr_errno(zoo_acreate(s->zh, path, NULL, -1, s->acl,
					     ZOO_PERSISTENT,
					     resource_on_created, op));
	pthread_mutex_unlock(&s->lock);
	if (rc < 0)
		free(op);
	return rc;
}

static void resource_on_removed(int rc, const void *data)
{
	struct resource_op *op = (struct resource_op *)data;

	op->cb.done(rc == ZNONODE ? 0 : zkerr_errno(rc), op->arg);
	free(op);
}

int resource_remove(struct zkl_session *s, const char *path,
		    resource_done_fn cb, void *arg)
{
	struct resource_op *op = resource_op_new(arg);
	int rc;

	if (!op)
		return -ENOMEM;
	op->cb.done = cb;
	pthread_mutex_lock(&s->lock);
	rc = zoo_adelete(s->zh, path, -1, resource_on_removed, op);
	pthread_mutex_unlock(&s->lock);
	if (rc != ZOK) {
		free(op);
		return zkerr_errno(rc);
	}
	return 0;
}
