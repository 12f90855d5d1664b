/* holders: one listing, one read per lock node, and who holds -- with
 * ZooKeeper's replies scripted (fake_zk.c). */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fake_zk.h"
#include "holders.h"

#define G "0123abcd-0000-4000-8000-00000000000"
#define OURS(g, mode, seq) "_c_" G g "-" mode "-" seq

struct answer {
	int calls;
	int err;
	size_t n;
	int sem; /* a semaphore line */
	struct holders_semaphore semaphore;
	unsigned limit;
	struct {
		char where[64];
		char name[128];
		enum holders_state state;
		enum zkl_mode mode;
		enum zkl_style style;
		int64_t token;
		char data[64];
	} nodes[8];
};

static void on_holders(int err, const struct holders_node *nodes, size_t n,
		       const struct holders_semaphore *sem, void *arg)
{
	struct answer *a = arg;

	a->calls++;
	a->err = err;
	a->n = n;
	a->sem = sem != NULL;
	if (sem)
		a->semaphore = *sem;
	a->limit = sem ? sem->limit : 0;
	cr_assert_leq(n, 8);
	for (size_t i = 0; i < n; i++) {
		strcpy(a->nodes[i].where, nodes[i].where);
		strcpy(a->nodes[i].name, nodes[i].name);
		a->nodes[i].state = nodes[i].state;
		a->nodes[i].mode = nodes[i].mode;
		a->nodes[i].style = nodes[i].style;
		a->nodes[i].token = nodes[i].token;
		if (nodes[i].len > 0) /* data is NULL for a node without */
			memcpy(a->nodes[i].data, nodes[i].data, nodes[i].len);
		a->nodes[i].data[nodes[i].len] = '\0';
	}
}

/* Ask for the holders of /b/r, and answer the listing with names. */
static void listed(struct zkl_session *s, const char *const *names, int n,
		   struct answer *a)
{
	cr_assert_eq(holders_start(s, "/b/r", on_holders, a), 0);
	fake_complete_children(ZOK, names, n);
}

Test(holders, reads_every_tools_lock_nodes_in_queue_order)
{
	struct zkl_session *s = fake_session();
	static const char *const listing[] = {
		"9f2c__lock__0000000002", /* kazoo's */
		OURS("c", "read", "0000000004"),
		"sub", /* a sub-resource */
		OURS("a", "write", "0000000001"),
		OURS("b", "read", "0000000003"),
		OURS("d", "write", "0000000005"),
	};
	struct answer a = { 0 };

	listed(s, listing, 6, &a);
	cr_assert_eq(fake_pending(), 5, "one read per lock node, sent at once");
	cr_assert_str_eq(fake_peek(FAKE_READ)->path,
			 "/b/r/" OURS("a", "write", "0000000001"));
	/* The writer ahead goes between the listing and its read: kazoo's
	 * writer behind it holds, and everyone behind that waits. */
	fake_complete_read(ZNONODE, NULL, 0, 0);
	fake_complete_read(ZOK, "10.0.0.1", 102, 0);
	fake_complete_read(ZOK, "pid 11\n", 103, 0);
	fake_complete_read(ZOK, "pid 12\n", 104, 0);
	cr_assert_eq(a.calls, 0, "answered before every read came back");
	fake_complete_read(ZOK, "pid 13\n", 105, 0);
	cr_assert_eq(a.calls, 1);
	cr_assert_eq(a.err, 0);
	cr_assert_eq(a.n, 4);
	cr_assert_eq(a.nodes[0].state, HOLDERS_HELD);
	cr_assert_eq(a.nodes[0].mode, ZKL_MODE_WRITE);
	cr_assert_eq(a.nodes[0].style, ZKL_STYLE_KAZOO);
	cr_assert_str_eq(a.nodes[0].name, "9f2c__lock__0000000002");
	cr_assert_str_eq(a.nodes[0].data, "10.0.0.1");
	cr_assert_eq(a.nodes[1].state, HOLDERS_WAITING,
		     "a reader waits behind another tool's writer");
	cr_assert_eq(a.nodes[1].mode, ZKL_MODE_READ);
	cr_assert_eq(a.nodes[1].style, ZKL_STYLE_ZKLOCKFS);
	cr_assert_eq(a.nodes[1].token, 103);
	cr_assert_str_eq(a.nodes[1].data, "pid 11\n");
	cr_assert_eq(a.nodes[2].state, HOLDERS_WAITING);
	cr_assert_eq(a.nodes[3].state, HOLDERS_WAITING);
	cr_assert_eq(a.nodes[3].mode, ZKL_MODE_WRITE);
	cr_assert_str_eq(a.nodes[3].where, "");
	cr_assert_not(a.sem, "no lease, no semaphore line");
	fake_session_free(s);
}

