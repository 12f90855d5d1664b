/*
 * pl.h - what the files of a lease in a peer's layout share (see
 * peerlease.c for the layouts): pl_base.c, the steps every other uses;
 * pl_lease.c, the lease node and its count; peerlease.c, the peer's lock,
 * the owner's start and the session's calls.  They call down that list
 * only.  Nobody else includes it.
 */
#ifndef ZKL_PL_H
#define ZKL_PL_H

#include "lr.h"

/* ---- pl_base.c ---------------------------------------------------------- */

/* kazoo's layout (else Curator's). */
int pl_kazoo(const struct zkl_lockreq *lr);
/* The CALL hold of a call just sent, if rc says it was: 0 or -errno. */
int pl_call(struct zkl_lockreq *lr, int rc);
/* Let the peer's lock go (its node's deletion is awaited by the lease's
 * 'gone'). */
void pl_release_mutex(struct zkl_lockreq *lr, struct zkl_link *notify);
/* Delete the lease node. */
void pl_delete(struct zkl_lockreq *lr);
/* Tell the owner err and give everything up. */
void pl_fail(struct zkl_lockreq *lr, int err, struct zkl_link *notify);
/* Held: the peer's lock goes, the owner is told, the node watched. */
void pl_grant(struct zkl_lockreq *lr, struct zkl_link *notify);
/* The lease directory's ACL, read before the first count. */
void pl_on_acl(int rc, struct ACL_vector *acl, struct Stat *st,
	       const void *data);

/* ---- pl_lease.c --------------------------------------------------------- */

/* Create the lease node (kazoo: its fixed name). */
void pl_create(struct zkl_lockreq *lr, struct zkl_link *notify);
/* Read N and the leases, both watched. */
void pl_count(struct zkl_lockreq *lr, struct zkl_link *notify);
/* After a lost create reply: is lr->node ours? */
void pl_check(struct zkl_lockreq *lr, struct zkl_link *notify);
/* After a lost create reply: find the node it may have made. */
void pl_recover(struct zkl_lockreq *lr, struct zkl_link *notify);
/* The watches of a count: on the leases, on N. */
void pl_leases_fired(struct zkl_watch *w, const char *path,
		     enum zkl_watch_event ev, struct zkl_link *notify);
void pl_limit_fired(struct zkl_watch *w, const char *path,
		    enum zkl_watch_event ev, struct zkl_link *notify);

#endif
