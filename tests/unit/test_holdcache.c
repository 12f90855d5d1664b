/*
 * The holders texts shared by the opens of a short window (holdcache.h),
 * with libfuse's replies scripted (fake_fuse.c): which open is answered
 * from the kept text, which waits for the fetch in flight or the next,
 * and when a text is dropped.  Times and change counts are the tests'
 * own stamps.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_fuse.h"
#include "holdcache.h"
#include "snapshot.h"

static uint64_t write_ino, dir_ino;

static void setup(void)
{
	fake_mount(&dir_ino, &write_ino);
}

static void teardown(void)
{
	fake_unmount();
}

TestSuite(holdcache, .init = setup, .fini = teardown);

static struct holdcache_stamp stamp(uint64_t changes, int64_t ms)
{
	return (struct holdcache_stamp){ .changes = changes, .ms = ms };
}

/* An open of dir's holders by request r at `at`: holdcache_open's
 * answer. */
static int open_at(struct fake_req *r, const char *dir,
		   struct holdcache_stamp at)
{
	struct fuse_file_info fi = { .flags = O_RDONLY };
	struct snapshot_pending open;

	snapshot_pending_init(&open, &fake_fs, (fuse_req_t)r, &fi, NULL);
	return holdcache_open(&fake_fs.holders, dir, &at, &open);
}

/* A fetch of dir ends with `text` (or err when text is NULL), at `at`:
 * holdcache_fetched's answer. */
static int fetched(const char *dir, const char *text, int err,
		   struct holdcache_stamp at)
{
	char *copy = text ? strdup(text) : NULL;

	return holdcache_fetched(&fake_fs.holders, dir, err, copy,
				 text ? strlen(text) : 0, &at);
}

/* r was answered once, with `text`; its open file is closed. */
static void expect_text(struct fake_req *r, const char *text)
{
	struct snapshot *sn = (struct snapshot *)(uintptr_t)r->fh;

	cr_assert_eq(r->replies, 1, "%d replies, expected 1", r->replies);
	cr_assert_eq(r->err, 0, "answered %d, expected a text", r->err);
	cr_assert(sn && sn->len == strlen(text) &&
			  memcmp(sn->buf, text, sn->len) == 0,
		  "read %.*s, expected %s", sn ? (int)sn->len : 0,
		  sn ? sn->buf : "", text);
	snapshot_release(sn);
	r->fh = 0;
}

static void expect_unanswered(const struct fake_req *r)
{
	cr_assert_eq(r->replies, 0, "answered before its fetch was back");
}

Test(holdcache, a_text_is_fresh_for_a_window_while_nothing_changes)
{
	struct holdcache_stamp taken = stamp(7, 1000);

	cr_assert(holdcache_fresh(&taken,
				  &(struct holdcache_stamp){
					  7, 1000 + HOLDCACHE_WINDOW_MS - 1 }));
	cr_assert_not(holdcache_fresh(
		&taken,
		&(struct holdcache_stamp){ 7, 1000 + HOLDCACHE_WINDOW_MS }));
	cr_assert_not(holdcache_fresh(&taken,
				      &(struct holdcache_stamp){ 8, 1001 }),
		      "a change this mount made or heard of since: stale");
	/* An open stamped before the fetch with the same count: the fetch
	 * saw all that the open must. */
	cr_assert(holdcache_fresh(&taken, &(struct holdcache_stamp){ 7, 990 }));
	cr_assert(holdcache_expired(&taken, 1000 + HOLDCACHE_WINDOW_MS));
	cr_assert_not(
		holdcache_expired(&taken, 1000 + HOLDCACHE_WINDOW_MS - 1));
}

Test(holdcache, opens_of_one_window_share_one_fetch)
{
	struct fake_req a = { 0 }, b = { 0 }, c = { 0 };

	cr_assert_eq(open_at(&a, "/b/r", stamp(1, 0)), 1, "no fetch asked");
	cr_assert_eq(open_at(&b, "/b/r", stamp(1, 10)), 0,
		     "a second fetch while one is in flight");
	expect_unanswered(&a);
	expect_unanswered(&b);
	cr_assert_eq(fetched("/b/r", "held write\n", 0, stamp(1, 50)), 0,
		     "another fetch though nobody waits for one");
	expect_text(&a, "held write\n");
	expect_text(&b, "held write\n");
	/* Within the window, and nothing changed: at once, no fetch. */
	cr_assert_eq(open_at(&c, "/b/r", stamp(1, HOLDCACHE_WINDOW_MS - 1)), 0);
	expect_text(&c, "held write\n");
}

Test(holdcache, a_change_or_the_window_s_end_makes_the_next_open_fetch)
{
	struct fake_req a = { 0 }, b = { 0 }, c = { 0 };

	cr_assert_eq(open_at(&a, "/b/r", stamp(1, 0)), 1);
	cr_assert_eq(fetched("/b/r", "old\n", 0, stamp(1, 5)), 0);
	expect_text(&a, "old\n");
	/* This mount changed the resource: the kept text is not shown. */
	cr_assert_eq(open_at(&b, "/b/r", stamp(2, 6)), 1, "the old text kept");
	cr_assert_eq(fetched("/b/r", "new\n", 0, stamp(2, 7)), 0);
	expect_text(&b, "new\n");
	/* The window is over: another host's change must show. */
	cr_assert_eq(open_at(&c, "/b/r", stamp(2, 6 + HOLDCACHE_WINDOW_MS)), 1,
		     "a text kept past its window");
	cr_assert_eq(fetched("/b/r", "newer\n", 0,
			     stamp(2, 7 + HOLDCACHE_WINDOW_MS)),
		     0);
	expect_text(&c, "newer\n");
}

