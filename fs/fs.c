/*
 * fs.c - the daemon's context (fs.h): the parts that exist before any
 * option is read, and the one way an errno goes back to the kernel.
 */
#include "fs.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "identity.h"
#include "log.h"

/* The parts of struct zkl_fs that exist before any option is read and
 * outlive every other part: its lock, its lists, its conditions. */
void fs_context_init(struct zkl_fs *fs)
{
	memset(fs, 0, sizeof(*fs));
	pthread_mutex_init(&fs->lock, NULL);
	pthread_cond_init(&fs->signal_poll, NULL);
	pthread_cond_init(&fs->grants_done, NULL);
	pthread_cond_init(&fs->deadlock_wake, NULL);
	list_init(&fs->deadlock_due);
	list_init(&fs->lockfiles);
	list_init(&fs->waiters);
	list_init(&fs->kept);
	list_init(&fs->failing);
	list_init(&fs->unlocks);
	list_init(&fs->posix_locks);
	list_init(&fs->snapshots);
}

void fs_context_destroy(struct zkl_fs *fs)
{
	/* snapshot_release_all ran, or no snapshot was ever made. */
	assert(list_empty(&fs->snapshots));
	free(fs->mountpoint);
	pthread_cond_destroy(&fs->signal_poll);
	pthread_cond_destroy(&fs->grants_done);
	pthread_cond_destroy(&fs->deadlock_wake);
	pthread_mutex_destroy(&fs->lock);
}

void fs_reply_err(fuse_req_t req, int err)
{
	if (err <= 0 || err >= 512)
		err = err == 0 ? 0 : EIO;
	fuse_reply_err(req, err);
}

/* Is this refusal one of the first FS_REFUSALS_LOGGED of its minute (60
 * s from the first refusal logged)?  The first of a new minute says how
 * many the last one left out.  A cold path: under fs->lock. */
static int fs_refusal_logged(struct zkl_fs *fs)
{
	struct timespec now;
	unsigned left_out = 0;
	int logged;

	clock_gettime(CLOCK_MONOTONIC, &now);
	pthread_mutex_lock(&fs->lock);
	if (fs->refusals_this_minute == 0 ||
	    now.tv_sec - fs->refusal_minute_from >= 60) {
		if (fs->refusals_this_minute > FS_REFUSALS_LOGGED)
			left_out =
				fs->refusals_this_minute - FS_REFUSALS_LOGGED;
		fs->refusal_minute_from = now.tv_sec;
		fs->refusals_this_minute = 0;
	}
	logged = fs->refusals_this_minute++ < FS_REFUSALS_LOGGED;
	if (fs->refusals_this_minute == FS_REFUSALS_LOGGED + 1)
		log_msg(LOG_WARNING,
			"more refused changes this minute: counted "
			"(.status refusals), not logged");
	pthread_mutex_unlock(&fs->lock);
	if (left_out)
		log_msg(LOG_WARNING,
			"%u more refused changes were not logged in the "
			"minute before",
			left_out);
	return logged;
}

int fs_may_change(struct zkl_fs *fs, fuse_req_t req, const char *what, int err)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	char who[128];

	if (ctx->uid == 0 || ctx->uid == fs->uid)
		return 0;
	atomic_fetch_add(&fs->refusals, 1);
	if (!fs_refusal_logged(fs))
		return -err;
	identity_for_log(who, sizeof(who), ctx->pid, ctx->uid);
	log_msg(LOG_WARNING,
		"%s refused to %s: only root and the mount's owner (uid %u) "
		"may",
		who, what, (unsigned)fs->uid);
	return -err;
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
