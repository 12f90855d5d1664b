/*
 * opts.c - the command line (see opts.h): the option table that feeds
 * both the parser and --help, strict numbers, CONNECT's server list and
 * base path, and what the line names checked before anything is sent:
 * the servers' names, the mount point, the credentials file.
 */
#include "opts.h"
#include "tls.h"
#include "tree.h"
#include "log.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

/*
 * Parsing.
 */
enum {
	OPTS_KEY_HELP,
	OPTS_KEY_VERSION,
	OPTS_KEY_FOREGROUND,
	OPTS_KEY_DEBUG,
	OPTS_KEY_SINGLE,
	OPTS_KEY_RO,
	OPTS_KEY_REENTRANT,
	OPTS_KEY_ANYONE_MAY_ASK,
	OPTS_KEY_X509_ACL,
	/* Numbers: parsed strictly here, not by fuse_opt's sscanf, which
	 * takes "1.5" as 1 and wraps "uid=4294967296" to 0. */
	OPTS_KEY_SESSION_TIMEOUT,
	OPTS_KEY_CONNECT_TIMEOUT,
	OPTS_KEY_JEOPARDY_MARGIN,
	OPTS_KEY_DEADLOCK_TIMEOUT,
	OPTS_KEY_UID,
	OPTS_KEY_GID,
	OPTS_KEY_UMASK,
	/* Strings, kept as given. */
	OPTS_KEY_ON_LOST,
	OPTS_KEY_ON_REVOKE,
	OPTS_KEY_AUTH_FILE,
	OPTS_KEY_METRICS_FILE,
	OPTS_KEY_DIALECT,
	OPTS_KEY_CONTAINERS,
	OPTS_KEY_TLS_CA,
	OPTS_KEY_TLS_CERT,
	OPTS_KEY_TLS_KEY,
	OPTS_KEY_TLS_KEY_PASSWORD_FILE,
	OPTS_KEY_MAX_READ, /* refused: a lock file's text needs more */
	OPTS_KEY_COUNT
};

