/*
 * A downgrade against a scripted ZooKeeper (lockreq_start_in_place): the
 * read node takes the write node's place in one transaction and is held
 * at once; a failure, a lost reply, a cancel and an expiry each give one
 * answer and leave no node.  And the waiter's side: a write node that
 * vanished unseen may have left an heir, so the waiter lists again.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fake_zk.h"
#include "internal.h"
#include "lockreq.h"

#define OTHER_WRITER "_c_0123abcd-0000-4000-8000-00000000000f-write-0000000001"
#define OTHER_READER "_c_0123abcd-0000-4000-8000-00000000000f-read-0000000001"

static struct zkl_session *s;
static char writer_name[256], heir_name[256];

static void setup(void)
{
	s = fake_session();
}

static void teardown(void)
{
	fake_session_free(s);
}

TestSuite(downgrade, .init = setup, .fini = teardown);

/* A held request: its node watched, then released, its node deleted and
 * nothing left to do. */
static void end_waited(struct zkl_lockreq *lr, const char *name)
{
	lockreq_release(lr);
	fake_expect_delete_of(name);
	cr_assert_eq(fake_pending(), 0);
}

/* A holder granted at once watches its own node from its grant. */
static void end_held(struct zkl_lockreq *lr, const char *name)
{
	fake_complete_own_watch(name);
	end_waited(lr, name);
}

/* A write lock held, first in line with sequence 5. */
static struct zkl_lockreq *held_writer(void)
{
	struct zkl_lockreq *lr;
	const char *path;

	cr_assert_eq(lockreq_new(s, "/b/r", ZKL_MODE_WRITE, 0, "id", 2,
				 fake_on_done, NULL, &lr),
		     0);
	cr_assert_eq(lockreq_start(lr), 0);
	path = fake_peek(FAKE_CREATE)->path;
	snprintf(writer_name, sizeof(writer_name), "%s0000000005",
		 strrchr(path, '/') + 1);
	fake_complete_create(ZOK, "0000000005", 1005);
	const char *names[] = { writer_name };
	fake_complete_children(ZOK, names, 1);
	cr_assert_eq(fake_done_err, 0);
	fake_complete_own_watch(writer_name);
	cr_assert_eq(fake_pending(), 0);
	return lr;
}

/* Its downgrade: the one transaction it sends, checked. */
static struct zkl_lockreq *downgrade(struct zkl_lockreq *from, unsigned flags)
{
	struct zkl_lockreq *lr;
	struct fake_call *c;
	char *at;

	cr_assert_eq(lockreq_new(s, "/b/r", ZKL_MODE_READ, flags, "rd", 2,
				 fake_on_done, NULL, &lr),
		     0);
	cr_assert_eq(lockreq_start_in_place(lr, from), 0);
	cr_assert_eq(fake_pending(), 1, "one transaction, nothing else");
	c = fake_peek(FAKE_MULTI);
	cr_assert_eq(c->count, 3);
	snprintf(heir_name, sizeof(heir_name), "%s", writer_name);
	at = strstr(heir_name, "-write-");
	cr_assert(at);
	memmove(at + strlen("-read-"), at + strlen("-write-"),
		strlen(at + strlen("-write-")) + 1);
	memcpy(at, "-read-", strlen("-read-"));
	cr_assert_eq(c->ops[0].type, ZOO_CREATE_OP);
	cr_assert(strstr(c->ops[0].create_op.path, heir_name),
		  "the heir is %s, with the write node's tag and number: %s",
		  heir_name, c->ops[0].create_op.path);
	cr_assert_eq(c->ops[0].create_op.flags, ZOO_EPHEMERAL,
		     "not sequential: the number is the write node's");
	cr_assert_eq(c->ops[1].type, ZOO_SETDATA_OP,
		     "the write node's watchers hear of a change first");
	cr_assert(strstr(c->ops[1].set_op.path, writer_name));
	cr_assert_eq(c->ops[2].type, ZOO_DELETE_OP);
	cr_assert(strstr(c->ops[2].delete_op.path, writer_name));
	return lr;
}

