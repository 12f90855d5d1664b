/*
 * ops_entry.c - names and attributes: lookup, forget, getattr, setattr,
 * statfs, ioctl, and the operations a lock filesystem refuses.
 */
#include "ops.h"

#include <errno.h>
#include <string.h>
#include <sys/statvfs.h>

void fs_fill_attr(struct zkl_fs *fs, fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	if (tree_kind_of(ino) == TREE_DIR) {
		st->st_mode = S_IFDIR | fs->dir_mode;
		st->st_nlink = 2;
	} else if (tree_kind_is_info(tree_kind_of(ino))) {
		st->st_mode = S_IFREG | (fs->file_mode & 0444);
		st->st_nlink = 1;
	} else if (tree_kind_of(ino) == TREE_REVOKE) {
		st->st_mode = S_IFREG | (fs->file_mode & 0222);
		st->st_nlink = 1;
	} else {
		st->st_mode = S_IFREG | fs->file_mode;
		st->st_nlink = 1;
	}
}

int fs_entry(struct zkl_fs *fs, fuse_ino_t parent, const char *name,
	     struct fuse_entry_param *e)
{
	uint64_t ino;
	int err = tree_lookup(&fs->tree, parent, name, &ino);

	if (err < 0)
		return err;
	memset(e, 0, sizeof(*e));
	e->ino = ino;
	e->entry_timeout = FS_ENTRY_TIMEOUT;
	e->attr_timeout = FS_ATTR_TIMEOUT;
	fs_fill_attr(fs, ino, &e->attr);
	return 0;
}

void entry_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct zkl_fs *fs = fuse_req_userdata(req);
	struct fuse_entry_param e;
	int err = fs_entry(fs, parent, name, &e);

	if (err == -ENOENT) {
		/* A name that can never exist: let the kernel remember. */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = FS_ENTRY_TIMEOUT;
		return (void)fuse_reply_entry(req, &e);
	}
	if (err < 0)
		return fs_reply_err(req, -err);
	fuse_reply_entry(req, &e);
}

void entry_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct zkl_fs *fs = fuse_req_userdata(req);

	tree_forget(&fs->tree, ino, nlookup);
	fuse_reply_none(req);
}

void entry_forget_multi(fuse_req_t req, size_t count,
			struct fuse_forget_data *forgets)
{
	struct zkl_fs *fs = fuse_req_userdata(req);

	for (size_t i = 0; i < count; i++)
		tree_forget(&fs->tree, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

void entry_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct zkl_fs *fs = fuse_req_userdata(req);
	struct stat st;

	(void)fi;
	fs_fill_attr(fs, ino, &st);
	fuse_reply_attr(req, &st, FS_ATTR_TIMEOUT);
}

/* Only what `exec 9>file` and touch(1) need: truncation to 0 and times. */
void entry_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		   int to_set, struct fuse_file_info *fi)
{
	struct zkl_fs *fs = fuse_req_userdata(req);
	struct stat st;

	(void)fi;
	if (to_set &
	    (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID))
		return fs_reply_err(req, EPERM);
	if ((to_set & FUSE_SET_ATTR_SIZE) &&
	    (tree_kind_of(ino) == TREE_DIR || attr->st_size != 0))
		return fs_reply_err(req, tree_kind_of(ino) == TREE_DIR ? EISDIR
								       : EPERM);
	fs_fill_attr(fs, ino, &st);
	fuse_reply_attr(req, &st, FS_ATTR_TIMEOUT);
}

void entry_refuse_name(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	(void)parent;
	(void)name;
	fuse_reply_err(req, EPERM);
}

void entry_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		  fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	(void)newparent;
	(void)newname;
	(void)flags;
	entry_refuse_name(req, parent, name);
}

void entry_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		const char *newname)
{
	(void)ino;
	entry_refuse_name(req, newparent, newname);
}

void entry_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		   const char *name)
{
	(void)link;
	entry_refuse_name(req, parent, name);
}

void entry_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		 mode_t mode, dev_t rdev)
{
	(void)mode;
	(void)rdev;
	entry_refuse_name(req, parent, name);
}

void entry_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv = { .f_bsize = 4096, .f_namemax = 255 };

	(void)ino;
	fuse_reply_statfs(req, &sv);
}

/* No file of the mount has attributes or device controls: answered at
 * once, for lock files too (an ioctl must never wait for a lock). */
void entry_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
		 struct fuse_file_info *fi, unsigned flags, const void *in_buf,
		 size_t in_bufsz, size_t out_bufsz)
{
	(void)ino;
	(void)cmd;
	(void)arg;
	(void)fi;
	(void)flags;
	(void)in_buf;
	(void)in_bufsz;
	(void)out_bufsz;
	fs_reply_err(req, ENOTTY);
}
