/*
 * flock.c - flock(2) and fcntl(2) locks on the lock files (see lockfile.h
 * for who owns what): taking, converting and releasing them, and F_GETLK.
 */
#include "lockfile.h"
#include "log.h"
#include "lockquery.h"
#include "reentrant.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <syslog.h>

/*
 * flock(2) and fcntl(2) locks on the lock files
 * (see lockfile.h for who owns what).
 *
 * Upgrading a lock (shared to exclusive) drops it and queues anew, as
 * flock(2) documents: a ZooKeeper queue has no in-place upgrade.  A
 * downgrade keeps the lock's place: the read lock replaces the write
 * lock in one transaction (lockreq_start_in_place), so that no writer
 * queued behind gets in between.  An fcntl
 * request through an open file description that holds a lock (from open
 * or flock) is answered from that lock: granted if it covers the request,
 * EDEADLK if not, since queueing would wait for ourselves.
 *
 * An fcntl lock of a byte range locks the whole resource: stronger than
 * asked, never weaker (doc/locks.md).  What its owner holds is the set
 * of its ranges (rangeset.h), by POSIX's rules for an owner's own locks,
 * and one lock that covers them: a write lock while any range is a
 * write range, a read lock or a write lock while all are read ranges,
 * none once the set is empty.  A call of part of the file changes only
 * the set (setlk_decide_locked says why), or fails; one of the whole
 * file converts the lock as flock does; the last range's unlock
 * releases it.  A call that fails or waits in vain leaves the set as it
 * was; an upgrade drops the read lock first, as above.
 */
/* ---- grants ------------------------------------------------------------ */

/* A grant for an open file that was closed meanwhile (only unmount can do
 * that while a lock call is in progress): give it back. */
static void lock_grant_refused(struct waiter *w, struct zkl_lockreq *lr)
{
	lockreq_release(lr);
	fs_reply_err(w->req, EIO);
}

static void flock_granted(struct waiter *w, struct zkl_lockreq *lr)
{
	struct lockfile *lf = w->lf;
	struct zkl_lockreq *old;

	pthread_mutex_lock(&w->fs->lock);
	if (lf->state != LF_OPEN) {
		pthread_mutex_unlock(&w->fs->lock);
		return lock_grant_refused(w, lr);
	}
	/* Another thread's flock on this file may have won meanwhile: the
	 * last grant is the file's lock, as the last call would be. */
	old = lf->held;
	lf->held = lr;
	lf->holder = w->nlineage ? w->lineage[0] : (struct lineage_proc){ 0 };
	memcpy(lf->identity, w->identity, w->identity_len);
	lf->identity_len = w->identity_len;
	lf->taker = w->taker;
	pthread_mutex_unlock(&w->fs->lock);
	if (old)
		lockreq_release(old);
	fuse_reply_err(w->req, 0);
}

/* The ranges owner w->owner holds once w's call is done: its range laid
 * over what the owner holds now (p, or NULL), into *out.  Returns 0 or
 * -ENOLCK (out of memory: fcntl(2)'s answer for a full lock table).
 * fs->lock held, so that nothing the owner's other calls did meanwhile
 * is undone. */
static int posix_ranges_with_locked(const struct waiter *w,
				    const struct posixlock *p,
				    struct rangeset *out)
{
	const struct lockrange *r = &w->range;

	assert(r->type == F_RDLCK || r->type == F_WRLCK);
	return rangeset_applied(p ? &p->ranges : NULL, r->start, r->end,
				r->type, out) < 0
		       ? -ENOLCK
		       : 0;
}

/* The grant of an fcntl call: its owner holds its range (w->range) over
 * what it holds, with this lock or the one it had, whichever is the
 * stronger. */
