/*
 * fs.h - the daemon's context and what the files of fs/ share.
 */
#ifndef ZKL_FS_H
#define ZKL_FS_H

#include <fuse_lowlevel.h>

#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "held.h"
#include "holdcache.h"
#include "list.h"
#include "session.h"
#include "tree.h"

struct zkl_fs {
	struct zkl_session *session;
	struct tree tree;
	uid_t uid; /* owner of every file and directory */
	gid_t gid;
	mode_t file_mode;     /* permission bits of the lock files */
	mode_t dir_mode;      /* ... and of the resource directories */
	int on_lost_signal;   /* 0: a lost lock is only logged */
	int on_revoke_signal; /* 0: a request to let go is only logged */
	int reentrant;        /* -o reentrant (reentrant.h) */
	int anyone_may_ask;   /* -o anyone_may_ask: revoke's ask is anyone's */
	atomic_ullong asks_sent, breaks_sent; /* nodes the revoke files asked
					       * or broke (textfile.c) */
	/* Changes fs_may_change refused (atomic: .status reads it). */
	atomic_ullong refusals;
	char hostname[256];
	char *mountpoint; /* resolved at the start, or NULL (metrics.c) */
	struct timespec started;    /* CLOCK_MONOTONIC, at mount */
	struct timespec mounted_at; /* CLOCK_REALTIME, at mount: every file's
				     * times (ls -l) */

	/* Guards the lists and fields below, `stopping`, and the state and lock of
	 * every open lock file.  Taken before the session's mutex when both
	 * are held. */
	pthread_mutex_t lock;
	struct zkl_link lockfiles;   /* struct lockfile: opening and open */
	struct zkl_link waiters;     /* struct waiter: parked requests */
	struct zkl_link kept;        /* struct waiter: told EINTR, their
				      * requests kept for a restart */
	struct zkl_link failing;     /* struct waiter: failed, answered once
				      * their node is gone or at their
				      * deadline */
	size_t tries;                /* parked tries (waiter.h) */
	struct zkl_link unlocks;     /* struct unlock: waiting for deletes */
	struct zkl_link posix_locks; /* struct posixlock: fcntl locks held */
	struct zkl_link snapshots;   /* struct snapshot: open text files and
				      * directories */
	int stopping;
	int granting;               /* grants between their check of
				     * `stopping` and their reply */
	pthread_cond_t grants_done; /* granting fell to 0 (with fs->lock) */
	size_t signal_watched;      /* waiters the signal poller looks at */
	pthread_cond_t signal_poll; /* wakes the poller (with fs->lock) */
	pthread_t signal_poller;
	/* Deadlocks across hosts (deadlock.h): the parked waits to check
	 * once they have lasted deadlock_timeout_ms (0: never), in the order
	 * of that time; the thread that checks them, and what wakes it. */
	int deadlock_timeout_ms;
	int deadlock_asleep; /* the checker waits to be woken */
	struct zkl_link deadlock_due;
	pthread_cond_t deadlock_wake;
	pthread_t deadlock_checker;
	/* The refusals' log (fs_may_change): when its minute began
	 * (CLOCK_MONOTONIC seconds), and the refusals in it so far. */
	time_t refusal_minute_from;
	unsigned refusals_this_minute;

	/* The holders texts the opens of a short window share (holdcache.h;
	 * its own lock, a leaf). */
	struct holdcache holders;
};

/* Zero fs, then set up its mutex, condition and empty lists: first thing,
 * so that every exit path can tear down (fs.c).  Destroy last. */
void fs_context_init(struct zkl_fs *fs);
void fs_context_destroy(struct zkl_fs *fs);

/* Seconds the kernel may cache names and attributes: nothing about a
 * lock file's inode ever changes. */
#define FS_ENTRY_TIMEOUT 3600.0
#define FS_ATTR_TIMEOUT 3600.0

/* The operation table (ops.c). */
extern const struct fuse_lowlevel_ops fs_ops;

/* Attributes of an inode of the tree. */
void fs_fill_attr(struct zkl_fs *fs, fuse_ino_t ino, struct stat *st);

/* Reply with an errno, mapping anything out of the kernel's range to EIO
 * (an errno outside 1..511 would leave the caller stuck).  (fs.c) */
void fs_reply_err(fuse_req_t req, int err);

