/*
 * holders.h - everyone queued on a resource, read fresh from ZooKeeper: each
 * lock node in queue order with its state (holding or waiting), fencing
 * token, creation time and content (its holder's identity and note),
 * whichever tool made it.  A snapshot, stale as soon as it
 * is taken; it takes no lock and changes nothing.
 */
#ifndef ZKL_HOLDERS_H
#define ZKL_HOLDERS_H

#include <stddef.h>
#include <stdint.h>

#include "names.h"
#include "session.h"

enum holders_state {
	HOLDERS_HELD, /* nothing it must wait for is ahead of it (a lease:
		       * fewer leases than the limit) */
	HOLDERS_WAITING,
};

struct holders_node {
	const char *name; /* the node's name in the resource */
	enum holders_state state;
	enum zkl_mode mode;
	enum zkl_style style; /* which tool made it */
	int64_t token;        /* czxid: the holder's fencing token */
	int64_t ctime_ms;     /* when it was created, by the server's clock */
	const char *data;     /* its content (len bytes, not NUL-ended) */
	size_t len;
};

/* err: 0, or -errno from zkerr_errno (a missing resource is 0 and no
 * node).  nodes[0..n) and what they point to are valid only during the
 * call: every tool's lock nodes in queue order (holders before waiters).
 * limit: if leases are queued, the resource's limit, read with them (0
 * if its data is not a limit: no lease holds then); else 0. */
typedef void (*holders_fn)(int err, const struct holders_node *nodes, size_t n,
			   unsigned limit, void *arg);

/* List the resource znode `dir` and read every lock node in it.  cb runs
 * once, on ZooKeeper's completion thread, unless this returns -errno. */
int holders_start(struct zkl_session *s, const char *dir, holders_fn cb,
		  void *arg);

#endif
