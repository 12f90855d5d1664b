/*
 * fake_fuse.h - a scripted libfuse for the unit tests of parked requests:
 * the test executable defines fuse_reply_err() & co., which take
 * precedence over libfuse3.so's.  A request is a struct fake_req; every
 * reply is counted on it.
 */
#ifndef FAKE_FUSE_H
#define FAKE_FUSE_H

#include "fs.h"

struct fake_req {
	int interrupted; /* the kernel sent FUSE_INTERRUPT already */
	fuse_interrupt_func_t func;
	void *data;
	int replies;
	int err;     /* of the last error reply; 0 for open */
	uint64_t fh; /* what fuse_reply_open answered */
};

/* The mount every request belongs to, and the caller every request has. */
extern struct zkl_fs fake_fs;
extern struct fuse_ctx fake_ctx;

/* What runs while the request `registering` has its interrupt callback
 * set (once), before it is set; and after it is set. */
extern struct fake_req *registering;
extern void (*while_registering)(void);
extern struct fake_req *registered;
extern void (*after_registering)(struct fake_req *r);

/* What happens on other threads while an open's grant is being replied
 * to (once). */
extern void (*while_replying_open)(void);

/* The mount set up: resource r (its directory's inode and that of its
 * write file), no caller yet.  And torn down. */
void fake_mount(uint64_t *dir_ino, uint64_t *write_ino);
void fake_unmount(void);

/* The kernel's interrupt reaching libfuse after the callback is set. */
void fake_interrupt(struct fake_req *r);

#endif
