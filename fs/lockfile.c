/*
 * lockfile.c - the lock files write, read and lock (see lockfile.h for
 * who owns what): the open lock file's lifetime and the table of fcntl
 * locks; open, read, write, fsync, flush and release; what read() gives;
 * and poll().
 */
#include "lockfile.h"
#include "process.h"
#include "log.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

/*
 * The open lock file's lifetime, and the table of fcntl locks.
 */
void lockfile_get(struct lockfile *lf)
{
	atomic_fetch_add(&lf->refs, 1);
}

void lockfile_put(struct lockfile *lf)
{
	struct zkl_fs *fs = lf->fs;

	if (atomic_fetch_sub(&lf->refs, 1) != 1)
		return;
	pthread_mutex_lock(&fs->lock);
	list_del(&lf->link);
	pthread_mutex_unlock(&fs->lock);
	if (lf->held)
		lockreq_release(lf->held);
	if (lf->ph)
		fuse_pollhandle_destroy(lf->ph);
	if (lf->zpaths != lf->zpath_only)
		free(lf->zpaths);
	free(lf->read_text);
	free(lf);
}

int lockfile_mode_covers(int held, enum zkl_mode mode)
{
	return held == (int)mode ||
	       (mode == ZKL_MODE_READ && held == ZKL_MODE_WRITE);
}

int lockfile_covers(struct zkl_lockreq *lr, enum zkl_mode mode)
{
	return lockfile_mode_covers(lr ? lockreq_held_mode(lr) : -ENOLCK, mode);
}

enum zkl_mode lockfile_mode(fuse_ino_t ino, enum zkl_mode asked)
{
	return tree_kind_of(ino) == TREE_LEASE ? ZKL_MODE_LEASE : asked;
}

void lockfile_zpath(struct zkl_fs *fs, fuse_ino_t ino,
		    char out[NAMES_MAX_NODE_PATH + 1])
{
	int rc = tree_zpath(tree_res_of(&fs->tree, ino), out,
			    NAMES_MAX_NODE_PATH + 1);

	assert(rc > 0); /* tree_lookup checked its length */
	(void)rc;
}

/* Resolve lf's znode paths (lf->zpaths): a list directory's are its
 * resources', copied into one allocation.  Returns 0 or -errno. */
static int lockfile_resolve_zpaths(struct lockfile *lf)
{
	const char *paths[MULTINAME_MAX_ITEMS];
	size_t bytes;
	char *buf, *names;
	int n;

	lf->zpath_only[0] = lf->zpath;
	lf->zpaths = lf->zpath_only;
	lf->nzpaths = 1;
	if (!lf->multi)
		return 0;
	buf = malloc(TREE_MULTI_BUF);
	if (!buf)
		return -ENOMEM;
	n = tree_multi_zpaths(lf->fs->tree.root.name, lf->res->name, buf,
			      TREE_MULTI_BUF, paths);
	assert(n > 0); /* tree_lookup checked it */
	bytes = (size_t)(paths[n - 1] - buf) + strlen(paths[n - 1]) + 1;
	lf->zpaths = malloc((size_t)n * sizeof(*lf->zpaths) + bytes);
	if (!lf->zpaths) {
		lf->zpaths = lf->zpath_only;
		free(buf);
		return -ENOMEM;
	}
	names = memcpy(lf->zpaths + n, buf, bytes);
	for (int i = 0; i < n; i++)
		lf->zpaths[i] = names + (paths[i] - buf);
	lf->nzpaths = (size_t)n;
	free(buf);
	return 0;
}

int lockfile_new_request(struct lockfile *lf, enum zkl_mode mode,
			 unsigned flags, const void *data, size_t len,
			 lockreq_done_fn done, void *arg,
			 struct zkl_lockreq **out)
{
	struct zkl_fs *fs = lf->fs;

	if (!lf->multi)
		return lockreq_new(fs->session, lf->zpath, mode, flags, data,
				   len, done, arg, out);
	if (mode == ZKL_MODE_LEASE)
		return -EINVAL; /* a list directory has no lease file */
	return lockreq_new_multi(fs->session, lf->zpaths, lf->nzpaths, mode,
				 flags, data, len, done, arg, out);
}

/* ---- the table of fcntl locks ------------------------------------------ */

