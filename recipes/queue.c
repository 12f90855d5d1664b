/*
 * queue.c - a session's shared view of one resource's lock queue (see
 * queue.h for why it exists).
 */
#include "queue.h"
#include "internal.h"
#include "resource.h"
#include "lockrule.h"
#include "zkerr.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "log.h"

static struct zkl_queue *queue_of(struct strtab_item *item)
{
	return item ? ZKL_CONTAINER_OF(item, struct zkl_queue, item) : NULL;
}

struct zkl_queue *queue_get_locked(struct zkl_session *s, const char *dir)
{
	struct zkl_queue *q = queue_of(strtab_find(&s->queues, dir));
	size_t len;

	ZKL_ASSERT_HELD(&s->lock);
	if (q) {
		q->refs++;
		return q;
	}
	len = strlen(dir) + 1;
	q = calloc(1, sizeof(*q) + len);
	if (!q)
		return NULL;
	memcpy(q->dir, dir, len);
	q->item.key = q->dir;
	q->s = s;
	q->refs = 1;
	q->limit = 1;
	q->limit_err = -ENODATA; /* read with the first lease's listing */
	list_init(&q->waiting);
	list_init(&q->leaving);
	strtab_insert(&s->queues, &q->item);
	return q;
}

/* nodes, gone, granted and the names they point to share one
 * allocation. */
static void queue_clear_view(struct zkl_queue *q)
{
	free(q->nodes);
	q->nodes = NULL;
	q->gone = q->granted = NULL;
	q->n = q->lo = 0;
}

void queue_put_locked(struct zkl_queue *q, struct zkl_queue_leaving *l)
{
	if (l)
		queue_leaving_done(l);
	if (--q->refs > 0)
		return;
	assert(list_empty(&q->leaving));
	queue_clear_view(q);
	strtab_remove(&q->s->queues, &q->item);
	free(q);
}

/* Keep the children that are lock nodes, in queue order.  Returns 0, or
 * -ENOMEM (the previous view stays: older, but still true of every node
 * ahead of the waiters that use it). */
static int queue_replace_view(struct zkl_queue *q,
			      const struct String_vector *v, int32_t cversion)
{
	size_t count = v->count > 0 ? (size_t)v->count : 0;
	size_t bytes = 0;
	struct zkl_node *nodes;
	char *names, **copies = malloc((count ? count : 1) * sizeof(*copies));
	ssize_t n;

	for (size_t i = 0; i < count; i++)
		bytes += strlen(v->data[i]) + 1;
	nodes = malloc(count * (sizeof(*nodes) + 2) + bytes + 1);
	if (!nodes || !copies) {
		free(nodes);
		free(copies);
		return -ENOMEM;
	}
	names = (char *)(nodes + count) + 2 * count;
	for (size_t i = 0; i < count; i++) {
		size_t len = strlen(v->data[i]) + 1;
		copies[i] = memcpy(names, v->data[i], len);
		names += len;
	}
	/* The view before knows most of the names: the cost of a listing
	 * of a long queue is then little more than ZooKeeper's. */
	n = lockrule_collect_again(copies, count, LOCKRULE_QUEUED_STYLES,
				   cversion, q->nodes, q->n, nodes);
	if (n < 0)
		n = (ssize_t)lockrule_collect(
			copies, count, LOCKRULE_QUEUED_STYLES, cversion, nodes);
	free(copies);
	queue_clear_view(q);
	q->nodes = nodes;
	q->cversion = cversion;
	q->gone = (unsigned char *)(nodes + count);
	q->granted = q->gone + count;
	memset(q->gone, 0, 2 * count);
	q->n = (size_t)n;
	for (struct zkl_link *l = q->leaving.next; l != &q->leaving;
	     l = l->next)
		queue_mark_gone(q, ZKL_CONTAINER_OF(l, struct zkl_queue_leaving,
						    link)
					   ->name);
	return 0;
}

ssize_t queue_find(const struct zkl_queue *q, const char *name)
{
	return lockrule_find(q->nodes, q->n, q->cversion, name);
}

void queue_mark_gone(struct zkl_queue *q, const char *name)
{
	ssize_t i = queue_find(q, name);

	if (i < 0)
		return;
	q->gone[i] = 1;
	while (q->lo < q->n && q->gone[q->lo])
		q->lo++;
}

void queue_mark_granted(struct zkl_queue *q, const char *name)
{
	ssize_t i = queue_find(q, name);

	if (i >= 0)
		q->granted[i] = 1;
}

