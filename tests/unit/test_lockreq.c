/*
 * The lock request state machine against a scripted ZooKeeper: grant,
 * cancel, interrupt races, errors, connection loss and expiry each give
 * exactly one answer, and every node the request created is deleted.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fake_zk.h"
#include "holders.h"
#include "internal.h"
#include "lockreq.h"

#define OTHER "_c_0123abcd-0000-4000-8000-00000000000f-write-0000000001"

static struct zkl_session *s;
static char my_name[256]; /* our node's child name once created */

static void setup(void)
{
	s = fake_session();
}

static void teardown(void)
{
	fake_session_free(s);
}

TestSuite(lockreq, .init = setup, .fini = teardown);

static struct zkl_lockreq *start(enum zkl_mode mode, unsigned flags)
{
	struct zkl_lockreq *lr;

	cr_assert_eq(lockreq_new(s, "/b/r", mode, flags, "id", 2, fake_on_done,
				 NULL, &lr),
		     0);
	cr_assert_eq(lockreq_start(lr), 0);
	cr_assert_eq(fake_pending(), 2, "create and listing are pipelined");
	return lr;
}

/* Complete the create with sequence seq; remember our child name. */
static void created(int seq)
{
	char suffix[16];
	const char *path = fake_peek(FAKE_CREATE)->path;

	snprintf(suffix, sizeof(suffix), "%010d", seq);
	snprintf(my_name, sizeof(my_name), "%s%s", strrchr(path, '/') + 1,
		 suffix);
	fake_complete_create(ZOK, suffix, 1000 + seq);
}

static void listed_with(const char *first, const char *second)
{
	const char *names[2] = { first, second };

	fake_complete_children(ZOK, names, second ? 2 : 1);
}

static void expect_delete_of_mine(void)
{
	struct fake_call *c = fake_peek(FAKE_DELETE);

	cr_assert(strstr(c->path, my_name), "deletes %s, expected our %s",
		  c->path, my_name);
	fake_complete_void(FAKE_DELETE, ZOK);
}

Test(lockreq, first_in_queue_is_granted_once_and_release_deletes)
{
	struct zkl_lockreq *lr = start(ZKL_MODE_WRITE, 0);
	int64_t token, sid;
	char path[256];

	created(1);
	listed_with(my_name, NULL);
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_eq(fake_done_err, 0);
	fake_complete_own_watch(my_name);
	cr_assert_eq(lockreq_describe(lr, &token, path, sizeof(path), &sid), 0);
	cr_assert_eq(token, 1001, "the token is the node's czxid");
	cr_assert_eq(sid, 77);
	cr_assert_eq(lockreq_cancel(lr), -EALREADY, "cancel after grant loses");
	lockreq_release(lr);
	expect_delete_of_mine();
	cr_assert_eq(fake_pending(), 0);
	cr_assert_eq(fake_done_calls, 1);
}

Test(lockreq, a_node_missing_from_its_listing_fails_and_is_deleted)
{
	struct zkl_lockreq *lr = start(ZKL_MODE_WRITE, 0);

	created(2);
	listed_with(OTHER, NULL); /* another client deleted ours already */
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_eq(fake_done_err, -EIO);
	expect_delete_of_mine(); /* should it be there after all */
	cr_assert_eq(fake_pending(), 0);
	lockreq_release(lr);
	cr_assert_eq(fake_pending(), 0, "deleted once");
}

Test(lockreq, waiter_watches_predecessor_and_is_granted_when_it_goes)
{
	struct zkl_lockreq *lr = start(ZKL_MODE_WRITE, 0);

	created(2);
	listed_with(OTHER, my_name);
	cr_assert_eq(fake_done_calls, 0);
	fake_complete_own_watch(my_name); /* set before the wait's */
	cr_assert(strstr(fake_peek(FAKE_GET)->path, OTHER),
		  "a writer watches its predecessor");
	fake_complete_get(ZOK);
	fake_fire_watch("/b/r/" OTHER);
	cr_assert_eq(fake_done_calls, 1,
		     "granted from the listing already had");
	cr_assert_eq(fake_done_err, 0);
	lockreq_release(lr);
	expect_delete_of_mine();
	cr_assert_eq(fake_pending(), 0, "a handoff costs no listing");
}

Test(lockreq, watched_node_already_gone_means_look_again)
{
	struct zkl_lockreq *lr = start(ZKL_MODE_READ, 0);

	created(2);
	listed_with(OTHER, my_name);
	fake_complete_own_watch(my_name);
	fake_complete_get(ZNONODE);
	/* A write node gone unseen may have left a reader in its place (a
	 * downgrade): look at a fresh listing (test_downgrade.c). */
	cr_assert_eq(fake_done_calls, 0);
	listed_with(my_name, NULL);
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_eq(fake_done_err, 0);
	lockreq_release(lr);
	expect_delete_of_mine();
}

#define OTHER0 "_c_0123abcd-0000-4000-8000-00000000000e-write-0000000000"

Test(lockreq, when_the_watched_node_goes_the_next_one_ahead_is_watched)
{
	struct zkl_lockreq *lr = start(ZKL_MODE_WRITE, 0);
	const char *names[3];

	created(2);
	names[0] = OTHER0;
	names[1] = OTHER;
	names[2] = my_name;
	fake_complete_children(ZOK, names, 3);
	fake_complete_own_watch(my_name);
	cr_assert(strstr(fake_peek(FAKE_GET)->path, OTHER));
	fake_complete_get(ZOK);
	/* OTHER gave up its place; OTHER0 still holds. */
	fake_fire_watch("/b/r/" OTHER);
	cr_assert_eq(fake_done_calls, 0, "a node ahead is still there");
	cr_assert(strstr(fake_peek(FAKE_GET)->path, OTHER0),
		  "watches the nearest node left ahead, without a listing");
	fake_complete_get(ZNONODE);
	cr_assert_eq(fake_done_calls, 0, "that one had gone too: look again");
	listed_with(my_name, NULL);
	cr_assert_eq(fake_done_calls, 1, "granted");
	cr_assert_eq(fake_done_err, 0);
	lockreq_release(lr);
	expect_delete_of_mine();
	cr_assert_eq(fake_pending(), 0);
}

