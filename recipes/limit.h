/*
 * limit.h - a semaphore's limit N as ZooKeeper keeps it: decimal ASCII in
 * the resource znode's data, as kazoo's Semaphore keeps its max_leases.
 * No data (a resource whose limit was never set) means 1.
 */
#ifndef ZKL_LIMIT_H
#define ZKL_LIMIT_H

#include <stddef.h>

/* The largest limit accepted: a bound, so that a typo (an extra digit or
 * two) is refused rather than opening the gates to everyone. */
#define LIMIT_MAX 1000000u

/* Room for the longest limit, a newline and a NUL. */
#define LIMIT_TEXT_MAX 9

/* Parse what is stored in a resource znode (stored = 1: empty means 1) or
 * what a user wrote to MOUNT/<res>/limit (stored = 0: nothing is refused):
 * 1 to LIMIT_MAX in decimal, no sign, no leading zero, no spaces, at most
 * one newline after it.  Returns 0 with *n set, or -EINVAL. */
int limit_parse(const char *buf, size_t len, int stored, unsigned *n);

/* The data to store for n (no newline).  Returns its length. */
size_t limit_format(unsigned n, char *buf, size_t size);

#endif
