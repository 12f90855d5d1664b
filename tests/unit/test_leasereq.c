/*
 * A lease request (one of N) against a scripted ZooKeeper: the limit is
 * read with the listing, a grant marks the node, the first waiter watches
 * every holder and the others their predecessor for its deletion or mark,
 * and a change of the limit makes the waiters look again.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fake_zk.h"
#include "internal.h"
#include "lockreq.h"

#define L(n) "_c_0123abcd-0000-4000-8000-00000000000" #n "-lease-000000000" #n
#define W1 "_c_0123abcd-0000-4000-8000-0000000000aa-write-0000000001"

static struct zkl_session *s;
static char my_name[256];

static void setup(void)
{
	s = fake_session();
}

static void teardown(void)
{
	fake_session_free(s);
}

TestSuite(leasereq, .init = setup, .fini = teardown);

static struct zkl_lockreq *start(unsigned flags)
{
	struct zkl_lockreq *lr;

	cr_assert_eq(lockreq_new(s, "/b/r", ZKL_MODE_LEASE, flags, "id", 2,
				 fake_on_done, NULL, &lr),
		     0);
	cr_assert_eq(lockreq_start(lr), 0);
	cr_assert_eq(fake_pending(), 3,
		     "create, the limit's get and the listing are pipelined");
	return lr;
}

/* Complete the create with sequence 9 (behind every L(n)). */
static void created(void)
{
	const char *path = fake_peek(FAKE_CREATE)->path;

	snprintf(my_name, sizeof(my_name), "%s0000000009",
		 strrchr(path, '/') + 1);
	cr_assert(strstr(my_name, "-lease-"), "%s", my_name);
	fake_complete_create(ZOK, "0000000009", 1009);
}

/* The limit's get and then the listing: names ahead of ours. */
static void listed(const char *limit, const char *const *ahead, int n)
{
	const char *names[8];

	cr_assert_str_eq(fake_peek(FAKE_GET)->path, "/b/r",
			 "the limit is read from the resource's data");
	fake_complete_get_data(ZOK, limit, 1);
	for (int i = 0; i < n; i++)
		names[i] = ahead[i];
	names[n] = my_name;
	fake_complete_children(ZOK, names, n + 1);
}

/* The next call is the get that watches `name`: answer it with rc and,
 * if the node is there, its version. */
static void get_of(const char *name, int rc, int32_t version)
{
	struct fake_call *c = fake_peek(FAKE_GET);

	cr_assert(strstr(c->path, name), "watches %s, expected %s", c->path,
		  name);
	fake_complete_get_data(rc, rc == ZOK ? "id" : NULL, version);
}

/* The grant's mark: our own data set again, only over version 0. */
static void expect_mark(void)
{
	struct fake_call *c = fake_peek(FAKE_SET);

	cr_assert(strstr(c->path, my_name), "sets %s", c->path);
	cr_assert_eq(c->version, 0, "a mark must not overwrite a note");
	fake_complete_set(ZOK);
}

static void release(struct zkl_lockreq *lr)
{
	lockreq_release(lr);
	cr_assert(strstr(fake_peek(FAKE_DELETE)->path, my_name));
	fake_complete_void(FAKE_DELETE, ZOK);
	cr_assert_eq(fake_pending(), 0, "nothing else sent");
}

/* Granted at once: marked, its own node watched, then returned. */
static void held_then_release(struct zkl_lockreq *lr)
{
	cr_assert_eq(fake_done_err, 0);
	expect_mark();
	fake_complete_own_watch(my_name);
	release(lr);
}

/* Granted after a wait, its own node watched since: marked, returned. */
static void waited_held_then_release(struct zkl_lockreq *lr)
{
	cr_assert_eq(fake_done_err, 0);
	expect_mark();
	release(lr);
}

Test(leasereq, fewer_than_the_limit_ahead_is_granted_and_marked)
{
	static const char *const ahead[] = { L(1), W1 };
	struct zkl_lockreq *lr = start(0);

	created();
	listed("2", ahead, 2);
	cr_assert_eq(fake_done_calls, 1,
		     "one lease and a writer ahead, limit 2");
	held_then_release(lr);
}

