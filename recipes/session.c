/*
 * session.c - the ZooKeeper handle of a mount: connect, state, watches.
 */
#include "internal.h"
#include "deadline.h"
#include "log.h"
#include "zkerr.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

static void session_resume_all_locked(struct zkl_session *s,
				      struct zkl_link *notify)
{
	struct zkl_link pending;

	ZKL_ASSERT_HELD(&s->lock);
	list_move_all(&s->resume, &pending);
	while (!list_empty(&pending)) {
		struct zkl_link *l = pending.next;
		list_del(l);
		struct zkl_member *m =
			ZKL_CONTAINER_OF(l, struct zkl_member, resume);
		m->ops->resume_locked(m, notify);
	}
}

static void session_connected_locked(struct zkl_session *s,
				     struct zkl_link *notify)
{
	const clientid_t *cid = zoo_client_id(s->zh);

	ZKL_ASSERT_HELD(&s->lock);
	s->state = ZKL_CONN_CONNECTED;
	s->watches.connection++;
	s->client_id = cid ? cid->client_id : 0;
	session_clock_connected_locked(s);
	session_maxhold_connected_locked(s);
	if (!s->draining)
		session_resume_all_locked(s, notify);
}

/* The session is over: holders are lost, waiters wait for the next
 * session (or fail, if there cannot be one). */
static void session_expired_locked(struct zkl_session *s, int renew,
				   struct zkl_link *lost,
				   struct zkl_link *notify)
{
	struct zkl_link gone;

	ZKL_ASSERT_HELD(&s->lock);
	s->state = ZKL_CONN_EXPIRED;
	s->expirations++;
	s->expired = renew;
	s->dead = !renew;
	/* The server forgot our nodes and watches: every request of this
	 * session learns it now, not from a watch that will never come. */
	for (struct zkl_link *l = s->live.next; l != &s->live;) {
		struct zkl_link *next = l->next;
		struct zkl_member *m = member_of_live(l);
		m->ops->expired_locked(m, renew, lost, notify);
		l = next;
	}
	watchtab_take_all(&s->watches, &gone);
	while (!list_empty(&gone))
		list_del(gone.next);
	queue_session_expired_locked(s);
}

static void session_on_state(struct zkl_session *s, zhandle_t *zh, int zstate)
{
	struct zkl_link notify, lost;

	list_init(&notify);
	list_init(&lost);
	pthread_mutex_lock(&s->lock);
	if (zh != s->zh) {
		/* an expired handle being closed */
	} else if (zstate == ZOO_CONNECTED_STATE) {
		session_connected_locked(s, &notify);
		log_msg(LOG_INFO, "ZooKeeper session 0x%" PRIx64 " connected",
			(uint64_t)s->client_id);
	} else if (zstate == ZOO_CONNECTING_STATE ||
		   zstate == ZOO_ASSOCIATING_STATE) {
		if (s->state == ZKL_CONN_CONNECTED) {
			s->state = ZKL_CONN_CONNECTING;
			s->metrics.disconnects++;
			s->maxhold_current = 0;
			log_msg(LOG_INFO,
				"ZooKeeper connection lost; session "
				"0x%" PRIx64 " may still live: locks are kept "
				"while reconnecting",
				(uint64_t)s->client_id);
		}
	} else if (zstate == ZOO_EXPIRED_SESSION_STATE) {
		log_msg(LOG_WARNING,
			"ZooKeeper session 0x%" PRIx64 " expired: "
			"every lock it held is lost; waiters queue again on a "
			"new session",
			(uint64_t)s->client_id);
		session_expired_locked(s, 1, &lost, &notify);
	} else if (zstate == ZOO_AUTH_FAILED_STATE) {
		log_msg(LOG_ERR, "ZooKeeper authentication failed: every lock "
				 "is lost and no new lock can be taken");
		session_expired_locked(s, 0, &lost, &notify);
	}
	pthread_cond_broadcast(&s->state_changed);
	pthread_mutex_unlock(&s->lock);
	session_report_lost(&lost);
	notice_run_all(&notify);
}