static void posix_granted(struct waiter *w, struct zkl_lockreq *lr)
{
	struct zkl_fs *fs = w->fs;
	struct posixlock *p, *fresh = calloc(1, sizeof(*fresh));
	struct rangeset both = RANGESET_EMPTY;
	struct zkl_lockreq *old = NULL;

	if (!fresh) {
		lockreq_release(lr);
		return fs_reply_err(w->req, ENOLCK);
	}
	pthread_mutex_lock(&fs->lock);
	if (w->lf->state != LF_OPEN) {
		pthread_mutex_unlock(&fs->lock);
		free(fresh);
		return lock_grant_refused(w, lr);
	}
	/* Another call of the owner's may have been granted meanwhile, or
	 * changed its ranges: this call's range goes over them, under the
	 * stronger lock of the two (so that it holds them all). */
	p = posix_find_locked(fs, w->lf->ino, w->owner);
	if (posix_ranges_with_locked(w, p, &both) < 0) {
		pthread_mutex_unlock(&fs->lock);
		free(fresh);
		lockreq_release(lr);
		return fs_reply_err(w->req, ENOLCK);
	}
	if (p) {
		rangeset_free(&p->ranges);
		old = p->lr;
	} else {
		p = fresh;
		fresh = NULL;
		p->ino = w->lf->ino;
		p->owner = w->owner;
		list_add_tail(&fs->posix_locks, &p->link);
	}
	rangeset_move(&p->ranges, &both);
	if (old &&
	    !lockfile_mode_covers((int)lockreq_mode(lr), lockreq_mode(old))) {
		old = lr; /* the lock held is the stronger: it stays */
	} else {
		p->lr = lr;
		p->holder = w->nlineage ? w->lineage[0]
					: (struct lineage_proc){ 0 };
		p->via = w->lf;
		memcpy(p->identity, w->identity, w->identity_len);
		p->identity_len = w->identity_len;
		p->taker = w->taker;
	}
	posix_check_locked(fs, p);
	pthread_mutex_unlock(&fs->lock);
	free(fresh);
	if (old)
		lockreq_release(old);
	fuse_reply_err(w->req, 0);
}

/* flock locks belong to the open file description. */
static struct zkl_lockreq *flock_holder_lock(const struct waiter *w)
{
	return w->lf->state == LF_OPEN ? w->lf->held : NULL;
}

static struct zkl_lockreq *flock_holder_drop(const struct waiter *w)
{
	struct zkl_lockreq *old = w->lf->held;

	w->lf->held = NULL;
	return old;
}

/* fcntl locks belong to the lock owner, on the file. */
static struct zkl_lockreq *posix_holder_lock(const struct waiter *w)
{
	struct posixlock *p = posix_find_locked(w->fs, w->lf->ino, w->owner);

	return p ? p->lr : NULL;
}

/* Another call of the owner's was granted while this one waited, with a
 * lock that covers this one: the owner holds this call's range too. */
static int posix_holder_answered(struct waiter *w)
{
	struct posixlock *p = posix_find_locked(w->fs, w->lf->ino, w->owner);
	struct rangeset both;

	assert(p); /* its lock answered w */
	if (posix_ranges_with_locked(w, p, &both) < 0)
		return -ENOLCK;
	rangeset_free(&p->ranges);
	rangeset_move(&p->ranges, &both);
	posix_check_locked(w->fs, p);
	return 0;
}

static const struct waiter_ops flock_ops = {
	.what = "flock",
	.kind = FS_KIND_FLOCK,
	.granted = flock_granted,
	.holder_lock_locked = flock_holder_lock,
	.holder_drop_locked = flock_holder_drop,
};

static const struct waiter_ops posix_ops = {
	.what = "fcntl",
	.kind = FS_KIND_FCNTL,
	.granted = posix_granted,
	.holder_lock_locked = posix_holder_lock,
	.holder_answered_locked = posix_holder_answered,
};

/* ---- flock(2) ---------------------------------------------------------- */

/* From the lock held to the mode asked: how?  DOWNGRADE_KEEP: held that
 * way already, or a write lock that has other owners too (-o reentrant),
 * so it stays, covering the read asked.  From a write lock to a read
 * lock, in place, the read lock taking the write lock's place in the
 * queue (lockreq_start_in_place): DOWNGRADE_IN_PLACE.
 * DOWNGRADE_TRY_FAILS: a try while the connection is down, which fails
 * and keeps the lock, as a local downgrade never loses it.  Else
 * DOWNGRADE_OLD_WAY (an upgrade, a multi-lock, a lost lock): as flock(2)
 * converts.  One look at the lock (lockreq_place_to_take). */
