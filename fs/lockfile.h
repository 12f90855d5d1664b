/*
 * lockfile.h - what the lock-file operations share: the open file (one
 * open file description of write, read, lease or lock and the one lock it
 * owns),
 * the fcntl locks (owned by a process), and parked requests.
 *
 * Who owns which lock:
 *   open file description   the lock taken by open(write|read|lease) or by
 *                           flock(); flock converts or drops it; the last
 *                           close (RELEASE) drops it.            (flock(2))
 *   (process, file)         an fcntl lock: one lock of the resource for
 *                           all the byte ranges the process holds on
 *                           the file (rangeset.h); an F_UNLCK of its last
 *                           range, any close of that file by the process
 *                           (FLUSH) and exit drop it.              (POSIX)
 * All of them queue on the one resource znode, so all exclude each other.
 */
#ifndef ZKL_LOCKFILE_H
#define ZKL_LOCKFILE_H

#include "fs.h"

#include <fcntl.h>
#include <stdatomic.h>

#include "identity.h"
#include "process.h"
#include "lockreq.h"
#include "names.h"
#include "rangeset.h"

enum lockfile_state {
	LF_OPENING, /* OPEN not yet answered */
	LF_OPEN,    /* the kernel has the file: RELEASE will come */
	LF_CLOSED,  /* answered with an error, released, or shut down */
};

struct lockfile {
	struct zkl_link link; /* in fs->lockfiles */
	struct zkl_fs *fs;
	fuse_ino_t ino;
	/* Its resource, resolved once at open, while the kernel holds the
	 * inode: a list directory's (MOUNT/.all/<list>) is a multi-lock's;
	 * zpath is the resource's znode path (a list directory's own, for
	 * the log), kept after the inode is forgotten. */
	struct tree_res *res;
	int multi;
	char zpath[NAMES_MAX_NODE_PATH + 1];
	/* The znode paths its lock takes, also resolved at open: zpath
	 * alone, or a list directory's resources (one allocation). */
	const char **zpaths;
	size_t nzpaths;
	const char *zpath_only[1];
	/* The open file's reference (dropped by RELEASE, or when the OPEN
	 * fails) and one per parked request on this file. */
	atomic_int refs;

	/* Guarded by fs->lock. */
	enum lockfile_state state;
	struct zkl_lockreq *held;   /* the description's lock, or NULL */
	struct lineage_proc holder; /* the process that took it (-o
				     * reentrant; else none) */
	size_t identity_len;        /* of whoever took `held` */
	char identity[IDENTITY_MAX];
	struct lineage_proc taker; /* the process it names (deadlock.h) */
	off_t read_base;           /* file offset where read()'s text starts */
	char *read_text;           /* the text of the pass under way, or
				     * NULL (lockfile_read) */
	size_t read_len;
	int64_t read_token; /* the token of the lock read_text describes */
	struct fuse_pollhandle *ph; /* a poller to wake (lockfile.c), or
				     * NULL */

	/* The OPEN or CREATE, until it is answered. */
	struct fuse_file_info fi;
	int is_create;
	struct fuse_entry_param entry;
	int takes_lock; /* the open waits for a lock (decided once) */
};

/* The fcntl lock of a lock owner on a file. */
struct posixlock {
	struct zkl_link link; /* in fs->posix_locks */
	fuse_ino_t ino;
	uint64_t owner;       /* the kernel's lock owner: the process (an open
			       * file description, for OFD locks) */
	struct lockfile *via; /* taken through this open file */
	/* The ranges the owner holds, never empty, and the lock of the
	 * whole resource that holds them all: its mode always covers their
	 * strongest (posix_check_locked), and may be stronger (a write lock
	 * kept after the unlock of the last write range: only a call of
	 * the whole file converts it, flock.c). */
	struct rangeset ranges;
	struct zkl_lockreq *lr;
	struct lineage_proc holder; /* who took it (-o reentrant; else none) */
	size_t identity_len;
	char identity[IDENTITY_MAX];
	struct lineage_proc taker; /* the process it names (deadlock.h) */
};

void lockfile_get(struct lockfile *lf);
void lockfile_put(struct lockfile *lf);

