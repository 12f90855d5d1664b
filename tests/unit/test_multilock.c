/*
 * A multi-lock against a scripted ZooKeeper: its members' nodes come from
 * one transaction (never a create each), it holds only when every member
 * does, and a try, a cancel, a lost reply, an expiry and a deleted node
 * each give one answer and leave no node.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fake_zk.h"
#include "internal.h"
#include "lockreq.h"

#define OLDER_WRITER "_c_0123abcd-0000-4000-8000-00000000000f-write-0000000001"

static struct zkl_session *s;
static const char *const dirs[] = { "/b/r1", "/b/r2" };
static char mine[2][1100]; /* the members' child names once created */

static void setup(void)
{
	s = fake_session();
}

static void teardown(void)
{
	fake_session_free(s);
}

TestSuite(multilock, .init = setup, .fini = teardown);

static struct zkl_lockreq *start(unsigned flags)
{
	struct zkl_lockreq *lr;

	cr_assert_eq(lockreq_new_multi(s, dirs, 2, ZKL_MODE_WRITE, flags, "id",
				       2, fake_on_done, NULL, &lr),
		     0);
	cr_assert_eq(lockreq_start(lr), 0);
	cr_assert_eq(fake_pending(), 1, "one transaction, nothing else");
	cr_assert_eq(fake_peek(FAKE_MULTI)->count, 2);
	return lr;
}

/* The transaction succeeds with sequences seq and seq + 1. */
static void created(int seq)
{
	struct fake_call *c = fake_peek(FAKE_MULTI);
	char suffix[2][16];
	const char *suffixes[2] = { suffix[0], suffix[1] };

	for (int i = 0; i < 2; i++) {
		const char *path = c->ops[i].create_op.path;
		cr_assert(strncmp(path, dirs[i], strlen(dirs[i])) == 0,
			  "op %d creates %s", i, path);
		cr_assert_eq(c->ops[i].create_op.flags,
			     ZOO_EPHEMERAL_SEQUENTIAL);
		snprintf(suffix[i], sizeof(suffix[i]), "%010d", seq + i);
		snprintf(mine[i], sizeof(mine[i]), "%s%s",
			 strrchr(path, '/') + 1, suffix[i]);
	}
	fake_complete_multi(ZOK, suffixes);
}

/* The token's exists, then a listing of each resource. */
static void token_and_listings(const char *ahead_of_second)
{
	const char *first[] = { mine[0] };
	const char *second[] = { ahead_of_second, mine[1] };

	cr_assert_eq(fake_pending(), 3, "the token, then both listings");
	fake_complete_exists(ZOK, 77, 4242);
	cr_assert(strcmp(fake_peek(FAKE_CHILDREN)->path, dirs[0]) == 0);
	fake_complete_children(ZOK, first, 1);
	if (ahead_of_second)
		fake_complete_children(ZOK, second, 2);
	else
		fake_complete_children(ZOK, second + 1, 1);
}

/* The gets by which the first n members, holding, watch their own
 * nodes. */
static void own_watches(int n)
{
	for (int i = 0; i < n; i++)
		fake_complete_own_watch(mine[i]);
}

/* r1's member holds (its own watch comes LR_OWN_WATCH_AFTER_MS later);
 * r2's waits: it watches its own node at once, then the node ahead. */
static void second_waits(void)
{
	fake_complete_own_watch(mine[1]);
	cr_assert(strstr(fake_peek(FAKE_GET)->path, OLDER_WRITER),
		  "r2's member watches the writer ahead, and only it");
	fake_complete_get(ZOK);
}

/* Both nodes deleted in one transaction, answered rc. */
static void expect_deleted_together(int rc)
{
	struct fake_call *c = fake_peek(FAKE_MULTI);

	cr_assert_eq(c->count, 2);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(c->ops[i].type, ZOO_DELETE_OP);
		cr_assert(strstr(c->ops[i].delete_op.path, mine[i]),
			  "deletes %s, expected %s", c->ops[i].delete_op.path,
			  mine[i]);
	}
	fake_complete_multi(rc, NULL);
}

