/*
 * zkerr.h - ZooKeeper return codes as -errno values: the one place where
 * the two kinds of error meet (every other function returns one kind).
 */
#ifndef ZKL_ZKERR_H
#define ZKL_ZKERR_H

/* 0 for ZOK, else -errno: ZNONODE -ENOENT, ZNODEEXISTS -EEXIST,
 * ZNOTEMPTY -ENOTEMPTY, ZNOAUTH and ZAUTHFAILED -EACCES, ZBADARGUMENTS
 * -EINVAL, ZNOCHILDRENFOREPHEMERALS -ENOTDIR, a lost connection or timeout
 * -EAGAIN, an expired or closing session -ENOTCONN, ZSYSTEMERROR the
 * system's errno, anything else -EIO. */
int zkerr_errno(int zrc);

#endif
