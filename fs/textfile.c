/*
 * textfile.c - the mount's text files: MOUNT/.status (this mount's
 * session), MOUNT/<resource>/holders (everyone queued on a resource), a
 * resource's settings (limit, maxhold) and its revoke file, and the reads
 * and release every text file shares.
 *
 * Each open takes a snapshot and keeps it until release, so a reader
 * sees one consistent text however it reads.  .status's is the mount's
 * state at the open; holders' is shared by the opens of a short window,
 * unless this mount changed the resource or was told of a change
 * (holdcache.h).  The formats are documented in doc/operations.md and
 * zklockfs(8): keep them in step.
 */
#include "fs.h"
#include "config.h"
#include "holders.h"
#include "identity.h"
#include "log.h"
#include "maxhold.h"
#include "metrics.h"
#include "names.h"
#include "revoke.h"
#include "snapshot.h"
#include "limit.h"
#include "resource.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

/*
 * .status and holders.
 */
/* Close the stream: open_memstream sets *text and *len only then.
 * Returns 0, or -ENOMEM with the text freed. */
static int info_close(FILE *out, char **text)
{
	if (fclose(out) == 0)
		return 0;
	free(*text);
	return -ENOMEM;
}

/* ---- .status ------------------------------------------------------------ */

static void info_status(struct zkl_fs *fs, fuse_req_t req,
			struct fuse_file_info *fi,
			const struct fuse_entry_param *create_entry)
{
	struct zkl_session_stats st;
	struct timespec now;
	char jeopardy_at[32] = "-";
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	if (!out)
		return fs_reply_open_err(fs, req, create_entry, ENOMEM);
	session_stats(fs->session, &st);
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (st.jeopardy_wall_ms != 0) {
		time_t t = (time_t)(st.jeopardy_wall_ms / 1000);
		struct tm tm;
		strftime(jeopardy_at, sizeof(jeopardy_at), "%Y-%m-%dT%H:%M:%SZ",
			 gmtime_r(&t, &tm));
	}
	fprintf(out,
		"state %s\nsession 0x%" PRIx64 "\nsession_timeout_ms %d\n"
		"servers %s\nserver %s\nbase %s\nheld %" PRIu64 "\n"
		"waiting %" PRIu64 "\nleases_held %" PRIu64
		"\nleases_waiting %" PRIu64 "\ngrants %" PRIu64
		"\nlosses %" PRIu64 "\n"
		"expirations %" PRIu64 "\ndelete_retries %" PRIu64
		"\nasked %" PRIu64
		"\nasks_sent %llu\nbreaks_sent %llu\nmaxhold_asks %" PRIu64
		"\nmaxhold_breaks %" PRIu64 "\njeopardies %" PRIu64
		"\nlast_jeopardy %s\njeopardy_margin_ms %d\n"
		"heartbeat_age_ms %" PRId64 "\nresources %zu\n"
		"resources_created %" PRIu64 "\ncontainers %s\n"
		"refusals %llu\ndeadlocks %" PRIu64 "\ndeadlock_checks %" PRIu64
		"\nuptime_s %lld\nversion %s\n",
		metrics_state_name(&st), (uint64_t)st.session_id, st.timeout_ms,
		session_hosts(fs->session), st.server[0] ? st.server : "-",
		session_base(fs->session), st.held, st.waiting, st.leases_held,
		st.leases_waiting, st.grants, st.losses, st.expirations,
		st.delete_retries, st.asked, atomic_load(&fs->asks_sent),
		atomic_load(&fs->breaks_sent), st.maxhold_asks,
		st.maxhold_breaks, st.jeopardies, jeopardy_at, st.margin_ms,
		st.heartbeat_age_ms, tree_count(&fs->tree),
		st.resources_created, st.containers ? "yes" : "no",
		atomic_load(&fs->refusals), st.deadlocks, st.deadlock_checks,
		(long long)(now.tv_sec - fs->started.tv_sec), ZKLOCKFS_VERSION);
	if (info_close(out, &text) != 0)
		return fs_reply_open_err(fs, req, create_entry, ENOMEM);
	snapshot_answer_open(fs, req, fi, create_entry, text, len);
}

/* ---- .metrics ----------------------------------------------------------- */

static void info_metrics(struct zkl_fs *fs, fuse_req_t req,
			 struct fuse_file_info *fi,
			 const struct fuse_entry_param *create_entry)
{
	char *text;
	size_t len;
	int err = metrics_text(fs, &text, &len);

	if (err < 0)
		return fs_reply_open_err(fs, req, create_entry, -err);
	snapshot_answer_open(fs, req, fi, create_entry, text, len);
}

/* ---- holders ------------------------------------------------------------ */

