/*
 * opts.c - command line parsing (see opts.h).
 */
#include "opts.h"

#include <assert.h>
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
	OPTS_KEY_REENTRANT,
	/* Numbers: parsed strictly here, not by fuse_opt's sscanf, which
	 * takes "1.5" as 1 and wraps "uid=4294967296" to 0. */
	OPTS_KEY_SESSION_TIMEOUT,
	OPTS_KEY_CONNECT_TIMEOUT,
	OPTS_KEY_JEOPARDY_MARGIN,
	OPTS_KEY_UID,
	OPTS_KEY_GID,
	OPTS_KEY_UMASK,
	/* Strings, kept as given. */
	OPTS_KEY_ON_LOST,
	OPTS_KEY_ON_REVOKE,
	OPTS_KEY_AUTH_FILE,
	OPTS_KEY_METRICS_FILE,
	OPTS_KEY_DIALECT,
	OPTS_KEY_MAX_READ, /* refused: a lock file's text needs more */
	OPTS_KEY_COUNT
};

static const struct fuse_opt opts_table[] = {
	FUSE_OPT_KEY("on_lost=", OPTS_KEY_ON_LOST),
	FUSE_OPT_KEY("on_revoke=", OPTS_KEY_ON_REVOKE),
	FUSE_OPT_KEY("auth_file=", OPTS_KEY_AUTH_FILE),
	FUSE_OPT_KEY("metrics_file=", OPTS_KEY_METRICS_FILE),
	FUSE_OPT_KEY("dialect=", OPTS_KEY_DIALECT),
	FUSE_OPT_KEY("max_read=", OPTS_KEY_MAX_READ),
	FUSE_OPT_KEY("session_timeout=", OPTS_KEY_SESSION_TIMEOUT),
	FUSE_OPT_KEY("connect_timeout=", OPTS_KEY_CONNECT_TIMEOUT),
	FUSE_OPT_KEY("jeopardy_margin_ms=", OPTS_KEY_JEOPARDY_MARGIN),
	FUSE_OPT_KEY("uid=", OPTS_KEY_UID),
	FUSE_OPT_KEY("gid=", OPTS_KEY_GID),
	FUSE_OPT_KEY("umask=", OPTS_KEY_UMASK),
	FUSE_OPT_KEY("-h", OPTS_KEY_HELP),
	FUSE_OPT_KEY("--help", OPTS_KEY_HELP),
	FUSE_OPT_KEY("-V", OPTS_KEY_VERSION),
	FUSE_OPT_KEY("--version", OPTS_KEY_VERSION),
	FUSE_OPT_KEY("-f", OPTS_KEY_FOREGROUND),
	FUSE_OPT_KEY("-d", OPTS_KEY_DEBUG),
	FUSE_OPT_KEY("debug", OPTS_KEY_DEBUG),
	FUSE_OPT_KEY("-s", OPTS_KEY_SINGLE),
	FUSE_OPT_KEY("ro", OPTS_KEY_RO),
	FUSE_OPT_KEY("reentrant", OPTS_KEY_REENTRANT),
	FUSE_OPT_KEY("rw", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("dev", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("suid", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("_netdev", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_END
};

struct opts_ctx {
	struct opts opts;
	struct opts *o;
	char *err;
	size_t errlen;
	int failed;
	unsigned char seen[OPTS_KEY_COUNT]; /* our -o options given so far */
};

static int opts_fail(struct opts_ctx *c, const char *msg, const char *arg)
{
	if (!c->failed)
		snprintf(c->err, c->errlen, msg, arg);
	c->failed = 1;
	return -1;
}

/* The numeric options: name=value, how to read the value, and what to say
 * when it is not that. */
struct opts_number {
	unsigned base;
	unsigned long min, max;
	const char *expected;
};

static const struct opts_number opts_seconds = {
	10, 1, 3600, "a whole number of seconds, 1 to 3600"
};
static const struct opts_number opts_millis = {
	10, 100, 900000, "a whole number of milliseconds, 100 to 900000"
};
static const struct opts_number opts_id = {
	/* (uid_t)-1 means "no change" to chown(2): not an owner. */
	10, 0, 4294967294UL, "a decimal number, 0 to 4294967294"
};
static const struct opts_number opts_mode = {
	8, 0, 0777, "octal mode bits, 0 to 777 (e.g. umask=007)"
};

static int opts_number(struct opts_ctx *c, const char *arg,
		       const struct opts_number *kind, unsigned long *out)
{
	const char *value = strchr(arg, '=') + 1;
	int rc =
		opts_parse_number(value, kind->base, kind->min, kind->max, out);

	if (rc < 0 && !c->failed) {
		snprintf(c->err, c->errlen, "-o %s: %s; expected %s", arg,
			 rc == -ERANGE ? "out of range" : "not a number",
			 kind->expected);
		c->failed = 1;
	}
	return rc < 0 ? -1 : 0;
}

static int opts_proc_number(struct opts_ctx *c, const char *arg, int key)
{
	struct opts *o = c->o;
	unsigned long v;

	switch (key) {
	case OPTS_KEY_SESSION_TIMEOUT:
		if (opts_number(c, arg, &opts_seconds, &v) < 0)
			return -1;
		o->session_timeout = (int)v;
		return 0;
	case OPTS_KEY_CONNECT_TIMEOUT:
		if (opts_number(c, arg, &opts_seconds, &v) < 0)
			return -1;
		o->connect_timeout = (int)v;
		return 0;
	case OPTS_KEY_JEOPARDY_MARGIN:
		if (opts_number(c, arg, &opts_millis, &v) < 0)
			return -1;
		o->jeopardy_margin_ms = (int)v;
		return 0;
	case OPTS_KEY_UID:
		if (opts_number(c, arg, &opts_id, &v) < 0)
			return -1;
		o->uid = (unsigned)v;
		o->has_uid = 1;
		return 0;
	case OPTS_KEY_GID:
		if (opts_number(c, arg, &opts_id, &v) < 0)
			return -1;
		o->gid = (unsigned)v;
		o->has_gid = 1;
		return 0;
	default:
		assert(key == OPTS_KEY_UMASK);
		if (opts_number(c, arg, &opts_mode, &v) < 0)
			return -1;
		o->umask = (unsigned)v;
		o->has_umask = 1;
		return 0;
	}
}

/* A string option's value, copied (a later one replaces it). */
static int opts_proc_string(struct opts_ctx *c, const char *arg, int key)
{
	char *value = strdup(strchr(arg, '=') + 1);
	char **slot = key == OPTS_KEY_ON_LOST        ? &c->o->on_lost
		      : key == OPTS_KEY_ON_REVOKE    ? &c->o->on_revoke
		      : key == OPTS_KEY_AUTH_FILE    ? &c->o->auth_file
		      : key == OPTS_KEY_METRICS_FILE ? &c->o->metrics_file
						     : &c->o->dialect;

	if (!value)
		return opts_fail(c, "out of memory (%s)", arg);
	free(*slot);
	*slot = value;
	return 0;
}

/* One of our -o options.  Given again, the later one counts, as with
 * mount(8) (an fstab line's options and a unit's may both name one), and
 * the start says so: o->repeated names them. */
static int opts_proc_ours(struct opts_ctx *c, const char *arg, int key)
{
	char *repeated = c->o->repeated;
	size_t used = strlen(repeated);
	int len = (int)strcspn(arg, "=");

	if (c->seen[key] && used + (size_t)len + 3 < sizeof(c->o->repeated))
		snprintf(repeated + used, sizeof(c->o->repeated) - used,
			 "%s%.*s", used ? ", " : "", len, arg);
	c->seen[key] = 1;
	switch (key) {
	case OPTS_KEY_ON_LOST:
	case OPTS_KEY_ON_REVOKE:
	case OPTS_KEY_AUTH_FILE:
	case OPTS_KEY_METRICS_FILE:
	case OPTS_KEY_DIALECT:
		return opts_proc_string(c, arg, key);
	case OPTS_KEY_MAX_READ:
		return opts_fail(c,
				 "-o %s: refused: a lock file's text (token "
				 "and node path) needs reads of its own size",
				 arg);
	default:
		return opts_proc_number(c, arg, key);
	}
}

static int opts_proc(void *data, const char *arg, int key,
		     struct fuse_args *outargs)
{
	struct opts_ctx *c = data;

	(void)outargs;
	if (key >= OPTS_KEY_SESSION_TIMEOUT && key < OPTS_KEY_COUNT)
		return opts_proc_ours(c, arg, key);
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
	case OPTS_KEY_REENTRANT:
		c->o->reentrant = 1;
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
		return opts_fail(c,
				 "a lock filesystem cannot be mounted "
				 "read-only (%s)",
				 "-o ro");
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
		if (strcmp(arg, "default_permissions") == 0)
			c->o->default_permissions = 1;
		return 1; /* an -o option for libfuse */
	default:
		return 1;
	}
}

int opts_parse_dialect(const char *value, enum zkl_style *style)
{
	static const enum zkl_style dialects[] = {
		ZKL_STYLE_ZKLOCKFS,
		ZKL_STYLE_CURATOR,
		ZKL_STYLE_KAZOO,
	};

	for (size_t i = 0; i < sizeof(dialects) / sizeof(dialects[0]); i++)
		if (strcmp(value, names_style_str(dialects[i])) == 0) {
			*style = dialects[i];
			return 0;
		}
	return -EINVAL;
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
		snprintf(err, errlen,
			 "usage: %s [options] CONNECT MOUNTPOINT (see --help)",
			 argv[0]);
		return -EINVAL;
	}
	o->style = ZKL_STYLE_ZKLOCKFS;
	if (o->dialect && opts_parse_dialect(o->dialect, &o->style) < 0) {
		snprintf(err, errlen,
			 "dialect=%s: expected zklockfs, curator or kazoo",
			 o->dialect);
		return -EINVAL;
	}
	if (o->on_lost && opts_parse_on_lost(o->on_lost, &o->on_lost_signal)) {
		snprintf(err, errlen,
			 "on_lost=%s: expected log, signal or "
			 "signal:SIG (e.g. signal:KILL)",
			 o->on_lost);
		return -EINVAL;
	}
	if (o->on_revoke &&
	    opts_parse_on_lost(o->on_revoke, &o->on_revoke_signal)) {
		snprintf(err, errlen,
			 "on_revoke=%s: expected log, signal or "
			 "signal:SIG (e.g. signal:USR1)",
			 o->on_revoke);
		return -EINVAL;
	}
	/* The daemon leaves its working directory when it detaches. */
	if (o->metrics_file && o->metrics_file[0] != '/') {
		snprintf(err, errlen,
			 "metrics_file=%s: must be an absolute path",
			 o->metrics_file);
		return -EINVAL;
	}
	/* Beyond a quarter, heartbeats answered on time would reach it. */
	if (o->jeopardy_margin_ms * 4 >= o->session_timeout * 1000) {
		snprintf(err, errlen,
			 "jeopardy_margin_ms=%d: must be under a quarter of "
			 "the session timeout (%d ms)",
			 o->jeopardy_margin_ms, o->session_timeout * 1000);
		return -EINVAL;
	}
	return opts_split_connect(o->connect, &o->hosts, &o->base, err, errlen);
}

void opts_free(struct opts *o)
{
	free(o->hosts);
	free(o->base);
	free(o->on_lost);
	free(o->on_revoke);
	free(o->dialect);
	free(o->auth_file);
	free(o->metrics_file);
	o->hosts = o->base = o->on_lost = o->auth_file = o->dialect = NULL;
	o->on_revoke = o->metrics_file = NULL;
}
