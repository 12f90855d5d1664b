/*
 * session_clock.c - the session's clocks: until when the server keeps our
 * session for sure and what is done when that time comes without an
 * answer (jeopardy), the requests resumed at a time, and the server's
 * clock as our creates' replies tell it.
 */
#include "heartbeat.h"
#include "internal.h"
#include "log.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <syslog.h>
#include <time.h>

/*
 * The jeopardy clock's arithmetic (heartbeat.h).
 */
void heartbeat_new_handle(struct heartbeat_proof *p, int64_t now)
{
	p->answered[0] = p->answered[1] = now;
	p->connected_ms = 0;
}

void heartbeat_connected(struct heartbeat_proof *p, int64_t now)
{
	p->connected_ms = now;
}

void heartbeat_answered(struct heartbeat_proof *p, int64_t sent_ms)
{
	if (p->connected_ms != 0 && sent_ms >= p->connected_ms &&
	    p->answered[0] < p->connected_ms) {
		p->answered[0] = p->answered[1] = sent_ms;
		return;
	}
	p->answered[1] = p->answered[0];
	p->answered[0] = sent_ms;
}

int64_t heartbeat_margin(int64_t asked, int64_t timeout_ms)
{
	int64_t quarter = timeout_ms / 4, margin = asked;

	if (margin <= 0) {
		margin = timeout_ms / 10;
		if (margin < HEARTBEAT_MIN_MARGIN_MS)
			margin = HEARTBEAT_MIN_MARGIN_MS;
	}
	return margin < quarter ? margin : quarter;
}

int64_t heartbeat_jeopardy_due(const struct heartbeat_proof *p,
			       int64_t timeout_ms, int64_t margin_ms)
{
	if (p->connected_ms == 0)
		return INT64_MAX;
	return p->answered[1] + timeout_ms - margin_ms;
}

/*
 * Until when the server keeps our session for sure, and
 * what is done when that time comes without an answer (jeopardy).
 *
 * ZooKeeper ends a session no earlier than its timeout after the server
 * last heard from the client, and what the server hears first is what we
 * sent.  So every request we send that is answered proves the session is
 * kept until at least its send time plus the timeout.  Our proof is a
 * heartbeat of our own, a sync every quarter of the timeout (the client's
 * pings are not visible through its API).  A sync rather than a read: a
 * server cut from its ensemble's leader still answers reads for a while,
 * but cannot answer a sync.
 *
 * In an ensemble the leader ends sessions, and the server we talk to
 * passes on what it heard from us with its answers to the leader's pings,
 * every half tick.  The last heartbeat answered may not have been passed
 * on yet; the one before it was: the next heartbeat is sent a quarter of
 * the timeout after the previous one's answer, so the server receives the
 * two at least that far apart, which is at least half a tick (the server's
 * default minSessionTimeout is two ticks: an assumption), and a leader's
 * ping came between them; the answered sync of the later one went through
 * the leader after that ping's answer.  So the session is kept at least
 * until the send time of the heartbeat before the last one answered, plus
 * the timeout.  Connecting, the server creates or revalidates the session
 * through the leader, after we sent the connection request and before
 * the first heartbeat on it: that heartbeat, answered, counts for both
 * (session_clock.c), overstating by the time from the connection request to
 * that send: the handshake's round trip and the delivery of the connected
 * event to us (milliseconds, on a daemon that runs), which the margin
 * covers.  A margin before that (the signal handlers' time, the
 * clocks' drift) every held lock is declared lost: the holder hears it
 * before the server can give its lock to anyone.  A grant that comes
 * meanwhile is told only once the jeopardy ends (lr_tell_locked).
 *
 * Times are CLOCK_BOOTTIME: a suspended host's time passes on the server
 * too.  The thread's waits are on CLOCK_MONOTONIC (all a condition
 * variable takes) and last at most a second, so a resume is seen soon.
 */
/* Wake at least this often whatever is due (see above). */
#define CLOCK_MAX_NAP_MS 1000
/* ... and this often while lost nodes wait for their margin to run. */
#define CLOCK_PENDING_NAP_MS 50