/* The handle's default watcher: session events only. */
static void session_watcher(zhandle_t *zh, int type, int state,
			    const char *path, void *ctx)
{
	(void)path;
	if (type == ZOO_SESSION_EVENT)
		session_on_state(ctx, zh, state);
}

void session_resume_when_connected_locked(struct zkl_session *s,
					  struct zkl_member *m,
					  struct zkl_link *notify)
{
	ZKL_ASSERT_HELD(&s->lock);
	if (s->dead || session_is_connected_locked(s)) {
		m->ops->resume_locked(m, notify);
		return;
	}
	list_add_tail(&s->resume, &m->resume);
}

/* The client's own messages (one per failed connection attempt) are
 * detail: our messages say what matters; -d shows these too. */
static void session_client_log(const char *message)
{
	log_msg(LOG_DEBUG, "zookeeper: %s", message);
}

void session_free(struct zkl_session *s)
{
	watchtab_destroy(&s->watches);
	strtab_destroy(&s->queues);
	session_clock_destroy(s);
	maxhold_table_free(&s->maxhold);
	pthread_cond_destroy(&s->state_changed);
	pthread_mutex_destroy(&s->lock);
	free(s->base);
	free(s->hosts);
	if (s->auth)
		memset(s->auth, 0, strlen(s->auth));
	free(s->auth);
	free(s->identity);
	free(s);
}

static zhandle_t *session_new_handle(struct zkl_session *s)
{
	zhandle_t *zh = zookeeper_init2(s->hosts, session_watcher,
					s->session_timeout_ms, NULL, s, 0,
					session_client_log);

	if (!zh)
		return NULL;
	/* Addresses are resolved once: saves a resolver call per request. */
	zoo_set_servers_resolution_delay(zh, -1);
	/* Sent ahead of every request of the handle, on every connection. */
	if (s->auth && zoo_add_auth(zh, "digest", s->auth, (int)strlen(s->auth),
				    NULL, NULL) != ZOK) {
		zookeeper_close(zh);
		errno = EINVAL;
		return NULL;
	}
	return zh;
}

/* The CLOCK_REALTIME time ms milliseconds from now, for
 * pthread_cond_timedwait. */
/* Wait until `closing`, at most ms milliseconds.  s->lock held. */
static void session_nap_locked(struct zkl_session *s, int ms)
{
	struct timespec t = deadline_after_ms(ms);

	if (!s->closing)
		pthread_cond_timedwait(&s->state_changed, &s->lock, &t);
}

/*
 * The keeper: when the session expires, open a new one in its place.
 * The old handle is closed first, outside our lock, which delivers (or
 * drops) every reply still due from it; only then are the waiters queued
 * on the new session, so no reply of the old one is ever taken for a
 * reply of the new.
 */