enum downgrade {
	DOWNGRADE_OLD_WAY,
	DOWNGRADE_IN_PLACE,
	DOWNGRADE_KEEP,
	DOWNGRADE_TRY_FAILS,
};

static enum downgrade downgrade_how(struct zkl_lockreq *old, enum zkl_mode mode,
				    unsigned flags)
{
	if (!old)
		return DOWNGRADE_OLD_WAY;
	switch (lockreq_place_to_take(old, mode)) {
	case 1:
		return DOWNGRADE_KEEP;
	case 0:
		return DOWNGRADE_IN_PLACE;
	case -EBUSY:
		return DOWNGRADE_KEEP;
	case -EAGAIN: /* a blocking one waits for the connection */
		return (flags & LOCKREQ_TRY) ? DOWNGRADE_TRY_FAILS
					     : DOWNGRADE_IN_PLACE;
	default:
		return DOWNGRADE_OLD_WAY;
	}
}

void lockfile_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		    int op)
{
	struct lockfile *lf = lockfile_of(fi);
	struct zkl_fs *fs = lf->fs;
	int how = op & (LOCK_SH | LOCK_EX | LOCK_UN);
	enum zkl_mode mode = lockfile_mode(ino, how == LOCK_EX ? ZKL_MODE_WRITE
							       : ZKL_MODE_READ);
	unsigned flags = (op & LOCK_NB) ? LOCKREQ_TRY : 0;
	enum downgrade down = DOWNGRADE_OLD_WAY;
	struct zkl_lockreq *old;
	struct unlock *u;

	pthread_mutex_lock(&fs->lock);
	old = lf->held;
	/* Kept if held that way already: flock(1) on write or read, or
	 * LOCK_SH then LOCK_EX on a lease. */
	if (how != LOCK_UN)
		down = downgrade_how(old, mode, flags);
	/* LOCK_UN, or a conversion: the old lock goes first, and for every
	 * session (waiter.c); a downgrade passes it to the new request. */
	if (down == DOWNGRADE_OLD_WAY || down == DOWNGRADE_IN_PLACE)
		lf->held = NULL;
	pthread_mutex_unlock(&fs->lock);
	if (down == DOWNGRADE_KEEP)
		return fs_reply_err(req, 0);
	if (down == DOWNGRADE_TRY_FAILS)
		return fs_reply_err(req, EWOULDBLOCK);
	if (!old && how == LOCK_UN)
		return fs_reply_err(req, 0);
	if (!old)
		return waiter_park(req, &flock_ops, lf, mode, flags, 0, NULL);
	if (down == DOWNGRADE_IN_PLACE) /* never a try: nobody blocks it */
		return waiter_park_in_place(req, &flock_ops, lf, mode, 0, 0,
					    NULL, old);
	u = unlock_begin(req);
	unlock_add(u, old);
	if (how == LOCK_UN)
		return unlock_reply_when_done(u, req);
	unlock_park_when_done(u, req, &flock_ops, lf, mode, flags, 0, NULL);
}

/* ---- fcntl(2) ---------------------------------------------------------- */

/* What an fcntl call does, decided under fs->lock (setlk_decide_locked). */
enum setlk_step {
	SETLK_ANSWERED, /* the answer is known (the table changed, if at all) */
	SETLK_RELEASE,  /* the owner's last range went: its lock goes */
	SETLK_QUEUE,    /* a lock to queue (the old one goes first, if any) */
	SETLK_IN_PLACE, /* a downgrade: a read lock in the write lock's place */
};

static int range_is_whole_file(const struct lockrange *range)
{
	return range->start == 0 && range->end == RANGESET_EOF;
}

/* A write range asked over read ranges: refused, and said (at most every
 * 10 s), since EDEADLK alone does not say what to do instead. */
static void setlk_say_no_partial_upgrade(fuse_req_t req,
					 const struct lockfile *lf,
					 const struct lockrange *range)
{
	static atomic_llong said_at;

	if (log_due(&said_at, 10))
		log_msg(LOG_NOTICE,
			"pid %d asked an fcntl write lock of bytes %" PRId64
			" to %" PRId64 " of %s while its lock of the file is "
			"a read lock: zklockfs turns a read lock into a write "
			"lock only for the whole file (start 0, length 0), so "
			"the call fails with EDEADLK (it would wait for its "
			"own read lock)",
			(int)fuse_req_ctx(req)->pid, range->start, range->end,
			lf->zpath);
}