/* One field of a line: bytes that would split or garble it (space and
 * below, DEL, backslash; spaces too unless `keep_spaces`) as \ooo, the way
 * /proc/mounts does; "-" for nothing. */
static void info_field(FILE *out, const char *s, size_t len, int keep_spaces)
{
	if (len == 0) {
		fputc('-', out);
		return;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f || c == '\\' ||
		    (c == ' ' && !keep_spaces))
			fprintf(out, "\\%03o", c);
		else
			fputc(c, out);
	}
}

/* Does the node carry a zklockfs identity (any mount's, any dialect)? */
static int info_has_identity(const struct holders_node *n)
{
	char value[IDENTITY_MAX];

	return n->data &&
	       identity_get(n->data, n->len, "host", value, sizeof(value)) >= 0;
}

/* One identity field.  Another tool's node has none of ours; its data is
 * still worth showing: Curator stores the client's address (the host),
 * kazoo the identifier its caller chose (a note). */
static void info_identity_field(FILE *out, const struct holders_node *n,
				const char *key, int keep_spaces)
{
	char value[IDENTITY_NOTE_MAX + 1];
	int len = -ENOENT;

	fputc(' ', out);
	if (info_has_identity(n)) {
		len = identity_get(n->data, n->len, key, value, sizeof(value));
	} else if (n->data && n->len > 0 &&
		   strcmp(key, n->style == ZKL_STYLE_CURATOR ? "host"
							     : "note") == 0) {
		info_field(out, n->data,
			   n->len < IDENTITY_NOTE_MAX ? n->len
						      : IDENTITY_NOTE_MAX,
			   keep_spaces);
		return;
	}
	info_field(out, value, len < 0 ? 0 : (size_t)len, keep_spaces);
}

static const char *const info_holder_states[] = {
	[HOLDERS_HELD] = "held",
	[HOLDERS_WAITING] = "waiting",
};

/* A multi-lock's node: its tool field goes on ":multi=<its list>", the
 * resources locked with it. */
static void info_multi_mark(FILE *out, const struct holders_node *n)
{
	char list[256];
	int len;

	if (!info_has_identity(n))
		return;
	len = identity_get(n->data, n->len, "multi", list, sizeof(list));
	if (len <= 0)
		return;
	fputs(":multi=", out);
	info_field(out, list, (size_t)len, 0);
}

/* Asked to let go: the mark replaced its holder's identity. */
static int info_is_asked(const struct holders_node *n)
{
	return revoke_is_marked(n->data, n->len);
}

/* A holder past the resource's hold limit (limit_ms, 0: none), by its
 * node's age on the server's clock.  An orphan or a lost node holds
 * nothing to let go of. */
static int info_is_overdue(const struct holders_node *n, int64_t now_ms,
			   int64_t limit_ms)
{
	return limit_ms > 0 && n->state == HOLDERS_HELD && !n->orphan &&
	       !n->lost && now_ms - n->ctime_ms > limit_ms;
}

/* state mode token host pid uid cmd age node tool note */
static void info_holder_line(FILE *out, const struct holders_node *n,
			     int64_t now_ms, int64_t limit_ms)
{
	int64_t age = (now_ms - n->ctime_ms) / 1000;
	int64_t token = n->token;
	char inherited[24];

	/* A downgraded lock's node says it holds its write lock's token. */
	if (n->data && identity_get(n->data, n->len, "token", inherited,
				    sizeof(inherited)) > 0)
		token = strtoll(inherited, NULL, 10);

	/* An orphan stands where it is, held or not, until removed; a lock
	 * of ours declared lost is no holder to wait for, though its node
	 * is still there for a moment. */
	fprintf(out, "%s %s %" PRId64,
		n->lost     ? "lost"
		: n->orphan ? "orphan"
			    : info_holder_states[n->state],
		names_mode_str(n->mode), token);
	info_identity_field(out, n, "host", 0);
	info_identity_field(out, n, "pid", 0);
	info_identity_field(out, n, "uid", 0);
	info_identity_field(out, n, "cmd", 0);
	fprintf(out, " %" PRId64 "s ", age > 0 ? age : 0);
	if (n->where[0]) /* a peer's lease directory or lock */
		info_field(out, n->where, strlen(n->where), 0);
	info_field(out, n->name, strlen(n->name), 0);
	/* A mount of any dialect names its nodes as its peer does: what it
	 * stores tells them apart. */
	fprintf(out, " %s",
		names_style_str(info_has_identity(n) ? ZKL_STYLE_ZKLOCKFS
						     : n->style));
	info_multi_mark(out, n);
	if (n->holds > 1) /* counted holds of this host (-o reentrant) */
		fprintf(out, ":holds=%u", n->holds);
	if (info_is_asked(n))
		fputs(":revoke", out);
	if (info_is_overdue(n, now_ms, limit_ms))
		fputs(":overdue", out);
	if (n->waits_for) /* the node in its way (the one it watches) */
		fprintf(out, ":waits=%s", n->waits_for);
	info_identity_field(out, n, "note", 1);
	fputc('\n', out);
}

