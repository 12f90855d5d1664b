/*
 * lockquery.c - list the queue, pick the first blocker, read its data
 * (see lockquery.h).
 */
#include "lockquery.h"
#include "internal.h"
#include "lockrule.h"
#include "resource.h"
#include "zkerr.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The blocker may go between the listing and the read of its data: list
 * again this many times before answering without its data. */
#define LOCKQUERY_ATTEMPTS 3

struct lockquery {
	struct zkl_session *s;
	enum zkl_mode mode;
	size_t nskip;
	char skip[LOCKQUERY_MAX_SKIP][NAMES_GUID_LEN + 1];
	int attempts;
	unsigned limit; /* a lease's: read just before each listing */
	int limit_err;
	/* Under s->lock: the limit's get is out, and the listing sent after
	 * it could not be (its error): the get's reply finishes the query. */
	int limit_pending;
	int list_failed;
	struct lockquery_answer answer;
	char *node_path; /* of the blocker, while its data is read */
	lockquery_fn cb;
	void *arg;
	char *list_dir; /* where the nodes are: dir, or a peer's leases */
	char dir[];
};

static void lq_finish(struct lockquery *q, int err)
{
	q->cb(err, err < 0 ? NULL : &q->answer, q->arg);
	free(q->node_path);
	free(q);
}

static void lq_on_listed(int err, char *const *names, size_t n,
			 int32_t cversion, void *arg);
static void lq_read_blocker(struct lockquery *q, enum zkl_mode mode,
			    const char *name);

/* A lease's limit; its reply comes before the listing sent after it. */
static void lq_on_limit(int rc, const char *value, int len,
			const struct Stat *st, const void *data)
{
	struct zkl_link notify;
	struct lockquery *q = (struct lockquery *)data;
	struct zkl_session *s = q->s;
	int err = resource_limit_of_reply(rc, value, len, &q->limit);

	(void)st;
	/* No resource: nothing queued, and its limit would be 1. */
	q->limit_err = err == -ENOENT ? 0 : err == -EBADMSG ? -EIO : err;
	session_enter(s, &notify);
	q->limit_pending = 0;
	err = q->list_failed;
	session_leave(s, &notify);
	if (err < 0)
		lq_finish(q, err);
}

/* The completion may run, and free q, before resource_list returns: after
 * the call, only locals.  Returns 0 or -errno (then q is still ours). */
static int lq_send_list(struct lockquery *q)
{
	struct zkl_link notify;
	struct zkl_session *s = q->s;
	int rc = ZOK, err, pending;

	q->attempts++;
	session_enter(s, &notify);
	if (q->mode == ZKL_MODE_LEASE)
		rc = zoo_aget(s->zh, q->dir, 0, lq_on_limit, q);
	q->limit_pending = q->mode == ZKL_MODE_LEASE && rc == ZOK;
	session_leave(s, &notify);
	if (rc != ZOK)
		return zkerr_errno(rc);
	err = resource_list(s, q->list_dir, lq_on_listed, q);
	if (err == 0)
		return 0;
	/* The limit's reply, on its way, still needs q: it finishes the
	 * query unless it came back already. */
	session_enter(s, &notify);
	pending = q->limit_pending;
	if (pending)
		q->list_failed = err;
	session_leave(s, &notify);
	return pending ? 0 : err;
}

static void lq_list(struct lockquery *q)
{
	int err = lq_send_list(q);

	if (err < 0)
		lq_finish(q, err);
}

static void lq_on_data(int rc, const char *value, int len,
		       const struct Stat *st, const void *data)
{
	struct lockquery *q = (struct lockquery *)data;

	(void)st;
	if (rc == ZNONODE && q->attempts < LOCKQUERY_ATTEMPTS)
		return lq_list(q);
	if (rc != ZOK && rc != ZNONODE)
		return lq_finish(q, zkerr_errno(rc));
	if (rc == ZOK && value && len > 0) {
		q->answer.data = value;
		q->answer.datalen = (size_t)len;
	}
	lq_finish(q, 0);
}

static int lq_skipped(const struct lockquery *q, const char *name)
{
	for (size_t k = 0; k < q->nskip; k++)
		if (strstr(name, q->skip[k]))
			return 1;
	return 0;
}

/* In a peer's layout (peerlease.c) every lease counts, whoever made it and
 * whatever its name: the first of them, if there are N besides ours. */