Test(leasereq, no_data_means_a_limit_of_one)
{
	static const char *const ahead[] = { L(1) };
	struct zkl_lockreq *lr = start(LOCKREQ_TRY);

	created();
	listed("", ahead, 1);
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_eq(fake_done_err, -EAGAIN, "a try behind one lease of one");
	release(lr);
}

Test(leasereq, data_that_is_not_a_limit_fails_the_lease)
{
	struct zkl_lockreq *lr = start(0);

	created();
	listed("five", NULL, 0);
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_eq(fake_done_err, -EIO);
	release(lr);
}

Test(leasereq, the_first_waiter_watches_every_holder_ahead)
{
	static const char *const ahead[] = { L(1), W1, L(2) };
	struct zkl_lockreq *lr = start(0);

	created();
	listed("2", ahead, 3);
	cr_assert_eq(fake_done_calls, 0, "two leases ahead, limit 2");
	fake_complete_own_watch(my_name); /* before any wait's */
	get_of(L(1), ZOK, 1);
	get_of(L(2), ZOK, 1);
	cr_assert_eq(fake_pending(), 0, "not the writer");
	fake_fire_watch("/b/r/" L(2));
	cr_assert_eq(fake_done_calls, 1, "either holder's return grants it");
	waited_held_then_release(lr);
}

Test(leasereq, a_later_waiter_watches_its_predecessor_for_its_mark)
{
	static const char *const ahead[] = { L(1), L(2) };
	struct zkl_lockreq *lr = start(0);

	created();
	listed("1", ahead, 2);
	cr_assert_eq(fake_done_calls, 0);
	fake_complete_own_watch(my_name);
	get_of(L(2), ZOK, 0);
	cr_assert_eq(fake_pending(), 0, "only its predecessor, not granted");
	/* L(1) returns, L(2) is granted and marks itself. */
	fake_fire_watch_event(ZOO_CHANGED_EVENT, "/b/r/" L(2));
	cr_assert_eq(fake_done_calls, 0);
	cr_assert_eq(fake_pending(), 2,
		     "now the first waiter: every lease ahead, with no "
		     "listing (L(1) is still in the view)");
	get_of(L(1), ZNONODE, 0);
	cr_assert_eq(fake_done_calls, 0,
		     "L(1) has gone, L(2) holds the one lease");
	get_of(L(2), ZOK, 1);
	cr_assert_eq(fake_pending(), 0);
	fake_fire_watch("/b/r/" L(2));
	cr_assert_eq(fake_done_calls, 1);
	waited_held_then_release(lr);
}

Test(leasereq, a_mark_seen_in_the_reply_counts_as_a_grant)
{
	static const char *const ahead[] = { L(1), L(2), L(3) };
	struct zkl_lockreq *lr = start(0);

	created();
	listed("2", ahead, 3);
	fake_complete_own_watch(my_name);
	get_of(L(3), ZOK, 1);
	cr_assert_eq(fake_done_calls, 0);
	cr_assert_eq(fake_pending(), 2,
		     "L(3) was granted already (N lowered under it): every "
		     "lease ahead is watched (L(3)'s watch is set already)");
	get_of(L(1), ZOK, 1);
	get_of(L(2), ZOK, 1);
	cr_assert_eq(fake_pending(), 0,
		     "a holder's version is no news to the first waiter");
	fake_fire_watch("/b/r/" L(1));
	cr_assert_eq(fake_done_calls, 0, "two ahead, limit 2");
	cr_assert_eq(fake_pending(), 0, "the other two are watched already");
	fake_fire_watch("/b/r/" L(3));
	cr_assert_eq(fake_done_calls, 1, "one ahead, limit 2");
	waited_held_then_release(lr);
}