Test(lockreq, a_changed_watched_node_means_a_fresh_listing)
{
	struct zkl_lockreq *lr = start(ZKL_MODE_WRITE, 0);

	created(2);
	listed_with(OTHER, my_name);
	fake_complete_own_watch(my_name);
	fake_complete_get(ZOK);
	fake_fire_watch_event(ZOO_CHANGED_EVENT, "/b/r/" OTHER);
	cr_assert_eq(fake_done_calls, 0);
	listed_with(OTHER, my_name);
	cr_assert(strstr(fake_peek(FAKE_GET)->path, OTHER), "watches again");
	fake_complete_get(ZOK);
	fake_fire_watch("/b/r/" OTHER);
	cr_assert_eq(fake_done_calls, 1);
	lockreq_release(lr);
	expect_delete_of_mine();
}

Test(lockreq, our_own_node_being_deleted_does_not_block_our_next_request)
{
	struct zkl_lockreq *a = start(ZKL_MODE_WRITE, 0), *b;
	char name_a[256];

	created(1);
	strcpy(name_a, my_name);
	listed_with(name_a, NULL);
	cr_assert_eq(fake_done_calls, 1);
	fake_complete_own_watch(name_a);
	/* The next open's create went out before the close's delete... */
	cr_assert_eq(lockreq_new(s, "/b/r", ZKL_MODE_WRITE, 0, "id", 2,
				 fake_on_done, NULL, &b),
		     0);
	cr_assert_eq(lockreq_start(b), 0);
	lockreq_release(a);
	created(2);
	/* ...so the listing still shows the released node ahead. */
	listed_with(name_a, my_name);
	cr_assert_eq(fake_done_calls, 2,
		     "granted without waiting for the delete");
	cr_assert_eq(fake_done_err, 0);
	fake_complete_void(FAKE_DELETE, ZOK);
	fake_complete_own_watch(my_name);
	lockreq_release(b);
	expect_delete_of_mine();
	cr_assert_eq(fake_pending(), 0);
}

Test(lockreq, requests_on_one_resource_share_the_listing_in_flight)
{
	struct zkl_lockreq *a = start(ZKL_MODE_READ, 0), *b, *c;
	char name_a[256];
	const char *names[3];

	cr_assert_eq(lockreq_new(s, "/b/r", ZKL_MODE_READ, 0, "id", 2,
				 fake_on_done, NULL, &b),
		     0);
	cr_assert_eq(lockreq_start(b), 0);
	cr_assert_eq(lockreq_new(s, "/b/r", ZKL_MODE_READ, 0, "id", 2,
				 fake_on_done, NULL, &c),
		     0);
	cr_assert_eq(lockreq_start(c), 0);
	cr_assert_eq(fake_pending(), 4,
		     "a listing is in flight: b and c "
		     "send their creates and wait for the next one");
	created(1);
	strcpy(name_a, my_name);
	names[0] = name_a;
	listed_with(name_a, NULL);
	cr_assert_eq(fake_done_calls, 1, "a is served by the first listing");
	created(2);
	names[1] = strdup(my_name);
	created(3);
	names[2] = my_name;
	cr_assert_eq(fake_pending(), 1,
		     "one listing for b and c together, and nothing for a: "
		     "its own watch waits for LR_OWN_WATCH_AFTER_MS");
	fake_complete_children(ZOK, names, 3);
	cr_assert_eq(fake_done_calls, 3, "readers share: both granted");
	fake_complete_own_watch(name_a);
	fake_complete_own_watch(names[1]);
	fake_complete_own_watch(names[2]);
	free((void *)names[1]);
	lockreq_release(a);
	lockreq_release(b);
	lockreq_release(c);
	for (int i = 0; i < 3; i++)
		fake_complete_void(FAKE_DELETE, ZOK);
	cr_assert_eq(fake_pending(), 0);
}

Test(lockreq, cancel_during_create_deletes_the_node_when_its_name_arrives)
{
	struct zkl_lockreq *lr = start(ZKL_MODE_WRITE, 0);

	cr_assert_eq(lockreq_cancel(lr), 0);
	lockreq_release(lr);
	created(1);
	fake_complete_children(ZOK, NULL, 0); /* the pipelined listing */
	expect_delete_of_mine();
	cr_assert_eq(fake_done_calls, 0, "a cancelled request never answers");
	cr_assert_eq(fake_pending(), 0);
}

Test(lockreq, cancel_while_watching_deletes_and_ignores_the_watch)
{
	struct zkl_lockreq *lr = start(ZKL_MODE_WRITE, 0);

	created(2);
	listed_with(OTHER, my_name);
	fake_complete_own_watch(my_name);
	fake_complete_get(ZOK);
	cr_assert_eq(lockreq_cancel(lr), 0);
	lockreq_release(lr);
	expect_delete_of_mine();
	fake_fire_watch("/b/r/" OTHER);
	cr_assert_eq(fake_pending(), 0, "a cancelled waiter does not relist");
	cr_assert_eq(fake_done_calls, 0);
}

Test(lockreq, cancel_before_start_wins_and_start_sends_nothing)
{
	struct zkl_lockreq *lr;

	cr_assert_eq(lockreq_new(s, "/b/r", ZKL_MODE_WRITE, 0, "", 0,
				 fake_on_done, NULL, &lr),
		     0);
	cr_assert_eq(lockreq_cancel(lr), 0);
	cr_assert_eq(lockreq_start(lr), -ECANCELED);
	cr_assert_eq(fake_pending(), 0);
	lockreq_release(lr);
}

Test(lockreq, try_lock_that_must_wait_fails_with_eagain_and_deletes)
{
	struct zkl_lockreq *lr = start(ZKL_MODE_WRITE, LOCKREQ_TRY);

	created(2);
	listed_with(OTHER, my_name);
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_eq(fake_done_err, -EAGAIN);
	expect_delete_of_mine();
	lockreq_release(lr);
	cr_assert_eq(fake_pending(), 0);
}