Test(downgrade, the_read_node_takes_the_write_nodes_place_and_holds_at_once)
{
	struct zkl_lockreq *lr = downgrade(held_writer(), 0);
	int64_t token, sid;
	char path[256];

	struct fake_call *c = fake_peek(FAKE_MULTI);

	cr_assert(memmem(c->ops[0].create_op.data, c->ops[0].create_op.datalen,
			 "token 1005\n", 11),
		  "its data says which token it holds, for holders");
	fake_multi_zxid = 4242;
	fake_complete_multi(ZOK, NULL);
	cr_assert_eq(fake_done_calls, 2, "granted without a listing");
	cr_assert_eq(fake_done_err, 0);
	fake_complete_own_watch(heir_name);
	cr_assert_eq(lockreq_describe(lr, &token, path, sizeof(path), &sid), 0);
	cr_assert_eq(token, 1005,
		     "the write lock's token: the same hold going on, below "
		     "the token of any writer queued behind");
	cr_assert(strstr(path, heir_name));
	cr_assert_eq(lockreq_mode(lr), ZKL_MODE_READ);
	cr_assert_eq(fake_pending(), 0, "the write node is not deleted again");
	lockreq_release(lr);
	fake_expect_delete_of(heir_name);
	cr_assert_eq(fake_pending(), 0);
}

Test(downgrade, a_write_node_deleted_by_another_client_fails_it)
{
	struct zkl_lockreq *lr = downgrade(held_writer(), 0);

	fake_complete_multi(ZNONODE, NULL);
	cr_assert_eq(fake_done_calls, 2);
	cr_assert_eq(fake_done_err, -EIO, "the lock was not ours to pass on");
	fake_expect_delete_of(writer_name); /* should it be there after all */
	cr_assert_eq(fake_pending(), 0);
	lockreq_release(lr);
	cr_assert_eq(fake_pending(), 0);
}

Test(downgrade, a_lost_reply_is_settled_by_the_heirs_name_found)
{
	struct zkl_lockreq *lr = downgrade(held_writer(), 0);
	const char *after[] = { heir_name };

	fake_lose_multi_reply_and_reconnect(s);
	fake_complete_children(ZOK, after, 1);
	cr_assert(strstr(fake_peek(FAKE_EXISTS)->path, heir_name));
	fake_complete_exists(ZOK, 77, 4300);
	fake_complete_children(ZOK, after, 1);
	cr_assert_eq(fake_done_calls, 2);
	cr_assert_eq(fake_done_err, 0);
	fake_complete_own_watch(heir_name);
	cr_assert_eq(fake_pending(), 0, "the write node went with the heir");
	lockreq_release(lr);
	fake_expect_delete_of(heir_name);
	cr_assert_eq(fake_pending(), 0);
}

Test(downgrade, a_lost_reply_with_no_heir_sends_the_transaction_again)
{
	struct zkl_lockreq *lr = downgrade(held_writer(), 0);
	const char *before[] = { writer_name };

	fake_lose_multi_reply_and_reconnect(s);
	fake_complete_children(ZOK, before, 1);
	cr_assert_eq(fake_peek(FAKE_MULTI)->count, 3,
		     "the write lock still holds: it takes its place now");
	cr_assert_eq(fake_done_calls, 1);
	fake_complete_multi(ZOK, NULL);
	cr_assert_eq(fake_done_err, 0);
	end_held(lr, heir_name);
}

Test(downgrade, a_cancel_during_the_transaction_leaves_no_node)
{
	struct zkl_lockreq *lr = downgrade(held_writer(), 0);

	cr_assert_eq(lockreq_cancel(lr), 0);
	/* The write lock is let go now; its delete follows the
	 * transaction, which it finds done. */
	cr_assert_eq(fake_peek_op(), FAKE_MULTI);
	fake_complete_multi(ZOK, NULL);
	cr_assert_eq(fake_done_calls, 1, "no answer after a cancel");
	/* The heir, and the write node (gone already: harmless). */
	cr_assert_eq(fake_pending(), 2);
	fake_complete_void(FAKE_DELETE, ZNONODE);
	fake_expect_delete_of(heir_name);
	cr_assert_eq(fake_pending(), 0);
	lockreq_release(lr);
	cr_assert_eq(fake_pending(), 0);
}

