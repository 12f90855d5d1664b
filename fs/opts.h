/*
 * opts.h - the command line: zklockfs [options] CONNECT MOUNTPOINT.
 * One table (opts.c) feeds both the parser and --help.
 */
#ifndef ZKL_OPTS_H
#define ZKL_OPTS_H

#include "names.h"

#include <stddef.h>

#include <fuse_lowlevel.h>

#define OPTS_DEFAULT_BASE "/zklockfs"
#define OPTS_DEFAULT_SESSION_TIMEOUT 10
#define OPTS_DEFAULT_CONNECT_TIMEOUT 15
/* Bytes of the base path, so that room is left for resources below it. */
#define OPTS_MAX_BASE 512

struct opts {
	char *connect;    /* as given */
	char *hosts;      /* host:port list, owned */
	char *base;       /* absolute base znode path, owned */
	char *mountpoint; /* as given */
	int foreground;
	int debug;
	int show_help;
	int show_version;
	int session_timeout;     /* seconds */
	int connect_timeout;     /* seconds */
	int jeopardy_margin_ms;  /* 0: the session's default */
	int deadlock_timeout_ms; /* -1: the session's default; 0: off */
	char *on_lost;           /* as given: "log", "signal" or "signal:SIG" */
	char *on_revoke;         /* the same, for a holder asked to let go */
	char *auth_file; /* digest credentials "user:password", or NULL */
	/* Mutual TLS to ZooKeeper (all three, or none): the CA that signs
	 * the servers' certificates, this mount's certificate and its key;
	 * and the file holding the key's password, if it is encrypted. */
	char *tls_ca, *tls_cert, *tls_key, *tls_key_password_file;
	int x509_acl; /* -o x509_acl: the nodes created are the certificate's
		       * identity's (ZooKeeper's x509 scheme) alone */
	char *metrics_file; /* absolute path kept current (metrics.c), or
			     * NULL */
	unsigned uid, gid;  /* owner of every file, if has_uid / has_gid */
	unsigned umask;     /* mode bits taken away, if has_umask */
	int has_uid, has_gid, has_umask;
	int on_lost_signal;   /* 0: only log a lost lock */
	int on_revoke_signal; /* 0: only log a request to let go */
	char *dialect;        /* as given: "zklockfs", "curator" or "kazoo" */
	int reentrant;        /* -o reentrant: a holder's process tree takes
			     * its lock again at once, counted (reentrant.c) */
	int anyone_may_ask;   /* -o anyone_may_ask: revoke's `ask` is
			       * everyone's (fs.h) */
	char *containers;     /* -o containers=yes|no, as given */
	int persistent_resources; /* containers=no */
	int default_permissions;  /* -o default_permissions: the kernel checks
				  * the modes uid=, gid= and umask= give */
	char repeated[128];       /* our options given more than once ("a, b"):
			     * the later value counts */
	enum zkl_style style;     /* of the lock nodes the mount creates */
};

/* Parse the value of -o dialect into the style of names the mount
 * creates.  Returns 0 and sets *style, or -EINVAL. */
int opts_parse_dialect(const char *value, enum zkl_style *style);

/* Parse the value of -o on_lost: "log" (0) or "signal[:SIG]" (SIGTERM
 * unless SIG, a name with or without "SIG" or a number, says otherwise).
 * Returns 0 and sets *sig, or -EINVAL. */
int opts_parse_on_lost(const char *value, int *sig);

/* A whole number written in `base` (10 or 8) with nothing else (no sign,
 * space, fraction, exponent or trailing text), from min to max.  Returns
 * 0 and sets *out, -EINVAL if it is not such a number, -ERANGE if it is
 * out of range. */
int opts_parse_number(const char *text, unsigned base, unsigned long min,
		      unsigned long max, unsigned long *out);

/* The `len` bytes at spec, "host:port[,host:port...]" with IPv6 addresses
 * in brackets, checked and rewritten as the ZooKeeper client reads them.
 * Returns 0 and a new string in *hosts, or -errno with a message in err. */
int opts_servers(const char *spec, size_t len, char **hosts, char *err,
		 size_t errlen);

/* Is b a base path zklockfs can create and lock under?  Returns 0, or
 * -EINVAL with a message naming the problem in err. */
int opts_check_base(const char *b, char *err, size_t errlen);

/* Split CONNECT into hosts and base path.  Returns 0 or -EINVAL with a
 * message in err. */
int opts_split_connect(const char *connect, char **hosts, char **base,
		       char *err, size_t errlen);

/* Parse argv.  Options for libfuse (-o allow_other, ...) are left in
 * fuse_args.  Returns 0, or -EINVAL with a message in err.  With -h or -V
 * only the flag is set and the rest need not be valid. */
int opts_parse(int argc, char **argv, struct opts *o,
	       struct fuse_args *fuse_args, char *err, size_t errlen);

void opts_free(struct opts *o);

/* Usage text with every option and its default. */
void opts_print_help(const char *progname);

/*
 * Can the ZooKeeper servers be found at all?  Checked before
 * connecting, so that a typo in a host name is named as such at once and
 * not reported 15 s later as a server that did not answer.
 */

/* `hosts` is the list the ZooKeeper client takes ("host:port,...", an IPv6
 * address without brackets: the port follows the last ':').  Returns 0 if
 * at least one host resolves, logging a warning for each one that does not
 * (the client uses the others, as it would); else -ENOENT with a message
 * naming each host and why in err. */
int resolve_check(const char *hosts, char *err, size_t errlen);

/*
 * Is MOUNTPOINT somewhere zklockfs can be mounted?  Checked
 * before connecting to ZooKeeper, so that a typo costs no wait and leaves
 * nothing behind.
 */

/* 0 if path is an existing directory with no zklockfs mounted on it; else
 * -errno with a message naming the problem in err. */
int mountpoint_check(const char *path, char *err, size_t errlen);

/* Does this line of /proc/self/mountinfo describe a zklockfs filesystem
 * mounted at dir (an absolute path without symbolic links)? */
int mountpoint_is_zklockfs_at(const char *line, const char *dir);

/*
 * The ZooKeeper credentials of -o auth_file=PATH.  The secret
 * never appears on the command line (where ps shows it to everybody).
 */

/* Read "user:password" from the first line of the file at path into buf.
 * Refuses a file that every user may read.  Returns 0, or -errno with a
 * message for the user in err. */
int authfile_read(const char *path, char *buf, size_t size, char *err,
		  size_t errlen);

/* The TLS files o names, as the ZooKeeper C client takes them, into buf:
 * "CA,CERT,KEY[,PASSWORD]", the password read from
 * tls_key_password_file.  Each must be a regular file the daemon can
 * read, the key and the password file not readable by every user, and
 * no part may hold a comma.  Returns 0, or -errno with a message for the
 * user in err. */
int tlsfiles_read(const struct opts *o, char *buf, size_t size, char *err,
		  size_t errlen);

#endif
