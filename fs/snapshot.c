/*
 * snapshot.c - reference-counted buffers of open text files and
 * directories (see snapshot.h).
 */
#include "snapshot.h"

#include <assert.h>

void snapshot_init(struct snapshot *sn, struct zkl_fs *fs,
		   void (*free_fn)(struct snapshot *))
{
	atomic_init(&sn->refs, 1);
	list_init(&sn->link);
	sn->fs = fs;
	sn->free_fn = free_fn;
}

void snapshot_get(struct snapshot *sn)
{
	int before = atomic_fetch_add(&sn->refs, 1);

	assert(before > 0); /* only a holder of a reference takes another */
	(void)before;
}

void snapshot_put(struct snapshot *sn)
{
	int before = atomic_fetch_sub(&sn->refs, 1);

	assert(before > 0);
	if (before == 1) {
		assert(!list_linked(&sn->link));
		sn->free_fn(sn);
	}
}

void snapshot_opened(struct snapshot *sn)
{
	struct zkl_fs *fs = sn->fs;

	pthread_mutex_lock(&fs->lock);
	assert(!list_linked(&sn->link));
	list_add_tail(&fs->snapshots, &sn->link);
	pthread_mutex_unlock(&fs->lock);
}

void snapshot_release(struct snapshot *sn)
{
	struct zkl_fs *fs = sn->fs;

	pthread_mutex_lock(&fs->lock);
	assert(list_linked(&sn->link)); /* one RELEASE per open */
	list_del(&sn->link);
	pthread_mutex_unlock(&fs->lock);
	snapshot_put(sn);
}

void snapshot_release_all(struct zkl_fs *fs)
{
	for (;;) {
		struct snapshot *sn = NULL;

		pthread_mutex_lock(&fs->lock);
		if (!list_empty(&fs->snapshots)) {
			sn = ZKL_CONTAINER_OF(fs->snapshots.next,
					      struct snapshot, link);
			list_del(&sn->link);
		}
		pthread_mutex_unlock(&fs->lock);
		if (!sn)
			return;
		snapshot_put(sn);
	}
}
