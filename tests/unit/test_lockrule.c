/* The queue rule over tables of node lists: order (mixed styles, wrap,
 * one number twice), who holds, and the one node each waiter watches. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "lockrule.h"

#define G1 "0123abcd-0000-4000-8000-00000000000a"
#define G2 "0123abcd-0000-4000-8000-00000000000b"
#define K1 "9f2c0123abcd40008000000000000000"

/* Nodes from a pattern, one letter per node in queue order: w write,
 * r read, l lease; even positions carry G1, odd ones G2. */
static size_t build(const char *modes, struct zkl_node *v)
{
	size_t n = strlen(modes);

	for (size_t i = 0; i < n; i++) {
		v[i] = (struct zkl_node){
			.name = "x",
			.style = ZKL_STYLE_ZKLOCKFS,
			.seq = (int32_t)i,
			.tag = i % 2 ? G2 : G1,
			.taglen = NAMES_GUID_LEN,
			.mode = modes[i] == 'w'   ? ZKL_MODE_WRITE
				: modes[i] == 'r' ? ZKL_MODE_READ
						  : ZKL_MODE_LEASE,
		};
	}
	return n;
}

/* One row: the queue, which nodes are gone ('x' at their place, '.'
 * elsewhere; "" for none), the limit, and for each node what the rule says
 * ('h' holds, or the digit of the node it watches; '-' for gone ones). */
static const struct {
	const char *queue, *gone;
	unsigned limit;
	const char *expect, *why;
} rows[] = {
	{ "w", "", 1, "h", "alone: holds" },
	{ "wrr", "", 1, "h00", "readers wait for the writer" },
	{ "rrrw", "", 1, "hhh2", "a writer watches its predecessor" },
	{ "wrw", "", 1, "h01", "" },
	{ "rrwrrr", "", 1, "hh1222", "readers skip readers to the writer" },
	{ "wrwr", "", 1, "h012", "a waiting writer blocks later readers" },
	{ "wwrww", "...x.", 1, "h01-2", "the nearest node still there" },
	{ "wwrww", "..xx.", 1, "h0--1", "" },
	{ "wrwrr", "..x..", 1, "h0-00", "a reader skips a gone writer" },
	{ "wrwrr", "x.x..", 1, "-h-hh", "no writer left: readers hold" },
	/* N leases: hold while fewer than N are ahead; watch the N-th */
	{ "lll", "", 2, "hh0", "two of two leases held, the third waits" },
	{ "lllll", "", 2, "hh012", "" },
	{ "lllll", ".x...", 2, "h-h02", "a lease returned out of order" },
	{ "lll", "", 3, "hhh", "" },
	{ "rlrl", "", 1, "hhh1", "reads and leases ignore each other" },
	{ "lw", "", 1, "hh", "a writer and a lease ignore each other" },
	{ "wlrl", "", 1, "hh01", "" },
};

Test(lockrule, who_holds_and_what_each_waiter_watches)
{
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		struct zkl_node v[16];
		unsigned char gone[16] = { 0 };
		size_t n = build(rows[r].queue, v);

		for (size_t i = 0; rows[r].gone[i]; i++)
			gone[i] = rows[r].gone[i] == 'x';
		for (size_t i = 0; i < n; i++) {
			ssize_t got;
			char c;
			if (gone[i])
				continue;
			got = lockrule_watch(v, gone, 0, i, rows[r].limit);
			c = got < 0 ? 'h' : (char)('0' + got);
			cr_expect_eq(c, rows[r].expect[i],
				     "%s (gone %s, limit %u), node %zu: "
				     "expected %c, got %c (%s)",
				     rows[r].queue, rows[r].gone, rows[r].limit,
				     i, rows[r].expect[i], c, rows[r].why);
		}
	}
}

/* For the last node of each queue: the holders in its way ('x' at their
 * place, '.' elsewhere, the last node itself left out). */