/* Both nodes deleted one by one, in either order. */
static void expect_both_deleted(void)
{
	int seen = 0;

	for (int k = 0; k < 2; k++) {
		struct fake_call *c = fake_peek(FAKE_DELETE);
		for (int i = 0; i < 2; i++)
			if (strstr(c->path, mine[i]))
				seen |= 1 << i;
		fake_complete_void(FAKE_DELETE, ZOK);
	}
	cr_assert_eq(seen, 3, "both members' nodes are deleted");
}

/* After the transaction's reply: both resources free, held, released,
 * and nothing left. */
static void holds_then_lets_go(struct zkl_lockreq *lr)
{
	token_and_listings(NULL);
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_eq(fake_done_err, 0);
	own_watches(2);
	lockreq_release(lr);
	expect_deleted_together(ZOK);
	cr_assert_eq(fake_pending(), 0);
}

/* A multi-lock both of whose resources were free: held, watching its
 * nodes. */
static struct zkl_lockreq *held_both(void)
{
	struct zkl_lockreq *lr = start(0);

	created(5);
	token_and_listings(NULL);
	own_watches(2);
	return lr;
}

Test(multilock, held_once_every_member_holds_with_one_token_each)
{
	struct zkl_lockreq *lr = start(0);
	int64_t token = 0, sid;
	char path[512];

	created(5);
	token_and_listings(NULL);
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_eq(fake_done_err, 0);
	cr_assert_eq(lockreq_describe(lr, &token, path, sizeof(path), &sid), 0);
	cr_assert_eq(token, 4242);
	cr_assert(strstr(path, mine[0]), "the first resource's node");
	for (size_t i = 0; i < 2; i++) {
		cr_assert_eq(lockreq_member_token(lr, i, &token), 0);
		cr_assert_eq(token, 4242, "one transaction, one zxid");
	}
	cr_assert_eq(lockreq_member_token(lr, 2, &token), -ERANGE);
	own_watches(2);
	lockreq_release(lr);
	expect_deleted_together(ZOK);
	cr_assert_eq(fake_pending(), 0);
}

Test(multilock, waits_for_the_busy_resource_and_holds_when_it_frees)
{
	struct zkl_lockreq *lr = start(0);

	created(5);
	token_and_listings(OLDER_WRITER);
	cr_assert_eq(fake_done_calls, 0, "r2 is held by an older writer");
	second_waits();
	fake_fire_watch("/b/r2/" OLDER_WRITER);
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_eq(fake_done_err, 0);
	lockreq_release(lr);
	expect_deleted_together(ZOK);
}

static int gone_calls;
static void on_gone(void *arg)
{
	(void)arg;
	gone_calls++;
}

Test(multilock, a_try_with_one_resource_busy_takes_none_and_leaves_nothing)
{
	struct zkl_lockreq *lr = start(LOCKREQ_TRY);

	created(5);
	token_and_listings(OLDER_WRITER);
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_eq(fake_done_err, -EAGAIN);
	gone_calls = 0;
	lockreq_release_then(lr, on_gone, NULL);
	cr_assert_eq(gone_calls, 0, "told gone only once both nodes are");
	expect_both_deleted();
	cr_assert_eq(gone_calls, 1);
	cr_assert_eq(fake_run_due(s), 0, "r1's watch was never due");
	cr_assert_eq(fake_pending(), 0);
}

Test(multilock, a_cancel_while_waiting_deletes_both_and_never_answers)
{
	struct zkl_lockreq *lr = start(0);

	created(5);
	token_and_listings(OLDER_WRITER);
	second_waits();
	cr_assert_eq(lockreq_cancel(lr), 0);
	expect_deleted_together(ZOK);
	lockreq_release(lr);
	cr_assert_eq(fake_done_calls, 0);
	cr_assert_eq(fake_pending(), 0);
}

Test(multilock, a_cancel_before_the_transaction_answers_deletes_what_it_made)
{
	struct zkl_lockreq *lr = start(0);

	cr_assert_eq(lockreq_cancel(lr), 0);
	lockreq_release(lr);
	created(5);
	expect_both_deleted();
	cr_assert_eq(fake_done_calls, 0);
	cr_assert_eq(fake_pending(), 0);
}

