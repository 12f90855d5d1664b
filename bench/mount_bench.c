/*
 * mount_bench.c - the same measurements through a zklockfs mount.
 *
 *   zkbench-mount cycle   FILE N                   open(FILE, O_WRONLY) and
 *                                                  close, N times
 *   zkbench-mount names   MOUNT N                  the same on N new names:
 *                                                  MOUNT/new-<pid>-<i>/write
 *                                                  (each the first lock of
 *                                                  its resource)
 *   zkbench-mount handoff FILE1 FILE2 HOSTS DIR N [BUSY]
 *                                                  two threads, one per
 *                                                  mount (two sessions),
 *                                                  take turns: time from the
 *                                                  holder's close to the
 *                                                  waiter's open returning.
 *                                                  A FILE may be F+G: open
 *                                                  F, then G; close both.
 *                                                  BUSY: the children of
 *                                                  DIR once the waiter is
 *                                                  queued (2: the holder's
 *                                                  and its; more beside
 *                                                  other holders, 1 for the
 *                                                  lock of a peer's
 *                                                  semaphore)
 *   zkbench-mount visible HOW FILE1 FILE2 N        how long after a release
 *                                                  returns on one mount a
 *                                                  try-lock on another
 *                                                  succeeds.  HOW: close
 *                                                  (FILEs: .../write),
 *                                                  unlock (flock LOCK_UN;
 *                                                  FILEs: .../lock), or
 *                                                  none (the bare try on
 *                                                  FILE2, nothing held)
 *   zkbench-mount scale   HOSTS DIR N FILE...      hold the first FILE,
 *                                                  queue N blocked openers
 *                                                  (the i-th on FILE i mod
 *                                                  count), print "queued
 *                                                  SECONDS", wait for a line
 *                                                  on stdin, let go and
 *                                                  print "granted SECONDS
 *                                                  in_order=0|1"
 *
 *   zkbench-mount convert HOW FILE N               the cost of a shared
 *                                                  lock on FILE (a lock
 *                                                  file), N times, let go
 *                                                  after each.  HOW:
 *                                                  downgrade (flock
 *                                                  LOCK_SH over a held
 *                                                  LOCK_EX), unlock
 *                                                  (LOCK_UN, then LOCK_SH:
 *                                                  the conversion of old),
 *                                                  or acquire (LOCK_SH,
 *                                                  nothing held)
 *
 * HOSTS and DIR (the resource's znode) are only used to see how many nodes
 * are queued before a measurement starts.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "stats.h"
#include "zkconn.h"

static int open_lock(const char *file)
{
	int fd = open(file, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		die("open %s: %m", file);
	return fd;
}

static void cycle(const char *file, long n)
{
	struct samples s;

	samples_init(&s, (size_t)n);
	for (long i = 0; i < n; i++) {
		double t0 = now_us();
		close(open_lock(file));
		samples_add(&s, now_us() - t0);
	}
	samples_report(&s, (size_t)n / 10);
	samples_free(&s);
}

static void names(const char *mount, long n)
{
	char file[4096];
	struct samples s;

	samples_init(&s, (size_t)n);
	for (long i = 0; i < n; i++) {
		double t0;

		snprintf(file, sizeof(file), "%s/new-%d-%ld/write", mount,
			 (int)getpid(), i);
		t0 = now_us();
		close(open_lock(file));
		samples_add(&s, now_us() - t0);
	}
	samples_report(&s, (size_t)n / 10);
	samples_free(&s);
}

/* ---- handoff ------------------------------------------------------------ */

/* Locks taken one after the other, as a script that needs two opens
 * them: "F+G". */
#define OPENER_MAX_FILES 2

struct opener {
	const char *file;
	pthread_t thread;
	int fd[OPENER_MAX_FILES];
	int nfd;
	double opened_at;
};

static void opener_open(struct opener *o)
{
	char files[4096], *save = NULL;

	snprintf(files, sizeof(files), "%s", o->file);
	o->nfd = 0;
	for (char *f = strtok_r(files, "+", &save); f;
	     f = strtok_r(NULL, "+", &save)) {
		if (o->nfd == OPENER_MAX_FILES)
			die("at most %d files in %s", OPENER_MAX_FILES,
			    o->file);
		o->fd[o->nfd++] = open_lock(f);
	}
}

static void opener_close(struct opener *o)
{
	for (int i = 0; i < o->nfd; i++)
		close(o->fd[i]);
	o->nfd = 0;
}

static void *opener_run(void *arg)
{
	struct opener *o = arg;

	opener_open(o);
	o->opened_at = now_us();
	return NULL;
}

