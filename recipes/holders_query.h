/*
 * holders_query.h - a holders query as holders.c gathers it and
 * holders_answer.c turns it into the answer.  Nobody else includes it.
 */
#ifndef ZKL_HOLDERS_QUERY_H
#define ZKL_HOLDERS_QUERY_H

#include "holders.h"
#include "internal.h"

/* The directories a query lists. */
enum holders_part {
	HOLDERS_RES,    /* every tool's lock nodes; kazoo's leases */
	HOLDERS_LEASES, /* Curator's <res>/leases */
	HOLDERS_QUEUE,  /* the peer's lock: who waits for a lease */
	HOLDERS_PARTS,
};

struct holders_query;

/* What the read of one node brought back. */
struct holders_read {
	struct holders_query *q;
	int gone;   /* deleted since the listing */
	int orphan; /* persistent: no session's, so nobody's to end */
	int64_t czxid;
	int64_t ctime_ms;
	int32_t version; /* of its data: a granted lease's is set again */
	char *data;
	size_t len;
};

/* One listed directory and the nodes of interest in it. */
struct holders_dir {
	struct holders_query *q;
	int used; /* listed in this layout */
	char path[NAMES_MAX_NODE_PATH + 1];
	char where[NAMES_MAX_NODE_PATH + 1]; /* see holders_node */
	size_t children;                     /* how many the listing had */
	char **names;                        /* copies of the listed names */
	size_t nnames;
	struct zkl_node *nodes; /* [0..nlocks) lock nodes in queue order,
				 * then [nlocks..n) the peer's leases */
	size_t nlocks, n;
	struct holders_read *reads; /* parallel to nodes */
};

struct holders_query {
	struct zkl_session *s;
	holders_fn cb;
	void *arg;
	int err;               /* the first failure's */
	int reading;           /* the listings are back: reads are out */
	size_t pending;        /* replies awaited, +1 while sending */
	enum zkl_style layout; /* the peer's, or ZKLOCKFS for the default */
	unsigned limit; /* read when leases are queued: 0 if not a limit */
	struct holders_dir dirs[HOLDERS_PARTS];
};

/* Free q and all it gathered. */
void holders_free(struct holders_query *q);
/* Call q's callback with what it gathered (or its error), then free q. */
void holders_answer(struct holders_query *q);

#endif
