/* Command line parsing. */
#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "opts.h"

static int parse(struct opts *o, char *err, int argc, char **argv)
{
	struct fuse_args args;
	int rc = opts_parse(argc, argv, o, &args, err, 256);

	fuse_opt_free_args(&args);
	return rc;
}

Test(opts, connect_with_base_path)
{
	struct opts o;
	char err[256];
	char *argv[] = { "zklockfs", "10.0.0.1:2181,10.0.0.2:2181/locks/prod",
			 "/mnt/zklock" };

	cr_assert_eq(parse(&o, err, 3, argv), 0, "%s", err);
	cr_assert_str_eq(o.hosts, "10.0.0.1:2181,10.0.0.2:2181");
	cr_assert_str_eq(o.base, "/locks/prod");
	cr_assert_str_eq(o.mountpoint, "/mnt/zklock");
	cr_assert_eq(o.session_timeout, 10);
	cr_assert_eq(o.connect_timeout, 15);
	cr_assert_eq(o.foreground, 0);
	cr_assert_eq(o.style, ZKL_STYLE_ZKLOCKFS, "the default dialect");
	opts_free(&o);
}

Test(opts, dialect_chooses_the_names_created)
{
	struct opts o;
	char err[256];
	char *curator[] = { "zklockfs", "-o", "dialect=curator", "h:1", "/m" };
	char *kazoo[] = { "zklockfs", "-o", "dialect=kazoo", "h:1", "/m" };
	char *bad[] = { "zklockfs", "-o", "dialect=zookeeper", "h:1", "/m" };

	cr_assert_eq(parse(&o, err, 5, curator), 0, "%s", err);
	cr_assert_eq(o.style, ZKL_STYLE_CURATOR);
	opts_free(&o);
	cr_assert_eq(parse(&o, err, 5, kazoo), 0, "%s", err);
	cr_assert_eq(o.style, ZKL_STYLE_KAZOO);
	opts_free(&o);
	cr_assert_eq(parse(&o, err, 5, bad), -EINVAL,
		     "the recipe's names are read, never made");
	cr_assert(strstr(err, "dialect=zookeeper"), "%s", err);
	opts_free(&o);
}

Test(opts, containers_yes_or_no)
{
	struct opts o;
	char err[256];
	char *none[] = { "zklockfs", "h:1", "/m" };
	char *no[] = { "zklockfs", "-o", "containers=no", "h:1", "/m" };
	char *yes[] = { "zklockfs", "-o", "containers=yes", "h:1", "/m" };
	char *bad[] = { "zklockfs", "-o", "containers=off", "h:1", "/m" };

	cr_assert_eq(parse(&o, err, 3, none), 0, "%s", err);
	cr_assert_eq(o.persistent_resources, 0, "containers by default");
	opts_free(&o);
	cr_assert_eq(parse(&o, err, 5, no), 0, "%s", err);
	cr_assert_eq(o.persistent_resources, 1);
	opts_free(&o);
	cr_assert_eq(parse(&o, err, 5, yes), 0, "%s", err);
	cr_assert_eq(o.persistent_resources, 0);
	opts_free(&o);
	cr_assert_eq(parse(&o, err, 5, bad), -EINVAL);
	cr_assert(strstr(err, "containers=off: expected yes or no"), "%s", err);
	opts_free(&o);
}

Test(opts, default_base_and_timeouts)
{
	struct opts o;
	char err[256];
	char *argv[] = { "zklockfs", "-f",
			 "-o",       "session_timeout=3,connect_timeout=2",
			 "h:1",      "/m" };

	cr_assert_eq(parse(&o, err, 6, argv), 0, "%s", err);
	cr_assert_str_eq(o.base, "/zklockfs");
	cr_assert_eq(o.session_timeout, 3);
	cr_assert_eq(o.connect_timeout, 2);
	cr_assert_eq(o.foreground, 1);
	opts_free(&o);
}

