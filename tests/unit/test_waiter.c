/*
 * Parked opens against a scripted libfuse and a scripted ZooKeeper: an
 * interrupt that came before the handler registered its callback (libfuse
 * then runs the callback inside fuse_req_interrupt_func, with the
 * request's lock held), an interrupt while waiting, and a signal that must
 * not cancel.  Each request gets exactly one reply, never from inside
 * libfuse's registration, and a failure only once its node is deleted.
 * And an fcntl owner's byte ranges: two calls that meet, and the calls
 * that never convert its lock.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake_fuse.h"
#include "fake_zk.h"
#include "fs.h"
#include "lockfile.h"
#include "ops.h"

/* ---- the mount -------------------------------------------------------- */

static uint64_t write_ino, dir_ino;

static void setup(void)
{
	fake_mount(&dir_ino, &write_ino);
}

static void teardown(void)
{
	cr_assert(list_empty(&fake_fs.waiters), "a parked request was left");
	cr_assert(list_empty(&fake_fs.lockfiles), "an open file was not freed");
	fake_unmount();
}

TestSuite(waiter, .init = setup, .fini = teardown);

static void open_write(struct fake_req *r)
{
	struct fuse_file_info fi = { .flags = O_WRONLY };

	lockfile_open((fuse_req_t)r, write_ino, &fi, NULL);
}

/* A thread id that no longer exists reads as killed: the wait is
 * cancelled.  The test's own thread has no signal pending: it is not. */
#define TID_GONE 0

Test(waiter, interrupt_before_registration_answers_once_outside_libfuse)
{
	struct fake_req r = { .interrupted = 1 };

	fake_ctx.pid = TID_GONE;
	open_write(&r);
	cr_assert_eq(r.replies, 1, "%d replies", r.replies);
	cr_assert_eq(r.err, EINTR);
	cr_assert_eq(fake_pending(), 0,
		     "a cancelled open sent something to ZooKeeper");
}

Test(waiter, interrupt_while_waiting_answers_once_its_node_is_gone)
{
	struct fake_req r = { 0 };
	struct fake_call *c;

	fake_ctx.pid = TID_GONE;
	open_write(&r);
	cr_assert_eq(fake_pending(), 2, "create and listing");
	c = fake_peek(FAKE_CREATE);
	cr_assert(strstr(c->path, "/b/r/"), "creates %s", c->path);
	fake_complete_create(ZOK, "0000000002", 1002);
	fake_interrupt(&r);
	cr_assert_eq(r.replies, 0, "EINTR before the node was deleted");
	/* The listing sent behind the create comes back, stale. */
	fake_complete_children(ZOK, NULL, 0);
	cr_assert_eq(fake_peek(FAKE_DELETE)->op, FAKE_DELETE);
	fake_complete_void(FAKE_DELETE, ZOK);
	cr_assert_eq(r.replies, 1);
	cr_assert_eq(r.err, EINTR);
	cr_assert_eq(fake_pending(), 0);
}

Test(waiter, a_signal_that_does_not_cancel_keeps_the_place)
{
	struct fake_req r = { .interrupted = 1 };
	struct fuse_file_info fi = { 0 };
	struct lockfile *lf;
	const char *names[1];
	char name[256];

	fake_ctx.pid = gettid(); /* pending: nothing */
	open_write(&r);
	cr_assert_eq(r.replies, 0, "an ignored signal answered the open");
	cr_assert_eq(fake_pending(), 2, "the request was not started");
	snprintf(name, sizeof(name), "%s0000000001",
		 strrchr(fake_peek(FAKE_CREATE)->path, '/') + 1);
	fake_complete_create(ZOK, "0000000001", 1001);
	names[0] = name;
	fake_complete_children(ZOK, names, 1);
	cr_assert_eq(r.replies, 1);
	cr_assert_eq(r.err, 0, "not granted");
	fake_complete_own_watch(name);
	pthread_mutex_lock(&fake_fs.lock);
	cr_assert_eq(fake_fs.signal_watched, 0,
		     "a granted waiter is still polled");
	lf = ZKL_CONTAINER_OF(fake_fs.lockfiles.next, struct lockfile, link);
	pthread_mutex_unlock(&fake_fs.lock);
	fi.fh = (uint64_t)(uintptr_t)lf;
	lockfile_release((fuse_req_t)&r, write_ino, &fi);
	fake_complete_void(FAKE_DELETE, ZOK);
	cr_assert_eq(fake_pending(), 0);
}