static const struct fuse_opt opts_table[] = {
	FUSE_OPT_KEY("on_lost=", OPTS_KEY_ON_LOST),
	FUSE_OPT_KEY("on_revoke=", OPTS_KEY_ON_REVOKE),
	FUSE_OPT_KEY("auth_file=", OPTS_KEY_AUTH_FILE),
	FUSE_OPT_KEY("metrics_file=", OPTS_KEY_METRICS_FILE),
	FUSE_OPT_KEY("dialect=", OPTS_KEY_DIALECT),
	FUSE_OPT_KEY("containers=", OPTS_KEY_CONTAINERS),
	FUSE_OPT_KEY("tls_ca=", OPTS_KEY_TLS_CA),
	FUSE_OPT_KEY("tls_cert=", OPTS_KEY_TLS_CERT),
	FUSE_OPT_KEY("tls_key=", OPTS_KEY_TLS_KEY),
	FUSE_OPT_KEY("tls_key_password_file=", OPTS_KEY_TLS_KEY_PASSWORD_FILE),
	FUSE_OPT_KEY("max_read=", OPTS_KEY_MAX_READ),
	FUSE_OPT_KEY("session_timeout=", OPTS_KEY_SESSION_TIMEOUT),
	FUSE_OPT_KEY("connect_timeout=", OPTS_KEY_CONNECT_TIMEOUT),
	FUSE_OPT_KEY("jeopardy_margin_ms=", OPTS_KEY_JEOPARDY_MARGIN),
	FUSE_OPT_KEY("deadlock_timeout_ms=", OPTS_KEY_DEADLOCK_TIMEOUT),
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
	FUSE_OPT_KEY("anyone_may_ask", OPTS_KEY_ANYONE_MAY_ASK),
	FUSE_OPT_KEY("x509_acl", OPTS_KEY_X509_ACL),
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
static const struct opts_number opts_deadlock_millis = {
	10, 0, 3600000, "a whole number of milliseconds, 0 (off) to 3600000"
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
	case OPTS_KEY_DEADLOCK_TIMEOUT:
		if (opts_number(c, arg, &opts_deadlock_millis, &v) < 0)
			return -1;
		o->deadlock_timeout_ms = (int)v;
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
		      : key == OPTS_KEY_CONTAINERS   ? &c->o->containers
		      : key == OPTS_KEY_TLS_CA       ? &c->o->tls_ca
		      : key == OPTS_KEY_TLS_CERT     ? &c->o->tls_cert
		      : key == OPTS_KEY_TLS_KEY      ? &c->o->tls_key
		      : key == OPTS_KEY_TLS_KEY_PASSWORD_FILE
			      ? &c->o->tls_key_password_file
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
	case OPTS_KEY_CONTAINERS:
	case OPTS_KEY_TLS_CA:
	case OPTS_KEY_TLS_CERT:
	case OPTS_KEY_TLS_KEY:
	case OPTS_KEY_TLS_KEY_PASSWORD_FILE:
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
	case OPTS_KEY_ANYONE_MAY_ASK:
		c->o->anyone_may_ask = 1;
		return 0;
	case OPTS_KEY_X509_ACL:
		c->o->x509_acl = 1;
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

/* The TLS options: all of the three files, or none; and only in a build
 * that speaks TLS.  Returns 0 or -EINVAL with err set. */
static int opts_check_tls(const struct opts *o, char *err, size_t errlen)
{
	const char *missing = !o->tls_ca     ? "tls_ca"
			      : !o->tls_cert ? "tls_cert"
			      : !o->tls_key  ? "tls_key"
					     : NULL;

	if (!o->tls_ca && !o->tls_cert && !o->tls_key &&
	    !o->tls_key_password_file && !o->x509_acl)
		return 0;
	if (!tls_built_in) {
		snprintf(err, errlen,
			 "this zklockfs was built without TLS (Debian's "
			 "libzookeeper-mt has none): use a build configured "
			 "with meson setup -Dtls=enabled, such as the "
			 "zklockfs Debian package");
		return -EINVAL;
	}
	/* ZooKeeper gives a CREATOR_ALL node to every identity it knows the
	 * creator by: over TLS, the certificate's subject as well as the
	 * user.  Said, not left to surprise. */
	if (!missing && o->auth_file && !o->x509_acl) {
		snprintf(err, errlen,
			 "auth_file over TLS: ZooKeeper would give the nodes "
			 "to the certificate's subject as well as to the user; "
			 "add -o x509_acl to have both, or leave auth_file out "
			 "and use x509_acl alone");
		return -EINVAL;
	}
	if (missing) {
		snprintf(err, errlen,
			 "%s needs tls_ca, tls_cert and tls_key together "
			 "(%s is missing): ZooKeeper's TLS port asks for the "
			 "client's certificate",
			 o->x509_acl ? "x509_acl (the certificate's identity)"
				     : "TLS",
			 missing);
		return -EINVAL;
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
	c.opts.deadlock_timeout_ms = -1; /* the session's default */
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
	if (o->containers && strcmp(o->containers, "yes") != 0 &&
	    strcmp(o->containers, "no") != 0) {
		snprintf(err, errlen, "containers=%s: expected yes or no",
			 o->containers);
		return -EINVAL;
	}
	o->persistent_resources = o->containers &&
				  strcmp(o->containers, "no") == 0;
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
	if (opts_check_tls(o, err, errlen) < 0)
		return -EINVAL;
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
	free(o->containers);
	free(o->auth_file);
	free(o->metrics_file);
	free(o->tls_ca);
	free(o->tls_cert);
	free(o->tls_key);
	free(o->tls_key_password_file);
	o->tls_ca = o->tls_cert = o->tls_key = o->tls_key_password_file = NULL;
	o->hosts = o->base = o->on_lost = o->auth_file = o->dialect = NULL;
	o->on_revoke = o->metrics_file = o->containers = NULL;
}

/*
 * Strict whole numbers for options (see opts.h).
 */
int opts_parse_number(const char *text, unsigned base, unsigned long min,
		      unsigned long max, unsigned long *out)
{
	unsigned long v = 0;

	if (!*text)
		return -EINVAL;
	for (const char *p = text; *p; p++) {
		unsigned d = *p >= '0' && *p <= '9' ? (unsigned)(*p - '0')
						    : base;
		if (d >= base)
			return -EINVAL;
		if (v > (max - d) / base)
			return -ERANGE;
		v = v * base + d;
	}
	if (v < min)
		return -ERANGE;
	*out = v;
	return 0;
}

/*
 * CONNECT: the server list and the base path, checked
 * before anything is sent (see opts.h).
 */
/* One server "host:port" or "[v6addr]:port" of CONNECT, `len` bytes at
 * `spec`: appended to out as the ZooKeeper client reads it ("host:port";
 * it takes the last ':' as the port's, so an IPv6 address goes without its
 * brackets).  Returns 0 or -EINVAL with a message in err. */
static int opts_server(const char *spec, size_t len, FILE *out, char *err,
		       size_t errlen)
{
	const char *host = spec, *colon = NULL, *port;
	size_t hostlen;
	char portbuf[8];
	unsigned long num;

	if (len > 0 && spec[0] == '[') {
		const char *close = memchr(spec, ']', len);
		if (!close || close + 1 == spec + len || close[1] != ':')
			goto bad;
		host = spec + 1;
		hostlen = (size_t)(close - host);
		colon = close + 1;
	} else {
		for (size_t i = 0; i < len; i++)
			if (spec[i] == ':')
				colon = spec + i;
		if (!colon)
			goto bad;
		hostlen = (size_t)(colon - spec);
	}
	port = colon + 1;
	if (hostlen == 0) {
		snprintf(err, errlen,
			 "server '%.*s': no host name before the port",
			 (int)len, spec);
		return -EINVAL;
	}
	if ((size_t)(spec + len - port) >= sizeof(portbuf))
		goto bad;
	memcpy(portbuf, port, (size_t)(spec + len - port));
	portbuf[spec + len - port] = '\0';
	if (opts_parse_number(portbuf, 10, 1, 65535, &num) < 0) {
		snprintf(err, errlen,
			 "server '%.*s': invalid port '%s' (1 to 65535)",
			 (int)len, spec, portbuf);
		return -EINVAL;
	}
	fprintf(out, "%.*s:%lu", (int)hostlen, host, num);
	return 0;
bad:
	snprintf(err, errlen,
		 "server '%.*s': expected host:port or [IPv6 address]:port",
		 (int)len, spec);
	return -EINVAL;
}

int opts_servers(const char *spec, size_t len, char **hosts, char *err,
		 size_t errlen)
{
	char *text = NULL;
	size_t textlen = 0;
	FILE *out = open_memstream(&text, &textlen);
	const char *end = spec + len;
	int rc = 0;

	if (!out) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (const char *p = spec; rc == 0 && p <= end;) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *stop = comma ? comma : end;

		if (p != spec)
			fputc(',', out);
		rc = opts_server(p, (size_t)(stop - p), out, err, errlen);
		p = stop + 1;
	}
	if (fclose(out) != 0 && rc == 0) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
	}
	if (rc < 0) {
		free(text);
		return rc;
	}
	*hosts = text;
	return 0;
}

int opts_check_base(const char *b, char *err, size_t errlen)
{
	size_t blen = strlen(b), ok = znodename_accepted_len(b, blen);
	const char *why = NULL;

	if (blen > OPTS_MAX_BASE) {
		snprintf(err, errlen, "base path is %zu bytes long, at most %d",
			 blen, OPTS_MAX_BASE);
		return -EINVAL;
	}
	if (b[0] != '/' || blen < 2)
		why = "must be absolute and not '/'";
	else if (b[blen - 1] == '/' || strstr(b, "//"))
		why = "has an empty component or a trailing '/'";
	else if (strstr(b, "/./") || strstr(b, "/../") ||
		 (blen >= 2 && strcmp(b + blen - 2, "/.") == 0) ||
		 (blen >= 3 && strcmp(b + blen - 3, "/..") == 0))
		why = "has a '.' or '..' component (ZooKeeper refuses them)";
	else if (strcmp(b, "/zookeeper") == 0 ||
		 strncmp(b, "/zookeeper/", 11) == 0)
		why = "is inside /zookeeper, ZooKeeper's own tree";
	if (!why && ok < blen) {
		snprintf(err, errlen,
			 "base path has byte 0x%02x at offset %zu, which "
			 "ZooKeeper refuses in a path (control characters, "
			 "characters past U+FFFF and bytes that are not UTF-8)",
			 (unsigned char)b[ok], ok);
		return -EINVAL;
	}
	if (why) {
		snprintf(err, errlen, "base path '%s' %s", b, why);
		return -EINVAL;
	}
	return 0;
}

int opts_split_connect(const char *connect, char **hosts, char **base,
		       char *err, size_t errlen)
{
	const char *slash = strchr(connect, '/');
	size_t hlen = slash ? (size_t)(slash - connect) : strlen(connect);
	const char *b = slash ? slash : OPTS_DEFAULT_BASE;

	if (hlen == 0) {
		snprintf(err, errlen,
			 "CONNECT '%s' names no server "
			 "(expected host:port[,...][/path])",
			 connect);
		return -EINVAL;
	}
	if (opts_check_base(b, err, errlen) < 0)
		return -EINVAL;
	if (opts_servers(connect, hlen, hosts, err, errlen) < 0)
		return -EINVAL;
	*base = strdup(b);
	if (!*base) {
		free(*hosts);
		*hosts = NULL;
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/*
 * Are the ZooKeeper servers' names known? (see opts.h)
 */
/* NULL if host:port resolves, else why not. */
static const char *resolve_one(const char *spec, size_t len)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	const char *colon = NULL;
	char host[NI_MAXHOST], port[NI_MAXSERV];
	int rc;

	for (size_t i = 0; i < len; i++)
		if (spec[i] == ':')
			colon = spec + i;
	/* opts_servers wrote the list: every entry has a host and a port */
	if (!colon || (size_t)(colon - spec) >= sizeof(host) ||
	    (size_t)(spec + len - colon - 1) >= sizeof(port))
		return "not host:port";
	snprintf(host, sizeof(host), "%.*s", (int)(colon - spec), spec);
	snprintf(port, sizeof(port), "%.*s", (int)(spec + len - colon - 1),
		 colon + 1);
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc == 0) {
		freeaddrinfo(res);
		return NULL;
	}
	return rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc);
}

