/*
 * The fault simulator (after SQLite's test_malloc.c): each scenario runs
 * again and again, failing the 1st, 2nd, 3rd, ... allocation, ZooKeeper
 * call or ZooKeeper reply (a connection loss after the server did the
 * work), until a run meets no fault.  Every run must end clean: each
 * request told at most once, every request and queue freed once released,
 * no block left allocated, and no node of ours left behind unless a call
 * was refused (only a dead handle refuses, and its nodes die with it).
 * The holds of a request are counted and asserted (recipes/lr.h), so a
 * reference dropped twice stops the run where it happens; the ASan build
 * catches the rest.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "fake_fuse.h"
#include "fake_tree.h"
#include "fault.h"
#include "internal.h"
#include "lockfile.h"
#include "lockquery.h"
#include "lockreq.h"
#include "revoke.h"

enum fault_kind { FAULT_ALLOC, FAULT_CALL, FAULT_REPLY };
static const char *const kind_names[] = { "allocation", "call", "reply" };

/* One request of a scenario and what its owner was told. */
struct slot {
	struct zkl_lockreq *lr;
	int told, err, released;
};

static struct zkl_session *s;
static struct slot slots[4];
/* The fault of the run, for a scenario's messages. */
static const char *run_kind;
static long run_n;

static void slot_done(struct zkl_lockreq *lr, int err, void *arg)
{
	struct slot *sl = arg;

	(void)lr;
	cr_assert_eq(sl->told, 0, "a request was told twice (%d, then %d)",
		     sl->err, err);
	sl->told = 1;
	sl->err = err;
}

/* Start request i; a failure to start is the owner's to release. */
static void start(int i, const char *dir, enum zkl_mode mode, unsigned flags)
{
	struct slot *sl = &slots[i];

	memset(sl, 0, sizeof(*sl));
	/* A mount's identity: a break marks its node (revoke.c). */
	if (lockreq_new(s, dir, mode, flags, "host h\npid 1\n", 14, slot_done,
			sl, &sl->lr) < 0) {
		sl->lr = NULL;
		return;
	}
	if (lockreq_start(sl->lr) < 0) {
		lockreq_release(sl->lr);
		sl->released = 1;
	}
}

/* Start request i as a multi-lock of dirs[0..n). */
static void start_multi(int i, const char *const *dirs, size_t n,
			enum zkl_mode mode, unsigned flags)
{
	struct slot *sl = &slots[i];

	memset(sl, 0, sizeof(*sl));
	if (lockreq_new_multi(s, dirs, n, mode, flags, "id", 2, slot_done, sl,
			      &sl->lr) < 0) {
		sl->lr = NULL;
		return;
	}
	if (lockreq_start(sl->lr) < 0) {
		lockreq_release(sl->lr);
		sl->released = 1;
	}
}

static void take_multi(int i, const char *const *dirs, size_t n,
		       enum zkl_mode mode, unsigned flags)
{
	start_multi(i, dirs, n, mode, flags);
	fake_tree_settle(s);
}

/* ... and answer what it asked, and what followed. */
static void take(int i, const char *dir, enum zkl_mode mode, unsigned flags)
{
	start(i, dir, mode, flags);
	fake_tree_settle(s);
}

static void let_go(int i)
{
	struct slot *sl = &slots[i];

	if (sl->lr && !sl->released) {
		lockreq_release(sl->lr);
		sl->released = 1;
	}
	fake_tree_settle(s);
}

/* Is request i held, as far as its owner was told? */
static int held(int i)
{
	return slots[i].lr && slots[i].told && slots[i].err == 0;
}

typedef void (*scenario_fn)(int clean);

static void arm(enum fault_kind kind, long n)
{
	if (kind == FAULT_ALLOC)
		fault_alloc_fail_at(n);
	else if (kind == FAULT_CALL)
		fake_fail_call_at(n);
	else
		fake_fail_reply_at(n);
}

