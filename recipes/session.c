/*
 * session.c - the ZooKeeper handle of a mount: connect, state, watches.
 */
#include "internal.h"
#include "deadline.h"
#include "log.h"
#include "zkerr.h"
#include "names.h"
#include "tls.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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

/* ---- what changed ------------------------------------------------------- */

static _Atomic uint64_t *session_change_slot(struct zkl_session *s,
					     const char *path, size_t len)
{
	return &s->changes[strtab_hash(path, len) % SESSION_CHANGE_SLOTS];
}

void session_changed(struct zkl_session *s, const char *path)
{
	const char *slash = strrchr(path, '/');

	atomic_fetch_add(session_change_slot(s, path, strlen(path)), 1);
	if (slash && slash > path)
		atomic_fetch_add(session_change_slot(s, path,
						     (size_t)(slash - path)),
				 1);
}

void session_changed_all(struct zkl_session *s)
{
	atomic_fetch_add(&s->changes_all, 1);
}

uint64_t session_changes(struct zkl_session *s, const char *path)
{
	return atomic_load(session_change_slot(s, path, strlen(path))) +
	       atomic_load(&s->changes_all);
}

static void session_on_state(struct zkl_session *s, zhandle_t *zh, int zstate)
{
	struct zkl_link notify, lost;

	list_init(&lost);
	session_enter(s, &notify);
	/* Lost, back or new: what the session was told before may be all it
	 * knows, or no longer true (a holders text kept must not outlive
	 * it: doc/operations.md). */
	session_changed_all(s);
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

void session_join_locked(struct zkl_session *s, struct zkl_member *m)
{
	ZKL_ASSERT_HELD(&s->lock);
	assert(!list_linked(&m->live));
	list_add_tail(&s->live, &m->live);
}

void session_part_locked(struct zkl_session *s, struct zkl_member *m)
{
	if (!list_linked(&m->live))
		return;
	list_del(&m->live);
	if (list_empty(&s->live)) /* session_drain may wait for it */
		pthread_cond_broadcast(&s->state_changed);
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
	char why[256], server[TLS_SERVER_LEN];
	int failed = tls_note_failure(message, why, sizeof(why), server,
				      sizeof(server));

	if (!failed) {
		log_msg(LOG_DEBUG, "zookeeper: %s", message);
		return;
	}
	/* Said once per reason, not at every retry. */
	log_msg(failed == 1 ? LOG_ERR : LOG_DEBUG,
		"TLS to ZooKeeper%s%s failed: %s%s", *server ? " server " : "",
		server, why, tls_advice(why));
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
		explicit_bzero(s->auth, strlen(s->auth));
	free(s->auth);
	if (s->tls) /* it may hold the key's password */
		explicit_bzero(s->tls, strlen(s->tls));
	free(s->tls);
	free(s->identity);
	free(s->x509_identity);
	free(s);
}

static zhandle_t *session_new_handle(struct zkl_session *s)
{
	zhandle_t *zh = s->tls ? tls_handle_new(s->hosts, s->tls,
						session_watcher,
						s->session_timeout_ms, s,
						session_client_log)
			       : zookeeper_init2(s->hosts, session_watcher,
						 s->session_timeout_ms, NULL, s,
						 0, session_client_log);

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
	struct zkl_link notify;
	int rc = session_clock_start(s);

	if (rc < 0)
		return rc;
	rc = -pthread_create(&s->keeper, NULL, session_keeper, s);
	if (rc < 0) {
		session_enter(s, &notify);
		s->closing = 1;
		session_leave(s, &notify);
		session_clock_stop(s);
	}
	return rc;
}

/* How many servers a connect string names. */
/* An address as the client's log names it ("127.0.0.1:2281",
 * "[::1]:2281"), into buf. */
static void session_address_name(const struct addrinfo *a, char *buf,
				 size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	int v6 = a->ai_family == AF_INET6;
	const void *in =
		v6 ? (const void *)&((struct sockaddr_in6 *)a->ai_addr)
				->sin6_addr
		   : (const void *)&((struct sockaddr_in *)a->ai_addr)->sin_addr;
	int port = ntohs(v6 ? ((struct sockaddr_in6 *)a->ai_addr)->sin6_port
			    : ((struct sockaddr_in *)a->ai_addr)->sin_port);

	inet_ntop(a->ai_family, in, ip, sizeof(ip));
	snprintf(buf, len, v6 ? "[%s]:%d" : "%s:%d", ip, port);
}

/* How many servers the client will try for hosts ("h1:p1,h2:p2"): the
 * distinct addresses the names resolve to, resolved as it resolves them
 * (a name may stand for several; one it cannot resolve it skips).  At
 * least 1. */
static unsigned session_addresses_named(const char *hosts)
{
	const struct addrinfo hints = { .ai_flags = AI_ADDRCONFIG,
					.ai_family = AF_UNSPEC,
					.ai_socktype = SOCK_STREAM,
					.ai_protocol = IPPROTO_TCP };
	char seen[TLS_SERVERS_MAX][TLS_SERVER_LEN], name[256];
	unsigned n = 0;

	for (const char *h = hosts; *h; h += *h == ',') {
		size_t len = strcspn(h, ",");
		char *port;
		struct addrinfo *found;

		snprintf(name, sizeof(name), "%.*s", (int)len, h);
		h += len;
		port = strrchr(name, ':');
		if (!port)
			continue;
		*port++ = '\0';
		if (getaddrinfo(name + strspn(name, " \t"), port, &hints,
				&found) != 0)
			continue;
		for (struct addrinfo *a = found; a && n < TLS_SERVERS_MAX;
		     a = a->ai_next) {
			unsigned i = 0;

			if (a->ai_family != AF_INET && a->ai_family != AF_INET6)
				continue;
			session_address_name(a, seen[n], sizeof(seen[n]));
			while (i < n && strcmp(seen[i], seen[n]) != 0)
				i++;
			n += i == n;
		}
		freeaddrinfo(found);
	}
	return n ? n : 1;
}

/* Wait for the first connection, at most timeout_ms: 0, -ETIMEDOUT, or
 * -EPROTO once a TLS connection has failed with every address the hosts
 * stand for (each refused us, or we it), or our own files failed to load:
 * waiting longer would not help. */
static int session_wait_connected(struct zkl_session *s, int timeout_ms)
{
	struct timespec deadline = deadline_after_ms(timeout_ms);
	unsigned servers = s->tls ? session_addresses_named(s->hosts) : 0;
	char why[8];
	int rc = 0;

	pthread_mutex_lock(&s->lock);
	while (s->state == ZKL_CONN_CONNECTING && rc == 0) {
		/* The client's log hook, which notes a failed handshake, has
		 * no way to wake us: look every tenth of a second. */
		struct timespec slice = deadline_after_ms(100);
		int last = !deadline_before(&slice, &deadline);

		rc = pthread_cond_timedwait(&s->state_changed, &s->lock,
					    last ? &deadline : &slice);
		if (rc == ETIMEDOUT && !last)
			rc = 0;
		if (s->tls && tls_failed_servers(why, sizeof(why)) >= servers)
			break;
	}
	rc = s->state == ZKL_CONN_CONNECTED                   ? 0
	     : s->state == ZKL_CONN_EXPIRED                   ? -ECONNREFUSED
	     : s->tls && tls_failed_servers(why, sizeof(why)) ? -EPROTO
							      : -ETIMEDOUT;
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int session_open(const struct zkl_session_opts *opts, struct zkl_session **out,
		 char *err, size_t errlen)
{
	struct zkl_link notify;
	struct zkl_session *s = calloc(1, sizeof(*s));
	int rc;

	if (!s || !(s->base = strdup(opts->base)) ||
	    !(s->hosts = strdup(opts->hosts)) ||
	    (opts->tls_files && !(s->tls = strdup(opts->tls_files))) ||
	    watchtab_init(&s->watches) < 0 || strtab_init(&s->queues) < 0) {
		snprintf(err, errlen, "out of memory");
		if (s) {
			watchtab_destroy(&s->watches);
			free(s->base);
			free(s->hosts);
			free(s->tls);
		}
		free(s);
		return -ENOMEM;
	}
	s->session_timeout_ms = opts->session_timeout_ms;
	s->dialect = opts->dialect;
	s->persistent_resources = opts->persistent_resources;
	session_clock_init(s, opts->jeopardy_margin_ms);
	s->acl = &ZOO_OPEN_ACL_UNSAFE;
	s->x509_acl = opts->tls_files && opts->x509_acl;
	s->owned = opts->digest_auth || s->x509_acl;
	if (s->owned)
		s->acl = &ZOO_CREATOR_ALL_ACL;
	if (opts->digest_auth) {
		s->auth = strdup(opts->digest_auth);
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

	session_enter(s, &notify);
	session_clock_new_handle_locked(s);
	session_maxhold_new_handle_locked(s);
	s->zh = session_new_handle(s);
	session_leave(s, &notify);
	if (!s->zh) {
		rc = errno ? -errno : -EINVAL;
		snprintf(err, errlen, "cannot use ZooKeeper servers '%s': %s",
			 opts->hosts, strerror(-rc));
		session_free(s);
		return rc;
	}
	rc = session_wait_connected(s, opts->connect_timeout_ms);
	if (rc == -EPROTO) {
		char why[256];

		tls_failed_servers(why, sizeof(why));
		snprintf(err, errlen,
			 "no ZooKeeper server at %s took a TLS connection: "
			 "%s%s",
			 opts->hosts, why, tls_advice(why));
	} else if (rc < 0) {
		snprintf(err, errlen,
			 "no ZooKeeper server answered at %s within %d s",
			 opts->hosts, opts->connect_timeout_ms / 1000);
	}
	if (rc < 0) {
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

/*
 * Creating the persistent znodes above lock nodes: the
 * base path at start, and a resource's missing parents before its first
 * lock node.  One walk over the path serves both.
 */
/* A parent's create: counted when it made a resource. */
static void session_on_parent_created(int rc, const char *name,
				      const void *data)
{
	struct zkl_session *s = (struct zkl_session *)data;

	(void)name;
	if (rc == ZOK)
		atomic_fetch_add(&s->resources_created, 1);
}

/* Call create(s, prefix, err, errlen) for each prefix of `path` ending at
 * a '/' or at its end, from the first one longer than `skip` bytes down
 * to path itself ("/a", "/a/b", ...): parents before children.  Stops at
 * the first that fails and returns its -errno. */
static int
session_each_prefix(struct zkl_session *s, const char *path, size_t skip,
		    int (*create)(struct zkl_session *s, const char *prefix,
				  char *err, size_t errlen),
		    char *err, size_t errlen)
{
	char prefix[NAMES_MAX_NODE_PATH + 1];
	size_t len = strlen(path);

	if (len >= sizeof(prefix)) {
		snprintf(err, errlen, "path too long: %s", path);
		return -ENAMETOOLONG;
	}
	memcpy(prefix, path, len + 1);
	for (size_t i = skip + 1; i <= len; i++) {
		int rc;
		if (path[i] != '/' && path[i] != '\0')
			continue;
		prefix[i] = '\0';
		rc = create(s, prefix, err, errlen);
		if (rc < 0)
			return rc;
		prefix[i] = path[i];
	}
	return 0;
}

/* Queue the create of one parent; its outcome does not matter.  Every
 * znode the mount makes has empty data rather than none, as kazoo and
 * Curator make theirs: kazoo's Semaphore decodes its path's data and
 * fails on none.
 *
 * A resource znode is a container, as Curator makes its lock paths: the
 * server deletes it once its last child is gone (a minute later by
 * default), so a name locked once leaves nothing behind, and a create
 * that finds it gone makes it again (LR_MAX_CREATE_ATTEMPTS).  A setting
 * keeps it: a limit's pin and the hold limit are persistent children.
 * Persistent instead in the kazoo dialect, as kazoo makes its paths (its
 * Semaphore counts every child of a resource as a lease, so no pin could
 * keep a container that stores a limit), and on a server older than
 * 3.5.3, which has no containers (session_check_base). */
static int session_create_async(struct zkl_session *s, const char *prefix,
				char *err, size_t errlen)
{
	int rc = zoo_acreate(s->zh, prefix, "", 0, s->acl,
			     s->containers ? ZOO_CONTAINER : ZOO_PERSISTENT,
			     session_on_parent_created, s);

	(void)err;
	(void)errlen;
	return zkerr_errno(rc);
}

int session_create_parents_locked(struct zkl_session *s, const char *dir)
{
	char unused[1];

	ZKL_ASSERT_HELD(&s->lock);
	return session_each_prefix(s, dir, strlen(s->base),
				   session_create_async, unused,
				   sizeof(unused));
}

/* Create one level of the base path and wait for the answer. */
static int session_create_sync(struct zkl_session *s, const char *prefix,
			       char *err, size_t errlen)
{
	int rc = zoo_create(s->zh, prefix, "", 0, s->acl, ZOO_PERSISTENT, NULL,
			    0);

	if (rc == ZOK || rc == ZNODEEXISTS)
		return 0;
	if (rc == ZINVALIDACL && s->x509_acl)
		return session_acl_no_x509(s, prefix, err, errlen);
	snprintf(err, errlen, "cannot create %s: %s", prefix, zerror(rc));
	return zkerr_errno(rc);
}

/* Create the base path and its parents, synchronously (startup only). */
int session_create_base(struct zkl_session *s, char *err, size_t errlen)
{
	return session_each_prefix(s, s->base, 0, session_create_sync, err,
				   errlen);
}

/*
 * What a session tells about itself: its base path,
 * servers, id, state and counters.
 */
const char *session_base(const struct zkl_session *s)
{
	return s->base;
}

int64_t session_id(struct zkl_session *s)
{
	struct zkl_link notify;
	int64_t id;

	session_enter(s, &notify);
	id = s->client_id;
	session_leave(s, &notify);
	return id;
}

const char *session_hosts(const struct zkl_session *s)
{
	return s->hosts;
}

/* "host:port" of the server the handle is connected to, or "".  Not with
 * zoo_get_current_server: it formats into one static buffer of the
 * client's, which the client's own thread rewrites as it connects. */
static void session_server_text(zhandle_t *zh, char *out, size_t size)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char host[INET6_ADDRSTRLEN];

	out[0] = '\0';
	if (!zookeeper_get_connected_host(zh, (struct sockaddr *)&ss, &len))
		return;
	if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;
		if (inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host)))
			snprintf(out, size, "%s:%u", host, ntohs(in->sin_port));
	} else if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 =
			(const struct sockaddr_in6 *)&ss;
		if (inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host)))
			snprintf(out, size, "[%s]:%u", host,
				 ntohs(in6->sin6_port));
	}
}

