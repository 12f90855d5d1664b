/*
 * zkconn.h - a connected ZooKeeper handle for the benchmarks, and a look at
 * a lock queue's length.
 */
#ifndef ZKB_ZKCONN_H
#define ZKB_ZKCONN_H

#include <zookeeper/zookeeper.h>

/* Connect to hosts and wait (at most 15 s) until the session is up, with
 * the same client settings as zklockfs.  Dies on failure. */
zhandle_t *zkconn_open(const char *hosts);

/* Create the persistent znode dir (and its parents) if missing. */
void zkconn_ensure_path(zhandle_t *zh, const char *dir);

/* Number of lock nodes in dir now (children but a limit's pin). */
int zkconn_queue_len(zhandle_t *zh, const char *dir);

/* Wait until dir has exactly n lock nodes; dies after timeout_s seconds
 * naming what it waited for. */
void zkconn_wait_queue_len(zhandle_t *zh, const char *dir, int n,
			   double timeout_s);

#endif