/* A fetch of a resource's holders: one for every open it answers
 * (holdcache.h). */
struct info_fetch {
	struct zkl_fs *fs;
	char dir[];
};

/* The semaphore's line, when leases are held or queued: its limit, how
 * many leases hold and how many more may. */
static void info_lease_line(FILE *out, const struct holders_semaphore *sem)
{
	if (!sem)
		return;
	if (sem->limit == 0)
		fprintf(out, "limit - held %zu free -\n", sem->held);
	else
		fprintf(out, "limit %u held %zu free %zu\n", sem->limit,
			sem->held, sem->free);
}

/* An open's stamp, or a fetch's (holdcache.h): the changes first. */
static void info_holders_stamp(struct zkl_fs *fs, const char *dir,
			       struct holdcache_stamp *stamp)
{
	struct timespec now;

	stamp->changes = holders_changes(fs->session, dir);
	clock_gettime(CLOCK_MONOTONIC, &now);
	stamp->ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

static void info_holders_listed(int err, const struct holders_node *nodes,
				size_t n, const struct holders_semaphore *sem,
				void *arg);

/* Send f's fetch; its end answers the opens parked on it. */
static void info_holders_send(struct info_fetch *f);

/* f's fetch ended with err or text (the cache's): answer its opens, and
 * send the next fetch if opens wait for one. */
static void info_holders_fetched(struct info_fetch *f, int err, char *text,
				 size_t len)
{
	struct holdcache_stamp now;

	info_holders_stamp(f->fs, f->dir, &now);
	if (holdcache_fetched(&f->fs->holders, f->dir, err, text, len, &now))
		info_holders_send(f);
	else
		free(f);
}

static void info_holders_send(struct info_fetch *f)
{
	int err = holders_start(f->fs->session, f->dir, info_holders_listed, f);

	/* Not sent: a failure ends the fetch without another (holdcache.h),
	 * so this goes no deeper. */
	if (err < 0)
		info_holders_fetched(f, err, NULL, 0);
}

static void info_holders_listed(int err, const struct holders_node *nodes,
				size_t n, const struct holders_semaphore *sem,
				void *arg)
{
	struct info_fetch *f = arg;
	struct zkl_session *s = f->fs->session;
	int64_t now_ms = session_server_now_ms(s);
	unsigned maxhold = session_maxhold(s, f->dir);
	size_t asked = 0, overdue = 0;
	char *text = NULL;
	size_t len = 0;
	FILE *out = NULL;

	if (err == 0 && !(out = open_memstream(&text, &len)))
		err = -ENOMEM;
	if (err < 0) {
		log_msg(LOG_DEBUG, "holders of %s: %s", f->dir, strerror(-err));
		return info_holders_fetched(f, err, NULL, 0);
	}
	for (size_t i = 0; i < n; i++) {
		info_holder_line(out, &nodes[i], now_ms,
				 (int64_t)maxhold * 1000);
		asked += info_is_asked(&nodes[i]);
		overdue += info_is_overdue(&nodes[i], now_ms,
					   (int64_t)maxhold * 1000);
	}
	info_lease_line(out, sem);
	if (n > 0 && (maxhold > 0 || asked > 0)) /* empty: nobody queued */
		fprintf(out, "maxhold %u asked %zu overdue %zu\n", maxhold,
			asked, overdue);
	log_msg(LOG_DEBUG, "holders of %s: %zu lock nodes", f->dir, n);
	if (info_close(out, &text) != 0)
		info_holders_fetched(f, -ENOMEM, NULL, 0);
	else
		info_holders_fetched(f, 0, text, len);
}

/* An open of holders: the text a recent fetch took, or the next fetch's
 * (holdcache.h says which, and why). */
static void info_holders(struct zkl_fs *fs, fuse_req_t req, fuse_ino_t ino,
			 struct fuse_file_info *fi,
			 const struct fuse_entry_param *create_entry)
{
	char dir[NAMES_MAX_NODE_PATH + 1];
	int len = tree_zpath(tree_res_of(&fs->tree, ino), dir, sizeof(dir));
	struct info_fetch *f = malloc(sizeof(*f) + (size_t)len + 1);
	struct snapshot_pending open;
	struct holdcache_stamp now;
	int rc;

	assert(len > 0); /* tree_lookup checked its length */
	if (!f)
		return fs_reply_open_err(fs, req, create_entry, ENOMEM);
	f->fs = fs;
	strcpy(f->dir, dir);
	snapshot_pending_init(&open, fs, req, fi, create_entry);
	info_holders_stamp(fs, dir, &now);
	rc = holdcache_open(&fs->holders, dir, &now, &open);
	if (rc == 1)
		return info_holders_send(f);
	free(f); /* answered, parked on another's fetch, or refused */
	if (rc < 0)
		fs_reply_open_err(fs, req, create_entry, -rc);
}

/* ---- the open file ------------------------------------------------------ */

void info_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
	       const struct fuse_entry_param *create_entry)
{
	struct zkl_fs *fs = fuse_req_userdata(req);

	if ((fi->flags & O_ACCMODE) != O_RDONLY)
		return fs_reply_open_err(fs, req, create_entry, EACCES);
	if (tree_kind_of(ino) == TREE_STATUS)
		info_status(fs, req, fi, create_entry);
	else if (tree_kind_of(ino) == TREE_METRICS)
		info_metrics(fs, req, fi, create_entry);
	else
		info_holders(fs, req, ino, fi, create_entry);
}

