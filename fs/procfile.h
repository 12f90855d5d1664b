/*
 * procfile.h - read what /proc says of a thread (the request's pid is the
 * asking thread's id).
 */
#ifndef ZKL_PROCFILE_H
#define ZKL_PROCFILE_H

#include <stddef.h>
#include <sys/types.h>

/* Read /proc/<tid>/<name> (its first size - 1 bytes) into buf, with a NUL
 * after it.  Returns the length read, or -errno (-ENOENT: no such thread;
 * -EACCES: not ours to read).  Any thread. */
ssize_t procfile_read(pid_t tid, const char *name, char *buf, size_t size);

#endif
