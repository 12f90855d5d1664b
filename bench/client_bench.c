/*
 * client_bench.c - the baselines: the lock recipe written directly on the
 * ZooKeeper C client, in one process, with no filesystem in between.
 *
 *   zkbench-client naive     HOSTS DIR N   create; getChildren; delete,
 *                                          each awaited
 *   zkbench-client pipelined HOSTS DIR N   create and getChildren sent
 *                                          together; delete not awaited
 *   zkbench-client handoff   HOSTS DIR N   two sessions take turns: time
 *                                          from the holder's delete to the
 *                                          waiter knowing it holds
 *
 * Each prints one line of stats.h's summary.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"
#include "zkconn.h"

#define PREFIX "/lock-"

/* First in the listing, by the sequence after the last '-'. */
static int is_first(const struct String_vector *v, const char *mine)
{
	const char *myseq = strrchr(mine, '-') + 1;

	for (int i = 0; i < v->count; i++)
		if (strcmp(strrchr(v->data[i], '-') + 1, myseq) < 0)
			return 0;
	return 1;
}

static void naive(zhandle_t *zh, const char *dir, long n)
{
	char prefix[1024], node[1024];
	struct samples s;

	snprintf(prefix, sizeof(prefix), "%s%s", dir, PREFIX);
	samples_init(&s, (size_t)n);
	for (long i = 0; i < n; i++) {
		struct String_vector v;
		double t0 = now_us();
		int rc = zoo_create(zh, prefix, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
				    ZOO_EPHEMERAL_SEQUENTIAL, node,
				    sizeof(node));
		if (rc != ZOK)
			die("create: %s", zerror(rc));
		if ((rc = zoo_get_children(zh, dir, 0, &v)) != ZOK)
			die("getChildren: %s", zerror(rc));
		if (!is_first(&v, node))
			die("not first in an uncontended queue");
		deallocate_String_vector(&v);
		if ((rc = zoo_delete(zh, node, -1)) != ZOK)
			die("delete: %s", zerror(rc));
		samples_add(&s, now_us() - t0);
	}
	samples_report(&s, (size_t)n / 10);
	samples_free(&s);
}

/* ---- pipelined ---------------------------------------------------------- */

struct pipe_state {
	pthread_mutex_t lock;
	pthread_cond_t done;
	char node[1024];
	int created, listed, first;
};

static void pipe_created(int rc, const char *name, const void *data)
{
	struct pipe_state *p = (struct pipe_state *)data;

	if (rc != ZOK)
		die("create: %s", zerror(rc));
	pthread_mutex_lock(&p->lock);
	snprintf(p->node, sizeof(p->node), "%s", name);
	p->created = 1;
	pthread_mutex_unlock(&p->lock);
}

static void pipe_listed(int rc, const struct String_vector *v, const void *data)
{
	struct pipe_state *p = (struct pipe_state *)data;

	if (rc != ZOK)
		die("getChildren: %s", zerror(rc));
	pthread_mutex_lock(&p->lock);
	/* Replies come in order: the create's is in. */
	p->first = is_first(v, p->node);
	p->listed = 1;
	pthread_cond_signal(&p->done);
	pthread_mutex_unlock(&p->lock);
}

static void ignore_void(int rc, const void *data)
{
	(void)data;
	/* ZCLOSING: the last delete, cut short by zookeeper_close, which
	 * ends the session and its ephemeral node with it. */
	if (rc != ZOK && rc != ZCLOSING)
		die("delete: %s", zerror(rc));
}

static void pipelined(zhandle_t *zh, const char *dir, long n)
{
	struct pipe_state p = { .lock = PTHREAD_MUTEX_INITIALIZER,
				.done = PTHREAD_COND_INITIALIZER };
	char prefix[1024];
	struct samples s;

	snprintf(prefix, sizeof(prefix), "%s%s", dir, PREFIX);
	samples_init(&s, (size_t)n);
	for (long i = 0; i < n; i++) {
		double t0 = now_us();

		p.created = p.listed = 0;
		if (zoo_acreate(zh, prefix, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
				ZOO_EPHEMERAL_SEQUENTIAL, pipe_created,
				&p) != ZOK ||
		    zoo_aget_children(zh, dir, 0, pipe_listed, &p) != ZOK)
			die("cannot queue a request");
		pthread_mutex_lock(&p.lock);
		while (!p.listed)
			pthread_cond_wait(&p.done, &p.lock);
		pthread_mutex_unlock(&p.lock);
		if (!p.created || !p.first)
			die("not first in an uncontended queue");
		/* Released: the session orders the next create after it. */
		if (zoo_adelete(zh, p.node, -1, ignore_void, NULL) != ZOK)
			die("cannot queue a delete");
		samples_add(&s, now_us() - t0);
	}
	samples_report(&s, (size_t)n / 10);
	samples_free(&s);
}

