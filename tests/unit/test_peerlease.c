/*
 * A lease in Curator's and kazoo's semaphore layouts against a scripted
 * ZooKeeper: the tool's lock first, then the count (Curator: create, then
 * count; kazoo: count, then create), a watched wait while full, the lock
 * let go once held or given up; a lost create reply; session expiry.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fake_zk.h"
#include "internal.h"
#include "lockreq.h"

#define OTHER "_c_0123abcd-0000-4000-8000-000000000001-lease-0000000001"

static struct zkl_session *s;
static char mutex_name[256], lease_path[512];

static void setup(void)
{
	s = fake_session();
}

static void teardown(void)
{
	fake_session_free(s);
}

TestSuite(peerlease, .init = setup, .fini = teardown);

static const char *after(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	cr_assert(strncmp(path, dir, n) == 0 && path[n] == '/',
		  "%s is not in %s", path, dir);
	return path + n + 1;
}

/* Start a lease of dialect style on /b/r; answer the tool's lock's create
 * and listing (nobody ahead): the lock is ours. */
static struct zkl_lockreq *start(enum zkl_style style, unsigned flags)
{
	const char *dir = style == ZKL_STYLE_CURATOR ? "/b/r/locks"
						     : "/b/r-__lock__";
	struct zkl_lockreq *lr;
	const char *names[1] = { mutex_name };

	s->dialect = style;
	cr_assert_eq(lockreq_new(s, "/b/r", ZKL_MODE_LEASE, flags, "id", 2,
				 fake_on_done, NULL, &lr),
		     0);
	cr_assert_eq(lockreq_start(lr), 0);
	snprintf(mutex_name, sizeof(mutex_name), "%s0000000004",
		 after(fake_peek(FAKE_CREATE)->path, dir));
	cr_assert(strstr(mutex_name,
			 style == ZKL_STYLE_CURATOR ? "-lock-0" : "__lock__0"),
		  "the tool's lock is named as the tool names it: %s",
		  mutex_name);
	fake_complete_create(ZOK, "0000000004", 4);
	cr_assert_str_eq(fake_peek(FAKE_CHILDREN)->path, dir);
	fake_complete_children(ZOK, names, 1);
	cr_assert_eq(fake_done_calls, 0);
	return lr;
}

/* The lease's create; Curator's is sequential. */
static void lease_created(int rc, const char *dir)
{
	const char *name = after(fake_peek(FAKE_CREATE)->path, dir);
	int seq = strcmp(dir, "/b/r/leases") == 0;

	cr_assert(seq ? strstr(name, "-lease-") != NULL : strlen(name) == 32,
		  "%s", name);
	snprintf(lease_path, sizeof(lease_path), "%s/%s%s", dir, name,
		 seq ? "0000000007" : "");
	fake_complete_create(rc, seq ? "0000000007" : "", 1007);
}

/* The count: N from the resource, then the lease directory's children
 * (ours last if it is there). */
static void counted(const char *limit, const char *dir, int others,
		    int with_ours)
{
	const char *names[4] = { OTHER, OTHER, OTHER, OTHER };

	cr_assert_str_eq(fake_peek(FAKE_GET)->path, "/b/r");
	fake_complete_get_data(ZOK, limit, 1);
	cr_assert_str_eq(fake_peek(FAKE_WCHILDREN)->path, dir);
	if (with_ours)
		names[others] = strrchr(lease_path, '/') + 1;
	fake_complete_wchildren(ZOK, names, others + with_ours);
}

/* The tool's lock is let go. */
static void mutex_deleted(void)
{
	cr_assert_str_eq(after(fake_peek(FAKE_DELETE)->path,
			       s->dialect == ZKL_STYLE_CURATOR
				       ? "/b/r/locks"
				       : "/b/r-__lock__"),
			 mutex_name);
	fake_complete_void(FAKE_DELETE, ZOK);
}

/* A granted lease watches its own node. */
static void own_watch(void)
{
	fake_complete_own_watch(strrchr(lease_path, '/') + 1);
}

static void release(struct zkl_lockreq *lr)
{
	lockreq_release(lr);
	cr_assert_str_eq(fake_peek(FAKE_DELETE)->path, lease_path);
	fake_complete_void(FAKE_DELETE, ZOK);
	cr_assert_eq(fake_pending(), 0, "nothing else sent");
}