int resolve_check(const char *hosts, char *err, size_t errlen)
{
	const char *end = hosts + strlen(hosts);
	char *list = NULL;
	size_t listlen = 0, found = 0, failed = 0;
	FILE *out = open_memstream(&list, &listlen);
	int rc = 0;

	if (!out) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (const char *p = hosts; p < end;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : (size_t)(end - p);
		const char *why = resolve_one(p, len);

		if (why)
			fprintf(out, "%s'%.*s': %s", failed++ ? "; " : "",
				(int)len, p, why);
		else
			found++;
		p += len + 1;
	}
	if (fclose(out) != 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (found == 0) {
		/* A message longer than err ends in "...". */
		if ((size_t)snprintf(err, errlen,
				     "cannot resolve any ZooKeeper server: %s",
				     list) >= errlen &&
		    errlen > 4)
			strcpy(err + errlen - 4, "...");
		rc = -ENOENT;
	} else if (failed) {
		log_msg(LOG_WARNING,
			"cannot resolve %s; using the other servers", list);
	}
	free(list);
	return rc;
}

/*
 * Checks of the mount point (see opts.h).
 */
/* Field `n` (from 0) of a space-separated line, unescaped as mountinfo
 * writes it (\040 for a space, and so on), into out.  Returns 0, or -1 if
 * the line is shorter or the field longer than outlen. */
static int mountpoint_field(const char *line, int n, char *out, size_t outlen)
{
	const char *p = line;
	size_t len = 0;

	for (int i = 0; i < n; i++) {
		p = strchr(p, ' ');
		if (!p)
			return -1;
		p++;
	}
	while (*p && *p != ' ' && *p != '\n') {
		char c = *p++;
		if (c == '\\' && p[0] >= '0' && p[0] <= '3' && p[1] >= '0' &&
		    p[1] <= '7' && p[2] >= '0' && p[2] <= '7') {
			c = (char)((p[0] - '0') * 64 + (p[1] - '0') * 8 +
				   (p[2] - '0'));
			p += 3;
		}
		if (len + 1 >= outlen)
			return -1;
		out[len++] = c;
	}
	out[len] = '\0';
	return 0;
}

int mountpoint_is_zklockfs_at(const char *line, const char *dir)
{
	char where[PATH_MAX], type[64];
	const char *sep = strstr(line, " - ");

	if (!sep || mountpoint_field(line, 4, where, sizeof(where)) < 0 ||
	    mountpoint_field(sep + 3, 0, type, sizeof(type)) < 0)
		return 0;
	return strcmp(where, dir) == 0 && strcmp(type, "fuse.zklockfs") == 0;
}

int mountpoint_check(const char *path, char *err, size_t errlen)
{
	char real[PATH_MAX];
	struct stat st;
	char *line = NULL;
	size_t cap = 0;
	FILE *f;
	int found = 0;

	if (stat(path, &st) < 0) {
		int e = errno;
		snprintf(err, errlen, "mount point %s: %s", path, strerror(e));
		return -e;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "mount point %s is not a directory",
			 path);
		return -ENOTDIR;
	}
	if (!realpath(path, real))
		return 0; /* stat worked: nothing more to say about it */
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return 0; /* no /proc: the kernel will say what it thinks */
	while (!found && getline(&line, &cap, f) > 0)
		found = mountpoint_is_zklockfs_at(line, real);
	free(line);
	fclose(f);
	if (found) {
		snprintf(err, errlen,
			 "%s is already a zklockfs mount "
			 "(unmount it first: fusermount3 -u %s)",
			 path, path);
		return -EBUSY;
	}
	return 0;
}