/* ---- handoff ------------------------------------------------------------ */

/* One contender: its own session, its node, and when it learnt it holds. */
struct contender {
	zhandle_t *zh;
	const char *dir;
	char node[1024];
	pthread_mutex_t lock;
	pthread_cond_t granted_cv;
	int granted;
	double granted_at;
};

static void contender_check(struct contender *c);

static void contender_listed(int rc, const struct String_vector *v,
			     const void *data)
{
	struct contender *c = (struct contender *)data;

	if (rc != ZOK)
		die("getChildren: %s", zerror(rc));
	if (!is_first(v, c->node)) {
		contender_check(c); /* not yet: someone else still ahead */
		return;
	}
	pthread_mutex_lock(&c->lock);
	c->granted_at = now_us();
	c->granted = 1;
	pthread_cond_signal(&c->granted_cv);
	pthread_mutex_unlock(&c->lock);
}

static void contender_watcher(zhandle_t *zh, int type, int state,
			      const char *path, void *ctx)
{
	(void)zh;
	(void)state;
	(void)path;
	if (type == ZOO_DELETED_EVENT) {
		struct contender *c = ctx;
		if (zoo_aget_children(c->zh, c->dir, 0, contender_listed, c) !=
		    ZOK)
			die("cannot list");
	}
}

static void contender_check(struct contender *c)
{
	if (zoo_aget_children(c->zh, c->dir, 0, contender_listed, c) != ZOK)
		die("cannot list");
}

/* Queue c behind the current holder, with a watch on it (synchronous:
 * called from the main thread, never from a completion). */
static void contender_enqueue(struct contender *c, const char *prefix,
			      const char *holder)
{
	struct Stat st;
	int rc = zoo_create(c->zh, prefix, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
			    ZOO_EPHEMERAL_SEQUENTIAL, c->node, sizeof(c->node));

	if (rc != ZOK)
		die("create: %s", zerror(rc));
	c->granted = 0;
	rc = zoo_wexists(c->zh, holder, contender_watcher, c, &st);
	if (rc != ZOK)
		die("the holder vanished before the handoff: %s", zerror(rc));
}

static void handoff(const char *hosts, const char *dir, long n)
{
	struct contender c[2] = {
		{ .lock = PTHREAD_MUTEX_INITIALIZER,
		  .granted_cv = PTHREAD_COND_INITIALIZER,
		  .dir = dir },
		{ .lock = PTHREAD_MUTEX_INITIALIZER,
		  .granted_cv = PTHREAD_COND_INITIALIZER,
		  .dir = dir },
	};
	char prefix[1024];
	struct samples s;
	int holder = 0;

	snprintf(prefix, sizeof(prefix), "%s%s", dir, PREFIX);
	c[0].zh = zkconn_open(hosts);
	c[1].zh = zkconn_open(hosts);
	if (zoo_create(c[0].zh, prefix, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
		       ZOO_EPHEMERAL_SEQUENTIAL, c[0].node,
		       sizeof(c[0].node)) != ZOK)
		die("cannot create the first holder");
	samples_init(&s, (size_t)n);
	for (long i = 0; i < n; i++) {
		struct contender *h = &c[holder], *w = &c[1 - holder];
		double t0;

		contender_enqueue(w, prefix, h->node);
		t0 = now_us();
		if (zoo_adelete(h->zh, h->node, -1, ignore_void, NULL) != ZOK)
			die("cannot queue a delete");
		pthread_mutex_lock(&w->lock);
		while (!w->granted)
			pthread_cond_wait(&w->granted_cv, &w->lock);
		pthread_mutex_unlock(&w->lock);
		samples_add(&s, w->granted_at - t0);
		holder = 1 - holder;
	}
	samples_report(&s, (size_t)n / 10);
	samples_free(&s);
	zookeeper_close(c[0].zh);
	zookeeper_close(c[1].zh);
}

int main(int argc, char **argv)
{
	zhandle_t *zh;
	long n;

	if (argc != 5) {
		fprintf(stderr,
			"usage: %s naive|pipelined|handoff HOSTS DIR N\n",
			argv[0]);
		return 2;
	}
	n = parse_count(argv[4], "N");
	zh = zkconn_open(argv[2]);
	zkconn_ensure_path(zh, argv[3]);
	if (strcmp(argv[1], "naive") == 0)
		naive(zh, argv[3], n);
	else if (strcmp(argv[1], "pipelined") == 0)
		pipelined(zh, argv[3], n);
	else if (strcmp(argv[1], "handoff") == 0)
		handoff(argv[2], argv[3], n);
	else
		die("unknown mode '%s'", argv[1]);
	zookeeper_close(zh);
	return 0;
}