Test(holders, a_missing_resource_is_nobody_queued)
{
	struct zkl_session *s = fake_session();
	struct answer a = { 0 };

	cr_assert_eq(holders_start(s, "/b/none", on_holders, &a), 0);
	fake_complete_children(ZNONODE, NULL, 0);
	cr_assert_eq(a.calls, 1);
	cr_assert_eq(a.err, 0);
	cr_assert_eq(a.n, 0);
	cr_assert_eq(fake_pending(), 0, "nothing read, nothing created");
	fake_session_free(s);
}

Test(holders, a_failed_read_fails_the_whole_answer)
{
	struct zkl_session *s = fake_session();
	static const char *const listing[] = {
		OURS("a", "write", "0000000001"),
		OURS("b", "write", "0000000002"),
	};
	struct answer a = { 0 };

	listed(s, listing, 2, &a);
	fake_complete_read(ZCONNECTIONLOSS, NULL, 0, 0);
	fake_complete_read(ZOK, "pid 1\n", 2, 0);
	cr_assert_eq(a.calls, 1);
	cr_assert_eq(a.err, -EAGAIN, "no half-true answer");
	cr_assert_eq(a.n, 0);
	fake_session_free(s);
}

Test(holders, leases_hold_below_the_limit_read_with_them)
{
	struct zkl_session *s = fake_session();
	static const char *const listing[] = {
		OURS("a", "lease", "0000000001"),
		OURS("b", "write", "0000000002"),
		OURS("c", "lease", "0000000003"),
		OURS("d", "lease", "0000000004"),
	};
	struct answer a = { 0 };

	listed(s, listing, 4, &a);
	cr_assert_eq(fake_pending(), 5, "the nodes, and the resource's limit");
	for (int i = 0; i < 4; i++)
		fake_complete_read(ZOK, "pid 1\n", 1 + i, 0);
	cr_assert_str_eq(fake_peek(FAKE_READ)->path, "/b/r");
	fake_complete_read(ZOK, "2", 9, 0);
	cr_assert_eq(a.calls, 1);
	cr_assert_eq(a.err, 0);
	cr_assert_eq(a.limit, 2);
	cr_assert_eq(a.nodes[0].state, HOLDERS_HELD);
	cr_assert_eq(a.nodes[0].mode, ZKL_MODE_LEASE);
	cr_assert_eq(a.nodes[1].state, HOLDERS_HELD,
		     "a writer does not wait for leases");
	cr_assert_eq(a.nodes[2].state, HOLDERS_HELD, "two leases of two");
	cr_assert_eq(a.nodes[3].state, HOLDERS_WAITING);
	cr_assert(a.sem);
	cr_assert_eq(a.semaphore.held, 2);
	cr_assert_eq(a.semaphore.free, 0);
	fake_session_free(s);
}

Test(holders, leases_with_no_limit_readable_all_wait)
{
	struct zkl_session *s = fake_session();
	static const char *const listing[] = {
		OURS("a", "lease", "0000000001"),
	};
	struct answer a = { 0 };

	listed(s, listing, 1, &a);
	fake_complete_read(ZOK, "pid 1\n", 1, 0);
	fake_complete_read(ZOK, "five", 9, 0);
	cr_assert_eq(a.calls, 1);
	cr_assert_eq(a.limit, 0, "not a limit");
	cr_assert_eq(a.nodes[0].state, HOLDERS_WAITING);
	fake_session_free(s);
}

/* ---- the peers' semaphore layouts ------------------------------------- */

#define CLEASE(g, seq) "_c_" G g "-lease-" seq
#define CLOCK(g, seq) "_c_" G g "-lock-" seq
#define KLEASE(c) "0123456789abcdef0123456789abcde" c

/* holders of /b/r in a mount of dialect style: the resource's listing,
 * then the peer's directories' (asserting their paths). */
