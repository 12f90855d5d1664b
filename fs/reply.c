/*
 * reply.c - the one way an errno goes back to the kernel.
 */
#include "fs.h"

#include <errno.h>

void fs_reply_err(fuse_req_t req, int err)
{
	if (err <= 0 || err >= 512)
		err = err == 0 ? 0 : EIO;
	fuse_reply_err(req, err);
}
