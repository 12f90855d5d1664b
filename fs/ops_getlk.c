/*
 * ops_getlk.c - fcntl(2)'s F_GETLK on the lock files: who would block a
 * lock of this mode, asked of ZooKeeper (lockquery.h), our own locks
 * left out (see lockfile.h for who owns what).
 */
#include "lockfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "lockquery.h"
#include "reentrant.h"

/* An F_GETLK in flight: the resources to ask about, one after the other
 * (several for a list directory's lock file, where the first resource
 * that blocks answers), and the tags to skip. */
struct getlk_query {
	fuse_req_t req;
	struct zkl_fs *fs;
	struct flock lock;
	enum zkl_mode mode;
	const char *skip[LOCKQUERY_MAX_SKIP];
	size_t nskip;
	char guids[LOCKQUERY_MAX_SKIP][NAMES_GUID_LEN + 1];
	const char *paths[MULTINAME_MAX_ITEMS];
	int n, next;
	char buf[]; /* the paths */
};

static void getlk_answered(int err, const struct lockquery_answer *a,
			   void *arg);

/* Ask about the next resource.  Returns 0 (the answer comes) or -errno. */
static int getlk_ask_next(struct getlk_query *q)
{
	return lockquery_start(q->fs->session, q->paths[q->next++], q->mode,
			       q->skip, q->nskip, getlk_answered, q);
}

/* F_GETLK's l_pid: the blocking holder's pid if it is on this host and
 * still runs (the kernel maps it into the caller's namespace), else 0.
 * It still runs if its pid has the start time the node records: never a
 * process that took a gone holder's pid since. */
static pid_t getlk_local_pid(struct zkl_fs *fs, const char *data, size_t len)
{
	struct lineage_proc holder;
	char host[256];

	if (!data || identity_get(data, len, "host", host, sizeof(host)) < 0 ||
	    strcmp(host, fs->hostname) != 0 ||
	    identity_holder(data, len, &holder) < 0 ||
	    !lineage_still_runs(holder))
		return 0;
	return holder.pid;
}

static void getlk_answered(int err, const struct lockquery_answer *a, void *arg)
{
	struct getlk_query *q = arg;

	if (err == 0 && !a->blocked && q->next < q->n) {
		err = getlk_ask_next(q);
		if (err == 0)
			return;
	}
	if (err < 0) {
		fs_reply_err(q->req, -err);
	} else {
		q->lock.l_type = F_UNLCK;
		if (a->blocked) {
			/* A lease excludes like a write lock, to a
			 * lease request. */
			q->lock.l_type = a->mode == ZKL_MODE_READ ? F_RDLCK
								  : F_WRLCK;
			q->lock.l_pid =
				getlk_local_pid(q->fs, a->data, a->datalen);
		}
		fuse_reply_lock(q->req, &q->lock);
	}
	free(q);
}

void lockfile_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		    struct flock *lock)
{
	struct lockfile *lf = lockfile_of(fi);
	struct zkl_fs *fs = lf->fs;
	enum zkl_mode mode =
		lockfile_mode(ino, lockfile_mode_of_type(lock->l_type));
	struct zkl_lockreq *mine[LOCKQUERY_MAX_SKIP], *again;
	struct lineage_proc lineage[LINEAGE_MAX];
	size_t nlineage = 0;
	struct getlk_query *q;
	struct posixlock *p;
	int covered, err;

	if (!lockfile_whole_file(lock))
		return fs_reply_err(req, EINVAL);
	q = malloc(sizeof(*q) + TREE_MULTI_BUF);
	if (!q)
		return fs_reply_err(req, ENOMEM);
	q->req = req;
	q->fs = fs;
	q->lock = *lock;
	q->mode = mode;
	q->nskip = 0;
	q->next = 0;
	/* -o reentrant: a lock the caller's process tree holds, and would
	 * take again, blocks nothing (reentrant.h). */
	if (fs->reentrant)
		nlineage = lineage_of(fuse_req_ctx(req)->pid, lineage,
				      LINEAGE_MAX);
	/* Our own locks never conflict with our own test, unless others
	 * hold them too (-o reentrant). */
	pthread_mutex_lock(&fs->lock);
	p = posix_find_locked(fs, ino, fi->lock_owner);
	mine[0] = lf->held;
	mine[1] = p ? p->lr : NULL;
	covered = lockfile_covers(mine[0], mode) ||
		  lockfile_covers(mine[1], mode) ||
		  (nlineage && reentrant_find_locked(fs, ino, mode, lineage,
						     nlineage, &again) == 0);
	for (size_t k = 0; k < LOCKQUERY_MAX_SKIP; k++) {
		if (!mine[k] || lockreq_owners(mine[k]) > 1)
			continue;
		memcpy(q->guids[q->nskip], lockreq_guid(mine[k]),
		       sizeof(q->guids[0]));
		q->skip[q->nskip] = q->guids[q->nskip];
		q->nskip++;
	}
	pthread_mutex_unlock(&fs->lock);
	if (covered) {
		free(q);
		lock->l_type = F_UNLCK;
		return (void)fuse_reply_lock(req, lock);
	}
	q->n = lockfile_zpaths(fs, ino, q->buf, TREE_MULTI_BUF, q->paths);
	err = getlk_ask_next(q);
	if (err < 0) {
		free(q);
		fs_reply_err(req, -err);
	}
}
