/*
 * identity.h - who asked for a lock, as stored in its node's data: one
 * "key value" line each for host, pid, start (the process's start time,
 * which with the pid names it: process.h), uid, cmd and time, for a
 * multi-lock a "multi" line (its list), and optionally a "note" line.
 * Other mounts read it back (F_GETLK, holders); a peer's node (Curator,
 * kazoo) has none of it.
 */
#ifndef ZKL_IDENTITY_H
#define ZKL_IDENTITY_H

#include <stddef.h>
#include <sys/types.h>

#include "process.h"

/* Room for an identity without its note: host (at most 255 bytes, as
 * gethostname gives), command (15 in Linux, at most 63 read), four
 * numbers, a multi-lock's list (a file name: at most 255 bytes) and the
 * keys fit (676 bytes at most). */
#define IDENTITY_HOST_MAX 255
#define IDENTITY_MAX 800
/* Largest note a holder may store with write(). */
#define IDENTITY_NOTE_MAX 1024

/* Describe the process of thread `tid` (a FUSE request's pid): its pid,
 * start time and command name, read from /proc, into buf (no start line
 * if the process is gone already).  Returns the length written; a host
 * longer than IDENTITY_HOST_MAX is cut there, so that IDENTITY_MAX bytes
 * always hold the whole text. */
size_t identity_format(char *buf, size_t size, const char *host, pid_t tid,
		       uid_t uid);

/* The same process for a log line: "pid P (command, uid U)". */
void identity_for_log(char *buf, size_t size, pid_t tid, uid_t uid);

/* Add a "multi" line naming a multi-lock's list (its directory's name)
 * to the identity buf[0..len) of `size` bytes.  Returns the new length. */
size_t identity_add_multi(char *buf, size_t len, size_t size, const char *list);

/* Copy the value of `key` in the identity text data[0..len) into out
 * (NUL-terminated, truncated to outlen - 1).  Returns its length (a note
 * may hold NUL bytes), or -ENOENT. */
int identity_get(const char *data, size_t len, const char *key, char *out,
		 size_t outlen);

/* The process the identity data[0..len) names: its pid and start time.
 * Returns 0, -ENOENT if either is missing (another tool's node, an older
 * mount's, or a process gone before its request was read), or -EINVAL
 * if one is malformed. */
int identity_holder(const char *data, size_t len, struct lineage_proc *out);

#endif