Test(peerlease, curator_creates_then_counts_and_lets_the_lock_go)
{
	struct zkl_lockreq *lr = start(ZKL_STYLE_CURATOR, 0);
	int64_t token, sid;
	char path[512];

	lease_created(ZOK, "/b/r/leases");
	counted("2", "/b/r/leases", 1, 1);
	cr_assert_eq(fake_done_calls, 1, "two leases of two, ours included");
	cr_assert_eq(fake_done_err, 0);
	mutex_deleted();
	own_watch();
	cr_assert_eq(lockreq_describe(lr, &token, path, sizeof(path), &sid), 0);
	cr_assert_eq(token, 1007);
	cr_assert_str_eq(path, lease_path);
	release(lr);
}

Test(peerlease, curator_waits_while_full_watching_the_count)
{
	struct zkl_lockreq *lr = start(ZKL_STYLE_CURATOR, 0);

	lease_created(ZOK, "/b/r/leases");
	counted("2", "/b/r/leases", 2, 1);
	cr_assert_eq(fake_done_calls, 0, "three leases of two");
	cr_assert_eq(fake_pending(), 0, "waiting for a watch");
	fake_fire_watch_event(ZOO_CHILD_EVENT, "/b/r/leases");
	counted("2", "/b/r/leases", 1, 1);
	cr_assert_eq(fake_done_calls, 1);
	mutex_deleted();
	own_watch();
	release(lr);
}

Test(peerlease, a_raised_limit_is_seen_by_the_waiter)
{
	struct zkl_lockreq *lr = start(ZKL_STYLE_CURATOR, 0);

	lease_created(ZOK, "/b/r/leases");
	counted("1", "/b/r/leases", 1, 1);
	cr_assert_eq(fake_done_calls, 0);
	fake_fire_watch_event(ZOO_CHANGED_EVENT, "/b/r");
	counted("2", "/b/r/leases", 1, 1);
	cr_assert_eq(fake_done_calls, 1);
	mutex_deleted();
	own_watch();
	release(lr);
}

Test(peerlease, kazoo_counts_every_child_then_creates)
{
	struct zkl_lockreq *lr = start(ZKL_STYLE_KAZOO, 0);

	counted("2", "/b/r", 2, 0);
	cr_assert_eq(fake_done_calls, 0, "two children of two: full");
	fake_fire_watch_event(ZOO_CHILD_EVENT, "/b/r");
	counted("2", "/b/r", 1, 0);
	lease_created(ZOK, "/b/r");
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_eq(fake_done_err, 0);
	mutex_deleted();
	own_watch();
	release(lr);
}

Test(peerlease, a_try_that_finds_no_room_leaves_nothing)
{
	struct zkl_lockreq *lr = start(ZKL_STYLE_CURATOR, LOCKREQ_TRY);

	lease_created(ZOK, "/b/r/leases");
	counted("1", "/b/r/leases", 1, 1);
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_eq(fake_done_err, -EAGAIN);
	mutex_deleted();
	cr_assert_str_eq(fake_peek(FAKE_DELETE)->path, lease_path);
	fake_complete_void(FAKE_DELETE, ZOK);
	lockreq_release(lr);
	cr_assert_eq(fake_pending(), 0);
}

Test(peerlease, a_lost_create_reply_finds_the_lease_by_its_tag)
{
	struct zkl_lockreq *lr = start(ZKL_STYLE_CURATOR, 0);
	const char *names[2] = { OTHER, NULL };

	fake_zoo_state = ZOO_CONNECTING_STATE;
	lease_created(ZCONNECTIONLOSS, "/b/r/leases");
	cr_assert_eq(fake_pending(), 0, "waits for the connection");
	fake_zoo_state = ZOO_CONNECTED_STATE;
	fake_resume_all(s);
	names[1] = strrchr(lease_path, '/') + 1;
	cr_assert_str_eq(fake_peek(FAKE_CHILDREN)->path, "/b/r/leases");
	fake_complete_children(ZOK, names, 2);
	cr_assert_str_eq(fake_peek(FAKE_EXISTS)->path, lease_path);
	fake_complete_exists(ZOK, 77, 1999);
	counted("2", "/b/r/leases", 1, 1);
	cr_assert_eq(fake_done_calls, 1);
	mutex_deleted();
	own_watch();
	release(lr);
}