void session_stats(struct zkl_session *s, struct zkl_session_stats *out)
{
	struct zkl_link notify;
	memset(out, 0, sizeof(*out));
	session_enter(s, &notify);
	out->state = s->state;
	out->dead = s->dead;
	out->session_id = s->client_id;
	out->timeout_ms = zoo_recv_timeout(s->zh);
	session_server_text(s->zh, out->server, sizeof(out->server));
	for (struct zkl_link *l = s->live.next; l != &s->live; l = l->next) {
		struct zkl_member *m = member_of_live(l);
		m->ops->count_locked(m, out);
	}
	out->grants = s->grants;
	out->losses = s->losses;
	out->expirations = s->expirations;
	out->asked = s->revokes_seen;
	out->maxhold_asks = s->maxhold_asks;
	out->maxhold_breaks = s->maxhold_breaks;
	out->delete_retries = s->delete_retries;
	out->containers = s->containers;
	out->deadlocks = s->deadlocks;
	out->deadlock_checks = s->deadlock_checks;
	out->resources_created = atomic_load(&s->resources_created);
	session_clock_stats_locked(s, out);
	session_leave(s, &notify);
}

enum zkl_conn_state session_state(struct zkl_session *s)
{
	struct zkl_link notify;
	enum zkl_conn_state st;