struct posixlock *posix_find_locked(struct zkl_fs *fs, fuse_ino_t ino,
				    uint64_t owner)
{
	ZKL_ASSERT_HELD(&fs->lock);
	for (struct zkl_link *l = fs->posix_locks.next; l != &fs->posix_locks;
	     l = l->next) {
		struct posixlock *p =
			ZKL_CONTAINER_OF(l, struct posixlock, link);
		if (p->ino == ino && p->owner == owner)
			return p;
	}
	return NULL;
}

void posix_check_locked(struct zkl_fs *fs, const struct posixlock *p)
{
	ZKL_ASSERT_HELD(&fs->lock);
	assert(p->ranges.n > 0 && rangeset_valid(&p->ranges));
	/* Never weaker than asked: the lock holds every range. */
	assert(lockfile_mode_covers(
		(int)lockreq_mode(p->lr),
		lockfile_mode(p->ino, lockfile_mode_of_type(
					      rangeset_type(&p->ranges)))));
	(void)fs;
	(void)p;
}

void posix_free(struct posixlock *p)
{
	rangeset_free(&p->ranges);
	free(p);
}

void posix_take(struct zkl_fs *fs, fuse_ino_t ino, uint64_t owner,
		const struct lockfile *via, struct zkl_link *taken)
{
	struct zkl_link *l, *next;

	pthread_mutex_lock(&fs->lock);
	for (l = fs->posix_locks.next; l != &fs->posix_locks; l = next) {
		struct posixlock *p =
			ZKL_CONTAINER_OF(l, struct posixlock, link);
		next = l->next;
		if (via ? p->via == via : p->ino == ino && p->owner == owner) {
			list_del(&p->link);
			list_add_tail(taken, &p->link);
		}
	}
	pthread_mutex_unlock(&fs->lock);
}

/*
 * The open lock file: open, read, write, fsync, flush and
 * release of write, read and lock (see lockfile.h).
 *
 * An OPEN of write or read is parked (waiter.c) until its lock is granted;
 * an OPEN of lock is answered at once and holds nothing until flock or
 * fcntl (flock.c).
 */
/* Close the open file: drop its lock, the fcntl locks taken through it
 * (POSIX ones are dropped at FLUSH already; open file description locks
 * only here), and the open file's reference. */
static void lockfile_close(struct lockfile *lf)
{
	struct zkl_fs *fs = lf->fs;
	struct zkl_lockreq *held;
	int was_open;

	pthread_mutex_lock(&fs->lock);
	was_open = lf->state != LF_CLOSED;
	lf->state = LF_CLOSED;
	held = lf->held;
	lf->held = NULL;
	pthread_mutex_unlock(&fs->lock);
	/* The deletes are queued before anyone is answered; a later create
	 * by this mount is queued behind them, so nobody can see both. */
	if (held)
		lockreq_release(held);
	posix_drop(fs, 0, 0, lf, NULL);
	if (was_open)
		lockfile_put(lf);
}

/* The kernel's own open for an ioctl (process.h) holds nothing, like
 * an open of `lock`.  Its flags are exactly O_RDONLY; only then is the
 * requesting thread looked at (a 64-bit program's open carries
 * O_LARGEFILE, so the common open costs nothing more). */
static int lockfile_open_is_the_kernels(fuse_req_t req,
					const struct fuse_file_info *fi)
{
	return fi->flags == O_RDONLY &&
	       kernelopen_in_ioctl(fuse_req_ctx(req)->pid);
}

/* Does this open wait for a lock?  Not on `lock`, not the kernel's own
 * open, and on `lease` only an open for writing: flock(1) opens its file
 * read-only (O_CREAT and O_NOCTTY never reach a FUSE daemon), and its -w
 * and -n must govern the wait, which they can only if open() does not
 * wait first.  So `exec 9>lease` takes a lease, and `flock -w 10 lease
 * cmd` takes one by flock(2). */
static int lockfile_open_takes_a_lock(fuse_req_t req, enum tree_kind kind,
				      const struct fuse_file_info *fi)
{
	if (kind == TREE_LOCK)
		return 0;
	if (kind == TREE_LEASE && (fi->flags & O_ACCMODE) == O_RDONLY)
		return 0;
	return !lockfile_open_is_the_kernels(req, fi);
}