/* ---- a grant racing the close of its file, and the unmount ------------- */

/* Open write, its node created as 0000000001 and alone: the listing that
 * grants it is next.  Its name into name. */
static void open_write_to_grant(struct fake_req *r, char name[256])
{
	fake_ctx.pid = gettid();
	open_write(r);
	snprintf(name, 256, "%s0000000001",
		 strrchr(fake_peek(FAKE_CREATE)->path, '/') + 1);
	fake_complete_create(ZOK, "0000000001", 1001);
}

static struct lockfile *the_lockfile(void)
{
	struct lockfile *lf;

	pthread_mutex_lock(&fake_fs.lock);
	cr_assert_not(list_empty(&fake_fs.lockfiles), "no open lock file");
	lf = ZKL_CONTAINER_OF(fake_fs.lockfiles.next, struct lockfile, link);
	pthread_mutex_unlock(&fake_fs.lock);
	return lf;
}

/* The process closes the file as soon as its open returns, and the
 * kernel forgets the inode. */
static void close_and_forget(void)
{
	static struct fake_req release;
	struct fuse_file_info fi = { 0 };

	fi.fh = (uint64_t)(uintptr_t)the_lockfile();
	lockfile_release((fuse_req_t)&release, write_ino, &fi);
	tree_forget(&fake_fs.tree, write_ino, 100);
}

/* Open write and grant it; `meanwhile` runs while the grant replies. */
static void grant_while(void (*meanwhile)(void), struct fake_req *r,
			char name[256])
{
	const char *names[1] = { name };

	open_write_to_grant(r, name);
	while_replying_open = meanwhile;
	fake_complete_children(ZOK, names, 1);
}

Test(waiter, a_grant_needs_nothing_of_the_inode_after_its_reply)
{
	struct fake_req r = { 0 };
	char name[256];

	/* The ASan build sees a read of the forgotten inode, if any. */
	grant_while(close_and_forget, &r, name);
	cr_assert_eq(r.replies, 1);
	cr_assert_eq(r.err, 0, "not granted");
	(void)name; /* let go before its own watch was due */
	fake_complete_void(FAKE_DELETE, ZOK);
	cr_assert_eq(fake_run_due(fake_fs.session), 0);
	cr_assert_eq(fake_pending(), 0);
}

static pthread_t unmounter;

static void *unmount_thread(void *arg)
{
	(void)arg;
	lockfile_shutdown_all(&fake_fs);
	return NULL;
}

/* The unmount starts while the grant is being replied to: it must not
 * go on (and miss the lock on its way to its file) until the grant is
 * done. */
static void unmount_meanwhile(void)
{
	struct timespec t;
	int stopping = 0;

	cr_assert_eq(pthread_create(&unmounter, NULL, unmount_thread, NULL), 0);
	for (int i = 0; i < 5000 && !stopping; i++) {
		pthread_mutex_lock(&fake_fs.lock);
		stopping = fake_fs.stopping;
		pthread_mutex_unlock(&fake_fs.lock);
		if (!stopping)
			usleep(1000);
	}
	cr_assert(stopping, "the unmount did not start within 5 s");
	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_nsec += 300 * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	cr_assert_neq(pthread_timedjoin_np(unmounter, NULL, &t), 0,
		      "the unmount finished while a grant was on its way: "
		      "that lock would stay taken");
}