Test(peerlease, a_cancel_in_the_locks_queue_deletes_its_node_only)
{
	struct zkl_lockreq *lr;
	const char *names[2] = { "_c_0123abcd-0000-4000-8000-000000000001-"
				 "lock-0000000001",
				 NULL };

	s->dialect = ZKL_STYLE_CURATOR;
	cr_assert_eq(lockreq_new(s, "/b/r", ZKL_MODE_LEASE, 0, "id", 2,
				 fake_on_done, NULL, &lr),
		     0);
	cr_assert_eq(lockreq_start(lr), 0);
	snprintf(mutex_name, sizeof(mutex_name), "%s0000000004",
		 after(fake_peek(FAKE_CREATE)->path, "/b/r/locks"));
	fake_complete_create(ZOK, "0000000004", 4);
	names[1] = mutex_name;
	fake_complete_children(ZOK, names, 2);
	fake_complete_own_watch(mutex_name); /* its own node first */
	fake_complete_get_data(ZOK, "", 0);  /* watches the one ahead */
	cr_assert_eq(lockreq_cancel(lr), 0);
	mutex_deleted();
	lockreq_release(lr);
	cr_assert_eq(fake_pending(), 0);
	cr_assert_eq(fake_done_calls, 0, "a cancel that won: no done");
}

Test(peerlease, an_expired_session_starts_a_counting_lease_over)
{
	struct zkl_lockreq *lr = start(ZKL_STYLE_KAZOO, 0);
	struct zkl_link lost;
	char first[256];

	counted("1", "/b/r", 1, 0);
	snprintf(first, sizeof(first), "%s", mutex_name);
	fake_expire(s, 1, &lost);
	cr_assert(list_empty(&lost), "the tool's lock is no lock of ours");
	cr_assert_eq(fake_done_calls, 0, "a waiter queues again");
	s->state = ZKL_CONN_CONNECTED;
	fake_resume_all(s);
	/* The lost lock's request is let go (no delete: its node went with
	 * the session) and a new one queues. */
	snprintf(mutex_name, sizeof(mutex_name), "%s0000000004",
		 after(fake_peek(FAKE_CREATE)->path, "/b/r-__lock__"));
	cr_assert(strcmp(mutex_name, first) != 0, "a fresh tag");
	fake_complete_create(ZOK, "0000000004", 4);
	{
		const char *names[1] = { mutex_name };
		fake_complete_children(ZOK, names, 1);
	}
	counted("1", "/b/r", 0, 0);
	lease_created(ZOK, "/b/r");
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_eq(fake_done_err, 0);
	mutex_deleted();
	own_watch();
	release(lr);
}

Test(peerlease, an_expired_session_loses_a_held_lease)
{
	struct zkl_lockreq *lr = start(ZKL_STYLE_CURATOR, 0);
	struct zkl_link lost;

	lease_created(ZOK, "/b/r/leases");
	counted("1", "/b/r/leases", 0, 1);
	mutex_deleted();
	own_watch();
	fake_expire(s, 1, &lost);
	cr_assert(!list_empty(&lost), "a held lease is reported lost");
	cr_assert_eq(lockreq_holds(lr), 0);
	fake_free_lost(&lost);
	lockreq_release(lr);
	cr_assert_eq(fake_pending(), 0, "its node went with the session");
}

/* ---- a create whose reply was lost, applied late ---------------------- */

Test(peerlease, kazoo_finds_its_lost_create_that_landed_late)
{
	struct zkl_lockreq *lr = start(ZKL_STYLE_KAZOO, 0);

	counted("2", "/b/r", 0, 0);
	lease_created(ZCONNECTIONLOSS, "/b/r");
	fake_resume_all(s);
	cr_assert_str_eq(fake_peek(FAKE_EXISTS)->path, lease_path);
	fake_complete_exists(ZNONODE, 0, 0); /* not applied yet */
	counted("2", "/b/r", 0, 0);
	lease_created(ZNODEEXISTS, "/b/r"); /* ... and now it is */
	cr_assert_eq(fake_done_calls, 0, "failed: %d", fake_done_err);
	cr_assert_str_eq(fake_peek(FAKE_EXISTS)->path, lease_path);
	fake_complete_exists(ZOK, 77, 1007); /* ours */
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_eq(fake_done_err, 0, "the lease is ours");
	mutex_deleted();
	own_watch();
	release(lr);
}