static void lockfile_reply_opened(struct lockfile *lf, fuse_req_t req)
{
	int rc;

	lf->fi.fh = (uint64_t)(uintptr_t)lf;
	/* Seekable, as a file whose content is the text a read serves:
	 * Python's buffered modes ('a+', 'r+', 'w+') and seek(0) ask for
	 * lseek, and get the position.  Every read reaches us (direct_io),
	 * and the offset says where in a pass it is (lockfile_read). */
	lf->fi.direct_io = 1;
	lf->fi.keep_cache = 0;
	/* The lock an open takes belongs to its description and ends at
	 * RELEASE; no fcntl lock lives on the file while that lock is held
	 * (fcntl is answered from it), so a close has nothing to report:
	 * spare every close() a FLUSH round trip (Linux >= 5.16).  An open
	 * that takes no lock keeps FLUSH: fcntl locks end at any close. */
	lf->fi.noflush = lf->takes_lock;
	if (lf->is_create)
		rc = fuse_reply_create(req, &lf->entry, &lf->fi);
	else
		rc = fuse_reply_open(req, &lf->fi);
	if (rc < 0) {
		/* The opener is gone and no RELEASE will come. */
		log_msg(LOG_INFO, "opener left before its open was answered");
		fs_create_entry_unused(lf->fs,
				       lf->is_create ? &lf->entry : NULL);
		lockfile_close(lf);
	}
}

static void lockfile_open_granted(struct waiter *w, struct zkl_lockreq *lr)
{
	struct lockfile *lf = w->lf;
	struct zkl_fs *fs = lf->fs;

	pthread_mutex_lock(&fs->lock);
	lf->state = LF_OPEN;
	lf->held = lr;
	lf->holder = w->nlineage ? w->lineage[0] : (struct lineage_proc){ 0 };
	memcpy(lf->identity, w->identity, w->identity_len);
	lf->identity_len = w->identity_len;
	lf->taker = w->taker;
	pthread_mutex_unlock(&fs->lock);
	lockfile_reply_opened(lf, w->req);
}

static void lockfile_open_failed(struct waiter *w, int err)
{
	struct lockfile *lf = w->lf;

	pthread_mutex_lock(&lf->fs->lock);
	lf->state = LF_CLOSED;
	pthread_mutex_unlock(&lf->fs->lock);
	fs_reply_open_err(lf->fs, w->req, lf->is_create ? &lf->entry : NULL,
			  -err);
	lockfile_put(lf); /* the open file's: no RELEASE will come */
}

static const struct waiter_ops lockfile_open_ops = {
	.what = "open",
	.kind = FS_KIND_OPEN,
	.granted = lockfile_open_granted,
	.failed = lockfile_open_failed,
};

void lockfile_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		   const struct fuse_entry_param *create_entry)
{
	struct zkl_fs *fs = fuse_req_userdata(req);
	enum tree_kind kind = tree_kind_of(ino);
	struct lockfile *lf;

	lf = calloc(1, sizeof(*lf));
	if (!lf)
		return fs_reply_open_err(fs, req, create_entry, ENOMEM);
	lf->fs = fs;
	lf->ino = ino;
	lf->res = tree_res_of(&fs->tree, ino);
	lf->multi = lf->res->role == TREE_ROLE_MULTI;
	lockfile_zpath(fs, ino, lf->zpath);
	if (lockfile_resolve_zpaths(lf) < 0) {
		free(lf);
		return fs_reply_open_err(fs, req, create_entry, ENOMEM);
	}
	lf->fi = *fi;
	lf->state = LF_OPENING;
	atomic_init(&lf->refs, 1); /* the open file's */
	if (create_entry) {
		lf->is_create = 1;
		lf->entry = *create_entry;
	}
	pthread_mutex_lock(&fs->lock);
	list_add_tail(&fs->lockfiles, &lf->link);
	pthread_mutex_unlock(&fs->lock);

	lf->takes_lock = lockfile_open_takes_a_lock(req, kind, fi);
	if (!lf->takes_lock) {
		pthread_mutex_lock(&fs->lock);
		lf->state = LF_OPEN;
		pthread_mutex_unlock(&fs->lock);
		return lockfile_reply_opened(lf, req);
	}
	waiter_park(req, &lockfile_open_ops, lf,
		    kind == TREE_WRITE  ? ZKL_MODE_WRITE
		    : kind == TREE_READ ? ZKL_MODE_READ
					: ZKL_MODE_LEASE,
		    (fi->flags & O_NONBLOCK) ? LOCKREQ_TRY : 0, 0, NULL);
}

/* The lock that read() and write() through lf speak of: the open file's
 * own, else the caller's fcntl lock on the file (the kernel names the
 * caller's lock owner in reads and writes), and its taker's identity if
 * `identity` is not NULL.  fs->lock held. */