Test(lockreq, missing_resource_is_created_then_queued)
{
	struct zkl_lockreq *lr = start(ZKL_MODE_WRITE, 0);

	fake_complete_create(ZNONODE, "", 0);
	fake_complete_children(ZNONODE, NULL, 0); /* discarded */
	cr_assert_str_eq(fake_peek(FAKE_CREATE_PARENT)->path, "/b/r");
	fake_complete_void(FAKE_CREATE_PARENT, ZOK);
	created(1);
	listed_with(my_name, NULL);
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_eq(fake_done_err, 0);
	fake_complete_own_watch(my_name);
	lockreq_release(lr);
	expect_delete_of_mine();
}

/* lr_create_reply_locked's third and fourth answers: a parent found
 * missing at each create (a container reaped again and again) is made
 * again, and the create sent again, LR_MAX_CREATE_ATTEMPTS times in all;
 * then the request fails with ENOENT, once, and nothing is left. */
Test(lockreq, a_parent_missing_at_every_create_fails_after_the_attempts)
{
	struct zkl_lockreq *lr = start(ZKL_MODE_WRITE, 0);
	int creates = 0, parents = 0;

	for (int i = 0; i < 50 && fake_pending(); i++) {
		switch (fake_peek_op()) {
		case FAKE_CREATE:
			creates++;
			fake_complete_create(ZNONODE, "", 0);
			break;
		case FAKE_CHILDREN:
			fake_complete_children(ZNONODE, NULL, 0);
			break;
		case FAKE_CREATE_PARENT:
			parents++;
			fake_complete_void(FAKE_CREATE_PARENT, ZOK);
			break;
		default:
			cr_assert_fail("an unexpected call, op %d",
				       (int)fake_peek_op());
		}
	}
	cr_assert_eq(creates, 5, "%d creates", creates);
	cr_assert_eq(parents, 4, "%d parents made", parents);
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_eq(fake_done_err, -ENOENT);
	lockreq_release(lr);
	cr_assert_eq(fake_pending(), 0);
}

/* The create's reply is lost to a connection loss although the server made
 * the node: `name` gets the child name it has. */
static void lose_create_reply(char *name, size_t size)
{
	snprintf(name, size, "%s0000000005",
		 strrchr(fake_peek(FAKE_CREATE)->path, '/') + 1);
	fake_complete_create(ZCONNECTIONLOSS, "", 0);
	fake_complete_children(ZCONNECTIONLOSS, NULL, 0); /* discarded */
}

Test(lockreq, lost_create_reply_finds_the_node_by_guid_without_duplicate)
{
	struct zkl_lockreq *lr = start(ZKL_MODE_WRITE, 0);
	char name[256];

	lose_create_reply(name, sizeof(name));
	/* Reconnected: look for our GUID, do not create again. */
	listed_with(OTHER, name);
	cr_assert(strstr(fake_peek(FAKE_EXISTS)->path, name));
	fake_complete_exists(ZOK, 77, 1005);
	listed_with(OTHER, name);
	fake_complete_own_watch(name);
	fake_complete_get(ZOK);
	cr_assert_eq(fake_done_calls, 0);
	strcpy(my_name, name);
	lockreq_release(lr);
	expect_delete_of_mine();
	cr_assert_eq(fake_pending(), 0);
}

Test(lockreq, node_with_our_guid_of_another_session_is_not_adopted)
{
	struct zkl_lockreq *lr = start(ZKL_MODE_WRITE, 0);
	char name[256];

	lose_create_reply(name, sizeof(name));
	listed_with(name, NULL);
	fake_complete_exists(ZOK, 99, 1005);
	created(6); /* a fresh create of our own */
	fake_complete_children(ZOK, (const char *const[]){ name, my_name }, 2);
	cr_assert_eq(fake_done_calls, 0, "the foreign node is ahead of us");
	lockreq_release(lr);
	/* the stray with our GUID is deleted, then our own node */
	cr_assert(strstr(fake_peek(FAKE_DELETE)->path, name));
	fake_complete_void(FAKE_DELETE, ZOK);
	fake_complete_own_watch(my_name);
	cr_assert_eq(fake_peek(FAKE_GET)->op, FAKE_GET);
	fake_complete_get(ZOK);
	expect_delete_of_mine();
}

Test(lockreq, server_error_answers_once_with_an_errno)
{
	struct zkl_lockreq *lr = start(ZKL_MODE_WRITE, 0);

	fake_complete_create(ZNOAUTH, "", 0);
	fake_complete_children(ZNOAUTH, NULL, 0);
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_eq(fake_done_err, -EACCES);
	cr_assert_eq(lockreq_cancel(lr), -EALREADY);
	lockreq_release(lr);
	cr_assert_eq(fake_pending(), 0);
}

Test(lockreq, a_watch_that_could_not_be_asked_for_does_not_block_the_next)
{
	struct zkl_lockreq *lr = start(ZKL_MODE_WRITE, 0);

	created(2);
	/* Its own watch first, then the one on the node ahead. */
	fake_refused_rc = ZMARSHALLINGERROR;
	fake_fail_call_at(2);
	listed_with(OTHER, my_name);
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_lt(fake_done_err, 0, "the waiter is told it failed");
	fake_complete_own_watch(my_name);
	expect_delete_of_mine();
	lockreq_release(lr);
	cr_assert_eq(fake_pending(), 0);

	/* The next waiter behind the same node must ask for its own watch. */
	lr = start(ZKL_MODE_WRITE, 0);
	created(3);
	listed_with(OTHER, my_name);
	cr_assert_eq(fake_pending(), 2, "the next waiter asks for a watch");
	fake_complete_own_watch(my_name);
	cr_assert(strstr(fake_peek(FAKE_GET)->path, OTHER));
	fake_complete_get(ZOK);
	fake_fire_watch("/b/r/" OTHER);
	cr_assert_eq(fake_done_calls, 2);
	cr_assert_eq(fake_done_err, 0);
	lockreq_release(lr);
	expect_delete_of_mine();
}

