/*
 * session_path.c - creating the persistent znodes above lock nodes: the
 * base path at start, and a resource's missing parents before its first
 * lock node.  One walk over the path serves both.
 */
#include "internal.h"
#include "names.h"
#include "zkerr.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static void session_ignore_create(int rc, const char *name, const void *data)
{
	(void)rc;
	(void)name;
	(void)data;
}

/* Call create(s, prefix, err, errlen) for each prefix of `path` ending at
 * a '/' or at its end, from the first one longer than `skip` bytes down
 * to path itself ("/a", "/a/b", ...): parents before children.  Stops at
 * the first that fails and returns its -errno. */
static int
session_each_prefix(struct zkl_session *s, const char *path, size_t skip,
		    int (*create)(struct zkl_session *s, const char *prefix,
				  char *err, size_t errlen),
		    char *err, size_t errlen)
{
	char prefix[NAMES_MAX_NODE_PATH + 1];
	size_t len = strlen(path);

	if (len >= sizeof(prefix)) {
		snprintf(err, errlen, "path too long: %s", path);
		return -ENAMETOOLONG;
	}
	memcpy(prefix, path, len + 1);
	for (size_t i = skip + 1; i <= len; i++) {
		int rc;
		if (path[i] != '/' && path[i] != '\0')
			continue;
		prefix[i] = '\0';
		rc = create(s, prefix, err, errlen);
		if (rc < 0)
			return rc;
		prefix[i] = path[i];
	}
	return 0;
}

/* Queue the create of one parent; its outcome does not matter.  Every
 * znode the mount makes has empty data rather than none, as kazoo and
 * Curator make theirs: kazoo's Semaphore decodes its path's data and
 * fails on none. */
static int session_create_async(struct zkl_session *s, const char *prefix,
				char *err, size_t errlen)
{
	int rc = zoo_acreate(s->zh, prefix, "", 0, s->acl, ZOO_PERSISTENT,
			     session_ignore_create, NULL);

	(void)err;
	(void)errlen;
	return zkerr_errno(rc);
}

int session_create_parents_locked(struct zkl_session *s, const char *dir)
{
	char unused[1];

	ZKL_ASSERT_HELD(&s->lock);
	return session_each_prefix(s, dir, strlen(s->base),
				   session_create_async, unused,
				   sizeof(unused));
}

/* Create one level of the base path and wait for the answer. */
static int session_create_sync(struct zkl_session *s, const char *prefix,
			       char *err, size_t errlen)
{
	int rc = zoo_create(s->zh, prefix, "", 0, s->acl, ZOO_PERSISTENT, NULL,
			    0);

	if (rc == ZOK || rc == ZNODEEXISTS)
		return 0;
	snprintf(err, errlen, "cannot create %s: %s", prefix, zerror(rc));
	return zkerr_errno(rc);
}

/* Create the base path and its parents, synchronously (startup only). */
int session_create_base(struct zkl_session *s, char *err, size_t errlen)
{
	return session_each_prefix(s, s->base, 0, session_create_sync, err,
				   errlen);
}