	session_enter(s, &notify);
	st = s->state;
	session_leave(s, &notify);
	return st;
}

/*
 * What the session counts for MOUNT/.metrics: locks
 * granted, released and lost with their wait and hold times, by mode and
 * kind, and ZooKeeper's answer times (session.h).  Updated under the
 * session's mutex where each event happens; copied out whole.
 */
int64_t session_metrics_now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

static struct zkl_lock_metrics *metrics_of(struct zkl_session *s,
					   enum zkl_mode mode, unsigned kind)
{
	assert((unsigned)mode < ZKL_MODES && kind < ZKL_KINDS);
	return &s->metrics.locks[mode][kind];
}

void session_metrics_granted_locked(struct zkl_session *s, enum zkl_mode mode,
				    unsigned kind, int64_t wait_ms)
{
	struct zkl_lock_metrics *m = metrics_of(s, mode, kind);

	ZKL_ASSERT_HELD(&s->lock);
	m->grants++;
	histogram_observe(&m->wait, &histogram_lock_seconds,
			  (double)(wait_ms > 0 ? wait_ms : 0) / 1000);
}

void session_metrics_ended_locked(struct zkl_session *s, enum zkl_mode mode,
				  unsigned kind, int lost, int64_t hold_ms)
{
	struct zkl_lock_metrics *m = metrics_of(s, mode, kind);

	ZKL_ASSERT_HELD(&s->lock);
	if (lost)
		m->losses++;
	else
		m->releases++;
	histogram_observe(&m->hold, &histogram_lock_seconds,
			  (double)(hold_ms > 0 ? hold_ms : 0) / 1000);
}

