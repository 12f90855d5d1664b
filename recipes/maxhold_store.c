/*
 * maxhold_store.c - read a resource's hold limit from the table znode, and
 * store one (maxhold.h).
 *
 * Storing is a read, an edit and a write conditional on the version read
 * (a create when there was no table, a delete when it becomes empty): of
 * two hosts writing at once one wins, and the other starts over from a
 * fresh read, with its edits again.  A mount sends one such round at a
 * time, with every edit asked so far in it, so that however many of its
 * users write limits at once, it is one contender: a round that lost, to
 * another host that won, is sent again, at most MAXHOLD_ATTEMPTS times.
 */
#include "internal.h"
#include "maxhold.h"
#include "zkerr.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXHOLD_ATTEMPTS 64

/* One edit asked: in s->maxhold_stores until a round takes it. */
struct maxhold_edit {
	struct zkl_link link;
	maxhold_stored_fn cb;
	void *arg;
	unsigned secs;
	char res[]; /* relative to the base */
};

/* The round in flight (one per session): its edits and its attempts. */
struct maxhold_round {
	struct zkl_session *s;
	struct zkl_link edits;
	int attempts;
	char *text; /* the table to write, while it is written */
	char path[];
};

/* A read: the limit of one resource. */
struct maxhold_query {
	maxhold_read_fn cb;
	void *arg;
	const char *res; /* in path, after the table's path and the base */
	char path[];
};

static void maxhold_path(const struct zkl_session *s, char *out, size_t size)
{
	snprintf(out, size, "%s/%s", s->base, MAXHOLD_NODE);
}

/* dir's name relative to the base, or NULL if it cannot be in the table
 * (not under the base, or a newline in it). */
static const char *maxhold_res_of(const struct zkl_session *s, const char *dir)
{
	size_t n = strlen(s->base);

	if (strncmp(dir, s->base, n) != 0 || dir[n] != '/' || strchr(dir, '\n'))
		return NULL;
	return dir + n + 1;
}

/* ---- reading ------------------------------------------------------------ */

static void maxhold_on_read(int rc, const char *value, int len,
			    const struct Stat *st, const void *data)
{
	struct maxhold_query *q = (struct maxhold_query *)data;
	struct maxhold_table t;
	unsigned secs = 0;
	int err = rc == ZNONODE ? 0 : zkerr_errno(rc);

	(void)st;
	if (rc == ZOK) {
		err = maxhold_table_parse(value, len > 0 ? (size_t)len : 0, &t);
		if (err >= 0) {
			secs = maxhold_table_lookup(&t, q->res);
			maxhold_table_free(&t);
			err = 0;
		}
	}
	q->cb(err, secs, q->arg);
	free(q);
}

int maxhold_read(struct zkl_session *s, const char *dir, maxhold_read_fn cb,
		 void *arg)
{
	const char *res = maxhold_res_of(s, dir);
	size_t pathlen = strlen(s->base) + sizeof(MAXHOLD_NODE) + 1;
	struct maxhold_query *q;
	int rc;

	if (!res)
		return -EINVAL;
	q = malloc(sizeof(*q) + pathlen + strlen(res) + 1);
	if (!q)
		return -ENOMEM;
	q->cb = cb;
	q->arg = arg;
	maxhold_path(s, q->path, pathlen);
	strcpy(q->path + pathlen, res);
	q->res = q->path + pathlen;
	pthread_mutex_lock(&s->lock);
	rc = zoo_aget(s->zh, q->path, 0, maxhold_on_read, q);
	pthread_mutex_unlock(&s->lock);
	if (rc != ZOK) {
		free(q);
		return zkerr_errno(rc);
	}
	return 0;
}

/* ---- storing ------------------------------------------------------------ */

static void maxhold_on_got(int rc, const char *value, int len,
			   const struct Stat *st, const void *data);
static void maxhold_next_round(struct zkl_session *s);

/* Send the round's read (again), with the edits asked since.  Returns
 * ZooKeeper's code. */
