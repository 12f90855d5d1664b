/*
 * notify.h - tell a service manager how the daemon is doing, with
 * systemd's readiness protocol (sd_notify(3)): a datagram to the socket
 * named by $NOTIFY_SOCKET.  Without that variable nothing is sent.  The
 * protocol is a few lines, so no libsystemd.
 */
#ifndef ZKL_NOTIFY_H
#define ZKL_NOTIFY_H

/* Send `state` ("READY=1", "STOPPING=1", ...).  Returns 0, or -errno;
 * a failure is no reason to stop serving. */
int notify_send(const char *state);

#endif