static struct zkl_lockreq *
lockfile_lock_of_locked(struct lockfile *lf, const struct fuse_file_info *fi,
			const char **identity, size_t *identity_len)
{
	struct posixlock *p = NULL;

	ZKL_ASSERT_HELD(&lf->fs->lock);
	if (!lf->held)
		p = posix_find_locked(lf->fs, lf->ino, fi->lock_owner);
	if (identity) {
		*identity = p ? p->identity : lf->identity;
		*identity_len = p ? p->identity_len : lf->identity_len;
	}
	return lf->held ? lf->held : p ? p->lr : NULL;
}

/*
 * The text of a lock file: the fencing token, then key/value lines, built
 * afresh for each pass.  The file position goes on after each pass, so
 * each pass that reads to end of file starts the text over: `cat` twice
 * shows it twice, and shows what holds now.  A pass starts with a read at
 * or before where the last one ended (after a seek back to the start, for
 * one); its later reads serve the text it started with, so that a reader
 * never sees two texts spliced (a revocation seen between two reads of one
 * pass lengthens it).  The file's content is the text of the pass being
 * read, from the offset where it started (its size, for stat and
 * SEEK_END, is 0).
 */
/* The pass under way has ended: its text goes. */
static void lockfile_pass_end(struct lockfile *lf)
{
	free(lf->read_text);
	lf->read_text = NULL;
	lf->read_len = 0;
}

void lockfile_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	struct lockfile *lf = lockfile_of(fi);
	struct zkl_fs *fs = lf->fs;
	struct zkl_lockreq *lr;
	char *text = NULL;
	size_t n = 0, at;
	int64_t token = 0;
	int err;

	(void)ino; /* lf resolved it at open */

	pthread_mutex_lock(&fs->lock);
	/* Every read looks: a lock lost or let go since the pass began ends
	 * it (EIO, or end of file), even if another is held now (LOCK_UN,
	 * then LOCK_EX between two reads): its text is not this one's. */
	lr = lockfile_lock_of_locked(lf, fi, NULL, NULL);
	err = lr ? lockreq_held_token(lr, &token) : -ENOLCK;
	if (err >= 0 && lf->read_text && off > lf->read_base &&
	    token != lf->read_token)
		err = -ENOLCK;
	else if (err >= 0 && (off <= lf->read_base || !lf->read_text)) {
		lockfile_pass_end(lf);
		if (off < lf->read_base)
			lf->read_base = off;
		lf->read_token = token;
		err = lockfile_text(lf, lr, &lf->read_text, &lf->read_len);
	}
	if (err == -ENOLCK || err == -ENOENT) {
		/* Holds nothing (lock, LOCK_UN), or no more: empty. */
		err = 0;
		lockfile_pass_end(lf);
	}
	at = off >= lf->read_base ? (size_t)(off - lf->read_base) : 0;
	if (err >= 0 && at < lf->read_len) {
		n = lf->read_len - at < size ? lf->read_len - at : size;
		text = malloc(n);
		if (text)
			memcpy(text, lf->read_text + at, n);
		else
			err = -ENOMEM;
	} else {
		/* End of file (the next read starts over), or an error. */
		lockfile_pass_end(lf);
		if (err >= 0)
			lf->read_base = off;
	}
	pthread_mutex_unlock(&fs->lock);
	if (err < 0)
		fs_reply_err(req, -err);
	else
		fuse_reply_buf(req, text, n);
	free(text);
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
	struct zkl_fs *fs = lf->fs;
	char data[IDENTITY_MAX + IDENTITY_NOTE_MAX + 8];
	struct lockfile_write_ctx *ctx;
	const char *identity;
	struct zkl_lockreq *lr;
	size_t len, note = size;
	int err = -ENOLCK;

	(void)ino;
	if (size > IDENTITY_NOTE_MAX)
		return fs_reply_err(req, EFBIG);
	ctx = malloc(sizeof(*ctx));
	if (!ctx)
		return fs_reply_err(req, ENOMEM);
	ctx->req = req;
	ctx->size = size;
	while (note > 0 && buf[note - 1] == '\n')
		note--;
	pthread_mutex_lock(&fs->lock);
	lr = lockfile_lock_of_locked(lf, fi, &identity, &len);
	memcpy(data, identity, len);
	memcpy(data + len, "note ", 5);
	len += 5;
	/* One line per key in the node's data: fold the note's newlines. */
	for (size_t i = 0; i < note; i++)
		data[len++] = buf[i] == '\n' ? ' ' : buf[i];
	data[len++] = '\n';
	if (lr)
		err = lockreq_set_data(lr, data, len, lockfile_noted, ctx);
	/* A read after the write starts the text over, at the token. */
	if (err == 0)
		lf->read_base = off + (off_t)size;
	pthread_mutex_unlock(&fs->lock);
	if (err == -ENOENT) /* released, or never held */
		err = -ENOLCK;
	if (err < 0) {
		free(ctx);
		fs_reply_err(req, -err);
	}
}

