/*
 * kernelopen.c - is an open the kernel's own, for an ioctl (see
 * kernelopen.h)?
 */
#include "kernelopen.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ioctl's number in the 32-bit system call table (i386 and arm), which
 * /proc shows for a compat task's call. */
#define KERNELOPEN_COMPAT_IOCTL 54

long kernelopen_syscall_of(const char *text)
{
	char *end;
	long nr;

	if (text[0] < '0' || text[0] > '9')
		return -1; /* "running", "-1 ...": in no system call */
	errno = 0;
	nr = strtol(text, &end, 10);
	if (errno != 0 || (*end != ' ' && *end != '\n'))
		return -1;
	return nr;
}

int kernelopen_is_ioctl(long nr)
{
	return nr == SYS_ioctl || nr == KERNELOPEN_COMPAT_IOCTL;
}

int kernelopen_in_ioctl(pid_t tid)
{
	char path[48], text[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	text[n] = '\0';
	return kernelopen_is_ioctl(kernelopen_syscall_of(text));
}
