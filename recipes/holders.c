/*
 * holders.c - list a resource and read each of its lock nodes (see
 * holders.h).  The reads go out together, pipelined, once the listing is
 * back; all replies come on the one completion thread, so counting them
 * needs no lock.
 */
#include "holders.h"
#include "internal.h"
#include "lockrule.h"
#include "resource.h"
#include "zkerr.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct holders_query;

/* What the read of one node brought back. */
struct holders_read {
	struct holders_query *q;
	int gone; /* deleted since the listing */
	int64_t czxid;
	int64_t ctime_ms;
	char *data;
	size_t len;
};

struct holders_query {
	struct zkl_session *s;
	holders_fn cb;
	void *arg;
	int err;        /* the first failed read's */
	size_t pending; /* reads not answered, +1 while sending */
	size_t n;       /* nodes[0..n): every lock node, in queue order */
	struct zkl_node *nodes;
	struct holders_read *reads; /* parallel to nodes */
	char **names;               /* copies of the listed names */
	size_t nnames;
	unsigned limit; /* read when leases are queued: 0 if not a limit */
	char dir[];
};

static void holders_free(struct holders_query *q)
{
	for (size_t i = 0; i < q->n; i++)
		free(q->reads[i].data);
	for (size_t i = 0; i < q->nnames; i++)
		free(q->names[i]);
	free(q->names);
	free(q->reads);
	free(q->nodes);
	free(q);
}

/* Answer with the nodes still there; a node deleted since the listing is
 * left out, and no longer holds back those behind it. */
static void holders_answer(struct holders_query *q)
{
	struct holders_node *out = NULL;
	unsigned char *gone = NULL;
	size_t m = 0;

	if (q->err == 0 && q->n > 0) {
		out = calloc(q->n, sizeof(*out));
		gone = calloc(q->n, 1);
		if (!out || !gone)
			q->err = -ENOMEM;
	}
	for (size_t i = 0; q->err == 0 && i < q->n; i++)
		gone[i] = (unsigned char)q->reads[i].gone;
	for (size_t i = 0; q->err == 0 && i < q->n; i++) {
		struct holders_read *r = &q->reads[i];
		if (r->gone)
			continue;
		out[m] = (struct holders_node){
			.name = q->nodes[i].name,
			.mode = q->nodes[i].mode,
			.style = q->nodes[i].style,
			.token = r->czxid,
			.ctime_ms = r->ctime_ms,
			.data = r->data,
			.len = r->len,
		};
		if (q->nodes[i].mode == ZKL_MODE_LEASE
			    ? lockrule_count_ahead(q->nodes, gone, 0, i) <
				      q->limit
			    : lockrule_watch(q->nodes, gone, 0, i, 1) < 0)
			out[m].state = HOLDERS_HELD;
		else
			out[m].state = HOLDERS_WAITING;
		m++;
	}
	q->cb(q->err, q->err ? NULL : out, q->err ? 0 : m, q->limit, q->arg);
	free(out);
	free(gone);
	holders_free(q);
}

static void holders_read_done(struct holders_query *q)
{
	if (--q->pending == 0)
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
		if (value && len > 0 && (r->data = malloc((size_t)len))) {
			memcpy(r->data, value, (size_t)len);
			r->len = (size_t)len;
		}
	}
	holders_read_done(r->q);
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
	holders_read_done(q);
}

/* Are leases queued?  Then their state needs the limit. */
static int holders_has_leases(const struct holders_query *q)
{
	for (size_t i = 0; i < q->n; i++)
		if (q->nodes[i].mode == ZKL_MODE_LEASE)
			return 1;
	return 0;
}

/* Keep copies of the names; parse the lock nodes of every tool into queue
 * order.  Returns 0 or -ENOMEM. */
static int holders_parse(struct holders_query *q, char *const *names, size_t n)
{
	q->names = calloc(n + 1, sizeof(*q->names));
	q->nodes = calloc(n + 1, sizeof(*q->nodes));
	q->reads = calloc(n + 1, sizeof(*q->reads));
	if (!q->names || !q->nodes || !q->reads)
		return -ENOMEM;
	for (; q->nnames < n; q->nnames++)
		if (!(q->names[q->nnames] = strdup(names[q->nnames])))
			return -ENOMEM;
	q->n = lockrule_collect(q->names, n, LOCKRULE_QUEUED_STYLES, q->nodes);
	return 0;
}

static void holders_on_listed(int err, char *const *names, size_t n, void *arg)
{
	struct holders_query *q = arg;
	struct zkl_session *s = q->s;

	if (err == -ENOENT) /* nobody made the resource: nobody queued */
		err = 0;
	if (err == 0 && n > 0)
		err = holders_parse(q, names, n);
	if (err < 0) {
		q->err = err;
		q->n = 0;
		return holders_answer(q);
	}
	q->pending = q->n + 1;
	pthread_mutex_lock(&s->lock); /* s->zh changes when a session expires */
	for (size_t i = 0; i < q->n; i++) {
		char path[NAMES_MAX_NODE_PATH + 1];
		int rc = ZBADARGUMENTS;
		q->reads[i].q = q;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", q->dir,
				     q->nodes[i].name) < sizeof(path))
			rc = zoo_aget(s->zh, path, 0, holders_on_data,
				      &q->reads[i]);
		if (rc != ZOK) {
			if (q->err == 0)
				q->err = zkerr_errno(rc);
			q->pending--;
		}
	}
	if (holders_has_leases(q)) {
		q->pending++;
		if (zoo_aget(s->zh, q->dir, 0, holders_on_limit, q) != ZOK) {
			q->pending--;
			if (q->err == 0)
				q->err = -EIO;
		}
	}
	pthread_mutex_unlock(&s->lock);
	holders_read_done(q);
}

int holders_start(struct zkl_session *s, const char *dir, holders_fn cb,
		  void *arg)
{
	struct holders_query *q = calloc(1, sizeof(*q) + strlen(dir) + 1);
	int err;

	if (!q)
		return -ENOMEM;
	q->s = s;
	q->cb = cb;
	q->arg = arg;
	strcpy(q->dir, dir);
	err = resource_list(s, dir, holders_on_listed, q);
	if (err < 0)
		free(q);
	return err;
}
