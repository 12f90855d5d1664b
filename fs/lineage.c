/*
 * lineage.c - a process and its ancestors (lineage.h).
 */
#include "lineage.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "procfile.h"

/* The decimal value of the line starting with key ("\nTgid:"). */
static int lineage_field(const char *status, const char *key, pid_t *out)
{
	const char *p = strstr(status, key);
	char *end;
	long v;

	if (!p)
		return -EINVAL;
	p += strlen(key);
	errno = 0;
	v = strtol(p, &end, 10);
	if (errno || end == p || (*end != '\n' && *end != '\0') || v < 0)
		return -EINVAL;
	*out = (pid_t)v;
	return 0;
}

int lineage_parse(const char *status, pid_t *tgid, pid_t *ppid)
{
	if (lineage_field(status, "\nTgid:", tgid) < 0 ||
	    lineage_field(status, "\nPPid:", ppid) < 0)
		return -EINVAL;
	return 0;
}

size_t lineage_of(pid_t tid, pid_t *out, size_t max)
{
	size_t n = 0;
	pid_t pid = tid;

	while (n < max && pid > 1) {
		char buf[4096];
		pid_t tgid, ppid;

		/* After a '\n', so that every field starts a line. */
		if (procfile_read(pid, "status", buf + 1, sizeof(buf) - 1) <= 0)
			break;
		buf[0] = '\n';
		if (lineage_parse(buf, &tgid, &ppid) < 0)
			break;
		out[n++] = tgid;
		pid = ppid;
	}
	return n;
}
