/* Lock node names: parsing, formatting, ordering, and who watches whom. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "names.h"

#define G1 "0123abcd-0000-4000-8000-00000000000a"
#define G2 "0123abcd-0000-4000-8000-00000000000b"

Test(names, parses_write_and_read_nodes)
{
	struct zkl_node n;

	cr_assert_eq(names_parse("_c_" G1 "-write-0000000042", &n), 0);
	cr_assert_eq(n.mode, ZKL_MODE_WRITE);
	cr_assert_eq(n.seq, 42);
	cr_assert_eq(memcmp(n.guid, G1, NAMES_GUID_LEN), 0);
	cr_assert_eq(names_parse("_c_" G2 "-read-0000000007", &n), 0);
	cr_assert_eq(n.mode, ZKL_MODE_READ);
	cr_assert_eq(n.seq, 7);
}

Test(names, parses_wrapped_negative_sequence)
{
	struct zkl_node n;

	cr_assert_eq(names_parse("_c_" G1 "-write--2147483648", &n), 0);
	cr_assert_eq(n.seq, INT32_MIN);
	cr_assert_eq(names_parse("_c_" G1 "-write-2147483647", &n), 0);
	cr_assert_eq(n.seq, INT32_MAX);
}

Test(names, rejects_foreign_and_malformed_names)
{
	static const char *const bad[] = {
		"",
		"deploy",
		"write-0000000001",
		"_c_-write-0000000001",
		"_c_" G1 "-write-",
		"_c_" G1 "-write-12",
		"_c_" G1 "-write-00000000001",
		"_c_" G1 "-writ-0000000001",
		"_c_" G1 "-write-000000000x",
		"_c_" G1 "-write-2147483648",
		"_c_" G1 "-write--2147483649",
		"_c_0123ABCD-0000-4000-8000-00000000000a-write-0000000001",
		"_c_" G1 "-lock-0000000001",
		"x_c_" G1 "-read-0000000001",
	};
	struct zkl_node n;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(names_parse(bad[i], &n), -EINVAL,
			     "'%s' should not parse as a lock node", bad[i]);
}

Test(names, formats_the_create_prefix)
{
	char buf[128];
	int n = names_format_prefix(buf, sizeof(buf), G1, ZKL_MODE_READ);

	cr_assert_eq(n, (int)strlen("_c_" G1 "-read-"));
	cr_assert_str_eq(buf, "_c_" G1 "-read-");
	cr_assert_eq(names_format_prefix(buf, 10, G1, ZKL_MODE_READ),
		     -ENAMETOOLONG);
}

Test(names, fresh_guids_are_well_formed_and_differ)
{
	char a[NAMES_GUID_LEN + 1], b[NAMES_GUID_LEN + 1], name[128];
	struct zkl_node n;

	cr_assert_eq(names_guid_new(a), 0);
	cr_assert_eq(names_guid_new(b), 0);
	cr_assert_str_neq(a, b);
	snprintf(name, sizeof(name), "_c_%s-write-0000000001", a);
	cr_assert_eq(names_parse(name, &n), 0, "guid %s not accepted", a);
}

Test(names, ordering_survives_sequence_wrap)
{
	cr_assert(names_seq_before(1, 2));
	cr_assert(!names_seq_before(2, 1));
	cr_assert(names_seq_before(INT32_MAX, INT32_MIN),
		  "2147483647 must come before -2147483648");
	cr_assert(names_seq_before(INT32_MAX - 5, INT32_MIN + 5));
}

Test(names, collect_sorts_and_skips_foreign_children)
{
	char *children[] = {
		"_c_" G2 "-read--2147483648", "sub-resource",
		"_c_" G1 "-write-2147483646", "garbage-0000000001",
		"_c_" G2 "-write-2147483647",
	};
	struct zkl_node v[5];
	size_t n = names_collect(children, 5, v);

	cr_assert_eq(n, 3);
	cr_assert_eq(v[0].seq, 2147483646);
	cr_assert_eq(v[1].seq, 2147483647);
	cr_assert_eq(v[2].seq, INT32_MIN);
	cr_assert_eq(names_find(v, n, children[4]), 1);
	cr_assert_eq(names_find(v, n, "sub-resource"), -1);
	cr_assert_eq(names_find_guid(v, n, 0, G2), 1);
	cr_assert_eq(names_find_guid(v, n, 2, G2), 2);
	cr_assert_eq(names_find_guid(v, n, 0,
				     "ffffffff-0000-4000-8000-000000000000"),
		     -1);
}

static size_t build(const char *modes, struct zkl_node *v)
{
	size_t n = strlen(modes);

	for (size_t i = 0; i < n; i++) {
		v[i].name = "x";
		v[i].guid = i % 2 ? G2 : G1;
		v[i].seq = (int32_t)i;
		v[i].mode = modes[i] == 'w' ? ZKL_MODE_WRITE : ZKL_MODE_READ;
	}
	return n;
}

Test(names, first_node_holds)
{
	struct zkl_node v[4];

	build("wrr", v);
	cr_assert_eq(names_pick_watch(v, NULL, 0, 0), -1);
}

Test(names, writer_watches_its_immediate_predecessor)
{
	struct zkl_node v[8];

	build("rrrw", v);
	cr_assert_eq(names_pick_watch(v, NULL, 0, 3), 2);
	build("wrw", v);
	cr_assert_eq(names_pick_watch(v, NULL, 0, 2), 1);
}

Test(names, reader_watches_nearest_writer_ahead)
{
	struct zkl_node v[8];

	build("rrwrrr", v);
	cr_assert_eq(names_pick_watch(v, NULL, 0, 1), -1, "readers share");
	cr_assert_eq(names_pick_watch(v, NULL, 0, 3), 2);
	cr_assert_eq(names_pick_watch(v, NULL, 0, 5), 2,
		     "a reader skips the readers ahead to the writer");
	build("wrwr", v);
	cr_assert_eq(names_pick_watch(v, NULL, 0, 3), 2,
		     "a waiting writer ahead blocks a later reader");
}

Test(names, deleted_nodes_ahead_are_skipped)
{
	struct zkl_node v[8];
	unsigned char gone[8] = { 0 };

	build("wwrww", v);
	gone[3] = 1;
	cr_assert_eq(names_pick_watch(v, gone, 0, 4), 2,
		     "a writer watches the nearest node still there");
	gone[2] = 1;
	cr_assert_eq(names_pick_watch(v, gone, 0, 4), 1);
	cr_assert_eq(names_pick_watch(v, gone, 2, 4), -1,
		     "nothing before lo counts");
	memset(gone, 0, sizeof(gone));
	build("wrwrr", v);
	gone[2] = 1;
	cr_assert_eq(names_pick_watch(v, gone, 0, 4), 0,
		     "a reader skips a deleted writer to the one before");
	cr_assert_eq(names_pick_watch(v, gone, 1, 4), -1,
		     "no writer left ahead: the reader holds");
}

Test(names, find_is_exact_on_name_and_sequence)
{
	char *children[] = {
		"_c_" G1 "-write-0000000003",
		"_c_" G2 "-read-0000000001",
		"_c_" G1 "-read-0000000007",
		"_c_" G2 "-write-0000000005",
	};
	struct zkl_node v[4];
	size_t n = names_collect(children, 4, v);

	for (size_t i = 0; i < 4; i++)
		cr_assert_eq(strcmp(v[names_find(v, n, children[i])].name,
				    children[i]),
			     0);
	cr_assert_eq(names_find(v, n, "_c_" G2 "-write-0000000003"), -1,
		     "same sequence, other name");
	cr_assert_eq(names_find(v, n, "_c_" G1 "-write-0000000004"), -1);
	cr_assert_eq(names_find(v, 0, children[0]), -1);
}

Test(names, first_blocker_of_a_request_queued_now)
{
	struct zkl_node v[8];
	size_t n = build("rrwr", v);
	const char *mine[] = { G1 };

	cr_assert_eq(names_first_blocker(v, n, ZKL_MODE_WRITE, NULL, 0), 0,
		     "a writer waits for everyone: the first holder");
	cr_assert_eq(names_first_blocker(v, n, ZKL_MODE_READ, NULL, 0), 2,
		     "a reader waits for the first writer only");
	cr_assert_eq(names_first_blocker(v, 0, ZKL_MODE_WRITE, NULL, 0), -1);
	n = build("rr", v);
	cr_assert_eq(names_first_blocker(v, n, ZKL_MODE_READ, NULL, 0), -1,
		     "readers share");
	/* Even indexes carry G1: skip them as the caller's own nodes. */
	n = build("rwr", v);
	cr_assert_eq(names_first_blocker(v, n, ZKL_MODE_WRITE, mine, 1), 1);
	n = build("w", v);
	cr_assert_eq(names_first_blocker(v, n, ZKL_MODE_WRITE, mine, 1), -1,
		     "one's own lock does not block one's own test");
}

