/*
 * Jeopardy (recipes/session_clock.c) as a lock request sees it: the
 * session's members are told that the server may end the session before
 * it answers again.  A holder is lost at once (told once, EIO) and its
 * node deleted as soon as ZooKeeper answers; a waiter keeps its place; an
 * expiry afterwards reports nothing twice.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fake_zk.h"
#include "holders.h"
#include "internal.h"
#include "lockreq.h"

static struct zkl_session *s;
static char my_name[256];
static int lost_calls;
static char lost_why[160];

static void on_lost(const char *node, const char *why, const void *data,
		    size_t len, void *arg)
{
	(void)node;
	(void)data;
	(void)len;
	(void)arg;
	lost_calls++;
	snprintf(lost_why, sizeof(lost_why), "%s", why);
}

static void setup(void)
{
	s = fake_session();
	lost_calls = 0;
	session_set_lost_hook(s, on_lost, NULL);
}

static void teardown(void)
{
	fake_session_free(s);
}

TestSuite(jeopardy, .init = setup, .fini = teardown);

/* A write request on /b/r, created with sequence seq and listed after
 * `ahead` (NULL: first).  Granted if first; its name in my_name. */
static struct zkl_lockreq *queued(int seq, const char *ahead)
{
	struct zkl_lockreq *lr;
	char suffix[16];
	const char *names[2];

	cr_assert_eq(lockreq_new(s, "/b/r", ZKL_MODE_WRITE, 0, "id", 2,
				 fake_on_done, NULL, &lr),
		     0);
	cr_assert_eq(lockreq_start(lr), 0);
	snprintf(suffix, sizeof(suffix), "%010d", seq);
	snprintf(my_name, sizeof(my_name), "%s%s",
		 strrchr(fake_peek(FAKE_CREATE)->path, '/') + 1, suffix);
	fake_complete_create(ZOK, suffix, 1000 + seq);
	names[0] = ahead ? ahead : my_name;
	names[1] = my_name;
	fake_complete_children(ZOK, names, ahead ? 2 : 1);
	if (ahead) /* a waiter watches its own node first */
		fake_complete_own_watch(my_name);
	return lr;
}

#define MARGIN 500

/* A sweep of session_clock.c's at time `now`; returns how many nodes wait
 * for their margin. */
static int sweep(int declared, int64_t now)
{
	const struct zkl_jeopardy j = { declared, now, MARGIN };
	struct zkl_link notify;
	int pending = 0;

	session_enter(s, &notify);
	for (struct zkl_link *l = s->live.next, *n; l != &s->live; l = n) {
		n = l->next;
		struct zkl_member *m = member_of_live(l);
		pending += m->ops->jeopardy_locked(m, &j, &notify);
	}
	session_leave(s, &notify);
	return pending;
}

/* Declared at time 1000, and the margin run. */
static void declare_jeopardy(void)
{
	sweep(1, 1000);
	sweep(1, 1000 + MARGIN);
}

static void disconnect(void)
{
	s->state = ZKL_CONN_CONNECTING;
	fake_zoo_state = ZOO_CONNECTING_STATE;
}

static void reconnect(void)
{
	s->state = ZKL_CONN_CONNECTED;
	fake_zoo_state = ZOO_CONNECTED_STATE;
	fake_resume_all(s);
}

Test(jeopardy, a_holder_is_lost_at_once_and_its_node_goes_once_connected)
{
	struct zkl_lockreq *lr = queued(1, NULL);
	char held[256], path[256];
	int64_t token, sid;

	strcpy(held, my_name);
	fake_complete_own_watch(held);
	cr_assert_eq(lockreq_holds(lr), 1);
	disconnect();
	declare_jeopardy();
	cr_assert_eq(lost_calls, 1, "the owner is told once");
	cr_assert(strstr(lost_why, "(jeopardy)"), "%s", lost_why);
	cr_assert_eq(lockreq_holds(lr), 0);
	cr_assert_eq(lockreq_describe(lr, &token, path, sizeof(path), &sid),
		     -EIO, "a lost lock reads as EIO");
	cr_assert_eq(s->losses, 1);
	cr_assert_eq(fake_pending(), 0, "nothing is sent while disconnected");
	cr_assert_eq(sweep(1, 2000), 0, "the clock sweeps again: nothing new");
	cr_assert_eq(lost_calls, 1);
	/* The session lived: the node goes at once, the owner still holding
	 * its descriptor, so that the next waiter gets the lock. */
	reconnect();
	fake_expect_delete_of(held);
	cr_assert_eq(fake_pending(), 0);
	lockreq_release(lr);
	cr_assert_eq(fake_pending(), 0, "deleted already");
	cr_assert_eq(lost_calls, 1);
}

