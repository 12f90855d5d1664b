/*
 * ops.c - the operation table: which handler answers each FUSE request.
 */
#include "ops.h"

/* OPEN of an existing inode; CREATE goes through dir_create. */
static void ops_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	file_open(req, ino, fi, NULL);
}

const struct fuse_lowlevel_ops fs_ops = {
	.lookup = entry_lookup,
	.forget = entry_forget,
	.forget_multi = entry_forget_multi,
	.getattr = entry_getattr,
	.setattr = entry_setattr,
	.mknod = entry_mknod,
	.mkdir = dir_mkdir,
	.unlink = entry_refuse_name,
	.rmdir = dir_rmdir,
	.symlink = entry_symlink,
	.rename = entry_rename,
	.link = entry_link,
	.open = ops_open,
	.create = dir_create,
	.read = file_read,
	.write = file_write,
	.flush = file_flush,
	.fsync = file_fsync,
	.release = file_release,
	.getlk = file_getlk,
	.setlk = file_setlk,
	.flock = file_flock,
	.poll = file_poll,
	.ioctl = entry_ioctl,
	.opendir = dir_opendir,
	.readdir = dir_readdir,
	.releasedir = dir_releasedir,
	.statfs = entry_statfs,
};