/* Disarm; did the armed fault happen? */
static int disarm(enum fault_kind kind)
{
	int hit = kind == FAULT_ALLOC  ? fault_alloc_failed()
		  : kind == FAULT_CALL ? fake_call_failed()
				       : fake_reply_failed();

	fault_alloc_fail_at(0);
	fake_fail_call_at(0);
	fake_fail_reply_at(0);
	return hit;
}

/* Run the scenario once with fault n of kind; returns whether it hit. */
static int run_once(scenario_fn scenario, enum fault_kind kind, long n,
		    const char *limit, enum zkl_style dialect)
{
	long before = fault_alloc_live();
	int hit, refused;

	memset(slots, 0, sizeof(slots));
	run_kind = kind_names[kind];
	run_n = n;
	s = fake_session();
	s->dialect = dialect;
	fake_tree_reset();
	fake_tree_add("/b", NULL);
	fake_tree_add("/b/r", limit);
	arm(kind, n);
	scenario(n == 0);
	for (int i = 0; i < 4; i++)
		let_go(i);
	/* Whatever waits for a time (a refused delete's next try, a
	 * break's bound) comes now. */
	for (int i = 0; i < 100 && fake_run_due(s) > 0; i++)
		fake_tree_settle(s);
	refused = kind == FAULT_CALL && fake_call_failed();
	hit = disarm(kind);
	fake_tree_settle(s);
	cr_assert_eq(fake_pending(), 0);
	cr_assert(list_empty(&s->live),
		  "%s fault %ld: a request outlived its release",
		  kind_names[kind], n);
	cr_assert_eq(s->queues.nitems, 0,
		     "%s fault %ld: a queue outlived its requests",
		     kind_names[kind], n);
	if (!refused)
		cr_assert_eq(fake_tree_ephemerals(), 0,
			     "%s fault %ld: a node of ours was left behind",
			     kind_names[kind], n);
	fake_session_free(s);
	cr_assert_eq(fault_alloc_live(), before,
		     "%s fault %ld: %ld blocks leaked", kind_names[kind], n,
		     fault_alloc_live() - before);
	return hit;
}

static void run_all_faults(scenario_fn scenario, const char *limit,
			   enum zkl_style dialect)
{
	for (int k = FAULT_ALLOC; k <= FAULT_REPLY; k++) {
		long n = 1;
		while (run_once(scenario, (enum fault_kind)k, n, limit,
				dialect)) {
			cr_assert_lt(n, 5000, "%s faults never end",
				     kind_names[k]);
			n++;
		}
		cr_assert_gt(n, 1, "no %s fault was ever hit", kind_names[k]);
	}
	/* And once without: the scenario's own checks hold. */
	run_once(scenario, FAULT_ALLOC, 0, limit, dialect);
}

/* Two writers: the second waits for the first, then holds. */
static void two_writers(int clean)
{
	(void)clean;
	take(0, "/b/r", ZKL_MODE_WRITE, 0);
	take(1, "/b/r", ZKL_MODE_WRITE, 0);
	take(2, "/b/r", ZKL_MODE_WRITE, LOCKREQ_TRY);
	if (held(0))
		cr_assert(!held(1) && !held(2), "two writers hold at once");
	let_go(0);
}

Test(faults, two_writers_and_a_try)
{
	run_all_faults(two_writers, NULL, ZKL_STYLE_ZKLOCKFS);
}

/* Readers share, a writer waits for them. */
static void readers_and_a_writer(int clean)
{
	(void)clean;
	take(0, "/b/r", ZKL_MODE_READ, 0);
	take(1, "/b/r", ZKL_MODE_READ, 0);
	take(2, "/b/r", ZKL_MODE_WRITE, 0);
	if (held(0) || held(1))
		cr_assert(!held(2), "a writer holds beside a reader");
	let_go(1);
	let_go(0);
}

Test(faults, readers_and_a_writer)
{
	run_all_faults(readers_and_a_writer, NULL, ZKL_STYLE_ZKLOCKFS);
}

