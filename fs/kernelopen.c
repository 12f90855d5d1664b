/*
 * kernelopen.c - is an open the kernel's own, for an ioctl (see
 * kernelopen.h)?
 */
#include "kernelopen.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/syscall.h>

#include "procfile.h"

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
	char text[64];

	if (procfile_read(tid, "syscall", text, sizeof(text)) <= 0)
		return 0;
	return kernelopen_is_ioctl(kernelopen_syscall_of(text));
}
