/* A lock node's identity text: written by one mount, read by another. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "identity.h"
#include "process.h"

Test(identity, formats_and_reads_back_every_key)
{
	char buf[IDENTITY_MAX], v[64];
	size_t n = identity_format(buf, sizeof(buf), "hostA", getpid(), 7);

	cr_assert_eq(n, strlen(buf));
	cr_assert_geq(identity_get(buf, n, "host", v, sizeof(v)), 0);
	cr_assert_str_eq(v, "hostA");
	cr_assert_geq(identity_get(buf, n, "uid", v, sizeof(v)), 0);
	cr_assert_str_eq(v, "7");
	cr_assert_geq(identity_get(buf, n, "pid", v, sizeof(v)), 0);
	cr_assert_eq(atoi(v), getpid());
	cr_assert_geq(identity_get(buf, n, "cmd", v, sizeof(v)), 0);
	cr_assert_neq(strcmp(v, "?"), 0, "our own command name is readable");
	cr_assert_geq(identity_get(buf, n, "start", v, sizeof(v)), 0);
}

/* This process as process.h names it: its pid and start time. */
static struct lineage_proc this_process(void)
{
	struct lineage_proc me;

	cr_assert_eq(lineage_of(getpid(), &me, 1), 1);
	return me;
}

Test(identity, names_its_process_by_pid_and_start_time)
{
	char buf[IDENTITY_MAX];
	size_t n = identity_format(buf, sizeof(buf), "h", getpid(), 0);
	struct lineage_proc me = this_process(), named;

	cr_assert_eq(identity_holder(buf, n, &named), 0);
	cr_assert_eq(named.pid, me.pid);
	cr_assert_eq(named.start, me.start, "field 22 of /proc/<pid>/stat");
	cr_assert(lineage_still_runs(named));
}

static void *identity_of_this_thread(void *buf)
{
	pthread_setname_np(pthread_self(), "worker-thread");
	identity_format(buf, IDENTITY_MAX, "h", gettid(), 0);
	return NULL;
}

Test(identity, a_threads_request_names_its_process)
{
	char buf[IDENTITY_MAX], v[64], comm[64];
	pthread_t t;
	FILE *f = fopen("/proc/self/comm", "r");

	cr_assert(f && fgets(comm, sizeof(comm), f));
	fclose(f);
	comm[strcspn(comm, "\n")] = '\0';
	cr_assert_eq(pthread_create(&t, NULL, identity_of_this_thread, buf), 0);
	pthread_join(t, NULL);
	cr_assert_geq(identity_get(buf, strlen(buf), "pid", v, sizeof(v)), 0);
	cr_assert_eq(atoi(v), getpid(), "the thread's id, not its process's");
	cr_assert_geq(identity_get(buf, strlen(buf), "cmd", v, sizeof(v)), 0);
	cr_assert_str_eq(v, comm, "the thread's name, not its process's");
}

Test(identity, a_threads_request_gives_the_start_time_of_its_process)
{
	char buf[IDENTITY_MAX];
	struct lineage_proc me = this_process(), named;
	pthread_t t;

	cr_assert_eq(pthread_create(&t, NULL, identity_of_this_thread, buf), 0);
	pthread_join(t, NULL);
	cr_assert_eq(identity_holder(buf, strlen(buf), &named), 0);
	cr_assert_eq(named.pid, me.pid);
	cr_assert_eq(named.start, me.start,
		     "the process's, which outlives the thread");
}

Test(identity, a_command_name_cannot_add_a_line)
{
	char buf[IDENTITY_MAX], v[64];
	struct lineage_proc me = this_process(), named;
	size_t n;

	/* Criterion runs each test in a process of its own. */
	cr_assert_eq(pthread_setname_np(pthread_self(), "x\nstart 1"), 0);
	n = identity_format(buf, sizeof(buf), "h", getpid(), 0);
	cr_assert_geq(identity_get(buf, n, "cmd", v, sizeof(v)), 0);
	cr_assert_str_eq(v, "x?start 1", "/proc/<pid>/stat does not escape it");
	cr_assert_eq(identity_holder(buf, n, &named), 0);
	cr_assert_eq(named.start, me.start);
}

