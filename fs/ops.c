/*
 * ops.c - the FUSE protocol side of the mount (see ops.h): the one
 * handler table, the routing of each file operation to the kind of file
 * it is about, names and attributes, and directories.
 */
#include "ops.h"
#include "fs.h"
#include "log.h"
#include "names.h"
#include "process.h"
#include "resource.h"
#include "snapshot.h"
#include "tree.h"

#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <syslog.h>
#include <unistd.h>

/*
 * Route each file operation to the kind of file it is about: a lock file
 * (lockfile.c, flock.c) or a text file (textfile.c).  Their open files
 * are different structures, so nothing else may look at fi->fh before
 * this choice.
 */
static int file_is_text(fuse_ino_t ino)
{
	return tree_kind_is_text(tree_kind_of(ino));
}

void file_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
	       const struct fuse_entry_param *create_entry)
{
	if (tree_kind_of(ino) == TREE_DIR)
		return fs_reply_open_err(fuse_req_userdata(req), req,
					 create_entry, EISDIR);
	if (tree_kind_is_setting(tree_kind_of(ino)))
		return setting_open(req, ino, fi, create_entry);
	if (tree_kind_of(ino) == TREE_REVOKE)
		return revoke_open(req, ino, fi, create_entry);
	if (file_is_text(ino))
		return info_open(req, ino, fi, create_entry);
	lockfile_open(req, ino, fi, create_entry);
}

void file_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	       struct fuse_file_info *fi)
{
	if (file_is_text(ino))
		return info_read(req, size, off, fi);
	lockfile_read(req, ino, size, off, fi);
}

/* Text files other than the settings and revoke are opened read-only: the
 * kernel sends no write for them. */
void file_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		off_t off, struct fuse_file_info *fi)
{
	if (tree_kind_is_setting(tree_kind_of(ino)))
		return setting_write(req, ino, buf, size, off);
	if (tree_kind_of(ino) == TREE_REVOKE)
		return revoke_write(req, ino, buf, size, off);
	if (file_is_text(ino))
		return fs_reply_err(req, EBADF);
	lockfile_write(req, ino, buf, size, off, fi);
}

void file_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (file_is_text(ino))
		return fs_reply_err(req, 0);
	lockfile_flush(req, ino, fi);
}

void file_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		struct fuse_file_info *fi)
{
	if (file_is_text(ino))
		return fs_reply_err(req, 0);
	lockfile_fsync(req, ino, datasync, fi);
}

void file_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (file_is_text(ino))
		return info_release(req, fi);
	lockfile_release(req, ino, fi);
}

/* A text file is no lock: flock(2) and fcntl(2) locks on it are invalid. */
void file_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		int op)
{
	if (file_is_text(ino))
		return fs_reply_err(req, EINVAL);
	lockfile_flock(req, ino, fi, op);
}

void file_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		struct flock *lock)
{
	if (file_is_text(ino))
		return fs_reply_err(req, EINVAL);
	lockfile_getlk(req, ino, fi, lock);
}

/* A text file is always readable, and never asked anything. */
void file_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
	       struct fuse_pollhandle *ph)
{
	if (!file_is_text(ino))
		return lockfile_poll(req, ino, fi, ph);
	if (ph)
		fuse_pollhandle_destroy(ph);
	fuse_reply_poll(req, POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM);
}

void file_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		struct flock *lock, int sleep)
{
	if (file_is_text(ino))
		return fs_reply_err(req, EINVAL);
	lockfile_setlk(req, ino, fi, lock, sleep);
}

/*
 * Names and attributes: lookup, forget, getattr, setattr,
 * statfs, ioctl, and the operations a lock filesystem refuses.
 */
void fs_fill_attr(struct zkl_fs *fs, fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	/* Nothing in a lock file is kept as of a time: the mount's start
	 * is the one time that is true of all of them (not 1970). */
	st->st_atim = st->st_mtim = st->st_ctim = fs->mounted_at;
	if (tree_kind_of(ino) == TREE_DIR) {
		st->st_mode = S_IFDIR | fs->dir_mode;
		st->st_nlink = 2;
	} else if (tree_kind_is_info(tree_kind_of(ino))) {
		st->st_mode = S_IFREG | (fs->file_mode & 0444);
		st->st_nlink = 1;
	} else if (tree_kind_of(ino) == TREE_REVOKE) {
		/* fs_may_change's rule, as a mode. */
		st->st_mode = S_IFREG | (fs->file_mode &
					 (fs->anyone_may_ask ? 0222 : 0200));
		st->st_nlink = 1;
	} else if (tree_kind_is_setting(tree_kind_of(ino))) {
		st->st_mode = S_IFREG | (fs->file_mode & 0644);
		st->st_nlink = 1;
	} else {
		st->st_mode = S_IFREG | fs->file_mode;
		st->st_nlink = 1;
	}
}

