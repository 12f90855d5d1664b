/*
 * waitgraph.h - deadlocks across hosts: a wait that closes a cycle of
 * waits that no member can leave, whatever hosts its members are on,
 * fails with EDEADLK.  doc/design.md ("Deadlocks across hosts") has the
 * rule and why a report is never false.
 *
 * The graph is made of facts that only ever turn false once, so that reads
 * made one after another describe one instant:
 *   - a lock node waits for the holders ahead of it that are in its way
 *     (lockrule_holders_in_way), read in its queue;
 *   - a *pin*: a held node that nothing can let go but the end of one wait
 *     (its owner is blocked in that wait, and nobody else has the lock's
 *     file open: fs/deadlock.h decides).  A mount publishes each pin as an
 *     ephemeral record <base>/.zklockfs-pins/<hash of the pinned node's
 *     queue>~<pinned node's name>~<hash of the wait>, whose data names
 *     the waiting nodes (one, or a multi-lock's members that wait), the
 *     waiter, and its session's timeout.
 * A wait with pins, once published, lists the records and walks: from its
 * waiting nodes to the pinned holders in their way, to the waits that pin
 * them, to the holders in their way, and so on.  Reaching a node it pins
 * itself closes a cycle.  The wait of the cycle whose record is the
 * youngest fails; every other walker leaves it to that one, whose walk
 * came after every other record of the cycle.  A cycle through another
 * session's records is read again twice that session's timeout later, so
 * that the records of a mount that died are gone by then.
 *
 * A wait that pins nothing publishes nothing and costs nothing here.
 */
#ifndef ZKL_WAITGRAPH_H
#define ZKL_WAITGRAPH_H

#include <stddef.h>
#include <stdint.h>

/* The child of the base path that holds the records. */
#define WAITGRAPH_DIR ".zklockfs-pins"

/* A walk finds every cycle of up to this many waits (it reads at most
 * WAITGRAPH_MAX_READS queues and as many records, and gives up past
 * that: reports nothing). */
#define WAITGRAPH_MAX_WAITS 64
#define WAITGRAPH_MAX_READS 256

/* FNV-1a of a string: a queue's path and a wait's, in records' names. */
uint64_t waitgraph_hash(const char *s);

/* The name of the record of the pinned node `pin` (its name) in the queue
 * `dir` for the wait whose first waiting node is `wait`, into out.
 * Returns its length, or -ENAMETOOLONG. */
int waitgraph_record_name(const char *dir, const char *pin, const char *wait,
			  char *out, size_t size);

/* A record's name taken apart: the hash of its pinned node's queue and
 * where that node's name starts (*pin) and its length.  Returns 0, or
 * -EINVAL for a name that is no record's. */
int waitgraph_record_parse(const char *name, uint64_t *dir_hash,
			   const char **pin, size_t *pin_len);

/* A record's data: the session's timeout (ms), who waits (free text, one
 * line), and the waiting nodes' paths, one a line.  Parsing gives the
 * timeout, the `who` line and the paths as pointers into data, at most
 * max of them.  Returns how many paths, or -EINVAL. */
int waitgraph_record_data(int64_t timeout_ms, const char *who,
			  const char *const *waits, size_t n, char *out,
			  size_t size);
int waitgraph_record_parse_data(const char *data, size_t len,
				int64_t *timeout_ms, const char **who,
				size_t *who_len, const char **paths,
				size_t *lens, size_t max);

#endif