Test(jeopardy, a_holder_whose_server_hangs_connected_has_its_delete_queued)
{
	struct zkl_lockreq *lr = queued(1, NULL);
	char held[256];

	strcpy(held, my_name);
	fake_complete_own_watch(held);
	/* The client still believes it is connected: the delete is queued
	 * now, and reaches the server when it answers again. */
	declare_jeopardy();
	cr_assert_eq(lost_calls, 1);
	fake_expect_delete_of(held);
	lockreq_release(lr);
	cr_assert_eq(fake_pending(), 0);
}

Test(jeopardy, the_node_stays_for_the_margin_so_the_holder_may_act_first)
{
	struct zkl_lockreq *lr = queued(1, NULL);
	char held[256];

	strcpy(held, my_name);
	fake_complete_own_watch(held);
	cr_assert_eq(sweep(1, 1000), 1, "lost, its node waits");
	cr_assert_eq(lost_calls, 1);
	cr_assert_eq(fake_pending(), 0, "connected, yet nothing is deleted");
	cr_assert_eq(sweep(0, 1000 + MARGIN - 1), 1, "the jeopardy ended");
	cr_assert_eq(fake_pending(), 0, "still within the margin");
	cr_assert_eq(sweep(0, 1000 + MARGIN), 0);
	fake_expect_delete_of(held);
	cr_assert_eq(lost_calls, 1);
	lockreq_release(lr);
	cr_assert_eq(fake_pending(), 0);
}

static int holders_calls;
static char holders_states[2][16];

static void on_holders(int err, const struct holders_node *nodes, size_t n,
		       const struct holders_semaphore *sem, void *arg)
{
	(void)sem;
	(void)arg;
	cr_assert_eq(err, 0);
	cr_assert_eq(n, 2);
	holders_calls++;
	for (size_t i = 0; i < n; i++)
		strcpy(holders_states[i], nodes[i].lost ? "lost"
					  : nodes[i].state == HOLDERS_HELD
						  ? "held"
						  : "waiting");
}

Test(jeopardy, holders_shows_a_lost_node_still_there_as_lost)
{
	struct zkl_lockreq *lr = queued(1, NULL);
	char held[256];
	const char *names[2] = { NULL, "_c_0123abcd-0000-4000-8000-"
				       "00000000000f-write-0000000002" };

	strcpy(held, my_name);
	names[0] = held;
	fake_complete_own_watch(held);
	cr_assert_eq(sweep(1, 1000), 1, "lost, its node kept for the margin");
	cr_assert_eq(holders_start(s, "/b/r", on_holders, NULL), 0);
	fake_complete_children(ZOK, names, 2);
	fake_complete_read(ZOK, "pid 1\n", 1001, 0);
	fake_complete_read(ZOK, "pid 2\n", 1002, 0);
	cr_assert_eq(holders_calls, 1);
	cr_assert_str_eq(holders_states[0], "lost");
	cr_assert_str_eq(holders_states[1], "waiting",
			 "another host's waiter still waits for the node");
	cr_assert_eq(sweep(0, 1000 + MARGIN), 0);
	fake_expect_delete_of(held);
	lockreq_release(lr);
}

Test(jeopardy, a_grant_after_the_jeopardy_ended_is_kept)
{
	struct zkl_lockreq *lr = queued(1, NULL);

	fake_complete_own_watch(my_name);
	cr_assert_eq(sweep(0, 1000), 0);
	cr_assert_eq(lost_calls, 0);
	cr_assert_eq(lockreq_holds(lr), 1);
	lockreq_release(lr);
	fake_expect_delete_of(my_name);
}

Test(jeopardy, a_release_within_the_margin_deletes_at_once)
{
	struct zkl_lockreq *lr = queued(1, NULL);
	char held[256];

	strcpy(held, my_name);
	fake_complete_own_watch(held);
	cr_assert_eq(sweep(1, 1000), 1);
	lockreq_release(lr); /* the holder acted: nobody to wait for */
	fake_expect_delete_of(held);
	cr_assert_eq(sweep(0, 1000 + MARGIN), 0);
	cr_assert_eq(fake_pending(), 0, "deleted once");
}

