/*
 * authfile.c - read the digest credentials (see authfile.h).
 */
#include "authfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int authfile_read(const char *path, char *buf, size_t size, char *err,
		  size_t errlen)
{
	struct stat st;
	ssize_t got;
	char *colon;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;

	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "auth_file %s: %s", path,
			 strerror(errno));
		return rc;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		snprintf(err, errlen, "auth_file %s: %s", path, strerror(-rc));
		close(fd);
		return rc;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "auth_file %s: %s", path,
			 S_ISDIR(st.st_mode) ? "is a directory"
					     : "is not a regular file");
		close(fd);
		return -EINVAL;
	}
	if (st.st_mode & S_IROTH) {
		snprintf(err, errlen,
			 "auth_file %s: readable by every user; "
			 "chmod o-r it first",
			 path);
		close(fd);
		return -EPERM;
	}
	got = read(fd, buf, size - 1);
	close(fd);
	if (got < 0) {
		rc = -errno;
		snprintf(err, errlen, "auth_file %s: %s", path,
			 strerror(errno));
		return rc;
	}
	buf[got] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	colon = strchr(buf, ':');
	if (!colon || colon == buf || !colon[1]) {
		snprintf(err, errlen,
			 "auth_file %s: expected one line user:password", path);
		memset(buf, 0, size);
		return -EINVAL;
	}
	return 0;
}