/* Leases, one of two: the third waits for a return; a new resource's
 * leases (no resource node yet) too. */
static void leases(int clean)
{
	(void)clean;
	take(0, "/b/r", ZKL_MODE_LEASE, 0);
	take(1, "/b/r", ZKL_MODE_LEASE, 0);
	take(2, "/b/r", ZKL_MODE_LEASE, 0);
	if (held(0) && held(1))
		cr_assert(!held(2), "three of two leases held");
	let_go(1);
	take(3, "/b/new", ZKL_MODE_LEASE, LOCKREQ_TRY);
}

Test(faults, leases)
{
	run_all_faults(leases, "2", ZKL_STYLE_ZKLOCKFS);
}

/* The limit changes while leases wait, one of them still creating its
 * node (in line for a listing already): they look again. */
static void limit_changes(int clean)
{
	take(0, "/b/r", ZKL_MODE_LEASE, 0);
	take(1, "/b/r", ZKL_MODE_LEASE, 0);
	start(2, "/b/r", ZKL_MODE_LEASE, 0);
	fake_tree_set("/b/r", "3");
	fake_tree_settle(s);
	if (clean)
		cr_assert(held(0) && held(1) && held(2),
			  "a raised limit let the waiters in");
	fake_tree_set("/b/r", "1");
	let_go(0);
}

Test(faults, limit_changes)
{
	run_all_faults(limit_changes, "1", ZKL_STYLE_ZKLOCKFS);
}

static void peer_leases(int clean)
{
	(void)clean;
	take(0, "/b/r", ZKL_MODE_LEASE, 0);
	take(1, "/b/r", ZKL_MODE_LEASE, 0);
	take(2, "/b/r", ZKL_MODE_LEASE, LOCKREQ_TRY);
	if (held(0))
		cr_assert(!held(1) && !held(2), "two of one lease held");
	let_go(0);
}

Test(faults, curator_leases)
{
	run_all_faults(peer_leases, "1", ZKL_STYLE_CURATOR);
}

Test(faults, kazoo_leases)
{
	run_all_faults(peer_leases, "1", ZKL_STYLE_KAZOO);
}

/* The session expires under a holder, a waiter and a lease: the waiters
 * queue again on the next session. */
static void expiry(int clean)
{
	take(0, "/b/r", ZKL_MODE_WRITE, 0);
	take(1, "/b/r", ZKL_MODE_WRITE, 0);
	take(2, "/b/r", ZKL_MODE_LEASE, 0);
	fake_tree_expire(s);
	fake_tree_settle(s);
	if (clean)
		cr_assert(held(1), "the waiter holds on the new session");
	let_go(1);
}

Test(faults, session_expiry)
{
	run_all_faults(expiry, "2", ZKL_STYLE_ZKLOCKFS);
}

Test(faults, curator_session_expiry)
{
	run_all_faults(expiry, "2", ZKL_STYLE_CURATOR);
}

/* Multi-locks of r and s (s made by the first create) in both orders,
 * a single lock of s and a try of both: never two holders of one, and
 * the waiters hold in their turn. */
static const char *const r_s[] = { "/b/r", "/b/s" }, *const s_r[] = { "/b/s",
								      "/b/r" };

static void multi_locks(int clean)
{
	take_multi(0, r_s, 2, ZKL_MODE_WRITE, 0);
	take(1, "/b/s", ZKL_MODE_WRITE, 0);
	take_multi(2, s_r, 2, ZKL_MODE_WRITE, 0);
	take_multi(3, r_s, 2, ZKL_MODE_WRITE, LOCKREQ_TRY);
	if (held(0))
		cr_assert(!held(1) && !held(2) && !held(3),
			  "two holders of one resource");
	let_go(0);
	if (clean)
		cr_assert(held(1) && !held(2), "the single lock's turn");
	let_go(1);
	if (clean)
		cr_assert(held(2), "the opposite order's turn");
}