static inline struct lockfile *lockfile_of(const struct fuse_file_info *fi)
{
	return (struct lockfile *)(uintptr_t)fi->fh;
}

/* The fcntl lock of (ino, owner), or NULL.  fs->lock held. */
struct posixlock *posix_find_locked(struct zkl_fs *fs, fuse_ino_t ino,
				    uint64_t owner);

/* Assert what struct posixlock promises of p.  fs->lock held. */
void posix_check_locked(struct zkl_fs *fs, const struct posixlock *p);

/* Free p, off the table, and its ranges (not its lock). */
void posix_free(struct posixlock *p);

/* Move the fcntl locks of (ino, owner), or if `via` is set, those taken
 * through that open file, out of the table onto the list `taken`.  Takes
 * fs->lock. */
void posix_take(struct zkl_fs *fs, fuse_ino_t ino, uint64_t owner,
		const struct lockfile *via, struct zkl_link *taken);

struct unlock;

/* Drop the fcntl locks posix_take would take.  With `u`, u's request
 * waits for their deletes; without, they are only queued (waiter.c). */
void posix_drop(struct zkl_fs *fs, fuse_ino_t ino, uint64_t owner,
		const struct lockfile *via, struct unlock *u);

/* Does a lock held in mode `held` (lockreq_held_mode: -ENOLCK if none)
 * satisfy a request for `mode`?  A write lock covers both lock modes; a
 * lease only a lease.  lockfile_covers asks lr for its held mode. */
int lockfile_mode_covers(int held, enum zkl_mode mode);
int lockfile_covers(struct zkl_lockreq *lr, enum zkl_mode mode);

/* The mode of a lock taken on the file ino when `asked` is asked for
 * (LOCK_EX / F_WRLCK: write, LOCK_SH / F_RDLCK: read): on a lease file
 * every lock is a lease, whichever was asked. */
enum zkl_mode lockfile_mode(fuse_ino_t ino, enum zkl_mode asked);

/* fcntl's lock type as a mode (F_WRLCK write, else read). */
static inline enum zkl_mode lockfile_mode_of_type(short type)
{
	return type == F_WRLCK ? ZKL_MODE_WRITE : ZKL_MODE_READ;
}

/* A lock request for `mode` on lf's resource, or on every resource of a
 * list directory's (lockreq_new, lockreq_new_multi; their arguments and
 * returns).  While lf is open. */
int lockfile_new_request(struct lockfile *lf, enum zkl_mode mode,
			 unsigned flags, const void *data, size_t len,
			 lockreq_done_fn done, void *arg,
			 struct zkl_lockreq **out);

/* What read() gives for lr, held through lock file lf, into a new
 * *text of *len bytes (the caller frees it).  Returns 0, or
 * lockreq_describe's -ENOENT (holds nothing) and -EIO (lost), or
 * -ENOMEM. */
int lockfile_text(const struct lockfile *lf, struct zkl_lockreq *lr,
		  char **text, size_t *len);

/* The resource znode path of a lock file's inode into out.  It always
 * fits: a resource whose path would not was never looked up. */
void lockfile_zpath(struct zkl_fs *fs, fuse_ino_t ino,
		    char out[NAMES_MAX_NODE_PATH + 1]);

/*
 * A FUSE request parked until its lock request is granted, fails or is
 * interrupted.  No thread waits: the answer comes from ZooKeeper's
 * completion thread, from libfuse's interrupt callback or from unmount,
 * and lockreq decides which of them gives it.
 */
struct waiter;

/* How a lock was asked for: its requests' kind (LOCKREQ_KIND), which
 * the metrics count by. */
enum fs_lock_kind { FS_KIND_OPEN, FS_KIND_FLOCK, FS_KIND_FCNTL, FS_KINDS };

