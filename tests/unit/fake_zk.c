/*
 * fake_zk.c - see fake_zk.h.
 */
#include "fake_zk.h"
#include "names.h"
#include "queue.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_MAX 64

static struct fake_call calls[FAKE_MAX];
static int head, tail;
static char last_create_name[512];
static watcher_fn watch_fn;
static void *watch_ctx;
int fake_zoo_state = 3; /* ZOO_CONNECTED_STATE */
int fake_awget_fails_with = ZOK;

/* Keep what a create or set stores (cut to the record's room). */
void fake_call_value_of(struct fake_call *c, const char *value, int len)
{
	c->valuelen = value && len > 0 ? len : 0;
	if ((size_t)c->valuelen > sizeof(c->value))
		c->valuelen = (int)sizeof(c->value);
	if (c->valuelen)
		memcpy(c->value, value, (size_t)c->valuelen);
}

static long call_countdown;
static int call_failed;
int fake_refused_rc = ZMARSHALLINGERROR;

void fake_fail_call_at(long n)
{
	call_countdown = n;
	call_failed = 0;
}

int fake_call_failed(void)
{
	return call_failed;
}

/* Queue a call; NULL if it is the one armed to be refused (the zoo_a*
 * function then returns ZMARSHALLINGERROR, as the client does out of
 * memory). */
static struct fake_call *fake_push(enum fake_op op, const char *path,
				   const void *completion, const void *data)
{
	struct fake_call *c;

	if (call_countdown > 0 && --call_countdown == 0) {
		call_failed = 1;
		return NULL;
	}
	cr_assert_lt(tail, FAKE_MAX, "too many queued calls");
	c = &calls[tail++];
	memset(c, 0, sizeof(*c));
	c->op = op;
	snprintf(c->path, sizeof(c->path), "%s", path);
	c->completion = completion;
	c->data = data;
	return c;
}

int zoo_acreate2(zhandle_t *zh, const char *path, const char *value,
		 int valuelen, const struct ACL_vector *acl, int mode,
		 string_stat_completion_t completion, const void *data)
{
	struct fake_call *c =
		fake_push(FAKE_CREATE, path, (const void *)completion, data);

	(void)zh;
	(void)acl;
	if (!c)
		return fake_refused_rc;
	fake_call_value_of(c, value, valuelen);
	c->mode = mode;
	return ZOK;
}

int zoo_acreate(zhandle_t *zh, const char *path, const char *value,
		int valuelen, const struct ACL_vector *acl, int mode,
		string_completion_t completion, const void *data)
{
	struct fake_call *c = fake_push(FAKE_CREATE_PARENT, path,
					(const void *)completion, data);

	(void)zh;
	(void)acl;
	if (!c)
		return fake_refused_rc;
	fake_call_value_of(c, value, valuelen);
	c->mode = mode;
	return ZOK;
}

int zoo_amulti(zhandle_t *zh, int count, const zoo_op_t *ops,
	       zoo_op_result_t *results, void_completion_t completion,
	       const void *data)
{
	const char *path =
		count < 1                       ? ""
		: ops[0].type == ZOO_CREATE_OP  ? ops[0].create_op.path
		: ops[0].type == ZOO_SETDATA_OP ? ops[0].set_op.path
						: ops[0].delete_op.path;
	struct fake_call *c =
		fake_push(FAKE_MULTI, path, (const void *)completion, data);

	(void)zh;
	if (!c)
		return fake_refused_rc;
	c->ops = ops;
	c->results = results;
	c->count = count;
	return ZOK;
}

/* A call that sets a watch: the watcher is what fake_fire_watch runs. */
static int fake_push_watched(enum fake_op op, const char *path,
			     const void *completion, const void *data,
			     watcher_fn watcher, void *watcher_ctx)
{
	struct fake_call *c = fake_push(op, path, completion, data);

	if (!c)
		return fake_refused_rc;
	c->watcher = watcher;
	c->watcher_ctx = watcher_ctx;
	watch_fn = watcher;
	watch_ctx = watcher_ctx;
	return ZOK;
}

int zoo_aget_children(zhandle_t *zh, const char *path, int watch,
		      strings_completion_t completion, const void *data)
{
	(void)zh;
	cr_assert_eq(watch, 0, "getChildren must never set a watch");
	return fake_push(FAKE_CHILDREN, path, (const void *)completion, data)
		       ? ZOK
		       : fake_refused_rc;
}

int zoo_aget_children2(zhandle_t *zh, const char *path, int watch,
		       strings_stat_completion_t completion, const void *data)
{
	struct fake_call *c =
		fake_push(FAKE_CHILDREN, path, (const void *)completion, data);

	(void)zh;
	cr_assert_eq(watch, 0, "getChildren must never set a watch");
	if (!c)
		return fake_refused_rc;
	c->with_stat = 1;
	return ZOK;
}

