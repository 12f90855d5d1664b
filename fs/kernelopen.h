/*
 * kernelopen.h - tell the kernel's own open of a lock file from a
 * program's.
 *
 * To answer an ioctl about a file's attributes (FS_IOC_GETFLAGS for
 * lsattr, FS_IOC_FSGETXATTR, chattr), the kernel opens the file itself,
 * with flags exactly O_RDONLY, while the calling thread waits inside
 * ioctl(2), and closes it again.  Such an open must take no lock: the
 * caller may hold this very lock through the descriptor it asks about, and
 * would wait for itself.  A program's open can carry O_RDONLY alone too
 * (a 32-bit program, whose open adds no O_LARGEFILE; any program on a
 * 32-bit kernel), so the flags do not tell; what the requesting thread is
 * doing does: its system call, as /proc/<tid>/syscall shows it, is an
 * ioctl only for the kernel's open.
 */
#ifndef ZKL_KERNELOPEN_H
#define ZKL_KERNELOPEN_H

#include <sys/types.h>

/* The system call number at the head of a /proc/<tid>/syscall text ("16
 * 0x3 ..."), or -1 for a thread in none ("running", "-1 ...") or text
 * that is not such a line. */
long kernelopen_syscall_of(const char *text);

/* Is nr an ioctl, natively or through the 32-bit compat gate? */
int kernelopen_is_ioctl(long nr);

/* Is the thread tid (a FUSE request's pid) inside ioctl(2)?  0 when it
 * cannot be told (no such thread, /proc not readable for it): then the
 * open is taken for a program's, which queues for its lock -- the choice
 * that never lets a program in without the lock.  Any thread. */
int kernelopen_in_ioctl(pid_t tid);

#endif