int fs_entry(struct zkl_fs *fs, fuse_ino_t parent, const char *name,
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

void entry_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
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

void entry_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct zkl_fs *fs = fuse_req_userdata(req);

	tree_forget(&fs->tree, ino, nlookup);
	fuse_reply_none(req);
}

void entry_forget_multi(fuse_req_t req, size_t count,
			struct fuse_forget_data *forgets)
{
	struct zkl_fs *fs = fuse_req_userdata(req);

	for (size_t i = 0; i < count; i++)
		tree_forget(&fs->tree, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

void entry_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct zkl_fs *fs = fuse_req_userdata(req);
	struct stat st;

	(void)fi;
	fs_fill_attr(fs, ino, &st);
	fuse_reply_attr(req, &st, FS_ATTR_TIMEOUT);
}

/* access(2), faccessat(2), test -w, and chdir: the answer an open (or a
 * chdir) would give.  The kernel asks only when the mount has no
 * default_permissions; then the modes are not what the daemon enforces
 * (lock files and resources open for every user the mount lets in), so
 * the answer comes from the daemon's own rule for each kind of file, as
 * its open applies it (textfile.c, fs_may_change).  Without this handler
 * the kernel took every ACCESS for a yes: `[ -w limit ]` said yes to a
 * user whose open is refused. */
void entry_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct zkl_fs *fs = fuse_req_userdata(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	enum tree_kind kind = tree_kind_of(ino);
	int may_change = ctx->uid == 0 || ctx->uid == fs->uid;
	int refused;

	if (kind == TREE_DIR)
		refused = 0; /* list, enter, and make lock files in */
	else if (mask & X_OK)
		refused = 1; /* nothing here runs */
	else if (tree_kind_is_info(kind))
		refused = (mask & W_OK) != 0;
	else if (tree_kind_is_setting(kind))
		refused = (mask & W_OK) && !may_change;
	else if (kind == TREE_REVOKE)
		refused = (mask & R_OK) ||
			  ((mask & W_OK) && !may_change && !fs->anyone_may_ask);
	else
		refused = 0; /* a lock file */
	fs_reply_err(req, refused ? EACCES : 0);
}

/* Only what `exec 9>file` and touch(1) need: truncation to 0 and times. */
void entry_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
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

void entry_refuse_name(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	(void)parent;
	(void)name;
	fuse_reply_err(req, EPERM);
}

void entry_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		  fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	(void)newparent;
	(void)newname;
	(void)flags;
	entry_refuse_name(req, parent, name);
}

/*
 * Dot-lock tools (lockfile-create, procmail's lockfile, dotlockfile,
 * filelock's SoftFileLock) lock by creating a file with O_EXCL or link():
 * a mount holds no files but its own, so they can only fail, each with
 * its own words ("cannot create temporary lockfile").  The log says what
 * works instead, once in a while (a tool retries, and anyone may ask).
 */
#define OPS_DOTLOCK_SAY_EVERY_S 10

static void ops_refuse_dotlock(fuse_req_t req, const char *what,
			       const char *name, int err)
{
	static atomic_llong said_at;
	char comm[32] = "?";
	pid_t pid = fuse_req_ctx(req)->pid;
	ssize_t n;

	if (log_due(&said_at, OPS_DOTLOCK_SAY_EVERY_S)) {
		n = procfile_read(pid, "comm", comm, sizeof(comm));
		if (n > 0)
			comm[strcspn(comm, "\n")] = '\0';
		log_msg(LOG_NOTICE,
			"pid %d (%s) tried to %s \"%s\" (%s): a zklockfs mount has "
			"no files but its lock files, so a dot-lock tool cannot "
			"lock in it; open RESOURCE/write, or flock RESOURCE/lock "
			"(doc/locks.md, \"Lock libraries and tools that work "
			"with it\")",
			(int)pid, comm, what, name, strerror(err));
	}
	fs_reply_err(req, err);
}

