/*
 * ml.h - what the files of a multi-lock share (multilock.c, the request
 * and its members; ml_create.c, its transactions).  Nobody else includes
 * it.
 */
#ifndef ZKL_ML_H
#define ZKL_ML_H

#include "lr.h"

/* Send the transaction that creates every member asking for it
 * (wants_create, in PH_NEW), once no member is still on its way to
 * asking or finding its node.  Returns 0 (sent, or not due yet) or
 * -errno (nothing sent).  s->lock held. */
int ml_send_locked(struct zkl_lockreq *g);

/* A member's create step (lr_group_ops.create): ask for the
 * transaction. */
int ml_member_create(struct zkl_lockreq *m);

/* One allocation for a transaction's context (ml_txn.c): `head` bytes
 * whose last member is an array of n entries of `item` bytes, then its
 * n ops and n results.  NULL when out of memory. */
void *ml_txn_alloc(size_t head, size_t item, unsigned n, zoo_op_t **ops,
		   zoo_op_result_t **results);

/* A member found its node after a lost reply (lr_group_ops.found): the
 * others that found none fail, and with them the multi-lock. */
void ml_member_found(struct zkl_lockreq *m, struct zkl_link *notify);

/* Delete the nodes of every member that has one to delete now: two or
 * more in one transaction, a single one alone.  Each member, let go
 * later, finds its delete on its way or done.  s->lock held. */
void ml_delete_together_locked(struct zkl_lockreq *g);

#endif
