/*
 * lockfile.c - the open lock file's lifetime, and the table of fcntl locks
 * (see lockfile.h).
 */
#include "lockfile.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

void lockfile_get(struct lockfile *lf)
{
	atomic_fetch_add(&lf->refs, 1);
}

void lockfile_put(struct lockfile *lf)
{
	struct zkl_fs *fs = lf->fs;

	if (atomic_fetch_sub(&lf->refs, 1) != 1)
		return;
	pthread_mutex_lock(&fs->lock);
	list_del(&lf->link);
	pthread_mutex_unlock(&fs->lock);
	if (lf->held)
		lockreq_release(lf->held);
	if (lf->ph)
		fuse_pollhandle_destroy(lf->ph);
	free(lf);
}

int lockfile_covers(struct zkl_lockreq *lr, enum zkl_mode mode)
{
	enum zkl_mode held;

	if (!lr || !lockreq_holds(lr))
		return 0;
	held = lockreq_mode(lr);
	return held == mode ||
	       (mode == ZKL_MODE_READ && held == ZKL_MODE_WRITE);
}

enum zkl_mode lockfile_mode(fuse_ino_t ino, enum zkl_mode asked)
{
	return tree_kind_of(ino) == TREE_LEASE ? ZKL_MODE_LEASE : asked;
}

void lockfile_zpath(struct zkl_fs *fs, fuse_ino_t ino,
		    char out[NAMES_MAX_NODE_PATH + 1])
{
	int rc = tree_zpath(tree_res_of(&fs->tree, ino), out,
			    NAMES_MAX_NODE_PATH + 1);

	assert(rc > 0); /* tree_lookup checked its length */
	(void)rc;
}

int lockfile_zpaths(struct zkl_fs *fs, fuse_ino_t ino, char *buf, size_t size,
		    const char *paths[MULTINAME_MAX_ITEMS])
{
	const struct tree_res *res = tree_res_of(&fs->tree, ino);
	int n;

	if (res->role != TREE_ROLE_MULTI) {
		assert(size >= NAMES_MAX_NODE_PATH + 1);
		lockfile_zpath(fs, ino, buf);
		paths[0] = buf;
		return 1;
	}
	n = tree_multi_zpaths(fs->tree.root.name, res->name, buf, size, paths);
	assert(n > 0); /* tree_lookup checked it */
	return n;
}

int lockfile_new_request(struct zkl_fs *fs, fuse_ino_t ino, enum zkl_mode mode,
			 unsigned flags, const void *data, size_t len,
			 lockreq_done_fn done, void *arg,
			 struct zkl_lockreq **out)
{
	const char *paths[MULTINAME_MAX_ITEMS];
	char zpath[NAMES_MAX_NODE_PATH + 1], *buf;
	int n;

	if (tree_role_of(&fs->tree, ino) != TREE_ROLE_MULTI) {
		lockfile_zpath(fs, ino, zpath);
		return lockreq_new(fs->session, zpath, mode, flags, data, len,
				   done, arg, out);
	}
	if (mode == ZKL_MODE_LEASE)
		return -EINVAL; /* a list directory has no lease file */
	buf = malloc(TREE_MULTI_BUF);
	if (!buf)
		return -ENOMEM;
	n = lockfile_zpaths(fs, ino, buf, TREE_MULTI_BUF, paths);
	n = lockreq_new_multi(fs->session, paths, (size_t)n, mode, flags, data,
			      len, done, arg, out);
	free(buf);
	return n;
}

/* ---- the table of fcntl locks ------------------------------------------ */

struct posixlock *posix_find_locked(struct zkl_fs *fs, fuse_ino_t ino,
				    uint64_t owner)
{
	ZKL_ASSERT_HELD(&fs->lock);
	for (struct zkl_link *l = fs->posix_locks.next; l != &fs->posix_locks;
	     l = l->next) {
		struct posixlock *p =
			ZKL_CONTAINER_OF(l, struct posixlock, link);
		if (p->ino == ino && p->owner == owner)
			return p;
	}
	return NULL;
}

void posix_take(struct zkl_fs *fs, fuse_ino_t ino, uint64_t owner,
		const struct lockfile *via, struct zkl_link *taken)
{
	struct zkl_link *l, *next;

	pthread_mutex_lock(&fs->lock);
	for (l = fs->posix_locks.next; l != &fs->posix_locks; l = next) {
		struct posixlock *p =
			ZKL_CONTAINER_OF(l, struct posixlock, link);
		next = l->next;
		if (via ? p->via == via : p->ino == ino && p->owner == owner) {
			list_del(&p->link);
			list_add_tail(taken, &p->link);
		}
	}
	pthread_mutex_unlock(&fs->lock);
}