Test(waiter, an_unmount_waits_for_a_grant_on_its_way_and_releases_it)
{
	struct fake_req r = { 0 };
	char name[256];

	grant_while(unmount_meanwhile, &r, name);
	cr_assert_eq(pthread_join(unmounter, NULL), 0);
	cr_assert_eq(r.replies, 1);
	cr_assert_eq(r.err, 0, "not granted");
	(void)name; /* let go before its own watch was due */
	cr_assert_eq(fake_peek(FAKE_DELETE)->op, FAKE_DELETE,
		     "the unmount did not release the granted lock");
	fake_complete_void(FAKE_DELETE, ZOK);
	cr_assert_eq(fake_run_due(fake_fs.session), 0);
	cr_assert_eq(fake_pending(), 0);
}

/* ---- CREATE: the entry's kernel reference ------------------------------ */

Test(waiter, a_create_that_fails_gives_its_entry_reference_back)
{
	struct fake_req r = { 0 };
	struct fuse_file_info fi = { .flags = O_WRONLY | O_CREAT | O_NONBLOCK };
	struct tree_res *res = tree_res_of(&fake_fs.tree, write_ino);
	uint64_t before = res->nlookup;
	char name[256];
	const char *names[2] = {
		"_c_0123abcd-0000-4000-8000-0000000000aa-write-0000000001", name
	};

	fake_ctx.pid = gettid();
	dir_create((fuse_req_t)&r, dir_ino, "write", 0644, &fi);
	snprintf(name, sizeof(name), "%s0000000002",
		 strrchr(fake_peek(FAKE_CREATE)->path, '/') + 1);
	fake_complete_create(ZOK, "0000000002", 1002);
	fake_complete_children(ZOK, names, 2); /* another writer holds */
	fake_complete_void(FAKE_DELETE, ZOK);
	cr_assert_eq(r.replies, 1);
	cr_assert_eq(r.err, EAGAIN);
	cr_assert_eq(res->nlookup, before,
		     "the failed CREATE kept a kernel reference (%llu, was "
		     "%llu) that no FORGET will drop",
		     (unsigned long long)res->nlookup,
		     (unsigned long long)before);
}

/* ---- a grant of the holder while its second request parks ------------- */

static char first_name[256];
static int replies_at_registration;
static struct fake_req second;

/* The first fcntl's listing comes back (granted) while the second one's
 * park is setting its interrupt callback. */
static void first_granted_meanwhile(void)
{
	const char *names[1] = { first_name };

	fake_complete_children(ZOK, names, 1);
	replies_at_registration = second.replies;
}

/* MOUNT/r/lock opened into fi for lock owner 42 (the threads of one
 * process share it); its inode into *lock_ino. */
static void open_lock_for_owner(struct fake_req *open_req,
				struct fuse_file_info *fi, uint64_t *lock_ino)
{
	cr_assert_eq(tree_lookup(&fake_fs.tree, dir_ino, "lock", lock_ino), 0);
	fake_ctx.pid = gettid();
	lockfile_open((fuse_req_t)open_req, *lock_ino, fi, NULL);
	cr_assert_eq(open_req->replies, 1);
	fi->fh = (uint64_t)(uintptr_t)the_lockfile();
	fi->lock_owner = 42;
}

/* A first fcntl call of fl, blocking, whose node is created as
 * 0000000001 (its name into first_name): its listing is next. */
static void setlk_first_created(struct fake_req *first, uint64_t lock_ino,
				struct fuse_file_info *fi, struct flock *fl)
{
	lockfile_setlk((fuse_req_t)first, lock_ino, fi, fl, 1);
	snprintf(first_name, sizeof(first_name), "%s0000000001",
		 strrchr(fake_peek(FAKE_CREATE)->path, '/') + 1);
	fake_complete_create(ZOK, "0000000001", 1001);
}

/* The owner's second call of fl, parked while the first's listing comes
 * back and grants the first (first_granted_meanwhile). */
