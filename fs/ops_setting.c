/*
 * ops_setting.c - a resource's settings, one number each, kept in
 * ZooKeeper for every host: MOUNT/<resource>/limit, the semaphore's N in
 * the resource znode's data (limit.h), and MOUNT/<resource>/maxhold, how
 * long a mount's holder may keep it, in the base's table (maxhold.h).  An
 * open for reading takes the value stored now as its text; a write stores
 * a new one.
 *
 * A write is answered once ZooKeeper has applied it, so after `echo 3 >
 * limit` returns every mount reads 3.  The whole number comes in one
 * write at offset 0 (as echo and printf write it); anything else is
 * EINVAL and changes nothing.  A hold limit takes other users' locks
 * away, as `echo break > revoke` does: only root and the mount's owner
 * (-o uid=) may set one, anyone else gets EPERM.
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
#include "maxhold.h"
#include "names.h"
#include "resource.h"
#include "snapshot.h"

typedef void (*setting_got_fn)(int err, unsigned value, void *arg);
typedef void (*setting_stored_fn)(int err, void *arg);

/* What tells one setting from another. */
struct setting {
	const char *name; /* its file's, for the log */
	int owner_only;   /* only root and the mount's owner may set it */
	int (*parse)(const char *buf, size_t len, unsigned *value);
	int (*get)(struct zkl_session *s, const char *dir, setting_got_fn cb,
		   void *arg);
	int (*store)(struct zkl_session *s, const char *dir, unsigned value,
		     setting_stored_fn cb, void *arg);
};

/* What a user writes to limit: nothing is refused as "never set". */
static int setting_parse_limit(const char *buf, size_t len, unsigned *n)
{
	return limit_parse(buf, len, 0, n);
}

static const struct setting setting_limit = {
	.name = "limit",
	.parse = setting_parse_limit,
	.get = resource_get_limit,
	.store = resource_set_limit,
};

static const struct setting setting_maxhold = {
	.name = "maxhold",
	.owner_only = 1, /* a limit breaks other users' locks */
	.parse = maxhold_parse_value,
	.get = maxhold_read,
	.store = maxhold_store,
};

static const struct setting *setting_of(fuse_ino_t ino)
{
	assert(tree_kind_of(ino) == TREE_LIMIT ||
	       tree_kind_of(ino) == TREE_MAXHOLD);
	return tree_kind_of(ino) == TREE_LIMIT ? &setting_limit
					       : &setting_maxhold;
}

struct setting_read_ctx {
	struct snapshot_pending open;
	char dir[];
};

struct setting_write_ctx {
	fuse_req_t req;
	const struct setting *setting;
	size_t size;
	unsigned value;
	char dir[];
};

/* The resource's znode path into dir (NAMES_MAX_NODE_PATH + 1 bytes). */
static size_t setting_dir(struct zkl_fs *fs, fuse_ino_t ino, char *dir)
{
	int len = tree_zpath(tree_res_of(&fs->tree, ino), dir,
			     NAMES_MAX_NODE_PATH + 1);

	assert(len > 0); /* tree_lookup checked its length */
	return (size_t)len;
}

/* What a read of the stored data says went wrong, as an errno. */
static int setting_errno(const char *dir, int err)
{
	if (err != -EBADMSG)
		return -err;
	log_msg(LOG_WARNING,
		"%s: its data is not a limit (a number from 1 to %u)", dir,
		LIMIT_MAX);
	return EIO;
}

static void setting_got(int err, unsigned value, void *arg)
{
	struct setting_read_ctx *ctx = arg;
	char *text = NULL;

	if (err == 0 && asprintf(&text, "%u\n", value) < 0)
		err = -ENOMEM;
	if (err < 0)
		snapshot_pending_fail(&ctx->open, setting_errno(ctx->dir, err));
	else
		snapshot_pending_answer(&ctx->open, text, strlen(text));
	free(ctx);
}

void setting_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		  const struct fuse_entry_param *create_entry)
{
	struct zkl_fs *fs = fuse_req_userdata(req);
	char dir[NAMES_MAX_NODE_PATH + 1];
	size_t len = setting_dir(fs, ino, dir);
	struct setting_read_ctx *ctx;
	int err;

	if ((fi->flags & O_ACCMODE) == O_WRONLY) /* nothing to read */
		return snapshot_answer_open(fs, req, fi, create_entry, NULL, 0);
	ctx = malloc(sizeof(*ctx) + len + 1);
	if (!ctx)
		return fs_reply_open_err(fs, req, create_entry, ENOMEM);
	snapshot_pending_init(&ctx->open, fs, req, fi, create_entry);
	memcpy(ctx->dir, dir, len + 1);
	err = setting_of(ino)->get(fs->session, dir, setting_got, ctx);
	if (err < 0) {
		free(ctx);
		fs_reply_open_err(fs, req, create_entry, -err);
	}
}

static void setting_stored(int err, void *arg)
{
	struct setting_write_ctx *ctx = arg;

	if (err < 0) {
		log_msg(LOG_INFO, "%s: %s %u not stored: %s", ctx->dir,
			ctx->setting->name, ctx->value, strerror(-err));
		fs_reply_err(ctx->req, -err);
	} else {
		log_msg(LOG_INFO, "%s: %s set to %u", ctx->dir,
			ctx->setting->name, ctx->value);
		fuse_reply_write(ctx->req, ctx->size);
	}
	free(ctx);
}

void setting_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		   off_t off)
{
	struct zkl_fs *fs = fuse_req_userdata(req);
	const struct setting *setting = setting_of(ino);
	const struct fuse_ctx *fctx = fuse_req_ctx(req);
	char dir[NAMES_MAX_NODE_PATH + 1];
	size_t len = setting_dir(fs, ino, dir);
	struct setting_write_ctx *ctx;
	unsigned value;
	int err;

	if (off != 0 || setting->parse(buf, size, &value) < 0)
		return fs_reply_err(req, EINVAL);
	if (setting->owner_only && fctx->uid != 0 && fctx->uid != fs->uid) {
		log_msg(LOG_WARNING, "uid %u (pid %d) may not set %s",
			(unsigned)fctx->uid, (int)fctx->pid, setting->name);
		return fs_reply_err(req, EPERM);
	}
	ctx = malloc(sizeof(*ctx) + len + 1);
	if (!ctx)
		return fs_reply_err(req, ENOMEM);
	ctx->req = req;
	ctx->setting = setting;
	ctx->size = size;
	ctx->value = value;
	memcpy(ctx->dir, dir, len + 1);
	err = setting->store(fs->session, dir, value, setting_stored, ctx);
	if (err < 0) {
		free(ctx);
		fs_reply_err(req, -err);
	}
}