static void peer_listed(struct zkl_session *s, enum zkl_style style,
			const char *const *res, int nres,
			const char *const *leases, int nleases,
			const char *const *queue, int nqueue, struct answer *a)
{
	s->dialect = style;
	listed(s, res, nres, a);
	if (style == ZKL_STYLE_CURATOR) {
		cr_assert_str_eq(fake_peek(FAKE_CHILDREN)->path, "/b/r/leases");
		fake_complete_children(nleases ? ZOK : ZNONODE, leases,
				       nleases);
		cr_assert_str_eq(fake_peek(FAKE_CHILDREN)->path, "/b/r/locks");
	} else {
		cr_assert_str_eq(fake_peek(FAKE_CHILDREN)->path,
				 "/b/r-__lock__");
	}
	fake_complete_children(nqueue ? ZOK : ZNONODE, queue, nqueue);
}

Test(holders, curators_leases_and_its_locks_queue)
{
	struct zkl_session *s = fake_session();
	static const char *const res[] = { "leases", "locks" };
	static const char *const leases[] = {
		CLEASE("b", "0000000003"), CLEASE("a", "0000000001"),
		CLEASE("c", "0000000007"), /* made by the queue's first */
	};
	static const char *const queue[] = {
		CLOCK("e", "0000000011"),
		CLOCK("d", "0000000010"),
	};
	struct answer a = { 0 };

	peer_listed(s, ZKL_STYLE_CURATOR, res, 2, leases, 3, queue, 2, &a);
	cr_assert_eq(fake_pending(), 6, "five nodes and the limit");
	cr_assert_str_eq(fake_peek(FAKE_READ)->path,
			 "/b/r/leases/" CLEASE("b", "0000000003"));
	fake_complete_read(ZOK, "10.0.0.2", 30, 0);
	fake_complete_read(ZOK, "10.0.0.1", 20, 0);
	fake_complete_read(ZOK, "10.0.0.3", 60, 0);
	cr_assert_str_eq(fake_peek(FAKE_READ)->path,
			 "/b/r/locks/" CLOCK("d", "0000000010"));
	fake_complete_read(ZOK, "10.0.0.3", 50, 0); /* the counter */
	fake_complete_read(ZOK, "10.0.0.4", 70, 0);
	fake_complete_read(ZOK, "2", 9, 0);
	cr_assert_eq(a.calls, 1);
	cr_assert_eq(a.err, 0);
	cr_assert_eq(a.n, 4, "the counter's lock is shown as its lease");
	cr_assert_str_eq(a.nodes[0].where, "leases/");
	cr_assert_str_eq(a.nodes[0].name, CLEASE("a", "0000000001"));
	cr_assert_eq(a.nodes[0].state, HOLDERS_HELD);
	cr_assert_eq(a.nodes[0].mode, ZKL_MODE_LEASE);
	cr_assert_eq(a.nodes[0].style, ZKL_STYLE_CURATOR);
	cr_assert_str_eq(a.nodes[1].name, CLEASE("b", "0000000003"));
	cr_assert_eq(a.nodes[1].state, HOLDERS_HELD);
	cr_assert_str_eq(a.nodes[2].name, CLEASE("c", "0000000007"));
	cr_assert_eq(a.nodes[2].state, HOLDERS_WAITING,
		     "made after its lock, three of two: counting");
	cr_assert_str_eq(a.nodes[3].where, "locks/");
	cr_assert_str_eq(a.nodes[3].name, CLOCK("e", "0000000011"));
	cr_assert_eq(a.nodes[3].state, HOLDERS_WAITING);
	cr_assert_eq(a.nodes[3].mode, ZKL_MODE_LEASE);
	cr_assert_eq(a.nodes[3].token, 70);
	cr_assert(a.sem);
	cr_assert_eq(a.semaphore.limit, 2);
	cr_assert_eq(a.semaphore.held, 2);
	cr_assert_eq(a.semaphore.free, 0);
	fake_session_free(s);
}