Test(multilock, a_lost_reply_is_recovered_by_tag_and_asked_again_as_one)
{
	struct zkl_lockreq *lr = start(0);
	const char *none[] = { "unrelated" };

	fake_lose_multi_reply_and_reconnect(s);
	/* Each member looks for its tag: the transaction did not happen. */
	cr_assert_eq(fake_pending(), 2);
	fake_complete_children(ZOK, none, 1);
	cr_assert_eq(fake_pending(), 1, "the first waits for the second");
	fake_complete_children(ZOK, none, 1);
	cr_assert_eq(fake_pending(), 1, "one transaction again");
	created(9);
	holds_then_lets_go(lr);
}

Test(multilock, a_lost_reply_of_a_transaction_that_happened_adopts_its_nodes)
{
	struct zkl_lockreq *lr = start(0);
	struct fake_call *c = fake_peek(FAKE_MULTI);
	char names[2][1100];

	for (int i = 0; i < 2; i++) {
		snprintf(names[i], sizeof(names[i]), "%s0000000003",
			 strrchr(c->ops[i].create_op.path, '/') + 1);
		memcpy(mine[i], names[i], sizeof(mine[i]));
	}
	fake_lose_multi_reply_and_reconnect(s);
	for (int i = 0; i < 2; i++) {
		const char *listed[] = { names[i] };
		fake_complete_children(ZOK, listed, 1);
	}
	/* Found: each checks the node is this session's (and reads its
	 * token), then lists again. */
	for (int i = 0; i < 2; i++)
		fake_complete_exists(ZOK, 77, 31);
	for (int i = 0; i < 2; i++) {
		const char *listed[] = { names[i] };
		fake_complete_children(ZOK, listed, 1);
	}
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_eq(fake_done_err, 0);
	own_watches(2);
	lockreq_release(lr);
	expect_deleted_together(ZOK);
}

Test(multilock, after_an_expiry_it_queues_again_with_one_new_transaction)
{
	struct zkl_lockreq *lr = start(0);
	struct zkl_link lost;

	created(5);
	token_and_listings(OLDER_WRITER);
	second_waits();
	fake_expire(s, 1, &lost);
	cr_assert(list_empty(&lost), "nothing was held");
	fake_free_lost(&lost);
	cr_assert_eq(fake_done_calls, 0, "a waiter waits on");
	fake_set_state(s, ZKL_CONN_CONNECTED);
	fake_resume_all(s);
	cr_assert_eq(fake_pending(), 1, "one new transaction, no create each");
	created(20);
	holds_then_lets_go(lr);
}

static int lost_calls;
static void on_lost(const char *node, const char *why, const void *data,
		    size_t len, void *arg)
{
	(void)node;
	(void)why;
	(void)data;
	(void)len;
	(void)arg;
	lost_calls++;
}

Test(multilock, a_member_node_deleted_while_held_loses_the_whole_lock_once)
{
	struct zkl_lockreq *lr = start(0);
	int64_t token, sid;
	char path[1200], node[1200];

	session_set_lost_hook(s, on_lost, NULL);
	created(5);
	token_and_listings(NULL);
	own_watches(2);
	snprintf(node, sizeof(node), "%s/%s", dirs[1], mine[1]);
	fake_fire_watch(node);
	cr_assert_eq(lost_calls, 1, "one report for the multi-lock");
	cr_assert_eq(lockreq_describe(lr, &token, path, sizeof(path), &sid),
		     -EIO);
	/* The other member's node goes at once, before the owner closes:
	 * its waiters must not wait for a lock nobody holds; the deleted
	 * one is gone already. */
	cr_assert_eq(fake_pending(), 1);
	cr_assert(strstr(fake_peek(FAKE_DELETE)->path, mine[0]));
	fake_complete_void(FAKE_DELETE, ZOK);
	lockreq_release(lr);
	cr_assert_eq(fake_pending(), 0, "nothing more to delete");
}

