/*
 * session_maxhold.c - the hold limits as this session knows them: the
 * table znode <base>/.maxhold (maxhold.h) read at each connection and
 * again whenever its watch fires, so that a grant needs no request to
 * learn its limit; and the server's clock, as our creates' replies tell
 * it, for the age of anyone's node.
 *
 * The table's watch is the session's own (maxhold_watcher), not the
 * watch table's: nobody waits on it, it only refreshes the copy.  A get
 * sets it while the znode exists, an exists while it does not; either
 * fires at the next change.  A reply that was lost (the connection broke)
 * leaves the copy as it was until the next connection reads it again.
 */
#include "internal.h"
#include "log.h"
#include "maxhold.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

static void maxhold_load_locked(struct zkl_session *s);

static void maxhold_path(const struct zkl_session *s, char *out, size_t size)
{
	snprintf(out, size, "%s/%s", s->base, MAXHOLD_NODE);
}

/* Any change of the znode (created, set, deleted): the copy is stale
 * until read again.  The client also copies the session's events here:
 * a lost connection is the session's business (session.c), and its
 * return reads the table anyway (session_maxhold_connected_locked). */
static void maxhold_watcher(zhandle_t *zh, int type, int state,
			    const char *path, void *ctx)
{
	struct zkl_session *s = ctx;

	(void)zh;
	(void)state;
	(void)path;
	if (type == ZOO_SESSION_EVENT)
		return;
	pthread_mutex_lock(&s->lock);
	s->maxhold_current = 0;
	maxhold_load_locked(s);
	pthread_mutex_unlock(&s->lock);
}

/* The session of a reply, or NULL for one of a handle closed since (its
 * flags were reset with the new handle's). */
static struct zkl_session *maxhold_reply_session(const void *data)
{
	const struct zkl_maxhold_slot *slot = data;
	struct zkl_session *s = slot->s;

	pthread_mutex_lock(&s->lock);
	if (slot == &s->mh[s->mh_slot])
		return s;
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* The read in flight is answered (ok: the copy is the table as of now):
 * another was asked for meanwhile? */
static void maxhold_loaded_locked(struct zkl_session *s, int ok)
{
	s->maxhold_loading = 0;
	if (s->maxhold_again) {
		s->maxhold_again = 0;
		maxhold_load_locked(s);
	} else if (ok) {
		s->maxhold_current = 1;
	}
}

static void maxhold_on_exists(int rc, const struct Stat *st, const void *data)
{
	struct zkl_session *s = maxhold_reply_session(data);

	(void)st;
	if (!s)
		return;
	if (rc == ZOK) /* created between our get and this exists */
		s->maxhold_again = 1;
	maxhold_loaded_locked(s, rc == ZNONODE);
	pthread_mutex_unlock(&s->lock);
}

/* The table's data parsed: 0 and t, or -errno.  Outside the session's
 * lock: anyone may have written anything there, a megabyte of it. */
static int maxhold_parse_reply(const char *base, const char *value, int len,
			       struct maxhold_table *t)
{
	int skipped = maxhold_table_parse(value, len > 0 ? (size_t)len : 0, t);

	if (skipped > 0)
		log_msg(LOG_WARNING,
			"%s/%s: %d lines are no hold limits (\"<seconds> "
			"<resource>\"): ignored",
			base, MAXHOLD_NODE, skipped);
	return skipped < 0 ? skipped : 0;
}

static void maxhold_on_got(int rc, const char *value, int len,
			   const struct Stat *st, const void *data)
{
	const struct zkl_maxhold_slot *slot = data;
	char path[NAMES_MAX_NODE_PATH + sizeof(MAXHOLD_NODE) + 1];
	struct maxhold_table t = { 0 };
	struct zkl_session *s;
	int err = 0;

	(void)st;
	/* The base never changes: no lock needed to read it. */
	if (rc == ZOK)
		err = maxhold_parse_reply(slot->s->base, value, len, &t);
	s = maxhold_reply_session(data);
	if (!s) {
		maxhold_table_free(&t);
		return;
	}
	if (rc == ZOK && err == 0) {
		maxhold_table_free(&s->maxhold);
		s->maxhold = t;
	} else if (rc == ZNONODE) {
		maxhold_table_free(&s->maxhold);
		maxhold_path(s, path, sizeof(path));
		if (zoo_awexists(s->zh, path, maxhold_watcher, s,
				 maxhold_on_exists, slot) == ZOK) {
			pthread_mutex_unlock(&s->lock);
			return; /* still loading */
		}
	}
	maxhold_loaded_locked(s, rc == ZOK && err == 0);
	pthread_mutex_unlock(&s->lock);
}

static void maxhold_load_locked(struct zkl_session *s)
{
	char path[NAMES_MAX_NODE_PATH + sizeof(MAXHOLD_NODE) + 1];

	ZKL_ASSERT_HELD(&s->lock);
	if (s->maxhold_loading) {
		s->maxhold_again = 1;
		return;
	}
	maxhold_path(s, path, sizeof(path));
	if (zoo_awget(s->zh, path, maxhold_watcher, s, maxhold_on_got,
		      &s->mh[s->mh_slot]) == ZOK)
		s->maxhold_loading = 1;
}

void session_maxhold_new_handle_locked(struct zkl_session *s)
{
	ZKL_ASSERT_HELD(&s->lock);
	/* The old handle's replies may never come (zookeeper_close drops
	 * them): nothing waits for them any more. */
	s->mh[0].s = s->mh[1].s = s;
	s->mh_slot ^= 1;
	s->maxhold_loading = s->maxhold_again = 0;
	s->maxhold_current = 0;
}

void session_maxhold_connected_locked(struct zkl_session *s)
{
	s->maxhold_current = 0; /* changes may have gone unseen meanwhile */
	maxhold_load_locked(s);
}

/* dir's name relative to the base, or NULL if it is not under it. */
static const char *maxhold_res_of(const struct zkl_session *s, const char *dir)
{
	size_t n = strlen(s->base);

	if (strncmp(dir, s->base, n) != 0 || dir[n] != '/')
		return NULL;
	return dir + n + 1;
}

unsigned session_maxhold_of_locked(struct zkl_session *s, const char *dir)
{
	const char *res = maxhold_res_of(s, dir);

	ZKL_ASSERT_HELD(&s->lock);
	return res ? maxhold_table_lookup(&s->maxhold, res) : 0;
}

unsigned session_maxhold(struct zkl_session *s, const char *dir)
{
	unsigned secs;

	pthread_mutex_lock(&s->lock);
	secs = session_maxhold_of_locked(s, dir);
	pthread_mutex_unlock(&s->lock);
	return secs;
}

static int64_t maxhold_wall_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* The server stamped ctime_ms on a node we created, before its reply
 * came: the server's clock now is at least that stamp plus the time since
 * the reply, on a clock no one steps (this host's wall clock may be set
 * at any time: by NTP, by hand). */
void session_note_server_time_locked(struct zkl_session *s, int64_t ctime_ms)
{
	ZKL_ASSERT_HELD(&s->lock);
	s->server_stamp_ms = ctime_ms;
	s->server_stamp_at = session_clock_now();
}

int64_t session_server_now_ms(struct zkl_session *s)
{
	int64_t stamp, at;

	pthread_mutex_lock(&s->lock);
	stamp = s->server_stamp_ms;
	at = s->server_stamp_at;
	pthread_mutex_unlock(&s->lock);
	if (stamp == 0) /* no node created yet: only our clock knows */
		return maxhold_wall_ms();
	return stamp + (session_clock_now() - at);
}