void lockfile_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		    struct fuse_file_info *fi)
{
	struct lockfile *lf = lockfile_of(fi);
	int64_t token, session;
	char path[8];
	int err = 0;

	(void)ino;
	(void)datasync;
	pthread_mutex_lock(&lf->fs->lock);
	if (lf->held)
		err = lockreq_describe(lf->held, &token, path, sizeof(path),
				       &session);
	pthread_mutex_unlock(&lf->fs->lock);
	fs_reply_err(req, err == -EIO ? EIO : 0);
}

void lockfile_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct zkl_fs *fs = fuse_req_userdata(req);
	struct zkl_link ending;
	struct unlock *u;
	int holds;

	/* POSIX: any close of the file by a process drops its locks on it,
	 * and close() returns once they are gone for every host.  A wait
	 * the process kept for a restart ends too: it closes instead of
	 * asking again (flock -w, timed out, exits), and its place must be
	 * gone before anything it does next.  Most closes end neither: they
	 * cost nothing more. */
	list_init(&ending);
	pthread_mutex_lock(&fs->lock);
	holds = posix_find_locked(fs, ino, fi->lock_owner) != NULL;
	waiter_take_kept_of_locked(fs, lockfile_of(fi), fuse_req_ctx(req)->pid,
				   &ending);
	pthread_mutex_unlock(&fs->lock);
	if (!holds && list_empty(&ending))
		return (void)fuse_reply_err(req, 0);
	u = unlock_begin(req);
	if (holds)
		posix_drop(fs, ino, fi->lock_owner, NULL, u);
	waiter_end_kept_all_then(&ending, u);
	unlock_reply_when_done(u, req);
}

void lockfile_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	lockfile_close(lockfile_of(fi));
	fuse_reply_err(req, 0);
}

void lockfile_shutdown_all(struct zkl_fs *fs)
{
	pthread_mutex_lock(&fs->lock);
	fs->stopping = 1;
	/* Workers have stopped: only the completion thread races us.  A
	 * grant from now on fails; one on its way is let finish, so that
	 * its lock is in a lock file that the loop below closes. */
	while (fs->granting > 0)
		pthread_cond_wait(&fs->grants_done, &fs->lock);
	pthread_mutex_unlock(&fs->lock);
	waiter_shutdown_all(fs);
	for (;;) {
		struct lockfile *lf = NULL;

		pthread_mutex_lock(&fs->lock);
		for (struct zkl_link *l = fs->lockfiles.next;
		     l != &fs->lockfiles; l = l->next) {
			struct lockfile *c =
				ZKL_CONTAINER_OF(l, struct lockfile, link);
			if (c->state == LF_OPEN) {
				lf = c;
				lockfile_get(lf);
				break;
			}
		}
		pthread_mutex_unlock(&fs->lock);
		if (!lf)
			break;
		lockfile_close(lf);
		lockfile_put(lf);
	}
}

/*
 * What read() on a lock file gives (lockfile.h): the
 * fencing token on the first line, for a multi-lock one line per
 * resource with its token, then the node, the session and the mode.
 */
/* A resource path of a list as the line shows it: bytes that would split
 * or garble the line as \ooo, as holders does. */
static void lockfile_text_name(FILE *out, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c < 0x20 || c == 0x7f || c == '\\')
			fprintf(out, "\\%03o", c);
		else
			fputc(c, out);
	}
}

/* The multi-lock's lines, one per resource, in the order of its list. */
static int lockfile_text_members(FILE *out, const struct tree_res *res,
				 struct zkl_lockreq *lr)
{
	char decoded[256];
	const char *items[MULTINAME_MAX_ITEMS];
	int n = multiname_parse(res->name, decoded, sizeof(decoded), items);

	for (int i = 0; i < n; i++) {
		int64_t token;
		int err = lockreq_member_token(lr, (size_t)i, &token);
		if (err < 0)
			return err;
		lockfile_text_name(out, items[i]);
		fprintf(out, " %" PRId64 "\n", token);
	}
	return n < 0 ? -EIO : 0;
}