Test(downgrade, a_write_lock_not_held_is_let_go_and_the_reader_queues)
{
	struct zkl_lockreq *from, *lr;

	cr_assert_eq(lockreq_new(s, "/b/r", ZKL_MODE_WRITE, 0, "id", 2,
				 fake_on_done, NULL, &from),
		     0);
	cr_assert_eq(lockreq_new(s, "/b/r", ZKL_MODE_READ, 0, "rd", 2,
				 fake_on_done, NULL, &lr),
		     0);
	cr_assert_eq(lockreq_start_in_place(lr, from), 0);
	cr_assert_eq(fake_peek_op(), FAKE_CREATE, "a plain request");
	cr_assert_eq(fake_peek(FAKE_CREATE)->mode, ZOO_EPHEMERAL_SEQUENTIAL);
	lockreq_release(lr);
	fake_complete_create(ZOK, "0000000007", 1007);
	cr_assert_eq(fake_peek_op(), FAKE_CHILDREN);
	fake_complete_children(ZOK, NULL, 0);
	cr_assert_eq(fake_peek_op(), FAKE_DELETE);
	fake_complete_void(FAKE_DELETE, ZOK);
	cr_assert_eq(fake_pending(), 0);
	cr_assert_eq(fake_done_calls, 0);
}

Test(downgrade, an_expiry_during_the_transaction_loses_the_lock_once)
{
	struct zkl_lockreq *from = held_writer(), *lr = downgrade(from, 0);
	struct zkl_link lost;

	fake_expire(s, 1, &lost);
	cr_assert(!list_empty(&lost), "the write lock is lost");
	fake_free_lost(&lost);
	cr_assert_eq(fake_done_calls, 1,
		     "the reader waits for the next session");
	fake_complete_multi(ZCONNECTIONLOSS, NULL); /* the old handle's */
	fake_resume_all(s);
	/* A plain reader on the new session. */
	cr_assert_eq(fake_peek(FAKE_CREATE)->mode, ZOO_EPHEMERAL_SEQUENTIAL);
	lockreq_release(lr);
	fake_complete_create(ZOK, "0000000009", 1009);
	fake_complete_children(ZOK, NULL, 0);
	fake_complete_void(FAKE_DELETE, ZOK);
	cr_assert_eq(fake_pending(), 0);
}

/* ---- the waiter's side ------------------------------------------------- */

/* A writer waiting behind `ahead` (sequence 1), itself sequence 2,
 * watching it. */
static struct zkl_lockreq *waiting_behind(const char *ahead, char *mine,
					  size_t size)
{
	struct zkl_lockreq *lr;
	const char *path;

	cr_assert_eq(lockreq_new(s, "/b/r", ZKL_MODE_WRITE, 0, "id", 2,
				 fake_on_done, NULL, &lr),
		     0);
	cr_assert_eq(lockreq_start(lr), 0);
	path = fake_peek(FAKE_CREATE)->path;
	snprintf(mine, size, "%s0000000002", strrchr(path, '/') + 1);
	fake_complete_create(ZOK, "0000000002", 1002);
	const char *names[] = { ahead, mine };
	fake_complete_children(ZOK, names, 2);
	fake_complete_own_watch(mine); /* before the wait's */
	cr_assert(strstr(fake_peek(FAKE_GET)->path, ahead));
	return lr;
}

Test(downgrade, a_write_node_found_missing_may_have_an_heir_so_list_again)
{
	char mine[256];
	struct zkl_lockreq *lr =
		waiting_behind(OTHER_WRITER, mine, sizeof(mine));

	fake_complete_get(ZNONODE);
	cr_assert_eq(fake_done_calls, 0,
		     "not granted on a view older than a possible heir");
	cr_assert_eq(fake_peek_op(), FAKE_CHILDREN);
	const char *names[] = { OTHER_READER, mine };
	fake_complete_children(ZOK, names, 2);
	cr_assert_eq(fake_done_calls, 0, "the heir is ahead");
	cr_assert(strstr(fake_peek(FAKE_GET)->path, OTHER_READER));
	lockreq_release(lr);
	fake_complete_get(ZOK);
	fake_expect_delete_of(mine);
	cr_assert_eq(fake_pending(), 0);
}

Test(downgrade, a_write_nodes_deletion_seen_as_it_happened_is_trusted)
{
	char mine[256];
	struct zkl_lockreq *lr =
		waiting_behind(OTHER_WRITER, mine, sizeof(mine));

	fake_complete_get(ZOK);
	fake_fire_watch("/b/r/" OTHER_WRITER);
	cr_assert_eq(fake_done_calls, 1, "no listing: a handoff costs nothing");
	cr_assert_eq(fake_done_err, 0);
	end_waited(lr, mine);
}

