/*
 * identity.c - format and parse a lock node's identity text.
 */
#include "identity.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "names.h"
#include "process.h"

/* The process of thread tid (its thread group, as /proc says), or tid
 * itself if that cannot be read: FUSE names the asking thread, and a lock
 * belongs to a process (on_lost signals it, F_GETLK names it) even when
 * the thread that took it has ended. */
static pid_t identity_process_of_thread(pid_t tid)
{
	char status[1024]; /* Tgid is the fourth line */
	const char *field;
	long pid;

	if (procfile_read(tid, "status", status, sizeof(status)) <= 0)
		return tid;
	field = strstr(status, "\nTgid:");
	if (!field)
		return tid;
	pid = strtol(field + 6, NULL, 10);
	return pid > 0 ? (pid_t)pid : tid;
}

/* The command name of a /proc/<pid>/stat text (its second field, in
 * parentheses it may hold itself) into comm.  Unlike /proc/<pid>/comm
 * stat does not escape it: a byte that would end the identity's line, or
 * any other control byte, becomes '?'. */
static void identity_stat_comm(const char *stat, char *comm, size_t size)
{
	const char *lparen = strchr(stat, '('), *rparen = strrchr(stat, ')');
	size_t len;

	if (!lparen || !rparen || rparen < lparen) {
		snprintf(comm, size, "?");
		return;
	}
	len = (size_t)(rparen - lparen - 1);
	if (len >= size)
		len = size - 1;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)lparen[1 + i];
		comm[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	comm[len] = '\0';
}

/* The process of thread tid (*pid), and its /proc/<pid>/stat into stat
 * (size bytes).  One read for a single-threaded caller (most are: a shell,
 * flock(1)), whose one thread is the process; a multi-threaded one's
 * process is looked up (its status's Tgid).  Returns the stat's length,
 * or <= 0 if /proc shows it no more. */
static ssize_t identity_stat(pid_t tid, pid_t *pid, char *stat, size_t size)
{
	ssize_t n = procfile_read(tid, "stat", stat, size);
	unsigned long long threads;

	*pid = tid;
	if (n > 0 && procstat_field(stat, 20, &threads) == 0 && threads == 1)
		return n;
	*pid = identity_process_of_thread(tid);
	return *pid == tid ? n : procfile_read(*pid, "stat", stat, size);
}

size_t identity_format(char *buf, size_t size, const char *host, pid_t tid,
		       uid_t uid)
{
	pid_t pid, ppid;
	char stat[1024], comm[64] = "?", start_line[32] = "";
	unsigned long long start;
	int n;

	/* The command name and the start time, which with the pid name the
	 * process: the pid alone may be another's later. */
	if (identity_stat(tid, &pid, stat, sizeof(stat)) > 0 &&
	    lineage_parse_stat(stat, &ppid, &start) == 0) {
		identity_stat_comm(stat, comm, sizeof(comm));
		snprintf(start_line, sizeof(start_line), "start %llu\n", start);
	}
	n = snprintf(buf, size,
		     "host %.*s\npid %d\n%suid %u\ncmd %s\ntime %lld\n",
		     IDENTITY_HOST_MAX, host, (int)pid, start_line,
		     (unsigned)uid, comm, (long long)time(NULL));
	/* 5+255 + 4+11 + 6+20 + 4+10 + 4+63 + 5+20 + 6 newlines
	 * < IDENTITY_MAX */
	assert(n > 0 && (size_t)n < size);
	return (size_t)n;
}

void identity_for_log(char *buf, size_t size, pid_t tid, uid_t uid)
{
	pid_t pid, ppid;
	char stat[1024], comm[64] = "?";
	unsigned long long start;

	if (identity_stat(tid, &pid, stat, sizeof(stat)) > 0 &&
	    lineage_parse_stat(stat, &ppid, &start) == 0)
		identity_stat_comm(stat, comm, sizeof(comm));
	snprintf(buf, size, "pid %d (%s, uid %u)", (int)pid, comm,
		 (unsigned)uid);
}

size_t identity_add_multi(char *buf, size_t len, size_t size, const char *list)
{
	int n = snprintf(buf + len, size - len, "multi %.255s\n", list);

	assert(n > 0 && (size_t)n < size - len); /* IDENTITY_MAX's room */
	return len + (size_t)n;
}

int identity_get(const char *data, size_t len, const char *key, char *out,
		 size_t outlen)
{
	size_t vlen;
	const char *v = names_data_field(data, len, key, &vlen);

	if (!v)
		return -ENOENT;
	if (vlen >= outlen)
		vlen = outlen - 1;
	memcpy(out, v, vlen);
	out[vlen] = '\0';
	return (int)vlen;
}

int identity_holder(const char *data, size_t len, struct lineage_proc *out)
{
	char pid[16], start[24], *end;
	unsigned long long s;
	long p;

	if (identity_get(data, len, "pid", pid, sizeof(pid)) < 0 ||
	    identity_get(data, len, "start", start, sizeof(start)) < 0)
		return -ENOENT;
	errno = 0;
	p = strtol(pid, &end, 10);
	if (errno || end == pid || *end || p <= 0 || p > INT_MAX)
		return -EINVAL;
	s = strtoull(start, &end, 10);
	if (errno || end == start || *end || start[0] == '-')
		return -EINVAL;
	out->pid = (pid_t)p;
	out->start = s;
	return 0;
}