/*
 * Read the digest credentials (see opts.h).
 */
/* Open path, the file of option `name`, to read: a regular file, and
 * with `secret` one that not every user may read.  Returns the
 * descriptor, or -errno with a message for the user in err. */
static int opts_open_file(const char *name, const char *path, int secret,
			  char *err, size_t errlen)
{
	struct stat st;
	const char *wrong = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = -EINVAL;

	if (fd < 0 || fstat(fd, &st) < 0) {
		rc = -errno;
		wrong = strerror(errno);
	} else if (!S_ISREG(st.st_mode)) {
		wrong = S_ISDIR(st.st_mode) ? "is a directory"
					    : "is not a regular file";
	} else if (secret && (st.st_mode & S_IROTH)) {
		rc = -EPERM;
		wrong = "readable by every user; chmod o-r it first";
	}
	if (!wrong)
		return fd;
	snprintf(err, errlen, "%s %s: %s", name, path, wrong);
	if (fd >= 0)
		close(fd);
	return rc;
}

/* Read the first line of the file at fd into buf (NUL-ended, the line
 * end cut), and close fd.  Returns 0, -EFBIG if the line does not fit
 * (a secret cut short would fail later, and more obscurely), or -errno. */
static int opts_read_line(int fd, char *buf, size_t size)
{
	ssize_t got = read(fd, buf, size);
	int rc = got < 0 ? -errno : 0;
	size_t line = 0;

	close(fd);
	while (line < (size_t)(got < 0 ? 0 : got) && buf[line] != '\n' &&
	       buf[line] != '\r')
		line++;
	if (line == size) { /* no room for its end */
		explicit_bzero(buf, size);
		line = 0;
		rc = -EFBIG;
	}
	buf[line] = '\0';
	return rc;
}