static void opener_start(struct opener *o)
{
	if (pthread_create(&o->thread, NULL, opener_run, o) != 0)
		die("cannot start a thread");
}

static void handoff(const char *file1, const char *file2, const char *hosts,
		    const char *dir, long n, int busy)
{
	struct opener o[2] = { { .file = file1 }, { .file = file2 } };
	zhandle_t *zh = zkconn_open(hosts);
	struct samples s;
	int holder = 0;

	opener_open(&o[0]);
	samples_init(&s, (size_t)n);
	for (long i = 0; i < n; i++) {
		struct opener *h = &o[holder], *w = &o[1 - holder];
		double t0;

		opener_start(w);
		zkconn_wait_queue_len(zh, dir, busy, 10);
		t0 = now_us();
		opener_close(h);
		pthread_join(w->thread, NULL);
		samples_add(&s, w->opened_at - t0);
		/* The next waiter must not find the old node still there. */
		zkconn_wait_queue_len(zh, dir, busy - 1, 10);
		holder = 1 - holder;
	}
	opener_close(&o[holder]);
	samples_report(&s, (size_t)n / 10);
	samples_free(&s);
	zookeeper_close(zh);
}

/* ---- visible ------------------------------------------------------------ */

/* Retries of a try-lock are bounded: a release that never shows is a bug
 * to report, not a benchmark to hang. */
#define VISIBLE_MAX_TRIES 100000

enum release_how { HOW_CLOSE, HOW_UNLOCK, HOW_NONE };

/* One try-lock on FILE2 (the other mount); 1 if it got the lock, which it
 * then lets go of the same way.  fd2: the open lock file for flock. */
static int try_other(enum release_how how, const char *file2, int fd2)
{
	if (how == HOW_UNLOCK) {
		if (flock(fd2, LOCK_EX | LOCK_NB) < 0) {
			if (errno != EWOULDBLOCK)
				die("flock %s: %m", file2);
			return 0;
		}
		flock(fd2, LOCK_UN);
		return 1;
	}
	fd2 = open(file2, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd2 < 0) {
		if (errno != EAGAIN)
			die("open %s: %m", file2);
		return 0;
	}
	close(fd2);
	return 1;
}

static void visible(enum release_how how, const char *file1, const char *file2,
		    long n)
{
	int fd1 = -1, fd2 = -1;
	long late = 0;
	struct samples s;

	if (how == HOW_UNLOCK) {
		fd1 = open(file1, O_RDWR | O_CLOEXEC);
		fd2 = open(file2, O_RDWR | O_CLOEXEC);
		if (fd1 < 0 || fd2 < 0)
			die("open %s or %s: %m", file1, file2);
	}
	samples_init(&s, (size_t)n);
	for (long i = 0; i < n; i++) {
		double t0;
		long tries = 1;

		if (how == HOW_CLOSE) {
			close(open_lock(file1));
		} else if (how == HOW_UNLOCK) {
			if (flock(fd1, LOCK_EX) < 0 || flock(fd1, LOCK_UN) < 0)
				die("flock %s: %m", file1);
		}
		t0 = now_us();
		while (!try_other(how, file2, fd2)) {
			if (++tries > VISIBLE_MAX_TRIES)
				die("%s: still locked after %d tries", file2,
				    VISIBLE_MAX_TRIES);
		}
		samples_add(&s, now_us() - t0);
		if (tries > 1)
			late++;
	}
	samples_report(&s, (size_t)n / 10);
	printf("late=%ld of %ld\n", late, n);
	samples_free(&s);
	if (fd1 >= 0)
		close(fd1);
	if (fd2 >= 0)
		close(fd2);
}

static enum release_how parse_how(const char *text)
{
	if (strcmp(text, "close") == 0)
		return HOW_CLOSE;
	if (strcmp(text, "unlock") == 0)
		return HOW_UNLOCK;
	if (strcmp(text, "none") == 0)
		return HOW_NONE;
	die("HOW must be close, unlock or none, not '%s'", text);
}

/* ---- scale -------------------------------------------------------------- */

struct scale_waiter {
	pthread_t thread;
	const char *file;
	long grant_rank; /* order in which the grants came */
	long long token; /* the fencing token: the node's creation order */
};

static atomic_long grants;