Test(leasereq, a_new_limit_makes_the_waiters_look_again)
{
	static const char *const ahead[] = { L(1), L(2) };
	struct zkl_lockreq *lr = start(0);

	created();
	listed("1", ahead, 2);
	fake_complete_own_watch(my_name);
	get_of(L(2), ZOK, 0);
	fake_fire_watch_event(ZOO_CHANGED_EVENT, "/b/r");
	cr_assert_eq(fake_pending(), 2, "the limit and a listing");
	listed("3", ahead, 2);
	cr_assert_eq(fake_done_calls, 1, "raised to 3: granted");
	waited_held_then_release(lr);
}

Test(leasereq, a_lost_mark_is_made_again_on_reconnection)
{
	struct zkl_lockreq *lr = start(0);

	created();
	listed("1", NULL, 0);
	cr_assert_eq(fake_done_calls, 1);
	fake_zoo_state = ZOO_CONNECTING_STATE;
	fake_complete_set(ZCONNECTIONLOSS);
	cr_assert_eq(fake_pending(), 0, "nothing until connected");
	fake_zoo_state = ZOO_CONNECTED_STATE;
	/* The held node's watch, due a moment after the grant, comes with
	 * the mark made again. */
	cr_assert_eq(fake_run_due(s), 1);
	expect_mark();
	fake_complete_own_watch(my_name);
	release(lr);
}

Test(leasereq, the_own_watch_due_while_the_mark_is_on_its_way_marks_once)
{
	struct zkl_lockreq *lr = start(0);

	created();
	listed("1", NULL, 0);
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_eq(fake_pending(), 1, "the mark");
	/* The held node's watch falls due before the mark is answered (a
	 * slow server): it sets the watch, and the mark is not sent twice. */
	cr_assert_eq(fake_run_due(s), 1);
	cr_assert_eq(fake_pending(), 2, "the mark and the own watch's get");
	expect_mark();
	fake_complete_own_watch(my_name);
	release(lr);
}

Test(leasereq, a_limit_lost_with_the_connection_fails_no_other_waiter)
{
	static const char *const ahead[] = { L(1) };
	struct zkl_lockreq *a = start(0), *b;
	char name_a[256];

	created();
	strcpy(name_a, my_name);
	listed("1", ahead, 1);
	fake_complete_own_watch(name_a);
	get_of(L(1), ZOK, 1); /* a waits for the one lease ahead */
	/* b's create, limit and listing are in flight when the connection
	 * drops: all three are lost. */
	b = start(0);
	fake_zoo_state = ZOO_CONNECTING_STATE;
	fake_complete_create(ZCONNECTIONLOSS, "", 0);
	fake_complete_get_data(ZCONNECTIONLOSS, NULL, 0);
	fake_complete_children(ZCONNECTIONLOSS, NULL, 0);
	cr_assert_eq(fake_done_calls, 0, "b waits for the connection");
	fake_zoo_state = ZOO_CONNECTED_STATE;
	/* Meanwhile L(1) was returned: a is next, whatever b's get said. */
	fake_fire_watch("/b/r/" L(1));
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_eq(fake_done_err, 0, "a was failed by b's lost get");
	strcpy(my_name, name_a);
	expect_mark();
	lockreq_cancel(b);
	lockreq_release(b);
	release(a);
	/* Reconnected: b looks for a node of its own, finds none, and ends. */
	fake_resume_all(s);
	fake_complete_get_data(ZOK, "1", 1);
	fake_complete_children(ZOK, NULL, 0);
	cr_assert_eq(fake_pending(), 0);
	cr_assert_eq(fake_done_calls, 1, "a cancelled b is never answered");
}

static void set_jeopardy(int64_t since)
{
	pthread_mutex_lock(&s->lock);
	s->jeopardy_ms = since;
	pthread_mutex_unlock(&s->lock);
}

/* Held back by a jeopardy, its mark and watch lost with the connection:
 * once connected it marks again, though its owner is not told yet (the
 * next waiter of another host must see it granted), and the owner is told
 * when the jeopardy ends. */