Test(names, foreign_lock_nodes_parse_with_their_mode)
{
	static const struct {
		const char *name;
		enum zkl_mode mode;
		int32_t seq;
	} ok[] = {
		{ "_c_" G1 "-__WRIT__0000000003", ZKL_MODE_WRITE, 3 },
		{ "_c_" G1 "-__READ__0000000004", ZKL_MODE_READ, 4 },
		{ "9f2c__lock__0000000005", ZKL_MODE_WRITE, 5 },
		{ "9f2c__rlock__0000000006", ZKL_MODE_READ, 6 },
		{ "_c_" G2 "-lock-0000000007", ZKL_MODE_WRITE, 7 },
		{ "write-0000000008", ZKL_MODE_WRITE, 8 },
		{ "read-0000000009", ZKL_MODE_READ, 9 },
		{ "x-read-0000000010", ZKL_MODE_READ, 10 },
		{ "write--2147483648", ZKL_MODE_WRITE, INT32_MIN },
		{ "write-1000000001", ZKL_MODE_WRITE, 1000000001 },
	};
	static const char *const bad[] = {
		"_c_" G1 "-write-0000000001", /* ours */
		"deploy",
		"backup0000000001",
		"overwrite-0000000001",
		"write-000000001",
		"write-00000000x1",
		"__lock__",
		"",
	};
	enum zkl_mode mode;
	int32_t seq;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		cr_assert_eq(names_parse_foreign(ok[i].name, &mode, &seq), 0,
			     "%s", ok[i].name);
		cr_assert_eq(mode, ok[i].mode, "%s", ok[i].name);
		cr_assert_eq(seq, ok[i].seq, "%s", ok[i].name);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(names_parse_foreign(bad[i], &mode, &seq), -EINVAL,
			     "%s", bad[i]);
}