Test(faults, multi_locks)
{
	run_all_faults(multi_locks, NULL, ZKL_STYLE_ZKLOCKFS);
}

/* A held and a waiting multi-lock when the session expires: the waiter
 * queues again with a new transaction and holds on the new session. */
static void multi_expiry(int clean)
{
	take_multi(0, r_s, 2, ZKL_MODE_WRITE, 0);
	take_multi(1, s_r, 2, ZKL_MODE_WRITE, 0);
	fake_tree_expire(s);
	fake_tree_settle(s);
	if (clean)
		cr_assert(held(1), "the waiter holds on the new session");
	let_go(1);
}

Test(faults, multi_lock_session_expiry)
{
	run_all_faults(multi_expiry, NULL, ZKL_STYLE_ZKLOCKFS);
}

/* A held writer downgrades with a writer waiting behind it: the writer
 * never holds beside the reader that took the place. */
static void downgrades(int clean)
{
	struct slot *sl = &slots[2];

	take(0, "/b/r", ZKL_MODE_WRITE, 0);
	take(1, "/b/r", ZKL_MODE_WRITE, 0);
	memset(sl, 0, sizeof(*sl));
	if (slots[0].lr && !slots[0].released &&
	    lockreq_new(s, "/b/r", ZKL_MODE_READ, 0, "rd", 2, slot_done, sl,
			&sl->lr) == 0) {
		slots[0].released = 1; /* its reference passes */
		if (lockreq_start_in_place(sl->lr, slots[0].lr) < 0) {
			lockreq_release(sl->lr);
			sl->released = 1;
		}
	}
	fake_tree_settle(s);
	if (held(2))
		cr_assert(!held(1), "a writer got in at the downgrade");
	if (clean)
		cr_assert(held(2) && !held(1),
			  "the reader in the writer's place");
	let_go(2);
	if (clean)
		cr_assert(held(1), "the writer's turn");
	let_go(1);
	let_go(0);
}

Test(faults, downgrades)
{
	run_all_faults(downgrades, NULL, ZKL_STYLE_ZKLOCKFS);
}

/* F_GETLK's question, asked while a lease is held. */
/* ---- nobody holds beside another ---------------------------------------- */

/* A holder and two waiters; another client deletes the first waiter's
 * node, then the holder lets go: the second holds, the first never. */
static void deleted_waiter(int clean)
{
	take(0, "/b/r", ZKL_MODE_WRITE, 0);
	take(1, "/b/r", ZKL_MODE_WRITE, 0);
	take(2, "/b/r", ZKL_MODE_WRITE, 0);
	if (fake_tree_delete_lock_node("/b/r", 1))
		fake_tree_settle(s);
	let_go(0);
	cr_assert(!(held(1) && held(2)), "%s fault %ld: two writers hold",
		  run_kind, run_n);
	if (clean)
		cr_assert(!held(1) && held(2), "the deleted waiter held");
}

Test(faults, a_deleted_waiter)
{
	run_all_faults(deleted_waiter, NULL, ZKL_STYLE_ZKLOCKFS);
}

static int breaks_answered;

static void broke(int err, const struct revoke_result *r, void *arg)
{
	(void)err;
	(void)r;
	(void)arg;
	breaks_answered++;
}

/* A break of a held lock with a waiter behind it: the holder is told
 * lost, the waiter holds; never both. */
static void a_break(int clean)
{
	take(0, "/b/r", ZKL_MODE_WRITE, 0);
	take(1, "/b/r", ZKL_MODE_WRITE, 0);
	/* The holder has held a while: its own node is watched (a moment
	 * after a grant that did not wait). */
	if (fake_run_due(s) > 0)
		fake_tree_settle(s);
	breaks_answered = 0;
	if (revoke_start(s, "/b/r", REVOKE_BREAK, broke, NULL) == 0)
		fake_tree_settle(s);
	cr_assert(!(held(1) && slots[0].lr && !slots[0].released &&
		    lockreq_holds(slots[0].lr) == 1),
		  "%s fault %ld: the next waiter holds beside the holder "
		  "(told %d err %d, told %d err %d)",
		  run_kind, run_n, slots[0].told, slots[0].err, slots[1].told,
		  slots[1].err);
	if (clean)
		cr_assert(held(1) && breaks_answered == 1,
			  "the break did not hand the lock on");
}