Test(leasereq, a_grant_held_back_in_a_jeopardy_is_marked_again_once_connected)
{
	struct zkl_lockreq *lr = start(0);
	struct zkl_jeopardy over = { 0, 2000, 500 };
	struct zkl_link notify;

	set_jeopardy(1000);
	created();
	listed("2", NULL, 0);
	cr_assert_eq(fake_done_calls, 0, "held back");
	pthread_mutex_lock(&s->lock);
	s->state = ZKL_CONN_CONNECTING;
	pthread_mutex_unlock(&s->lock);
	fake_complete_set(ZCONNECTIONLOSS); /* the mark */
	pthread_mutex_lock(&s->lock);
	s->state = ZKL_CONN_CONNECTED;
	pthread_mutex_unlock(&s->lock);
	/* With its own node's watch, due a moment after the grant. */
	cr_assert_eq(fake_run_due(s), 1);
	expect_mark();
	fake_complete_own_watch(my_name);
	cr_assert_eq(fake_done_calls, 0, "still held back");
	set_jeopardy(0); /* and the clock's sweep that follows */
	session_enter(s, &notify);
	for (struct zkl_link *l = s->live.next; l != &s->live; l = l->next)
		member_of_live(l)->ops->jeopardy_locked(member_of_live(l),
							&over, &notify);
	session_leave(s, &notify);
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_eq(fake_done_err, 0);
	release(lr);
}

static void noted(int err, void *arg)
{
	*(int *)arg = err;
}

/* Granted after a wait, its own node watched since: the grant's mark
 * moves its version, and a note right after is set over the new one. */
Test(leasereq, a_note_right_after_a_waited_grant_is_set_over_its_mark)
{
	static const char *const ahead[] = { L(1) };
	struct zkl_lockreq *lr = start(0);
	int err = 1;

	created();
	listed("1", ahead, 1);
	fake_complete_own_watch(my_name); /* version 0 */
	get_of(L(1), ZOK, 1);
	fake_fire_watch("/b/r/" L(1));
	cr_assert_eq(fake_done_calls, 1);
	expect_mark(); /* version 1 now */
	cr_assert_eq(lockreq_set_data(lr, "n\n", 2, noted, &err), 0);
	cr_assert_eq(fake_peek(FAKE_SET)->version, 1,
		     "over the mark's version, not the one its watch read");
	fake_complete_set(ZOK);
	cr_assert_eq(err, 0);
	release(lr);
}

/* Granted at once, a note written (its answer into *err) while the
 * grant's mark is on its way: it waits for the mark's answer. */
static struct zkl_lockreq *noted_before_the_mark(int *err)
{
	struct zkl_lockreq *lr = start(0);

	created();
	listed("1", NULL, 0);
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_eq(lockreq_set_data(lr, "n\n", 2, noted, err), 0);
	cr_assert_eq(fake_pending(), 1, "the note waits for the mark");
	return lr;
}

/* The mark's answer moves the version the note is set over; set before
 * it, the note would always fail (the mark comes first). */
Test(leasereq, a_note_while_the_grant_mark_is_on_its_way_follows_it)
{
	int err = 1;
	struct zkl_lockreq *lr = noted_before_the_mark(&err);

	expect_mark(); /* version 1 now: the note goes */
	cr_assert_eq(fake_peek(FAKE_SET)->version, 1,
		     "over the mark's version");
	fake_complete_set(ZOK);
	cr_assert_eq(err, 0);
	release(lr);
}

/* ... and if something was set before the mark (a revocation ask), the
 * note, set over the create's version, fails EAGAIN: never over data it
 * has not read. */
Test(leasereq, a_note_behind_a_refused_mark_never_overwrites_an_ask)
{
	int err = 1;
	struct zkl_lockreq *lr = noted_before_the_mark(&err);

	fake_complete_set(ZBADVERSION); /* the mark: an ask came first */
	cr_assert_eq(fake_peek(FAKE_SET)->version, 0);
	fake_complete_set(ZBADVERSION);
	cr_assert_eq(err, -EAGAIN);
	release(lr);
}