Test(opts, refuses_read_only_and_bad_input)
{
	struct opts o;
	char err[256];
	char *ro[] = { "zklockfs", "-o", "ro", "h:1", "/m" };
	char *missing[] = { "zklockfs", "h:1" };
	char *extra[] = { "zklockfs", "h:1", "/m", "/x" };
	char *badbase[] = { "zklockfs", "h:1/a//b", "/m" };
	char *nohost[] = { "zklockfs", "/a", "/m" };
	char *timeout[] = { "zklockfs", "-o", "session_timeout=0", "h:1",
			    "/m" };
	char *unknown[] = { "zklockfs", "--frobnicate", "h:1", "/m" };

	cr_assert_eq(parse(&o, err, 5, ro), -EINVAL);
	cr_assert(strstr(err, "read-only"), "%s", err);
	cr_assert_eq(parse(&o, err, 2, missing), -EINVAL);
	cr_assert(strstr(err, "usage"), "%s", err);
	cr_assert_eq(parse(&o, err, 4, extra), -EINVAL);
	cr_assert_eq(parse(&o, err, 3, badbase), -EINVAL);
	cr_assert_eq(parse(&o, err, 3, nohost), -EINVAL);
	cr_assert_eq(parse(&o, err, 5, timeout), -EINVAL);
	cr_assert_eq(parse(&o, err, 4, unknown), -EINVAL);
	cr_assert(strstr(err, "--frobnicate"), "%s", err);
}

Test(opts, help_and_version_need_nothing_else)
{
	struct opts o;
	char err[256];
	char *help[] = { "zklockfs", "--help" };
	char *version[] = { "zklockfs", "-V" };

	cr_assert_eq(parse(&o, err, 2, help), 0);
	cr_assert(o.show_help);
	cr_assert_eq(parse(&o, err, 2, version), 0);
	cr_assert(o.show_version);
}

Test(opts, on_lost_takes_log_or_a_signal)
{
	int sig = -1;

	cr_assert_eq(opts_parse_on_lost("log", &sig), 0);
	cr_assert_eq(sig, 0);
	cr_assert_eq(opts_parse_on_lost("signal", &sig), 0);
	cr_assert_eq(sig, SIGTERM, "SIGTERM by default");
	cr_assert_eq(opts_parse_on_lost("signal:KILL", &sig), 0);
	cr_assert_eq(sig, SIGKILL);
	cr_assert_eq(opts_parse_on_lost("signal:SIGUSR1", &sig), 0);
	cr_assert_eq(sig, SIGUSR1);
	cr_assert_eq(opts_parse_on_lost("signal:1", &sig), 0);
	cr_assert_eq(sig, SIGHUP);
	cr_assert_eq(opts_parse_on_lost("signal:", &sig), -EINVAL);
	cr_assert_eq(opts_parse_on_lost("signal:NOPE", &sig), -EINVAL);
	cr_assert_eq(opts_parse_on_lost("signal:0", &sig), -EINVAL);
	cr_assert_eq(opts_parse_on_lost("signal:999", &sig), -EINVAL);
	cr_assert_eq(opts_parse_on_lost("kill", &sig), -EINVAL);
}

Test(opts, bad_on_lost_is_refused_with_its_value)
{
	struct opts o;
	char err[256];
	char *argv[] = { "zklockfs", "-o", "on_lost=explode", "h:1", "/m" };

	cr_assert_eq(parse(&o, err, 5, argv), -EINVAL);
	cr_assert(strstr(err, "on_lost=explode"), "%s", err);
	opts_free(&o);
}

Test(opts, owner_and_umask_of_the_files)
{
	struct opts o;
	char err[256];
	char *argv[] = { "zklockfs", "-o", "gid=100,umask=007,allow_other",
			 "h:1", "/m" };
	char *bad[] = { "zklockfs", "-o", "umask=7777", "h:1", "/m" };

	cr_assert_eq(parse(&o, err, 5, argv), 0, "%s", err);
	cr_assert(o.has_gid && o.gid == 100);
	cr_assert(o.has_umask && o.umask == 07);
	cr_assert(!o.has_uid, "uid not given");
	opts_free(&o);
	cr_assert_eq(parse(&o, err, 5, bad), -EINVAL);
	cr_assert(strstr(err, "umask"), "%s", err);
	opts_free(&o);
}