Test(faults, a_break)
{
	run_all_faults(a_break, NULL, ZKL_STYLE_ZKLOCKFS);
}

/* A release whose delete is refused a while: it lands afterwards. */
static void refused_release(int clean)
{
	(void)clean;
	take(0, "/b/r", ZKL_MODE_WRITE, 0);
	take(1, "/b/r", ZKL_MODE_WRITE, 0);
	fake_tree_refuse_deletes(1);
	let_go(0);
	fake_tree_refuse_deletes(0);
	for (int i = 0; i < 100 && fake_run_due(s) > 0; i++)
		fake_tree_settle(s);
	if (clean)
		cr_assert(held(1), "the refused release never landed");
}

Test(faults, a_refused_release)
{
	run_all_faults(refused_release, NULL, ZKL_STYLE_ZKLOCKFS);
}

static int answers;

static void answered(int err, const struct lockquery_answer *a, void *arg)
{
	(void)err;
	(void)a;
	(void)arg;
	answers++;
}

static void query(int clean)
{
	(void)clean;
	take(0, "/b/r", ZKL_MODE_LEASE, 0);
	answers = 0;
	if (lockquery_start(s, "/b/r", ZKL_MODE_LEASE, NULL, 0, answered,
			    NULL) == 0) {
		fake_tree_settle(s);
		cr_assert_eq(answers, 1, "a query answered %d times", answers);
	}
	take(1, "/b/r", ZKL_MODE_WRITE, 0);
	if (lockquery_start(s, "/b/r", ZKL_MODE_WRITE, NULL, 0, answered,
			    NULL) == 0)
		fake_tree_settle(s);
}

Test(faults, queries)
{
	run_all_faults(query, "1", ZKL_STYLE_ZKLOCKFS);
}

/* ---- the daemon's side (fs/): opens parked until granted ---------------- */

static uint64_t fs_dir_ino, fs_write_ino;

/* Open MOUNT/r/write for r, and let ZooKeeper answer what it sent. */
static void fs_open(struct fake_req *r)
{
	struct fuse_file_info fi = { .flags = O_WRONLY };

	lockfile_open((fuse_req_t)r, fs_write_ino, &fi, NULL);
	fake_tree_settle(fake_fs.session);
}

/* Close what r opened, if its open was answered with the file. */
static void fs_close(struct fake_req *r)
{
	struct fake_req release = { 0 };
	struct fuse_file_info fi = { .fh = r->fh };

	if (r->replies != 1 || r->err != 0 || !r->fh)
		return;
	lockfile_release((fuse_req_t)&release, fs_write_ino, &fi);
	r->fh = 0;
	fake_tree_settle(fake_fs.session);
	cr_assert_eq(release.replies, 1,
		     "%s fault %ld: a RELEASE answered %d "
		     "times",
		     run_kind, run_n, release.replies);
}

/* How many open files hold their lock now (a lock lost with its session
 * holds no more). */
static int fs_holders(void)
{
	int n = 0;

	pthread_mutex_lock(&fake_fs.lock);
	for (struct zkl_link *l = fake_fs.lockfiles.next;
	     l != &fake_fs.lockfiles; l = l->next) {
		struct lockfile *lf =
			ZKL_CONTAINER_OF(l, struct lockfile, link);
		n += lf->held && lockreq_holds(lf->held) == 1;
	}
	pthread_mutex_unlock(&fake_fs.lock);
	return n;
}