void info_read(fuse_req_t req, size_t size, off_t off,
	       struct fuse_file_info *fi)
{
	if (off < 0)
		return (void)fuse_reply_buf(req, NULL, 0);
	snapshot_reply(snapshot_of(fi), req, (size_t)off, size);
}

void info_release(fuse_req_t req, struct fuse_file_info *fi)
{
	snapshot_release(snapshot_of(fi));
	fuse_reply_err(req, 0);
}

/*
 * A resource's settings, one number each, kept in
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
typedef void (*setting_got_fn)(int err, unsigned value, void *arg);
typedef void (*setting_stored_fn)(int err, void *arg);

/* What tells one setting from another. */
struct setting {
	const char *name; /* its file's, for the log */
	const char *verb; /* its change, for the log of a refusal */
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
	.verb = "set a limit",
	.parse = setting_parse_limit,
	.get = resource_get_limit,
	.store = resource_set_limit,
};

static const struct setting setting_maxhold = {
	.name = "maxhold",
	.verb = "set a hold limit",
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

/* What a read of the stored data says went wrong (-errno), as the
 * reader's -errno: data that is no limit is an I/O error, logged. */
static int setting_errno(const char *dir, int err)
{
	if (err != -EBADMSG)
		return err;
	log_msg(LOG_WARNING,
		"%s: its data is not a limit (a number from 1 to %u)", dir,
		LIMIT_MAX);
	return -EIO;
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

	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		err = fs_may_change(fs, req, setting_of(ino)->verb, EACCES);
		if (err < 0)
			return fs_reply_open_err(fs, req, create_entry, -err);
	}
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
	char dir[NAMES_MAX_NODE_PATH + 1];
	size_t len = setting_dir(fs, ino, dir);
	struct setting_write_ctx *ctx;
	unsigned value;
	int err;

	if (off != 0 || setting->parse(buf, size, &value) < 0)
		return fs_reply_err(req, EINVAL);
	err = fs_may_change(fs, req, setting->verb, EPERM);
	if (err < 0)
		return fs_reply_err(req, -err);
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

/*
 * MOUNT/<resource>/revoke: `echo ask > revoke` asks every
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
struct revoke_write_ctx {
	struct zkl_fs *fs;
	fuse_req_t req;
	size_t size;
	enum revoke_how how;
	char who[128]; /* identity_for_log */
	char dir[];
};

void revoke_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		 const struct fuse_entry_param *create_entry)
{
	struct zkl_fs *fs = fuse_req_userdata(req);
	int err = 0;

	(void)ino;
	/* Write-only, for everyone: a reader (grep -r) is no one refused. */
	if ((fi->flags & O_ACCMODE) != O_WRONLY)
		return fs_reply_open_err(fs, req, create_entry, EACCES);
	if (!fs->anyone_may_ask)
		err = fs_may_change(fs, req, "revoke locks", EACCES);
	if (err < 0)
		return fs_reply_open_err(fs, req, create_entry, -err);
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
	if (how == REVOKE_BREAK || !fs->anyone_may_ask) {
		err = fs_may_change(fs, req,
				    how == REVOKE_BREAK
					    ? "break locks"
					    : "ask holders to let go",
				    EPERM);
		if (err < 0)
			return fs_reply_err(req, -err);
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
	identity_for_log(ctx->who, sizeof(ctx->who), fctx->pid, fctx->uid);
	memcpy(ctx->dir, dir, len + 1);
	err = revoke_start(fs->session, dir, how, revoke_done, ctx);
	if (err < 0) {
		free(ctx);
		fs_reply_err(req, -err);
	}
}