static int64_t clock_ms(clockid_t id)
{
	struct timespec t;

	clock_gettime(id, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

int64_t session_clock_now(void)
{
	return clock_ms(CLOCK_BOOTTIME);
}

/* The negotiated session timeout (the asked one before a connection). */
static int64_t clock_timeout_locked(const struct zkl_session *s)
{
	int t = zoo_recv_timeout(s->zh);

	return t > 0 ? t : s->session_timeout_ms;
}

int64_t session_break_bound_ms_locked(const struct zkl_session *s)
{
	return clock_timeout_locked(s);
}

static int64_t clock_heartbeat_every(const struct zkl_session *s)
{
	return clock_timeout_locked(s) / 4;
}

static int64_t clock_margin_locked(const struct zkl_session *s)
{
	return heartbeat_margin(s->margin_ms, clock_timeout_locked(s));
}

/* When the server may end the session, less the margin. */
static int64_t clock_jeopardy_due_locked(const struct zkl_session *s)
{
	return heartbeat_jeopardy_due(&s->proof, clock_timeout_locked(s),
				      clock_margin_locked(s));
}

static void clock_sweep_locked(struct zkl_session *s, int64_t now,
			       struct zkl_link *notify);

static void clock_on_heartbeat(int rc, const char *value, const void *data)
{
	const struct zkl_heartbeat *hb = data;
	struct zkl_session *s = hb->s;
	struct zkl_link notify;

	(void)value;
	session_enter(s, &notify);
	/* A reply of a handle closed since is not this session's proof. */
	if (hb == &s->hb[s->hb_slot] && s->hb_sent_ms != 0) {
		session_metrics_answered_locked(s, ZKL_OP_SYNC, rc,
						s->hb_sent_us);
		if (rc == ZOK) {
			int64_t now = session_clock_now();
			/* The next one a period after this answer, not after
			 * this send: two heartbeats then reach the server a
			 * period apart at least, with a leader's ping between
			 * them (the argument above needs it). */
			s->hb_next_ms = now + clock_heartbeat_every(s);
			heartbeat_answered(&s->proof, s->hb_sent_ms);
			if (s->jeopardy_ms != 0 &&
			    s->hb_sent_ms > s->jeopardy_ms) {
				s->jeopardy_ms = 0;
				log_msg(LOG_WARNING,
					"ZooKeeper answers again: session "
					"0x%" PRIx64 " lives, but the locks "
					"declared lost stay lost (their nodes "
					"are being deleted)",
					(uint64_t)s->client_id);
				/* Grants held back meanwhile are told now. */
				clock_sweep_locked(s, now, &notify);
			}
		}
		s->hb_sent_ms = 0;
		pthread_cond_broadcast(&s->clock_changed);
	}
	session_leave(s, &notify);
}

static void clock_send_heartbeat_locked(struct zkl_session *s, int64_t now)
{
	assert(s->hb_sent_ms == 0);
	s->hb_sent_ms = now;
	s->hb_sent_us = session_metrics_now_us();
	if (zoo_async(s->zh, s->base, clock_on_heartbeat, &s->hb[s->hb_slot]) !=
	    ZOK)
		s->hb_sent_ms = 0; /* only a dead handle refuses */
}

/* Tell every member; they decide what it means to them. */
static void clock_sweep_locked(struct zkl_session *s, int64_t now,
			       struct zkl_link *notify)
{
	const struct zkl_jeopardy j = {
		.declared = s->jeopardy_ms != 0,
		.now = now,
		.margin = clock_margin_locked(s),
	};

	s->jeopardy_pending = 0;
	for (struct zkl_link *l = s->live.next; l != &s->live;) {
		struct zkl_link *next = l->next;
		struct zkl_member *m = member_of_live(l);
		s->jeopardy_pending += m->ops->jeopardy_locked(m, &j, notify);
		l = next;
	}
}

/* Holders past their resource's limit (holdlimit.c): only while
 * connected (the asks and breaks are requests), never in a jeopardy
 * (every holder is lost then anyway), and only by the table as it is now:
 * a limit removed during an outage must break nothing when it ends. */
static void clock_check_holds_locked(struct zkl_session *s, int64_t now,
				     struct zkl_link *notify)
{
	if (s->maxhold.n == 0 || s->jeopardy_ms != 0 ||
	    !session_is_connected_locked(s) || !s->maxhold_current)
		return;
	for (struct zkl_link *l = s->live.next; l != &s->live; l = l->next) {
		struct zkl_member *m = member_of_live(l);
		if (m->ops->hold_check_locked)
			m->ops->hold_check_locked(m, now, notify);
	}
}

int session_resume_at_locked(struct zkl_session *s, struct zkl_member *m,
			     int64_t due_ms)
{
	ZKL_ASSERT_HELD(&s->lock);
	if (list_linked(&m->resume))
		return 0;
	m->due_ms = due_ms;
	list_add_tail(&s->later, &m->resume);
	/* A wake time past is stale: the clock runs, or its nap (timed on
	 * CLOCK_MONOTONIC) outlasts it after a suspend. */
	if (due_ms < s->clock_wake_ms ||
	    s->clock_wake_ms <= session_clock_now())
		pthread_cond_signal(&s->clock_changed);
	return 1;
}

/* Resume the members whose time has come (once connected); returns the
 * earliest due time of those still waiting, or `due` if it is earlier. */
static int64_t clock_resume_due_locked(struct zkl_session *s, int64_t now,
				       int64_t due, struct zkl_link *notify)
{
	struct zkl_link ready;

	/* The due ones first onto a list of their own: a member's resume may
	 * take another off (a request's end ends its deadlock check's
	 * timer), which a walk of s->later would then step on. */
	list_init(&ready);
	for (struct zkl_link *l = s->later.next; l != &s->later;) {
		struct zkl_link *next = l->next;
		struct zkl_member *m =
			ZKL_CONTAINER_OF(l, struct zkl_member, resume);
		if (m->due_ms <= now) {
			list_del(l);
			list_add_tail(&ready, l);
		} else if (m->due_ms < due) {
			due = m->due_ms;
		}
		l = next;
	}
	while (!list_empty(&ready)) {
		struct zkl_link *l = ready.next;

		list_del(l);
		session_resume_when_connected_locked(
			s, ZKL_CONTAINER_OF(l, struct zkl_member, resume),
			notify);
	}
	return due;
}

static void clock_declare_locked(struct zkl_session *s, int64_t now,
				 struct zkl_link *notify)
{
	s->jeopardy_ms = now;
	s->jeopardy_wall_ms = clock_ms(CLOCK_REALTIME);
	s->jeopardies++;
	log_msg(LOG_WARNING,
		"ZooKeeper has answered no heartbeat sent in the last "
		"%" PRId64 " ms: session 0x%" PRIx64 " may end in %" PRId64
		" ms, so every lock held here is treated as lost now "
		"(jeopardy); waiters keep their place",
		now - s->proof.answered[0], (uint64_t)s->client_id,
		s->proof.answered[1] + clock_timeout_locked(s) - now);
	clock_sweep_locked(s, now, notify);
}

/* Sleep until `due` (CLOCK_BOOTTIME ms) at most, or a change. */
static void clock_nap_locked(struct zkl_session *s, int64_t now, int64_t due)
{
	int64_t ms = due - now;
	int64_t until;
	struct timespec t;

	if (ms > CLOCK_MAX_NAP_MS)
		ms = CLOCK_MAX_NAP_MS;
	if (ms < 1)
		ms = 1;
	s->clock_wake_ms = now + ms;
	until = clock_ms(CLOCK_MONOTONIC) + ms;
	t.tv_sec = until / 1000;
	t.tv_nsec = (until % 1000) * 1000000L;
	pthread_cond_timedwait(&s->clock_changed, &s->lock, &t);
}

static void *clock_run(void *arg)
{
	struct zkl_session *s = arg;
	struct zkl_link notify;

	session_enter(s, &notify);
	while (!s->closing) {
		int64_t now = session_clock_now();
		int64_t next_hb = s->hb_next_ms;
		int64_t due, later;

		if (s->hb_sent_ms == 0 && now >= next_hb &&
		    session_is_connected_locked(s))
			clock_send_heartbeat_locked(s, now);
		/* A session that ended lost its locks with it. */
		if (s->state != ZKL_CONN_EXPIRED && !s->dead) {
			due = clock_jeopardy_due_locked(s);
			if (s->jeopardy_ms == 0 && now >= due)
				clock_declare_locked(s, now, &notify);
			else if (s->jeopardy_ms != 0 || s->jeopardy_pending)
				/* a grant to lose; nodes whose margin ran */
				clock_sweep_locked(s, now, &notify);
		}
		clock_check_holds_locked(s, now, &notify);
		later = clock_resume_due_locked(s, now, INT64_MAX, &notify);
		if (!list_empty(&notify)) {
			session_leave(s, &notify);
			session_enter(s, &notify);
			continue;
		}
		due = s->jeopardy_ms == 0 ? clock_jeopardy_due_locked(s)
					  : now + CLOCK_MAX_NAP_MS;
		if (s->jeopardy_pending && due > now + CLOCK_PENDING_NAP_MS)
			due = now + CLOCK_PENDING_NAP_MS;
		/* A heartbeat due is a reason to wake only if it can be
		 * sent: while disconnected its time is past, and waking for
		 * it spun the thread every millisecond of an outage.  The
		 * connection's return wakes us (clock_changed). */
		if (s->hb_sent_ms == 0 && next_hb < due &&
		    session_is_connected_locked(s))
			due = next_hb;
		if (later < due)
			due = later;
		clock_nap_locked(s, now, due);
	}
	session_leave(s, &notify);
	return NULL;
}

void session_clock_new_handle_locked(struct zkl_session *s)
{
	int64_t now = session_clock_now();

	ZKL_ASSERT_HELD(&s->lock);
	/* Called before the handle is made: its session is created after
	 * now, and lasts a timeout from then at least.  A heartbeat of the
	 * old handle proves nothing of it. */
	heartbeat_new_handle(&s->proof, now);
	s->hb_sent_ms = 0;
	s->hb_next_ms = 0;
	s->hb_slot ^= 1;
	s->jeopardy_ms = 0;
	s->jeopardy_pending = 0; /* the old session's nodes are gone */
	pthread_cond_broadcast(&s->clock_changed);
}

void session_clock_connected_locked(struct zkl_session *s)
{
	ZKL_ASSERT_HELD(&s->lock);
	/* A heartbeat at once (if none is in flight): after a reconnection
	 * its answer is the proof that the session lives. */
	heartbeat_connected(&s->proof, session_clock_now());
	s->hb_next_ms = 0;
	pthread_cond_broadcast(&s->clock_changed);
}

void session_count_grant_locked(struct zkl_session *s)
{
	ZKL_ASSERT_HELD(&s->lock);
	/* Never in a jeopardy: grants are held back then (lr_tell_locked). */
	assert(s->jeopardy_ms == 0);
	s->grants++;
}

void session_clock_stats_locked(const struct zkl_session *s,
				struct zkl_session_stats *st)
{
	st->jeopardy = s->jeopardy_ms != 0;
	st->jeopardies = s->jeopardies;
	st->jeopardy_wall_ms = s->jeopardy_wall_ms;
	st->margin_ms = (int)clock_margin_locked(s);
	st->heartbeat_age_ms = session_clock_now() - s->proof.answered[0];
}

void session_clock_init(struct zkl_session *s, int margin_ms)
{
	pthread_condattr_t attr;

	s->hb[0].s = s->hb[1].s = s;
	s->margin_ms = margin_ms;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&s->clock_changed, &attr);
	pthread_condattr_destroy(&attr);
}

void session_clock_destroy(struct zkl_session *s)
{
	pthread_cond_destroy(&s->clock_changed);
}

int session_clock_start(struct zkl_session *s)
{
	int err = pthread_create(&s->clock, NULL, clock_run, s);

	if (err == 0) /* for top -H, and the tests that watch it */
		pthread_setname_np(s->clock, "zkl-clock");
	return -err;
}

void session_clock_stop(struct zkl_session *s)
{
	struct zkl_link notify;
	session_enter(s, &notify);
	assert(s->closing);
	pthread_cond_broadcast(&s->clock_changed);
	session_leave(s, &notify);
	pthread_join(s->clock, NULL);
}

/* ---- the server's clock ---------------------------------------------- */

static int64_t clock_wall_ms(void)
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
	struct zkl_link notify;
	int64_t stamp, at;

	session_enter(s, &notify);
	stamp = s->server_stamp_ms;
	at = s->server_stamp_at;
	session_leave(s, &notify);
	if (stamp == 0) /* no node created yet: only our clock knows */
		return clock_wall_ms();
	return stamp + (session_clock_now() - at);
}