int zoo_awget_children(zhandle_t *zh, const char *path, watcher_fn watcher,
		       void *watcherCtx, strings_completion_t completion,
		       const void *data)
{
	(void)zh;
	return fake_push_watched(FAKE_WCHILDREN, path, (const void *)completion,
				 data, watcher, watcherCtx);
}

int zoo_aexists(zhandle_t *zh, const char *path, int watch,
		stat_completion_t completion, const void *data)
{
	(void)zh;
	(void)watch;
	return fake_push(FAKE_EXISTS, path, (const void *)completion, data)
		       ? ZOK
		       : fake_refused_rc;
}

int zoo_awget(zhandle_t *zh, const char *path, watcher_fn watcher,
	      void *watcherCtx, data_completion_t completion, const void *data)
{
	int rc = fake_awget_fails_with;

	(void)zh;
	if (rc != ZOK) {
		fake_awget_fails_with = ZOK;
		return rc;
	}
	return fake_push_watched(FAKE_GET, path, (const void *)completion, data,
				 watcher, watcherCtx);
}

int zoo_aget(zhandle_t *zh, const char *path, int watch,
	     data_completion_t completion, const void *data)
{
	(void)zh;
	cr_assert_eq(watch, 0, "a plain read must not set a watch");
	return fake_push(FAKE_READ, path, (const void *)completion, data)
		       ? ZOK
		       : fake_refused_rc;
}

int zoo_adelete(zhandle_t *zh, const char *path, int version,
		void_completion_t completion, const void *data)
{
	(void)zh;
	(void)version;
	return fake_push(FAKE_DELETE, path, (const void *)completion, data)
		       ? ZOK
		       : fake_refused_rc;
}

int zoo_aset(zhandle_t *zh, const char *path, const char *buffer, int buflen,
	     int version, stat_completion_t completion, const void *data)
{
	struct fake_call *c =
		fake_push(FAKE_SET, path, (const void *)completion, data);

	(void)zh;
	if (!c)
		return fake_refused_rc;
	fake_call_value_of(c, buffer, buflen);
	c->version = version;
	return ZOK;
}

int zoo_recv_timeout(zhandle_t *zh)
{
	(void)zh;
	return 4000; /* the session timeout the server granted, ms */
}

int zoo_state(zhandle_t *zh)
{
	(void)zh;
	return fake_zoo_state;
}

int fake_done_calls, fake_done_err;

void fake_on_done(struct zkl_lockreq *lr, int err, void *arg)
{
	(void)lr;
	(void)arg;
	fake_done_calls++;
	fake_done_err = err;
}

/* The session of the test, whose timed resumes fake_complete_own_watch
 * runs. */
static struct zkl_session *fake_current;

struct zkl_session *fake_session(void)
{
	struct zkl_session *s = calloc(1, sizeof(*s));

	head = tail = 0;
	fake_done_calls = 0;
	fake_done_err = 12345;
	fake_zoo_state = ZOO_CONNECTED_STATE;
	fake_awget_fails_with = ZOK;
	call_countdown = 0;
	fake_refused_rc = ZMARSHALLINGERROR;
	s->zh = (zhandle_t *)(uintptr_t)0x1;
	s->base = strdup("/b");
	s->client_id = 77;
	s->state = ZKL_CONN_CONNECTED;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->state_changed, NULL);
	list_init(&s->resume);
	list_init(&s->later);
	list_init(&s->live);
	watchtab_init(&s->watches);
	strtab_init(&s->queues);
	fake_current = s;
	return s;
}

void fake_session_free(struct zkl_session *s)
{
	/* Called from a suite's .fini, where Criterion reports a failed
	 * assertion but still passes the test: a leak must crash it. */
	if (!list_empty(&s->live) || s->queues.nitems != 0) {
		fprintf(stderr, "%s\n",
			!list_empty(&s->live)
				? "a lock request was not freed"
				: "a queue outlived its requests");
		abort();
	}
	watchtab_destroy(&s->watches);
	strtab_destroy(&s->queues);
	free(s->base);
	free(s);
	fake_current = NULL;
}

int fake_pending(void)
{
	return tail - head;
}

enum fake_op fake_peek_op(void)
{
	cr_assert_gt(tail, head, "expected a queued call, found none");
	return calls[head].op;
}

struct fake_call *fake_peek(enum fake_op op)
{
	cr_assert_gt(tail, head, "expected a queued call, found none");
	cr_assert_eq(calls[head].op, op, "next call is op %d, expected %d",
		     calls[head].op, op);
	return &calls[head];
}