/* A refused call means a dead handle: its session ends, and the waits
 * queue again on the next (the fake refuses one call on a live one). */
static void fs_after_refusal(int *expired)
{
	if (*expired || !fake_call_failed())
		return;
	*expired = 1;
	fake_tree_expire(fake_fs.session);
	fake_tree_settle(fake_fs.session);
}

/* The start of a daemon-side run with fault n of kind: a tree with the
 * resource, the mount, the caller.  Returns the blocks live before the
 * mount, for fs_end_clean. */
static long fs_begin(enum fault_kind kind, long n)
{
	long before;

	run_kind = kind_names[kind];
	run_n = n;
	fake_tree_reset();
	fake_tree_add("/b", NULL);
	fake_tree_add("/b/r", NULL);
	before = fault_alloc_live();
	fake_mount(&fs_dir_ino, &fs_write_ino);
	fake_ctx.pid = gettid(); /* no signal pending: nothing cancels */
	return before;
}

/* The end of a daemon-side run: nothing parked, open, queued or left in
 * the tree (unless a call was refused), the mount gone, and every block
 * allocated since `before` freed. */
static void fs_end_clean(int refused, long before)
{
	cr_assert(list_empty(&fake_fs.waiters) && list_empty(&fake_fs.failing),
		  "%s fault %ld: a parked request was left", run_kind, run_n);
	cr_assert(list_empty(&fake_fs.posix_locks),
		  "%s fault %ld: an fcntl lock was left", run_kind, run_n);
	cr_assert(list_empty(&fake_fs.lockfiles),
		  "%s fault %ld: an open file was not freed", run_kind, run_n);
	cr_assert_eq(fake_pending(), 0);
	if (!refused)
		cr_assert_eq(fake_tree_ephemerals(), 0,
			     "%s fault %ld: a node of ours was left behind",
			     run_kind, run_n);
	fake_unmount();
	cr_assert_eq(fault_alloc_live(), before,
		     "%s fault %ld: %ld blocks leaked", run_kind, run_n,
		     fault_alloc_live() - before);
}

/* Two opens of write on one mount: the second waits for the first's
 * close, then holds.  Each open is answered once, never both granted at
 * once, and everything the daemon allocated is freed at unmount. */
static int fs_run_once(enum fault_kind kind, long n)
{
	struct fake_req a = { 0 }, b = { 0 };
	long before = fs_begin(kind, n);
	int hit, refused, expired = 0;

	arm(kind, n);
	fs_open(&a);
	fs_after_refusal(&expired);
	fs_open(&b);
	fs_after_refusal(&expired);
	cr_assert_leq(fs_holders(), 1, "%s fault %ld: two writers hold",
		      run_kind, run_n);
	fs_close(&a);
	fs_after_refusal(&expired);
	fs_close(&b);
	fs_after_refusal(&expired);
	/* Whatever waits for a time (a watch set again, a refused delete's
	 * next try) comes now. */
	for (int i = 0; i < 100 && fake_run_due(fake_fs.session) > 0; i++)
		fake_tree_settle(fake_fs.session);
	fs_close(&a); /* granted on the next session */
	fs_close(&b);
	refused = kind == FAULT_CALL && fake_call_failed();
	hit = disarm(kind);
	fake_tree_settle(fake_fs.session);
	cr_assert_eq(a.replies, 1,
		     "%s fault %ld: the first open answered %d "
		     "times",
		     run_kind, run_n, a.replies);
	cr_assert_eq(b.replies, 1,
		     "%s fault %ld: the second open answered "
		     "%d times",
		     run_kind, run_n, b.replies);
	if (n == 0)
		cr_assert(!a.err && !b.err, "a clean run failed an open");
	fs_end_clean(refused, before);
	return hit;
}

/* Run a daemon-side scenario with each fault of each kind in turn, then
 * once without. */
