/*
 * ops_dir.c - the namespace: lookup, attributes, directories, and the
 * operations a lock filesystem refuses.  Also the operation table.
 */
#include "fs.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "log.h"
#include "names.h"
#include "resource.h"
#include "snapshot.h"
#include "znodename.h"

/* readdir's d_ino for entries whose inode exists only after a lookup
 * (the value libfuse's high-level API uses). */
#define FS_UNKNOWN_INO 0xffffffffu

void fs_reply_err(fuse_req_t req, int err)
{
	if (err <= 0 || err >= 512)
		err = err == 0 ? 0 : EIO;
	fuse_reply_err(req, err);
}

void fs_fill_attr(struct zkl_fs *fs, fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	if (tree_kind_of(ino) == TREE_DIR) {
		st->st_mode = S_IFDIR | fs->dir_mode;
		st->st_nlink = 2;
	} else if (tree_kind_is_info(tree_kind_of(ino))) {
		st->st_mode = S_IFREG | (fs->file_mode & 0444);
		st->st_nlink = 1;
	} else {
		st->st_mode = S_IFREG | fs->file_mode;
		st->st_nlink = 1;
	}
}

static int fs_entry(struct zkl_fs *fs, fuse_ino_t parent, const char *name,
		    struct fuse_entry_param *e)
{
	uint64_t ino;
	int err = tree_lookup(&fs->tree, parent, name, &ino);

	if (err < 0)
		return err;
	memset(e, 0, sizeof(*e));
	e->ino = ino;
	e->entry_timeout = FS_ENTRY_TIMEOUT;
	e->attr_timeout = FS_ATTR_TIMEOUT;
	fs_fill_attr(fs, ino, &e->attr);
	return 0;
}

static void fs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct zkl_fs *fs = fuse_req_userdata(req);
	struct fuse_entry_param e;
	int err = fs_entry(fs, parent, name, &e);

	if (err == -ENOENT) {
		/* A name that can never exist: let the kernel remember. */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = FS_ENTRY_TIMEOUT;
		return (void)fuse_reply_entry(req, &e);
	}
	if (err < 0)
		return fs_reply_err(req, -err);
	fuse_reply_entry(req, &e);
}

static void fs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct zkl_fs *fs = fuse_req_userdata(req);

	tree_forget(&fs->tree, ino, nlookup);
	fuse_reply_none(req);
}

static void fs_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	struct zkl_fs *fs = fuse_req_userdata(req);

	for (size_t i = 0; i < count; i++)
		tree_forget(&fs->tree, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void fs_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct zkl_fs *fs = fuse_req_userdata(req);
	struct stat st;

	(void)fi;
	fs_fill_attr(fs, ino, &st);
	fuse_reply_attr(req, &st, FS_ATTR_TIMEOUT);
}

/* Only what `exec 9>file` and touch(1) need: truncation to 0 and times. */
static void fs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	struct zkl_fs *fs = fuse_req_userdata(req);
	struct stat st;

	(void)fi;
	if (to_set &
	    (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID))
		return fs_reply_err(req, EPERM);
	if ((to_set & FUSE_SET_ATTR_SIZE) &&
	    (tree_kind_of(ino) == TREE_DIR || attr->st_size != 0))
		return fs_reply_err(req, tree_kind_of(ino) == TREE_DIR ? EISDIR
								       : EPERM);
	fs_fill_attr(fs, ino, &st);
	fuse_reply_attr(req, &st, FS_ATTR_TIMEOUT);
}

/* ---- directories ------------------------------------------------------- */

/* A directory listing taken at opendir (snapshot.h): packed entries and
 * where each one ends (which is also its readdir offset). */
struct fs_dir {
	struct snapshot sn;
	char *buf;
	size_t len;
	size_t *ends;
	size_t nents;
};

static void fs_dir_free(struct snapshot *sn)
{
	struct fs_dir *d = ZKL_CONTAINER_OF(sn, struct fs_dir, sn);

	free(d->buf);
	free(d->ends);
	free(d);
}