struct fake_call fake_take(void)
{
	struct fake_call c;

	cr_assert_gt(tail, head, "expected a queued call, found none");
	c = calls[head++];
	if (head == tail)
		head = tail = 0; /* a long scenario reuses the slots */
	return c;
}

static struct fake_call *fake_pop(enum fake_op op)
{
	struct fake_call *c = fake_peek(op);

	head++;
	return c;
}

void fake_complete_create(int rc, const char *seq_suffix, int64_t czxid)
{
	struct fake_call *c = fake_pop(FAKE_CREATE);
	struct Stat st = { .czxid = czxid, .ephemeralOwner = 77 };

	snprintf(last_create_name, sizeof(last_create_name), "%s%s", c->path,
		 seq_suffix);
	((string_stat_completion_t)c->completion)(
		rc, rc == ZOK ? last_create_name : NULL, rc == ZOK ? &st : NULL,
		c->data);
}

int64_t fake_multi_zxid = 900;

void fake_complete_multi(int rc, const char *const *suffixes)
{
	struct fake_call *c = fake_pop(FAKE_MULTI);

	for (int i = 0; i < c->count; i++) {
		const zoo_op_t *op = &c->ops[i];
		c->results[i].err = rc;
		if (rc == ZOK && op->type == ZOO_CREATE_OP)
			snprintf(op->create_op.buf,
				 (size_t)op->create_op.buflen, "%s%s",
				 op->create_op.path,
				 suffixes ? suffixes[i] : "");
		if (rc == ZOK && op->type == ZOO_SETDATA_OP && op->set_op.stat)
			op->set_op.stat->mzxid = fake_multi_zxid;
	}
	((void_completion_t)c->completion)(rc, c->data);
}

int fake_has_next_cversion;
int32_t fake_next_cversion;

/* The parent's cversion just after the newest of names was created. */
static int32_t fake_cversion_of(const char *const *names, int n)
{
	int have = 0;
	int32_t newest = 0;

	for (int i = 0; i < n; i++) {
		struct zkl_node node;
		if (names_parse(names[i], &node) < 0)
			continue;
		if (!have ||
		    (int32_t)((uint32_t)newest - (uint32_t)node.seq) < 0)
			newest = node.seq;
		have = 1;
	}
	return (int32_t)((uint32_t)newest + 1u);
}

void fake_complete_children(int rc, const char *const *names, int n)
{
	struct fake_call *c = fake_pop(FAKE_CHILDREN);
	struct String_vector v = { .count = n, .data = (char **)names };
	struct Stat st = { .cversion = fake_has_next_cversion
					       ? fake_next_cversion
					       : fake_cversion_of(names, n) };

	fake_has_next_cversion = 0;
	if (c->with_stat)
		((strings_stat_completion_t)c->completion)(
			rc, rc == ZOK ? &v : NULL, rc == ZOK ? &st : NULL,
			c->data);
	else
		((strings_completion_t)c->completion)(rc, rc == ZOK ? &v : NULL,
						      c->data);
}

void fake_complete_wchildren(int rc, const char *const *names, int n)
{
	struct fake_call *c = fake_pop(FAKE_WCHILDREN);
	struct String_vector v = { .count = n, .data = (char **)names };

	((strings_completion_t)c->completion)(rc, rc == ZOK ? &v : NULL,
					      c->data);
}

void fake_complete_exists(int rc, int64_t owner, int64_t czxid)
{
	struct fake_call *c = fake_pop(FAKE_EXISTS);
	struct Stat st = { .czxid = czxid, .ephemeralOwner = owner };

	((stat_completion_t)c->completion)(rc, rc == ZOK ? &st : NULL, c->data);
}

void fake_complete_get(int rc)
{
	struct fake_call *c = fake_pop(FAKE_GET);
	struct Stat st = { 0 };

	((data_completion_t)c->completion)(rc, "", 0, rc == ZOK ? &st : NULL,
					   c->data);
}

void fake_complete_own_watch(const char *name)
{
	struct fake_call *c;

	/* A holder that did not wait watches its node LR_OWN_WATCH_AFTER_MS
	 * after its grant: that time passes first. */
	if (tail == head || calls[head].op != FAKE_GET)
		fake_run_due(fake_current);
	c = fake_peek(FAKE_GET);

	cr_assert(strstr(c->path, name),
		  "a holder watches its own node %s, not %s", name, c->path);
	fake_complete_get(ZOK);
}

