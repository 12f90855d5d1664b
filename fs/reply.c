/*
 * reply.c - the one way an errno goes back to the kernel.
 */
#include "fs.h"

#include <errno.h>

void fs_reply_err(fuse_req_t req, int err)
{
	if (err <= 0 || err >= 512)
		err = err == 0 ? 0 : EIO;
	fuse_reply_err(req, err);
}

void fs_create_entry_unused(struct zkl_fs *fs,
			    const struct fuse_entry_param *create_entry)
{
	if (create_entry)
		tree_forget(&fs->tree, create_entry->ino, 1);
}

void fs_reply_open_err(struct zkl_fs *fs, fuse_req_t req,
		       const struct fuse_entry_param *create_entry, int err)
{
	fs_create_entry_unused(fs, create_entry);
	fs_reply_err(req, err);
}
