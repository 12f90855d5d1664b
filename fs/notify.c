/*
 * notify.c - systemd's readiness protocol (see notify.h).
 */
#include "notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int notify_send(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len;
	ssize_t sent;
	int fd, err = 0;

	if (!path || !*path)
		return 0;
	len = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || len >= sizeof(sa.sun_path))
		return -EINVAL;
	memcpy(sa.sun_path, path, len);
	if (path[0] == '@') /* an abstract socket: a leading NUL byte */
		sa.sun_path[0] = '\0';
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	sent = sendto(
		fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa,
		(socklen_t)(offsetof(struct sockaddr_un, sun_path) + len));
	if (sent < 0)
		err = -errno;
	close(fd);
	return err;
}
