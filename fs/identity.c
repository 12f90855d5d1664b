/*
 * identity.c - format and parse a lock node's identity text.
 */
#include "identity.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The command name as ps shows it; "?" if the process is gone. */
static void identity_comm(pid_t pid, char *comm, size_t size)
{
	char path[64];
	ssize_t got = -1;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		got = read(fd, comm, size - 1);
		close(fd);
	}
	if (got <= 0) {
		snprintf(comm, size, "?");
		return;
	}
	comm[got] = '\0';
	comm[strcspn(comm, "\n")] = '\0';
}

size_t identity_format(char *buf, size_t size, const char *host, pid_t pid,
		       uid_t uid)
{
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
