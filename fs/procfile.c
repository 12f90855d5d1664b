/*
 * procfile.c - read a file of /proc/<tid> (see procfile.h).
 */
#include "procfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

ssize_t procfile_read(pid_t tid, const char *name, char *buf, size_t size)
{
	char path[64];
	ssize_t n;
	int fd;

	if (size == 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)tid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return n;
}
