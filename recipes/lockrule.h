/*
 * lockrule.h - the queue rule: in what order lock nodes stand, and whether
 * a request holds or which one node it watches.  Pure functions of parsed
 * names (names.h); no ZooKeeper.
 *
 * Order: by age, oldest first.  ZooKeeper gives a sequential child the
 * parent's child version (cversion) as its number, then counts the
 * cversion up by one for every child created or deleted; a listing
 * (getChildren2) comes with the parent's cversion C.  A node numbered seq
 * was therefore made (uint32_t)(C - 1 - seq) child changes before the
 * listing: that is its age, exact across the 2^31 wrap, and the same order
 * in every listing that holds the node, whoever takes it and whenever
 * (ages only grow, all by the same amount), as long as no node outlives
 * 2^32 child changes.  A name no sequential create made (a hand-made
 * node) gets an age too: it can stand in anyone's way, but two listings
 * never order two real nodes differently, so it can never make two
 * holders.  doc/design.md has the argument.  For one age (a Curator 5.5
 * reader that took its writer's number when downgrading) the exclusive
 * node first; then by name, so the order is total.
 *
 * Who waits for whom: a write request waits for every lock node ahead of
 * it, a read request for write nodes ahead, a lease for lease nodes ahead
 * (leases and locks on one resource ignore each other).  A
 * request holds when fewer than `limit` nodes it waits for are ahead of it
 * (limit 1 for locks, N for a semaphore of N leases).
 */
#ifndef ZKL_LOCKRULE_H
#define ZKL_LOCKRULE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "names.h"

/* A set of styles (names.h) whose nodes take part. */
#define LOCKRULE_STYLE(s) (1u << (s))
#define LOCKRULE_ALL_STYLES ((1u << ZKL_STYLE_COUNT) - 1)
/* The styles whose nodes a request queues behind: every one, whatever the
 * mount's own dialect, so that a mount never takes a lock beside another
 * tool's holder. */
#define LOCKRULE_QUEUED_STYLES LOCKRULE_ALL_STYLES

/* Does a request of mode `req` wait for a node of mode `ahead`? */
int lockrule_waits_for(enum zkl_mode req, enum zkl_mode ahead);

/* The age of a node numbered seq in a listing whose parent's cversion was
 * cversion: how many child changes ago ZooKeeper gave out that number. */
uint32_t lockrule_age(int32_t cversion, int32_t seq);

/* Set each node's age as of a listing with the parent's cversion, and
 * sort them into queue order. */
void lockrule_sort(struct zkl_node *nodes, size_t n, int32_t cversion);

/* Parse every name in names[0..n) that is a lock node of one of `styles`
 * into out (capacity n), in queue order as of a listing with the parent's
 * cversion.  Returns how many there were. */
size_t lockrule_collect(char *const *names, size_t n, unsigned styles,
			int32_t cversion, struct zkl_node *out);

/* lockrule_collect, with the help of an earlier view of the same
 * directory (old[0..nold), in queue order, its names alive): a name found
 * there (by its sequence, in a hash table) is not parsed again, and those
 * found are in order already, so only the names new since are parsed and
 * sorted, then merged in.  The same result as lockrule_collect in O(n),
 * rather than n parses and a sort of n nodes.  Returns how many, or
 * -ENOMEM (then use lockrule_collect). */
ssize_t lockrule_collect_again(char *const *names, size_t n, unsigned styles,
			       int32_t cversion, const struct zkl_node *old,
			       size_t nold, struct zkl_node *out);

/* Index in sorted[0..n) (sorted as of cversion) of the node named `name`,
 * or -1.  O(log n). */
ssize_t lockrule_find(const struct zkl_node *sorted, size_t n, int32_t cversion,
		      const char *name);

/* Index of the first node in sorted[from..n) whose tag is `tag` (a NUL-
 * ended string), or -1. */
ssize_t lockrule_find_tag(const struct zkl_node *sorted, size_t n, size_t from,
			  const char *tag);

/* The rule for sorted[self]: -1 if it holds now, else the index of the one
 * node it watches -- of the nodes ahead it waits for, the limit-th
 * nearest, so that with limit 1 a writer watches its predecessor and a
 * reader the nearest writer ahead.  Nodes before `lo`, and those with
 * gone[i] set (gone may be NULL), are known to be deleted and skipped.
 * With limit > 1 a single watch does not see every way the count can drop
 * (holders leave in any order): a lease recipe needs more than this. */
ssize_t lockrule_watch(const struct zkl_node *sorted, const unsigned char *gone,
		       size_t lo, size_t self, unsigned limit);

/* How many nodes that sorted[self] waits for stand ahead of it, not
 * counting those before lo or with gone[i] set.  O(self - lo). */
size_t lockrule_count_ahead(const struct zkl_node *sorted,
			    const unsigned char *gone, size_t lo, size_t self);

/* What the lease sorted[self] does under a limit of N leases (the rule of
 * doc/design.md; gone and lo as above, granted[i] set for the leases known
 * to be granted): */
enum lockrule_lease_step {
	LOCKRULE_LEASE_HOLD,  /* fewer than N leases ahead: it is granted */
	LOCKRULE_LEASE_AHEAD, /* the first waiter: watch every lease ahead */
	LOCKRULE_LEASE_ONE,   /* watch *pred alone, for its deletion or mark */
};
/* The nearest lease ahead, *pred, is granted if granted[*pred] or if
 * exactly N stand ahead (it has N - 1); then sorted[self] waits for the
 * holders and must watch them all.  Otherwise it can be granted only after
 * *pred is, and *pred's mark or deletion is the one event to wait for.
 * *pred is set for every step but HOLD. */
enum lockrule_lease_step lockrule_lease(const struct zkl_node *sorted,
					const unsigned char *gone,
					const unsigned char *granted, size_t lo,
					size_t self, unsigned limit,
					ssize_t *pred);

/* The holders that the waiting lock node sorted[self] cannot outlast:
 * in_way[k] set (for k < self) for each lock node ahead that holds and
 * that it waits for, directly or through waiting nodes between (a reader
 * behind a waiting writer waits for the readers that writer waits for).
 * A waiting node is granted only once every node it waits for is gone, so
 * while these stand it waits.  in_way[self..] is left alone.  Leases take
 * no part.  Returns how many; 0 if sorted[self] holds or is a lease. */
size_t lockrule_holders_in_way(const struct zkl_node *sorted, size_t self,
			       unsigned char *in_way);

/* The first node in sorted[0..n) that a new request of `mode`, queued now,
 * would wait for, if it would wait: ignoring nodes whose tag is one of
 * skip[0..nskip) (the caller's own).  Returns its index, or -1 if such a
 * request would hold at once. */
ssize_t lockrule_first_blocker(const struct zkl_node *sorted, size_t n,
			       enum zkl_mode mode, unsigned limit,
			       const char *const *skip, size_t nskip);

#endif