static const struct {
	const char *queue, *in_way, *why;
} ways[] = {
	{ "ww", "x", "a writer waits for the writer that holds" },
	{ "rrw", "xx", "a writer waits for every reader that holds" },
	{ "rrwr", "xx.",
	  "a reader behind a waiting writer waits for the "
	  "readers that writer waits for" },
	{ "wrr", "x.",
	  "a reader behind a waiting reader: only the writer "
	  "holds" },
	{ "rww", "x.", "the waiting writer between is no holder" },
	{ "r", "", "alone: holds, nothing in its way" },
	{ "rr", ".", "a reader behind a reader holds" },
	{ "lw", ".", "a lease is in no lock's way" },
	{ "wl", ".", "a lease waits for leases only: takes no part" },
	{ "lrrlw", ".xx.", "leases skipped, the readers hold" },
};

Test(lockrule, the_holders_a_waiting_node_cannot_outlast)
{
	for (size_t r = 0; r < sizeof(ways) / sizeof(ways[0]); r++) {
		struct zkl_node v[16];
		unsigned char in_way[16];
		size_t n = build(ways[r].queue, v), want = 0, got;
		char text[17] = { 0 };

		memset(in_way, 0, sizeof(in_way));
		got = lockrule_holders_in_way(v, n - 1, in_way);
		for (size_t i = 0; i + 1 < n; i++) {
			text[i] = in_way[i] ? 'x' : '.';
			want += ways[r].in_way[i] == 'x';
		}
		cr_expect_str_eq(text, ways[r].in_way,
				 "%s: expected %s, got %s (%s)", ways[r].queue,
				 ways[r].in_way, text, ways[r].why);
		cr_expect_eq(got, want, "%s: counted %zu (%s)", ways[r].queue,
			     got, ways[r].why);
	}
}

Test(lockrule, nothing_before_lo_counts)
{
	struct zkl_node v[8];

	build("wwrww", v);
	cr_assert_eq(lockrule_watch(v, NULL, 2, 4, 1), 3);
	cr_assert_eq(lockrule_watch(v, NULL, 4, 4, 1), -1);
}

/* Parse, filter by style and sort a child list taken when the parent's
 * cversion was cversion; the names in queue order joined by ' ' into
 * out. */
static size_t order(char **children, size_t n, unsigned styles,
		    int32_t cversion, char *out, size_t size,
		    struct zkl_node *v)
{
	size_t got = lockrule_collect(children, n, styles, cversion, v);

	out[0] = '\0';
	for (size_t i = 0; i < got; i++)
		snprintf(out + strlen(out), size - strlen(out), "%s%s",
			 i ? " " : "", v[i].name);
	return got;
}

Test(lockrule, mixed_styles_order_by_number_and_others_are_ignored)
{
	char *children[] = {
		"c", /* sub-resource */
		K1 "__lock__0000000004",
		"_c_" G1 "-write-0000000002",
		"x-72057594037927936-0000000001",
		"_c_" G2 "-__READ__0000000003",
		"data-node",
	};
	struct zkl_node v[8];
	char got[512];
	size_t n =
		order(children, 6, LOCKRULE_ALL_STYLES, 5, got, sizeof(got), v);

	cr_assert_eq(n, 4, "%s", got);
	cr_assert_str_eq(got, "x-72057594037927936-0000000001 "
			      "_c_" G1 "-write-0000000002 "
			      "_c_" G2 "-__READ__0000000003 " K1
			      "__lock__0000000004");
	n = order(children, 6, LOCKRULE_STYLE(ZKL_STYLE_ZKLOCKFS), 5, got,
		  sizeof(got), v);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(got, "_c_" G1 "-write-0000000002");
}