/* Parse "-o OPTION h:1 /m"; returns opts_parse's result, err filled. */
static int parse_option(struct opts *o, char *err, const char *option)
{
	char *argv[] = { "zklockfs", "-o", (char *)option, "h:1", "/m" };

	return parse(o, err, 5, argv);
}

Test(opts, numbers_are_whole_in_range_and_nothing_else)
{
	static const char *const refused[] = {
		"session_timeout=1.5", "session_timeout=10x",
		"session_timeout= 5",  "session_timeout=",
		"session_timeout=0",   "session_timeout=3601",
		"session_timeout=-1",  "connect_timeout=1e3",
		"connect_timeout=+5",  "uid=4294967296",
		"uid=4294967295",      "uid=-1",
		"gid=4294967297",      "gid=99999999999999999999999",
		"umask=0x1f",          "umask=8",
		"umask=1000",          "umask=-7",
	};
	struct opts o;
	char err[256];

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		cr_assert_eq(parse_option(&o, err, refused[i]), -EINVAL,
			     "%s was accepted", refused[i]);
		cr_assert(strstr(err, refused[i]), "'%s' does not name %s", err,
			  refused[i]);
		opts_free(&o);
	}
	cr_assert_eq(parse_option(&o, err, "uid=4294967294,gid=0,umask=0"), 0,
		     "%s", err);
	cr_assert(o.uid == 4294967294U && o.has_uid && o.has_gid &&
		  o.has_umask && o.umask == 0);
	opts_free(&o);
	cr_assert_eq(parse_option(&o, err,
				  "session_timeout=3600,connect_timeout=1"),
		     0, "%s", err);
	cr_assert(o.session_timeout == 3600 && o.connect_timeout == 1);
	opts_free(&o);
	cr_assert_eq(parse_option(&o, err, "uid=12"), 0, "%s", err);
	cr_assert(o.has_uid && o.uid == 12 && !o.has_gid);
	opts_free(&o);
}

Test(opts, out_of_range_and_not_a_number_are_told_apart)
{
	struct opts o;
	char err[256];

	cr_assert_eq(parse_option(&o, err, "uid=4294967296"), -EINVAL);
	cr_assert(strstr(err, "out of range"), "%s", err);
	opts_free(&o);
	cr_assert_eq(parse_option(&o, err, "session_timeout=1.5"), -EINVAL);
	cr_assert(strstr(err, "not a number"), "%s", err);
	opts_free(&o);
}

static int servers(const char *spec, char **hosts, char *err)
{
	return opts_servers(spec, strlen(spec), hosts, err, 256);
}

Test(opts, servers_need_a_host_and_a_port_from_1_to_65535)
{
	static const char *const refused[] = {
		"h:0",   "h:99999",   "h:65536", ":2181",     "h",
		"h:",    "h:0x50",    "h:21 81", "a:1,,b:2",  "a:1,",
		"[::1]", "[::1]2181", "[]:1",    "[::1:2181",
	};
	char err[256], *hosts = NULL;

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		cr_assert_eq(servers(refused[i], &hosts, err), -EINVAL,
			     "%s was accepted", refused[i]);
		cr_assert(strstr(err, "server '"), "%s", err);
	}
	cr_assert_eq(servers("h:0", &hosts, err), -EINVAL);
	cr_assert(strstr(err, "invalid port '0'"), "%s", err);
	cr_assert_eq(servers("a:1,b.example:65535", &hosts, err), 0, "%s", err);
	cr_assert_str_eq(hosts, "a:1,b.example:65535");
	free(hosts);
	/* The C client takes the last ':' as the port's: no brackets. */
	cr_assert_eq(servers("[::1]:2181,127.0.0.1:2182", &hosts, err), 0, "%s",
		     err);
	cr_assert_str_eq(hosts, "::1:2181,127.0.0.1:2182");
	free(hosts);
}

