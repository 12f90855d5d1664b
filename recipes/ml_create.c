/*
 * ml_create.c - the transaction that creates every member's node of a
 * multi-lock (ml.h), and the token read after it.  Below multilock.c; it tells the multi-lock of nothing but
 * through its members (their done).
 */
#include "ml.h"
#include "zkerr.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "log.h"

struct ml_item {
	struct zkl_lockreq *m; /* with a CALL hold until the reply's end */
	int token;             /* ... the token's reply's end (ml_ask_token) */
	char path[NAMES_MAX_NODE_PATH + 1]; /* the created node's */
};

/* A transaction in flight: the members it creates, its ops and results. */
struct ml_create {
	struct zkl_lockreq *g;
	unsigned n;
	zoo_op_t *ops;
	zoo_op_result_t *results;
	struct ml_item item[];
};

static void ml_on_created(int rc, const void *data);
static void ml_on_token(int rc, const struct Stat *st, const void *data);
static int ml_ask_token(struct ml_create *c);

/* Is every member decided: asking for the transaction (wanting), or
 * with its node (having)?  Not yet: a member not started, looking for a
 * node a lost reply may have made, or waiting for the connection. */
static int ml_members_settled(const struct zkl_lockreq *g, unsigned *wanting,
			      unsigned *having)
{
	*wanting = *having = 0;
	for (unsigned i = 0; i < g->nmembers; i++) {
		const struct zkl_lockreq *m = g->members[i];
		if (m->wants_create && m->phase == PH_NEW)
			(*wanting)++;
		else if (lr_has_node(m))
			(*having)++;
		else if (m->phase != PH_GONE)
			return 0;
	}
	return 1;
}

/* Send the transaction for every member that asks for it, once none is
 * still on its way to asking.  Returns 0 or -errno (nothing sent). */
int ml_send_locked(struct zkl_lockreq *g)
{
	struct zkl_session *s = g->s;
	zoo_op_result_t *results;
	struct ml_create *c;
	zoo_op_t *ops;
	unsigned k = 0, wanting, having;
	int rc;

	if (g->outcome != LR_PENDING ||
	    !ml_members_settled(g, &wanting, &having) || wanting == 0)
		return 0;
	if (having > 0) {
		/* After a lost reply some members found their node and some
		 * did not: one transaction made all of them, so another
		 * client deleted some.  Nodes made apart from the others
		 * would lose what makes the lock deadlock-free. */
		log_msg(LOG_WARNING,
			"%s: a multi-lock's node is missing after a lost "
			"reply (deleted by another client?): the request "
			"fails",
			g->dir);
		return -EIO;
	}
	c = ml_txn_alloc(sizeof(*c), sizeof(c->item[0]), wanting, &ops,
			 &results);
	if (!c)
		return -ENOMEM;
	c->g = g;
	c->n = wanting;
	c->ops = ops;
	c->results = results;
	for (unsigned i = 0; i < g->nmembers; i++) {
		struct zkl_lockreq *m = g->members[i];
		if (!(m->wants_create && m->phase == PH_NEW))
			continue;
		c->item[k].m = m;
		zoo_create_op_init(&c->ops[k], m->create_path, m->data,
				   (int)m->datalen, s->acl,
				   ZOO_EPHEMERAL_SEQUENTIAL, c->item[k].path,
				   sizeof(c->item[k].path));
		k++;
	}
	assert(k == wanting);
	rc = zoo_amulti(s->zh, (int)k, c->ops, c->results, ml_on_created, c);
	if (rc != ZOK) {
		free(c);
		return zkerr_errno(rc);
	}
	lr_hold(g, LR_HOLD_CALL);
	for (unsigned i = 0; i < k; i++) {
		struct zkl_lockreq *m = c->item[i].m;
		lr_hold(m, LR_HOLD_CALL);
		m->wants_create = 0;
		m->phase = PH_CREATING;
		m->create_attempts++;
	}
	return 0;
}

void ml_member_found(struct zkl_lockreq *m, struct zkl_link *notify)
{
	int err = ml_send_locked(m->group);

	/* Others found nothing: the whole lock fails (its done tells it). */
	for (unsigned i = 0; err < 0 && i < m->group->nmembers; i++) {
		struct zkl_lockreq *o = m->group->members[i];
		if (o->wants_create && o->phase == PH_NEW) {
			o->phase = PH_GONE;
			lr_finish_locked(o, err, notify);
		}
	}
}

/* A member's create step (lr_queue_create): ask for the transaction. */
int ml_member_create(struct zkl_lockreq *m)
{
	m->wants_create = 1;
	m->phase = PH_NEW;
	return ml_send_locked(m->group);
}

/* One member's share of the transaction's answer (lr_on_created's cases,
 * with the token still to read).  Returns 1 if it asks again. */
