/* A semaphore's limit as stored and as written: every accepted form, and
 * the look-alikes that must be refused. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "limit.h"

static int parse(const char *text, int stored, unsigned *n)
{
	return limit_parse(text, strlen(text), stored, n);
}

Test(limit, accepted_forms)
{
	static const struct {
		const char *text;
		unsigned n;
	} ok[] = {
		{ "1", 1 },
		{ "3\n", 3 },
		{ "10", 10 },
		{ "999999", 999999 },
		{ "1000000", 1000000 },
		{ "1000000\n", 1000000 },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		unsigned n = 0;
		cr_assert_eq(parse(ok[i].text, 0, &n), 0, "%s", ok[i].text);
		cr_assert_eq(n, ok[i].n, "%s", ok[i].text);
	}
}

Test(limit, refused_forms)
{
	static const char *const bad[] = {
		"0",          "00",    "-1",   "+3", " 3",      "3 ",
		"03",         "3\n\n", "3x",   "x",  "1000001", "99999999",
		"4294967297", "1e3",   "0x10", "\n", "3\r\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		unsigned n = 7;
		cr_assert_eq(parse(bad[i], 0, &n), -EINVAL, "'%s'", bad[i]);
		cr_assert_eq(parse(bad[i], 1, &n), -EINVAL, "'%s'", bad[i]);
		cr_assert_eq(n, 7, "'%s' changed the result", bad[i]);
	}
}

Test(limit, no_data_is_one_when_stored_and_refused_when_written)
{
	unsigned n = 0;

	cr_assert_eq(limit_parse("", 0, 1, &n), 0);
	cr_assert_eq(n, 1);
	cr_assert_eq(limit_parse("", 0, 0, &n), -EINVAL);
	cr_assert_eq(limit_parse(NULL, 0, 1, &n), 0, "no data at all");
}

Test(limit, format_round_trips)
{
	char buf[LIMIT_TEXT_MAX];
	unsigned n = 0;

	for (unsigned v = 1; v <= LIMIT_MAX; v = v * 7 + 1) {
		size_t len = limit_format(v, buf, sizeof(buf));
		cr_assert_eq(limit_parse(buf, len, 1, &n), 0);
		cr_assert_eq(n, v);
		cr_assert_eq(strchr(buf, '\n'), NULL, "stored without newline");
	}
	cr_assert_eq(limit_format(LIMIT_MAX, buf, sizeof(buf)), 7);
}
