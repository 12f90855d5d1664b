/*
 * maxhold.h - how long a mount's holder may keep a resource's lock
 * (MOUNT/<resource>/maxhold), as ZooKeeper keeps it for every host: one
 * table for the whole base, the data of the znode <base>/.maxhold, one
 * line per resource with a limit: "<seconds> <resource>\n", the resource
 * named relative to the base ("db", "a/b"), lines sorted by resource.
 *
 * Why one znode beside the resources, not one in each: kazoo's Semaphore
 * counts every child of its resource as a lease, a Curator container
 * vanishes with its last child, and the resource's own data is kazoo's
 * limit.  A name that starts with '.' is no resource's.  Why one for all:
 * each session watches it once, and a grant costs no request to learn its
 * limit.  The znode goes when its last limit does.
 *
 * maxhold.c has the table's text (pure functions), reading and storing
 * it, and this session's copy of it; holdlimit.c, the request's side, the
 * sweep of holders past a limit.
 */
#ifndef ZKL_MAXHOLD_H
#define ZKL_MAXHOLD_H

#include <stddef.h>
#include <stdint.h>

#include "session.h"

/* The table's znode, under the base. */
#define MAXHOLD_NODE ".maxhold"

/* The largest limit accepted, in seconds: a year. */
#define MAXHOLD_MAX 31536000u

/* Room for the longest limit, a newline and a NUL. */
#define MAXHOLD_TEXT_MAX 10

struct maxhold_entry {
	char *res; /* relative to the base */
	unsigned secs;
};

/* A table as parsed: entries sorted by res, no two alike, none 0. */
struct maxhold_table {
	struct maxhold_entry *e;
	size_t n;
};

/* Parse what a user wrote to MOUNT/<res>/maxhold: 0 to MAXHOLD_MAX in
 * decimal, no sign, no leading zero (but "0"), no spaces, at most one
 * newline after it.  Returns 0 with *secs set, or -EINVAL. */
int maxhold_parse_value(const char *buf, size_t len, unsigned *secs);

/* Parse the table znode's data (len bytes; NULL or 0 for none) into t,
 * which this initialises.  Lines that are not "<secs> <res>" with a valid
 * limit above 0 are skipped (another client may have written anything
 * there); of two lines for one resource the later counts.  Returns how
 * many lines were skipped, or -ENOMEM (t then empty). */
int maxhold_table_parse(const char *data, size_t len, struct maxhold_table *t);

void maxhold_table_free(struct maxhold_table *t);

/* res's limit in seconds, 0 if none. */
unsigned maxhold_table_lookup(const struct maxhold_table *t, const char *res);

/* Set res's limit in t (0: remove it).  Returns 0 or -ENOMEM (t is then
 * unchanged). */
int maxhold_table_set(struct maxhold_table *t, const char *res, unsigned secs);

/* The length of t as the znode's data. */
size_t maxhold_table_text_len(const struct maxhold_table *t);

/* t as the znode's data, in *out (malloc'd; NULL with *len 0 for an empty
 * table).  Returns 0 or -ENOMEM. */
int maxhold_table_format(const struct maxhold_table *t, char **out,
			 size_t *len);

/* How long after the ask a hold past its limit of secs is broken: a tenth
 * of the limit, at least MAXHOLD_GRACE_MIN_MS, at most _MAX_MS. */
#define MAXHOLD_GRACE_MIN_MS 2000
#define MAXHOLD_GRACE_MAX_MS 60000
int64_t maxhold_grace_ms(unsigned secs);

/* ---- in ZooKeeper ---------------------------------------------------- */

/* err: 0 or -errno; secs: the limit (0: none) of the resource. */
typedef void (*maxhold_read_fn)(int err, unsigned secs, void *arg);
typedef void (*maxhold_stored_fn)(int err, void *arg);

/* Read the limit of resource znode dir fresh from ZooKeeper.  cb runs
 * once, on ZooKeeper's completion thread, unless this returns -errno. */
int maxhold_read(struct zkl_session *s, const char *dir, maxhold_read_fn cb,
		 void *arg);

/* Store secs (0: remove) as the limit of resource znode dir, for every
 * host: the table is read and written back on the version read, again
 * if another host wrote it meanwhile (maxhold.c).  cb runs once,
 * with no lock of ours held: once ZooKeeper applied it (0), or with
 * -errno: -ENOSPC when this limit would make the table outgrow
 * MAXHOLD_TABLE_MAX, -EBUSY when other hosts kept writing it first, or
 * the request's failure.  Usually on ZooKeeper's completion thread; on
 * the caller's, before this returns, when a request could not even be
 * sent (and then possibly for other callers' stores queued with it).
 * Returns 0, or -EINVAL (a resource name with a newline) or -ENOMEM, and
 * then cb never runs. */
int maxhold_store(struct zkl_session *s, const char *dir, unsigned secs,
		  maxhold_stored_fn cb, void *arg);

/* The table's largest size: well under ZooKeeper's 1 MiB for a znode. */
#define MAXHOLD_TABLE_MAX (512 * 1024)

/* This session's copy of the limit of resource znode dir (0: none), as
 * of the table's latest change it heard of.  Any thread. */
unsigned session_maxhold(struct zkl_session *s, const char *dir);

/* The server's clock now, CLOCK_REALTIME ms, as well as this host can tell:
 * ours corrected by what the server stamped on the latest node we created,
 * never ahead of the server's.  Any thread. */
int64_t session_server_now_ms(struct zkl_session *s);

#endif