Test(jeopardy, a_waiter_keeps_its_place)
{
	struct zkl_lockreq *holder = queued(1, NULL);
	struct zkl_lockreq *waiter;
	char held[256], full[300];

	strcpy(held, my_name);
	fake_complete_own_watch(held);
	waiter = queued(2, held);
	cr_assert_eq(fake_pending(), 0, "the holder's watch serves it");
	disconnect();
	declare_jeopardy();
	cr_assert_eq(lost_calls, 1, "the holder only");
	cr_assert_eq(lockreq_holds(waiter), 0);
	cr_assert_eq(fake_done_calls, 1, "the waiter is told nothing");
	reconnect();
	fake_expect_delete_of(held); /* the lost holder's node goes ... */
	snprintf(full, sizeof(full), "/b/r/%s", held);
	fake_fire_watch(full); /* ... and the waiter, in place, holds */
	cr_assert_eq(fake_done_calls, 2);
	cr_assert_eq(fake_done_err, 0);
	cr_assert_eq(lockreq_holds(waiter), 1);
	lockreq_release(holder);
	lockreq_release(waiter);
	fake_expect_delete_of(my_name);
	cr_assert_eq(fake_pending(), 0);
}

static void set_jeopardy(int64_t since)
{
	pthread_mutex_lock(&s->lock);
	s->jeopardy_ms = since;
	pthread_mutex_unlock(&s->lock);
}

/* A holder lost in a jeopardy, and the waiter behind it granted by the
 * holder's node going while the jeopardy is still declared (the watch
 * fires on reconnection, before the heartbeat's answer ends it). */
static struct zkl_lockreq *granted_in_jeopardy(struct zkl_lockreq **holder)
{
	struct zkl_lockreq *waiter;
	char held[256], full[300];

	*holder = queued(1, NULL);
	strcpy(held, my_name);
	fake_complete_own_watch(held);
	waiter = queued(2, held);
	disconnect();
	declare_jeopardy();
	set_jeopardy(1000);
	reconnect();
	fake_expect_delete_of(held);
	snprintf(full, sizeof(full), "/b/r/%s", held);
	fake_fire_watch(full);
	return waiter;
}

Test(jeopardy, a_grant_while_declared_is_told_when_it_ends_not_lost)
{
	struct zkl_lockreq *holder;
	struct zkl_lockreq *waiter = granted_in_jeopardy(&holder);

	cr_assert_eq(fake_done_calls, 1, "held back: nothing told yet");
	cr_assert_eq(lockreq_holds(waiter), 0);
	cr_assert_eq(sweep(1, 1600), 0, "declared still: nothing changes");
	cr_assert_eq(fake_done_calls, 1);
	set_jeopardy(0); /* a heartbeat sent after it was answered */
	sweep(0, 2000);
	cr_assert_eq(fake_done_calls, 2);
	cr_assert_eq(fake_done_err, 0);
	cr_assert_eq(lockreq_holds(waiter), 1);
	cr_assert_eq(lost_calls, 1, "the holder only: the waiter kept it");
	lockreq_release(holder);
	lockreq_release(waiter);
	fake_expect_delete_of(my_name);
	cr_assert_eq(fake_pending(), 0);
}

Test(jeopardy, a_grant_held_back_is_never_told_if_the_session_ends)
{
	struct zkl_lockreq *holder;
	struct zkl_lockreq *waiter = granted_in_jeopardy(&holder);
	struct zkl_link lost;
	char suffix[16];
	const char *names[1];

	fake_expire(s, 1, &lost);
	cr_assert(list_empty(&lost), "the holder was reported already");
	fake_free_lost(&lost);
	cr_assert_eq(fake_done_calls, 1, "the waiter is told nothing");
	set_jeopardy(0); /* a new handle */
	reconnect();
	/* It queues again on the new session, and holds there. */
	snprintf(suffix, sizeof(suffix), "%010d", 7);
	snprintf(my_name, sizeof(my_name), "%s%s",
		 strrchr(fake_peek(FAKE_CREATE)->path, '/') + 1, suffix);
	fake_complete_create(ZOK, suffix, 2007);
	names[0] = my_name;
	fake_complete_children(ZOK, names, 1);
	cr_assert_eq(fake_done_calls, 2);
	cr_assert_eq(fake_done_err, 0);
	fake_complete_own_watch(my_name);
	lockreq_release(holder);
	lockreq_release(waiter);
	fake_expect_delete_of(my_name);
	cr_assert_eq(fake_pending(), 0);
}

Test(jeopardy, an_expiry_after_it_reports_nothing_twice)
{
	struct zkl_lockreq *lr = queued(1, NULL);
	struct zkl_link lost;

	fake_complete_own_watch(my_name);
	disconnect();
	declare_jeopardy();
	cr_assert_eq(lost_calls, 1);
	fake_expire(s, 1, &lost);
	cr_assert(list_empty(&lost), "reported once, in the jeopardy");
	cr_assert_eq(s->losses, 1);
	lockreq_release(lr);
	cr_assert_eq(fake_pending(), 0, "its node went with the session");
}