/* What opts_read_line's error means, for "OPTION FILE: ..." */
static const char *opts_line_error(int rc, size_t size)
{
	static char too_long[64];

	if (rc != -EFBIG)
		return strerror(-rc);
	snprintf(too_long, sizeof(too_long),
		 "its line is longer than %zu bytes", size - 1);
	return too_long;
}

/*
 * Read the digest credentials (see opts.h).
 */
int authfile_read(const char *path, char *buf, size_t size, char *err,
		  size_t errlen)
{
	int fd = opts_open_file("auth_file", path, 1, err, errlen), rc;
	char *colon;

	if (fd < 0)
		return fd;
	if ((rc = opts_read_line(fd, buf, size)) < 0) {
		snprintf(err, errlen, "auth_file %s: %s", path,
			 opts_line_error(rc, size));
		return rc;
	}
	colon = strchr(buf, ':');
	if (!colon || colon == buf || !colon[1]) {
		snprintf(err, errlen,
			 "auth_file %s: expected one line user:password", path);
		explicit_bzero(buf, size);
		return -EINVAL;
	}
	return 0;
}

/* Does the PEM file at fd hold an encrypted key ("BEGIN ENCRYPTED PRIVATE
 * KEY", or the older "Proc-Type: 4,ENCRYPTED")? */