static void *session_keeper(void *arg)
{
	struct zkl_session *s = arg;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		zhandle_t *old, *fresh;
		struct zkl_link notify;

		while (!s->closing && !s->expired)
			pthread_cond_wait(&s->state_changed, &s->lock);
		if (s->closing)
			break;
		session_clock_new_handle_locked(s);
		session_maxhold_new_handle_locked(s);
		fresh = session_new_handle(s);
		if (!fresh) {
			log_msg(LOG_ERR,
				"cannot open a new ZooKeeper session: "
				"%s; retrying",
				strerror(errno));
			session_nap_locked(s, 1000);
			continue;
		}
		/* Its watcher waits for our lock, then sees the new handle. */
		old = s->zh;
		s->zh = fresh;
		s->expired = 0;
		s->draining = 1;
		s->state = ZKL_CONN_CONNECTING;
		pthread_mutex_unlock(&s->lock);
		zookeeper_close(old);
		session_enter(s, &notify);
		s->draining = 0;
		if (s->state == ZKL_CONN_CONNECTED)
			session_resume_all_locked(s, &notify);
		session_leave(s, &notify);
		pthread_mutex_lock(&s->lock);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* The keeper and the clock (session_clock.c).  Returns 0 or -errno with
 * neither running. */
static int session_start_threads(struct zkl_session *s)
{
	int rc = session_clock_start(s);

	if (rc < 0)
		return rc;
	rc = -pthread_create(&s->keeper, NULL, session_keeper, s);
	if (rc < 0) {
		pthread_mutex_lock(&s->lock);
		s->closing = 1;
		pthread_mutex_unlock(&s->lock);
		session_clock_stop(s);
	}
	return rc;
}

static int session_wait_connected(struct zkl_session *s, int timeout_ms)
{
	struct timespec deadline = deadline_after_ms(timeout_ms);
	int rc = 0;

	pthread_mutex_lock(&s->lock);
	while (s->state == ZKL_CONN_CONNECTING && rc == 0)
		rc = pthread_cond_timedwait(&s->state_changed, &s->lock,
					    &deadline);
	rc = s->state == ZKL_CONN_CONNECTED ? 0
	     : s->state == ZKL_CONN_EXPIRED ? -ECONNREFUSED
					    : -ETIMEDOUT;
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int session_open(const struct zkl_session_opts *opts, struct zkl_session **out,
		 char *err, size_t errlen)
{
	struct zkl_session *s = calloc(1, sizeof(*s));
	int rc;

	if (!s || !(s->base = strdup(opts->base)) ||
	    !(s->hosts = strdup(opts->hosts)) ||
	    watchtab_init(&s->watches) < 0 || strtab_init(&s->queues) < 0) {
		snprintf(err, errlen, "out of memory");
		if (s) {
			watchtab_destroy(&s->watches);
			free(s->base);
			free(s->hosts);
		}
		free(s);
		return -ENOMEM;
	}
	s->session_timeout_ms = opts->session_timeout_ms;
	s->dialect = opts->dialect;
	session_clock_init(s, opts->jeopardy_margin_ms);
	s->acl = &ZOO_OPEN_ACL_UNSAFE;
	if (opts->digest_auth) {
		s->auth = strdup(opts->digest_auth);
		s->acl = &ZOO_CREATOR_ALL_ACL;
		if (!s->auth) {
			snprintf(err, errlen, "out of memory");
			session_free(s);
			return -ENOMEM;
		}
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->state_changed, NULL);
	list_init(&s->resume);
	list_init(&s->later);
	list_init(&s->live);
	list_init(&s->maxhold_stores);
	s->state = ZKL_CONN_CONNECTING;
	if (opts->zk_log_level)
		zoo_set_debug_level((ZooLogLevel)opts->zk_log_level);

	pthread_mutex_lock(&s->lock);
	session_clock_new_handle_locked(s);
	session_maxhold_new_handle_locked(s);
	s->zh = session_new_handle(s);
	pthread_mutex_unlock(&s->lock);
	if (!s->zh) {
		rc = errno ? -errno : -EINVAL;
		snprintf(err, errlen, "cannot use ZooKeeper servers '%s': %s",
			 opts->hosts, strerror(-rc));
		session_free(s);
		return rc;
	}
	rc = session_wait_connected(s, opts->connect_timeout_ms);
	if (rc < 0) {
		snprintf(err, errlen,
			 "no ZooKeeper server answered at %s within %d s",
			 opts->hosts, opts->connect_timeout_ms / 1000);
		zookeeper_close(s->zh);
		session_free(s);
		return rc;
	}
	rc = session_create_base(s, err, errlen);
	if (rc == 0)
		rc = session_check_base(s, err, errlen);
	if (rc == 0 && (rc = session_start_threads(s)) < 0)
		snprintf(err, errlen, "cannot start a thread: %s",
			 strerror(-rc));
	if (rc < 0) {
		zookeeper_close(s->zh);
		session_free(s);
		return rc;
	}
	*out = s;
	return 0;
}
