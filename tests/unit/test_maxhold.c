/* The hold limits' table as ZooKeeper keeps it (maxhold.h): what a user may
 * write, what another client may have left in the znode, and the edits a
 * store makes. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "maxhold.h"

static int value(const char *text, unsigned *secs)
{
	return maxhold_parse_value(text, strlen(text), secs);
}

Test(maxhold, accepted_values)
{
	static const struct {
		const char *text;
		unsigned secs;
	} ok[] = {
		{ "0", 0 },
		{ "0\n", 0 },
		{ "1", 1 },
		{ "30\n", 30 },
		{ "31536000", 31536000 },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		unsigned secs = 99;
		cr_assert_eq(value(ok[i].text, &secs), 0, "%s", ok[i].text);
		cr_assert_eq(secs, ok[i].secs, "%s", ok[i].text);
	}
}

Test(maxhold, refused_values)
{
	static const char *const bad[] = {
		"",         "\n",   "00",    "07",    "-1",
		"+3",       " 3",   "3 ",    "3s",    "1.5",
		"31536001", "0x10", "3\n\n", "3\r\n", "999999999",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		unsigned secs = 99;
		cr_assert_eq(value(bad[i], &secs), -EINVAL, "%s", bad[i]);
		cr_assert_eq(secs, 99, "%s changed nothing", bad[i]);
	}
}

static char *format(const struct maxhold_table *t)
{
	char *text;
	size_t len;

	cr_assert_eq(maxhold_table_format(t, &text, &len), 0);
	if (!text)
		return strdup("");
	cr_assert_eq(strlen(text), len);
	return text;
}

Test(maxhold, edits_keep_the_table_sorted_and_drop_zero)
{
	struct maxhold_table t = { 0 };
	char *text;

	cr_assert_eq(maxhold_table_set(&t, "db", 30), 0);
	cr_assert_eq(maxhold_table_set(&t, "a/b", 5), 0);
	cr_assert_eq(maxhold_table_set(&t, "z z", 7), 0);
	cr_assert_eq(maxhold_table_set(&t, "db", 60), 0);
	cr_assert_eq(maxhold_table_set(&t, "never", 0), 0, "removing none");
	text = format(&t);
	cr_assert_str_eq(text, "5 a/b\n60 db\n7 z z\n");
	free(text);
	cr_assert_eq(maxhold_table_lookup(&t, "db"), 60);
	cr_assert_eq(maxhold_table_lookup(&t, "a"), 0);
	cr_assert_eq(maxhold_table_lookup(&t, "z z"), 7);
	cr_assert_eq(maxhold_table_set(&t, "a/b", 0), 0);
	cr_assert_eq(maxhold_table_set(&t, "db", 0), 0);
	cr_assert_eq(maxhold_table_set(&t, "z z", 0), 0);
	cr_assert_eq(t.n, 0);
	text = format(&t);
	cr_assert_str_eq(text, "", "an empty table is no data: deleted");
	free(text);
	maxhold_table_free(&t);
}

Test(maxhold, what_another_client_wrote_is_read_line_by_line)
{
	static const char data[] = "10 b\n"
				   "junk\n"
				   "0 zero\n"
				   "5\n"
				   " 5 lead\n"
				   "07 octal\n"
				   "3 a\n"
				   "4 b\n"
				   "9 \n"
				   "8 last";
	struct maxhold_table t;
	char *text;

	cr_assert_eq(maxhold_table_parse(data, sizeof(data) - 1, &t), 6,
		     "junk, 0, no resource, a leading space, 07, empty name");
	text = format(&t);
	cr_assert_str_eq(text, "3 a\n4 b\n8 last\n", "the later b counts");
	free(text);
	maxhold_table_free(&t);
}

Test(maxhold, a_nul_in_the_data_is_no_resource)
{
	static const char data[] = "3 a\0b\n4 c\n";
	struct maxhold_table t;

	cr_assert_eq(maxhold_table_parse(data, sizeof(data) - 1, &t), 1);
	cr_assert_eq(t.n, 1);
	cr_assert_eq(maxhold_table_lookup(&t, "c"), 4);
	maxhold_table_free(&t);
}

Test(maxhold, no_data_is_an_empty_table)
{
	struct maxhold_table t;

	cr_assert_eq(maxhold_table_parse(NULL, 0, &t), 0);
	cr_assert_eq(t.n, 0);
	cr_assert_eq(maxhold_table_lookup(&t, "x"), 0);
	maxhold_table_free(&t);
}

Test(maxhold, the_grace_is_a_tenth_within_bounds)
{
	cr_assert_eq(maxhold_grace_ms(1), MAXHOLD_GRACE_MIN_MS);
	cr_assert_eq(maxhold_grace_ms(20), MAXHOLD_GRACE_MIN_MS);
	cr_assert_eq(maxhold_grace_ms(300), 30000);
	cr_assert_eq(maxhold_grace_ms(600), MAXHOLD_GRACE_MAX_MS);
	cr_assert_eq(maxhold_grace_ms(MAXHOLD_MAX), MAXHOLD_GRACE_MAX_MS);
}

Test(maxhold, a_large_table_in_any_order_keeps_each_resources_last_line)
{
	enum { LINES = 100000 };
	size_t size = (size_t)LINES * 24, len = 0;
	char *data = malloc(size), name[16];
	struct maxhold_table t;

	cr_assert_not_null(data);
	/* Reverse order, every resource twice: 2, then 1, which counts. */
	for (int i = LINES - 1; i >= 0; i--)
		len += (size_t)snprintf(data + len, size - len, "%d r%d\n",
					1 + i % 2, i / 2);
	cr_assert_eq(maxhold_table_parse(data, len, &t), 0);
	cr_assert_eq(t.n, LINES / 2);
	for (size_t i = 1; i < t.n; i++)
		cr_assert(strcmp(t.e[i - 1].res, t.e[i].res) < 0, "sorted");
	snprintf(name, sizeof(name), "r%d", LINES / 4);
	cr_assert_eq(maxhold_table_lookup(&t, name), 1);
	maxhold_table_free(&t);
	free(data);
}