static int opts_pem_is_encrypted(int fd)
{
	char head[4096];
	ssize_t got = pread(fd, head, sizeof(head) - 1, 0);

	if (got <= 0)
		return 0;
	head[got] = '\0';
	return strstr(head, "ENCRYPTED") != NULL;
}

/* Append part to the comma-separated list in buf (used bytes so far). */
static int tlsfiles_add(char *buf, size_t size, size_t *used, const char *part)
{
	int n = snprintf(buf + *used, size - *used, "%s%s", *used ? "," : "",
			 part);

	if (n < 0 || (size_t)n >= size - *used)
		return -ENAMETOOLONG;
	*used += (size_t)n;
	return 0;
}

int tlsfiles_read(const struct opts *o, char *buf, size_t size, char *err,
		  size_t errlen)
{
	const struct {
		const char *name, *path;
		int secret;
	} files[] = { { "tls_ca", o->tls_ca, 0 },
		      { "tls_cert", o->tls_cert, 0 },
		      { "tls_key", o->tls_key, 1 } };
	char password[1024]; /* OpenSSL's PEM_BUFSIZE: it takes no more */
	size_t used = 0;
	int fd, rc;

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		/* The client splits its one string of files at commas. */
		if (strchr(files[i].path, ',')) {
			snprintf(err, errlen,
				 "%s %s: the ZooKeeper C client cannot take "
				 "a path with a comma",
				 files[i].name, files[i].path);
			return -EINVAL;
		}
		fd = opts_open_file(files[i].name, files[i].path,
				    files[i].secret, err, errlen);
		if (fd < 0)
			return fd;
		/* Without its password, OpenSSL would ask for it on the
		 * terminal, from the client's thread, at each connection. */
		if (files[i].secret && !o->tls_key_password_file &&
		    opts_pem_is_encrypted(fd)) {
			close(fd);
			snprintf(err, errlen,
				 "tls_key %s is encrypted: name the file that "
				 "holds its password with "
				 "tls_key_password_file=PATH",
				 files[i].path);
			return -EINVAL;
		}
		close(fd); /* the client reads it, at each connection */
		if (tlsfiles_add(buf, size, &used, files[i].path) < 0) {
			snprintf(err, errlen, "%s %s: path too long",
				 files[i].name, files[i].path);
			return -ENAMETOOLONG;
		}
	}
	if (!o->tls_key_password_file)
		return 0;
	fd = opts_open_file("tls_key_password_file", o->tls_key_password_file,
			    1, err, errlen);
	if (fd < 0)
		return fd;
	rc = opts_read_line(fd, password, sizeof(password));
	if (rc == 0 && (!password[0] || strchr(password, ','))) {
		snprintf(err, errlen, "tls_key_password_file %s: %s",
			 o->tls_key_password_file,
			 password[0] ? "the ZooKeeper C client cannot take "
				       "a password with a comma"
				     : "expected one line, the password");
		rc = -EINVAL;
	} else if (rc == 0) {
		rc = tlsfiles_add(buf, size, &used, password);
		if (rc < 0)
			snprintf(err, errlen, "tls_key_password_file %s: %s",
				 o->tls_key_password_file,
				 "the password is too long");
	} else {
		snprintf(err, errlen, "tls_key_password_file %s: %s",
			 o->tls_key_password_file,
			 opts_line_error(rc, sizeof(password)));
	}
	explicit_bzero(password, sizeof(password));
	if (rc < 0)
		explicit_bzero(buf, size);
	return rc;
}

/*
 * The usage text of --help (opts.h): every option, its
 * default and what it does.  Keep it in step with opts.c's table and with
 * zklockfs(8).
 */
