/*
 * ops_lock.c - open, read, write, release of the lock files.
 *
 * An OPEN of <resource>/write or /read becomes a lock request and the
 * handler returns at once: the request is "parked" and answered later from
 * the ZooKeeper completion thread (grant or failure) or from libfuse's
 * interrupt callback (cancel).  lockreq decides which of them wins, so each
 * OPEN gets exactly one reply.
 *
 * A struct lockfile has two references while its OPEN waits: the handler's
 * own, dropped when the handler returns, and the reply's, owned by whoever
 * answers.  A successful reply turns the second into the open file's
 * reference (fi->fh), dropped by RELEASE.  The last put releases the lock.
 */
#include "fs.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "lockreq.h"
#include "log.h"
#include "sigpend.h"

/* Largest note a holder may store with write(). */
#define LOCKFILE_NOTE_MAX 1024
#define LOCKFILE_IDENTITY_MAX 512

enum lockfile_state {
	LF_WAITING, /* OPEN not yet answered */
	LF_OPEN,    /* the kernel has the file: RELEASE will come */
	LF_CLOSED,  /* answered with an error, released, or shut down */
};

struct lockfile {
	struct zkl_link link; /* in fs->lockfiles */
	struct zkl_fs *fs;
	struct zkl_lockreq *lr;
	atomic_int refs;
	enum lockfile_state state; /* guarded by fs->lock */
	fuse_req_t req;            /* the OPEN or CREATE, while waiting */
	struct fuse_file_info fi;
	int is_create;
	struct fuse_entry_param entry;
	pid_t tid;
	enum tree_kind kind;
	size_t identity_len;
	char identity[LOCKFILE_IDENTITY_MAX];
};

static void lockfile_put(struct lockfile *lf)
{
	struct zkl_fs *fs = lf->fs;

	if (atomic_fetch_sub(&lf->refs, 1) != 1)
		return;
	pthread_mutex_lock(&fs->lock);
	list_del(&lf->link);
	pthread_mutex_unlock(&fs->lock);
	lockreq_release(lf->lr);
	free(lf);
}

static void lockfile_set_state(struct lockfile *lf, enum lockfile_state st)
{
	pthread_mutex_lock(&lf->fs->lock);
	lf->state = st;
	pthread_mutex_unlock(&lf->fs->lock);
}

/* The holder's identity, stored as the lock node's data. */
static void lockfile_describe_opener(struct lockfile *lf,
				     const struct fuse_ctx *ctx)
{
	char path[64], comm[64] = "?";
	int fd, n;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)ctx->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t got = read(fd, comm, sizeof(comm) - 1);
		close(fd);
		if (got > 0) {
			comm[got] = '\0';
			comm[strcspn(comm, "\n")] = '\0';
		}
	}
	n = snprintf(lf->identity, sizeof(lf->identity),
		     "host %s\npid %d\nuid %u\ncmd %s\ntime %lld\n",
		     lf->fs->hostname, (int)ctx->pid, (unsigned)ctx->uid, comm,
		     (long long)time(NULL));
	lf->identity_len = n < 0 ? 0 :
			   (size_t)n < sizeof(lf->identity) ?
						(size_t)n :
						sizeof(lf->identity) - 1;
}

static void lockfile_reply_opened(struct lockfile *lf)
{
	int rc;

	lf->fi.fh = (uint64_t)(uintptr_t)lf;
	lf->fi.direct_io = 1;
	lf->fi.nonseekable = 1;
	lf->fi.keep_cache = 0;
	if (lf->is_create)
		rc = fuse_reply_create(lf->req, &lf->entry, &lf->fi);
	else
		rc = fuse_reply_open(lf->req, &lf->fi);
	if (rc < 0) {
		/* The opener is gone and no RELEASE will come. */
		log_msg(LOG_INFO, "opener %d left before its grant arrived",
			(int)lf->tid);
		lockfile_set_state(lf, LF_CLOSED);
		lockfile_put(lf);
	}
}

