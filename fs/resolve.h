/*
 * resolve.h - can the ZooKeeper servers be found at all?  Checked before
 * connecting, so that a typo in a host name is named as such at once and
 * not reported 15 s later as a server that did not answer.
 */
#ifndef ZKL_RESOLVE_H
#define ZKL_RESOLVE_H

#include <stddef.h>

/* `hosts` is the list the ZooKeeper client takes ("host:port,...", an IPv6
 * address without brackets: the port follows the last ':').  Returns 0 if
 * at least one host resolves, logging a warning for each one that does not
 * (the client uses the others, as it would); else -ENOENT with a message
 * naming each host and why in err. */
int resolve_check(const char *hosts, char *err, size_t errlen);

#endif