static void fs_run_all_faults(int (*fs_run)(enum fault_kind kind, long n))
{
	for (int k = FAULT_ALLOC; k <= FAULT_REPLY; k++) {
		long n = 1;
		while (fs_run((enum fault_kind)k, n)) {
			cr_assert_lt(n, 5000, "%s faults never end",
				     kind_names[k]);
			n++;
		}
		cr_assert_gt(n, 1, "no %s fault was ever hit", kind_names[k]);
	}
	fs_run(FAULT_ALLOC, 0);
}

Test(faults, parked_opens)
{
	fs_run_all_faults(fs_run_once);
}

/* ---- the daemon's side: fcntl byte ranges ------------------------------- */

static uint64_t fs_lock_ino;

/* An fcntl call of `owner` through the file r opened (if it was), of
 * type over start/len, blocking or not; ZooKeeper answers what it sent.
 * A call not made is marked answered. */
static void fs_setlk(struct fake_req *call, const struct fake_req *opened,
		     uint64_t owner, short type, off_t start, off_t len,
		     int sleep)
{
	struct fuse_file_info fi = { .fh = opened->fh, .lock_owner = owner };
	struct flock fl = { .l_type = type,
			    .l_whence = SEEK_SET,
			    .l_start = start,
			    .l_len = len };

	if (!opened->fh) {
		call->replies = 1;
		return;
	}
	lockfile_setlk((fuse_req_t)call, fs_lock_ino, &fi, &fl, sleep);
	fake_tree_settle(fake_fs.session);
}

/* The owner's close of the file it opened: FLUSH (its POSIX locks go),
 * then RELEASE. */
static void fs_close_owner(struct fake_req *opened, uint64_t owner)
{
	struct fake_req flush = { 0 }, release = { 0 };
	struct fuse_file_info fi = { .fh = opened->fh, .lock_owner = owner };

	if (!opened->fh)
		return;
	lockfile_flush((fuse_req_t)&flush, fs_lock_ino, &fi);
	fake_tree_settle(fake_fs.session);
	lockfile_release((fuse_req_t)&release, fs_lock_ino, &fi);
	opened->fh = 0;
	fake_tree_settle(fake_fs.session);
	cr_assert(flush.replies == 1 && release.replies == 1,
		  "%s fault %ld: a close answered %d and %d times", run_kind,
		  run_n, flush.replies, release.replies);
}

/* How many fcntl owners hold their lock now. */
static int fs_posix_holders(void)
{
	int n = 0;

	pthread_mutex_lock(&fake_fs.lock);
	for (struct zkl_link *l = fake_fs.posix_locks.next;
	     l != &fake_fs.posix_locks; l = l->next) {
		struct posixlock *p =
			ZKL_CONTAINER_OF(l, struct posixlock, link);
		n += lockreq_holds(p->lr) == 1;
	}
	pthread_mutex_unlock(&fake_fs.lock);
	return n;
}

/* Owner 1 locks bytes 0-9 to write and 100-109 to read; owner 2 waits
 * to write bytes 50-59; owner 1 lets go of its write range (nothing
 * changes in ZooKeeper: its write lock stays over the read range, and
 * owner 2 still waits), then of its read range (a release: owner 2
 * holds).  Every call is answered once, the two never hold at
 * once, and everything is freed at unmount. */
