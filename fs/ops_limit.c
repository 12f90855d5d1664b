/*
 * ops_limit.c - MOUNT/<resource>/limit, the semaphore's N kept in the
 * resource znode's data (limit.h): an open for reading takes the value
 * stored now as its text; a write stores a new one for every host.
 *
 * A write is answered once ZooKeeper has applied it, so after `echo 3 >
 * limit` returns every mount reads 3.  The whole number comes in one
 * write at offset 0 (as echo and printf write it); anything else is
 * EINVAL and changes nothing.
 */
#include "fs.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "limit.h"
#include "log.h"
#include "names.h"
#include "resource.h"
#include "snapshot.h"

struct limit_read_ctx {
	struct snapshot_pending open;
	char dir[];
};

struct limit_write_ctx {
	fuse_req_t req;
	size_t size;
	unsigned n;
	char dir[];
};

/* The resource's znode path into dir (NAMES_MAX_NODE_PATH + 1 bytes). */
static size_t limit_dir(struct zkl_fs *fs, fuse_ino_t ino, char *dir)
{
	int len = tree_zpath(tree_res_of(&fs->tree, ino), dir,
			     NAMES_MAX_NODE_PATH + 1);

	assert(len > 0); /* tree_lookup checked its length */
	return (size_t)len;
}

/* What a read of the stored data says went wrong, as an errno. */
static int limit_errno(const char *dir, int err)
{
	if (err != -EBADMSG)
		return -err;
	log_msg(LOG_WARNING,
		"%s: its data is not a limit (a number from 1 to %u)", dir,
		LIMIT_MAX);
	return EIO;
}

static void limit_got(int err, unsigned n, void *arg)
{
	struct limit_read_ctx *ctx = arg;
	char *text = NULL;

	if (err == 0 && asprintf(&text, "%u\n", n) < 0)
		err = -ENOMEM;
	if (err < 0)
		snapshot_pending_fail(&ctx->open, limit_errno(ctx->dir, err));
	else
		snapshot_pending_answer(&ctx->open, text, strlen(text));
	free(ctx);
}

void limit_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		const struct fuse_entry_param *create_entry)
{
	struct zkl_fs *fs = fuse_req_userdata(req);
	char dir[NAMES_MAX_NODE_PATH + 1];
	size_t len = limit_dir(fs, ino, dir);
	struct limit_read_ctx *ctx;
	int err;

	if ((fi->flags & O_ACCMODE) == O_WRONLY) /* nothing to read */
		return snapshot_answer_open(fs, req, fi, create_entry, NULL, 0);
	ctx = malloc(sizeof(*ctx) + len + 1);
	if (!ctx)
		return fs_reply_open_err(fs, req, create_entry, ENOMEM);
	snapshot_pending_init(&ctx->open, fs, req, fi, create_entry);
	memcpy(ctx->dir, dir, len + 1);
	err = resource_get_limit(fs->session, dir, limit_got, ctx);
	if (err < 0) {
		free(ctx);
		fs_reply_open_err(fs, req, create_entry, -err);
	}
}

static void limit_stored(int err, void *arg)
{
	struct limit_write_ctx *ctx = arg;

	if (err < 0) {
		log_msg(LOG_INFO, "%s: limit %u not stored: %s", ctx->dir,
			ctx->n, strerror(-err));
		fs_reply_err(ctx->req, -err);
	} else {
		log_msg(LOG_INFO, "%s: limit set to %u", ctx->dir, ctx->n);
		fuse_reply_write(ctx->req, ctx->size);
	}
	free(ctx);
}

void limit_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		 off_t off)
{
	struct zkl_fs *fs = fuse_req_userdata(req);
	char dir[NAMES_MAX_NODE_PATH + 1];
	size_t len = limit_dir(fs, ino, dir);
	struct limit_write_ctx *ctx;
	unsigned n;
	int err;

	if (off != 0 || limit_parse(buf, size, 0, &n) < 0)
		return fs_reply_err(req, EINVAL);
	ctx = malloc(sizeof(*ctx) + len + 1);
	if (!ctx)
		return fs_reply_err(req, ENOMEM);
	ctx->req = req;
	ctx->size = size;
	ctx->n = n;
	memcpy(ctx->dir, dir, len + 1);
	err = resource_set_limit(fs->session, dir, n, limit_stored, ctx);
	if (err < 0) {
		free(ctx);
		fs_reply_err(req, -err);
	}
}