/* lockreq's answer, on the completion thread.  We own the reply. */
static void lockfile_done(struct zkl_lockreq *lr, int err, void *arg)
{
	struct lockfile *lf = arg;
	struct zkl_fs *fs = lf->fs;
	int stopping;

	(void)lr;
	/* Waits for an interrupt callback running now; none runs after. */
	fuse_req_interrupt_func(lf->req, NULL, NULL);
	pthread_mutex_lock(&fs->lock);
	stopping = fs->stopping;
	lf->state = err == 0 && !stopping ? LF_OPEN : LF_CLOSED;
	pthread_mutex_unlock(&fs->lock);
	if (err == 0 && stopping)
		err = -EIO;
	if (err == 0) {
		log_msg(LOG_INFO, "granted %s lock on %s to pid %d",
			tree_kind_name(lf->kind),
			tree_res_of(&fs->tree, lf->entry.ino)->zpath,
			(int)lf->tid);
		lockfile_reply_opened(lf);
		return;
	}
	log_msg(LOG_DEBUG, "open by pid %d failed: %s", (int)lf->tid,
		strerror(-err));
	fs_reply_err(lf->req, -err);
	lockfile_put(lf);
}

/* libfuse's interrupt callback: runs with the request's lock held, maybe
 * inside fuse_req_interrupt_func() of the OPEN handler itself. */
static void lockfile_interrupted(fuse_req_t req, void *arg)
{
	struct lockfile *lf = arg;

	if (!sigpend_thread_cancels(lf->tid)) {
		log_msg(LOG_DEBUG,
			"pid %d: signal that does not cancel a wait, ignored",
			(int)lf->tid);
		return;
	}
	if (lockreq_cancel(lf->lr) != 0)
		return; /* the grant won; it replies */
	log_msg(LOG_DEBUG, "pid %d interrupted while waiting", (int)lf->tid);
	lockfile_set_state(lf, LF_CLOSED);
	fuse_reply_err(req, EINTR);
	lockfile_put(lf);
}

void lockfile_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		   const struct fuse_entry_param *create_entry)
{
	struct zkl_fs *fs = fuse_req_userdata(req);
	enum tree_kind kind = tree_kind_of(ino);
	struct tree_res *res = tree_res_of(&fs->tree, ino);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct lockfile *lf;
	unsigned flags = (fi->flags & O_NONBLOCK) ? LOCKREQ_TRY : 0;
	int err;

	if (kind != TREE_WRITE && kind != TREE_READ)
		return fs_reply_err(req, EISDIR);
	lf = calloc(1, sizeof(*lf));
	if (!lf)
		return fs_reply_err(req, ENOMEM);
	lf->fs = fs;
	lf->req = req;
	lf->fi = *fi;
	lf->tid = ctx->pid;
	lf->kind = kind;
	lf->state = LF_WAITING;
	atomic_init(&lf->refs, 2); /* the handler's and the reply's */
	if (create_entry) {
		lf->is_create = 1;
		lf->entry = *create_entry;
	}
	lf->entry.ino = ino;
	lockfile_describe_opener(lf, ctx);
	err = lockreq_new(fs->session, res->zpath,
			  kind == TREE_WRITE ? ZKL_MODE_WRITE : ZKL_MODE_READ,
			  flags, lf->identity, lf->identity_len, lockfile_done,
			  lf, &lf->lr);
	if (err < 0) {
		free(lf);
		return fs_reply_err(req, -err);
	}
	pthread_mutex_lock(&fs->lock);
	list_add_tail(&fs->lockfiles, &lf->link);
	pthread_mutex_unlock(&fs->lock);

	log_msg(LOG_DEBUG, "pid %d opens %s/%s%s", (int)lf->tid, res->zpath,
		tree_kind_name(kind), flags ? " (try)" : "");
	/* Before the request can be answered: the callback may run at once
	 * if the interrupt came first, and then start sees the cancel. */
	fuse_req_interrupt_func(req, lockfile_interrupted, lf);
	err = lockreq_start(lf->lr);
	if (err < 0 && err != -ECANCELED) {
		fuse_req_interrupt_func(req, NULL, NULL);
		lockfile_set_state(lf, LF_CLOSED);
		fs_reply_err(req, -err);
		lockfile_put(lf);
	}
	lockfile_put(lf); /* the handler's */
}

static struct lockfile *lockfile_of(struct fuse_file_info *fi)
{
	return (struct lockfile *)(uintptr_t)fi->fh;
}

void lockfile_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	struct lockfile *lf = lockfile_of(fi);
	char text[1200], path[1024];
	int64_t token, session;
	int err, n;

	(void)ino;
	err = lockreq_describe(lf->lr, &token, path, sizeof(path), &session);
	if (err < 0)
		return fs_reply_err(req, -err);
	n = snprintf(text, sizeof(text),
		     "%" PRId64 "\nnode %s\nsession 0x%" PRIx64 "\nmode %s\n",
		     token, path, (uint64_t)session,
		     tree_kind_name(lf->kind));
	if (n < 0 || off >= n)
		return (void)fuse_reply_buf(req, NULL, 0);
	if ((size_t)(n - off) < size)
		size = (size_t)(n - off);
	fuse_reply_buf(req, text + off, size);
}