void opts_print_help(const char *progname)
{
	printf("usage: %s [options] CONNECT MOUNTPOINT\n"
	       "\n"
	       "Mount ZooKeeper locks as files: open MOUNTPOINT/<resource>/write\n"
	       "blocks until the exclusive lock is held, .../read until a shared\n"
	       "lock is held; the last close releases it.  <resource>/holders\n"
	       "lists who holds and waits, MOUNTPOINT/.status this mount's\n"
	       "session; see zklockfs(8).\n\n"
	       "CONNECT is host:port[,host:port...][/base/path]; the base path\n"
	       "defaults to %s and is created if missing.\n\noptions:\n"
	       "    -h, --help               print this help and exit\n"
	       "    -V, --version            print the version and exit\n"
	       "    -f                       stay in the foreground, log to stderr\n"
	       "    -d, -o debug             foreground, log every request\n"
	       "    -s                       accepted; has no effect\n"
	       "    -o session_timeout=SECS  ZooKeeper session timeout (default %d)\n"
	       "    -o connect_timeout=SECS  give up if no server answers at start\n"
	       "                             (default %d)\n"
	       "    -o on_lost=log|signal[:SIG]\n"
	       "                             when a held lock is lost: only log\n"
	       "                             it (default), or also send SIG\n"
	       "                             (default TERM) to the holder's\n"
	       "                             process group, as the holder: a\n"
	       "                             member it could not signal is\n"
	       "                             spared (and logged)\n"
	       "    -o jeopardy_margin_ms=MS when ZooKeeper stops answering, every\n"
	       "                             held lock is declared lost this long\n"
	       "                             before the server may end the session\n"
	       "                             (default: a tenth of the timeout the\n"
	       "                             server granted, at least 500; under a\n"
	       "                             quarter of it)\n"
	       "    -o deadlock_timeout_ms=MS\n"
	       "                             a wait this long, by a process of one\n"
	       "                             thread that holds a lock no other\n"
	       "                             process has open, is checked for a\n"
	       "                             cycle of waits across hosts, which\n"
	       "                             fails with EDEADLK (default 1000;\n"
	       "                             0: off)\n"
	       "    -o dialect=zklockfs|curator|kazoo\n"
	       "                             whose names the lock nodes this\n"
	       "                             mount creates have, so that Curator\n"
	       "                             or kazoo services see them (every\n"
	       "                             dialect waits behind all of them)\n"
	       "    -o containers=yes|no     resource znodes are containers, which\n"
	       "                             ZooKeeper deletes after their last\n"
	       "                             lock (default yes; no: persistent,\n"
	       "                             for a base kazoo-dialect mounts\n"
	       "                             share)\n"
	       "    -o on_revoke=log|signal[:SIG]\n"
	       "                             when a held lock is asked to let go\n"
	       "                             (MOUNT/<res>/revoke, Curator's\n"
	       "                             Revoker): log, or also send SIG\n"
	       "                             (default TERM) to its holder, as\n"
	       "                             on_lost does\n"
	       "    -o reentrant             a lock asked again by its holder's\n"
	       "                             process or a descendant of it is\n"
	       "                             granted at once, and held until the\n"
	       "                             last of these holds ends\n"
	       "    -o anyone_may_ask        every user may write `ask` to a\n"
	       "                             revoke file (else, as for every\n"
	       "                             setting, root and the owner only)\n"
	       "    -o auth_file=PATH        authenticate to ZooKeeper as the\n"
	       "                             user:password in PATH (digest) and\n"
	       "                             give the nodes created to it alone\n"
	       "    -o tls_ca=FILE,tls_cert=FILE,tls_key=FILE\n"
	       "                             speak mutual TLS to ZooKeeper's\n"
	       "                             secure ports: the servers' CA, this\n"
	       "                             mount's certificate and its key (a\n"
	       "                             build with TLS only)\n"
	       "    -o tls_key_password_file=PATH\n"
	       "                             the password of an encrypted tls_key\n"
	       "    -o x509_acl              give the nodes created to the\n"
	       "                             certificate's subject alone (the x509\n"
	       "                             scheme), as auth_file does its user\n"
	       "    -o metrics_file=PATH     keep PATH (absolute) a copy of\n"
	       "                             MOUNT/.metrics, for the node\n"
	       "                             exporter's textfile collector\n"
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