Test(lockreq, delete_lost_to_connection_loss_is_repeated)
{
	struct zkl_lockreq *lr = start(ZKL_MODE_WRITE, 0);

	created(1);
	listed_with(my_name, NULL);
	fake_complete_own_watch(my_name);
	lockreq_release(lr);
	fake_complete_void(FAKE_DELETE, ZCONNECTIONLOSS);
	expect_delete_of_mine();
	cr_assert_eq(fake_pending(), 0);
}

/* A holder and a waiter behind it; returns the holder, sets *waiter. */
static struct zkl_lockreq *holder_and_waiter(struct zkl_lockreq **waiter,
					     char *held_name)
{
	struct zkl_lockreq *held = start(ZKL_MODE_READ, 0);

	created(1);
	listed_with(my_name, NULL);
	strcpy(held_name, my_name);
	fake_complete_own_watch(held_name);
	*waiter = start(ZKL_MODE_WRITE, 0);
	created(2);
	listed_with(held_name, my_name);
	cr_assert_eq(fake_pending(), 1,
		     "the waiter's own watch: the holder's serves its wait");
	fake_complete_own_watch(my_name);
	cr_assert_eq(fake_done_calls, 1);
	return held;
}

Test(lockreq, session_expiry_without_renewal_fails_waiters)
{
	struct zkl_lockreq *held, *waiter;
	struct zkl_link lost;
	int64_t token, sid;
	char path[256], held_name[256];

	held = holder_and_waiter(&waiter, held_name);
	fake_expire(s, 0, &lost);
	cr_assert_eq(fake_done_calls, 2);
	cr_assert_eq(fake_done_err, -ENOTCONN);
	cr_assert_eq(lockreq_describe(held, &token, path, sizeof(path), &sid),
		     -EIO, "a lost lock reads as EIO");
	cr_assert_eq(lockreq_holds(held), 0);
	cr_assert(!list_empty(&lost) && lost.next->next == &lost,
		  "exactly the holder is reported lost");
	fake_free_lost(&lost);
	lockreq_release(held);
	lockreq_release(waiter);
	cr_assert_eq(fake_pending(), 0, "nothing to delete: the nodes died");
}

Test(lockreq, session_expiry_loses_holders_and_requeues_waiters_afresh)
{
	struct zkl_lockreq *held, *waiter;
	struct zkl_lost *item;
	struct zkl_link lost;
	char held_name[256], old_guid[NAMES_GUID_LEN + 1];

	held = holder_and_waiter(&waiter, held_name);
	strcpy(old_guid, lockreq_guid(waiter));
	fake_expire(s, 1, &lost);
	cr_assert_eq(fake_done_calls, 1, "the waiter is not told anything");
	item = ZKL_CONTAINER_OF(lost.next, struct zkl_lost, link);
	cr_assert(strstr(item->node, held_name), "lost: %s", item->node);
	cr_assert_eq(item->len, 2);
	cr_assert_eq(memcmp(item->data, "id", 2), 0, "with the holder's data");
	cr_assert_eq(item->link.next, &lost, "only the holder is lost");
	fake_free_lost(&lost);
	cr_assert_eq(fake_pending(), 0, "nothing is sent on the dead session");

	/* A new session connects: the waiter queues anew, under a new GUID
	 * so that nothing of the old session is ever taken for its own. */
	s->state = ZKL_CONN_CONNECTED;
	s->client_id = 78;
	fake_resume_all(s);
	cr_assert_eq(fake_pending(), 2, "create and listing, pipelined");
	cr_assert(strcmp(lockreq_guid(waiter), old_guid) != 0);
	cr_assert(strstr(fake_peek(FAKE_CREATE)->path, lockreq_guid(waiter)));
	created(3);
	listed_with(my_name, NULL);
	cr_assert_eq(fake_done_calls, 2);
	cr_assert_eq(fake_done_err, 0, "granted on the new session");
	fake_complete_own_watch(my_name);
	cr_assert_eq(lockreq_holds(held), 0, "the lost lock stays lost");
	lockreq_release(held);
	cr_assert_eq(fake_pending(), 0, "the lost node died with its session");
	lockreq_release(waiter);
	expect_delete_of_mine();
	cr_assert_eq(fake_pending(), 0);
}

/* The old handle's answer to a create, delivered after the request
 * queued again on the next session and created again: the request is
 * CREATING both times, and only the step it was sent for tells them
 * apart (struct lr_call).  Even a success must not pass for the new
 * create's: the old node died with its session. */
Test(lockreq, an_old_sessions_create_reply_is_not_taken_for_the_new_ones)
{
	struct zkl_lockreq *waiter = start(ZKL_MODE_WRITE, 0);
	struct fake_call old_create = fake_take(), old_listing = fake_take();
	struct Stat st = { .czxid = 5, .ephemeralOwner = 77 };
	const char *none[1] = { NULL };
	struct String_vector empty = { .count = 0, .data = (char **)none };
	struct Stat dir = { 0 };
	char old_node[600];
	struct zkl_link lost;

	cr_assert_eq(old_create.op, FAKE_CREATE);
	cr_assert_eq(old_listing.op, FAKE_CHILDREN);
	fake_expire(s, 1, &lost);
	fake_free_lost(&lost);
	s->state = ZKL_CONN_CONNECTED;
	s->client_id = 78;
	fake_resume_all(s);
	cr_assert_eq(fake_pending(), 2, "created again, and listed");

	snprintf(old_node, sizeof(old_node), "%s0000000001", old_create.path);
	((string_stat_completion_t)old_create.completion)(ZOK, old_node, &st,
							  old_create.data);
	((strings_stat_completion_t)old_listing.completion)(ZOK, &empty, &dir,
							    old_listing.data);
	cr_assert_eq(fake_done_calls, 0, "nothing told from the old session");
	cr_assert_eq(fake_pending(), 2, "the new create is still awaited");

	created(2);
	listed_with(my_name, NULL);
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_eq(fake_done_err, 0, "granted on the new session");
	snprintf(old_node, sizeof(old_node), "/b/r/%s", my_name);
	cr_assert(lockreq_node_is(waiter, old_node), "its node is the new one");
	fake_complete_own_watch(my_name);
	lockreq_release(waiter);
	expect_delete_of_mine();
	cr_assert_eq(fake_pending(), 0);
}