struct lockfile_write_ctx {
	fuse_req_t req;
	size_t size;
};

static void lockfile_noted(int err, void *arg)
{
	struct lockfile_write_ctx *ctx = arg;

	if (err < 0)
		fs_reply_err(ctx->req, -err);
	else
		fuse_reply_write(ctx->req, ctx->size);
	free(ctx);
}

void lockfile_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		    size_t size, off_t off, struct fuse_file_info *fi)
{
	struct lockfile *lf = lockfile_of(fi);
	char data[LOCKFILE_IDENTITY_MAX + LOCKFILE_NOTE_MAX + 8];
	struct lockfile_write_ctx *ctx;
	size_t len = lf->identity_len, note = size;
	int err;

	(void)ino;
	(void)off;
	if (size > LOCKFILE_NOTE_MAX)
		return fs_reply_err(req, EFBIG);
	while (note > 0 && buf[note - 1] == '\n')
		note--;
	memcpy(data, lf->identity, len);
	memcpy(data + len, "note ", 5);
	len += 5;
	/* One line per key in the node's data: fold the note's newlines. */
	for (size_t i = 0; i < note; i++)
		data[len++] = buf[i] == '\n' ? ' ' : buf[i];
	data[len++] = '\n';
	ctx = malloc(sizeof(*ctx));
	if (!ctx)
		return fs_reply_err(req, ENOMEM);
	ctx->req = req;
	ctx->size = size;
	err = lockreq_set_data(lf->lr, data, len, lockfile_noted, ctx);
	if (err < 0) {
		free(ctx);
		fs_reply_err(req, -err);
	}
}

void lockfile_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		    struct fuse_file_info *fi)
{
	int64_t token, session;
	char path[8];
	int err;

	(void)ino;
	(void)datasync;
	err = lockreq_describe(lockfile_of(fi)->lr, &token, path,
			       sizeof(path), &session);
	fs_reply_err(req, err == -EIO ? EIO : 0);
}

void lockfile_release(fuse_req_t req, fuse_ino_t ino,
		      struct fuse_file_info *fi)
{
	struct lockfile *lf = lockfile_of(fi);
	struct zkl_fs *fs = lf->fs;
	int was_open;

	(void)ino;
	pthread_mutex_lock(&fs->lock);
	was_open = lf->state == LF_OPEN;
	lf->state = LF_CLOSED;
	pthread_mutex_unlock(&fs->lock);
	log_msg(LOG_DEBUG, "release of a %s lock taken by pid %d",
		tree_kind_name(lf->kind), (int)lf->tid);
	/* The delete is queued before we answer; a later create by this
	 * mount is queued behind it, so nobody can see both. */
	if (was_open)
		lockfile_put(lf);
	fuse_reply_err(req, 0);
}

void lockfile_shutdown_all(struct zkl_fs *fs)
{
	struct zkl_link *l;

	pthread_mutex_lock(&fs->lock);
	fs->stopping = 1;
	pthread_mutex_unlock(&fs->lock);
	/* Workers have stopped: only the completion thread races us, and it
	 * sees `stopping`.  Take the files one at a time, with a reference,
	 * so that our puts may unlink them. */
	for (;;) {
		struct lockfile *lf = NULL;
		enum lockfile_state st = LF_CLOSED;

		pthread_mutex_lock(&fs->lock);
		for (l = fs->lockfiles.next; l != &fs->lockfiles; l = l->next) {
			struct lockfile *c = ZKL_CONTAINER_OF(
				l, struct lockfile, link);
			if (c->state != LF_CLOSED) {
				lf = c;
				st = c->state;
				c->state = LF_CLOSED;
				atomic_fetch_add(&c->refs, 1);
				break;
			}
		}
		pthread_mutex_unlock(&fs->lock);
		if (!lf)
			break;
		if (st == LF_OPEN) {
			lockfile_put(lf); /* the open file's */
		} else if (lockreq_cancel(lf->lr) == 0) {
			fuse_req_interrupt_func(lf->req, NULL, NULL);
			fuse_reply_err(lf->req, EIO);
			lockfile_put(lf); /* the reply's */
		}
		lockfile_put(lf);
	}
}