Test(identity, a_gone_process_is_named_by_a_question_mark)
{
	char buf[IDENTITY_MAX], v[64];
	/* Above any pid_max Linux allows (2^22). */
	size_t n = identity_format(buf, sizeof(buf), "h", 99999999, 0);

	cr_assert_geq(identity_get(buf, n, "cmd", v, sizeof(v)), 0);
	cr_assert_str_eq(v, "?");
	cr_assert_eq(identity_get(buf, n, "start", v, sizeof(v)), -ENOENT,
		     "no start time to tell it by");
}

Test(identity, a_holder_is_named_only_by_a_whole_pid_and_start_time)
{
	struct lineage_proc p = { 0 };
	static const char *const missing[] = {
		"host h\npid 12\nuid 0\ncmd sh\n", /* no start time */
		"host h\nstart 99\nuid 0\n",       /* no pid */
		"127.0.0.1",                       /* Curator's node */
		"",
	};
	static const char *const malformed[] = {
		"pid 12x\nstart 99\n", "pid \nstart 99\n",
		"pid 0\nstart 99\n",   "pid -3\nstart 99\n",
		"pid 12\nstart \n",    "pid 12\nstart 9 9\n",
		"pid 12\nstart -1\n",  "pid 99999999999\nstart 1\n",
	};

	cr_assert_eq(identity_holder("pid 12\nstart 99\n", 16, &p), 0);
	cr_assert_eq(p.pid, 12);
	cr_assert_eq(p.start, 99ULL);
	for (size_t i = 0; i < sizeof(missing) / sizeof(*missing); i++)
		cr_assert_eq(identity_holder(missing[i], strlen(missing[i]),
					     &p),
			     -ENOENT, "%s", missing[i]);
	for (size_t i = 0; i < sizeof(malformed) / sizeof(*malformed); i++)
		cr_assert_eq(identity_holder(malformed[i], strlen(malformed[i]),
					     &p),
			     -EINVAL, "%s", malformed[i]);
}

Test(identity, the_longest_host_fits_whole)
{
	char host[300], buf[IDENTITY_MAX], v[300];
	size_t n;

	memset(host, 'h', sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	n = identity_format(buf, sizeof(buf), host, getpid(), 4294967294u);
	cr_assert_eq(n, strlen(buf));
	cr_assert_eq(identity_get(buf, n, "host", v, sizeof(v)),
		     IDENTITY_HOST_MAX);
	cr_assert_geq(identity_get(buf, n, "time", v, sizeof(v)), 0,
		      "the last line is there");
}

Test(identity, keys_match_whole_words_and_values_are_bounded)
{
	const char text[] = "hostname x\nhost b\npid \nnote a long note";
	char v[5];

	cr_assert_geq(identity_get(text, strlen(text), "host", v, sizeof(v)),
		      0);
	cr_assert_str_eq(v, "b", "'hostname' is not 'host'");
	cr_assert_geq(identity_get(text, strlen(text), "pid", v, sizeof(v)), 0);
	cr_assert_str_eq(v, "", "an empty value");
	cr_assert_geq(identity_get(text, strlen(text), "note", v, sizeof(v)),
		      0);
	cr_assert_str_eq(v, "a lo", "truncated to the buffer");
	cr_assert_eq(identity_get(text, strlen(text), "uid", v, sizeof(v)),
		     -ENOENT);
	cr_assert_eq(identity_get(text, 4, "host", v, sizeof(v)), -ENOENT,
		     "only the given length is read");
}

Test(identity, a_note_with_nul_bytes_is_read_whole)
{
	static const char text[] = "host h\nnote a\0b\\c\n";
	char v[32];

	cr_assert_eq(identity_get(text, sizeof(text) - 1, "note", v, sizeof(v)),
		     5);
	cr_assert_eq(memcmp(v, "a\0b\\c", 5), 0);
}

Test(identity, the_longest_identity_has_room_for_everything)
{
	char host[IDENTITY_HOST_MAX + 1], list[256], buf[IDENTITY_MAX];
	size_t n;

	memset(host, 'h', IDENTITY_HOST_MAX);
	host[IDENTITY_HOST_MAX] = '\0';
	memset(list, 'm', 255);
	list[255] = '\0';
	n = identity_format(buf, sizeof(buf), host, getpid(), 4294967295u);
	n = identity_add_multi(buf, n, sizeof(buf), list);
	cr_assert_lt(n, sizeof(buf)); /* and no assertion fired */
}
