/*
 * Waits kept for a caught signal's restart, and the deadlines, against the
 * scripted libfuse (fake_fuse.c) and ZooKeeper (fake_zk.c), with the
 * verdict on the waiting thread's signals scripted (--wrap of
 * sigpend_thread_classify: a caught signal needs no real thread) and a
 * gate in pthread_mutex_lock (--wrap) to hold one thread at a chosen lock
 * while another goes on.  Each test failed or crashed on the first
 * version of these paths (found by review): a waiter on fs->kept or
 * fs->failing taken for a parked one, a try and a blocking call taking
 * each other's kept wait, an unlock freed under its deadline.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "fake_fuse.h"
#include "fake_zk.h"
#include "fs.h"
#include "lockfile.h"
#include "ops.h"
#include "process.h"
#include "sigpend.h"

/* ---- scripted signal classification ------------------------------------ */

static enum sigpend_verdict verdict = SIGPEND_WAIT;
/* Run once, at the next classification, before it answers: the other
 * worker's interrupt callback of the same request, say. */
static void (*on_classify)(void);

enum sigpend_verdict __wrap_sigpend_thread_classify(pid_t tid);
enum sigpend_verdict __wrap_sigpend_thread_classify(pid_t tid)
{
	void (*hook)(void) = on_classify;

	(void)tid;
	on_classify = NULL;
	if (hook)
		hook();
	return verdict;
}

/* ---- pthread_mutex_lock wrapped: a gate for thread interleavings -------- */

int __real_pthread_mutex_lock(pthread_mutex_t *m);
int __wrap_pthread_mutex_lock(pthread_mutex_t *m);
static pthread_mutex_t *gate_mutex;
static pthread_t gate_thread;
static int gate_skip; /* lock calls of gate_thread on gate_mutex to let by */
static sem_t gate_reached, gate_open;

int __wrap_pthread_mutex_lock(pthread_mutex_t *m)
{
	if (gate_mutex == m && pthread_equal(pthread_self(), gate_thread)) {
		if (gate_skip-- == 0) {
			struct timespec t;
			gate_mutex = NULL;
			sem_post(&gate_reached);
			clock_gettime(CLOCK_REALTIME, &t);
			t.tv_sec += 3;
			sem_timedwait(&gate_open, &t);
		}
	}
	return __real_pthread_mutex_lock(m);
}

/* ---- the mount ----------------------------------------------------------- */

static uint64_t write_ino, lock_ino, dir_ino;
static const char *other_writer =
	"_c_0123abcd-0000-4000-8000-0000000000aa-write-0000000001";

static void setup(void)
{
	fake_mount(&dir_ino, &write_ino);
	cr_assert_eq(tree_lookup(&fake_fs.tree, dir_ino, "lock", &lock_ino), 0);
	fake_ctx.pid = 4242;
	verdict = SIGPEND_WAIT;
	sem_init(&gate_reached, 0, 0);
	sem_init(&gate_open, 0, 0);
}

TestSuite(kept, .init = setup);

static struct lockfile *the_lockfile(void)
{
	struct lockfile *lf;

	pthread_mutex_lock(&fake_fs.lock);
	lf = ZKL_CONTAINER_OF(fake_fs.lockfiles.next, struct lockfile, link);
	pthread_mutex_unlock(&fake_fs.lock);
	return lf;
}

/* Open `lock` (takes no lock); fi set for flock/fcntl calls on it. */
static void open_lock(struct fuse_file_info *fi)
{
	static struct fake_req open_req;

	memset(fi, 0, sizeof(*fi));
	fi->flags = O_RDWR;
	lockfile_open((fuse_req_t)&open_req, lock_ino, fi, NULL);
	cr_assert_eq(open_req.replies, 1);
	fi->fh = (uint64_t)(uintptr_t)the_lockfile();
}

/* Our node is created as ...0000000002 behind another host's writer. */
static char mine[256];
static void queue_behind_other_writer(void)
{
	const char *names[2] = { other_writer, mine };

	snprintf(mine, sizeof(mine), "%s0000000002",
		 strrchr(fake_peek(FAKE_CREATE)->path, '/') + 1);
	fake_complete_create(ZOK, "0000000002", 1002);
	fake_complete_children(ZOK, names, 2);
}

/* A blocking flock, waiting, then told EINTR by a caught signal: kept. */
static void kept_flock(struct fuse_file_info *fi, struct fake_req *r1)
{
	open_lock(fi);
	lockfile_flock((fuse_req_t)r1, lock_ino, fi, LOCK_EX);
	queue_behind_other_writer();
	cr_assert_eq(r1->replies, 0, "the flock did not wait");
	verdict = SIGPEND_HANDLED;
	fake_interrupt(r1);
	cr_assert_eq(r1->replies, 1);
	cr_assert_eq(r1->err, EINTR);
	pthread_mutex_lock(&fake_fs.lock);
	cr_assert_not(list_empty(&fake_fs.kept), "not kept");
	pthread_mutex_unlock(&fake_fs.lock);
}

