/* The table of requests waiting for a znode path. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>

#include "watchtab.h"

Test(watchtab, first_watch_on_a_path_asks_zookeeper_once)
{
	struct watchtab t;
	struct zkl_watch a = { 0 }, b = { 0 }, c = { 0 };
	struct zkl_link fired;

	cr_assert_eq(watchtab_init(&t), 0);
	cr_assert_eq(watchtab_add(&t, "/l/r/n1", &a), 1);
	cr_assert_eq(watchtab_add(&t, "/l/r/n1", &b), 0,
		     "second watcher of one node must not register again");
	cr_assert_eq(watchtab_add(&t, "/l/r/n2", &c), 1);
	cr_assert_eq(watchtab_take(&t, "/l/r/n1", &fired), 2);
	cr_assert_eq(fired.next, &a.link, "wakes in registration order");
	cr_assert_eq(fired.next->next, &b.link);
	cr_assert_eq(watchtab_take(&t, "/l/r/n1", &fired), 0);
	cr_assert_eq(watchtab_remove(&t, &c), 1);
	cr_assert_eq(watchtab_remove(&t, &c), 0);
	watchtab_destroy(&t);
}

Test(watchtab, removed_watch_is_not_woken)
{
	struct watchtab t;
	struct zkl_watch a = { 0 }, b = { 0 };
	struct zkl_link fired;

	watchtab_init(&t);
	watchtab_add(&t, "/p", &a);
	watchtab_add(&t, "/p", &b);
	watchtab_remove(&t, &a);
	cr_assert_eq(watchtab_take(&t, "/p", &fired), 1);
	cr_assert_eq(fired.next, &b.link);
	watchtab_destroy(&t);
}

Test(watchtab, grows_and_takes_all)
{
	static struct zkl_watch w[5000];
	struct watchtab t;
	struct zkl_link fired;
	char path[32];

	watchtab_init(&t);
	for (int i = 0; i < 5000; i++) {
		snprintf(path, sizeof(path), "/r/n%d", i);
		cr_assert_eq(watchtab_add(&t, path, &w[i]), 1);
	}
	cr_assert_eq(watchtab_take(&t, "/r/n4321", &fired), 1);
	cr_assert_eq(fired.next, &w[4321].link);
	cr_assert_eq(watchtab_take_all(&t, &fired), 4999);
	cr_assert_eq(t.paths.nitems, 0);
	watchtab_destroy(&t);
}

Test(watchtab, a_mark_wakes_only_the_watches_that_want_marks)
{
	struct watchtab t;
	struct zkl_watch lease = { .wants_marks = 1 }, other = { 0 };
	struct zkl_link fired;

	watchtab_init(&t);
	watchtab_add(&t, "/r/n", &other);
	cr_assert_eq(watchtab_add(&t, "/r/n", &lease), 0);
	cr_assert_eq(watchtab_take_marks(&t, "/r/n", &fired), 1);
	cr_assert_eq(fired.next, &lease.link);
	cr_assert_eq(watchtab_remove(&t, &lease), 0, "no longer registered");
	cr_assert_eq(watchtab_add(&t, "/r/n", &lease), 0,
		     "the entry stays: ZooKeeper still watches the node");
	cr_assert_eq(watchtab_take(&t, "/r/n", &fired), 2);
	cr_assert_eq(watchtab_take_marks(&t, "/nothing", &fired), 0);
	watchtab_destroy(&t);
}
