/*
 * ops_file.c - route each file operation to the kind of file it is about:
 * a lock file (ops_lock.c, ops_flock.c) or a text file (ops_info.c; the
 * limit and maxhold files are opened and written by ops_setting.c, the revoke file by
 * ops_revoke.c).  Their open files are different structures, so nothing
 * else may look at fi->fh before this choice.
 */
#include "ops.h"

#include <errno.h>
#include <poll.h>

static int file_is_text(fuse_ino_t ino)
{
	return tree_kind_is_text(tree_kind_of(ino));
}

void file_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
	       const struct fuse_entry_param *create_entry)
{
	if (tree_kind_of(ino) == TREE_DIR)
		return fs_reply_open_err(fuse_req_userdata(req), req,
					 create_entry, EISDIR);
	if (tree_kind_is_setting(tree_kind_of(ino)))
		return setting_open(req, ino, fi, create_entry);
	if (tree_kind_of(ino) == TREE_REVOKE)
		return revoke_open(req, ino, fi, create_entry);
	if (file_is_text(ino))
		return info_open(req, ino, fi, create_entry);
	lockfile_open(req, ino, fi, create_entry);
}

void file_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	       struct fuse_file_info *fi)
{
	if (file_is_text(ino))
		return info_read(req, size, off, fi);
	lockfile_read(req, ino, size, off, fi);
}

/* Text files other than the settings and revoke are opened read-only: the kernel sends no
 * write for them. */
void file_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		off_t off, struct fuse_file_info *fi)
{
	if (tree_kind_is_setting(tree_kind_of(ino)))
		return setting_write(req, ino, buf, size, off);
	if (tree_kind_of(ino) == TREE_REVOKE)
		return revoke_write(req, ino, buf, size, off);
	if (file_is_text(ino))
		return fs_reply_err(req, EBADF);
	lockfile_write(req, ino, buf, size, off, fi);
}

void file_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (file_is_text(ino))
		return fs_reply_err(req, 0);
	lockfile_flush(req, ino, fi);
}

void file_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		struct fuse_file_info *fi)
{
	if (file_is_text(ino))
		return fs_reply_err(req, 0);
	lockfile_fsync(req, ino, datasync, fi);
}

void file_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (file_is_text(ino))
		return info_release(req, fi);
	lockfile_release(req, ino, fi);
}

/* A text file is no lock: flock(2) and fcntl(2) locks on it are invalid. */
void file_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		int op)
{
	if (file_is_text(ino))
		return fs_reply_err(req, EINVAL);
	lockfile_flock(req, ino, fi, op);
}

void file_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		struct flock *lock)
{
	if (file_is_text(ino))
		return fs_reply_err(req, EINVAL);
	lockfile_getlk(req, ino, fi, lock);
}

/* A text file is always readable, and never asked anything. */
void file_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
	       struct fuse_pollhandle *ph)
{
	if (!file_is_text(ino))
		return lockfile_poll(req, ino, fi, ph);
	if (ph)
		fuse_pollhandle_destroy(ph);
	fuse_reply_poll(req, POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM);
}

void file_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		struct flock *lock, int sleep)
{
	if (file_is_text(ino))
		return fs_reply_err(req, EINVAL);
	lockfile_setlk(req, ino, fi, lock, sleep);
}
