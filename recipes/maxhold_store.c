/*
 * maxhold_store.c - read a resource's hold limit from the table znode, and
 * store one (maxhold.h).
 *
 * Storing is a read, an edit and a write conditional on the version read
 * (a create when there was no table, a delete when it becomes empty): two
 * hosts storing at once never lose one's limit, the second one's write
 * fails and it starts over from a fresh read, at most MAXHOLD_ATTEMPTS
 * times.
 */
#include "internal.h"
#include "maxhold.h"
#include "zkerr.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXHOLD_ATTEMPTS 16

struct maxhold_op {
	struct zkl_session *s;
	maxhold_read_fn read_cb;     /* a read, or ... */
	maxhold_stored_fn stored_cb; /* ... a store of secs */
	void *arg;
	unsigned secs;
	int attempts;
	char *text;      /* the table to write, while it is written */
	const char *res; /* in path, after the base */
	char path[];     /* the table znode's path, then a NUL, then dir */
};

static void maxhold_on_got(int rc, const char *value, int len,
			   const struct Stat *st, const void *data);

static void maxhold_finish(struct maxhold_op *op, int err, unsigned secs)
{
	if (op->read_cb)
		op->read_cb(err, secs, op->arg);
	else
		op->stored_cb(err, op->arg);
	free(op->text);
	free(op);
}

/* Read the table (again).  Returns ZooKeeper's code. */
static int maxhold_send_get(struct maxhold_op *op)
{
	struct zkl_session *s = op->s; /* op may be gone once it is sent */
	int rc;

	pthread_mutex_lock(&s->lock);
	rc = zoo_aget(s->zh, op->path, 0, maxhold_on_got, op);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/* A conditional write's answer: done, or lost a race (start over). */
static void maxhold_on_written(struct maxhold_op *op, int rc)
{
	free(op->text);
	op->text = NULL;
	if ((rc == ZBADVERSION || rc == ZNODEEXISTS || rc == ZNONODE) &&
	    ++op->attempts < MAXHOLD_ATTEMPTS) {
		rc = maxhold_send_get(op);
		if (rc == ZOK)
			return;
	} else if (rc == ZBADVERSION || rc == ZNODEEXISTS || rc == ZNONODE) {
		return maxhold_finish(op, -EBUSY, 0);
	}
	maxhold_finish(op, zkerr_errno(rc), 0);
}

static void maxhold_on_set(int rc, const struct Stat *st, const void *data)
{
	(void)st;
	maxhold_on_written((struct maxhold_op *)data, rc);
}

static void maxhold_on_created(int rc, const char *name, const void *data)
{
	(void)name;
	maxhold_on_written((struct maxhold_op *)data, rc);
}

static void maxhold_on_deleted(int rc, const void *data)
{
	maxhold_on_written((struct maxhold_op *)data, rc);
}

/* Write the table edited: on the version read (-1: there was none); an
 * empty one is deleted. */
static int maxhold_send_write(struct maxhold_op *op, int version, size_t len)
{
	struct zkl_session *s = op->s;
	int rc;

	pthread_mutex_lock(&s->lock);
	if (len == 0)
		rc = zoo_adelete(s->zh, op->path, version, maxhold_on_deleted,
				 op);
	else if (version < 0)
		rc = zoo_acreate(s->zh, op->path, op->text, (int)len, s->acl,
				 ZOO_PERSISTENT, maxhold_on_created, op);
	else
		rc = zoo_aset(s->zh, op->path, op->text, (int)len, version,
			      maxhold_on_set, op);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

static void maxhold_on_got(int rc, const char *value, int len,
			   const struct Stat *st, const void *data)
{
	struct maxhold_op *op = (struct maxhold_op *)data;
	struct maxhold_table t;
	size_t textlen;
	int err;

	if (rc != ZOK && rc != ZNONODE)
		return maxhold_finish(op, zkerr_errno(rc), 0);
	err = maxhold_table_parse(rc == ZOK ? value : NULL,
				  rc == ZOK && len > 0 ? (size_t)len : 0, &t);
	if (err < 0)
		return maxhold_finish(op, err, 0);
	if (op->read_cb) {
		unsigned secs = maxhold_table_lookup(&t, op->res);
		maxhold_table_free(&t);
		return maxhold_finish(op, 0, secs);
	}
	err = maxhold_table_set(&t, op->res, op->secs);
	if (err == 0)
		err = maxhold_table_format(&t, &op->text, &textlen);
	maxhold_table_free(&t);
	if (err == 0 && textlen > MAXHOLD_TABLE_MAX)
		err = -ENOSPC;
	if (err < 0)
		return maxhold_finish(op, err, 0);
	if (textlen == 0 && rc == ZNONODE) /* no table, none wanted */
		return maxhold_finish(op, 0, 0);
	rc = maxhold_send_write(op, rc == ZOK ? st->version : -1, textlen);
	if (rc != ZOK)
		maxhold_finish(op, zkerr_errno(rc), 0);
}

static int maxhold_start(struct zkl_session *s, const char *dir,
			 struct maxhold_op *proto)
{
	size_t baselen = strlen(s->base);
	size_t pathlen = baselen + 1 + sizeof(MAXHOLD_NODE);
	size_t dirlen = strlen(dir);
	struct maxhold_op *op;
	int rc;

	if (strncmp(dir, s->base, baselen) != 0 || dir[baselen] != '/' ||
	    strchr(dir, '\n'))
		return -EINVAL;
	op = malloc(sizeof(*op) + pathlen + dirlen + 1);
	if (!op)
		return -ENOMEM;
	*op = *proto;
	snprintf(op->path, pathlen, "%s/%s", s->base, MAXHOLD_NODE);
	memcpy(op->path + pathlen, dir, dirlen + 1);
	op->res = op->path + pathlen + baselen + 1;
	rc = maxhold_send_get(op);
	if (rc != ZOK) {
		free(op);
		return zkerr_errno(rc);
	}
	return 0;
}

int maxhold_read(struct zkl_session *s, const char *dir, maxhold_read_fn cb,
		 void *arg)
{
	struct maxhold_op proto = { .s = s, .read_cb = cb, .arg = arg };

	return maxhold_start(s, dir, &proto);
}

int maxhold_store(struct zkl_session *s, const char *dir, unsigned secs,
		  maxhold_stored_fn cb, void *arg)
{
	struct maxhold_op proto = {
		.s = s, .stored_cb = cb, .arg = arg, .secs = secs
	};

	return maxhold_start(s, dir, &proto);
}
