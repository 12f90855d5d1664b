/*
 * ops.h - the FUSE request handlers the operation table (ops.c) names.
 * Each answers its request, now or later, exactly once.
 */
#ifndef ZKL_OPS_H
#define ZKL_OPS_H

#include "fs.h"

/* Names and attributes (ops.c). */
void entry_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void entry_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void entry_forget_multi(fuse_req_t req, size_t count,
			struct fuse_forget_data *forgets);
void entry_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void entry_access(fuse_req_t req, fuse_ino_t ino, int mask);
void entry_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		   int to_set, struct fuse_file_info *fi);
void entry_refuse_name(fuse_req_t req, fuse_ino_t parent, const char *name);
void entry_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		  fuse_ino_t newparent, const char *newname,
		  unsigned int flags);
void entry_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		const char *newname);
void entry_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		   const char *name);
void entry_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		 mode_t mode, dev_t rdev);
void entry_statfs(fuse_req_t req, fuse_ino_t ino);
void entry_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
		 struct fuse_file_info *fi, unsigned flags, const void *in_buf,
		 size_t in_bufsz, size_t out_bufsz);

/* Directories (ops.c). */
void dir_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void dir_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		 struct fuse_file_info *fi);
void dir_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void dir_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
	       mode_t mode);
void dir_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void dir_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		mode_t mode, struct fuse_file_info *fi);

/* File operations, routed by the kind of file (ops.c): lock files
 * or the read-only text files.  Open of a directory: EISDIR. */
void file_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
	       const struct fuse_entry_param *create_entry);
void file_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	       struct fuse_file_info *fi);
void file_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		off_t off, struct fuse_file_info *fi);
void file_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void file_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		struct fuse_file_info *fi);
void file_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void file_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		int op);
void file_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		struct flock *lock);
void file_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
	       struct fuse_pollhandle *ph);
void file_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		struct flock *lock, int sleep);

#endif
