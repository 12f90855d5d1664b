/*
 * main.c - zklockfs: ZooKeeper locks as files.
 *
 *   zklockfs [options] CONNECT MOUNTPOINT
 *
 * The ladder: parse options, detach (reporting the outcome to the parent
 * through a pipe, so that "cannot reach ZooKeeper" is the exit status of
 * the command the user typed), connect to ZooKeeper, mount, serve, and on
 * the way out fail parked requests, close the session (which deletes this
 * mount's lock nodes) and unmount.
 */
#include "config.h"
#include "deadlock.h"
#include "fs.h"
#include "log.h"
#include "metrics.h"
#include "opts.h"
#include "snapshot.h"
#include "tls.h"
#include "trace.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>
#include <zookeeper/zookeeper_version.h>

/* Workers libfuse may run.  None ever waits for a lock, so a few serve
 * any number of waiters. */
#define MAIN_MAX_THREADS 8

/* Name the mount after CONNECT in /proc/mounts, type fuse.zklockfs.
 * Commas separate -o options, so those of an ensemble list are escaped. */
static int main_add_fsname(struct fuse_args *args, const char *connect)
{
	char opt[1200] = "-ofsname=";
	size_t len = strlen(opt);

	for (const char *c = connect; *c && len + 3 < sizeof(opt); c++) {
		if (*c == ',' || *c == '\\')
			opt[len++] = '\\';
		opt[len++] = *c;
	}
	opt[len] = '\0';
	if (fuse_opt_add_arg(args, opt) < 0 ||
	    fuse_opt_add_arg(args, "-osubtype=zklockfs") < 0)
		return -ENOMEM;
	return 0;
}

/* Fork; the parent waits for the child's verdict and exits with it.
 * Returns the write end of the pipe in the child. */
static int main_detach(void)
{
	int fds[2];
	unsigned char status = 1;
	pid_t pid;

	if (pipe(fds) < 0) {
		perror("zklockfs: pipe");
		exit(1);
	}
	pid = fork();
	if (pid < 0) {
		perror("zklockfs: fork");
		exit(1);
	}
	if (pid > 0) {
		close(fds[1]);
		if (read(fds[0], &status, 1) != 1)
			status = 1; /* the child died before telling */
		_exit(status);
	}
	close(fds[0]);
	setsid();
	return fds[1];
}

static void main_report(int fd, unsigned char status)
{
	if (fd < 0)
		return;
	/* If the parent is gone there is nobody to tell. */
	(void)!write(fd, &status, 1);
	close(fd);
}

static void main_quiet_stdio(void)
{
	int fd = open("/dev/null", O_RDWR);

	if (fd < 0)
		return;
	dup2(fd, 0);
	dup2(fd, 1);
	dup2(fd, 2);
	if (fd > 2)
		close(fd);
}

/* A kernel with a FUSE request timeout aborts the whole connection when an
 * open waits longer than that: say so. */
static void main_warn_request_timeout(void)
{
	static const char *const files[] = {
		"/proc/sys/fs/fuse/default_request_timeout",
		"/proc/sys/fs/fuse/max_request_timeout",
	};

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		FILE *f = fopen(files[i], "r");
		long v = 0;
		if (!f)
			continue;
		if (fscanf(f, "%ld", &v) == 1 && v > 0)
			log_msg(LOG_WARNING,
				"%s is %ld: the kernel will abort this mount "
				"when an open waits longer than that",
				files[i], v);
		fclose(f);
	}
}

/* Tell a service manager how the daemon is doing, with systemd's
 * readiness protocol (sd_notify(3)): a datagram to the socket named by
 * $NOTIFY_SOCKET; without that variable nothing is sent.  The protocol is
 * a few lines, so no libsystemd.  `state` is "READY=1", "STOPPING=1", ...
 * Returns 0, or -errno; a failure is no reason to stop serving. */
static int notify_send(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len;
	ssize_t sent;
	int fd, err = 0;

	if (!path || !*path)
		return 0;
	len = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || len >= sizeof(sa.sun_path))
		return -EINVAL;
	memcpy(sa.sun_path, path, len);
	if (path[0] == '@') /* an abstract socket: a leading NUL byte */
		sa.sun_path[0] = '\0';
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	sent = sendto(
		fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa,
		(socklen_t)(offsetof(struct sockaddr_un, sun_path) + len));
	if (sent < 0)
		err = -errno;
	close(fd);
	return err;
}

/* Tell systemd (Type=notify) that the mount is there to use. */
static void main_notify_ready(const struct opts *o)
{
	char *msg = NULL;

	if (asprintf(&msg, "READY=1\nMAINPID=%d\nSTATUS=%s on %s",
		     (int)getpid(), o->connect, o->mountpoint) < 0)
		msg = NULL;
	if (!msg || notify_send(msg) < 0)
		log_msg(LOG_WARNING,
			"cannot tell the service manager that "
			"the mount is ready (NOTIFY_SOCKET=%s)",
			getenv("NOTIFY_SOCKET"));
	free(msg);
}

