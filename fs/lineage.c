/*
 * lineage.c - a process and its ancestors (lineage.h).
 */
#include "lineage.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
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

int lineage_parse_stat(const char *stat, pid_t *ppid, unsigned long long *start)
{
	/* After the command's closing parenthesis: state, then ppid (4),
	 * ..., starttime (22). */
	const char *p = strrchr(stat, ')');
	unsigned long long v = 0;
	char *end;

	if (!p)
		return -EINVAL;
	p++;
	for (int field = 3; field <= 22; field++) {
		while (*p == ' ')
			p++;
		if (!*p)
			return -EINVAL;
		if (field == 4 || field == 22) {
			errno = 0;
			v = strtoull(p, &end, 10);
			if (errno || end == p ||
			    (*end != ' ' && *end != '\n' && *end != '\0'))
				return -EINVAL;
			if (field == 4)
				*ppid = (pid_t)v;
		}
		p += strcspn(p, " ");
	}
	*start = v;
	return 0;
}

size_t lineage_of(pid_t tid, struct lineage_proc *out, size_t max)
{
	char buf[4096];
	size_t n = 0;
	pid_t pid, ppid;

	/* After a '\n', so that every field starts a line. */
	if (procfile_read(tid, "status", buf + 1, sizeof(buf) - 1) <= 0)
		return 0;
	buf[0] = '\n';
	if (lineage_parse(buf, &pid, &ppid) < 0)
		return 0;
	while (n < max && pid > 0) {
		unsigned long long start;

		if (procfile_read(pid, "stat", buf, sizeof(buf)) <= 0 ||
		    lineage_parse_stat(buf, &ppid, &start) < 0)
			break;
		out[n].pid = pid;
		out[n].start = start;
		n++;
		if (pid == 1)
			break;
		pid = ppid;
	}
	return n;
}

int lineage_has(const struct lineage_proc *lineage, size_t n,
		struct lineage_proc p)
{
	for (size_t i = 0; p.pid > 0 && i < n; i++)
		if (lineage[i].pid == p.pid && lineage[i].start == p.start)
			return 1;
	return 0;
}

/* The "ino:" line of a /proc/<pid>/fdinfo/<fd> text, or 0. */
static uint64_t lineage_fdinfo_ino(const char *text)
{
	const char *p = strncmp(text, "ino:", 4) == 0 ? text
						      : strstr(text, "\nino:");

	return p ? strtoull(strchr(p, ':') + 1, NULL, 10) : 0;
}

int lineage_has_open(struct lineage_proc p, const uint64_t *inos, size_t n)
{
	char path[64], buf[1024];
	struct dirent *d;
	int found = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo", (int)p.pid);
	dir = opendir(path);
	if (!dir)
		return 0;
	while (!found && (d = readdir(dir))) {
		char name[300];
		uint64_t ino;

		if (d->d_name[0] == '.')
			continue;
		snprintf(name, sizeof(name), "fdinfo/%s", d->d_name);
		if (procfile_read(p.pid, name, buf, sizeof(buf)) <= 0)
			continue;
		ino = lineage_fdinfo_ino(buf);
		for (size_t i = 0; ino && i < n; i++)
			found |= ino == inos[i];
	}
	closedir(dir);
	/* The same process still, not one that took its pid. */
	return found && lineage_still_runs(p);
}

int lineage_still_runs(struct lineage_proc p)
{
	unsigned long long start;
	char buf[1024];
	pid_t ppid;

	return p.pid > 0 &&
	       procfile_read(p.pid, "stat", buf, sizeof(buf)) > 0 &&
	       lineage_parse_stat(buf, &ppid, &start) == 0 && start == p.start;
}
