/*
 * snapshot.c - reference-counted buffers of open text files and
 * directories (see snapshot.h).
 */
#include "snapshot.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

void snapshot_init(struct snapshot *sn, struct zkl_fs *fs,
		   void (*free_fn)(struct snapshot *))
{
	atomic_init(&sn->refs, 1);
	list_init(&sn->link);
	sn->fs = fs;
	sn->buf = NULL;
	sn->len = 0;
	sn->free_fn = free_fn;
}

void snapshot_answer_open(struct zkl_fs *fs, fuse_req_t req,
			  struct fuse_file_info *fi,
			  const struct fuse_entry_param *create_entry,
			  char *text, size_t len)
{
	struct snapshot *t = malloc(sizeof(*t));
	int rc;

	if (!t) {
		free(text);
		return fs_reply_open_err(fs, req, create_entry, ENOMEM);
	}
	snapshot_init(t, fs, NULL);
	t->buf = text;
	t->len = len;
	fi->fh = (uint64_t)(uintptr_t)t;
	fi->direct_io = 1; /* the size is 0: reads must reach us */
	fi->keep_cache = 0;
	fi->noflush = 1;
	snapshot_opened(t);
	if (create_entry)
		rc = fuse_reply_create(req, create_entry, fi);
	else
		rc = fuse_reply_open(req, fi);
	if (rc < 0) { /* the opener is gone: no RELEASE will come */
		fs_create_entry_unused(fs, create_entry);
		snapshot_release(t);
	}
}

void snapshot_pending_init(struct snapshot_pending *p, struct zkl_fs *fs,
			   fuse_req_t req, const struct fuse_file_info *fi,
			   const struct fuse_entry_param *create_entry)
{
	p->fs = fs;
	p->req = req;
	p->fi = *fi;
	p->is_create = create_entry != NULL;
	if (create_entry)
		p->entry = *create_entry;
}

void snapshot_pending_fail(struct snapshot_pending *p, int err)
{
	fs_reply_open_err(p->fs, p->req, p->is_create ? &p->entry : NULL, -err);
}

void snapshot_pending_answer(struct snapshot_pending *p, char *text, size_t len)
{
	snapshot_answer_open(p->fs, p->req, &p->fi,
			     p->is_create ? &p->entry : NULL, text, len);
}

void snapshot_reply(struct snapshot *sn, fuse_req_t req, size_t off,
		    size_t size)
{
	int before;

	if (off >= sn->len)
		return (void)fuse_reply_buf(req, NULL, 0);
	if (size > sn->len - off)
		size = sn->len - off;
	before = atomic_fetch_add(&sn->refs, 1);
	assert(before > 0); /* the open handle's reference is there */
	(void)before;
	fuse_reply_buf(req, sn->buf + off, size);
	snapshot_put(sn);
}

void snapshot_put(struct snapshot *sn)
{
	int before = atomic_fetch_sub(&sn->refs, 1);

	assert(before > 0);
	if (before == 1) {
		assert(!list_linked(&sn->link));
		free(sn->buf);
		if (sn->free_fn)
			sn->free_fn(sn);
		else
			free(sn);
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