void entry_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		const char *newname)
{
	(void)ino;
	(void)newparent;
	ops_refuse_dotlock(req, "link a file to", newname, EPERM);
}

void entry_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		   const char *name)
{
	(void)link;
	entry_refuse_name(req, parent, name);
}

void entry_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		 mode_t mode, dev_t rdev)
{
	(void)mode;
	(void)rdev;
	entry_refuse_name(req, parent, name);
}

void entry_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv = { .f_bsize = 4096, .f_namemax = 255 };

	(void)ino;
	fuse_reply_statfs(req, &sv);
}

/* No file of the mount has attributes or device controls: answered at
 * once, for lock files too (an ioctl must never wait for a lock). */
void entry_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
		 struct fuse_file_info *fi, unsigned flags, const void *in_buf,
		 size_t in_bufsz, size_t out_bufsz)
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

/*
 * Directories: listing, mkdir, rmdir, and CREATE of a name in
 * one.
 */
/* readdir's d_ino for entries whose inode exists only after a lookup
 * (the value libfuse's high-level API uses). */
#define DIR_UNKNOWN_INO 0xffffffffu

/* A directory listing taken at opendir (snapshot.h): packed entries and
 * where each one ends (which is also its readdir offset). */
struct dir_listing {
	struct snapshot sn; /* its buffer holds the packed entries */
	size_t *ends;
	size_t nents;
};

static void dir_free(struct snapshot *sn)
{
	struct dir_listing *d = ZKL_CONTAINER_OF(sn, struct dir_listing, sn);

	free(d->ends);
	free(d);
}

struct dir_opendir_ctx {
	fuse_req_t req;
	struct zkl_fs *fs;
	fuse_ino_t ino;
	struct fuse_file_info fi;
};

static int dir_add(struct dir_listing *d, fuse_req_t req, const char *name,
		   fuse_ino_t ino, mode_t mode, size_t *cap)
{
	struct stat st = { .st_ino = ino, .st_mode = mode };
	size_t need = fuse_add_direntry(req, NULL, 0, name, NULL, 0);

	if (d->sn.len + need > *cap) {
		size_t ncap = (*cap + need) * 2;
		char *nbuf = realloc(d->sn.buf, ncap);
		/* every entry takes at least 24 bytes of buf */
		size_t *nends = realloc(d->ends, ncap / 24 * sizeof(*nends));
		if (nbuf)
			d->sn.buf = nbuf;
		if (nends)
			d->ends = nends;
		if (!nbuf || !nends)
			return -ENOMEM;
		*cap = ncap;
	}
	fuse_add_direntry(req, d->sn.buf + d->sn.len, *cap - d->sn.len, name,
			  &st, (off_t)(d->sn.len + need));
	d->sn.len += need;
	d->ends[d->nents++] = d->sn.len;
	return 0;
}

/* The children of a resource whose names are resources: not lock nodes,
 * not other tools' oddities. */
static int dir_fill(struct zkl_fs *fs, fuse_req_t req, fuse_ino_t ino,
		    char *const *names, size_t n, struct dir_listing *d)
{
	struct tree_res *res = tree_res_of(&fs->tree, ino);
	int is_root = res == &fs->tree.root;
	size_t cap = 0;
	int err = 0;

	err |= dir_add(d, req, ".", ino, S_IFDIR, &cap);
	err |= dir_add(d, req, "..", FUSE_ROOT_ID, S_IFDIR, &cap);
	/* .all lists nothing: any list of resources is in it. */
	for (int k = TREE_WRITE;
	     !is_root && res->role != TREE_ROLE_ALL && k <= TREE_LAST_FILE; k++)
		if (res->role == TREE_ROLE_RESOURCE ||
		    tree_kind_in_multi((enum tree_kind)k))
			err |= dir_add(
				d, req, tree_kind_name((enum tree_kind)k),
				tree_ino(&fs->tree, res, (enum tree_kind)k),
				S_IFREG, &cap);
	for (int k = TREE_STATUS; is_root && k <= TREE_METRICS; k++)
		err |= dir_add(d, req, tree_kind_name((enum tree_kind)k),
			       tree_ino(&fs->tree, res, (enum tree_kind)k),
			       S_IFREG, &cap);
	for (size_t i = 0; i < n && err == 0; i++) {
		char name[256];
		enum tree_kind kind;
		/* Not shown: znode names no file name maps to (tree.h) */
		if (znodename_decode(names[i], name, sizeof(name)) < 0 ||
		    tree_classify(name, is_root, &kind) != TREE_NAME_RESOURCE)
			continue;
		/* The kernel asks lookup for the real inode number. */
		err = dir_add(d, req, name, DIR_UNKNOWN_INO, S_IFDIR, &cap);
	}
	return err ? -ENOMEM : 0;
}

