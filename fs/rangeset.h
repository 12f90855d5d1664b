/*
 * rangeset.h - the byte ranges one fcntl lock owner (a process, or an
 * open file description for OFD locks) holds on a lock file, kept by
 * POSIX's rules for an owner's own locks (fcntl(2)): a lock over part of
 * a range of the owner's replaces it there, splitting it; an unlock of
 * part of a range keeps the rest; touching ranges of one type merge.
 *
 * zklockfs locks the whole resource for any range (doc/locks.md), so the
 * set decides only which ZooKeeper lock its owner needs: the strongest
 * type in it (rangeset_type), none once it is empty.  Pure functions: the
 * caller guards a set (fs->lock for the fcntl table's, lockfile.h).
 */
#ifndef ZKL_RANGESET_H
#define ZKL_RANGESET_H

#include <assert.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>

/* The last byte of a range to the end of the file, whatever the end
 * becomes: the kernel's OFFSET_MAX, which libfuse hands over as l_len 0.
 * A whole-file lock is [0, RANGESET_EOF]. */
#define RANGESET_EOF INT64_MAX

struct lockrange {
	int64_t start, end; /* bytes start to end, both included */
	short type;         /* F_RDLCK or F_WRLCK */
};

/* Sorted by start, disjoint, and no two neighbours of one type touch
 * (they are one range): so two sets of the same bytes are equal. */
struct rangeset {
	struct lockrange *r; /* n ranges (malloc'd), NULL when empty */
	size_t n;
};

#define RANGESET_EMPTY ((struct rangeset){ NULL, 0 })

/* The range a struct flock names, as libfuse gives it (l_whence SEEK_SET;
 * l_len 0: to the end of the file; a negative l_len: the bytes before
 * l_start, as POSIX allows), into *out with the lock's type.  Returns 0,
 * -EINVAL (another l_whence or l_type, or a range that starts before 0)
 * or -EOVERFLOW (one that ends past RANGESET_EOF). */
int rangeset_range_of(const struct flock *lock, struct lockrange *out);

/* `set` after its owner's fcntl call over bytes start..end of `type`
 * (F_RDLCK, F_WRLCK, or F_UNLCK: remove), as a new set in *out (set is
 * left as it is; NULL is the empty set).  Returns 0 or -ENOMEM (*out
 * empty). */
int rangeset_applied(const struct rangeset *set, int64_t start, int64_t end,
		     short type, struct rangeset *out);

/* Is every range of `set` within `range` (its bytes; the type aside)?
 * 1 or 0; an empty set is. */
int rangeset_within(const struct rangeset *set, const struct lockrange *range);

/* The lock the set needs: F_WRLCK if any range is a write lock, else
 * F_RDLCK if it has a range, else F_UNLCK (empty). */
short rangeset_type(const struct rangeset *set);

/* Is the set as struct rangeset promises (for assertions)?  1 or 0. */
int rangeset_valid(const struct rangeset *set);

/* Free the set's ranges; it is empty after. */
void rangeset_free(struct rangeset *set);

/* Move *from into *to (which must be empty); *from is empty after. */
static inline void rangeset_move(struct rangeset *to, struct rangeset *from)
{
	assert(to->n == 0 && !to->r);
	*to = *from;
	*from = RANGESET_EMPTY;
}

#endif