Test(lockrule, order_survives_the_wrap)
{
	char *children[] = {
		"_c_" G2 "-read--2147483648",
		"_c_" G1 "-write-2147483646",
		"_c_" G2 "-write-2147483647",
		"_c_" G1 "-read--2147483647",
	};
	struct zkl_node v[4];
	char got[512];

	/* The last create took -2147483647 and counted the cversion on. */
	order(children, 4, LOCKRULE_ALL_STYLES, INT32_MIN + 2, got, sizeof(got),
	      v);
	cr_assert_eq(v[0].seq, 2147483646);
	cr_assert_eq(v[1].seq, 2147483647);
	cr_assert_eq(v[2].seq, INT32_MIN);
	cr_assert_eq(v[3].seq, INT32_MIN + 1);
}

Test(lockrule, a_reader_that_took_its_writers_number_stands_behind_it)
{
	/* Curator 5.5 downgrade: the read node reuses the write node's
	 * number; it must not be taken for a reader ahead of the writer. */
	char *children[] = {
		"_c_" G1 "-__READ__0000000009",
		"_c_" G1 "-__WRIT__0000000009",
		"_c_" G2 "-write-0000000010",
	};
	struct zkl_node v[3];
	char got[512];

	order(children, 3, LOCKRULE_ALL_STYLES, 12, got, sizeof(got), v);
	cr_assert_eq(v[0].mode, ZKL_MODE_WRITE, "%s", got);
	cr_assert_eq(v[1].mode, ZKL_MODE_READ, "%s", got);
	cr_assert_eq(lockrule_watch(v, NULL, 0, 1, 1), 0);
	cr_assert_eq(lockrule_watch(v, NULL, 0, 2, 1), 1);
}

Test(lockrule, find_is_exact_on_name_and_sequence)
{
	char *children[] = {
		"_c_" G1 "-write-0000000003",
		"_c_" G2 "-read-0000000001",
		"_c_" G1 "-read-0000000007",
		"_c_" G2 "-write-0000000005",
	};
	struct zkl_node v[4];
	size_t n = lockrule_collect(children, 4, LOCKRULE_ALL_STYLES, 8, v);

	for (size_t i = 0; i < 4; i++)
		cr_assert_str_eq(v[lockrule_find(v, n, 8, children[i])].name,
				 children[i]);
	cr_assert_eq(lockrule_find(v, n, 8, "_c_" G2 "-write-0000000003"), -1,
		     "same sequence, other name");
	cr_assert_eq(lockrule_find(v, n, 8, "_c_" G1 "-write-0000000004"), -1);
	cr_assert_eq(lockrule_find(v, n, 8, "sub-resource"), -1);
	cr_assert_eq(lockrule_find(v, 0, 8, children[0]), -1);
	cr_assert_eq(lockrule_find_tag(v, n, 0, G2), 0);
	cr_assert_eq(lockrule_find_tag(v, n, 1, G2), 2);
	cr_assert_eq(lockrule_find_tag(v, n, 0,
				       "ffffffff-0000-4000-8000-000000000000"),
		     -1);
	cr_assert_eq(lockrule_find_tag(v, n, 0, ""), -1, "no tag is no match");
}

Test(lockrule, first_blocker_of_a_request_queued_now)
{
	struct zkl_node v[8];
	size_t n = build("rrwr", v);
	const char *mine[] = { G1 };

	cr_assert_eq(lockrule_first_blocker(v, n, ZKL_MODE_WRITE, 1, NULL, 0),
		     0, "a writer waits for everyone: the first holder");
	cr_assert_eq(lockrule_first_blocker(v, n, ZKL_MODE_READ, 1, NULL, 0), 2,
		     "a reader waits for the first writer only");
	cr_assert_eq(lockrule_first_blocker(v, 0, ZKL_MODE_WRITE, 1, NULL, 0),
		     -1);
	n = build("rr", v);
	cr_assert_eq(lockrule_first_blocker(v, n, ZKL_MODE_READ, 1, NULL, 0),
		     -1, "readers share");
	/* Even indexes carry G1: skip them as the caller's own nodes. */
	n = build("rwr", v);
	cr_assert_eq(lockrule_first_blocker(v, n, ZKL_MODE_WRITE, 1, mine, 1),
		     1);
	n = build("w", v);
	cr_assert_eq(lockrule_first_blocker(v, n, ZKL_MODE_WRITE, 1, mine, 1),
		     -1, "one's own lock does not block one's own test");
	n = build("ll", v);
	cr_assert_eq(lockrule_first_blocker(v, n, ZKL_MODE_LEASE, 2, NULL, 0),
		     0, "two of two leases taken");
	cr_assert_eq(lockrule_first_blocker(v, n, ZKL_MODE_LEASE, 3, NULL, 0),
		     -1, "one of three free");
}