static void setlk_second_as_first_granted(uint64_t lock_ino,
					  struct fuse_file_info *fi,
					  struct flock *fl)
{
	memset(&second, 0, sizeof(second));
	registering = &second;
	while_registering = first_granted_meanwhile;
	replies_at_registration = -1;
	lockfile_setlk((fuse_req_t)&second, lock_ino, fi, fl, 1);
}

Test(waiter, a_grant_while_the_holders_next_request_parks_answers_it_once)
{
	struct fake_req open_req = { 0 }, first = { 0 };
	struct fuse_file_info fi = { .flags = O_RDWR };
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	uint64_t lock_ino;

	open_lock_for_owner(&open_req, &fi, &lock_ino);
	setlk_first_created(&first, lock_ino, &fi, &fl);
	setlk_second_as_first_granted(lock_ino, &fi, &fl);
	cr_assert_eq(first.replies, 1);
	cr_assert_eq(first.err, 0, "the first is granted");
	cr_assert_eq(replies_at_registration, 0,
		     "the second was answered (its request freed by libfuse) "
		     "before its park set its interrupt callback");
	cr_assert_eq(second.replies, 1, "the second: %d answers",
		     second.replies);
	cr_assert_eq(second.err, 0, "the second is answered from the lock");
	fake_complete_own_watch(first_name);
	cr_assert_eq(fake_pending(), 0, "the second queued a node");
	/* The process exits: its lock goes with the file's release. */
	lockfile_release((fuse_req_t)&open_req, lock_ino, &fi);
	fake_complete_void(FAKE_DELETE, ZOK);
	cr_assert_eq(fake_pending(), 0);
}

/* ---- byte ranges: two calls of one owner ------------------------------- */

/* Two threads of one process lock two ranges at once: the second is
 * answered from the lock the first was granted, and holds its range:
 * the first range's unlock keeps the lock, the second's releases it. */
Test(waiter, a_range_answered_from_its_owners_grant_outlives_the_first_range)
{
	struct fake_req open_req = { 0 }, first = { 0 }, un = { 0 };
	struct fuse_file_info fi = { .flags = O_RDWR };
	struct flock fl = { .l_type = F_WRLCK,
			    .l_whence = SEEK_SET,
			    .l_start = 0,
			    .l_len = 10 };
	uint64_t lock_ino;

	open_lock_for_owner(&open_req, &fi, &lock_ino);
	setlk_first_created(&first, lock_ino, &fi, &fl);
	fl.l_start = 100;
	setlk_second_as_first_granted(lock_ino, &fi, &fl);
	cr_assert_eq(first.err, 0, "the first is granted");
	cr_assert_eq(second.replies, 1);
	cr_assert_eq(second.err, 0, "the second is answered from the lock");
	fake_complete_own_watch(first_name);
	cr_assert_eq(fake_pending(), 0, "the second queued a node");
	fl.l_type = F_UNLCK;
	fl.l_start = 0;
	lockfile_setlk((fuse_req_t)&un, lock_ino, &fi, &fl, 0);
	cr_assert_eq(un.replies, 1);
	cr_assert_eq(un.err, 0);
	cr_assert_eq(fake_pending(), 0,
		     "the first range's unlock let the lock go: the second's "
		     "range was not recorded");
	fl.l_start = 100;
	memset(&un, 0, sizeof(un));
	lockfile_setlk((fuse_req_t)&un, lock_ino, &fi, &fl, 0);
	cr_assert_eq(un.replies, 0, "answered before its node was deleted");
	fake_expect_delete_of(first_name);
	cr_assert_eq(un.replies, 1);
	cr_assert_eq(un.err, 0);
	lockfile_release((fuse_req_t)&open_req, lock_ino, &fi);
	cr_assert_eq(fake_pending(), 0);
}

/* ---- byte ranges: a call of the owner's during another's conversion ---- */

/* The node named by the oldest call, a create, is created with `seq`;
 * its name (the prefix and seq) into name. */