/* ---- a held node deleted by someone else ---------------------------- */

static int lost_calls;
static char lost_why[128];

static void on_lost(const char *node, const char *why, const void *data,
		    size_t len, void *arg)
{
	(void)data;
	(void)len;
	(void)arg;
	cr_assert(strstr(node, my_name), "lost %s, expected ours", node);
	lost_calls++;
	snprintf(lost_why, sizeof(lost_why), "%s", why);
}

/* A write lock granted at once, its own node watched, losses told to
 * on_lost; full gets its node's path. */
static struct zkl_lockreq *held_and_watched(char full[300])
{
	struct zkl_lockreq *lr = start(ZKL_MODE_WRITE, 0);

	lost_calls = 0;
	session_set_lost_hook(s, on_lost, NULL);
	created(1);
	listed_with(my_name, NULL);
	cr_assert_eq(fake_done_err, 0);
	fake_complete_own_watch(my_name);
	snprintf(full, 300, "/b/r/%s", my_name);
	return lr;
}

Test(lockreq, a_held_node_deleted_by_another_client_is_a_lost_lock)
{
	char path[256], full[300];
	struct zkl_lockreq *lr = held_and_watched(full);
	int64_t token, sid;

	/* Our own note changes the data: the watch is set again, and the
	 * data read (is it a request to let go?  No). */
	fake_fire_watch_event(ZOO_CHANGED_EVENT, full);
	cr_assert(strstr(fake_peek(FAKE_GET)->path, my_name));
	fake_complete_get_data(ZOK, "host h\nnote x\n", 1);
	cr_assert_eq(lost_calls, 0);
	cr_assert_eq(lockreq_holds(lr), 1);
	/* Then an operator deletes it. */
	fake_fire_watch(full);
	cr_assert_eq(lost_calls, 1, "the owner is told once");
	cr_assert(strstr(lost_why, "deleted by another client"), "%s",
		  lost_why);
	cr_assert_eq(lockreq_holds(lr), 0);
	cr_assert_eq(lockreq_describe(lr, &token, path, sizeof(path), &sid),
		     -EIO, "a lost lock reads as EIO");
	cr_assert_eq(s->losses, 1, "counted");
	lockreq_release(lr);
	cr_assert_eq(fake_pending(), 0, "nothing left to delete");
	cr_assert_eq(lost_calls, 1);
}

Test(lockreq, our_own_release_is_no_loss)
{
	char full[300];
	struct zkl_lockreq *lr = held_and_watched(full);

	lockreq_release(lr);
	expect_delete_of_mine();
	fake_fire_watch(full); /* ZooKeeper tells of our own delete */
	cr_assert_eq(lost_calls, 0);
	cr_assert_eq(fake_pending(), 0);
}

/* ---- an unlock that waits for the delete ------------------------------ */

static int gone_calls;

static void on_gone(void *arg)
{
	(void)arg;
	gone_calls++;
}

/* A write lock granted at once, then released with on_gone to be told. */
static void held_then_released(void)
{
	struct zkl_lockreq *lr = start(ZKL_MODE_WRITE, 0);

	gone_calls = 0;
	created(1);
	listed_with(my_name, NULL);
	cr_assert_eq(fake_done_calls, 1);
	fake_complete_own_watch(my_name);
	lockreq_release_then(lr, on_gone, NULL);
}

Test(lockreq, release_then_is_told_only_when_the_delete_is_confirmed)
{
	held_then_released();
	cr_assert_eq(gone_calls, 0, "told before ZooKeeper deleted the node");
	expect_delete_of_mine();
	cr_assert_eq(gone_calls, 1, "not told once the delete was confirmed");
	cr_assert_eq(fake_pending(), 0);
}

Test(lockreq, release_then_waits_through_a_lost_delete_reply)
{
	held_then_released();
	fake_complete_void(FAKE_DELETE, ZCONNECTIONLOSS);
	cr_assert_eq(gone_calls, 0,
		     "a delete lost to the connection is not a delete");
	expect_delete_of_mine();
	cr_assert_eq(gone_calls, 1);
}

Test(lockreq, release_then_of_a_node_not_yet_named_waits_for_its_delete)
{
	struct zkl_lockreq *lr = start(ZKL_MODE_WRITE, 0);

	gone_calls = 0;
	cr_assert_eq(lockreq_cancel(lr), 0);
	lockreq_release_then(lr, on_gone, NULL);
	created(1);
	fake_complete_children(ZOK, NULL, 0);
	cr_assert_eq(gone_calls, 0, "the node exists until deleted");
	expect_delete_of_mine();
	cr_assert_eq(gone_calls, 1);
}

Test(lockreq, release_then_with_nothing_in_zookeeper_is_told_at_once)
{
	struct zkl_lockreq *lr;

	gone_calls = 0;
	cr_assert_eq(lockreq_new(s, "/b/r", ZKL_MODE_WRITE, 0, "", 0,
				 fake_on_done, NULL, &lr),
		     0);
	lockreq_release_then(lr, on_gone, NULL);
	cr_assert_eq(gone_calls, 1, "no node: nothing to wait for");
	cr_assert_eq(fake_pending(), 0);
}

Test(lockreq, release_then_is_told_at_once_when_the_connection_is_lost)
{
	struct zkl_link lost;

	held_then_released();
	fake_zoo_state = ZOO_CONNECTING_STATE;
	pthread_mutex_lock(&s->lock);
	s->state = ZKL_CONN_CONNECTING;
	pthread_mutex_unlock(&s->lock);
	fake_complete_void(FAKE_DELETE, ZCONNECTIONLOSS);
	cr_assert_eq(gone_calls, 1,
		     "an unlock must not wait for the connection (a killed "
		     "process hangs in its exit)");
	cr_assert_eq(fake_pending(), 0, "the delete waits for the connection");
	fake_expire(s, 1, &lost);
	cr_assert_eq(gone_calls, 1, "told once");
	cr_assert(list_empty(&lost), "a released lock is not lost");
	cr_assert(list_empty(&s->resume), "nothing left to resume");
	/* teardown checks that the request was freed */
}