static void dir_opendir_listed(int err, char *const *names, size_t n,
			       int32_t cversion, void *arg)
{
	(void)cversion;
	struct dir_opendir_ctx *ctx = arg;
	struct dir_listing *d = calloc(1, sizeof(*d));

	if (d)
		snapshot_init(&d->sn, ctx->fs, dir_free);
	if (err == -ENOENT)
		err = 0; /* a resource nobody created yet: just its files */
	if (!d)
		err = -ENOMEM;
	if (err == 0)
		err = dir_fill(ctx->fs, ctx->req, ctx->ino, names, n, d);
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
void dir_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct zkl_fs *fs = fuse_req_userdata(req);
	char zpath[NAMES_MAX_NODE_PATH + 1];
	struct dir_opendir_ctx *ctx;
	int err;

	if (tree_kind_of(ino) != TREE_DIR)
		return fs_reply_err(req, ENOTDIR);
	ctx = malloc(sizeof(*ctx));
	if (!ctx)
		return fs_reply_err(req, ENOMEM);
	ctx->req = req;
	ctx->fs = fs;
	ctx->ino = ino;
	ctx->fi = *fi;
	/* .all and its list directories are no znodes: nothing to list. */
	if (tree_role_of(&fs->tree, ino) != TREE_ROLE_RESOURCE)
		return dir_opendir_listed(0, NULL, 0, 0, ctx);
	err = tree_zpath(tree_res_of(&fs->tree, ino), zpath, sizeof(zpath));
	assert(err > 0); /* tree_lookup checked its length */
	err = resource_list(fs->session, zpath, dir_opendir_listed, ctx);
	if (err < 0) {
		free(ctx);
		fs_reply_err(req, -err);
	}
}

void dir_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		 struct fuse_file_info *fi)
{
	struct dir_listing *d = (struct dir_listing *)(uintptr_t)fi->fh;
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
	snapshot_reply(&d->sn, req, start, end - start);
}

void dir_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dir_listing *d = (struct dir_listing *)(uintptr_t)fi->fh;

	(void)ino;
	snapshot_release(&d->sn);
	fuse_reply_err(req, 0);
}

/* A mkdir or rmdir waiting for ZooKeeper: whom to answer, about what. */
struct dir_change_ctx {
	fuse_req_t req;
	struct zkl_fs *fs;
	fuse_ino_t parent;
	char name[];
};

static void dir_mkdir_done(int err, void *arg)
{
	struct dir_change_ctx *ctx = arg;
	struct fuse_entry_param e;

	if (err == 0)
		err = fs_entry(ctx->fs, ctx->parent, ctx->name, &e);
	if (err < 0)
		fs_reply_err(ctx->req, -err);
	else if (fuse_reply_entry(ctx->req, &e) < 0)
		tree_forget(&ctx->fs->tree, e.ino, 1);
	free(ctx);
}

void dir_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct zkl_fs *fs = fuse_req_userdata(req);
	struct tree_res *dir = tree_res_of(&fs->tree, parent);
	size_t len = strlen(name) + 1;
	struct dir_change_ctx *ctx;
	enum tree_kind kind;
	char path[NAMES_MAX_NODE_PATH + 1];
	int err;

	(void)mode;
	if (tree_kind_of(parent) != TREE_DIR)
		return fs_reply_err(req, ENOTDIR);
	/* Every valid name in .all or a list directory exists already:
	 * what reaches us is invalid. */
	if (dir->role != TREE_ROLE_RESOURCE)
		return fs_reply_err(req, EINVAL);
	switch (tree_classify(name, dir == &fs->tree.root, &kind)) {
	case TREE_NAME_INVALID:
		return fs_reply_err(req, EINVAL);
	case TREE_NAME_FILE:
	case TREE_NAME_ALL:
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
	err = resource_create(fs->session, path, dir_mkdir_done, ctx);
	if (err < 0) {
		free(ctx);
		fs_reply_err(req, -err);
	}
}