/* ---- 1. the new call's interrupt on another worker while waiter_adopt
 * looks at the signals itself: both reach waiter_keep / waiter_cancel; the
 * second finds the waiter "linked" (on fs->kept or fs->failing). ---------- */

static struct fake_req r2;
static void callback_on_other_worker(void)
{
	fake_interrupt(
		&r2); /* the kernel's FUSE_INTERRUPT for the call again */
}

Test(kept, adopt_and_a_concurrent_interrupt_both_keep_handled)
{
	struct fuse_file_info fi;
	struct fake_req r1 = { 0 };

	kept_flock(&fi, &r1);
	memset(&r2, 0, sizeof(r2));
	verdict = SIGPEND_HANDLED; /* the 10 ms timer fired again */
	on_classify = callback_on_other_worker;
	lockfile_flock((fuse_req_t)&r2, lock_ino, &fi, LOCK_EX);
	/* Crashes above (reply to NULL) on 01945ef. */
	cr_assert_eq(r2.replies, 1, "%d replies", r2.replies);
}

Test(kept, adopt_and_a_concurrent_interrupt_both_cancel)
{
	struct fuse_file_info fi;
	struct fake_req r1 = { 0 };

	kept_flock(&fi, &r1);
	memset(&r2, 0, sizeof(r2));
	verdict = SIGPEND_CANCEL; /* SIGTERM beside the timer's signal */
	on_classify = callback_on_other_worker;
	lockfile_flock((fuse_req_t)&r2, lock_ino, &fi, LOCK_EX);
	/* lockreq_cancel(NULL) above on 01945ef: w is on fs->failing. */
	fake_complete_get(ZOK); /* the watch of its own node */
	fake_complete_get(ZOK); /* the watch of the writer ahead */
	fake_complete_void(FAKE_DELETE, ZOK);
	cr_assert_eq(r2.replies, 1, "%d replies", r2.replies);
}

/* ---- 2. a kept blocking wait taken back by a try (LOCK_NB) -------------- */

Test(kept, a_try_does_not_adopt_a_kept_blocking_wait)
{
	struct fuse_file_info fi;
	struct fake_req r1 = { 0 }, t = { 0 };
	int before;

	kept_flock(&fi, &r1);
	verdict = SIGPEND_WAIT;
	before = fake_pending(); /* the kept one's watch of its predecessor */
	lockfile_flock((fuse_req_t)&t, lock_ino, &fi, LOCK_EX | LOCK_NB);
	/* A try of its own sends a create (then fails: another host holds).
	 * Adopted, the try waits like the blocking call, with no deadline. */
	cr_assert_gt(fake_pending(), before,
		     "flock(LOCK_EX|LOCK_NB) took back the kept blocking "
		     "wait: it now blocks until the other host unlocks");
}

/* ...and a kept try taken back by a blocking call answers it EAGAIN. */
Test(kept, a_blocking_call_does_not_adopt_a_kept_try)
{
	struct fuse_file_info fi;
	struct fake_req r1 = { 0 }, b = { 0 };
	const char *names[2] = { other_writer, mine };

	open_lock(&fi);
	lockfile_flock((fuse_req_t)&r1, lock_ino, &fi, LOCK_EX | LOCK_NB);
	snprintf(mine, sizeof(mine), "%s0000000002",
		 strrchr(fake_peek(FAKE_CREATE)->path, '/') + 1);
	verdict = SIGPEND_HANDLED; /* ZooKeeper is slow; the timer fires */
	fake_interrupt(&r1);
	cr_assert_eq(r1.err, EINTR);
	verdict = SIGPEND_WAIT;
	lockfile_flock((fuse_req_t)&b, lock_ino, &fi, LOCK_EX); /* blocking */
	fake_complete_create(ZOK, "0000000002", 1002);
	fake_complete_children(ZOK, names, 2); /* the try's: EAGAIN */
	if (fake_pending() ==
	    1) /* adopted: the try's delete, then b's answer */
		fake_complete_void(FAKE_DELETE, ZOK);
	cr_assert(b.replies == 0 || b.err != EAGAIN,
		  "a blocking flock(LOCK_EX) answered EWOULDBLOCK: it adopted "
		  "the kept try");
}

/* ---- 3. waiter_fail relinks w (fs->failing) while waiter_park, still
 * parking, tests list_linked() for "still in fs->waiters" ------------------ */