/* ---- the handle expired, its event not yet here ----------------------- */

Test(lockreq, an_open_after_the_handle_expired_queues_on_the_next_session)
{
	struct zkl_lockreq *lr;
	struct zkl_link lost;

	/* The client refuses every call once the server has expired the
	 * session, before the watcher has told us (ZINVALIDSTATE). */
	fake_refused_rc = ZINVALIDSTATE;
	fake_fail_call_at(1);
	cr_assert_eq(lockreq_new(s, "/b/r", ZKL_MODE_WRITE, 0, "id", 2,
				 fake_on_done, NULL, &lr),
		     0);
	cr_assert_eq(lockreq_start(lr), 0,
		     "failed instead of waiting for "
		     "the next session");
	cr_assert_eq(fake_done_calls, 0);
	fake_expire(s, 1, &lost);
	fake_free_lost(&lost);
	cr_assert_eq(fake_done_calls, 0, "the waiter is told nothing");
	s->state = ZKL_CONN_CONNECTED;
	s->client_id = 78;
	fake_resume_all(s);
	created(1);
	listed_with(my_name, NULL);
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_eq(fake_done_err, 0, "granted on the next session");
	fake_complete_own_watch(my_name);
	lockreq_release(lr);
	expect_delete_of_mine();
	cr_assert_eq(fake_pending(), 0);
}

Test(lockreq, a_try_after_the_handle_expired_is_eagain_at_once)
{
	struct zkl_lockreq *lr;

	fake_refused_rc = ZINVALIDSTATE;
	fake_fail_call_at(1);
	cr_assert_eq(lockreq_new(s, "/b/r", ZKL_MODE_WRITE, LOCKREQ_TRY, "id",
				 2, fake_on_done, NULL, &lr),
		     0);
	cr_assert_eq(lockreq_start(lr), -EAGAIN);
	lockreq_release(lr);
	cr_assert_eq(fake_pending(), 0);
}

static int gone_calls;

static void count_gone(void *arg)
{
	(void)arg;
	gone_calls++;
}

Test(lockreq, a_shared_lock_ends_with_its_last_owner)
{
	struct zkl_lockreq *lr = start(ZKL_MODE_WRITE, 0);

	created(1);
	listed_with(my_name, NULL);
	fake_complete_own_watch(my_name);
	cr_assert_eq(lockreq_share(lr), 0);
	cr_assert_eq(lockreq_share(lr), 0);
	cr_assert_eq(lockreq_owners(lr), 3);
	gone_calls = 0;
	lockreq_release_then(lr, count_gone, NULL);
	cr_assert_eq(gone_calls, 1, "an owner's release is done at once");
	lockreq_release(lr);
	cr_assert_eq(fake_pending(), 0, "nothing leaves ZooKeeper yet");
	cr_assert_eq(lockreq_holds(lr), 1);
	lockreq_release(lr);
	expect_delete_of_mine();
	cr_assert_eq(fake_pending(), 0);
}

Test(lockreq, only_a_held_lock_is_shared)
{
	struct zkl_lockreq *lr = start(ZKL_MODE_WRITE, 0);

	cr_assert_eq(lockreq_share(lr), -ENOENT, "not granted yet");
	created(2);
	listed_with(OTHER, my_name);
	cr_assert_eq(lockreq_share(lr), -ENOENT, "waiting");
	lockreq_release(lr);
	fake_complete_own_watch(my_name);
	fake_complete_get(ZOK);
	expect_delete_of_mine();
	cr_assert_eq(fake_pending(), 0);
}

static int revoke_calls;

static void on_revoke(const char *node, const char *why, const void *data,
		      size_t len, void *arg)
{
	(void)arg;
	cr_assert(strstr(node, my_name), "asked %s, expected ours", node);
	cr_assert(strstr(why, "let go"), "%s", why);
	cr_assert_eq(len, 2, "the holder's identity, as it was");
	cr_assert(memcmp(data, "id", 2) == 0);
	revoke_calls++;
}

Test(lockreq, a_held_node_given_the_revocation_mark_is_asked_once)
{
	struct zkl_lockreq *lr = start(ZKL_MODE_WRITE, 0);
	int64_t when;
	char full[300];

	revoke_calls = 0;
	session_set_revoke_hook(s, on_revoke, NULL);
	created(1);
	listed_with(my_name, NULL);
	fake_complete_own_watch(my_name);
	cr_assert_eq(lockreq_revoke_asked(lr, &when), 0);
	snprintf(full, sizeof(full), "/b/r/%s", my_name);
	fake_fire_watch_event(ZOO_CHANGED_EVENT, full);
	fake_complete_get_data(ZOK, "__REVOKE__", 1);
	/* Asked again: nothing more to tell. */
	fake_fire_watch_event(ZOO_CHANGED_EVENT, full);
	fake_complete_get_data(ZOK, "__REVOKE__", 2);
	cr_assert_eq(fake_pending(), 0);
	cr_assert_eq(revoke_calls, 1, "told once");
	cr_assert_eq(lockreq_revoke_asked(lr, &when), 1);
	cr_assert_gt(when, 0);
	cr_assert_eq(lockreq_holds(lr), 1, "asking takes nothing away");
	lockreq_release(lr);
	fake_expect_delete_of(my_name);
	cr_assert_eq(fake_pending(), 0);
}

/* A lock let go within LR_OWN_WATCH_AFTER_MS of a grant that did not wait
 * costs a create, a listing and a delete: no watch, and no timer left. */
Test(lockreq, a_short_hold_sends_no_watch)
{
	struct zkl_lockreq *lr = start(ZKL_MODE_WRITE, 0);

	created(1);
	listed_with(my_name, NULL);
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_eq(fake_pending(), 0, "nothing sent at the grant");
	cr_assert(!list_empty(&s->later), "its watch is due a moment later");
	lockreq_release(lr);
	cr_assert(list_empty(&s->later), "the release takes the timer away");
	expect_delete_of_mine();
	cr_assert_eq(fake_run_due(s), 0);
	cr_assert_eq(fake_pending(), 0);
}

