/*
 * resource.h - asynchronous operations on resource znodes (the directories
 * of the mount): list, create with parents, remove, and the semaphore
 * limit kept in their data (limit.h).  Each calls cb exactly
 * once, on ZooKeeper's completion thread, unless it returns an error.
 */
#ifndef ZKL_RESOURCE_H
#define ZKL_RESOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "session.h"

/* names[0..n) are valid only during the callback.  err: 0, -ENOENT (no
 * such znode), or -errno from zkerr_errno.  cversion: the znode's child
 * version with the listing, the anchor of the lock order (lockrule.h). */
typedef void (*resource_list_fn)(int err, char *const *names, size_t n,
				 int32_t cversion, void *arg);
typedef void (*resource_done_fn)(int err, void *arg);
typedef void (*resource_limit_fn)(int err, unsigned limit, void *arg);

/* Children of the znode `path`.  Returns 0 or -errno (no callback). */
int resource_list(struct zkl_session *s, const char *path, resource_list_fn cb,
		  void *arg);

/* Create `path` and any missing parent between the base and it.
 * err: 0, -EEXIST if path existed already. */
int resource_create(struct zkl_session *s, const char *path,
		    resource_done_fn cb, void *arg);

/* Delete `path` if it has no children.  err: 0 (also if it did not exist),
 * -ENOTEMPTY. */
int resource_remove(struct zkl_session *s, const char *path,
		    resource_done_fn cb, void *arg);

/* The limit stored in `path` (1 if none was).  err: 0, -ENOENT, -EBADMSG
 * (its data is not a limit). */
int resource_get_limit(struct zkl_session *s, const char *path,
		       resource_limit_fn cb, void *arg);

/* What the reply (rc, value, len) to a get of a resource znode says of its
 * limit: 0 with *n set; -ENOENT, no such resource (*n = 1: a resource
 * created without a limit has that one); -EBADMSG, its data is not a
 * limit; or another -errno from zkerr_errno. */
int resource_limit_of_reply(int rc, const char *value, int len, unsigned *n);

/* Store n (1 to LIMIT_MAX) as the limit of `path`, creating it (persistent)
 * if it does not exist.  err: 0, -ENOENT, or -EOPNOTSUPP for a znode that
 * is not persistent (a container: the limit would go with it; logged). */
int resource_set_limit(struct zkl_session *s, const char *path, unsigned n,
		       resource_done_fn cb, void *arg);

#endif