Test(lockrule, count_ahead_counts_what_a_request_waits_for)
{
	struct zkl_node v[16];
	unsigned char gone[16] = { 0 };
	size_t n = build("lwlrll", v);

	cr_assert_eq(lockrule_count_ahead(v, NULL, 0, 5), 3,
		     "a lease counts the leases ahead, not the locks");
	cr_assert_eq(lockrule_count_ahead(v, NULL, 0, 3), 1,
		     "a reader counts the writers ahead");
	cr_assert_eq(lockrule_count_ahead(v, NULL, 0, 1), 0,
		     "a writer does not count a lease");
	gone[2] = 1;
	cr_assert_eq(lockrule_count_ahead(v, gone, 0, 5), 2,
		     "gone: not counted");
	cr_assert_eq(lockrule_count_ahead(v, gone, 1, 5), 1,
		     "before lo: not counted");
	(void)n;
}

Test(lockrule, a_lease_holds_below_the_limit_and_otherwise_picks_its_watch)
{
	struct zkl_node v[16];
	unsigned char gone[16] = { 0 }, granted[16] = { 0 };
	ssize_t pred = -7;

	build("llwllrl", v); /* leases at 0 1 3 4 6 */
	cr_assert_eq(lockrule_lease(v, gone, granted, 0, 4, 4, &pred),
		     LOCKRULE_LEASE_HOLD, "3 ahead, limit 4");
	cr_assert_eq(pred, -7, "no watch for a holder");
	cr_assert_eq(lockrule_lease(v, gone, granted, 0, 4, 3, &pred),
		     LOCKRULE_LEASE_AHEAD,
		     "exactly N ahead: its predecessor holds, so it waits "
		     "for the holders");
	cr_assert_eq(pred, 3);
	cr_assert_eq(lockrule_lease(v, gone, granted, 0, 6, 2, &pred),
		     LOCKRULE_LEASE_ONE,
		     "4 ahead, limit 2, nothing known granted: its "
		     "predecessor alone");
	cr_assert_eq(pred, 4, "the nearest lease, not the reader");
	granted[4] = 1;
	cr_assert_eq(lockrule_lease(v, gone, granted, 0, 6, 2, &pred),
		     LOCKRULE_LEASE_AHEAD,
		     "a granted predecessor (N lowered under it): the "
		     "holders");
	cr_assert_eq(lockrule_lease(v, gone, NULL, 0, 6, 2, &pred),
		     LOCKRULE_LEASE_ONE, "granted may be NULL");
	gone[0] = gone[1] = 1;
	cr_assert_eq(lockrule_lease(v, gone, granted, 0, 6, 2, &pred),
		     LOCKRULE_LEASE_AHEAD, "2 left ahead of it, limit 2");
	gone[3] = 1;
	cr_assert_eq(lockrule_lease(v, gone, granted, 0, 6, 2, &pred),
		     LOCKRULE_LEASE_HOLD);
	cr_assert_eq(lockrule_lease(v, NULL, NULL, 5, 6, 1, &pred),
		     LOCKRULE_LEASE_HOLD, "nodes before lo are gone");
}

/* ---- a listing again, with the view of the one before ------------------ */

#define AGAIN_MAX 64

