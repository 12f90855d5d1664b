/*
 * mountpoint.h - is MOUNTPOINT somewhere zklockfs can be mounted?  Checked
 * before connecting to ZooKeeper, so that a typo costs no wait and leaves
 * nothing behind.
 */
#ifndef ZKL_MOUNTPOINT_H
#define ZKL_MOUNTPOINT_H

#include <stddef.h>

/* 0 if path is an existing directory with no zklockfs mounted on it; else
 * -errno with a message naming the problem in err. */
int mountpoint_check(const char *path, char *err, size_t errlen);

/* Does this line of /proc/self/mountinfo describe a zklockfs filesystem
 * mounted at dir (an absolute path without symbolic links)? */
int mountpoint_is_zklockfs_at(const char *line, const char *dir);

#endif
