/*
 * The name of a multi-lock's directory: items, escapes, and every way a
 * list is refused.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tree.h"

static int parse(const char *name, const char *items[MULTINAME_MAX_ITEMS])
{
	static char buf[256];

	return multiname_parse(name, buf, sizeof(buf), items);
}

Test(multiname, splits_a_list_in_its_order)
{
	const char *items[MULTINAME_MAX_ITEMS];

	cr_assert_eq(parse("db,cache", items), 2);
	cr_assert_str_eq(items[0], "db");
	cr_assert_str_eq(items[1], "cache");
	cr_assert_eq(parse("one", items), 1, "a list of one is a list");
	cr_assert_str_eq(items[0], "one");
}

Test(multiname, decodes_nested_paths_commas_and_percents)
{
	const char *items[MULTINAME_MAX_ITEMS];

	cr_assert_eq(parse("db%2Fshard1,a%2cb,50%25,x%2fy%2Fz", items), 4);
	cr_assert_str_eq(items[0], "db/shard1");
	cr_assert_str_eq(items[1], "a,b");
	cr_assert_str_eq(items[2], "50%");
	cr_assert_str_eq(items[3], "x/y/z");
}

Test(multiname, refuses_empty_items_and_components)
{
	const char *items[MULTINAME_MAX_ITEMS];
	const char *bad[] = { "",      "db,",   ",db",      "db,,cache",
			      "%2Fdb", "db%2F", "a%2F%2Fb", "," };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(parse(bad[i], items), -EINVAL, "accepted '%s'",
			     bad[i]);
}

Test(multiname, refuses_a_percent_that_is_no_escape)
{
	const char *items[MULTINAME_MAX_ITEMS];
	const char *bad[] = { "50%", "a%2", "a%20b", "a%41", "%", "a%2G" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(parse(bad[i], items), -EINVAL, "accepted '%s'",
			     bad[i]);
}

Test(multiname, refuses_duplicates_however_written)
{
	const char *items[MULTINAME_MAX_ITEMS];

	cr_assert_eq(parse("db,cache,db", items), -EINVAL);
	cr_assert_eq(parse("a%2Fb,a%2fb", items), -EINVAL);
	cr_assert_eq(parse("db,db%2Fx", items), 2, "a sub-resource is another");
}

Test(multiname, at_most_64_items)
{
	const char *items[MULTINAME_MAX_ITEMS];
	char name[256] = "";

	/* 64 items of 2 or 3 bytes with commas fit in 255 bytes. */
	for (int i = 0; i < 64; i++)
		sprintf(name + strlen(name), "%s%x", i ? "," : "", i + 16);
	cr_assert_eq(parse(name, items), 64);
	strcat(name, ",zz");
	cr_assert_eq(parse(name, items), -EINVAL, "65 items");
}
