/*
 * ops_revoke.c - MOUNT/<resource>/revoke: `echo ask > revoke` asks every
 * holder of the resource, of any tool, to let go; `echo break > revoke`
 * takes their locks away (revoke.h).  Write-only: an open for reading is
 * EACCES.  The write is answered once ZooKeeper has answered every set
 * or delete, so after `echo break > revoke` returns another host can
 * take the lock.
 *
 * Breaking is for root and the mount's owner (-o uid=, else the daemon's
 * own user): anyone else gets EPERM.  Each ask and break is logged with
 * who asked.
 */
#include "fs.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "identity.h"
#include "log.h"
#include "revoke.h"
#include "snapshot.h"

struct revoke_write_ctx {
	struct zkl_fs *fs;
	fuse_req_t req;
	size_t size;
	enum revoke_how how;
	char who[IDENTITY_MAX];
	char dir[];
};

void revoke_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		 const struct fuse_entry_param *create_entry)
{
	struct zkl_fs *fs = fuse_req_userdata(req);

	(void)ino;
	if ((fi->flags & O_ACCMODE) != O_WRONLY)
		return fs_reply_open_err(fs, req, create_entry, EACCES);
	snapshot_answer_open(fs, req, fi, create_entry, NULL, 0);
}

/* The word written, with or without its newline (echo's, printf's). */
static int revoke_parse(const char *buf, size_t size, enum revoke_how *how)
{
	if (size > 0 && buf[size - 1] == '\n')
		size--;
	if (size == 3 && memcmp(buf, "ask", 3) == 0)
		*how = REVOKE_ASK;
	else if (size == 5 && memcmp(buf, "break", 5) == 0)
		*how = REVOKE_BREAK;
	else
		return -EINVAL;
	return 0;
}

static void revoke_done(int err, const struct revoke_result *r, void *arg)
{
	struct revoke_write_ctx *ctx = arg;
	const char *what = ctx->how == REVOKE_ASK ? "asked" : "broke";

	if (err < 0) {
		log_msg(LOG_WARNING, "%s: could not list its holders (%s)",
			ctx->dir, strerror(-err));
		fs_reply_err(ctx->req, -err);
	} else {
		atomic_fetch_add(ctx->how == REVOKE_ASK ? &ctx->fs->asks_sent
							: &ctx->fs->breaks_sent,
				 r->done);
		log_msg(LOG_NOTICE, "%s: %s %zu holder%s (%zu failed), for %s",
			ctx->dir, what, r->done, r->done == 1 ? "" : "s",
			r->failed, ctx->who);
		if (r->failed)
			fs_reply_err(ctx->req, EIO);
		else
			fuse_reply_write(ctx->req, ctx->size);
	}
	free(ctx);
}

void revoke_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		  off_t off)
{
	struct zkl_fs *fs = fuse_req_userdata(req);
	const struct fuse_ctx *fctx = fuse_req_ctx(req);
	char dir[NAMES_MAX_NODE_PATH + 1];
	struct revoke_write_ctx *ctx;
	enum revoke_how how;
	size_t len;
	int err;

	if (off != 0 || revoke_parse(buf, size, &how) < 0)
		return fs_reply_err(req, EINVAL);
	if (how == REVOKE_BREAK && fctx->uid != 0 && fctx->uid != fs->uid) {
		log_msg(LOG_WARNING, "uid %u (pid %d) may not break locks",
			(unsigned)fctx->uid, (int)fctx->pid);
		return fs_reply_err(req, EPERM);
	}
	err = tree_zpath(tree_res_of(&fs->tree, ino), dir, sizeof(dir));
	assert(err > 0); /* tree_lookup checked its length */
	len = (size_t)err;
	ctx = malloc(sizeof(*ctx) + len + 1);
	if (!ctx)
		return fs_reply_err(req, ENOMEM);
	ctx->fs = fs;
	ctx->req = req;
	ctx->size = size;
	ctx->how = how;
	identity_format(ctx->who, sizeof(ctx->who), fs->hostname, fctx->pid,
			fctx->uid);
	/* One line: "host h pid p start s uid u cmd c time t". */
	for (char *p = ctx->who; *p; p++)
		if (*p == '\n')
			*p = ' ';
	memcpy(ctx->dir, dir, len + 1);
	err = revoke_start(fs->session, dir, how, revoke_done, ctx);
	if (err < 0) {
		free(ctx);
		fs_reply_err(req, -err);
	}
}