static void create_as(const char *seq, char name[256])
{
	snprintf(name, 256, "%s%s",
		 strrchr(fake_peek(FAKE_CREATE)->path, '/') + 1, seq);
	fake_complete_create(ZOK, seq, 1000);
}

/* A blocking fcntl call of owner 42 on lock_ino: `type` over bytes
 * start..start+len-1. */
static void setlk(struct fake_req *r, uint64_t lock_ino,
		  struct fuse_file_info *fi, short type, off_t start, off_t len)
{
	struct flock fl = { .l_type = type,
			    .l_whence = SEEK_SET,
			    .l_start = start,
			    .l_len = len };

	memset(r, 0, sizeof(*r));
	lockfile_setlk((fuse_req_t)r, lock_ino, fi, &fl, 1);
}

/* Owner 42 holds bytes 0..9 of `type` (F_RDLCK, F_WRLCK), its node
 * 0000000001 (into name). */
static void hold_0_9(struct fake_req *open_req, struct fuse_file_info *fi,
		     uint64_t *lock_ino, char name[256], short type)
{
	struct fake_req call;
	const char *names[1] = { name };

	open_lock_for_owner(open_req, fi, lock_ino);
	setlk(&call, *lock_ino, fi, type, 0, 10);
	create_as("0000000001", name);
	fake_complete_children(ZOK, names, 1);
	cr_assert_eq(call.replies, 1);
	cr_assert_eq(call.err, 0, "the %s range is not granted",
		     type == F_RDLCK ? "read" : "write");
}

static void hold_read_0_9(struct fake_req *open_req, struct fuse_file_info *fi,
			  uint64_t *lock_ino, char name[256])
{
	hold_0_9(open_req, fi, lock_ino, name, F_RDLCK);
}

/* The type owner 42 holds at byte `at` (F_UNLCK: none), and the mode of
 * its lock (-1: none). */
static short owner_type_at(uint64_t lock_ino, int64_t at, int *mode)
{
	struct posixlock *p;
	short type = F_UNLCK;

	pthread_mutex_lock(&fake_fs.lock);
	p = posix_find_locked(&fake_fs, lock_ino, 42);
	*mode = p && p->lr ? (int)lockreq_held_mode(p->lr) : -1;
	for (size_t i = 0; p && i < p->ranges.n; i++)
		if (p->ranges.r[i].start <= at && at <= p->ranges.r[i].end)
			type = p->ranges.r[i].type;
	pthread_mutex_unlock(&fake_fs.lock);
	return type;
}

/* The open file's last close: the node `name` owner 42 holds (NULL:
 * none) is deleted, and nothing else is asked of ZooKeeper. */
static void release_leaving_nothing(struct fake_req *open_req,
				    struct fuse_file_info *fi,
				    uint64_t lock_ino, const char *name)
{
	lockfile_release((fuse_req_t)open_req, lock_ino, fi);
	fake_run_due(fake_fs.session);
	if (name)
		fake_expect_delete_of(name);
	cr_assert_eq(fake_pending(), 0);
}

/* A call of part of the file never converts the owner's lock: a write
 * range over a read lock fails with EDEADLK (it would wait for its own
 * read lock), and nothing is asked of ZooKeeper; the read range and its
 * lock stay. */
Test(waiter, a_write_range_over_a_read_lock_fails_and_keeps_the_read_lock)
{
	struct fake_req open_req = { 0 }, wr;
	struct fuse_file_info fi = { .flags = O_RDWR };
	char name1[256];
	uint64_t lock_ino;
	int mode;

	hold_read_0_9(&open_req, &fi, &lock_ino, name1);
	fake_complete_own_watch(name1);
	setlk(&wr, lock_ino, &fi, F_WRLCK, 20, 10);
	cr_assert_eq(wr.replies, 1, "a range's upgrade waited");
	cr_assert_eq(wr.err, EDEADLK);
	cr_assert_eq(fake_pending(), 0, "a range's upgrade asked ZooKeeper");
	cr_assert_eq(owner_type_at(lock_ino, 5, &mode), F_RDLCK);
	cr_assert_eq(mode, ZKL_MODE_READ, "the read lock was not kept");
	cr_assert_eq(owner_type_at(lock_ino, 25, &mode), F_UNLCK);
	release_leaving_nothing(&open_req, &fi, lock_ino, name1);
}