/* A name of one of the styles (or none) with sequence seq. */
static void again_name(char *buf, size_t size, unsigned kind, int32_t seq)
{
	static const char *const shapes[] = {
		"_c_0123abcd-0000-4000-8000-%012u-write-%010d",
		"_c_0123abcd-0000-4000-8000-%012u-read-%010d",
		"_c_0123abcd-0000-4000-8000-%012u-lease-%010d",
		"_c_0123abcd-0000-4000-8000-%012u-__WRIT__%010d",
		"x%012u__lock__%010d",
		"not-a-lock-%012u-%010d",
	};

	snprintf(buf, size, shapes[kind % 6], kind, seq);
}

static void expect_same(const struct zkl_node *a, size_t na,
			const struct zkl_node *b, size_t nb, int round)
{
	cr_assert_eq(na, nb, "round %d: %zu nodes, expected %zu", round, na,
		     nb);
	for (size_t i = 0; i < na; i++) {
		cr_assert_str_eq(a[i].name, b[i].name, "round %d, node %zu",
				 round, i);
		cr_assert(a[i].seq == b[i].seq && a[i].age == b[i].age &&
				  a[i].mode == b[i].mode &&
				  a[i].style == b[i].style &&
				  a[i].taglen == b[i].taglen &&
				  (a[i].tag - a[i].name) ==
					  (b[i].tag - b[i].name),
			  "round %d, node %zu (%s) differs", round, i,
			  a[i].name);
	}
}

Test(lockrule, a_listing_again_is_collected_as_from_scratch)
{
	static char store[2][AGAIN_MAX][96];
	char *names[AGAIN_MAX];
	struct zkl_node old[AGAIN_MAX], again[AGAIN_MAX], scratch[AGAIN_MAX];
	unsigned rnd = 12345;
	size_t nold = 0;

	for (int round = 0; round < 400; round++) {
		/* Sequence numbers near the wrap every 100 rounds. */
		int32_t base = round % 100 < 50 ? 1000 : INT32_MAX - 20;
		char(*cur)[96] = store[round % 2];
		size_t n = 0;
		int32_t cv;

		/* Keep most of the old listing, add a few new ones. */
		for (size_t i = 0; i < nold && n < AGAIN_MAX; i++) {
			rnd = rnd * 1103515245u + 12345u;
			if (rnd >> 28 < 13)
				strcpy(cur[n++], old[i].name);
		}
		for (int k = 0; k < 6 && n < AGAIN_MAX; k++) {
			/* Mostly newer; now and then one older than the
			 * view's (a view that missed it). */
			uint32_t seq = (uint32_t)base + (uint32_t)round * 7u +
				       (uint32_t)k;
			rnd = rnd * 1103515245u + 12345u;
			if (k == 5 && rnd >> 30 == 0)
				seq -= 7u * (uint32_t)(round % 5) + 40u;
			again_name(cur[n], sizeof(cur[n]), rnd >> 24,
				   (int32_t)seq);
			n++;
		}
		/* ZooKeeper's order is any order. */
		for (size_t i = n; i > 1; i--) {
			char tmp[96];
			rnd = rnd * 1103515245u + 12345u;
			size_t j = (rnd >> 8) % i;
			memcpy(tmp, cur[i - 1], 96);
			memcpy(cur[i - 1], cur[j], 96);
			memcpy(cur[j], tmp, 96);
		}
		for (size_t i = 0; i < n; i++)
			names[i] = cur[i];
		cv = (int32_t)((uint32_t)base + (uint32_t)round * 7u + 6u);
		size_t want = lockrule_collect(names, n, LOCKRULE_QUEUED_STYLES,
					       cv, scratch);
		ssize_t got = lockrule_collect_again(
			names, n, LOCKRULE_QUEUED_STYLES, cv, old, nold, again);
		cr_assert_geq(got, 0);
		expect_same(again, (size_t)got, scratch, want, round);
		memcpy(old, again, sizeof(old[0]) * (size_t)got);
		nold = (size_t)got;
	}
}