static pthread_t b_thread;
static struct fake_req *b_req;
static void *b_main(void *arg)
{
	(void)arg;
	gate_thread = pthread_self();
	gate_skip = 1;
	gate_mutex = &fake_fs.session->lock;
	fake_interrupt(b_req); /* SIGTERM: cancel wins, waiter_fail */
	return NULL;
}

static void interrupt_on_other_worker(struct fake_req *r)
{
	b_req = r;
	verdict = SIGPEND_CANCEL;
	/* B's second lock of the session's mutex is lockreq_release_then,
	 * after waiter_fail linked w on fs->failing and let fs->lock go. */
	cr_assert_eq(pthread_create(&b_thread, NULL, b_main, NULL), 0);
	{
		struct timespec t;
		clock_gettime(CLOCK_REALTIME, &t);
		t.tv_sec += 3;
		cr_assert_eq(sem_timedwait(&gate_reached, &t), 0,
			     "B never reached lockreq_release_then");
	}
	/* A goes on: waiter_park takes fs->lock and looks at w->link. */
}

Test(kept, waiter_park_sees_a_failing_waiter_as_parked)
{
	struct fake_req r = { 0 };
	struct fuse_file_info fi = { .flags = O_WRONLY };

	registered = &r;
	after_registering = interrupt_on_other_worker;
	lockfile_open((fuse_req_t)&r, write_ino, &fi, NULL);
	/* 01945ef: lockreq_start(NULL) above (SIGSEGV). */
	sem_post(&gate_open);
	pthread_join(b_thread, NULL);
	cr_assert_eq(r.replies, 1);
	cr_assert_eq(r.err, EINTR);
}

/* ---- 4. an unlock's last delete and the poller's deadline: the poller
 * takes a reference (pending 0 -> 1) on an unlock whose last put is
 * between its decrement and fs->lock: that put frees it, the poller
 * answers freed memory and frees it again ---------------------------------- */

static void *complete_delete(void *arg)
{
	(void)arg;
	/* Held at its first lock of fs->lock: unlock_put's, after its
	 * decrement. */
	gate_thread = pthread_self();
	gate_skip = 0;
	gate_mutex = &fake_fs.lock;
	fake_complete_void(FAKE_DELETE, ZOK); /* unlock_one_gone */
	return NULL;
}

Test(kept, an_unlock_answered_at_its_deadline_as_its_delete_completes)
{
	struct fuse_file_info fi;
	struct fake_req lk = { 0 }, un = { 0 };
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	struct unlock *late[4];
	const char *names[1];
	pthread_t t;
	size_t n;

	open_lock(&fi);
	fi.lock_owner = 42;
	lockfile_setlk((fuse_req_t)&lk, lock_ino, &fi, &fl, 1);
	snprintf(mine, sizeof(mine), "%s0000000001",
		 strrchr(fake_peek(FAKE_CREATE)->path, '/') + 1);
	fake_complete_create(ZOK, "0000000001", 1001);
	names[0] = mine;
	fake_complete_children(ZOK, names, 1);
	cr_assert_eq(lk.replies, 1);
	cr_assert_eq(lk.err, 0);
	fake_complete_own_watch(mine);
	fl.l_type = F_UNLCK;
	lockfile_setlk((fuse_req_t)&un, lock_ino, &fi, &fl, 0);
	cr_assert_eq(un.replies, 0);
	usleep(1100 * 1000); /* the unlock's deadline passes */
	/* The completion thread's last unlock_put has decremented pending to
	 * 0 and waits for fs->lock, which the poller holds: the gate tells
	 * when it is there. */
	pthread_mutex_lock(&fake_fs.lock);
	cr_assert_eq(pthread_create(&t, NULL, complete_delete, NULL), 0);
	{
		struct timespec w;
		clock_gettime(CLOCK_REALTIME, &w);
		w.tv_sec += 3;
		cr_assert_eq(sem_timedwait(&gate_reached, &w), 0,
			     "the delete's completion never reached fs->lock");
	}
	n = unlock_take_late_locked(&fake_fs, late, 4);
	sem_post(&gate_open);
	pthread_mutex_unlock(&fake_fs.lock);
	pthread_join(t, NULL); /* its unlock_put freed the unlock */
	cr_assert_leq(n, 1);
	if (n) /* 01945ef: n == 1, and the unlock is freed already */
		unlock_answer_late(late[0]); /* ASan: heap-use-after-free */
	cr_assert_eq(un.replies, 1, "%d replies", un.replies);
}

/* ---- a downgrade and a kept wait of its call ---------------------------- */

/* A blocking fcntl call of fl, whose node is created as seq (its name
 * into node, and as the last of the n names listed), and which waits
 * behind the others. */