Test(opts, base_paths_zookeeper_refuses_or_owns_are_refused)
{
	static const char *const refused[] = {
		"/x/./b", "/x/ok/..",   "/x/.",
		"/..",    "/x//b",      "/x/",
		"/",      "/zookeeper", "/zookeeper/locks",
		"x",
	};
	char err[1024], big[OPTS_MAX_BASE + 2];

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		cr_assert_eq(opts_check_base(refused[i], err, sizeof(err)),
			     -EINVAL, "%s was accepted", refused[i]);
		cr_assert(strstr(err, refused[i]), "%s", err);
	}
	cr_assert_eq(opts_check_base("/zookeeperish/x.y/..z", err, sizeof(err)),
		     0, "%s", err);
	big[0] = '/';
	memset(big + 1, 'a', OPTS_MAX_BASE);
	big[OPTS_MAX_BASE + 1] = '\0';
	cr_assert_eq(opts_check_base(big, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "at most 512"), "the reason is said: %s", err);
	big[OPTS_MAX_BASE] = '\0';
	cr_assert_eq(opts_check_base(big, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(opts_check_base("/locks/\xf0\x9f\x94\x92", err,
				     sizeof(err)),
		     -EINVAL);
	cr_assert(strstr(err, "0xf0 at offset 7"), "%s", err);
	cr_assert_eq(opts_check_base("/locks/a\tb", err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "0x09 at offset 8"), "%s", err);
	cr_assert_eq(opts_check_base("/verrous/\xc3\xa9t\xc3\xa9", err,
				     sizeof(err)),
		     0, "%s", err);
}

Test(opts, a_zklockfs_mount_is_found_in_mountinfo)
{
	const char *ours = "64 30 0:52 / /mnt/zk\\040lock rw,nosuid,nodev "
			   "shared:33 - fuse.zklockfs 127.0.0.1:2181 "
			   "rw,user_id=0,group_id=0\n";
	const char *other = "64 30 0:52 / /mnt/zk rw - fuse.sshfs h: rw\n";

	cr_assert(mountpoint_is_zklockfs_at(ours, "/mnt/zk lock"));
	cr_assert(!mountpoint_is_zklockfs_at(ours, "/mnt/zk"));
	cr_assert(!mountpoint_is_zklockfs_at(other, "/mnt/zk"));
	cr_assert(!mountpoint_is_zklockfs_at("garbage", "/mnt/zk"));
}

Test(opts, a_mount_point_must_be_a_directory)
{
	char err[256];

	cr_assert_eq(mountpoint_check("/nonexistent/zk", err, sizeof(err)),
		     -ENOENT);
	cr_assert(strstr(err, "/nonexistent/zk"), "%s", err);
	cr_assert_eq(mountpoint_check("/etc/passwd", err, sizeof(err)),
		     -ENOTDIR);
	cr_assert(strstr(err, "not a directory"), "%s", err);
	cr_assert_eq(mountpoint_check("/tmp", err, sizeof(err)), 0, "%s", err);
}

Test(opts, an_option_given_again_counts_last_and_is_named)
{
	struct opts o;
	char err[256];

	cr_assert_eq(parse_option(&o, err,
				  "dialect=curator,session_timeout=4,"
				  "dialect=kazoo,session_timeout=5"),
		     0, "%s", err);
	cr_assert_eq(o.style, ZKL_STYLE_KAZOO);
	cr_assert_eq(o.session_timeout, 5);
	cr_assert_str_eq(o.repeated, "dialect, session_timeout");
	opts_free(&o);
	cr_assert_eq(parse_option(&o, err, "dialect=curator"), 0, "%s", err);
	cr_assert_str_eq(o.repeated, "", "once is not repeated");
	opts_free(&o);
}

Test(opts, max_read_is_refused_and_default_permissions_seen)
{
	struct opts o;
	char err[256];

	cr_assert_eq(parse_option(&o, err, "max_read=1"), -EINVAL);
	cr_assert(strstr(err, "max_read=1"), "%s", err);
	opts_free(&o);
	cr_assert_eq(parse_option(&o, err, "gid=5,default_permissions"), 0,
		     "%s", err);
	cr_assert_eq(o.default_permissions, 1);
	opts_free(&o);
	cr_assert_eq(parse_option(&o, err, "gid=5"), 0, "%s", err);
	cr_assert_eq(o.default_permissions, 0);
	opts_free(&o);
}

Test(opts, on_revoke_takes_log_or_a_signal)
{
	struct opts o;
	char err[256];

	cr_assert_eq(parse_option(&o, err, "on_revoke=signal:USR1"), 0, "%s",
		     err);
	cr_assert_eq(o.on_revoke_signal, SIGUSR1);
	opts_free(&o);
	cr_assert_eq(parse_option(&o, err, "on_revoke=log"), 0, "%s", err);
	cr_assert_eq(o.on_revoke_signal, 0);
	opts_free(&o);
	cr_assert_eq(parse_option(&o, err, "on_revoke=shout"), -EINVAL);
	cr_assert(strstr(err, "on_revoke=shout"), "%s", err);
	opts_free(&o);
}

Test(opts, reentrant_is_off_unless_asked)
{
	struct opts o;
	char err[256];

	cr_assert_eq(parse_option(&o, err, "gid=5"), 0, "%s", err);
	cr_assert_eq(o.reentrant, 0);
	opts_free(&o);
	cr_assert_eq(parse_option(&o, err, "reentrant,gid=5"), 0, "%s", err);
	cr_assert_eq(o.reentrant, 1);
	opts_free(&o);
}

Test(opts, the_jeopardy_margin_is_milliseconds_under_a_quarter_of_the_timeout)
{
	static const char *const refused[] = {
		"jeopardy_margin_ms=99",
		"jeopardy_margin_ms=900001",
		"jeopardy_margin_ms=0.5",
		/* 10 s timeout: 2500 ms is a quarter, not under it */
		"jeopardy_margin_ms=2500",
		"session_timeout=4,jeopardy_margin_ms=1000",
	};
	struct opts o;
	char err[256];

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		cr_assert_eq(parse_option(&o, err, refused[i]), -EINVAL,
			     "%s was accepted", refused[i]);
		cr_assert(strstr(err, "jeopardy_margin_ms="), "'%s'", err);
		opts_free(&o);
	}
	cr_assert_eq(parse_option(&o, err, "jeopardy_margin_ms=2499"), 0, "%s",
		     err);
	cr_assert_eq(o.jeopardy_margin_ms, 2499);
	opts_free(&o);
	cr_assert_eq(parse_option(&o, err, "session_timeout=60"), 0, "%s", err);
	cr_assert_eq(o.jeopardy_margin_ms, 0, "0: the session's default");
	opts_free(&o);
}