/* The unlock of the last write range beside a read range keeps the
 * write lock, and asks nothing of ZooKeeper: an unlock never converts,
 * so that it never waits, and no other call of the owner's can meet it
 * half done.  A read lock of the whole file then downgrades it in place,
 * and the owner holds the whole file to read. */
Test(waiter, an_unlock_keeps_the_write_lock_until_a_whole_file_call_lowers_it)
{
	struct fake_req open_req = { 0 }, rd, un, down;
	struct fuse_file_info fi = { .flags = O_RDWR };
	char name1[256], heir[256];
	struct fake_call *multi;
	uint64_t lock_ino;
	int mode;

	hold_0_9(&open_req, &fi, &lock_ino, name1, F_WRLCK);
	fake_complete_own_watch(name1);
	setlk(&rd, lock_ino, &fi, F_RDLCK, 20, 10);
	cr_assert_eq(rd.replies, 1);
	cr_assert_eq(rd.err, 0, "a read range under the write lock");
	setlk(&un, lock_ino, &fi, F_UNLCK, 0, 10);
	cr_assert_eq(un.replies, 1, "the unlock waited");
	cr_assert_eq(un.err, 0);
	cr_assert_eq(fake_pending(), 0, "the unlock asked ZooKeeper");
	cr_assert_eq(owner_type_at(lock_ino, 5, &mode), F_UNLCK);
	cr_assert_eq(owner_type_at(lock_ino, 25, &mode), F_RDLCK);
	cr_assert_eq(mode, ZKL_MODE_WRITE, "the write lock was not kept");
	setlk(&down, lock_ino, &fi, F_RDLCK, 0, 0);
	cr_assert_eq(down.replies, 0);
	multi = fake_peek(FAKE_MULTI); /* the downgrade, in place */
	snprintf(heir, sizeof(heir), "%s",
		 strrchr(multi->ops[0].create_op.path, '/') + 1);
	fake_complete_multi(ZOK, NULL);
	cr_assert_eq(down.replies, 1);
	cr_assert_eq(down.err, 0);
	cr_assert_eq(owner_type_at(lock_ino, 5, &mode), F_RDLCK);
	cr_assert_eq(owner_type_at(lock_ino, 1000, &mode), F_RDLCK);
	cr_assert_eq(mode, ZKL_MODE_READ, "the whole-file read did not lower");
	fake_complete_own_watch(heir);
	release_leaving_nothing(&open_req, &fi, lock_ino, heir);
}

/* An upgrade of the whole file over read ranges, while another thread of
 * the owner unlocks one of them: the unlock is answered at once, and the
 * upgrade's grant leaves the owner the whole file to write, the range it
 * asked alone (nothing it saw before is laid back). */
Test(waiter, an_unlock_during_a_whole_file_upgrade_is_not_undone_by_its_grant)
{
	struct fake_req open_req = { 0 }, t1, t2;
	struct fuse_file_info fi = { .flags = O_RDWR };
	char name1[256], name2[256];
	const char *names[1] = { name2 };
	uint64_t lock_ino;
	int mode;

	hold_read_0_9(&open_req, &fi, &lock_ino, name1);
	setlk(&t1, lock_ino, &fi, F_WRLCK, 0, 0);
	setlk(&t2, lock_ino, &fi, F_UNLCK, 0, 10);
	cr_assert_eq(t2.replies, 1);
	cr_assert_eq(t2.err, 0);
	fake_expect_delete_of(name1); /* the upgrade's read lock */
	create_as("0000000002", name2);
	fake_complete_children(ZOK, names, 1);
	cr_assert_eq(t1.replies, 1);
	cr_assert_eq(t1.err, 0, "thread 1 is not granted");
	cr_assert_eq(owner_type_at(lock_ino, 5, &mode), F_WRLCK);
	cr_assert_eq(owner_type_at(lock_ino, 1000, &mode), F_WRLCK);
	cr_assert_eq(mode, ZKL_MODE_WRITE);
	release_leaving_nothing(&open_req, &fi, lock_ino, name2);
}