static void setlk_queued(struct fake_req *r, struct fuse_file_info *fi,
			 struct flock *fl, const char *seq, char node[256],
			 const char **names, int n)
{
	lockfile_setlk((fuse_req_t)r, lock_ino, fi, fl, 1);
	snprintf(node, 256, "%s%s",
		 strrchr(fake_peek(FAKE_CREATE)->path, '/') + 1, seq);
	fake_complete_create(ZOK, seq, 1000 + n);
	names[n - 1] = node;
	fake_complete_children(ZOK, names, n);
	while (fake_pending() && fake_peek_op() == FAKE_GET)
		fake_complete_get(ZOK); /* its watches */
	cr_assert_eq(r->replies, 0, "it did not wait");
}

/* Owner 42: thread 4243 waits for a write range (node 2) behind another
 * host's writer (node 1); thread 4242 waits for a read lock of the whole
 * file (node 4) behind a third host's writer, Y (node 3).  A caught
 * signal answers thread 4242 EINTR and keeps its wait.  Node 1 goes: the
 * write range is granted.  Thread 4242 asks again (SA_RESTART), and over
 * the owner's write lock its call is now a downgrade, in place: it must
 * not take back the kept read wait, which would let the write node go
 * first and Y in (a review found it did).  The kept wait is given up. */
Test(kept, a_downgrade_does_not_take_back_a_kept_read_wait)
{
	static const char *y =
		"_c_0123abcd-0000-4000-8000-0000000000bb-write-0000000003";
	struct fuse_file_info fi;
	struct fake_req w = { 0 }, r1 = { 0 }, down = { 0 };
	struct flock fl = { .l_whence = SEEK_SET };
	char node_w[256], node_r[256], path[512];
	const char *names[4];
	int multi_seen = 0, read_node_gone = 0;

	open_lock(&fi);
	fi.lock_owner = 42;
	fake_ctx.pid = 4243;
	fl.l_type = F_WRLCK;
	fl.l_len = 10;
	names[0] = other_writer;
	setlk_queued(&w, &fi, &fl, "0000000002", node_w, names, 2);
	fake_ctx.pid = 4242;
	fl.l_type = F_RDLCK;
	fl.l_len = 0;
	names[2] = y;
	setlk_queued(&r1, &fi, &fl, "0000000004", node_r, names, 4);
	verdict = SIGPEND_HANDLED;
	fake_interrupt(&r1);
	cr_assert_eq(r1.err, EINTR);
	verdict = SIGPEND_WAIT;
	snprintf(path, sizeof(path), "/b/r/%s", other_writer);
	fake_fire_watch(path);
	for (int i = 0; i < 20 && fake_pending() && w.replies == 0; i++) {
		if (fake_peek_op() == FAKE_CHILDREN) {
			names[0] = node_w;
			names[1] = y;
			names[2] = node_r;
			fake_complete_children(ZOK, names, 3);
		} else {
			fake_complete_get(ZOK);
		}
	}
	cr_assert_eq(w.replies, 1);
	cr_assert_eq(w.err, 0, "the write range is not granted");
	while (fake_pending() && fake_peek_op() == FAKE_GET)
		fake_complete_get(ZOK);
	/* The same thread's call again: a downgrade. */
	lockfile_setlk((fuse_req_t)&down, lock_ino, &fi, &fl, 1);
	for (int i = 0; i < 10 && fake_pending() && down.replies == 0; i++) {
		enum fake_op op = fake_peek_op();
		if (op == FAKE_MULTI) {
			multi_seen = 1;
			fake_complete_multi(ZOK, NULL);
		} else if (op == FAKE_DELETE) {
			cr_assert(strstr(fake_peek(FAKE_DELETE)->path, node_r),
				  "the downgrade deleted %s, not the kept "
				  "read wait's node",
				  fake_peek(FAKE_DELETE)->path);
			fake_complete_void(FAKE_DELETE, ZOK);
			read_node_gone = 1;
		} else {
			fake_complete_get(ZOK);
		}
	}
	cr_assert(multi_seen, "the downgrade was not done in place");
	cr_assert_eq(down.replies, 1, "the downgrade waited (Y holds?)");
	cr_assert_eq(down.err, 0);
	while (fake_pending() && !read_node_gone) {
		if (fake_peek_op() == FAKE_DELETE &&
		    strstr(fake_peek(FAKE_DELETE)->path, node_r)) {
			fake_complete_void(FAKE_DELETE, ZOK);
			read_node_gone = 1;
		} else {
			fake_complete_get(ZOK);
		}
	}
	cr_assert(read_node_gone, "the kept read wait was not given up");
}