Test(lockreq, a_mark_there_before_the_grant_is_seen_with_the_first_watch)
{
	struct zkl_lockreq *lr = start(ZKL_MODE_WRITE, 0);
	int64_t when;

	revoke_calls = 0;
	session_set_revoke_hook(s, on_revoke, NULL);
	created(1);
	listed_with(my_name, NULL);
	cr_assert_eq(fake_pending(), 0,
		     "a holder that did not wait watches a moment later");
	cr_assert_eq(fake_run_due(s), 1);
	/* The get that watches the held node reads the mark. */
	fake_complete_get_data(ZOK, "__REVOKE__", 1);
	cr_assert_eq(revoke_calls, 1);
	cr_assert_eq(lockreq_revoke_asked(lr, &when), 1);
	lockreq_release(lr);
	fake_expect_delete_of(my_name);
	cr_assert_eq(fake_pending(), 0);
}

/* ---- a waiter's own node (issue: nobody holds beside another) ---------- */

Test(lockreq, a_waiter_whose_node_is_deleted_fails_and_is_never_granted)
{
	struct zkl_lockreq *lr = start(ZKL_MODE_WRITE, 0);
	char path[300];

	created(2);
	listed_with(OTHER, my_name);
	fake_complete_own_watch(my_name);
	fake_complete_get(ZOK); /* the watch on the node ahead */
	snprintf(path, sizeof(path), "/b/r/%s", my_name);
	fake_fire_watch(path);          /* another client deletes our node */
	fake_fire_watch("/b/r/" OTHER); /* the holder lets go */
	cr_assert_eq(fake_done_calls, 0,
		     "never granted: it looks at a fresh listing first (the "
		     "news may be its own session's end)");
	fake_complete_children(ZOK, NULL, 0);
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_eq(fake_done_err, -EIO);
	expect_delete_of_mine(); /* should it be there after all */
	lockreq_release(lr);
	cr_assert_eq(fake_pending(), 0);
}

/* Two readers behind one writer share the watch on it; the second one's
 * own watch is still on its way when the writer goes. */
static void two_readers_behind_a_writer(struct zkl_lockreq **a,
					struct zkl_lockreq **b, char *name_a,
					char *name_b)
{
	const char *names[3] = { OTHER, name_a, name_b };

	*a = start(ZKL_MODE_READ, 0);
	created(2);
	strcpy(name_a, my_name);
	listed_with(OTHER, name_a);
	fake_complete_own_watch(name_a);
	fake_complete_get(ZOK); /* a's watch on the writer */
	*b = start(ZKL_MODE_READ, 0);
	created(3);
	strcpy(name_b, my_name);
	fake_complete_children(ZOK, names, 3);
	cr_assert_eq(fake_pending(), 1, "b's own watch; a's serves its wait");
	fake_fire_watch("/b/r/" OTHER);
	cr_assert_eq(fake_done_calls, 1, "a is granted: its node is known");
}

Test(lockreq, a_grant_from_the_view_waits_until_its_node_is_known)
{
	struct zkl_lockreq *a, *b;
	char name_a[256], name_b[256];

	two_readers_behind_a_writer(&a, &b, name_a, name_b);
	fake_complete_own_watch(name_b);
	cr_assert_eq(fake_done_calls, 2, "b once its own node is known");
	cr_assert_eq(fake_done_err, 0);
	lockreq_release(a);
	lockreq_release(b);
	fake_complete_void(FAKE_DELETE, ZOK);
	fake_complete_void(FAKE_DELETE, ZOK);
	cr_assert_eq(fake_pending(), 0);
}

Test(lockreq, a_waiter_found_deleted_by_its_own_watch_is_not_granted)
{
	struct zkl_lockreq *a, *b;
	char name_a[256], name_b[256];

	two_readers_behind_a_writer(&a, &b, name_a, name_b);
	cr_assert(strstr(fake_peek(FAKE_GET)->path, name_b));
	fake_complete_get(ZNONODE); /* deleted before the writer went */
	cr_assert_eq(fake_done_calls, 1, "b is not granted");
	listed_with(name_a, NULL);
	cr_assert_eq(fake_done_calls, 2);
	cr_assert_eq(fake_done_err, -EIO, "b fails, never granted");
	cr_assert(strstr(fake_peek(FAKE_DELETE)->path, name_b));
	fake_complete_void(FAKE_DELETE, ZNONODE);
	lockreq_release(a);
	lockreq_release(b);
	fake_complete_void(FAKE_DELETE, ZOK);
	cr_assert_eq(fake_pending(), 0, "a's node is deleted");
}

/* ---- a release ZooKeeper refuses, a break, a note ------------------------ */

Test(lockreq, a_refused_delete_is_told_gone_and_tried_again_until_it_lands)
{
	held_then_released();
	cr_assert(strstr(fake_peek(FAKE_DELETE)->path, my_name));
	fake_complete_void(FAKE_DELETE, ZNOAUTH); /* an ACL changed */
	cr_assert_eq(gone_calls, 1, "the unlock does not wait for it");
	cr_assert_eq(s->delete_retries, 1, "counted");
	cr_assert_eq(fake_pending(), 0, "nothing sent before the back-off");
	cr_assert_eq(fake_run_due(s), 1);
	fake_complete_void(FAKE_DELETE, ZNOAUTH);
	cr_assert_eq(s->delete_retries, 2);
	cr_assert_eq(fake_run_due(s), 1);
	expect_delete_of_mine(); /* it lands */
	cr_assert_eq(fake_run_due(s), 0, "nothing more to try");
	cr_assert_eq(fake_pending(), 0);
	cr_assert_eq(gone_calls, 1, "told once");
}