Test(peerlease, curator_deletes_a_second_lease_of_its_own)
{
	struct zkl_lockreq *lr = start(ZKL_STYLE_CURATOR, 0);
	const char *none[1] = { OTHER };
	char stray[512], *seq;

	lease_created(ZCONNECTIONLOSS, "/b/r/leases");
	fake_resume_all(s);
	cr_assert_str_eq(fake_peek(FAKE_CHILDREN)->path, "/b/r/leases");
	fake_complete_children(ZOK, none, 1); /* not applied yet */
	lease_created(ZOK, "/b/r/leases");    /* created again: 7 */
	snprintf(stray, sizeof(stray), "%s", lease_path);
	seq = strrchr(stray, '-') + 1;
	memcpy(seq, "0000000006", 10); /* the first, applied late */
	{
		const char *names[2] = { strrchr(stray, '/') + 1,
					 strrchr(lease_path, '/') + 1 };
		cr_assert_str_eq(fake_peek(FAKE_GET)->path, "/b/r");
		fake_complete_get_data(ZOK, "2", 1);
		fake_complete_wchildren(ZOK, names, 2);
	}
	cr_assert_str_eq(fake_peek(FAKE_DELETE)->path, stray,
			 "the second lease of ours is left to count");
	fake_complete_void(FAKE_DELETE, ZOK);
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_eq(fake_done_err, 0);
	mutex_deleted();
	own_watch();
	release(lr);
}

/* ---- a failure is gone only with the tool's lock ------------------------ */

static int gone_calls;

static void on_gone(void *arg)
{
	(void)arg;
	gone_calls++;
}

static void failed_try_gone_with_the_tools_lock(enum zkl_style style)
{
	struct zkl_lockreq *lr = start(style, LOCKREQ_TRY);
	int curator = style == ZKL_STYLE_CURATOR;

	gone_calls = 0;
	if (curator) {
		lease_created(ZOK, "/b/r/leases");
		counted("1", "/b/r/leases", 1, 1);
	} else {
		counted("1", "/b/r", 1, 0);
	}
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_eq(fake_done_err, -EAGAIN, "the try failed");
	lockreq_release_then(lr, on_gone, NULL);
	cr_assert_eq(gone_calls, 0,
		     "told gone while the tool's lock node is there");
	mutex_deleted();
	if (curator) {
		cr_assert_eq(gone_calls, 0,
			     "told gone while the lease is there");
		cr_assert_str_eq(fake_peek(FAKE_DELETE)->path, lease_path);
		fake_complete_void(FAKE_DELETE, ZOK);
	}
	cr_assert_eq(gone_calls, 1);
	cr_assert_eq(fake_pending(), 0);
}

Test(peerlease, a_failed_curator_try_is_gone_with_the_tools_lock)
{
	failed_try_gone_with_the_tools_lock(ZKL_STYLE_CURATOR);
}

Test(peerlease, a_failed_kazoo_try_is_gone_with_the_tools_lock)
{
	failed_try_gone_with_the_tools_lock(ZKL_STYLE_KAZOO);
}

/* Granted while a jeopardy is declared (held back), then its lease node
 * is deleted by another client before the grant could be told: the
 * request fails EIO, and nothing is left to delete (the review found it
 * aborted the daemon on a plain request's assertion). */
Test(peerlease, a_held_back_lease_whose_node_goes_fails_once)
{
	struct zkl_lockreq *lr = start(ZKL_STYLE_CURATOR, 0);

	pthread_mutex_lock(&s->lock);
	s->jeopardy_ms = 1000; /* declared once the tool's lock was had */
	pthread_mutex_unlock(&s->lock);
	lease_created(ZOK, "/b/r/leases");
	counted("2", "/b/r/leases", 1, 1);
	cr_assert_eq(fake_done_calls, 0, "held back");
	mutex_deleted();
	own_watch();
	fake_fire_watch(lease_path);
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_eq(fake_done_err, -EIO);
	lockreq_release(lr);
	cr_assert_eq(fake_pending(), 0, "nothing left to delete");
}

/* lr_create_reply_locked's LR_CREATE_AGAIN for a lease: its directory
 * found missing at the lease's create (a container reaped) is made again,
 * and the lease created again; then it goes on as any lease. */
Test(peerlease, a_lease_directory_found_missing_is_made_and_the_lease_created)
{
	struct zkl_lockreq *lr = start(ZKL_STYLE_CURATOR, 0);

	cr_assert_eq(fake_peek_op(), FAKE_CREATE);
	fake_complete_create(ZNONODE, "", 0);
	cr_assert_eq(fake_peek_op(), FAKE_CREATE_PARENT, "no parent made");
	while (fake_peek_op() == FAKE_CREATE_PARENT)
		fake_complete_void(FAKE_CREATE_PARENT, ZOK);
	cr_assert_eq(fake_done_calls, 0, "answered at a missing directory");
	lease_created(ZOK, "/b/r/leases");
	counted("2", "/b/r/leases", 1, 1);
	cr_assert_eq(fake_done_calls, 1);
	cr_assert_eq(fake_done_err, 0);
	mutex_deleted();
	own_watch();
	release(lr);
}
