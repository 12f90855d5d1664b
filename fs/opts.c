/*
 * opts.c - command line parsing (see opts.h).
 */
#include "opts.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	OPTS_KEY_HELP,
	OPTS_KEY_VERSION,
	OPTS_KEY_FOREGROUND,
	OPTS_KEY_DEBUG,
	OPTS_KEY_SINGLE,
	OPTS_KEY_RO,
};

#define OPTS_OPT(t, p) { t, offsetof(struct opts, p), 1 }

static const struct fuse_opt opts_table[] = {
	OPTS_OPT("session_timeout=%d", session_timeout),
	OPTS_OPT("connect_timeout=%d", connect_timeout),
	OPTS_OPT("on_lost=%s", on_lost),
	OPTS_OPT("auth_file=%s", auth_file),
	OPTS_OPT("uid=%u", uid),
	OPTS_OPT("uid=", has_uid),
	OPTS_OPT("gid=%u", gid),
	OPTS_OPT("gid=", has_gid),
	OPTS_OPT("umask=%o", umask),
	OPTS_OPT("umask=", has_umask),
	FUSE_OPT_KEY("-h", OPTS_KEY_HELP),
	FUSE_OPT_KEY("--help", OPTS_KEY_HELP),
	FUSE_OPT_KEY("-V", OPTS_KEY_VERSION),
	FUSE_OPT_KEY("--version", OPTS_KEY_VERSION),
	FUSE_OPT_KEY("-f", OPTS_KEY_FOREGROUND),
	FUSE_OPT_KEY("-d", OPTS_KEY_DEBUG),
	FUSE_OPT_KEY("debug", OPTS_KEY_DEBUG),
	FUSE_OPT_KEY("-s", OPTS_KEY_SINGLE),
	FUSE_OPT_KEY("ro", OPTS_KEY_RO),
	FUSE_OPT_KEY("rw", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("dev", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("suid", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("_netdev", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_END
};

/* fuse_opt_parse applies the table's offsets to the same pointer it hands
 * to opts_proc: the options come first. */
struct opts_ctx {
	struct opts opts;
	struct opts *o;
	char *err;
	size_t errlen;
	int failed;
};

static int opts_fail(struct opts_ctx *c, const char *msg, const char *arg)
{
	if (!c->failed)
		snprintf(c->err, c->errlen, msg, arg);
	c->failed = 1;
	return -1;
}

static int opts_proc(void *data, const char *arg, int key,
		     struct fuse_args *outargs)
{
	struct opts_ctx *c = data;

	(void)outargs;
	switch (key) {
	case OPTS_KEY_HELP:
		c->o->show_help = 1;
		return 0;
	case OPTS_KEY_VERSION:
		c->o->show_version = 1;
		return 0;
	case OPTS_KEY_FOREGROUND:
		c->o->foreground = 1;
		return 0;
	case OPTS_KEY_DEBUG:
		c->o->debug = 1;
		c->o->foreground = 1;
		return 0;
	case OPTS_KEY_SINGLE:
		/* Harmless: nothing in zklockfs needs more than one thread to
		 * make progress, since no request ever blocks a worker. */
		return 0;
	case OPTS_KEY_RO:
		return opts_fail(c, "a lock filesystem cannot be mounted "
				    "read-only (%s)", "-o ro");
	case FUSE_OPT_KEY_NONOPT:
		if (!c->o->connect) {
			c->o->connect = (char *)arg;
			return 0;
		}
		if (!c->o->mountpoint) {
			c->o->mountpoint = (char *)arg;
			return 0;
		}
		return opts_fail(c, "unexpected argument '%s'", arg);
	case FUSE_OPT_KEY_OPT:
		if (arg[0] == '-' && arg[1] != 'o')
			return opts_fail(c, "unknown option '%s' (see --help)",
					 arg);
		return 1; /* an -o option for libfuse */
	default:
		return 1;
	}
}

int opts_parse_on_lost(const char *value, int *sig)
{
	const char *name;
	char *end;
	long num;

	if (strcmp(value, "log") == 0) {
		*sig = 0;
		return 0;
	}
	if (strcmp(value, "signal") == 0) {
		*sig = SIGTERM;
		return 0;
	}
	if (strncmp(value, "signal:", 7) != 0 || !value[7])
		return -EINVAL;
	name = value + 7;
	num = strtol(name, &end, 10);
	if (*end == '\0')
		return num > 0 && num < NSIG ? (*sig = (int)num, 0) : -EINVAL;
	if (strncmp(name, "SIG", 3) == 0)
		name += 3;
	for (int i = 1; i < NSIG; i++) {
		const char *abbrev = sigabbrev_np(i);
		if (abbrev && strcmp(abbrev, name) == 0) {
			*sig = i;
			return 0;
		}
	}
	return -EINVAL;
}

int opts_split_connect(const char *connect, char **hosts, char **base,
		       char *err, size_t errlen)
{
	const char *slash = strchr(connect, '/');
	size_t hlen = slash ? (size_t)(slash - connect) : strlen(connect);
	const char *b = slash ? slash : OPTS_DEFAULT_BASE;
	size_t blen = strlen(b);

	if (hlen == 0) {
		snprintf(err, errlen, "CONNECT '%s' names no server "
				      "(expected host:port[,...][/path])",
			 connect);
		return -EINVAL;
	}
	if (blen < 2 || b[blen - 1] == '/' || strstr(b, "//") ||
	    blen > 512) {
		snprintf(err, errlen,
			 "base path '%s' must be absolute, not '/', and have "
			 "no empty component or trailing '/'",
			 b);
		return -EINVAL;
	}
	*hosts = strndup(connect, hlen);
	*base = strdup(b);
	if (!*hosts || !*base) {
		free(*hosts);
		free(*base);
		*hosts = *base = NULL;
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

int opts_parse(int argc, char **argv, struct opts *o,
	       struct fuse_args *fuse_args, char *err, size_t errlen)
{
	struct opts_ctx c = { .err = err, .errlen = errlen };
	int rc;

	c.o = &c.opts;
	c.opts.session_timeout = OPTS_DEFAULT_SESSION_TIMEOUT;
	c.opts.connect_timeout = OPTS_DEFAULT_CONNECT_TIMEOUT;
	*fuse_args = (struct fuse_args)FUSE_ARGS_INIT(argc, argv);
	rc = fuse_opt_parse(fuse_args, &c, opts_table, opts_proc);
	*o = c.opts;
	if (rc < 0 || c.failed) {
		if (!c.failed)
			snprintf(err, errlen, "invalid options (see --help)");
		return -EINVAL;
	}
	if (o->show_help || o->show_version)
		return 0;
	if (!o->connect || !o->mountpoint) {
		snprintf(err, errlen, "usage: %s [options] CONNECT MOUNTPOINT "
				      "(see --help)",
			 argv[0]);
		return -EINVAL;
	}
	if (o->session_timeout < 1 || o->session_timeout > 3600 ||
	    o->connect_timeout < 1 || o->connect_timeout > 3600) {
		snprintf(err, errlen, "session_timeout and connect_timeout "
				      "take 1 to 3600 seconds");
		return -EINVAL;
	}
	if (o->has_umask && o->umask > 0777) {
		snprintf(err, errlen, "umask=%o: expected octal mode bits "
				      "(e.g. umask=007)", o->umask);
		return -EINVAL;
	}
	if (o->on_lost && opts_parse_on_lost(o->on_lost, &o->on_lost_signal)) {
		snprintf(err, errlen, "on_lost=%s: expected log, signal or "
				      "signal:SIG (e.g. signal:KILL)",
			 o->on_lost);
		return -EINVAL;
	}
	return opts_split_connect(o->connect, &o->hosts, &o->base, err,
				  errlen);
}

void opts_free(struct opts *o)
{
	free(o->hosts);
	free(o->base);
	free(o->on_lost);
	free(o->auth_file);
	o->hosts = o->base = o->on_lost = o->auth_file = NULL;
}

void opts_print_help(const char *progname)
{
	printf("usage: %s [options] CONNECT MOUNTPOINT\n"
	       "\n"
	       "Mount ZooKeeper locks as files: open MOUNTPOINT/<resource>/write\n"
	       "blocks until the exclusive lock is held, .../read until a shared\n"
	       "lock is held; the last close releases it.  <resource>/holders\n"
	       "lists who holds and waits, MOUNTPOINT/.status this mount's\n"
	       "session; see zklockfs(8).\n"
	       "\n"
	       "CONNECT is host:port[,host:port...][/base/path]; the base path\n"
	       "defaults to %s and is created if missing.\n"
	       "\n"
	       "options:\n"
	       "    -h, --help               print this help and exit\n"
	       "    -V, --version            print the version and exit\n"
	       "    -f                       stay in the foreground, log to stderr\n"
	       "    -d, -o debug             foreground, log every request\n"
	       "    -s                       accepted; has no effect\n"
	       "    -o session_timeout=SECS  ZooKeeper session timeout (default %d)\n"
	       "    -o connect_timeout=SECS  give up if no server answers at start\n"
	       "                             (default %d)\n"
	       "    -o on_lost=log|signal[:SIG]\n"
	       "                             when a held lock is lost with its\n"
	       "                             session: only log it (default), or\n"
	       "                             also send SIG (default TERM) to the\n"
	       "                             holder's process group\n"
	       "    -o auth_file=PATH        authenticate to ZooKeeper as the\n"
	       "                             user:password in PATH (digest) and\n"
	       "                             give the nodes created to it alone\n"
	       "    -o uid=N,gid=N           owner of the files (default: the\n"
	       "                             daemon's user and group)\n"
	       "    -o umask=OCTAL           mode bits to take away from the files\n"
	       "                             (0666) and directories (0777); the\n"
	       "                             default leaves 0666 and 0755\n"
	       "    -o allow_other           let other users use the mount\n"
	       "    -o default_permissions   let the kernel check file modes\n"
	       "    -o ro                    refused: locks need writing\n",
	       progname, OPTS_DEFAULT_BASE, OPTS_DEFAULT_SESSION_TIMEOUT,
	       OPTS_DEFAULT_CONNECT_TIMEOUT);
}
