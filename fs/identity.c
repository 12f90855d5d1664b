/*
 * identity.c - format and parse a lock node's identity text.
 */
#include "identity.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "procfile.h"

/* The process of thread tid (its thread group, as /proc says), or tid
 * itself if that cannot be read: FUSE names the asking thread, and a lock
 * belongs to a process (on_lost signals it, F_GETLK names it) even when
 * the thread that took it has ended. */
static pid_t identity_process(pid_t tid)
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

/* The command name as ps shows it; "?" if the process is gone. */
static void identity_comm(pid_t pid, char *comm, size_t size)
{
	if (procfile_read(pid, "comm", comm, size) <= 0) {
		snprintf(comm, size, "?");
		return;
	}
	comm[strcspn(comm, "\n")] = '\0';
}

size_t identity_format(char *buf, size_t size, const char *host, pid_t tid,
		       uid_t uid)
{
	pid_t pid = identity_process(tid);
	char comm[64];
	int n;

	identity_comm(pid, comm, sizeof(comm));
	n = snprintf(buf, size,
		     "host %.*s\npid %d\nuid %u\ncmd %s\ntime %lld\n",
		     IDENTITY_HOST_MAX, host, (int)pid, (unsigned)uid, comm,
		     (long long)time(NULL));
	/* 5+255 + 4+11 + 4+10 + 4+63 + 5+20 + 5 newlines < IDENTITY_MAX */
	assert(n > 0 && (size_t)n < size);
	return (size_t)n;
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
	size_t klen = strlen(key);
	const char *end = data + len;

	for (const char *line = data; line < end;) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *eol = nl ? nl : end;
		if ((size_t)(eol - line) > klen && line[klen] == ' ' &&
		    memcmp(line, key, klen) == 0) {
			size_t vlen = (size_t)(eol - line) - klen - 1;
			if (vlen >= outlen)
				vlen = outlen - 1;
			memcpy(out, line + klen + 1, vlen);
			out[vlen] = '\0';
			return (int)vlen;
		}
		line = eol + 1;
	}
	return -ENOENT;
}
