/*
 * znodename.h - file names <-> znode names.
 *
 * A file name is any bytes but NUL and '/'.  ZooKeeper refuses a path that
 * holds, once its bytes are read as UTF-8, a control character (U+0001-
 * U+001F, U+007F-U+009F), a character of U+D800-U+F8FF or U+FFF0-U+FFFF,
 * any character beyond U+FFFF (Java stores it as two surrogates), or a
 * byte that is not UTF-8 at all (it becomes U+FFFD).  So that every name a
 * shell accepts is a resource, each byte of such a character is written as
 * '%' and two upper-case hex digits; every other byte is itself.  A '%'
 * that is followed by what would read as such an escape is written %25,
 * so the mapping is one-to-one; any other '%' stays as it is ("50%",
 * "a%20b" and "%41" are their own znode names).
 *
 * Pure functions of bytes: no ZooKeeper, no FUSE.
 */
#ifndef ZKL_ZNODENAME_H
#define ZKL_ZNODENAME_H

#include <stddef.h>

/* The longest znode name of a file name of at most 255 bytes. */
#define ZNODENAME_MAX (3 * 255)

/* Encode the file name `name` (len bytes) into out (size bytes, NUL-ended).
 * Returns the length written, or -ENAMETOOLONG if out is too small. */
int znodename_encode(const char *name, size_t len, char *out, size_t size);

/* Decode the znode name `z` into out (size bytes, NUL-ended).  Returns the
 * length written, -ENAMETOOLONG if out is too small, or -EINVAL if z is
 * not the encoding of any file name (znodename_encode would not give z
 * back: another tool's "caf%C3%A9"), so the mount does not show it. */
int znodename_decode(const char *z, char *out, size_t size);

/* How many of the len bytes at s, from the start, ZooKeeper accepts in a
 * path as they are: len if all of them. */
size_t znodename_accepted_len(const char *s, size_t len);

#endif