/* The call's step for lf's owner `owner`: a lock or unlock of `range`,
 * a try unless `sleep`.  The mode of the lock to take into *mode (QUEUE,
 * IN_PLACE), the answer into *err (ANSWERED), and the owner's entry,
 * taken off the table, into *gone (RELEASE, IN_PLACE, and QUEUE where
 * it held a lock): nobody else sees it from now on.  fs->lock held.
 *
 * Only a call of the whole file changes the owner's lock in place of
 * another (converts it): its ranges after it are that one range,
 * whatever the owner held, so that the conversion's grant depends on
 * nothing another call of the owner can change meanwhile (a thread's
 * unlock, another's range).  A range's call never converts: it is
 * answered from the lock held (which a read lock cannot do for a write
 * range: EDEADLK), and an unlock keeps the lock it leaves (a write lock
 * where only read ranges stay), stronger than needed, never weaker.
 * Over a lock lost, any lock call is queued anew for its own range: the
 * lost lock's ranges went with it (its holder was told). */
static enum setlk_step setlk_decide_locked(fuse_req_t req, struct lockfile *lf,
					   uint64_t owner,
					   const struct lockrange *range,
					   int sleep, enum zkl_mode *mode,
					   struct posixlock **gone, int *err)
{
	struct zkl_fs *fs = lf->fs;
	struct rangeset after = RANGESET_EMPTY;
	enum downgrade down;
	struct posixlock *p;
	short want;
	int held;

	ZKL_ASSERT_HELD(&fs->lock);
	*err = 0;
	held = lf->held ? lockreq_held_mode(lf->held) : -ENOLCK;
	if (range->type != F_UNLCK && held >= 0) {
		/* Through a description that holds a lock: answered from it
		 * (see the top), whatever the range. */
		*mode = lockfile_mode(lf->ino,
				      lockfile_mode_of_type(range->type));
		*err = lockfile_mode_covers(held, *mode) ? 0 : -EDEADLK;
		return SETLK_ANSWERED;
	}
	p = posix_find_locked(fs, lf->ino, owner);
	if (!p) {
		*mode = lockfile_mode(lf->ino,
				      lockfile_mode_of_type(range->type));
		return range->type == F_UNLCK ? SETLK_ANSWERED : SETLK_QUEUE;
	}
	/* An unlock of every range held needs no memory: a whole-file
	 * F_UNLCK, what every program's unlock is, never fails. */
	if ((range->type != F_UNLCK || !rangeset_within(&p->ranges, range)) &&
	    rangeset_applied(&p->ranges, range->start, range->end, range->type,
			     &after) < 0) {
		*err = -ENOLCK; /* what it held, kept */
		return SETLK_ANSWERED;
	}
	want = rangeset_type(&after);
	if (want == F_UNLCK) {
		list_del(&p->link);
		*gone = p;
		return SETLK_RELEASE;
	}
	*mode = lockfile_mode(lf->ino, lockfile_mode_of_type(want));
	held = lockreq_held_mode(p->lr);
	if (range->type == F_UNLCK) {
		down = DOWNGRADE_KEEP; /* the lock it has covers what stays */
	} else if (range_is_whole_file(range) || held < 0) {
		/* As flock converts (a lock lost is queued anew). */
		down = downgrade_how(p->lr, *mode, sleep ? 0 : LOCKREQ_TRY);
	} else if (lockfile_mode_covers(held, *mode)) {
		down = DOWNGRADE_KEEP;
	} else {
		rangeset_free(&after);
		setlk_say_no_partial_upgrade(req, lf, range);
		*err = -EDEADLK; /* the read lock and its ranges kept */
		return SETLK_ANSWERED;
	}
	switch (down) {
	case DOWNGRADE_KEEP:
		rangeset_free(&p->ranges);
		rangeset_move(&p->ranges, &after);
		posix_check_locked(fs, p);
		return SETLK_ANSWERED;
	case DOWNGRADE_TRY_FAILS:
		rangeset_free(&after);
		*err = -EAGAIN; /* the lock and the ranges kept */
		return SETLK_ANSWERED;
	case DOWNGRADE_IN_PLACE:
	case DOWNGRADE_OLD_WAY:
		break;
	}
	/* The owner is to hold the call's range alone (whole file, or a
	 * lock lost, which took the owner's ranges with it), with the lock
	 * that range needs. */
	rangeset_free(&after);
	*mode = lockfile_mode(lf->ino, lockfile_mode_of_type(range->type));
	list_del(&p->link);
	*gone = p;
	return down == DOWNGRADE_IN_PLACE ? SETLK_IN_PLACE : SETLK_QUEUE;
}

