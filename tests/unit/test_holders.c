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
	unsigned limit;
	struct {
		char name[128];
		enum holders_state state;
		enum zkl_mode mode;
		enum zkl_style style;
		int64_t token;
		char data[64];
	} nodes[8];
};

static void on_holders(int err, const struct holders_node *nodes, size_t n,
		       unsigned limit, void *arg)
{
	struct answer *a = arg;

	a->calls++;
	a->err = err;
	a->n = n;
	a->limit = limit;
	cr_assert_leq(n, 8);
	for (size_t i = 0; i < n; i++) {
		strcpy(a->nodes[i].name, nodes[i].name);
		a->nodes[i].state = nodes[i].state;
		a->nodes[i].mode = nodes[i].mode;
		a->nodes[i].style = nodes[i].style;
		a->nodes[i].token = nodes[i].token;
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
