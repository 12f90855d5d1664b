/*
 * zkerr.h - ZooKeeper return codes as -errno values: the one place where
 * the two kinds of error meet (every other function returns one kind).
 */
#ifndef ZKL_ZKERR_H
#define ZKL_ZKERR_H

/* 0 for ZOK, else -errno: ZNONODE -ENOENT, ZNODEEXISTS -EEXIST,
 * ZNOTEMPTY -ENOTEMPTY, ZNOAUTH and ZAUTHFAILED -EACCES, ZBADARGUMENTS
 * -EINVAL, ZNOCHILDRENFOREPHEMERALS -ENOTDIR, a lost connection
 * (zkerr_is_connection_loss) -EAGAIN, an expired or closing session -ENOTCONN, ZSYSTEMERROR the
 * system's errno, anything else -EIO. */
int zkerr_errno(int zrc);

/* Did the request fail because the connection was lost (or timed out,
 * or failed TLS: ZSSLCONNECTIONERROR, which the client gives every
 * request in flight when a handshake or our own TLS files fail), so that
 * it may be sent again on the next connection? */
int zkerr_is_connection_loss(int zrc);

#endif
