/* Command line parsing. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

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
	opts_free(&o);
}

Test(opts, default_base_and_timeouts)
{
	struct opts o;
	char err[256];
	char *argv[] = { "zklockfs", "-f", "-o",
			 "session_timeout=3,connect_timeout=2", "h:1", "/m" };

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