struct fs_opendir_ctx {
	fuse_req_t req;
	struct zkl_fs *fs;
	fuse_ino_t ino;
	struct fuse_file_info fi;
};

static int fs_dir_add(struct fs_dir *d, fuse_req_t req, const char *name,
		      fuse_ino_t ino, mode_t mode, size_t *cap)
{
	struct stat st = { .st_ino = ino, .st_mode = mode };
	size_t need = fuse_add_direntry(req, NULL, 0, name, NULL, 0);

	if (d->len + need > *cap) {
		size_t ncap = (*cap + need) * 2;
		char *nbuf = realloc(d->buf, ncap);
		/* every entry takes at least 24 bytes of buf */
		size_t *nends = realloc(d->ends, ncap / 24 * sizeof(*nends));
		if (nbuf)
			d->buf = nbuf;
		if (nends)
			d->ends = nends;
		if (!nbuf || !nends)
			return -ENOMEM;
		*cap = ncap;
	}
	fuse_add_direntry(req, d->buf + d->len, *cap - d->len, name, &st,
			  (off_t)(d->len + need));
	d->len += need;
	d->ends[d->nents++] = d->len;
	return 0;
}

/* The children of a resource whose names are resources: not lock nodes,
 * not other tools' oddities. */
static int fs_dir_fill(struct zkl_fs *fs, fuse_req_t req, fuse_ino_t ino,
		       char *const *names, size_t n, struct fs_dir *d)
{
	struct tree_res *res = tree_res_of(&fs->tree, ino);
	int is_root = res == &fs->tree.root;
	size_t cap = 0;
	int err = 0;

	err |= fs_dir_add(d, req, ".", ino, S_IFDIR, &cap);
	err |= fs_dir_add(d, req, "..", FUSE_ROOT_ID, S_IFDIR, &cap);
	for (int k = TREE_WRITE; !is_root && k <= TREE_LAST_FILE; k++)
		err |= fs_dir_add(d, req, tree_kind_name((enum tree_kind)k),
				  tree_ino(&fs->tree, res, (enum tree_kind)k),
				  S_IFREG, &cap);
	if (is_root)
		err |= fs_dir_add(d, req, tree_kind_name(TREE_STATUS),
				  tree_ino(&fs->tree, res, TREE_STATUS),
				  S_IFREG, &cap);
	for (size_t i = 0; i < n && err == 0; i++) {
		char name[256];
		enum tree_kind kind;
		/* Not shown: znode names no file name maps to (znodename.h) */
		if (znodename_decode(names[i], name, sizeof(name)) < 0 ||
		    tree_classify(name, is_root, &kind) != TREE_NAME_RESOURCE)
			continue;
		/* The kernel asks lookup for the real inode number. */
		err = fs_dir_add(d, req, name, FS_UNKNOWN_INO, S_IFDIR, &cap);
	}
	return err ? -ENOMEM : 0;
}

static void fs_opendir_listed(int err, char *const *names, size_t n, void *arg)
{
	struct fs_opendir_ctx *ctx = arg;
	struct fs_dir *d = calloc(1, sizeof(*d));

	if (d)
		snapshot_init(&d->sn, ctx->fs, fs_dir_free);
	if (err == -ENOENT)
		err = 0; /* a resource nobody created yet: just its files */
	if (!d)
		err = -ENOMEM;
	if (err == 0)
		err = fs_dir_fill(ctx->fs, ctx->req, ctx->ino, names, n, d);
	if (err < 0) {
		if (d)
			snapshot_put(&d->sn);
		fs_reply_err(ctx->req, -err);
	} else {
		ctx->fi.fh = (uint64_t)(uintptr_t)d;
		snapshot_opened(&d->sn);
		if (fuse_reply_open(ctx->req, &ctx->fi) < 0)
			snapshot_release(&d->sn);
	}
	free(ctx);
}

