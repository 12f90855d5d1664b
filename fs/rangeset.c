/*
 * rangeset.c - an fcntl lock owner's byte ranges (rangeset.h).
 */
#include "rangeset.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int rangeset_range_of(const struct flock *lock, struct lockrange *out)
{
	int64_t start = lock->l_start, len = lock->l_len;

	if (lock->l_whence != SEEK_SET || start < 0 ||
	    (lock->l_type != F_RDLCK && lock->l_type != F_WRLCK &&
	     lock->l_type != F_UNLCK))
		return -EINVAL;
	out->type = lock->l_type;
	if (len == 0) {
		out->start = start;
		out->end = RANGESET_EOF;
	} else if (len > 0) {
		/* start + len - 1 <= RANGESET_EOF, without overflowing. */
		if (start > RANGESET_EOF - (len - 1))
			return -EOVERFLOW;
		out->start = start;
		out->end = start + (len - 1);
	} else {
		/* POSIX: the -len bytes before start (start itself out). */
		if (len == INT64_MIN || start + len < 0)
			return -EINVAL;
		out->start = start + len;
		out->end = start - 1;
	}
	return 0;
}

/* Merge touching neighbours of one type in r[0..n), in place (r sorted
 * and disjoint); returns the new count. */
static size_t rangeset_merge(struct lockrange *r, size_t n)
{
	size_t kept = 0;

	for (size_t i = 0; i < n; i++) {
		struct lockrange *last = kept ? &r[kept - 1] : NULL;
		if (last && last->type == r[i].type &&
		    last->end != RANGESET_EOF && last->end + 1 == r[i].start)
			last->end = r[i].end;
		else
			r[kept++] = r[i];
	}
	return kept;
}

int rangeset_applied(const struct rangeset *set, int64_t start, int64_t end,
		     short type, struct rangeset *out)
{
	size_t n = set ? set->n : 0, i = 0, k = 0;
	const struct lockrange *r = set ? set->r : NULL;
	struct lockrange *buf, right = { 0 };
	int has_right = 0;

	assert(start >= 0 && start <= end);
	assert(type == F_RDLCK || type == F_WRLCK || type == F_UNLCK);
	*out = RANGESET_EMPTY;
	/* At most two more than before: a range cut in two around the new
	 * one. */
	buf = malloc((n + 2) * sizeof(*buf));
	if (!buf)
		return -ENOMEM;
	for (; i < n && r[i].end < start; i++)
		buf[k++] = r[i];
	/* The ranges the call covers, whole or in part: only the first can
	 * begin before it, and only the last end after it; what they have
	 * outside it stays. */
	for (; i < n && r[i].start <= end; i++) {
		if (r[i].start < start)
			buf[k++] = (struct lockrange){ r[i].start, start - 1,
						       r[i].type };
		if (r[i].end > end) {
			right = (struct lockrange){ end + 1, r[i].end,
						    r[i].type };
			has_right = 1;
		}
	}
	if (type != F_UNLCK)
		buf[k++] = (struct lockrange){ start, end, type };
	if (has_right)
		buf[k++] = right;
	for (; i < n; i++)
		buf[k++] = r[i];
	assert(k <= n + 2);
	k = rangeset_merge(buf, k);
	if (k == 0) {
		free(buf);
		return 0;
	}
	out->r = buf;
	out->n = k;
	assert(rangeset_valid(out));
	return 0;
}

int rangeset_within(const struct rangeset *set, const struct lockrange *range)
{
	/* Sorted: the first range starts first, the last ends last. */
	return set->n == 0 || (range->start <= set->r[0].start &&
			       set->r[set->n - 1].end <= range->end);
}

short rangeset_type(const struct rangeset *set)
{
	short type = F_UNLCK;

	for (size_t i = 0; set && i < set->n; i++) {
		if (set->r[i].type == F_WRLCK)
			return F_WRLCK;
		type = F_RDLCK;
	}
	return type;
}

int rangeset_valid(const struct rangeset *set)
{
	if ((set->n == 0) != (set->r == NULL))
		return 0;
	for (size_t i = 0; i < set->n; i++) {
		const struct lockrange *a = &set->r[i];
		if (a->start < 0 || a->start > a->end ||
		    (a->type != F_RDLCK && a->type != F_WRLCK))
			return 0;
		if (i == 0)
			continue;
		const struct lockrange *prev = &set->r[i - 1];
		if (prev->end >= a->start ||
		    (prev->type == a->type && prev->end + 1 == a->start))
			return 0;
	}
	return 1;
}

void rangeset_free(struct rangeset *set)
{
	free(set->r);
	*set = RANGESET_EMPTY;
}