Test(lockreq, a_break_mark_tells_the_holder_before_its_node_goes)
{
	char full[300];
	struct zkl_lockreq *lr = held_and_watched(full);

	fake_fire_watch_event(ZOO_CHANGED_EVENT, full); /* another host */
	fake_complete_get_data(ZOK, "__ZKLOCKFS_BREAK__\nhost h\npid 1\n", 1);
	cr_assert_eq(lost_calls, 1, "told");
	cr_assert(strstr(lost_why, "broken"), "%s", lost_why);
	cr_assert_eq(lockreq_holds(lr), 0);
	expect_delete_of_mine(); /* then, and only then, let go */
	lockreq_release(lr);
	cr_assert_eq(fake_pending(), 0, "deleted once");
}

static int noted_calls, noted_err;

static void on_noted(int err, void *arg)
{
	(void)arg;
	noted_calls++;
	noted_err = err;
}

Test(lockreq, a_note_is_set_over_the_version_read_and_keeps_a_mark)
{
	struct zkl_lockreq *lr = start(ZKL_MODE_WRITE, 0);
	char full[300];
	struct fake_call *c;

	created(1);
	listed_with(my_name, NULL);
	fake_complete_own_watch(my_name); /* version 0 */
	cr_assert_eq(lockreq_set_data(lr, "n1\n", 3, on_noted, NULL), 0);
	c = fake_peek(FAKE_SET);
	cr_assert_eq(c->version, 0, "only over the data it read");
	fake_complete_set(ZBADVERSION); /* a mark came first */
	cr_assert_eq(noted_err, -EAGAIN, "try again");
	snprintf(full, sizeof(full), "/b/r/%s", my_name);
	fake_fire_watch_event(ZOO_CHANGED_EVENT, full);
	fake_complete_get_data(ZOK, "__REVOKE__", 1);
	cr_assert_eq(lockreq_set_data(lr, "n2\n", 3, on_noted, NULL), 0);
	c = fake_peek(FAKE_SET);
	cr_assert_eq(c->version, 1);
	cr_assert(strncmp(c->value, "__REVOKE__\nn2\n", 14) == 0,
		  "the mark's line kept before the note: %s", c->value);
	fake_complete_set(ZNONODE); /* broken meanwhile */
	cr_assert_eq(noted_err, -EIO, "a lost lock, not ENOENT");
	cr_assert_eq(noted_calls, 2);
	lockreq_release(lr);
	expect_delete_of_mine();
}

/* Before its own watch has read the node (a moment after a grant that
 * did not wait), a note is set over version 0, the create's: a mark set
 * meanwhile fails it, where "any version" would have erased the mark. */
Test(lockreq, a_note_before_the_own_watch_is_set_over_the_create_version)
{
	struct zkl_lockreq *lr = start(ZKL_MODE_WRITE, 0);

	created(1);
	listed_with(my_name, NULL);
	cr_assert_eq(fake_pending(), 0, "no watch yet");
	cr_assert_eq(lockreq_set_data(lr, "n1\n", 3, on_noted, NULL), 0);
	cr_assert_eq(fake_peek(FAKE_SET)->version, 0, "never over any version");
	fake_complete_set(ZBADVERSION); /* a mark came first */
	cr_assert_eq(noted_err, -EAGAIN);
	lockreq_release(lr);
	expect_delete_of_mine();
	cr_assert_eq(fake_run_due(s), 0);
	cr_assert_eq(fake_pending(), 0);
}

#define A_READER "_c_0123abcd-0000-4000-8000-00000000000f-read-0000000001"

/* After a reconnection the server tells missed deletions in the order of
 * the client's watch table, not as they happened: a node ahead told gone
 * first proves nothing of our own. */
Test(lockreq, after_a_reconnection_the_view_grants_only_after_a_listing)
{
	struct zkl_lockreq *lr = start(ZKL_MODE_WRITE, 0);

	created(2);
	listed_with(A_READER, my_name);
	fake_complete_own_watch(my_name);
	fake_complete_get(ZOK); /* the watch on the reader ahead */
	pthread_mutex_lock(&s->lock);
	s->watches.connection++; /* reconnected */
	pthread_mutex_unlock(&s->lock);
	fake_fire_watch("/b/r/" A_READER);
	cr_assert_eq(fake_done_calls, 0, "granted on an old connection's word");
	cr_assert_eq(fake_peek_op(), FAKE_CHILDREN, "it looks first");
	listed_with(my_name, NULL);
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_eq(fake_done_err, 0);
	lockreq_release(lr);
	expect_delete_of_mine();
	cr_assert_eq(fake_pending(), 0);
}

/* A holders text of the mount is shared for a while, unless the
 * session's count of the resource's changes moved (fs/holdcache.h): every
 * step a reader on this mount could have seen must move it. */
Test(lockreq, each_step_of_a_request_moves_its_resource_s_change_count)
{
	uint64_t elsewhere = holders_changes(s, "/b/elsewhere");
	uint64_t was = holders_changes(s, "/b/r");
	struct zkl_lockreq *lr = start(ZKL_MODE_WRITE, 0);

	cr_assert_gt(holders_changes(s, "/b/r"), was, "queued: not counted");
	created(2);
	listed_with(OTHER, my_name);
	fake_complete_own_watch(my_name);
	fake_complete_get(ZOK);
	was = holders_changes(s, "/b/r");
	fake_fire_watch("/b/r/" OTHER);
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_gt(holders_changes(s, "/b/r"), was,
		     "told of a deletion, and granted: not counted");
	was = holders_changes(s, "/b/r");
	noted_calls = 0;
	cr_assert_eq(lockreq_set_data(lr, "n", 1, on_noted, NULL), 0);
	cr_assert_gt(holders_changes(s, "/b/r"), was, "a note: not counted");
	fake_complete_set(ZOK);
	cr_assert(noted_calls == 1 && noted_err == 0);
	was = holders_changes(s, "/b/r");
	lockreq_release(lr);
	cr_assert_gt(holders_changes(s, "/b/r"), was, "let go: not counted");
	expect_delete_of_mine();
	cr_assert_eq(holders_changes(s, "/b/elsewhere"), elsewhere,
		     "another resource's count moved");
}