void lockfile_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		    struct flock *lock, int sleep)
{
	struct lockfile *lf = lockfile_of(fi);
	struct zkl_fs *fs = lf->fs;
	enum zkl_mode mode = ZKL_MODE_READ;
	struct posixlock *gone = NULL;
	struct zkl_lockreq *from;
	struct lockrange range;
	enum setlk_step step;
	struct unlock *u;
	int err;

	(void)ino; /* lf's */
	err = rangeset_range_of(lock, &range);
	if (err < 0)
		return fs_reply_err(req, -err);
	if (!range_is_whole_file(&range))
		log_msg(LOG_DEBUG,
			"pid %d: fcntl %s of bytes %" PRId64 " to %" PRId64
			" on %s: the whole resource's lock",
			(int)fuse_req_ctx(req)->pid,
			range.type == F_UNLCK   ? "unlock"
			: range.type == F_RDLCK ? "read lock"
						: "write lock",
			range.start, range.end, lf->zpath);
	pthread_mutex_lock(&fs->lock);
	step = setlk_decide_locked(req, lf, fi->lock_owner, &range, sleep,
				   &mode, &gone, &err);
	pthread_mutex_unlock(&fs->lock);
	switch (step) {
	case SETLK_ANSWERED:
		assert(!gone);
		return fs_reply_err(req, -err);
	case SETLK_RELEASE:
		u = unlock_begin(req);
		unlock_add(u, gone->lr);
		posix_free(gone);
		return unlock_reply_when_done(u, req);
	case SETLK_IN_PLACE: /* never a try: nobody can block it */
		from = gone->lr;
		posix_free(gone);
		return waiter_park_in_place(req, &posix_ops, lf, mode, 0,
					    fi->lock_owner, &range, from);
	case SETLK_QUEUE:
		break;
	}
	assert(range.type != F_UNLCK); /* an unlock never queues */
	if (!gone)
		return waiter_park(req, &posix_ops, lf, mode,
				   sleep ? 0 : LOCKREQ_TRY, fi->lock_owner,
				   &range);
	/* A conversion drops the old lock first (see the top). */
	u = unlock_begin(req);
	unlock_add(u, gone->lr);
	posix_free(gone);
	unlock_park_when_done(u, req, &posix_ops, lf, mode,
			      sleep ? 0 : LOCKREQ_TRY, fi->lock_owner, &range);
}

/*
 * fcntl(2)'s F_GETLK on the lock files: who would block a
 * lock of this mode, asked of ZooKeeper (lockquery.h), our own locks
 * left out (see lockfile.h for who owns what).
 */
/* An F_GETLK in flight: the resources to ask about, one after the other
 * (several for a list directory's lock file, where the first resource
 * that blocks answers), and the tags to skip. */
struct getlk_query {
	fuse_req_t req;
	struct zkl_fs *fs;
	struct flock lock;
	enum zkl_mode mode;
	const char *skip[LOCKQUERY_MAX_SKIP];
	size_t nskip;
	char guids[LOCKQUERY_MAX_SKIP][NAMES_GUID_LEN + 1];
	struct lockfile *lf; /* referenced: its zpaths are asked about */
	size_t next;
};

static void getlk_answered(int err, const struct lockquery_answer *a,
			   void *arg);

/* Ask about the next resource.  Returns 0 (the answer comes) or -errno. */
static int getlk_ask_next(struct getlk_query *q)
{
	return lockquery_start(q->fs->session, q->lf->zpaths[q->next++],
			       q->mode, q->skip, q->nskip, getlk_answered, q);
}

