/*
 * ml_txn.c - a multi-lock's other transactions (ml.h): a note on every
 * node, and the release of them all; and the context every transaction
 * of it allocates.  Calls nothing of ml_create.c or multilock.c.
 */
#include "ml.h"
#include "zkerr.h"

#include <errno.h>
#include <stdlib.h>

/* One allocation for a transaction's context: `head` bytes whose last
 * member is an array of n entries of `item` bytes, then its n ops and n
 * results (every part a multiple of 8 bytes long). */
void *ml_txn_alloc(size_t head, size_t item, unsigned n, zoo_op_t **ops,
		   zoo_op_result_t **results)
{
	char *p = malloc(
		head + n * (item + sizeof(zoo_op_t) + sizeof(zoo_op_result_t)));

	if (p) {
		*ops = (zoo_op_t *)(p + head + n * item);
		*results = (zoo_op_result_t *)(*ops + n);
	}
	return p;
}

/* A note on every node of the multi-lock, in one transaction: every host
 * sees it on all of them or on none.  Each set only over the version its
 * member's own watch read (a mark set since is not lost: EAGAIN), and
 * with the revocation mark's line kept once the lock was asked. */
struct ml_set {
	struct zkl_lockreq *g;        /* with a CALL hold */
	struct zkl_lockreq **members; /* as sent, and the token then: the */
	int64_t token;                /* versions are those members' */
	void (*cb)(int err, void *arg);
	void *arg;
	char *note;
	zoo_op_t *ops;
	zoo_op_result_t *results;
	struct Stat stats[];
};

static void ml_on_set(int rc, const void *data)
{
	struct ml_set *set = (struct ml_set *)data;
	struct zkl_lockreq *g = set->g;
	void (*cb)(int err, void *arg) = set->cb;
	void *arg = set->arg;
	struct zkl_link notify;

	session_enter(g->s, &notify);
	if (rc == ZOK && g->members == set->members && g->czxid == set->token)
		for (unsigned i = 0; i < g->nmembers; i++)
			g->members[i]->own_version = set->stats[i].version;
	lr_end_completion(g, &notify);
	free(set->note);
	free(set);
	cb(rc == ZOK ? 0 : lr_note_err(rc), arg);
}

int multilock_set_data_locked(struct zkl_lockreq *g, const void *data,
			      size_t len, void (*cb)(int err, void *arg),
			      void *arg)
{
	unsigned n = g->nmembers;
	zoo_op_result_t *set_results;
	zoo_op_t *set_ops;
	struct ml_set *set;
	size_t notelen;
	int asked = g->revoke_asked, rc;

	ZKL_ASSERT_HELD(&g->s->lock);
	set = ml_txn_alloc(sizeof(*set), sizeof(set->stats[0]), n, &set_ops,
			   &set_results);
	if (!set)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++)
		asked |= g->members[i]->revoke_asked;
	rc = lr_note_data(g, asked, data, len, &set->note, &notelen);
	if (rc < 0) {
		free(set);
		return rc;
	}
	set->g = g;
	set->members = g->members;
	set->token = g->czxid;
	set->cb = cb;
	set->arg = arg;
	set->ops = set_ops;
	set->results = set_results;
	for (unsigned i = 0; i < n; i++)
		zoo_set_op_init(&set->ops[i], g->members[i]->node, set->note,
				(int)notelen, g->members[i]->own_version,
				&set->stats[i]);
	lr_hold(g, LR_HOLD_CALL);
	rc = zoo_amulti(g->s->zh, (int)n, set->ops, set->results, ml_on_set,
			set);
	if (rc != ZOK) {
		lr_drop_locked(g,
			       LR_HOLD_CALL); /* never the last: the owner's */
		free(set->note);
		free(set);
		return zkerr_errno(rc);
	}
	return 0;
}

/* The members' nodes deleted in one transaction: another host sees all of
 * them go at once. */
struct ml_delete {
	unsigned n;
	zoo_op_t *ops;
	zoo_op_result_t *results;
	struct zkl_lockreq *m[];
};

static void ml_on_deleted(int rc, const void *data)
{
	struct ml_delete *d = (struct ml_delete *)data;
	struct zkl_session *s = d->m[0]->s;
	struct zkl_link notify;

	session_enter(s, &notify);
	for (unsigned i = 0; i < d->n; i++) {
		struct zkl_lockreq *m = d->m[i];
		if (rc == ZOK || lr_is_connection_loss(rc)) {
			lr_deleted_locked(m, rc, &notify);
		} else if (m->phase == PH_DELETING) {
			/* One was gone (deleted by another client): the
			 * transaction did nothing; one by one, then. */
			queue_leaving_done(&m->leaving);
			lr_delete(m);
		}
		lr_tell_gone_locked(m, &notify);
		lr_drop_locked(m, LR_HOLD_CALL);
	}
	free(d);
	session_leave(s, &notify);
}

/* Is m's node one to delete now, with the others? */
static int ml_deletable(const struct zkl_lockreq *m)
{
	return lr_has_node(m) && !m->jeopardy_wait &&
	       (m->phase == PH_LISTING || m->phase == PH_WATCHING ||
		m->phase == PH_IDLE);
}

void ml_delete_together_locked(struct zkl_lockreq *g)
{
	zoo_op_result_t *results;
	zoo_op_t *ops;
	struct ml_delete *d;
	unsigned k = 0;
	int rc;

	for (unsigned i = 0; i < g->nmembers; i++)
		k += ml_deletable(g->members[i]);
	if (k < 2) {
		for (unsigned i = 0; i < g->nmembers && k == 1; i++) {
			struct zkl_lockreq *m = g->members[i];
			if (ml_deletable(m)) {
				lr_unwatch_all(m);
				lr_delete(m);
				k = 0;
			}
		}
		return;
	}
	d = ml_txn_alloc(sizeof(*d), sizeof(d->m[0]), k, &ops, &results);
	if (!d)
		return; /* the same, one by one */
	d->n = k;
	d->ops = ops;
	d->results = results;
	k = 0;
	for (unsigned i = 0; i < g->nmembers; i++) {
		struct zkl_lockreq *m = g->members[i];
		if (!ml_deletable(m))
			continue;
		lr_unwatch_all(m);
		lr_delete_begin_locked(m);
		zoo_delete_op_init(&d->ops[k], m->node, -1);
		d->m[k++] = m;
	}
	rc = zoo_amulti(g->s->zh, (int)k, d->ops, d->results, ml_on_deleted, d);
	if (rc != ZOK) {
		for (unsigned i = 0; i < k; i++)
			lr_delete_unsent_locked(d->m[i]);
		free(d);
	}
}
