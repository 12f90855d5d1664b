/*
 * zkerr.c - the one translation of ZooKeeper's return codes into -errno.
 */
#include "zkerr.h"

#include <errno.h>
#include <zookeeper/zookeeper.h>

int zkerr_errno(int zrc)
{
	switch (zrc) {
	case ZOK:
		return 0;
	case ZNONODE:
		return -ENOENT;
	case ZNODEEXISTS:
		return -EEXIST;
	case ZNOTEMPTY:
		return -ENOTEMPTY;
	case ZNOAUTH:
	case ZAUTHFAILED:
		return -EACCES;
	case ZBADARGUMENTS:
		return -EINVAL;
	case ZNOCHILDRENFOREPHEMERALS:
		return -ENOTDIR;
	case ZCONNECTIONLOSS:
	case ZOPERATIONTIMEOUT:
	case ZSSLCONNECTIONERROR:
		return -EAGAIN;
	case ZSESSIONEXPIRED:
	case ZINVALIDSTATE:
	case ZCLOSING:
		return -ENOTCONN;
	case ZSYSTEMERROR:
		return errno > 0 && errno < 512 ? -errno : -EIO;
	default:
		return -EIO;
	}
}

int zkerr_is_connection_loss(int zrc)
{
	return zrc == ZCONNECTIONLOSS || zrc == ZOPERATIONTIMEOUT ||
	       zrc == ZSSLCONNECTIONERROR;
}