Test(multilock, a_member_failing_fails_the_whole_and_lets_the_other_go)
{
	struct zkl_lockreq *lr = start(0);
	const char *first[] = { "x" }; /* r1's own node missing: EIO */

	created(5);
	fake_complete_exists(ZOK, 77, 4242);
	fake_complete_children(ZOK, first, 1);
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_eq(fake_done_err, -EIO);
	lockreq_release(lr);
	/* r2's listing answers a request that has moved on; r1's (missing)
	 * node and r2's are deleted. */
	fake_complete_children(ZOK, first, 1);
	expect_both_deleted();
	cr_assert_eq(fake_pending(), 0);
}

Test(multilock, refuses_leases_and_bad_counts)
{
	struct zkl_lockreq *lr;

	cr_assert_eq(lockreq_new_multi(s, dirs, 0, ZKL_MODE_WRITE, 0, "", 0,
				       fake_on_done, NULL, &lr),
		     -EINVAL);
	cr_assert_eq(lockreq_new_multi(s, dirs, 2, ZKL_MODE_LEASE, 0, "", 0,
				       fake_on_done, NULL, &lr),
		     -EINVAL);
	cr_assert_eq(lockreq_new_multi(s, dirs, LOCKREQ_MULTI_MAX + 1,
				       ZKL_MODE_WRITE, 0, "", 0, fake_on_done,
				       NULL, &lr),
		     -EINVAL);
}

Test(multilock,
     a_release_whose_transaction_finds_a_node_gone_deletes_one_by_one)
{
	struct zkl_lockreq *lr = held_both();
	lockreq_release(lr);
	/* Someone deleted one of them meanwhile: the transaction fails
	 * whole, and each member deletes its own. */
	expect_deleted_together(ZNONODE);
	expect_both_deleted();
	cr_assert_eq(fake_pending(), 0);
}

Test(multilock, a_release_lost_with_the_connection_is_sent_again)
{
	struct zkl_lockreq *lr = held_both();
	lockreq_release(lr);
	pthread_mutex_lock(&s->lock);
	s->state = ZKL_CONN_CONNECTING;
	pthread_mutex_unlock(&s->lock);
	expect_deleted_together(ZCONNECTIONLOSS);
	cr_assert_eq(fake_pending(), 0, "nothing until connected");
	pthread_mutex_lock(&s->lock);
	s->state = ZKL_CONN_CONNECTED;
	pthread_mutex_unlock(&s->lock);
	fake_resume_all(s);
	expect_both_deleted();
	cr_assert_eq(fake_pending(), 0);
}

Test(multilock, a_held_multi_lock_lost_with_its_session_is_reported_once)
{
	struct zkl_lockreq *lr = start(0);
	struct zkl_link lost;
	int64_t token, sid;
	char path[1200];
	int reports = 0;

	created(5);
	token_and_listings(NULL);
	own_watches(2);
	fake_expire(s, 1, &lost);
	for (struct zkl_link *l = lost.next; l != &lost; l = l->next)
		reports++;
	fake_free_lost(&lost);
	cr_assert_eq(reports, 1, "one report for the multi-lock, not %d",
		     reports);
	cr_assert_eq(lockreq_describe(lr, &token, path, sizeof(path), &sid),
		     -EIO);
	cr_assert_eq(fake_done_calls, 1, "told nothing more");
	lockreq_release(lr);
	cr_assert_eq(fake_pending(), 0, "its nodes went with the session");
}

Test(multilock, its_members_nodes_carry_its_tag_so_its_owner_can_skip_them)
{
	struct zkl_lockreq *lr = start(0);
	struct fake_call *c = fake_peek(FAKE_MULTI);

	for (int i = 0; i < 2; i++)
		cr_assert(strstr(c->ops[i].create_op.path, lockreq_guid(lr)),
			  "%s lacks the multi-lock's tag %s",
			  c->ops[i].create_op.path, lockreq_guid(lr));
	lockreq_cancel(lr);
	lockreq_release(lr);
	created(5);
	expect_both_deleted();
}