void queue_leaving_add(struct zkl_queue *q, struct zkl_queue_leaving *l)
{
	if (!list_linked(&l->link))
		list_add_tail(&q->leaving, &l->link);
	queue_mark_gone(q, l->name);
}

void queue_leaving_done(struct zkl_queue_leaving *l)
{
	if (list_linked(&l->link))
		list_del(&l->link);
}

ssize_t queue_pick_watch(const struct zkl_queue *q, size_t self)
{
	return lockrule_watch(q->nodes, q->gone, q->lo, self, 1);
}

static void queue_on_listed(int rc, const struct String_vector *children,
			    const struct Stat *stat, const void *data);

/*
 * A listing and the reads sent with it carry a record of the queue and of
 * the listing's generation: their reply is the listing in flight's only
 * if that generation is the last sent and still due.  "In flight" alone
 * cannot tell: after an expiry the next session's listing is in flight
 * while the old handle may still answer the one before.
 */
struct queue_call {
	struct zkl_queue *q; /* with a reference */
	uint64_t gen;
};

static struct queue_call *queue_call_new(struct zkl_queue *q, uint64_t gen)
{
	struct queue_call *c = malloc(sizeof(*c));

	if (c) {
		c->q = q;
		c->gen = gen;
		q->refs++;
	}
	return c;
}

/* Its reply came: the queue, and whether the reply is the present
 * listing's (*current).  The record goes; its reference stays with the
 * caller, for queue_put_locked.  Session lock held. */
static struct zkl_queue *queue_call_end(const void *data, int *current)
{
	struct queue_call *c = (struct queue_call *)data;
	struct zkl_queue *q = c->q;

	ZKL_ASSERT_HELD(&q->s->lock);
	*current = q->in_flight && c->gen == q->sent;
	free(c);
	return q;
}

/* Send one call of the next listing (generation q->sent + 1) with its
 * record.  Returns ZooKeeper's code (ZSYSTEMERROR: out of memory). */
static int queue_call_send(struct zkl_queue *q,
			   int (*send)(struct zkl_queue *q,
				       struct queue_call *c))
{
	struct queue_call *c = queue_call_new(q, q->sent + 1);
	int rc = c ? send(q, c) : ZSYSTEMERROR;

	if (c && rc != ZOK) {
		q->refs--; /* never the last: the caller's */
		free(c);
	}
	return rc;
}

/* The limit read just before a listing: its reply comes first. */
static void queue_on_limit(int rc, const char *value, int len,
			   const struct Stat *stat, const void *data)
{
	struct zkl_session *s = ((const struct queue_call *)data)->q->s;
	struct zkl_link notify;
	struct zkl_queue *q;
	unsigned n;
	int current, err = resource_limit_of_reply(rc, value, len, &n);

	(void)stat;
	session_enter(s, &notify);
	q = queue_call_end(data, &current);
	if (!current) {
		/* a reply of an expired session's handle */
	} else if (err == 0 || err == -EBADMSG || rc == ZNONODE) {
		q->limit_err = err;
		if (err == 0)
			q->limit = n;
	} else {
		q->limit_rc = rc; /* this listing's, not a fact of the view */
	}
	queue_put_locked(q, NULL);
	session_leave(s, &notify);
}

/* With credentials, the resource's ACL read just before its first
 * listing: a znode someone else made with an open ACL lets any client
 * delete the lock nodes in it. */
static void queue_on_acl(int rc, struct ACL_vector *acl, struct Stat *stat,
			 const void *data)
{
	struct zkl_session *s = ((const struct queue_call *)data)->q->s;
	char foreign[256], fix[NAMES_MAX_NODE_PATH + 128];
	struct zkl_link notify;
	struct zkl_queue *q;
	int current;

	(void)stat;
	session_enter(s, &notify);
	q = queue_call_end(data, &current);
	if (current && rc == ZOK && !q->acl_checked) {
		q->acl_checked = 1;
		q->acl_open = session_acl_foreign(s, acl, foreign,
						  sizeof(foreign)) != 0;
		if (q->acl_open) {
			session_acl_fix(s, q->dir, fix, sizeof(fix));
			log_msg(LOG_ERR,
				"%s is not the credentials' alone: its ACL "
				"also grants %s, so other clients could delete "
				"lock nodes there; locks on it are refused "
				"(EACCES) until it is fixed: %s",
				q->dir, foreign, fix);
		}
	}
	queue_put_locked(q, NULL);
	session_leave(s, &notify);
}

/* Does a request in line want the limit read? */
static int queue_wants_limit(const struct zkl_queue *q)
{
	for (const struct zkl_link *l = q->waiting.next; l != &q->waiting;
	     l = l->next)
		if (ZKL_CONTAINER_OF(l, struct zkl_queue_wait, link)
			    ->wants_limit)
			return 1;
	return 0;
}