struct waiter_ops {
	const char *what; /* "open", "flock", "fcntl": for the log */
	enum fs_lock_kind kind;
	/* The lock is held: adopt lr and reply.  Completion thread. */
	void (*granted)(struct waiter *w, struct zkl_lockreq *lr);
	/* Reply with err (-errno; 0 for a request answered from its
	 * holder's lock); the lock request is already given up.  NULL: just
	 * reply. */
	void (*failed)(struct waiter *w, int err);
	/* The lock w's holder has now (flock: its open file description's;
	 * fcntl: its lock owner's on the file), or NULL; fs->lock held.
	 * NULL function: each request is its own holder (open).  A request
	 * whose holder holds already is answered from that lock, never
	 * queued behind it: 0 if it covers the mode, else see below. */
	struct zkl_lockreq *(*holder_lock_locked)(const struct waiter *w);
	/* flock: a request of a mode the holder's lock does not cover is a
	 * conversion: take that lock from the holder, for the caller to
	 * release.  NULL (fcntl): EDEADLK. */
	struct zkl_lockreq *(*holder_drop_locked)(const struct waiter *w);
	/* The holder's lock answers w (it covers w's mode), and nothing
	 * else will: fcntl adds w's range to its owner's.  Returns 0, or
	 * -errno to answer instead.  fs->lock held.  NULL: nothing to
	 * record. */
	int (*holder_answered_locked)(struct waiter *w);
};

/*
 * Where a parked request is.  Each state says which list of the daemon's
 * the waiter is on (fs->waiters, fs->kept, fs->failing, or none), and
 * waiter_move_locked (waiter.c) is the one place it changes, moving the
 * link with it and checking the move against this diagram:
 *
 *   OFF ──list──► PARKED ──caught signal──► KEPT ──asked again──► ADOPTING
 *    ▲ ▲            │                        │  ▲                  │   │
 *    │ └─unlisted───┘ (its answerer)         │  └──(answer stored)  │   │
 *    │                                       ▼                      │   │
 *    └────────────────── answered ◄──── ENDING, EXPIRED    PARKED ◄─┘   │
 *                                                              OFF ◄────┘
 *   OFF ──failed, node to go──► FAILING ──node gone or late──► ANSWERED
 *   OFF, ENDING, EXPIRED ──answered or given up──► ANSWERED
 */
enum waiter_state {
	WAITER_OFF,      /* on no list: being made, or taken off by whoever
			  * answers it (a grant, a cancel's winner) */
	WAITER_PARKED,   /* fs->waiters: its lock request waits */
	WAITER_KEPT,     /* fs->kept: answered EINTR for a caught signal,
			  * its request kept in place for the call again */
	WAITER_ADOPTING, /* off fs->kept: the call again is taking it back */
	WAITER_ENDING,   /* off fs->kept, given up: its taker ends it */
	WAITER_EXPIRED,  /* off fs->kept, given up while its answer is on
			  * its way: that answer ends it */
	WAITER_FAILING,  /* fs->failing: failed, answered once its node is
			  * gone (or late) */
	WAITER_ANSWERED, /* answered, or its answer claimed: the end */
};

/* A kept wait's answer not come yet (kept_answer). */
#define WAITER_NO_ANSWER 1

struct waiter {
	struct zkl_link link; /* on the list its state names, or a list of
			       * its taker's while OFF or ENDING */
	struct zkl_fs *fs;
	const struct waiter_ops *ops;
	fuse_req_t req;
	struct zkl_lockreq *lr;
	atomic_int refs; /* the parking handler's and the reply's */
	pid_t tid;
	/* -o reentrant: the asking process and its ancestors (process.h),
	 * nearest first; else none */
	struct lineage_proc lineage[LINEAGE_MAX];
	size_t nlineage;
	struct lockfile *lf;   /* the file the request came through, with a
			       * reference */
	uint64_t owner;        /* fcntl: the lock owner */
	int fail_err;          /* the answer (-errno), once the node is gone */
	int interrupted_early; /* set by the callback inside registration */
	int in_place;          /* a downgrade: it waits for ZooKeeper, not
			       * for a holder, so a caught signal waits for
			       * its answer (the write lock may be gone) */
	/* fcntl: the call's own range, laid over what its owner holds when
	 * it is granted (never a copy of the owner's set taken when it
	 * asked: the owner's other calls may change that set meanwhile);
	 * flock: unused */
	struct lockrange range;
	/* Guarded by fs->lock: */
	enum waiter_state state;
	int started;       /* its lock request was started */
	int watch_signals; /* PARKED, and a signal was ignored: the poller
			    * looks at it */
	unsigned flags;    /* the LOCKREQ_* asked */
	struct timespec answer_by; /* a try's, or a failure's (waiter.h) */
	int kept_answer; /* KEPT or ADOPTING: the answer that came meanwhile
			  * (0 or -errno), or WAITER_NO_ANSWER */
	struct timespec keep_until; /* KEPT: deadline.h's clock */
	size_t identity_len;
	char identity[IDENTITY_MAX];
	struct lineage_proc taker; /* the process the identity names */
	/* Deadlocks across hosts (deadlock.h): a wait to check once it
	 * has lasted the timeout, in fs->deadlock_due until then; checked
	 * (its pins published) while it stays PARKED. */
	unsigned check_candidate : 1, checked : 1;
	struct zkl_link due_link;
	struct timespec check_at;
};