void fake_complete_get_data(int rc, const char *value, int32_t version)
{
	struct fake_call *c = fake_pop(FAKE_GET);
	struct Stat st = { .version = version };

	((data_completion_t)c->completion)(rc, value,
					   value ? (int)strlen(value) : -1,
					   rc == ZOK ? &st : NULL, c->data);
}

void fake_complete_read(int rc, const char *value, int64_t czxid,
			int64_t ctime_ms)
{
	struct fake_call *c = fake_pop(FAKE_READ);
	struct Stat st = { .czxid = czxid, .ctime = ctime_ms };

	((data_completion_t)c->completion)(rc, value,
					   value ? (int)strlen(value) : -1,
					   rc == ZOK ? &st : NULL, c->data);
}

void fake_complete_void(enum fake_op op, int rc)
{
	struct fake_call *c = fake_pop(op);

	if (op == FAKE_CREATE_PARENT)
		((string_completion_t)c->completion)(rc, NULL, c->data);
	else if (c->completion)
		((void_completion_t)c->completion)(rc, c->data);
}

void fake_complete_set(int rc)
{
	struct fake_call *c = fake_pop(FAKE_SET);
	struct Stat st = { .version = c->version + 1 };

	((stat_completion_t)c->completion)(rc, rc == ZOK ? &st : NULL, c->data);
}

void fake_fire_watch_event(int type, const char *path)
{
	cr_assert(watch_fn, "no watch was ever registered");
	watch_fn(NULL, type, ZOO_CONNECTED_STATE, path, watch_ctx);
}

void fake_fire_watch(const char *path)
{
	fake_fire_watch_event(ZOO_DELETED_EVENT, path);
}

void fake_resume_all(struct zkl_session *s)
{
	struct zkl_link notify;

	list_init(&notify);
	pthread_mutex_lock(&s->lock);
	while (!list_empty(&s->resume)) {
		struct zkl_link *l = s->resume.next;
		list_del(l);
		struct zkl_member *m =
			ZKL_CONTAINER_OF(l, struct zkl_member, resume);
		m->ops->resume_locked(m, &notify);
	}
	pthread_mutex_unlock(&s->lock);
	notice_run_all(&notify);
}

int fake_run_due(struct zkl_session *s)
{
	struct zkl_link notify;
	int n = 0;

	list_init(&notify);
	pthread_mutex_lock(&s->lock);
	while (!list_empty(&s->later)) {
		struct zkl_member *m = ZKL_CONTAINER_OF(
			s->later.next, struct zkl_member, resume);
		list_del(&m->resume);
		session_resume_when_connected_locked(s, m, &notify);
		n++;
	}
	pthread_mutex_unlock(&s->lock);
	notice_run_all(&notify);
	return n;
}

void fake_expire(struct zkl_session *sess, int requeue, struct zkl_link *lost)
{
	struct zkl_link notify, gone;

	list_init(&notify);
	list_init(lost);
	pthread_mutex_lock(&sess->lock);
	sess->state = ZKL_CONN_EXPIRED;
	for (struct zkl_link *l = sess->live.next, *n; l != &sess->live;
	     l = n) {
		n = l->next;
		struct zkl_member *m =
			ZKL_CONTAINER_OF(l, struct zkl_member, live);
		m->ops->expired_locked(m, requeue, lost, &notify);
	}
	/* The server forgot the session's watches (session.c). */
	watchtab_take_all(&sess->watches, &gone);
	while (!list_empty(&gone))
		list_del(gone.next);
	queue_session_expired_locked(sess);
	pthread_mutex_unlock(&sess->lock);
	notice_run_all(&notify);
}

void fake_free_lost(struct zkl_link *lost)
{
	while (!list_empty(lost)) {
		struct zkl_lost *item =
			ZKL_CONTAINER_OF(lost->next, struct zkl_lost, link);
		list_del(&item->link);
		free(item->node);
		free(item);
	}
}

void fake_set_state(struct zkl_session *s, enum zkl_conn_state state)
{
	pthread_mutex_lock(&s->lock);
	s->state = state;
	pthread_mutex_unlock(&s->lock);
}

void fake_lose_multi_reply_and_reconnect(struct zkl_session *s)
{
	fake_set_state(s, ZKL_CONN_CONNECTING);
	fake_complete_multi(ZCONNECTIONLOSS, NULL);
	cr_assert_eq(fake_pending(), 0, "nothing until connected");
	fake_set_state(s, ZKL_CONN_CONNECTED);
	fake_resume_all(s);
}

void fake_expect_delete_of(const char *name)
{
	struct fake_call *c = fake_peek(FAKE_DELETE);

	cr_assert(strstr(c->path, name), "deletes %s, expected %s", c->path,
		  name);
	fake_complete_void(FAKE_DELETE, ZOK);
}