static void *scale_wait(void *arg)
{
	struct scale_waiter *w = arg;
	char buf[64] = "";
	int fd = open(w->file, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		die("open %s: %m", w->file);
	/* Exclusive: nobody else runs this between open and close. */
	w->grant_rank = atomic_fetch_add(&grants, 1);
	if (read(fd, buf, sizeof(buf) - 1) <= 0)
		die("cannot read the fencing token");
	w->token = atoll(buf);
	close(fd);
	return NULL;
}

static int by_rank(const void *a, const void *b)
{
	const struct scale_waiter *x = a, *y = b;

	return (x->grant_rank > y->grant_rank) -
	       (x->grant_rank < y->grant_rank);
}

static void scale(const char *hosts, const char *dir, long n, char **files,
		  int nfiles)
{
	struct scale_waiter *w = calloc((size_t)n, sizeof(*w));
	zhandle_t *zh = zkconn_open(hosts);
	pthread_attr_t attr;
	int holder, in_order = 1;
	char line[16];
	double t0;

	if (!w)
		die("out of memory");
	holder = open_lock(files[0]);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	t0 = now_us();
	for (long i = 0; i < n; i++) {
		w[i].file = files[i % nfiles];
		if (pthread_create(&w[i].thread, &attr, scale_wait, &w[i]) != 0)
			die("cannot start waiter thread %ld", i);
	}
	zkconn_wait_queue_len(zh, dir, (int)n + 1, 600);
	printf("queued %.3f\n", (now_us() - t0) / 1e6);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		die("stdin closed before the go");
	t0 = now_us();
	close(holder);
	for (long i = 0; i < n; i++)
		pthread_join(w[i].thread, NULL);
	printf("granted %.3f", (now_us() - t0) / 1e6);
	qsort(w, (size_t)n, sizeof(*w), by_rank);
	for (long i = 1; i < n; i++)
		if (w[i].token <= w[i - 1].token)
			in_order = 0;
	printf(" in_order=%d\n", in_order);
	free(w);
	zookeeper_close(zh);
}

/* ---- convert ------------------------------------------------------------ */

enum convert_how { CONVERT_DOWNGRADE, CONVERT_UNLOCK, CONVERT_ACQUIRE };

static void flock_or_die(int fd, int op, const char *file)
{
	if (flock(fd, op) < 0)
		die("flock %s: %m", file);
}

static void convert(const char *how_word, const char *file, long n)
{
	enum convert_how how =
		strcmp(how_word, "downgrade") == 0 ? CONVERT_DOWNGRADE
		: strcmp(how_word, "unlock") == 0  ? CONVERT_UNLOCK
		: strcmp(how_word, "acquire") == 0 ? CONVERT_ACQUIRE
						   : -1;
	int fd = open(file, O_RDWR | O_CLOEXEC);
	struct samples s;

	if ((int)how < 0)
		die("convert: downgrade, unlock or acquire, not %s", how_word);
	if (fd < 0)
		die("open %s: %m", file);
	samples_init(&s, (size_t)n);
	for (long i = 0; i < n; i++) {
		double t0;

		if (how != CONVERT_ACQUIRE)
			flock_or_die(fd, LOCK_EX, file);
		t0 = now_us();
		if (how == CONVERT_UNLOCK)
			flock_or_die(fd, LOCK_UN, file);
		flock_or_die(fd, LOCK_SH, file);
		samples_add(&s, now_us() - t0);
		flock_or_die(fd, LOCK_UN, file);
	}
	samples_report(&s, (size_t)n / 10);
	samples_free(&s);
	close(fd);
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "cycle") == 0)
		cycle(argv[2], parse_count(argv[3], "N"));
	else if (argc == 4 && strcmp(argv[1], "names") == 0)
		names(argv[2], parse_count(argv[3], "N"));
	else if ((argc == 7 || argc == 8) && strcmp(argv[1], "handoff") == 0)
		handoff(argv[2], argv[3], argv[4], argv[5],
			parse_count(argv[6], "N"),
			argc == 8 ? (int)parse_count(argv[7], "BUSY") : 2);
	else if (argc == 6 && strcmp(argv[1], "visible") == 0)
		visible(parse_how(argv[2]), argv[3], argv[4],
			parse_count(argv[5], "N"));
	else if (argc == 5 && strcmp(argv[1], "convert") == 0)
		convert(argv[2], argv[3], parse_count(argv[4], "N"));
	else if (argc >= 6 && strcmp(argv[1], "scale") == 0)
		scale(argv[2], argv[3], parse_count(argv[4], "N"), argv + 5,
		      argc - 5);
	else {
		fprintf(stderr,
			"usage: %s cycle FILE N\n"
			"       %s names MOUNT N\n"
			"       %s handoff FILE1 FILE2 HOSTS DIR N [BUSY]\n"
			"       %s visible close|unlock|none FILE1 FILE2 N\n"
			"       %s scale HOSTS DIR N FILE...\n"
			"       %s convert downgrade|unlock|acquire FILE N\n",
			argv[0], argv[0], argv[0], argv[0], argv[0], argv[0]);
		return 2;
	}
	return 0;
}
