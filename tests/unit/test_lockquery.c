/* lockquery (F_GETLK): the first node in the way and its holder, with
 * ZooKeeper's replies scripted (fake_zk.c). */
#include <criterion/criterion.h>
#include <string.h>

#include "fake_zk.h"
#include "lockquery.h"

#define WRITER "_c_0123abcd-0000-4000-8000-00000000000a-write-0000000001"
#define READER "_c_0123abcd-0000-4000-8000-00000000000b-read-0000000002"

struct answer {
	int calls;
	int err;
	int blocked;
	enum zkl_mode mode;
	char node[128];
	char data[64];
};

static void on_answer(int err, const struct lockquery_answer *a, void *arg)
{
	struct answer *out = arg;

	out->calls++;
	out->err = err;
	if (err < 0)
		return;
	out->blocked = a->blocked;
	out->mode = a->mode;
	if (a->node)
		snprintf(out->node, sizeof(out->node), "%s", a->node);
	if (a->data)
		snprintf(out->data, sizeof(out->data), "%.*s", (int)a->datalen,
			 a->data);
}

static struct zkl_session *s;

static void setup(void)
{
	s = fake_session();
}

static void teardown(void)
{
	fake_session_free(s);
}

TestSuite(lockquery, .init = setup, .fini = teardown);

static void listed(const char *const *names, int n)
{
	fake_complete_children(ZOK, names, n);
}

Test(lockquery, a_writer_in_the_way_is_reported_with_its_holder)
{
	static const char *const q[] = { READER, WRITER };
	struct answer a = { 0 };

	cr_assert_eq(lockquery_start(s, "/b/r", ZKL_MODE_READ, NULL, 0,
				     on_answer, &a),
		     0);
	listed(q, 2);
	cr_assert(strstr(fake_peek(FAKE_READ)->path, WRITER));
	fake_complete_read(ZOK, "pid 42", 1001, 0);
	cr_assert_eq(a.calls, 1);
	cr_assert_eq(a.err, 0);
	cr_assert_eq(a.blocked, 1);
	cr_assert_eq(a.mode, ZKL_MODE_WRITE);
	cr_assert_str_eq(a.node, WRITER);
	cr_assert_str_eq(a.data, "pid 42");
	cr_assert_eq(fake_pending(), 0);
}

Test(lockquery, a_blocker_gone_before_its_read_and_no_other_is_no_lock)
{
	static const char *const q[] = { WRITER };
	struct answer a = { 0 };

	cr_assert_eq(lockquery_start(s, "/b/r", ZKL_MODE_WRITE, NULL, 0,
				     on_answer, &a),
		     0);
	listed(q, 1);
	fake_complete_read(ZNONODE, NULL, 0, 0);
	cr_assert_eq(a.calls, 0, "lists again");
	listed(NULL, 0);
	cr_assert_eq(a.calls, 1);
	cr_assert_eq(a.err, 0);
	cr_assert_eq(a.blocked, 0, "the lock that went is not reported");
	cr_assert_eq(fake_pending(), 0);
}

Test(lockquery, a_blocker_gone_before_its_read_reports_the_next_one)
{
	static const char *const first[] = { WRITER, READER };
	static const char *const then[] = { READER };
	struct answer a = { 0 };

	cr_assert_eq(lockquery_start(s, "/b/r", ZKL_MODE_WRITE, NULL, 0,
				     on_answer, &a),
		     0);
	listed(first, 2);
	fake_complete_read(ZNONODE, NULL, 0, 0);
	listed(then, 1);
	cr_assert(strstr(fake_peek(FAKE_READ)->path, READER));
	fake_complete_read(ZOK, "pid 7", 1002, 0);
	cr_assert_eq(a.calls, 1);
	cr_assert_eq(a.blocked, 1);
	cr_assert_eq(a.mode, ZKL_MODE_READ);
	cr_assert_str_eq(a.node, READER);
	cr_assert_str_eq(a.data, "pid 7");
}

Test(lockquery, our_own_nodes_are_skipped)
{
	static const char *const q[] = { WRITER };
	const char *skip[] = { "0123abcd-0000-4000-8000-00000000000a" };
	struct answer a = { 0 };

	cr_assert_eq(lockquery_start(s, "/b/r", ZKL_MODE_WRITE, skip, 1,
				     on_answer, &a),
		     0);
	listed(q, 1);
	cr_assert_eq(a.calls, 1);
	cr_assert_eq(a.blocked, 0);
	cr_assert_eq(fake_pending(), 0);
}