static void dir_rmdir_done(int err, void *arg)
{
	struct dir_change_ctx *ctx = arg;

	/* Before the reply: the kernel's next lookup must find a new entry,
	 * not the inode it now holds for removed. */
	if (err == 0)
		tree_detach(&ctx->fs->tree, ctx->parent, ctx->name);
	fs_reply_err(ctx->req, -err);
	free(ctx);
}

void dir_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct zkl_fs *fs = fuse_req_userdata(req);
	struct tree_res *dir = tree_res_of(&fs->tree, parent);
	enum tree_kind kind;
	char path[NAMES_MAX_NODE_PATH + 1];
	struct dir_change_ctx *ctx;
	int err;

	/* .all and its list directories hold no znode to remove. */
	if (dir->role != TREE_ROLE_RESOURCE)
		return fs_reply_err(req, EPERM);
	switch (tree_classify(name, dir == &fs->tree.root, &kind)) {
	case TREE_NAME_INVALID:
		return fs_reply_err(req, ENOENT);
	case TREE_NAME_FILE:
		return fs_reply_err(req, ENOTDIR);
	case TREE_NAME_ALL:
		return fs_reply_err(req, EPERM);
	case TREE_NAME_RESOURCE:
		break;
	}
	if (tree_child_zpath(dir, name, path, sizeof(path)) < 0)
		return fs_reply_err(req, ENAMETOOLONG);
	err = fs_may_change(fs, req, "remove a resource", EACCES);
	if (err < 0)
		return fs_reply_err(req, -err);
	ctx = malloc(sizeof(*ctx) + strlen(name) + 1);
	if (!ctx)
		return fs_reply_err(req, ENOMEM);
	ctx->req = req;
	ctx->fs = fs;
	ctx->parent = parent;
	strcpy(ctx->name, name);
	err = resource_remove(fs->session, path, dir_rmdir_done, ctx);
	if (err < 0) {
		free(ctx);
		fs_reply_err(req, -err);
	}
}

/* CREATE comes only for names lookup called missing, or for O_CREAT of a
 * lock file name the kernel had not looked up yet. */
void dir_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		mode_t mode, struct fuse_file_info *fi)
{
	struct zkl_fs *fs = fuse_req_userdata(req);
	struct tree_res *dir = tree_res_of(&fs->tree, parent);
	struct fuse_entry_param e;
	enum tree_kind kind;
	int err;

	(void)mode;
	switch (tree_classify(name, dir == &fs->tree.root, &kind)) {
	case TREE_NAME_INVALID: /* ".lk123host": a dot-lock tool's */
		return ops_refuse_dotlock(req, "create", name, EINVAL);
	case TREE_NAME_ALL:
		return fs_reply_err(req, EISDIR);
	case TREE_NAME_RESOURCE:
		return fs_reply_err(req, EPERM);
	case TREE_NAME_FILE:
		break;
	}
	if (dir->role == TREE_ROLE_ALL ||
	    (dir->role == TREE_ROLE_MULTI && !tree_kind_in_multi(kind)))
		return fs_reply_err(req, EPERM);
	if (fi->flags & O_EXCL)
		return fs_reply_err(req, EEXIST);
	err = fs_entry(fs, parent, name, &e);
	if (err < 0)
		return fs_reply_err(req, -err);
	file_open(req, e.ino, fi, &e);
}

/*
 * The operation table: which handler answers each FUSE request.
 */
/* OPEN of an existing inode; CREATE goes through dir_create. */
static void ops_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	file_open(req, ino, fi, NULL);
}

const struct fuse_lowlevel_ops fs_ops = {
	.lookup = entry_lookup,
	.forget = entry_forget,
	.forget_multi = entry_forget_multi,
	.getattr = entry_getattr,
	.access = entry_access,
	.setattr = entry_setattr,
	.mknod = entry_mknod,
	.mkdir = dir_mkdir,
	.unlink = entry_refuse_name,
	.rmdir = dir_rmdir,
	.symlink = entry_symlink,
	.rename = entry_rename,
	.link = entry_link,
	.open = ops_open,
	.create = dir_create,
	.read = file_read,
	.write = file_write,
	.flush = file_flush,
	.fsync = file_fsync,
	.release = file_release,
	.getlk = file_getlk,
	.setlk = file_setlk,
	.flock = file_flock,
	.poll = file_poll,
	.ioctl = entry_ioctl,
	.opendir = dir_opendir,
	.readdir = dir_readdir,
	.releasedir = dir_releasedir,
	.statfs = entry_statfs,
};