static int ml_created_one(struct zkl_lockreq *m, int rc, const char *path,
			  struct zkl_link *notify)
{
	if (m->phase != PH_CREATING)
		return 0; /* the session expired under us */
	if (rc == ZOK) {
		if (lr_set_node(m, path, NULL) < 0) {
			m->phase = PH_GONE;
			lr_finish_locked(m, -ENAMETOOLONG, notify);
		} else if (m->outcome == LR_FINISHED) {
			lr_delete(m);
		} else {
			m->phase = PH_LISTING; /* lists once the token is in */
		}
	} else if (lr_is_connection_loss(rc)) {
		/* Created or not?  Each member's listing tells, for all. */
		m->phase = PH_RECOVERING;
		m->maybe_stray = 1;
		if (m->try_only)
			lr_finish_locked(m, -EAGAIN, notify);
		lr_defer(m, notify);
	} else if (rc == ZNONODE && m->outcome == LR_PENDING &&
		   m->create_attempts < LR_MAX_CREATE_ATTEMPTS) {
		int err = session_create_parents_locked(m->s, m->dir);
		if (err == 0) {
			m->wants_create = 1;
			m->phase = PH_NEW;
			return 1;
		}
		m->phase = PH_GONE;
		lr_finish_locked(m, err, notify);
	} else {
		m->phase = PH_GONE;
		lr_finish_locked(m, zkerr_errno(rc), notify);
	}
	return 0;
}

static void ml_on_created(int rc, const void *data)
{
	struct ml_create *c = (struct ml_create *)data;
	struct zkl_lockreq *g = c->g;
	struct zkl_link notify;
	int again = 0, token_asked = 0;

	session_enter(g->s, &notify);
	/* A transaction fails whole: its first error is every member's
	 * (ZNONODE: a resource's znode is missing, made again for all). */
	for (unsigned i = 0; i < c->n; i++)
		again |= ml_created_one(c->item[i].m, rc, c->item[i].path,
					&notify);
	if (rc == ZOK) {
		/* The token: every node of one transaction has its zxid.  Its
		 * answer comes before any listing sent after it. */
		token_asked = ml_ask_token(c);
		for (unsigned i = 0; i < c->n; i++)
			if (c->item[i].m->phase == PH_LISTING)
				lr_list(c->item[i].m, &notify);
	}
	if (again) {
		int err = ml_send_locked(g);
		/* Each member asking fails, and with it the multi-lock. */
		for (unsigned i = 0; err < 0 && i < c->n; i++) {
			struct zkl_lockreq *m = c->item[i].m;
			if (m->wants_create && m->phase == PH_NEW) {
				m->phase = PH_GONE;
				lr_finish_locked(m, err, &notify);
			}
		}
	}
	for (unsigned i = 0; i < c->n; i++) {
		struct zkl_lockreq *m = c->item[i].m;
		if (token_asked && c->item[i].token)
			continue; /* its CALL hold goes with the token's */
		lr_tell_gone_locked(m, &notify);
		lr_drop_locked(m, LR_HOLD_CALL);
	}
	if (!token_asked)
		free(c);
	lr_end_completion(g, &notify);
}

/* Ask for the token of the transaction's nodes (an exists of one of
 * them), for the members now listing, which keep their CALL hold for
 * it; the others are taken out of c.  Returns 1 if it was sent. */
static int ml_ask_token(struct ml_create *c)
{
	struct zkl_lockreq *g = c->g;
	const char *node = NULL;

	for (unsigned i = 0; i < c->n; i++) {
		c->item[i].token = c->item[i].m->phase == PH_LISTING;
		if (c->item[i].token && !node)
			node = c->item[i].m->node;
	}
	if (!node)
		return 0;
	lr_hold(g, LR_HOLD_CALL);
	if (zoo_aexists(g->s->zh, node, 0, ml_on_token, c) != ZOK) {
		/* Only a dead handle refuses: its event ends the members. */
		lr_drop_locked(g, LR_HOLD_CALL);
		return 0;
	}
	return 1;
}

static void ml_on_token(int rc, const struct Stat *st, const void *data)
{
	struct ml_create *c = (struct ml_create *)data;
	struct zkl_lockreq *g = c->g;
	struct zkl_link notify;

	session_enter(g->s, &notify);
	for (unsigned i = 0; i < c->n; i++) {
		struct zkl_lockreq *m = c->item[i].m;
		if (!c->item[i].token)
			continue;
		/* Replies come in order: the member's listing is still to
		 * come, unless it was let go meanwhile. */
		if (m->phase == PH_LISTING) {
			if (rc == ZOK)
				m->czxid = st->czxid;
			else
				/* Read with the owner check once connected:
				 * its listing's answer, lost too, finds it
				 * recovering. */
				m->phase = PH_RECOVERING;
		}
		lr_tell_gone_locked(m, &notify);
		lr_drop_locked(m, LR_HOLD_CALL);
	}
	free(c);
	lr_end_completion(g, &notify);
}