Test(downgrade, a_deletion_told_after_a_reconnection_is_not_trusted)
{
	char mine[256];
	struct zkl_lockreq *lr =
		waiting_behind(OTHER_WRITER, mine, sizeof(mine));

	fake_complete_get(ZOK);
	/* The connection broke and came back: the server tells the
	 * deletion alone, even of a node whose data was set first. */
	pthread_mutex_lock(&s->lock);
	s->watches.connection++;
	pthread_mutex_unlock(&s->lock);
	fake_fire_watch("/b/r/" OTHER_WRITER);
	cr_assert_eq(fake_done_calls, 0);
	cr_assert_eq(fake_peek_op(), FAKE_CHILDREN);
	const char *names[] = { mine };
	fake_complete_children(ZOK, names, 1);
	cr_assert_eq(fake_done_calls, 1);
	end_waited(lr, mine);
}

Test(downgrade, a_reader_found_missing_is_gone_for_sure)
{
	char mine[256];
	struct zkl_lockreq *lr =
		waiting_behind(OTHER_READER, mine, sizeof(mine));

	fake_complete_get(ZNONODE);
	cr_assert_eq(fake_done_calls, 1, "a read node leaves no heir");
	end_waited(lr, mine);
}

Test(downgrade, a_try_is_no_try_once_it_takes_the_place)
{
	struct zkl_lockreq *lr = downgrade(held_writer(), LOCKREQ_TRY);
	const char *after[] = { heir_name };

	fake_lose_multi_reply_and_reconnect(s);
	cr_assert_eq(fake_done_calls, 1,
		     "not answered EAGAIN: nobody can block it, and the write "
		     "lock may be gone already");
	fake_complete_children(ZOK, after, 1);
	fake_complete_exists(ZOK, 77, 4300);
	fake_complete_children(ZOK, after, 1);
	cr_assert_eq(fake_done_err, 0);
	end_held(lr, heir_name);
}

Test(downgrade, only_a_plain_write_lock_of_one_owner_gives_its_place)
{
	struct zkl_lockreq *from = held_writer();

	cr_assert_eq(lockreq_place_to_take(from, ZKL_MODE_READ), 0);
	cr_assert_eq(lockreq_place_to_take(from, ZKL_MODE_WRITE), 1,
		     "held that way already: kept");
	cr_assert_eq(lockreq_place_to_take(from, ZKL_MODE_LEASE), -EINVAL,
		     "not a downgrade: the old way");
	fake_set_state(s, ZKL_CONN_CONNECTING);
	cr_assert_eq(lockreq_place_to_take(from, ZKL_MODE_READ), -EAGAIN,
		     "a try fails, keeping the lock, while disconnected");
	fake_set_state(s, ZKL_CONN_CONNECTED);
	cr_assert_eq(lockreq_share(from), 0);
	cr_assert_eq(lockreq_place_to_take(from, ZKL_MODE_READ), -EBUSY,
		     "another owner holds it still: it stays a write lock");
	lockreq_release(from);
	cr_assert_eq(lockreq_place_to_take(from, ZKL_MODE_READ), 0);
	lockreq_release(from);
	fake_expect_delete_of(writer_name);
	cr_assert_eq(fake_pending(), 0);
}

Test(downgrade, a_shared_write_lock_is_let_go_once_and_the_reader_queues)
{
	struct zkl_lockreq *from = held_writer(), *lr;

	cr_assert_eq(lockreq_share(from), 0);
	cr_assert_eq(lockreq_new(s, "/b/r", ZKL_MODE_READ, 0, "rd", 2,
				 fake_on_done, NULL, &lr),
		     0);
	cr_assert_eq(lockreq_start_in_place(lr, from), 0);
	cr_assert_eq(fake_peek_op(), FAKE_CREATE,
		     "a plain reader: the other owner keeps the write node");
	cr_assert_eq(lockreq_owners(from), 1);
	lockreq_release(lr);
	fake_complete_create(ZOK, "0000000007", 1007);
	fake_complete_children(ZOK, NULL, 0);
	fake_complete_void(FAKE_DELETE, ZOK);
	lockreq_release(from);
	fake_expect_delete_of(writer_name);
	cr_assert_eq(fake_pending(), 0);
}