/* Send the next listing; every request in line now is served by it.
 * Returns ZooKeeper's code. */
static int queue_send_acl(struct zkl_queue *q, struct queue_call *c)
{
	return zoo_aget_acl(q->s->zh, q->dir, queue_on_acl, c);
}

static int queue_send_limit(struct zkl_queue *q, struct queue_call *c)
{
	return session_awget_locked(q->s, q->dir, queue_on_limit, c);
}

static int queue_send_listing(struct zkl_queue *q, struct queue_call *c)
{
	return zoo_aget_children2(q->s->zh, q->dir, 0, queue_on_listed, c);
}

static int queue_send_locked(struct zkl_queue *q)
{
	int rc = ZOK;

	if (q->s->owned && !q->acl_checked)
		rc = queue_call_send(q, queue_send_acl);
	if (rc == ZOK && queue_wants_limit(q))
		rc = queue_call_send(q, queue_send_limit);
	if (rc == ZOK)
		rc = queue_call_send(q, queue_send_listing);
	if (rc != ZOK)
		return rc;
	q->sent++;
	q->in_flight = 1;
	for (struct zkl_link *l = q->waiting.next; l != &q->waiting;
	     l = l->next)
		ZKL_CONTAINER_OF(l, struct zkl_queue_wait, link)->gen = q->sent;
	return ZOK;
}

int queue_want_listing_locked(struct zkl_queue *q, struct zkl_queue_wait *w)
{
	int rc;

	queue_leave_line_locked(w);
	list_add_tail(&q->waiting, &w->link);
	w->gen = q->sent + 1;
	if (q->in_flight)
		return 0; /* served by the one sent when this one is back */
	rc = queue_send_locked(q);
	if (rc != ZOK)
		list_del(&w->link);
	return zkerr_errno(rc);
}

int queue_leave_line_locked(struct zkl_queue_wait *w)
{
	if (!list_linked(&w->link))
		return 0;
	list_del(&w->link);
	return 1;
}

/* Tell every request in line up to generation gen about listing rc. */
static void queue_serve_locked(struct zkl_queue *q, uint64_t gen, int rc,
			       struct zkl_link *notify)
{
	struct zkl_link served;

	list_init(&served);
	while (!list_empty(&q->waiting)) {
		struct zkl_link *l = q->waiting.next;
		if (ZKL_CONTAINER_OF(l, struct zkl_queue_wait, link)->gen > gen)
			break;
		list_del(l);
		list_add_tail(&served, l);
	}
	/* Each may line up again (at the back) while we go. */
	while (!list_empty(&served)) {
		struct zkl_link *l = served.next;
		list_del(l);
		struct zkl_queue_wait *w =
			ZKL_CONTAINER_OF(l, struct zkl_queue_wait, link);
		w->listed_locked(w, rc, notify);
	}
}

static void queue_on_listed(int rc, const struct String_vector *children,
			    const struct Stat *stat, const void *data)
{
	struct zkl_session *s = ((const struct queue_call *)data)->q->s;
	struct zkl_link notify;
	struct zkl_queue *q;
	int current;

	session_enter(s, &notify);
	q = queue_call_end(data, &current);
	if (current) { /* else a reply of an expired session's handle */
		q->in_flight = 0;
		if (rc == ZOK && q->limit_rc != ZOK)
			rc = q->limit_rc; /* the limit read with it failed */
		q->limit_rc = ZOK;
		if (rc == ZOK &&
		    queue_replace_view(q, children, stat->cversion) < 0)
			rc = ZSYSTEMERROR;
		else if (rc == ZNONODE)
			queue_clear_view(q);
		queue_serve_locked(q, q->sent, rc, &notify);
		/* Those who lined up while this one was out. */
		if (!q->in_flight && !list_empty(&q->waiting)) {
			int zrc = queue_send_locked(q);
			if (zrc != ZOK)
				queue_serve_locked(q, q->sent + 1, zrc,
						   &notify);
		}
	}
	queue_put_locked(q, NULL);
	session_leave(s, &notify);
}

static void queue_forget_listing(struct strtab_item *item, void *arg)
{
	struct zkl_queue *q = queue_of(item);

	(void)arg;
	q->in_flight = 0;
	q->limit_rc = ZOK;
	queue_clear_view(q);
}

void queue_session_expired_locked(struct zkl_session *s)
{
	ZKL_ASSERT_HELD(&s->lock);
	strtab_each(&s->queues, queue_forget_listing, NULL);
}