/* The entry of a CREATE carries a kernel reference (fs_entry) that only a
 * successful fuse_reply_create hands over: an open answered otherwise, or
 * whose reply the kernel refused, drops it here (no FORGET will come).
 * Nothing when create_entry is NULL (an OPEN).  (fs.c) */
void fs_create_entry_unused(struct zkl_fs *fs,
			    const struct fuse_entry_param *create_entry);
/* fs_create_entry_unused, then fs_reply_err. */
void fs_reply_open_err(struct zkl_fs *fs, fuse_req_t req,
		       const struct fuse_entry_param *create_entry, int err);

/* The one rule for what changes a resource for every host: writing a
 * setting (limit, maxhold) or a revoke file, rmdir.  Root and the mount's
 * owner (-o uid=, else the daemon's user) only, as the files' modes say
 * (ls -l); -o anyone_may_ask opens revoke's `ask` to everyone.  `what`
 * names the change for the log, which names who was refused.  Returns 0,
 * or -err: EACCES where the kernel would answer from the mode (an open, an
 * rmdir), EPERM at a write through a descriptor someone else opened.
 * The first FS_REFUSALS_LOGGED of a minute are logged; the rest are
 * counted (`refusals` in .status), so that no user can fill the log.
 * (fs.c) */
#define FS_REFUSALS_LOGGED 10
int fs_may_change(struct zkl_fs *fs, fuse_req_t req, const char *what, int err);

/* Look up `name` in directory `parent` and fill e for the kernel, with
 * one kernel reference counted.  Returns 0 or -errno (ops.c). */
int fs_entry(struct zkl_fs *fs, fuse_ino_t parent, const char *name,
	     struct fuse_entry_param *e);

/* The read-only text files (textfile.c): .status and holders. */
void info_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
	       const struct fuse_entry_param *create_entry);
void info_read(fuse_req_t req, size_t size, off_t off,
	       struct fuse_file_info *fi);
void info_release(fuse_req_t req, struct fuse_file_info *fi);

/* MOUNT/<resource>/revoke (textfile.c): write-only; a write of "ask"
 * or "break" asks or breaks the resource's holders.  Its release is
 * info_release. */
void revoke_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		 const struct fuse_entry_param *create_entry);
void revoke_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		  off_t off);

/* A resource's settings, the files limit and maxhold (textfile.c);
 * their reads and release are info_read and info_release. */
void setting_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		  const struct fuse_entry_param *create_entry);
void setting_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		   off_t off);

/* Lock-file operations (lockfile.c). */
void lockfile_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		   const struct fuse_entry_param *create_entry);
void lockfile_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi);
void lockfile_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		    size_t size, off_t off, struct fuse_file_info *fi);
void lockfile_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		    struct fuse_file_info *fi);
void lockfile_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void lockfile_release(fuse_req_t req, fuse_ino_t ino,
		      struct fuse_file_info *fi);
/* flock(2) and fcntl(2) locks (flock.c). */
void lockfile_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		    int op);
void lockfile_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		    struct flock *lock);
void lockfile_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		    struct flock *lock, int sleep);
/* poll(2) (lockfile.c): POLLPRI once the lock held through the file is
 * asked to let go.  lockfile_notify_revoked wakes the pollers of the
 * files holding the lock at `node`; fs->lock not held. */
void lockfile_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		   struct fuse_pollhandle *ph);
void lockfile_notify_revoked(struct zkl_fs *fs, const char *node);
/* session_lost_fn: log a lost lock, signal its holder (lost.c). */
void fs_lock_lost(const char *node, const char *why, const void *data,
		  size_t len, void *arg);
/* The same for a held lock asked to let go: log, wake its pollers,
 * signal its holder with -o on_revoke=signal (lost.c). */
void fs_lock_revoked(const char *node, const char *why, const void *data,
		     size_t len, void *arg);

/* At unmount: fail every waiting open, let go of every held lock. */
void lockfile_shutdown_all(struct zkl_fs *fs);

/* The thread that looks again at waiters whose first signal did not
 * cancel their wait (waiter.c).  Start it after any fork; stop it once
 * fs->stopping is set.  Start returns 0 or -errno. */
int waiter_poller_start(struct zkl_fs *fs);
void waiter_poller_stop(struct zkl_fs *fs);

#endif
