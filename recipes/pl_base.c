/*
 * pl_base.c - what every step of a lease in a peer's layout uses (pl.h):
 * letting the peer's lock go, deleting the lease, failing, granting, the
 * lease directory's ACL.  It calls nothing of pl_lease.c or peerlease.c.
 */
#include "pl.h"
#include "resource.h"
#include "zkerr.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>

#include "log.h"

static void pl_on_deleted(int rc, const void *data);

int pl_kazoo(const struct zkl_lockreq *lr)
{
	return lr->s->dialect == ZKL_STYLE_KAZOO;
}

/* The CALL hold of a call just sent, if rc says it was: 0 or -errno. */
int pl_call(struct zkl_lockreq *lr, int rc)
{
	if (rc != ZOK)
		return zkerr_errno(rc);
	lr_hold(lr, LR_HOLD_CALL);
	return 0;
}

/* Let the peer's lock go.  Its done comes (and drops the MUTEX hold on
 * lr) unless it was still pending. */
void pl_release_mutex(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	struct zkl_lockreq *m = lr->mutex;

	if (!m)
		return;
	lr->mutex = NULL;
	if (m->outcome == LR_PENDING)
		lr_drop_locked(lr, LR_HOLD_MUTEX); /* the caller holds one */
	lr_release_sub_locked(lr, m, notify);
}

static void pl_on_deleted(int rc, const void *data)
{
	struct zkl_lockreq *lr = (struct zkl_lockreq *)data;
	struct zkl_link notify;

	session_enter(lr->s, &notify);
	if (lr->phase == PH_DELETING) {
		if (lr_is_connection_loss(rc))
			lr_defer(lr, &notify); /* must not leave it behind */
		else
			lr->phase = PH_GONE;
	}
	lr_end_completion(lr, &notify);
}

void pl_delete(struct zkl_lockreq *lr)
{
	lr->phase = PH_DELETING;
	lr_hold(lr, LR_HOLD_CALL);
	if (zoo_adelete(lr->s->zh, lr->node, -1, pl_on_deleted, lr) != ZOK) {
		lr_drop_locked(
			lr,
			LR_HOLD_CALL); /* only a dead handle refuses: the node dies too */
		lr->phase = PH_GONE;
	}
}

void peerlease_abandon_locked(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	ZKL_ASSERT_HELD(&lr->s->lock);
	lr_unwatch_all(lr);
	pl_release_mutex(lr, notify);
	switch (lr->phase) {
	case PH_CREATING:
	case PH_RECOVERING:
	case PH_CHECKING:
	case PH_DELETING:
		return; /* the step in flight deletes what it finds */
	default:
		if (lr_has_node(lr) && lr->phase != PH_GONE)
			pl_delete(lr);
		else
			lr->phase = PH_GONE;
		return;
	}
}

void pl_fail(struct zkl_lockreq *lr, int err, struct zkl_link *notify)
{
	lr_tell_locked(lr, err, notify);
	lr->outcome = LR_FINISHED;
	peerlease_abandon_locked(lr, notify);
}

void pl_grant(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	lr->phase = PH_IDLE;
	lr_unwatch_all(lr);
	pl_release_mutex(lr, notify);
	lr_tell_locked(lr, 0, notify);
	lr_watch_own(lr);
}

/* With credentials, the lease directory's ACL, read before its first
 * count: the peer's layout keeps leases where the resource's queue check
 * (queue.c) does not look, and one that lets others in lets them delete
 * or add leases. */
void pl_on_acl(int rc, struct ACL_vector *acl, struct Stat *st,
	       const void *data)
{
	struct zkl_lockreq *lr = (struct zkl_lockreq *)data;
	char foreign[256], fix[NAMES_MAX_NODE_PATH + 128];
	struct zkl_link notify;

	(void)st;
	session_enter(lr->s, &notify);
	if (rc == ZOK && !lr->acl_checked) {
		lr->acl_checked = 1;
		lr->acl_open = session_acl_foreign(lr->s, acl, foreign,
						   sizeof(foreign)) != 0;
		if (lr->acl_open) {
			session_acl_fix(lr->s, lr->dir, fix, sizeof(fix));
			log_msg(LOG_ERR,
				"%s is not the credentials' alone: its ACL "
				"also grants %s; leases in it are refused "
				"(EACCES) until it is fixed: %s",
				lr->dir, foreign, fix);
		}
	}
	lr_end_completion(lr, &notify);
}