static int main_serve(struct fuse_session *se)
{
	struct fuse_loop_config *cfg = fuse_loop_cfg_create();
	int rc;

	if (!cfg)
		return -ENOMEM;
	fuse_loop_cfg_set_max_threads(cfg, MAIN_MAX_THREADS);
	fuse_loop_cfg_set_idle_threads(cfg, 2);
	rc = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);
	return rc;
}

int main(int argc, char **argv)
{
	struct fuse_args args;
	struct fuse_session *se = NULL;
	struct zkl_fs fs;
	struct opts o;
	char err[OPTS_MAX_BASE + 512], auth[256];
	/* "CA,CERT,KEY[,PASSWORD]" (tlsfiles_read) */
	char tls[3 * PATH_MAX + 1024];
	struct metrics_file *mf = NULL;
	int report_fd = -1, rc = 1, opened, polling = 0;

	/* First: every exit below tears down what this set up. */
	fs_context_init(&fs);
	if (opts_parse(argc, argv, &o, &args, err, sizeof(err)) < 0) {
		fprintf(stderr, "zklockfs: %s\n", err);
		rc = 2;
		goto out_args;
	}
	if (o.show_help || o.show_version) {
		if (o.show_help)
			opts_print_help(argv[0]);
		else
			printf("zklockfs %s (libfuse %s, ZooKeeper C client "
			       "%s, %s)\n",
			       ZKLOCKFS_VERSION, fuse_pkgversion(), ZOO_VERSION,
			       tls_built_in ? "with TLS" : "without TLS");
		rc = 0;
		goto out_opts;
	}
	log_setup(LOG_TO_STDERR, o.debug ? LOG_DEBUG : LOG_INFO);
	if (o.repeated[0])
		log_msg(LOG_WARNING,
			"-o %s given more than once: the last one counts",
			o.repeated);
	if ((o.has_uid || o.has_gid || o.has_umask) && !o.default_permissions)
		log_msg(LOG_WARNING,
			"uid=, gid= and umask= set the owner and mode the "
			"files show; without -o default_permissions nothing "
			"checks them for taking locks, and with allow_other "
			"every user may take them");
	if (main_add_fsname(&args, o.connect) < 0) {
		fprintf(stderr, "zklockfs: out of memory\n");
		goto out_opts;
	}
	main_warn_request_timeout();
	/* Everything that can be checked is, before anything is created in
	 * ZooKeeper or a second process exists: libfuse's options here. */
	se = fuse_session_new(&args, &fs_ops, sizeof(fs_ops), &fs);
	if (!se) {
		rc = 2; /* libfuse said which option */
		goto out_opts;
	}
	if (mountpoint_check(o.mountpoint, err, sizeof(err)) < 0 ||
	    resolve_check(o.hosts, err, sizeof(err)) < 0 ||
	    (o.metrics_file &&
	     metrics_file_check(o.metrics_file, err, sizeof(err)) < 0)) {
		fprintf(stderr, "zklockfs: %s\n", err);
		goto out_fuse;
	}
	/* Before the detach leaves the working directory. */
	fs.mountpoint = realpath(o.mountpoint, NULL);
	if (tree_init(&fs.tree, o.base) < 0) {
		fprintf(stderr, "zklockfs: out of memory\n");
		goto out_fuse;
	}
	/* Set up beside the tree, as the parts of the context with a module
	 * of their own are (fs.c knows none of them). */
	holdcache_init(&fs.holders);
	if (!o.foreground) {
		report_fd = main_detach();
		/* Until the parent returns, the start shows where it was
		 * asked for too; from then on only in syslog. */
		log_setup(LOG_TO_STDERR | LOG_TO_SYSLOG,
			  o.debug ? LOG_DEBUG : LOG_INFO);
	}

	fs.uid = o.has_uid ? (uid_t)o.uid : getuid();
	fs.gid = o.has_gid ? (gid_t)o.gid : getgid();
	fs.file_mode = o.has_umask ? 0666 & ~o.umask : 0666;
	fs.dir_mode = o.has_umask ? 0777 & ~o.umask : 0755;
	if (gethostname(fs.hostname, sizeof(fs.hostname) - 1) < 0)
		strcpy(fs.hostname, "?");

	/* A password read below stays in memory for the mount's life (each
	 * connection needs it): out of core dumps (the limit of 0 for crash
	 * collectors that dump even what is not dumpable, as systemd-coredump
	 * and apport honour it), and out of reach of the processes of the
	 * daemon's user that may not ptrace everything (/proc/PID/mem). */
	if ((o.auth_file || o.tls_key_password_file) &&
	    (prctl(PR_SET_DUMPABLE, 0) < 0 ||
	     setrlimit(RLIMIT_CORE, &(struct rlimit){ 0, 0 }) < 0)) {
		fprintf(stderr,
			"zklockfs: cannot keep the password out of core "
			"dumps: %s\n",
			strerror(errno));
		goto out_tree;
	}
	if (o.auth_file && authfile_read(o.auth_file, auth, sizeof(auth), err,
					 sizeof(err)) < 0) {
		fprintf(stderr, "zklockfs: %s\n", err);
		goto out_tree;
	}
	if (o.tls_ca &&
	    tlsfiles_read(&o, tls, sizeof(tls), err, sizeof(err)) < 0) {
		fprintf(stderr, "zklockfs: %s\n", err);
		goto out_tree;
	}
	/* The benchmarks' timeline of each lock (trace.h, HACKING.md). */
	if ((rc = trace_start(getenv("ZKLOCKFS_TRACE"))) < 0) {
		fprintf(stderr, "zklockfs: ZKLOCKFS_TRACE=%s: %s\n",
			getenv("ZKLOCKFS_TRACE"), strerror(-rc));
		rc = 1;
		goto out_tree;
	}
	/* After the fork: threads do not survive it. */
	if ((rc = waiter_poller_start(&fs)) < 0) {
		fprintf(stderr, "zklockfs: cannot start a thread: %s\n",
			strerror(-rc));
		rc = 1;
		goto out_tree;
	}
	/* Before its thread reads it. */
	fs.deadlock_timeout_ms =
		o.deadlock_timeout_ms < 0 ? 1000 : o.deadlock_timeout_ms;
	if ((rc = deadlock_checker_start(&fs)) < 0) {
		fprintf(stderr, "zklockfs: cannot start a thread: %s\n",
			strerror(-rc));
		pthread_mutex_lock(&fs.lock);
		fs.stopping = 1;
		pthread_mutex_unlock(&fs.lock);
		waiter_poller_stop(&fs);
		rc = 1;
		goto out_tree;
	}
	polling = 1;
	rc = 1;
	struct zkl_session_opts so = {
		.hosts = o.hosts,
		.base = o.base,
		.session_timeout_ms = o.session_timeout * 1000,
		.connect_timeout_ms = o.connect_timeout * 1000,
		.zk_log_level = o.debug ? ZOO_LOG_LEVEL_INFO
					: ZOO_LOG_LEVEL_ERROR,
		.digest_auth = o.auth_file ? auth : NULL,
		.tls_files = o.tls_ca ? tls : NULL,
		.x509_acl = o.x509_acl,
		.dialect = o.style,
		.jeopardy_margin_ms = o.jeopardy_margin_ms,
		.persistent_resources = o.persistent_resources,
	};
	opened = session_open(&so, &fs.session, err, sizeof(err));
	/* The session keeps its own copies. */
	explicit_bzero(auth, sizeof(auth));
	explicit_bzero(tls, sizeof(tls));
	if (opened < 0) {
		fprintf(stderr, "zklockfs: %s\n", err);
		goto out_tree;
	}
	fs.on_lost_signal = o.on_lost_signal;
	fs.on_revoke_signal = o.on_revoke_signal;
	fs.reentrant = o.reentrant;
	fs.anyone_may_ask = o.anyone_may_ask;
	session_set_lost_hook(fs.session, fs_lock_lost, &fs);
	session_set_revoke_hook(fs.session, fs_lock_revoked, &fs);
	if (fuse_set_signal_handlers(se) < 0)
		goto out_session;
	if (fuse_session_mount(se, o.mountpoint) < 0) {
		fprintf(stderr, "zklockfs: cannot mount on %s\n", o.mountpoint);
		goto out_signals;
	}
	clock_gettime(CLOCK_MONOTONIC, &fs.started);
	clock_gettime(CLOCK_REALTIME, &fs.mounted_at);
	log_msg(LOG_INFO, "mounted %s on %s (session 0x%llx)", o.connect,
		o.mountpoint, (unsigned long long)session_id(fs.session));
	if (report_fd >= 0) {
		main_report(report_fd, 0);
		report_fd = -1;
		log_setup(LOG_TO_SYSLOG, o.debug ? LOG_DEBUG : LOG_INFO);
		main_quiet_stdio();
	}
	main_notify_ready(&o);
	if (o.metrics_file && metrics_file_start(&fs, o.metrics_file, &mf) < 0)
		log_msg(LOG_WARNING, "metrics_file=%s: cannot start its writer",
			o.metrics_file);

	rc = main_serve(se) < 0 ? 1 : 0;
	metrics_file_stop(mf);

	notify_send("STOPPING=1");
	log_msg(LOG_INFO, "unmounting %s", o.mountpoint);
	lockfile_shutdown_all(&fs);
	session_close(fs.session);
	fs.session = NULL;
	/* The kernel sends no RELEASE once we stop reading. */
	snapshot_release_all(&fs);
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	if (fs.session)
		session_close(fs.session);
out_tree:
	/* After the session's end: no fetch is left to answer. */
	holdcache_destroy(&fs.holders);
	tree_destroy(&fs.tree);
out_fuse:
	fuse_session_destroy(se);
out_opts:
	main_report(report_fd, 1);
	if (polling) {
		pthread_mutex_lock(&fs.lock);
		fs.stopping = 1;
		pthread_mutex_unlock(&fs.lock);
		waiter_poller_stop(&fs);
		deadlock_checker_stop(&fs);
	}
	opts_free(&o);
out_args:
	fuse_opt_free_args(&args);
	fs_context_destroy(&fs);
	return rc;
}
