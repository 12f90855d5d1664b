/*
 * authfile.h - the ZooKeeper credentials of -o auth_file=PATH.  The secret
 * never appears on the command line (where ps shows it to everybody).
 */
#ifndef ZKL_AUTHFILE_H
#define ZKL_AUTHFILE_H

#include <stddef.h>

/* Read "user:password" from the first line of the file at path into buf.
 * Refuses a file that every user may read.  Returns 0, or -errno with a
 * message for the user in err. */
int authfile_read(const char *path, char *buf, size_t size, char *err,
		  size_t errlen);

#endif