int lockfile_text(const struct lockfile *lf, struct zkl_lockreq *lr,
		  char **text, size_t *len)
{
	char path[NAMES_MAX_NODE_PATH + 1];
	int64_t token, session, asked_ms;
	FILE *out;
	int err = lockreq_describe(lr, &token, path, sizeof(path), &session);

	*text = NULL;
	if (err < 0)
		return err;
	out = open_memstream(text, len);
	if (!out)
		return -ENOMEM;
	fprintf(out, "%" PRId64 "\n", token);
	if (lf->multi)
		err = lockfile_text_members(out, lf->res, lr);
	fprintf(out, "node %s\nsession 0x%" PRIx64 "\nmode %s\n", path,
		(uint64_t)session, names_mode_str(lockreq_mode(lr)));
	if (lockreq_revoke_asked(lr, &asked_ms)) {
		/* When this host saw the request, in UTC, ISO 8601. */
		time_t t = (time_t)(asked_ms / 1000);
		struct tm tm;
		char when[32];
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ",
			 gmtime_r(&t, &tm));
		fprintf(out, "revoke requested %s\n", when);
	}
	if (fclose(out) != 0 && err == 0)
		err = -ENOMEM;
	if (err < 0) {
		free(*text);
		*text = NULL;
	}
	return err;
}

/*
 * poll(2) on a lock file: always readable and writable, and
 * POLLPRI once the lock held through it (the description's, or an fcntl
 * lock taken through it) is asked to let go (revoke.h).  The poll handle
 * libfuse gives is kept, one per open file, to wake the poller when that
 * happens (lockfile_notify_revoked).
 */
/* The lock held through lf that was asked to let go, if any.  fs->lock
 * held. */
static int poll_asked_locked(struct zkl_fs *fs, struct lockfile *lf)
{
	int64_t when;

	if (lf->held && lockreq_revoke_asked(lf->held, &when))
		return 1;
	for (struct zkl_link *l = fs->posix_locks.next; l != &fs->posix_locks;
	     l = l->next) {
		struct posixlock *p =
			ZKL_CONTAINER_OF(l, struct posixlock, link);
		if (p->via == lf && lockreq_revoke_asked(p->lr, &when))
			return 1;
	}
	return 0;
}

void lockfile_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		   struct fuse_pollhandle *ph)
{
	struct lockfile *lf = lockfile_of(fi);
	struct zkl_fs *fs = lf->fs;
	struct fuse_pollhandle *old = NULL;
	unsigned revents = POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM;

	(void)ino;
	pthread_mutex_lock(&fs->lock);
	if (poll_asked_locked(fs, lf))
		revents |= POLLPRI;
	if (ph) {
		old = lf->ph;
		lf->ph = ph;
	}
	pthread_mutex_unlock(&fs->lock);
	if (old)
		fuse_pollhandle_destroy(old);
	fuse_reply_poll(req, revents);
}

/* Does lr hold the node at `node`? */
static int poll_holds(struct zkl_lockreq *lr, const char *node)
{
	return lr && lockreq_node_is(lr, node);
}

/* Take up to max poll handles of the files holding the lock at node.
 * fs->lock held. */
static size_t poll_take_locked(struct zkl_fs *fs, const char *node,
			       struct fuse_pollhandle **woken, size_t max)
{
	size_t n = 0;

	for (struct zkl_link *l = fs->lockfiles.next;
	     l != &fs->lockfiles && n < max; l = l->next) {
		struct lockfile *lf =
			ZKL_CONTAINER_OF(l, struct lockfile, link);
		int holds = poll_holds(lf->held, node);
		for (struct zkl_link *k = fs->posix_locks.next;
		     !holds && k != &fs->posix_locks; k = k->next) {
			struct posixlock *p =
				ZKL_CONTAINER_OF(k, struct posixlock, link);
			holds = p->via == lf && poll_holds(p->lr, node);
		}
		if (holds && lf->ph) {
			woken[n++] = lf->ph;
			lf->ph = NULL;
		}
	}
	return n;
}

void lockfile_notify_revoked(struct zkl_fs *fs, const char *node)
{
	struct fuse_pollhandle *woken[16];
	size_t n;

	/* A handle taken is gone from its file: each pass takes new ones. */
	do {
		pthread_mutex_lock(&fs->lock);
		n = poll_take_locked(fs, node, woken, 16);
		pthread_mutex_unlock(&fs->lock);
		for (size_t i = 0; i < n; i++) {
			fuse_lowlevel_notify_poll(woken[i]);
			fuse_pollhandle_destroy(woken[i]);
		}
	} while (n == 16);
}
