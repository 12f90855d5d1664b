/*
 * zkconn.c - see zkconn.h.
 */
#include "zkconn.h"
#include "stats.h"

#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t conn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t conn_changed = PTHREAD_COND_INITIALIZER;

static void conn_watcher(zhandle_t *zh, int type, int state, const char *path,
			 void *ctx)
{
	(void)zh;
	(void)path;
	(void)ctx;
	if (type != ZOO_SESSION_EVENT)
		return;
	pthread_mutex_lock(&conn_lock);
	pthread_cond_broadcast(&conn_changed);
	pthread_mutex_unlock(&conn_lock);
	(void)state;
}

zhandle_t *zkconn_open(const char *hosts)
{
	struct timespec deadline;
	zhandle_t *zh;

	zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
	zh = zookeeper_init(hosts, conn_watcher, 10000, NULL, NULL, 0);
	if (!zh)
		die("cannot use ZooKeeper at %s", hosts);
	zoo_set_servers_resolution_delay(zh, -1);
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 15;
	pthread_mutex_lock(&conn_lock);
	while (zoo_state(zh) != ZOO_CONNECTED_STATE)
		if (pthread_cond_timedwait(&conn_changed, &conn_lock,
					   &deadline) != 0)
			die("no ZooKeeper server answered at %s in 15 s",
			    hosts);
	pthread_mutex_unlock(&conn_lock);
	return zh;
}

void zkconn_ensure_path(zhandle_t *zh, const char *dir)
{
	char path[1024];
	size_t len = strlen(dir);

	if (len >= sizeof(path))
		die("path too long: %s", dir);
	memcpy(path, dir, len + 1);
	for (size_t i = 1; i <= len; i++) {
		if (path[i] != '/' && path[i] != '\0')
			continue;
		path[i] = '\0';
		int rc = zoo_create(zh, path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
				    ZOO_PERSISTENT, NULL, 0);
		if (rc != ZOK && rc != ZNODEEXISTS)
			die("cannot create %s: %s", path, zerror(rc));
		path[i] = dir[i];
	}
}

int zkconn_queue_len(zhandle_t *zh, const char *dir)
{
	struct String_vector v;
	int rc = zoo_get_children(zh, dir, 0, &v), n = 0;

	if (rc == ZNONODE)
		return 0;
	if (rc != ZOK)
		die("cannot list %s: %s", dir, zerror(rc));
	/* Lock nodes only: not a limit's pin (.zklockfs-limit). */
	for (int i = 0; i < v.count; i++)
		n += v.data[i][0] != '.';
	deallocate_String_vector(&v);
	return n;
}

void zkconn_wait_queue_len(zhandle_t *zh, const char *dir, int n,
			   double timeout_s)
{
	double deadline = now_us() + timeout_s * 1e6;

	while (zkconn_queue_len(zh, dir) != n) {
		if (now_us() > deadline)
			die("timed out after %.0f s waiting for %d nodes in %s "
			    "(have %d)",
			    timeout_s, n, dir, zkconn_queue_len(zh, dir));
		usleep(200);
	}
}
