/*
 * mountpoint.c - checks of the mount point (see mountpoint.h).
 */
#include "mountpoint.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