/* The listing is taken once, at opendir, so readdir offsets stay stable. */
static void fs_opendir(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct zkl_fs *fs = fuse_req_userdata(req);
	char zpath[NAMES_MAX_NODE_PATH + 1];
	struct fs_opendir_ctx *ctx;
	int err;

	if (tree_kind_of(ino) != TREE_DIR)
		return fs_reply_err(req, ENOTDIR);
	err = tree_zpath(tree_res_of(&fs->tree, ino), zpath, sizeof(zpath));
	assert(err > 0); /* tree_lookup checked its length */
	ctx = malloc(sizeof(*ctx));
	if (!ctx)
		return fs_reply_err(req, ENOMEM);
	ctx->req = req;
	ctx->fs = fs;
	ctx->ino = ino;
	ctx->fi = *fi;
	err = resource_list(fs->session, zpath, fs_opendir_listed, ctx);
	if (err < 0) {
		free(ctx);
		fs_reply_err(req, -err);
	}
}

static void fs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct fs_dir *d = (struct fs_dir *)(uintptr_t)fi->fh;
	size_t i = 0, start, end;

	(void)ino;
	/* Each entry's offset is where it ends; resume after `off`, and
	 * send only whole entries. */
	while (i < d->nents && d->ends[i] <= (size_t)off)
		i++;
	start = i == 0 ? 0 : d->ends[i - 1];
	end = start;
	while (i < d->nents && d->ends[i] - start <= size)
		end = d->ends[i++];
	snapshot_get(&d->sn);
	fuse_reply_buf(req, d->buf + start, end - start);
	snapshot_put(&d->sn);
}

static void fs_releasedir(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	struct fs_dir *d = (struct fs_dir *)(uintptr_t)fi->fh;

	(void)ino;
	snapshot_release(&d->sn);
	fuse_reply_err(req, 0);
}

struct fs_mkdir_ctx {
	fuse_req_t req;
	struct zkl_fs *fs;
	fuse_ino_t parent;
	char name[];
};

static void fs_mkdir_done(int err, void *arg)
{
	struct fs_mkdir_ctx *ctx = arg;
	struct fuse_entry_param e;

	if (err == 0)
		err = fs_entry(ctx->fs, ctx->parent, ctx->name, &e);
	if (err < 0)
		fs_reply_err(ctx->req, -err);
	else if (fuse_reply_entry(ctx->req, &e) < 0)
		tree_forget(&ctx->fs->tree, e.ino, 1);
	free(ctx);
}

static void fs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	struct zkl_fs *fs = fuse_req_userdata(req);
	struct tree_res *dir = tree_res_of(&fs->tree, parent);
	size_t len = strlen(name) + 1;
	struct fs_mkdir_ctx *ctx;
	enum tree_kind kind;
	char path[NAMES_MAX_NODE_PATH + 1];
	int err;

	(void)mode;
	if (tree_kind_of(parent) != TREE_DIR)
		return fs_reply_err(req, ENOTDIR);
	switch (tree_classify(name, dir == &fs->tree.root, &kind)) {
	case TREE_NAME_INVALID:
		return fs_reply_err(req, EINVAL);
	case TREE_NAME_FILE:
		return fs_reply_err(req, EEXIST);
	case TREE_NAME_RESOURCE:
		break;
	}
	if (tree_child_zpath(dir, name, path, sizeof(path)) < 0)
		return fs_reply_err(req, ENAMETOOLONG);
	ctx = malloc(sizeof(*ctx) + len);
	if (!ctx)
		return fs_reply_err(req, ENOMEM);
	ctx->req = req;
	ctx->fs = fs;
	ctx->parent = parent;
	memcpy(ctx->name, name, len);
	err = resource_create(fs->session, path, fs_mkdir_done, ctx);
	if (err < 0) {
		free(ctx);
		fs_reply_err(req, -err);
	}
}

static void fs_rmdir_done(int err, void *arg)
{
	fs_reply_err((fuse_req_t)arg, -err);
}