/* Queue a lock request for `mode` on lf's resource for req, with
 * LOCKREQ_* flags, and answer req now (error) or later.  fcntl passes
 * its owner and the call's range; the others 0 and NULL.  Any thread. */
void waiter_park(fuse_req_t req, const struct waiter_ops *ops,
		 struct lockfile *lf, enum zkl_mode mode, unsigned flags,
		 uint64_t owner, const struct lockrange *range);

/* waiter_park for a downgrade: `from`, the write lock the holder had
 * (taken from it by the caller, who passes its reference), is replaced
 * by the read lock asked for in its place in the queue
 * (lockreq_start_in_place), or released if the request does not start. */
void waiter_park_in_place(fuse_req_t req, const struct waiter_ops *ops,
			  struct lockfile *lf, enum zkl_mode mode,
			  unsigned flags, uint64_t owner,
			  const struct lockrange *range,
			  struct zkl_lockreq *from);

/* At unmount (fs->stopping set, workers gone): fail every parked request
 * whose grant has not begun; the others fail in their grant. */
void waiter_shutdown_all(struct zkl_fs *fs);

/* For the signal poller (waiter.c): look at w's pending signals
 * again, cancel its wait if one should, and drop the reference the
 * poller took (w->refs) to call this. */
void waiter_recheck_signals(struct waiter *w);

/*
 * An explicit unlock (waiter.c): the FUSE request is answered, or the new
 * lock of a conversion queued, only once ZooKeeper has deleted every lock
 * released through it, so that no other session still sees them.
 *
 *   u = unlock_begin(req);           NULL when out of memory: then every
 *   unlock_add(u, lr); ...           call below degrades to not waiting
 *   unlock_reply_when_done(u, req);  or unlock_park_when_done(u, req, ...)
 *
 * Exactly one of the two *_when_done ends every unlock_begin.
 */
struct unlock *unlock_begin(fuse_req_t req);
/* Release lr (the caller's reference) and wait for its node. */
void unlock_add(struct unlock *u, struct zkl_lockreq *lr);
/* Reply 0 to req once every release is gone. */
void unlock_reply_when_done(struct unlock *u, fuse_req_t req);
/* For the signal poller: the unlocks past their deadline (a second:
 * ZooKeeper's answer may be late, not the caller's), claimed, each with a
 * reference; fs->lock held.  unlock_answer_late answers each, without the
 * lock. */
size_t unlock_take_late_locked(struct zkl_fs *fs, struct unlock **late,
			       size_t max);
void unlock_answer_late(struct unlock *u);
/* Then waiter_park(req, ops, lf, mode, flags, owner, range); EIO at
 * unmount. */
void unlock_park_when_done(struct unlock *u, fuse_req_t req,
			   const struct waiter_ops *ops, struct lockfile *lf,
			   enum zkl_mode mode, unsigned flags, uint64_t owner,
			   const struct lockrange *range);

/* A close (FLUSH) of lf by thread tid (waiter.c): the waits kept for
 * a restart (waiter.h) by its process on lf, or by a thread gone, move to
 * `ending`; fs->lock held.  waiter_end_kept_all_then gives each up, its
 * release added to u (answered once its node is gone; NULL: at once). */
void waiter_take_kept_of_locked(struct zkl_fs *fs, const struct lockfile *lf,
				pid_t tid, struct zkl_link *ending);
void waiter_end_kept_all_then(struct zkl_link *ending, struct unlock *u);

#endif