static ssize_t lq_peer_blocker(const struct lockquery *q, char *const *names,
			       size_t count)
{
	ssize_t first = -1;
	size_t others = 0;

	for (size_t k = 0; k < count; k++) {
		if (lq_skipped(q, names[k]))
			continue;
		if (first < 0)
			first = (ssize_t)k;
		others++;
	}
	return others >= q->limit ? first : -1;
}

static void lq_on_listed(int err, char *const *names, size_t count,
			 int32_t cversion, void *arg)
{
	struct lockquery *q = arg;
	const char *skip[LOCKQUERY_MAX_SKIP];
	struct zkl_node *nodes;
	size_t n;
	ssize_t i;

	/* A fresh listing, a fresh answer: what an earlier listing found in
	 * the way may be gone now. */
	memset(&q->answer, 0, sizeof(q->answer));
	if (err == -ENOENT) /* no resource, so no lock on it */
		return lq_finish(q, 0);
	if (err == 0 && q->limit_err < 0)
		err = q->limit_err;
	if (err < 0)
		return lq_finish(q, err);
	if (q->list_dir != q->dir) {
		i = lq_peer_blocker(q, names, count);
		if (i < 0)
			return lq_finish(q, 0);
		return lq_read_blocker(q, ZKL_MODE_LEASE, names[i]);
	}
	nodes = malloc((count + 1) * sizeof(*nodes));
	if (!nodes)
		return lq_finish(q, -ENOMEM);
	for (size_t k = 0; k < q->nskip; k++)
		skip[k] = q->skip[k];
	n = lockrule_collect(names, count, LOCKRULE_QUEUED_STYLES, cversion,
			     nodes);
	i = lockrule_first_blocker(nodes, n, q->mode, q->limit, skip, q->nskip);
	if (i < 0) {
		free(nodes);
		return lq_finish(q, 0);
	}
	lq_read_blocker(q, nodes[i].mode, nodes[i].name);
	free(nodes);
}

/* Answer with the blocker `name` of list_dir, once its data is read. */
static void lq_read_blocker(struct lockquery *q, enum zkl_mode mode,
			    const char *name)
{
	struct zkl_link notify;
	size_t dirlen = strlen(q->list_dir);
	struct zkl_session *s;
	int rc;

	free(q->node_path);
	q->node_path = malloc(dirlen + 1 + strlen(name) + 1);
	if (!q->node_path)
		return lq_finish(q, -ENOMEM);
	sprintf(q->node_path, "%s/%s", q->list_dir, name);
	q->answer.blocked = 1;
	q->answer.mode = mode;
	q->answer.node = q->node_path + dirlen + 1;
	s = q->s;
	session_enter(s, &notify);
	rc = zoo_aget(s->zh, q->node_path, 0, lq_on_data, q);
	session_leave(s, &notify);
	if (rc != ZOK)
		lq_finish(q, zkerr_errno(rc));
}

int lockquery_start(struct zkl_session *s, const char *dir, enum zkl_mode mode,
		    const char *const *skip, size_t nskip, lockquery_fn cb,
		    void *arg)
{
	char leases[NAMES_MAX_NODE_PATH + 1];
	int peer = mode == ZKL_MODE_LEASE && s->dialect != ZKL_STYLE_ZKLOCKFS;
	size_t len = strlen(dir) + 1;
	struct lockquery *q;
	int err;

	if (nskip > LOCKQUERY_MAX_SKIP)
		return -EINVAL;
	if (peer && (err = names_peer_dir(s->dialect, NAMES_PEER_LEASES, dir,
					  leases)) < 0)
		return err;
	q = calloc(1, sizeof(*q) + len + (peer ? strlen(leases) + 1 : 0));
	if (!q)
		return -ENOMEM;
	q->s = s;
	q->mode = mode;
	q->limit = 1;
	q->nskip = nskip;
	for (size_t k = 0; k < nskip; k++)
		snprintf(q->skip[k], sizeof(q->skip[k]), "%s", skip[k]);
	q->cb = cb;
	q->arg = arg;
	strcpy(q->dir, dir);
	q->list_dir = q->dir;
	if (peer)
		q->list_dir = strcpy(q->dir + len, leases);
	err = lq_send_list(q);
	if (err < 0)
		free(q);
	return err;
}