static void fs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct zkl_fs *fs = fuse_req_userdata(req);
	struct tree_res *dir = tree_res_of(&fs->tree, parent);
	enum tree_kind kind;
	char path[NAMES_MAX_NODE_PATH + 1];
	int err;

	switch (tree_classify(name, dir == &fs->tree.root, &kind)) {
	case TREE_NAME_INVALID:
		return fs_reply_err(req, ENOENT);
	case TREE_NAME_FILE:
		return fs_reply_err(req, ENOTDIR);
	case TREE_NAME_RESOURCE:
		break;
	}
	if (tree_child_zpath(dir, name, path, sizeof(path)) < 0)
		return fs_reply_err(req, ENAMETOOLONG);
	err = resource_remove(fs->session, path, fs_rmdir_done, req);
	if (err < 0)
		fs_reply_err(req, -err);
}

/* ---- files ------------------------------------------------------------- */

static void fs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	file_open(req, ino, fi, NULL);
}

/* CREATE comes only for names lookup called missing, or for O_CREAT of a
 * lock file name the kernel had not looked up yet. */
static void fs_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	struct zkl_fs *fs = fuse_req_userdata(req);
	struct tree_res *dir = tree_res_of(&fs->tree, parent);
	struct fuse_entry_param e;
	enum tree_kind kind;
	int err;

	(void)mode;
	switch (tree_classify(name, dir == &fs->tree.root, &kind)) {
	case TREE_NAME_INVALID:
		return fs_reply_err(req, EINVAL);
	case TREE_NAME_RESOURCE:
		return fs_reply_err(req, EPERM);
	case TREE_NAME_FILE:
		break;
	}
	if (fi->flags & O_EXCL)
		return fs_reply_err(req, EEXIST);
	err = fs_entry(fs, parent, name, &e);
	if (err < 0)
		return fs_reply_err(req, -err);
	file_open(req, e.ino, fi, &e);
}

static void fs_refuse_name(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	(void)parent;
	(void)name;
	fuse_reply_err(req, EPERM);
}

static void fs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname,
		      unsigned int flags)
{
	(void)newparent;
	(void)newname;
	(void)flags;
	fs_refuse_name(req, parent, name);
}

static void fs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		    const char *newname)
{
	(void)ino;
	fs_refuse_name(req, newparent, newname);
}

static void fs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		       const char *name)
{
	(void)link;
	fs_refuse_name(req, parent, name);
}

static void fs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev)
{
	(void)mode;
	(void)rdev;
	fs_refuse_name(req, parent, name);
}

static void fs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv = { .f_bsize = 4096, .f_namemax = 255 };

	(void)ino;
	fuse_reply_statfs(req, &sv);
}

/* No file of the mount has attributes or device controls: answered at
 * once, for lock files too (an ioctl must never wait for a lock). */
static void fs_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd,
		     void *arg, struct fuse_file_info *fi, unsigned flags,
		     const void *in_buf, size_t in_bufsz, size_t out_bufsz)
{
	(void)ino;
	(void)cmd;
	(void)arg;
	(void)fi;
	(void)flags;
	(void)in_buf;
	(void)in_bufsz;
	(void)out_bufsz;
	fs_reply_err(req, ENOTTY);
}

const struct fuse_lowlevel_ops fs_ops = {
	.lookup = fs_lookup,
	.forget = fs_forget,
	.forget_multi = fs_forget_multi,
	.getattr = fs_getattr,
	.setattr = fs_setattr,
	.mknod = fs_mknod,
	.mkdir = fs_mkdir,
	.unlink = fs_refuse_name,
	.rmdir = fs_rmdir,
	.symlink = fs_symlink,
	.rename = fs_rename,
	.link = fs_link,
	.open = fs_open,
	.create = fs_create,
	.read = file_read,
	.write = file_write,
	.flush = file_flush,
	.fsync = file_fsync,
	.release = file_release,
	.getlk = file_getlk,
	.setlk = file_setlk,
	.flock = file_flock,
	.ioctl = fs_ioctl,
	.opendir = fs_opendir,
	.readdir = fs_readdir,
	.releasedir = fs_releasedir,
	.statfs = fs_statfs,
};