void session_metrics_answered_locked(struct zkl_session *s,
				     enum zkl_request_op op, int rc,
				     int64_t sent_us)
{
	int64_t took = session_metrics_now_us() - sent_us;

	ZKL_ASSERT_HELD(&s->lock);
	assert(op < ZKL_OPS);
	/* The client's own failures (the connection lost, the handle closed)
	 * time the connection's end, not the server's answer. */
	if (zkerr_is_connection_loss(rc) || rc == ZCLOSING ||
	    rc == ZSESSIONEXPIRED || rc == ZINVALIDSTATE)
		return;
	histogram_observe(&s->metrics.requests[op], &histogram_request_seconds,
			  (double)(took > 0 ? took : 0) / 1e6);
}

void session_metrics(struct zkl_session *s, struct zkl_session_metrics *out)
{
	struct zkl_link notify;
	session_enter(s, &notify);
	memcpy(out, &s->metrics, sizeof(*out));
	session_leave(s, &notify);
}

/*
 * Telling the daemon of locks lost (internal.h): with the
 * session, or one by one (a node deleted by another client).
 */
void session_set_lost_hook(struct zkl_session *s, session_lost_fn fn, void *arg)
{
	struct zkl_link notify;
	session_enter(s, &notify);
	s->lost_hook = fn;
	s->lost_arg = arg;
	session_leave(s, &notify);
}

