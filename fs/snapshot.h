/*
 * snapshot.h - what an open text file or directory reads: a buffer taken
 * at open, kept until RELEASE, and freed when its last reference goes.
 *
 * References: the open handle's, and one per read whose reply is being
 * sent from the buffer (the kernel may wake the reader, who may close,
 * while our writev is still inside it).  Every open snapshot is listed in
 * its mount so that an unmount frees those whose RELEASE will never come:
 * the kernel sends none once the daemon has stopped reading.
 */
#ifndef ZKL_SNAPSHOT_H
#define ZKL_SNAPSHOT_H

#include <stdatomic.h>

#include "fs.h"

struct snapshot {
	atomic_int refs;
	struct zkl_link link; /* in fs->snapshots while open */
	struct zkl_fs *fs;
	char *buf; /* what reads see (malloc'd, the snapshot's) */
	size_t len;
	/* Frees the enclosing object once buf is freed; NULL: sn itself was
	 * malloc'd alone. */
	void (*free_fn)(struct snapshot *);
};

/* One reference (the caller's); not yet listed; an empty buffer. */
void snapshot_init(struct snapshot *sn, struct zkl_fs *fs,
		   void (*free_fn)(struct snapshot *));

/* Give the caller's reference to the open handle by listing it.  Call it
 * before replying to the open, since RELEASE may follow the reply on
 * another thread at once; if the reply fails (the opener is gone, and no
 * RELEASE will come), call snapshot_release. */
void snapshot_opened(struct snapshot *sn);

/* Answer an open (or a create, if create_entry) with the text `text`
 * (malloc'd; the snapshot takes it) as what the file reads: a snapshot
 * listed in the mount, its address in fi->fh.  On ENOMEM the open is
 * refused and text freed. */
void snapshot_answer_open(struct zkl_fs *fs, fuse_req_t req,
			  struct fuse_file_info *fi,
			  const struct fuse_entry_param *create_entry,
			  char *text, size_t len);

/* An open answered later, from a ZooKeeper completion: what the answer
 * needs of the request. */
struct snapshot_pending {
	struct zkl_fs *fs;
	fuse_req_t req;
	struct fuse_file_info fi;
	int is_create;
	struct fuse_entry_param entry;
};

void snapshot_pending_init(struct snapshot_pending *p, struct zkl_fs *fs,
			   fuse_req_t req, const struct fuse_file_info *fi,
			   const struct fuse_entry_param *create_entry);

/* A pending open fails with err, a -errno (fs_reply_open_err). */
void snapshot_pending_fail(struct snapshot_pending *p, int err);

/* snapshot_answer_open for a pending open. */
void snapshot_pending_answer(struct snapshot_pending *p, char *text,
			     size_t len);

/* The snapshot an open text file reads (the one snapshot_answer_open
 * made). */
static inline struct snapshot *snapshot_of(const struct fuse_file_info *fi)
{
	return (struct snapshot *)(uintptr_t)fi->fh;
}

/* A read: reply with up to size bytes of the buffer from off (none past
 * its end), holding it while the reply is sent from it. */
void snapshot_reply(struct snapshot *sn, fuse_req_t req, size_t off,
		    size_t size);

/* Drop a reference (the caller's, before snapshot_opened). */
void snapshot_put(struct snapshot *sn);

/* RELEASE: drop the open handle's reference. */
void snapshot_release(struct snapshot *sn);

/* Unmount: drop the handle reference of every snapshot still open.  Only
 * once nothing else runs: the FUSE loop has ended and the ZooKeeper
 * handle is closed (an opendir may complete from it). */
void snapshot_release_all(struct zkl_fs *fs);

#endif