/* After a lost reply, one member finds its node and the other does not
 * (another client deleted it): the lock fails, no node is made alone, and
 * the one found is deleted.  first_found: which member's listing comes
 * first. */
static void partial_recovery(int first_found)
{
	struct zkl_lockreq *lr = start(0);
	struct fake_call *c = fake_peek(FAKE_MULTI);
	char found[1100];
	const char *none[] = { "unrelated" };
	const char *listed[] = { found };
	int k = first_found ? 0 : 1; /* the member whose node is there */

	snprintf(found, sizeof(found), "%s0000000003",
		 strrchr(c->ops[k].create_op.path, '/') + 1);
	memcpy(mine[k], found, sizeof(found));
	fake_lose_multi_reply_and_reconnect(s);
	if (first_found) {
		fake_complete_children(ZOK, listed, 1); /* r1: found */
		fake_complete_children(ZOK, none, 1);   /* r2: nothing */
		fake_complete_exists(ZOK, 77, 31);      /* r1's check */
	} else {
		fake_complete_children(ZOK, none, 1);   /* r1: nothing */
		fake_complete_children(ZOK, listed, 1); /* r2: found */
		fake_complete_exists(ZOK, 77, 31);      /* r2's check */
	}
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_eq(fake_done_err, -EIO);
	lockreq_release(lr);
	/* The node found is deleted (a listing its member lined up before
	 * the failure reached the multi-lock answers a request that moved
	 * on); no create of any kind was sent. */
	while (fake_pending()) {
		if (fake_peek_op() == FAKE_CHILDREN) {
			fake_complete_children(ZOK, listed, 1);
			continue;
		}
		struct fake_call d = fake_take();
		cr_assert(d.op == FAKE_DELETE, "unexpected call %d on %s", d.op,
			  d.path);
		cr_assert(strstr(d.path, found), "deletes %s", d.path);
		((void_completion_t)d.completion)(ZOK, d.data);
	}
}

Test(multilock, a_partial_recovery_found_first_fails_and_makes_no_node_alone)
{
	partial_recovery(1);
}

Test(multilock, a_partial_recovery_missing_first_fails_instead_of_hanging)
{
	partial_recovery(0);
}

/* lr_create_reply_locked's LR_CREATE_AGAIN for a multi-lock: a resource's
 * znode found missing at the transaction (ZNONODE, every member's) is made
 * again, and the members created again in one transaction. */
Test(multilock, a_missing_resource_is_made_and_the_transaction_sent_again)
{
	struct zkl_lockreq *lr = start(0);

	fake_complete_multi(ZNONODE, NULL);
	cr_assert_eq(fake_peek_op(), FAKE_CREATE_PARENT, "no parent made");
	while (fake_peek_op() == FAKE_CREATE_PARENT)
		fake_complete_void(FAKE_CREATE_PARENT, ZOK);
	cr_assert_eq(fake_done_calls, 0, "answered at a missing resource");
	cr_assert_eq(fake_pending(), 1, "one transaction again");
	cr_assert_eq(fake_peek(FAKE_MULTI)->count, 2);
	created(5);
	holds_then_lets_go(lr);
}

/* LR_CREATED_MAYBE for a multi-lock try: the transaction's reply lost
 * with the connection answers the try EAGAIN at once; once connected,
 * whatever the transaction made is found by its tag and deleted. */
Test(multilock, a_try_whose_transaction_reply_is_lost_is_eagain_at_once)
{
	struct zkl_lockreq *lr = start(LOCKREQ_TRY);
	const char *none[] = { "unrelated" };

	fake_lose_multi_reply_and_reconnect(s);
	cr_assert_eq(fake_done_calls, 1, "the try was not answered at once");
	cr_assert_eq(fake_done_err, -EAGAIN);
	while (fake_pending() && fake_peek_op() == FAKE_CHILDREN)
		fake_complete_children(ZOK, none, 1);
	cr_assert_eq(fake_pending(), 0, "a node was made for an answered try");
	lockreq_release(lr);
	cr_assert_eq(fake_pending(), 0);
}