/* F_GETLK's l_pid: the blocking holder's pid if it is on this host and
 * still runs (the kernel maps it into the caller's namespace), else 0.
 * It still runs if its pid has the start time the node records: never a
 * process that took a gone holder's pid since. */
static pid_t getlk_local_pid(struct zkl_fs *fs, const char *data, size_t len)
{
	struct lineage_proc holder;
	char host[256];

	if (!data || identity_get(data, len, "host", host, sizeof(host)) < 0 ||
	    strcmp(host, fs->hostname) != 0 ||
	    identity_holder(data, len, &holder) < 0 ||
	    !lineage_still_runs(holder))
		return 0;
	return holder.pid;
}

static void getlk_answered(int err, const struct lockquery_answer *a, void *arg)
{
	struct getlk_query *q = arg;

	if (err == 0 && !a->blocked && q->next < q->lf->nzpaths) {
		err = getlk_ask_next(q);
		if (err == 0)
			return;
	}
	if (err < 0) {
		fs_reply_err(q->req, -err);
	} else {
		q->lock.l_type = F_UNLCK;
		if (a->blocked) {
			/* A lease excludes like a write lock, to a
			 * lease request. */
			q->lock.l_type = a->mode == ZKL_MODE_READ ? F_RDLCK
								  : F_WRLCK;
			q->lock.l_pid =
				getlk_local_pid(q->fs, a->data, a->datalen);
			/* ... over the whole file, whatever range was
			 * asked about. */
			q->lock.l_whence = SEEK_SET;
			q->lock.l_start = 0;
			q->lock.l_len = 0;
		}
		fuse_reply_lock(q->req, &q->lock);
	}
	lockfile_put(q->lf);
	free(q);
}

void lockfile_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		    struct flock *lock)
{
	struct lockfile *lf = lockfile_of(fi);
	struct zkl_fs *fs = lf->fs;
	enum zkl_mode mode =
		lockfile_mode(ino, lockfile_mode_of_type(lock->l_type));
	struct zkl_lockreq *mine[LOCKQUERY_MAX_SKIP], *again;
	struct lineage_proc lineage[LINEAGE_MAX];
	size_t nlineage = 0;
	struct getlk_query *q;
	struct posixlock *p;
	int covered, err;

	/* Of a range as of the whole file: any lock locks the whole
	 * resource. */
	q = malloc(sizeof(*q));
	if (!q)
		return fs_reply_err(req, ENOMEM);
	q->req = req;
	q->fs = fs;
	q->lock = *lock;
	q->mode = mode;
	q->nskip = 0;
	q->next = 0;
	/* -o reentrant: a lock the caller's process tree holds, and would
	 * take again, blocks nothing (reentrant.h). */
	if (fs->reentrant)
		nlineage = lineage_of(fuse_req_ctx(req)->pid, lineage,
				      LINEAGE_MAX);
	/* Our own locks never conflict with our own test, unless others
	 * hold them too (-o reentrant). */
	pthread_mutex_lock(&fs->lock);
	p = posix_find_locked(fs, ino, fi->lock_owner);
	mine[0] = lf->held;
	mine[1] = p ? p->lr : NULL;
	covered = lockfile_covers(mine[0], mode) ||
		  lockfile_covers(mine[1], mode) ||
		  (nlineage && reentrant_find_locked(lf, mode, lineage,
						     nlineage, &again) > 0);
	for (size_t k = 0; k < LOCKQUERY_MAX_SKIP; k++) {
		if (!mine[k] || lockreq_owners(mine[k]) > 1)
			continue;
		memcpy(q->guids[q->nskip], lockreq_guid(mine[k]),
		       sizeof(q->guids[0]));
		q->skip[q->nskip] = q->guids[q->nskip];
		q->nskip++;
	}
	pthread_mutex_unlock(&fs->lock);
	if (covered) {
		free(q);
		lock->l_type = F_UNLCK;
		return (void)fuse_reply_lock(req, lock);
	}
	q->lf = lf;
	lockfile_get(lf);
	err = getlk_ask_next(q);
	if (err < 0)
		getlk_answered(err, NULL, q);
}
