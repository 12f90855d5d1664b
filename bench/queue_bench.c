/*
 * queue_bench.c - the cost of one open as the queue grows (issue 27, row
 * 13): N read locks taken one after the other and all kept, the mean time
 * of an open printed every STEP opens.
 *
 *   zkbench-queue mount  FILE N STEP        open(FILE, O_RDONLY) of a
 *                                           mount's read file, kept
 *   zkbench-queue client HOSTS DIR N STEP   the ZooKeeper work of one such
 *                                           open on the C client, awaited:
 *                                           create an ephemeral sequential
 *                                           node, list the directory with
 *                                           its stat (the baseline: what
 *                                           ZooKeeper itself costs)
 *
 * Each prints "n=K us=MEAN" lines: K locks held, MEAN microseconds per
 * open over the last STEP.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "stats.h"
#include "zkconn.h"

/* Room for n kept descriptors. */
static void allow_fds(long n)
{
	struct rlimit r = { .rlim_cur = (rlim_t)n + 64,
			    .rlim_max = (rlim_t)n + 64 };

	if (setrlimit(RLIMIT_NOFILE, &r) < 0)
		die("setrlimit(RLIMIT_NOFILE, %ld): %m", n + 64);
}

static int mount_open(void *arg)
{
	return open((const char *)arg, O_RDONLY | O_CLOEXEC);
}

struct client {
	zhandle_t *zh;
	char prefix[1024];
	const char *dir;
};

static int client_open(void *arg)
{
	struct client *c = arg;
	struct String_vector v;
	struct Stat st;
	char node[1024];
	int rc = zoo_create(c->zh, c->prefix, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
			    ZOO_EPHEMERAL_SEQUENTIAL, node, sizeof(node));

	if (rc != ZOK)
		die("create: %s", zerror(rc));
	if ((rc = zoo_get_children2(c->zh, c->dir, 0, &v, &st)) != ZOK)
		die("getChildren2: %s", zerror(rc));
	deallocate_String_vector(&v);
	return 0;
}

/* n opens by `open_one`, a line every step. */
static void grow(int (*open_one)(void *), void *arg, long n, long step)
{
	double t0 = now_us();

	for (long i = 1; i <= n; i++) {
		if (open_one(arg) < 0)
			die("open %ld: %m", i);
		if (i % step == 0) {
			double t = now_us();
			printf("n=%ld us=%.1f\n", i, (t - t0) / (double)step);
			fflush(stdout);
			t0 = t;
		}
	}
}

int main(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[1], "mount") == 0) {
		long n = parse_count(argv[3], "N");
		allow_fds(n);
		grow(mount_open, argv[2], n, parse_count(argv[4], "STEP"));
	} else if (argc == 6 && strcmp(argv[1], "client") == 0) {
		struct client c = { .dir = argv[3] };
		c.zh = zkconn_open(argv[2]);
		zkconn_ensure_path(c.zh, c.dir);
		snprintf(c.prefix, sizeof(c.prefix), "%s/read-", c.dir);
		grow(client_open, &c, parse_count(argv[4], "N"),
		     parse_count(argv[5], "STEP"));
		zookeeper_close(c.zh);
	} else {
		fprintf(stderr,
			"usage: %s mount FILE N STEP\n"
			"       %s client HOSTS DIR N STEP\n",
			argv[0], argv[0]);
		return 2;
	}
	return 0;
}