void session_set_revoke_hook(struct zkl_session *s, session_lost_fn fn,
			     void *arg)
{
	struct zkl_link notify;
	session_enter(s, &notify);
	s->revoke_hook = fn;
	s->revoke_arg = arg;
	session_leave(s, &notify);
}

void session_tell_lost(struct zkl_lost *item)
{
	struct zkl_session *s = item->s;

	if (s->lost_hook)
		s->lost_hook(item->node, item->why, item->data, item->len,
			     s->lost_arg);
	free(item->node);
	free(item);
}

/* Tell the owner of each lock lost with the session, then free the list. */
void session_report_lost(struct zkl_link *lost)
{
	while (!list_empty(lost)) {
		struct zkl_lost *item =
			ZKL_CONTAINER_OF(lost->next, struct zkl_lost, link);
		list_del(&item->link);
		session_tell_lost(item);
	}
}

/*
 * The end of a mount's session: the releases of the
 * unmount confirmed, the threads stopped, the handle closed, whatever
 * still waited told, and the memory freed.
 */
/* Before the handle goes, let the lock requests released at unmount see
 * their deletes confirmed.  zookeeper_close() of the multi-threaded client
 * stops its completion thread first: a reply still due is dropped without
 * its completion, and a request that waits for it is never freed (nor is
 * whoever waits for the delete told).  Only while connected, and at most
 * a session timeout: without a connection the server ends our nodes with
 * the session anyway. */
static void session_drain(struct zkl_session *s)
{
	struct timespec deadline = deadline_after_ms(s->session_timeout_ms);
	int rc = 0;

	pthread_mutex_lock(&s->lock);
	while (!list_empty(&s->live) && s->state == ZKL_CONN_CONNECTED &&
	       rc == 0)
		rc = pthread_cond_timedwait(&s->state_changed, &s->lock,
					    &deadline);
	pthread_mutex_unlock(&s->lock);
}

/* The handle is closed and our nodes with it: what still waits (a delete
 * deferred until a reconnection that will not come) is over, and whoever
 * waits for it is told.  A request whose reply the close dropped keeps the
 * reference of that step: nothing will ever call it again. */
static void session_finish_all(struct zkl_session *s)
{
	struct zkl_link notify, lost;

	list_init(&lost);
	session_enter(s, &notify);
	s->dead = 1;
	for (struct zkl_link *l = s->live.next; l != &s->live;) {
		struct zkl_link *next = l->next;
		struct zkl_member *m = member_of_live(l);
		m->ops->expired_locked(m, 0, &lost, &notify);
		l = next;
	}
	/* What waits for a time or the connection and is no request (a
	 * break's bound, revoke.c) ends too. */
	for (int i = 0; i < 2; i++) {
		struct zkl_link *list = i ? &s->resume : &s->later;
		while (!list_empty(list)) {
			struct zkl_member *m = ZKL_CONTAINER_OF(
				list->next, struct zkl_member, resume);
			list_del(&m->resume);
			m->ops->expired_locked(m, 0, &lost, &notify);
		}
	}
	pthread_mutex_unlock(&s->lock);
	s->lost_hook = NULL; /* released already: nobody holds them */
	session_report_lost(&lost);
	notice_run_all(&notify);
	assert(list_empty(&s->resume) && list_empty(&s->later));
}

void session_close(struct zkl_session *s)
{
	struct zkl_link notify;
	session_drain(s);
	session_enter(s, &notify);
	s->closing = 1;
	pthread_cond_broadcast(&s->state_changed);
	session_leave(s, &notify);
	pthread_join(s->keeper, NULL);
	session_clock_stop(s);
	zookeeper_close(s->zh);
	session_finish_all(s);
	session_free(s);
}
