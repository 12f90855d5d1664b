/*
 * lr_heir.c - a downgrade (lockreq_start_in_place): a read request takes
 * the place of a write lock its owner holds, so that no writer queued
 * behind that lock gets in between (Curator's CURATOR-621 fix, 5.5).
 *
 * One transaction creates the heir's node, not sequential, named with
 * the write node's own number and tag, and deletes the write node.  The
 * number puts the heir in the write node's place in every listing
 * (lockrule.h: for one age, the write node first, so the heir stands
 * right behind where it stood, and ahead of every node behind it).  The
 * transaction sets the write node's data before deleting it: its
 * watchers, whose views of the queue are older than the heir, hear of a
 * change rather than a deletion, and list again (lr_hooks.c).  The heir
 * holds at once: nothing a reader waits for stood ahead of a held write
 * lock.
 *
 * The heir keeps its write lock's fencing token: it is the same hold
 * going on, above every earlier holder's and below every later one's
 * (a writer queued behind has a greater czxid than the write node, and
 * a smaller one than the heir's node).  Its node's data says so, in a
 * "token" line, for holders on every host (lr_heir_data).
 *
 * After a lost reply the heir is looked for by its name (lr_recover):
 * found, the transaction happened; not found, it did not, and is sent
 * again while the write lock still holds.  Above lr_steps.c; below
 * lr_create.c.
 */
#include "lr.h"
#include "zkerr.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "log.h"

struct lr_heir_txn {
	struct zkl_lockreq *lr;
	zoo_op_t ops[3];
	zoo_op_result_t results[3];
	struct Stat set_stat; /* room for the set's answer (unused) */
	char *data;           /* the heir's node data */
	char created[NAMES_MAX_NODE_PATH + 1];
};

int lr_heir_can_take(const struct zkl_lockreq *from)
{
	/* A lock of several owners stays theirs (lockreq_share). */
	return from->owners == 1 && lr_heir_can_share(from);
}

int lr_heir_can_share(const struct zkl_lockreq *from)
{
	return from->mode == ZKL_MODE_WRITE && from->outcome == LR_HELD &&
	       !from->lost && !from->grant_deferred && from->phase == PH_IDLE &&
	       !from->multi && !from->peer && !from->group &&
	       !from->mutex_names && lr_has_node(from);
}

int lr_heir_data(int64_t token, const void *data, size_t len, char **out,
		 size_t *outlen)
{
	char line[32];
	int n = snprintf(line, sizeof(line), "token %" PRId64 "\n", token);

	*out = malloc(len + (size_t)n);
	if (!*out)
		return -ENOMEM;
	memcpy(*out, data, len);
	memcpy(*out + len, line, (size_t)n);
	*outlen = len + (size_t)n;
	return 0;
}

void lr_heir_settle(struct zkl_lockreq *lr, struct zkl_link *notify)
{
	if (!lr->heir_of)
		return;
	lr->czxid = lr->heir_of->czxid;
	lr->inherited = 1;
	/* Asked to let go, it still is: the same hold goes on. */
	lr->revoke_asked = lr->heir_of->revoke_asked;
	lr->revoke_told = lr->heir_of->revoke_told;
	lr->revoke_ms = lr->heir_of->revoke_ms;
	lr->granted_ms = lr->heir_of->granted_ms;
	lr->maxhold_ask_ms = lr->heir_of->maxhold_ask_ms;
	lr->maxhold_break_ms = lr->heir_of->maxhold_break_ms;
	lr->heir_of->phase = PH_GONE;            /* nothing left to delete */
	lr_metrics_ended_locked(lr->heir_of, 0); /* the write lock's hold */
	lr_heir_detach_locked(lr, notify);
}

static void lr_heir_on_sent(int rc, const void *data)
{
	struct lr_heir_txn *t = (struct lr_heir_txn *)data;
	struct zkl_lockreq *lr = t->lr;
	struct zkl_session *s = lr->s;
	struct zkl_link notify;

	session_enter(s, &notify);
	if (lr->phase != PH_CREATING) {
		/* The session expired under us: nothing to do. */
	} else if (rc == ZOK) {
		lr_heir_settle(lr, &notify);
		if (lr->outcome == LR_FINISHED) {
			lr_delete(lr);
		} else {
			lr->phase = PH_IDLE;
			log_msg(LOG_DEBUG, "%s takes its write lock's place",
				lr->node);
			lr_tell_locked(lr, 0, &notify);
			lr_watch_own(lr);
		}
	} else if (lr_is_connection_loss(rc)) {
		/* Done or not?  The heir's name tells, once connected. */
		lr->phase = PH_RECOVERING;
		if (lr->try_only)
			lr_finish_locked(lr, -EAGAIN, &notify);
		lr_defer(lr, &notify);
	} else {
		/* Atomic: nothing happened.  The write node is gone (lost to
		 * another client) or cannot be touched: the lock is not ours
		 * to pass on. */
		log_msg(LOG_WARNING,
			"%s: cannot take the place of %s (%s): the downgrade "
			"fails",
			lr->node, lr->heir_of ? lr->heir_of->node : "its lock",
			zerror(rc));
		lr->node[0] = '\0';
		lr->phase = PH_GONE;
		if (rc == ZNONODE && lr->heir_of) /* deleted by another */
			lr_metrics_ended_locked(lr->heir_of, 1);
		lr_finish_locked(lr, rc == ZNONODE ? -EIO : zkerr_errno(rc),
				 &notify);
	}
	lr_end_completion(lr, &notify);
	free(t->data);
	free(t);
}

int lr_heir_send(struct zkl_lockreq *lr)
{
	struct zkl_lockreq *from = lr->heir_of;
	struct lr_heir_txn *t;
	size_t len;
	int n, rc;

	if (!lr_heir_can_take(from))
		return -EIO; /* lost while the connection was down */
	/* The write node's number, as ZooKeeper wrote it, after our prefix
	 * (the same tag, lr_use_tag). */
	n = snprintf(lr->node, lr->nodesize, "%s%s", lr->create_path,
		     from->node + strlen(from->create_path));
	if (n < 0 || (size_t)n >= lr->nodesize) {
		lr->node[0] = '\0';
		return -ENAMETOOLONG;
	}
	t = calloc(1, sizeof(*t));
	if (!t || lr_heir_data(from->czxid, lr->data, lr->datalen, &t->data,
			       &len) < 0) {
		free(t);
		return -ENOMEM;
	}
	t->lr = lr;
	zoo_create_op_init(&t->ops[0], lr->node, t->data, (int)len, lr->s->acl,
			   ZOO_EPHEMERAL, t->created, sizeof(t->created));
	zoo_set_op_init(&t->ops[1], from->node, "", 0, -1, &t->set_stat);
	zoo_delete_op_init(&t->ops[2], from->node, -1);
	rc = zoo_amulti(lr->s->zh, 3, t->ops, t->results, lr_heir_on_sent, t);
	if (rc != ZOK) {
		free(t->data);
		free(t);
		return zkerr_errno(rc);
	}
	lr_hold(lr, LR_HOLD_CALL);
	lr->phase = PH_CREATING;
	from->passing = 1;
	lr_unwatch_all(from); /* its node's changes are ours now */
	return 0;
}