Test(holders, curators_leases_above_a_lowered_limit_still_hold)
{
	struct zkl_session *s = fake_session();
	static const char *const res[] = { "leases" };
	static const char *const leases[] = {
		CLEASE("a", "0000000001"),
		CLEASE("b", "0000000002"),
	};
	static const char *const queue[] = { CLOCK("d", "0000000010") };
	struct answer a = { 0 };

	peer_listed(s, ZKL_STYLE_CURATOR, res, 1, leases, 2, queue, 1, &a);
	fake_complete_read(ZOK, "", 20, 0);
	fake_complete_read(ZOK, "", 30, 0);
	fake_complete_read(ZOK, "", 50, 0); /* queued after both */
	fake_complete_read(ZOK, "1", 9, 0);
	cr_assert_eq(a.n, 3);
	cr_assert_eq(a.nodes[0].state, HOLDERS_HELD);
	cr_assert_eq(a.nodes[1].state, HOLDERS_HELD,
		     "lowering the limit takes no lease away");
	cr_assert_str_eq(a.nodes[2].where, "locks/");
	cr_assert_eq(a.nodes[2].state, HOLDERS_WAITING);
	cr_assert_eq(a.semaphore.held, 2);
	cr_assert_eq(a.semaphore.free, 0);
	fake_session_free(s);
}

Test(holders, kazoos_leases_count_every_child_of_the_resource)
{
	struct zkl_session *s = fake_session();
	static const char *const res[] = {
		KLEASE("2"), "sub", KLEASE("1"),
		"9f2c__lock__0000000004", /* a lock beside the leases */
	};
	static const char *const queue[] = { "77__lock__0000000009" };
	struct answer a = { 0 };

	peer_listed(s, ZKL_STYLE_KAZOO, res, 4, NULL, 0, queue, 1, &a);
	cr_assert_eq(fake_pending(), 6,
		     "the lock, three children, the "
		     "queue's waiter and the limit");
	cr_assert_str_eq(fake_peek(FAKE_READ)->path,
			 "/b/r/9f2c__lock__0000000004");
	fake_complete_read(ZOK, "worker", 40, 0);
	fake_complete_read(ZOK, "", 31, 0);
	cr_assert_str_eq(fake_peek(FAKE_READ)->path, "/b/r/sub");
	fake_complete_read(ZOK, "", 35, 0);      /* kazoo counts it: shown */
	fake_complete_read(ZNONODE, NULL, 0, 0); /* returned meanwhile */
	cr_assert_str_eq(fake_peek(FAKE_READ)->path,
			 "/b/r-__lock__/77__lock__0000000009");
	fake_complete_read(ZOK, "me", 50, 0);
	fake_complete_read(ZOK, "5", 9, 0);
	cr_assert_eq(a.calls, 1);
	cr_assert_eq(a.n, 4);
	cr_assert_eq(a.nodes[0].mode, ZKL_MODE_WRITE);
	cr_assert_eq(a.nodes[0].state, HOLDERS_HELD);
	cr_assert_str_eq(a.nodes[1].where, "");
	cr_assert_str_eq(a.nodes[1].name, KLEASE("2"));
	cr_assert_eq(a.nodes[1].style, ZKL_STYLE_KAZOO);
	cr_assert_eq(a.nodes[1].state, HOLDERS_HELD);
	cr_assert_str_eq(a.nodes[2].name, "sub",
			 "a child kazoo counts as a lease is shown as one");
	cr_assert_eq(a.nodes[2].mode, ZKL_MODE_LEASE);
	cr_assert_eq(a.nodes[2].state, HOLDERS_HELD);
	cr_assert_str_eq(a.nodes[3].where, "../r-__lock__/");
	cr_assert_eq(a.nodes[3].state, HOLDERS_WAITING);
	cr_assert_eq(a.nodes[3].mode, ZKL_MODE_LEASE);
	cr_assert_eq(a.semaphore.held, 2);
	cr_assert_eq(a.semaphore.free, 1, "five, less the four children");
	fake_session_free(s);
}

Test(holders, a_peer_layout_with_no_semaphore_has_no_line)
{
	struct zkl_session *s = fake_session();
	static const char *const res[] = { OURS("a", "write", "0000000001") };
	struct answer a = { 0 };

	peer_listed(s, ZKL_STYLE_KAZOO, res, 1, NULL, 0, NULL, 0, &a);
	fake_complete_read(ZOK, "pid 1\n", 1, 0);
	cr_assert_eq(a.calls, 1);
	cr_assert_eq(a.n, 1);
	cr_assert_not(a.sem);
	fake_session_free(s);
}