/* A close after the unlock of the write range: the write lock kept over
 * the read range goes, and close() returns once it is gone. */
Test(waiter, a_close_after_an_unlock_of_the_write_range_releases_the_lock)
{
	struct fake_req open_req = { 0 }, rd, un, flush = { 0 };
	struct fuse_file_info fi = { .flags = O_RDWR };
	char name1[256];
	uint64_t lock_ino;
	int mode;

	hold_0_9(&open_req, &fi, &lock_ino, name1, F_WRLCK);
	fake_complete_own_watch(name1);
	setlk(&rd, lock_ino, &fi, F_RDLCK, 20, 10);
	setlk(&un, lock_ino, &fi, F_UNLCK, 0, 10);
	cr_assert_eq(un.replies, 1);
	lockfile_flush((fuse_req_t)&flush, lock_ino, &fi);
	cr_assert_eq(flush.replies, 0, "close() returned before the delete");
	fake_expect_delete_of(name1);
	cr_assert_eq(flush.replies, 1);
	cr_assert_eq(flush.err, 0);
	cr_assert_eq(owner_type_at(lock_ino, 25, &mode), F_UNLCK);
	cr_assert_eq(mode, -1, "a lock is held after close()");
	release_leaving_nothing(&open_req, &fi, lock_ino, NULL);
}

/* The session expires under owner 42's write range: its lock is lost.
 * Its next call, a read range, is queued anew for that range alone, and
 * asks a read lock: the lost write ranges are not kept, nor their mode.
 * (A review found it asking a write lock.) */
Test(waiter, a_read_range_after_a_lost_write_lock_asks_a_read_lock)
{
	struct fake_req open_req = { 0 }, rd;
	struct fuse_file_info fi = { .flags = O_RDWR };
	char name1[256], name2[256];
	const char *names[1] = { name1 };
	struct zkl_link lost;
	uint64_t lock_ino;
	int mode;

	hold_0_9(&open_req, &fi, &lock_ino, name1, F_WRLCK);
	fake_complete_own_watch(name1);
	fake_expire(fake_fs.session, 1, &lost);
	fake_free_lost(&lost);
	fake_fs.session->state = ZKL_CONN_CONNECTED;
	fake_fs.session->client_id = 78;
	fake_resume_all(fake_fs.session);
	cr_assert_eq(owner_type_at(lock_ino, 5, &mode), F_WRLCK);
	cr_assert_lt(mode, 0, "the lock is not lost");
	setlk(&rd, lock_ino, &fi, F_RDLCK, 20, 10);
	cr_assert_eq(rd.replies, 0);
	cr_assert(strstr(fake_peek(FAKE_CREATE)->path, "-read-") != NULL,
		  "a read range asks %s",
		  strrchr(fake_peek(FAKE_CREATE)->path, '/') + 1);
	names[0] = name2;
	create_as("0000000002", name2);
	fake_complete_children(ZOK, names, 1);
	cr_assert_eq(rd.replies, 1);
	cr_assert_eq(rd.err, 0);
	cr_assert_eq(owner_type_at(lock_ino, 5, &mode), F_UNLCK,
		     "a lost range was kept");
	cr_assert_eq(owner_type_at(lock_ino, 25, &mode), F_RDLCK);
	cr_assert_eq(mode, ZKL_MODE_READ);
	fake_complete_own_watch(name2);
	release_leaving_nothing(&open_req, &fi, lock_ino, name2);
}
