/*
 * lockquery.h - who stands in the way: the first lock node that a request
 * of a given mode, queued on a resource now, would wait for, and that
 * node's content (its holder's identity).  This is F_GETLK; the answer is
 * a snapshot, stale as soon as it is taken.
 */
#ifndef ZKL_LOCKQUERY_H
#define ZKL_LOCKQUERY_H

#include <stddef.h>

#include "names.h"
#include "session.h"

/* At most this many GUIDs (the asker's own nodes) are skipped. */
#define LOCKQUERY_MAX_SKIP 2

struct lockquery_answer {
	int blocked;        /* 0: a request of that mode would hold at once */
	enum zkl_mode mode; /* the blocking node's mode */
	const char *node;   /* its name */
	const char *data;   /* its content, or NULL if it kept vanishing */
	size_t datalen;
};

/* err: 0 and an answer, or -errno from zkerr_errno.  `a` and what it
 * points to are valid only during the call. */
typedef void (*lockquery_fn)(int err, const struct lockquery_answer *a,
			     void *arg);

/* Ask about a request of `mode` on the resource znode `dir` (for a lease,
 * under the resource's limit, read with the listing), ignoring the
 * nodes whose tag is in skip[0..nskip) (NUL-ended, NAMES_TAG_MAX at most).
 * cb runs once, on ZooKeeper's completion thread, unless this returns
 * -errno. */
int lockquery_start(struct zkl_session *s, const char *dir, enum zkl_mode mode,
		    const char *const *skip, size_t nskip, lockquery_fn cb,
		    void *arg);

#endif
