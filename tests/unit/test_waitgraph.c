/* Deadlocks across hosts (waitgraph.h): the names and data of the records
 * that publish a wait's pins, read back as a walker reads them. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "waitgraph.h"

#define PIN "_c_0123abcd-0000-4000-8000-00000000000a-write-0000000007"

Test(waitgraph, a_record_name_gives_back_its_queue_and_pinned_node)
{
	char name[512];
	const char *pin;
	size_t len;
	uint64_t dir;
	int n = waitgraph_record_name("/zklockfs/ra", PIN, "/zklockfs/rb/w-1",
				      name, sizeof(name));

	cr_assert_eq(n, (int)strlen(name));
	cr_assert_eq(waitgraph_record_parse(name, &dir, &pin, &len), 0);
	cr_assert_eq(dir, waitgraph_hash("/zklockfs/ra"));
	cr_assert_eq(len, strlen(PIN));
	cr_assert_eq(memcmp(pin, PIN, len), 0);
	cr_assert_eq(waitgraph_record_name("/zklockfs/ra", PIN, "/w", name, 40),
		     -ENAMETOOLONG);
}

Test(waitgraph, two_waits_pinning_one_node_have_two_records)
{
	char a[512], b[512];

	waitgraph_record_name("/b/r", PIN, "/b/q/one", a, sizeof(a));
	waitgraph_record_name("/b/r", PIN, "/b/q/two", b, sizeof(b));
	cr_assert_str_neq(a, b);
}

Test(waitgraph, a_name_that_is_no_record_is_refused)
{
	static const char *const bad[] = {
		"",
		"0123456789abcdef~x",
		"0123456789abcdeg~" PIN "~0123456789abcdef",
		"0123456789abcdef~~0123456789abcdef",
		"0123456789abcdef~a~b~0123456789abcdef",
		"0123456789ABCDEF~" PIN "~0123456789abcdef",
	};
	const char *pin;
	size_t len;
	uint64_t dir;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(waitgraph_record_parse(bad[i], &dir, &pin, &len),
			     -EINVAL, "%s", bad[i]);
}

Test(waitgraph, a_record_says_the_timeout_who_and_every_wait)
{
	const char *const waits[] = { "/zklockfs/a/n-1", "/zklockfs/b/n-1" };
	char data[512];
	const char *paths[4], *who;
	size_t lens[4], who_len;
	int64_t timeout;
	int n = waitgraph_record_data(4000, "web1~42 (sh)", waits, 2, data,
				      sizeof(data));

	cr_assert_gt(n, 0);
	cr_assert_eq(waitgraph_record_parse_data(data, (size_t)n, &timeout,
						 &who, &who_len, paths, lens,
						 4),
		     2);
	cr_assert_eq(timeout, 4000);
	cr_assert_eq(who_len, strlen("web1~42 (sh)"));
	cr_assert_eq(memcmp(who, "web1~42 (sh)", who_len), 0);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(lens[i], strlen(waits[i]));
		cr_assert_eq(memcmp(paths[i], waits[i], lens[i]), 0);
	}
	cr_assert_eq(waitgraph_record_data(1, "two\nlines", waits, 1, data,
					   sizeof(data)),
		     -EINVAL, "who is one line");
}

Test(waitgraph, data_that_is_no_record_is_refused)
{
	static const char *const bad[] = {
		"",
		"4000\n",
		"x\nwho\n/a\n",
		"4000\nwho\n",
		"4000\nwho\nrelative\n",
		"4000\nwho\n/a",
		"4000\nwho\n\n",
		/* a Curator revoker's mark, an identity */
		"__REVOKE__",
		"host web1\npid 4\n",
	};
	const char *paths[4], *who;
	size_t lens[4], who_len;
	int64_t t;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(waitgraph_record_parse_data(bad[i], strlen(bad[i]),
							 &t, &who, &who_len,
							 paths, lens, 4),
			     -EINVAL, "%s", bad[i]);
}
