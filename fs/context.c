/*
 * context.c - the parts of struct zkl_fs that exist before any option is
 * read and outlive every other part: its lock, its lists, its condition.
 */
#include "fs.h"

#include <stdlib.h>

#include <assert.h>
#include <string.h>

void fs_context_init(struct zkl_fs *fs)
{
	memset(fs, 0, sizeof(*fs));
	pthread_mutex_init(&fs->lock, NULL);
	pthread_cond_init(&fs->signal_poll, NULL);
	pthread_cond_init(&fs->grants_done, NULL);
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
	pthread_mutex_destroy(&fs->lock);
}