static int fs_ranges_run_once(enum fault_kind kind, long n)
{
	struct fake_req open1 = { 0 }, open2 = { 0 }, c[5] = { 0 };
	struct fuse_file_info fi = { .flags = O_RDWR };
	long before = fs_begin(kind, n);
	int hit, refused, expired = 0;

	cr_assert_eq(tree_lookup(&fake_fs.tree, fs_dir_ino, "lock",
				 &fs_lock_ino),
		     0);
	arm(kind, n);
	lockfile_open((fuse_req_t)&open1, fs_lock_ino, &fi, NULL);
	lockfile_open((fuse_req_t)&open2, fs_lock_ino, &fi, NULL);
	fs_setlk(&c[0], &open1, 1, F_WRLCK, 0, 10, 1);
	fs_after_refusal(&expired);
	fs_setlk(&c[1], &open1, 1, F_RDLCK, 100, 10, 0);
	fs_after_refusal(&expired);
	fs_setlk(&c[2], &open2, 2, F_WRLCK, 50, 10, 1);
	fs_after_refusal(&expired);
	cr_assert_leq(fs_posix_holders(), 1, "%s fault %ld: two owners hold",
		      run_kind, run_n);
	fs_setlk(&c[3], &open1, 1, F_UNLCK, 0, 10, 0);
	fs_after_refusal(&expired);
	cr_assert_leq(fs_posix_holders(), 1,
		      "%s fault %ld: a writer got in as a range went", run_kind,
		      run_n);
	if (n == 0)
		cr_assert_eq(c[2].replies, 0,
			     "the writer got in beside a "
			     "read range");
	fs_setlk(&c[4], &open1, 1, F_UNLCK, 100, 10, 0);
	fs_after_refusal(&expired);
	cr_assert_leq(fs_posix_holders(), 1, "%s fault %ld: two owners hold",
		      run_kind, run_n);
	if (n == 0)
		cr_assert(c[2].replies == 1 && c[2].err == 0,
			  "the writer did not get the released resource");
	fs_close_owner(&open1, 1);
	fs_after_refusal(&expired);
	fs_close_owner(&open2, 2);
	fs_after_refusal(&expired);
	/* Whatever waits for a time (a delete that could not be sent, a
	 * watch set again) comes now. */
	for (int i = 0; i < 100 && fake_run_due(fake_fs.session) > 0; i++)
		fake_tree_settle(fake_fs.session);
	refused = kind == FAULT_CALL && fake_call_failed();
	hit = disarm(kind);
	fake_tree_settle(fake_fs.session);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(c[i].replies, 1,
			     "%s fault %ld: call %d answered "
			     "%d times",
			     run_kind, run_n, i, c[i].replies);
	if (n == 0)
		for (int i = 0; i < 5; i++)
			cr_assert_eq(c[i].err, 0, "a clean run failed call %d",
				     i);
	fs_end_clean(refused, before);
	return hit;
}

/* Owner 1 holds bytes 0-9 to write; its F_UNLCK of the whole file (what
 * every program's unlock is) meets an allocation failure at its first
 * allocation: an unlock of every range held needs no memory, and lets the
 * lock go, as doc/locks.md says. */
Test(faults, a_whole_file_unlock_needs_no_memory)
{
	struct fake_req open1 = { 0 }, c[2] = { 0 };
	struct fuse_file_info fi = { .flags = O_RDWR };
	long before = fs_begin(FAULT_ALLOC, 1);

	cr_assert_eq(tree_lookup(&fake_fs.tree, fs_dir_ino, "lock",
				 &fs_lock_ino),
		     0);
	lockfile_open((fuse_req_t)&open1, fs_lock_ino, &fi, NULL);
	fs_setlk(&c[0], &open1, 1, F_WRLCK, 0, 10, 1);
	cr_assert(c[0].replies == 1 && c[0].err == 0, "not granted");
	cr_assert_eq(fs_posix_holders(), 1);
	arm(FAULT_ALLOC, 1);
	fs_setlk(&c[1], &open1, 1, F_UNLCK, 0, 0, 0);
	disarm(FAULT_ALLOC);
	cr_assert_eq(c[1].replies, 1);
	cr_assert_eq(c[1].err, 0, "F_UNLCK of the whole file failed: %s",
		     strerror(c[1].err));
	cr_assert_eq(fs_posix_holders(), 0,
		     "the lock is held after the whole-file unlock");
	fs_close_owner(&open1, 1);
	fake_tree_settle(fake_fs.session);
	fs_end_clean(0, before);
}

Test(faults, fcntl_ranges)
{
	fs_run_all_faults(fs_ranges_run_once);
}