Test(holdcache,
     an_open_after_a_change_waits_for_the_next_fetch_not_the_one_in_flight)
{
	struct fake_req a = { 0 }, b = { 0 }, c = { 0 }, d = { 0 };

	cr_assert_eq(open_at(&a, "/b/r", stamp(1, 0)), 1);
	/* Changed since the fetch in flight was sent: it may not have seen
	 * the change, so b waits for the next, and so does c. */
	cr_assert_eq(open_at(&b, "/b/r", stamp(2, 1)), 0,
		     "two fetches of one resource on the wire");
	cr_assert_eq(open_at(&c, "/b/r", stamp(3, 2)), 0);
	cr_assert_eq(fetched("/b/r", "before\n", 0, stamp(3, 3)), 1,
		     "the next fetch not asked for");
	expect_text(&a, "before\n");
	expect_unanswered(&b);
	expect_unanswered(&c);
	/* d comes while the next one is out, with the count it was sent
	 * with: it joins it. */
	cr_assert_eq(open_at(&d, "/b/r", stamp(3, 4)), 0);
	cr_assert_eq(fetched("/b/r", "after\n", 0, stamp(3, 5)), 0);
	expect_text(&b, "after\n");
	expect_text(&c, "after\n");
	expect_text(&d, "after\n");
}

Test(holdcache, a_failed_fetch_answers_everyone_waiting_and_keeps_nothing)
{
	struct fake_req a = { 0 }, b = { 0 }, c = { 0 }, d = { 0 };

	cr_assert_eq(open_at(&a, "/b/r", stamp(1, 0)), 1);
	cr_assert_eq(fetched("/b/r", "old\n", 0, stamp(1, 1)), 0);
	expect_text(&a, "old\n");
	cr_assert_eq(open_at(&b, "/b/r", stamp(2, 2)), 1);
	cr_assert_eq(open_at(&c, "/b/r", stamp(3, 3)), 0); /* the next */
	cr_assert_eq(fetched("/b/r", NULL, -EAGAIN, stamp(3, 4)), 0,
		     "a fetch after a failure");
	cr_assert(b.replies == 1 && b.err == EAGAIN, "b: %d %d", b.replies,
		  b.err);
	cr_assert(c.replies == 1 && c.err == EAGAIN, "c: %d %d", c.replies,
		  c.err);
	/* Nothing old is shown after a failure, even within the window. */
	cr_assert_eq(open_at(&d, "/b/r", stamp(1, 5)), 1,
		     "the text before the failure was kept");
	cr_assert_eq(fetched("/b/r", NULL, -EAGAIN, stamp(1, 6)), 0);
	cr_assert_eq(d.err, EAGAIN);
}

Test(holdcache, resources_keep_texts_of_their_own)
{
	struct fake_req a = { 0 }, b = { 0 }, c = { 0 };

	cr_assert_eq(open_at(&a, "/b/r", stamp(1, 0)), 1);
	cr_assert_eq(open_at(&b, "/b/s", stamp(1, 0)), 1,
		     "s answered by r's fetch");
	cr_assert_eq(fetched("/b/s", "s\n", 0, stamp(1, 1)), 0);
	cr_assert_eq(fetched("/b/r", "r\n", 0, stamp(1, 1)), 0);
	expect_text(&a, "r\n");
	expect_text(&b, "s\n");
	cr_assert_eq(open_at(&c, "/b/s", stamp(1, 2)), 0);
	expect_text(&c, "s\n");
}

Test(holdcache, texts_are_kept_for_so_many_resources_at_most)
{
	char dir[32];
	struct fake_req r = { 0 };

	for (int i = 0; i <= HOLDCACHE_KEPT_MAX; i++) {
		struct fake_req o = { 0 };
		snprintf(dir, sizeof(dir), "/b/r%d", i);
		cr_assert_eq(open_at(&o, dir, stamp(1, i)), 1);
		cr_assert_eq(fetched(dir, "t\n", 0, stamp(1, i)), 0);
		expect_text(&o, "t\n");
	}
	cr_assert_eq(fake_fs.holders.nkept, HOLDCACHE_KEPT_MAX);
	/* The oldest went: its next open fetches, within the window. */
	cr_assert_eq(open_at(&r, "/b/r0", stamp(1, HOLDCACHE_KEPT_MAX + 1)), 1,
		     "more than HOLDCACHE_KEPT_MAX texts kept");
	cr_assert_eq(fetched("/b/r0", "t\n", 0,
			     stamp(1, HOLDCACHE_KEPT_MAX + 1)),
		     0);
	expect_text(&r, "t\n");
	/* The window over, every text goes at the next call. */
	struct fake_req late = { 0 };
	cr_assert_eq(
		open_at(&late, "/b/other",
			stamp(1, HOLDCACHE_KEPT_MAX + 1 + HOLDCACHE_WINDOW_MS)),
		1);
	cr_assert_eq(fake_fs.holders.nkept, 0, "%zu texts past their window",
		     fake_fs.holders.nkept);
	cr_assert_eq(
		fetched("/b/other", NULL, -EIO,
			stamp(1, HOLDCACHE_KEPT_MAX + 1 + HOLDCACHE_WINDOW_MS)),
		0);
	cr_assert_eq(late.err, EIO);
	cr_assert_eq(fake_fs.holders.entries.nitems, 0,
		     "an entry with no text and no fetch was left");
}
