/*
 * trace.h - a lock request's timeline, for the benchmarks' breakdown of
 * where the time of a lock goes (bench/run --only breakdown, HACKING.md).
 *
 * With ZKLOCKFS_TRACE naming a file when the daemon starts, each lock
 * request an owner asked for appends one line to it when it is freed:
 * its mode and kind, the owner's ask (t0, CLOCK_MONOTONIC microseconds),
 * then each moment it reached, in microseconds from t0, "-" for one it
 * never reached:
 *
 *   write open t0=81722011093 asked=0 create_sent=9 created=402 listed=405
 *   granted=406 answered=431 own_watched=690 released=811 delete_sent=822
 *   deleted=1093
 *
 * Off (the default), a moment is one test of a flag: no clock is read.
 */
#ifndef ZKL_TRACE_H
#define ZKL_TRACE_H

#include <stdint.h>

enum zkl_trace_point {
	TRACE_ASKED,       /* the owner's call came (a FUSE request) */
	TRACE_CREATE_SENT, /* the lock node's create went to ZooKeeper */
	TRACE_CREATED,     /* ... and its reply came */
	TRACE_LISTED,      /* the first listing of the queue came back */
	TRACE_GRANTED,     /* the request decided it holds */
	TRACE_ANSWERED,    /* the owner answers its caller (just before) */
	TRACE_OWN_WATCHED, /* the held node's watch was set (its reply) */
	TRACE_RELEASED,    /* the owner let go (a FUSE release or unlock) */
	TRACE_DELETE_SENT, /* the node's delete went to ZooKeeper */
	TRACE_DELETED,     /* ... and its reply came */
	TRACE_POINTS
};

/* Start tracing into `path` (appended to, made 0600 if new), unless it is
 * NULL or empty.  Once, before any request.  Returns 0 or -errno. */
int trace_start(const char *path);

/* Is tracing on? */
int trace_on(void);

/* Now, in CLOCK_MONOTONIC microseconds, if tracing is on; else 0. */
int64_t trace_now(void);

/* One line for a request's moments (at[p] 0: never reached); written
 * whole, with one write(2) to a file opened O_APPEND. */
void trace_write(const char *mode, const char *kind,
		 const int64_t at[TRACE_POINTS]);

#endif