/* A file of `mode` in a directory of the test's own, holding `text`. */
static char *secret_file(const char *dir, const char *name, const char *text,
			 mode_t mode)
{
	char *path;
	FILE *f;

	cr_assert(asprintf(&path, "%s/%s", dir, name) > 0);
	f = fopen(path, "w");
	cr_assert(f, "%s: %s", path, strerror(errno));
	fputs(text, f);
	fclose(f);
	cr_assert_eq(chmod(path, mode), 0);
	return path;
}

static char scratch[] = "/tmp/zklockfs-unit-XXXXXX";

static int scratch_remove_one(const char *path, const struct stat *st, int flag,
			      struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static void scratch_remove(void)
{
	nftw(scratch, scratch_remove_one, 8, FTW_DEPTH | FTW_PHYS);
}

/* A directory of the test's own, removed when the test's process ends. */
static char *scratch_dir(void)
{
	cr_assert(mkdtemp(scratch), "mkdtemp: %s", strerror(errno));
	atexit(scratch_remove);
	return scratch;
}

Test(opts, tls_files_are_joined_as_the_client_takes_them)
{
	char *dir = scratch_dir(), buf[512], err[256];
	struct opts o = {
		.tls_ca = secret_file(dir, "ca.pem", "CA\n", 0644),
		.tls_cert = secret_file(dir, "c.pem", "CERT\n", 0644),
		.tls_key = secret_file(dir, "k.pem", "KEY\n", 0600),
	};
	char *want;

	cr_assert_eq(tlsfiles_read(&o, buf, sizeof(buf), err, sizeof(err)), 0,
		     "%s", err);
	cr_assert(asprintf(&want, "%s,%s,%s", o.tls_ca, o.tls_cert, o.tls_key) >
		  0);
	cr_assert_str_eq(buf, want);
	o.tls_key_password_file = secret_file(dir, "pw", "s3cret\n", 0600);
	cr_assert_eq(tlsfiles_read(&o, buf, sizeof(buf), err, sizeof(err)), 0,
		     "%s", err);
	cr_assert(strstr(buf, ",s3cret") && !strchr(buf, '\n'), "%s", buf);
}

Test(opts, tls_files_the_client_would_misread_are_refused_by_name)
{
	char *dir = scratch_dir(), buf[4096], err[256], *long_password;
	struct opts o = {
		.tls_ca = secret_file(dir, "ca.pem", "CA\n", 0644),
		.tls_cert = secret_file(dir, "c.pem", "CERT\n", 0644),
		.tls_key = secret_file(dir, "k.pem", "KEY\n", 0644),
	};

	/* A key every user may read. */
	cr_assert_eq(tlsfiles_read(&o, buf, sizeof(buf), err, sizeof(err)),
		     -EPERM);
	cr_assert(strstr(err, "tls_key") && strstr(err, "chmod o-r"), "%s",
		  err);
	/* An encrypted key with no password to open it. */
	o.tls_key = secret_file(dir, "enc.pem",
				"-----BEGIN ENCRYPTED PRIVATE KEY-----\n",
				0600);
	cr_assert_eq(tlsfiles_read(&o, buf, sizeof(buf), err, sizeof(err)),
		     -EINVAL);
	cr_assert(strstr(err, "tls_key_password_file"), "%s", err);
	/* The client splits its one string at commas. */
	o.tls_ca = secret_file(dir, "a,b.pem", "CA\n", 0644);
	cr_assert_eq(tlsfiles_read(&o, buf, sizeof(buf), err, sizeof(err)),
		     -EINVAL);
	cr_assert(strstr(err, "tls_ca") && strstr(err, "comma"), "%s", err);
	o.tls_ca = secret_file(dir, "ca2.pem", "CA\n", 0644);
	o.tls_key_password_file = secret_file(dir, "pw", "a,b\n", 0600);
	cr_assert_eq(tlsfiles_read(&o, buf, sizeof(buf), err, sizeof(err)),
		     -EINVAL);
	cr_assert(strstr(err, "comma"), "%s", err);
	o.tls_key_password_file = secret_file(dir, "empty", "\n", 0600);
	cr_assert_eq(tlsfiles_read(&o, buf, sizeof(buf), err, sizeof(err)),
		     -EINVAL);
	cr_assert(strstr(err, "expected one line"), "%s", err);
	/* A password longer than OpenSSL takes is refused, not cut. */
	long_password = malloc(1100);
	memset(long_password, 'p', 1098);
	strcpy(long_password + 1098, "\n");
	o.tls_key_password_file = secret_file(dir, "long", long_password, 0600);
	cr_assert_eq(tlsfiles_read(&o, buf, sizeof(buf), err, sizeof(err)),
		     -EFBIG);
	cr_assert(strstr(err, "longer than 1023 bytes"), "%s", err);
	cr_assert(!strchr(buf, 'p'), "nothing of the password kept: %s", buf);
	free(long_password);
}

Test(opts, an_auth_file_line_too_long_is_refused_not_cut)
{
	char *dir = scratch_dir(), buf[16], err[256];
	char *fits = secret_file(dir, "fits", "user:123456789\n", 0600);
	char *too_long = secret_file(dir, "long", "user:12345678901\n", 0600);

	cr_assert_eq(authfile_read(fits, buf, sizeof(buf), err, sizeof(err)), 0,
		     "%s", err);
	cr_assert_str_eq(buf, "user:123456789");
	cr_assert_eq(authfile_read(too_long, buf, sizeof(buf), err,
				   sizeof(err)),
		     -EFBIG);
	cr_assert(strstr(err, "auth_file") && strstr(err, "longer than 15"),
		  "%s", err);
}