static int maxhold_send_get(struct maxhold_round *r)
{
	struct zkl_session *s = r->s;
	int rc;

	pthread_mutex_lock(&s->lock);
	while (!list_empty(&s->maxhold_stores)) {
		struct zkl_link *l = s->maxhold_stores.next;
		list_del(l);
		list_add_tail(&r->edits, l);
	}
	rc = zoo_aget(s->zh, r->path, 0, maxhold_on_got, r);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/* Tell each edit of the list err, and free it.  No lock held. */
static void maxhold_tell_all(struct zkl_link *edits, int err)
{
	while (!list_empty(edits)) {
		struct maxhold_edit *e = ZKL_CONTAINER_OF(
			edits->next, struct maxhold_edit, link);
		list_del(&e->link);
		e->cb(err, e->arg);
		free(e);
	}
}

/* Tell each edit of the round err, free it, and start the next round. */
static void maxhold_finish(struct maxhold_round *r, int err)
{
	struct zkl_session *s = r->s;

	maxhold_tell_all(&r->edits, err);
	free(r->text);
	free(r);
	maxhold_next_round(s);
}

/* A conditional write's answer: done, or lost to another host (again). */
static void maxhold_on_written(struct maxhold_round *r, int rc)
{
	int lost = rc == ZBADVERSION || rc == ZNODEEXISTS || rc == ZNONODE;

	free(r->text);
	r->text = NULL;
	if (lost && ++r->attempts < MAXHOLD_ATTEMPTS) {
		rc = maxhold_send_get(r);
		if (rc == ZOK)
			return;
	} else if (lost) {
		return maxhold_finish(r, -EBUSY);
	}
	maxhold_finish(r, zkerr_errno(rc));
}

static void maxhold_on_set(int rc, const struct Stat *st, const void *data)
{
	(void)st;
	maxhold_on_written((struct maxhold_round *)data, rc);
}

static void maxhold_on_created(int rc, const char *name, const void *data)
{
	(void)name;
	maxhold_on_written((struct maxhold_round *)data, rc);
}

static void maxhold_on_deleted(int rc, const void *data)
{
	maxhold_on_written((struct maxhold_round *)data, rc);
}

/* Write the table edited: on the version read (-1: there was none); an
 * empty one is deleted. */
static int maxhold_send_write(struct maxhold_round *r, int version, size_t len)
{
	struct zkl_session *s = r->s;
	int rc;

	pthread_mutex_lock(&s->lock);
	if (len == 0)
		rc = zoo_adelete(s->zh, r->path, version, maxhold_on_deleted,
				 r);
	else if (version < 0)
		rc = zoo_acreate(s->zh, r->path, r->text, (int)len, s->acl,
				 ZOO_PERSISTENT, maxhold_on_created, r);
	else
		rc = zoo_aset(s->zh, r->path, r->text, (int)len, version,
			      maxhold_on_set, r);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/* Apply edit e to t, unless it makes the table too large: then it is
 * taken out of the round into `refused`, and t is as it was. */
static int maxhold_edit_one(struct maxhold_table *t, struct maxhold_edit *e,
			    struct zkl_link *refused)
{
	unsigned was = maxhold_table_lookup(t, e->res);
	int err = maxhold_table_set(t, e->res, e->secs);

	if (err < 0 || maxhold_table_text_len(t) <= MAXHOLD_TABLE_MAX)
		return err;
	list_del(&e->link);
	list_add_tail(refused, &e->link);
	return maxhold_table_set(t, e->res, was); /* was there: no room */
}

/* The table as read, with the round's edits applied, as text; the edits
 * that would make it too large are refused, each alone. */
static int maxhold_edit_all(struct maxhold_round *r, const char *value,
			    size_t len, size_t *textlen,
			    struct zkl_link *refused)
{
	struct maxhold_table t;
	int err = maxhold_table_parse(value, len, &t);

	if (err < 0)
		return err;
	err = 0;
	for (struct zkl_link *l = r->edits.next, *next; l != &r->edits && !err;
	     l = next) {
		next = l->next;
		err = maxhold_edit_one(
			&t, ZKL_CONTAINER_OF(l, struct maxhold_edit, link),
			refused);
	}
	if (err == 0)
		err = maxhold_table_format(&t, &r->text, textlen);
	maxhold_table_free(&t);
	return err;
}

static void maxhold_on_got(int rc, const char *value, int len,
			   const struct Stat *st, const void *data)
{
	struct maxhold_round *r = (struct maxhold_round *)data;
	struct zkl_link refused;
	size_t textlen = 0;
	int err;

	if (rc != ZOK && rc != ZNONODE)
		return maxhold_finish(r, zkerr_errno(rc));
	list_init(&refused);
	err = maxhold_edit_all(r, rc == ZOK ? value : NULL,
			       rc == ZOK && len > 0 ? (size_t)len : 0, &textlen,
			       &refused);
	maxhold_tell_all(&refused, -ENOSPC);
	if (err < 0)
		return maxhold_finish(r, err);
	if (textlen == 0 && rc == ZNONODE) /* no table, none wanted */
		return maxhold_finish(r, 0);
	rc = maxhold_send_write(r, rc == ZOK ? st->version : -1, textlen);
	if (rc != ZOK)
		maxhold_finish(r, zkerr_errno(rc));
}

/* Start a round with the edits asked so far, if there are any; else the
 * session has none in flight any more. */
static void maxhold_next_round(struct zkl_session *s)
{
	size_t pathlen = strlen(s->base) + sizeof(MAXHOLD_NODE) + 1;
	struct maxhold_round *r = NULL;
	int rc;

	struct zkl_link failed;

	list_init(&failed);
	pthread_mutex_lock(&s->lock);
	s->maxhold_storing = !list_empty(&s->maxhold_stores);
	if (s->maxhold_storing && !(r = calloc(1, sizeof(*r) + pathlen))) {
		list_move_all(&s->maxhold_stores, &failed);
		s->maxhold_storing = 0;
	}
	pthread_mutex_unlock(&s->lock);
	if (!r) /* none asked, or out of memory */
		return maxhold_tell_all(&failed, -ENOMEM);
	r->s = s;
	list_init(&r->edits);
	maxhold_path(s, r->path, pathlen);
	rc = maxhold_send_get(r);
	if (rc != ZOK)
		maxhold_finish(r, zkerr_errno(rc));
}

int maxhold_store(struct zkl_session *s, const char *dir, unsigned secs,
		  maxhold_stored_fn cb, void *arg)
{
	const char *res = maxhold_res_of(s, dir);
	struct maxhold_edit *e;
	int start;

	if (!res)
		return -EINVAL;
	e = malloc(sizeof(*e) + strlen(res) + 1);
	if (!e)
		return -ENOMEM;
	e->cb = cb;
	e->arg = arg;
	e->secs = secs;
	strcpy(e->res, res);
	pthread_mutex_lock(&s->lock);
	list_add_tail(&s->maxhold_stores, &e->link);
	start = !s->maxhold_storing;
	s->maxhold_storing = 1;
	pthread_mutex_unlock(&s->lock);
	if (start)
		maxhold_next_round(s);
	return 0;
}
