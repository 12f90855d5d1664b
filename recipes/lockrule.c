/*
 * lockrule.c - the queue rule (see lockrule.h).
 */
#include "lockrule.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

int lockrule_waits_for(enum zkl_mode req, enum zkl_mode ahead)
{
	switch (req) {
	case ZKL_MODE_WRITE:
		/* Leases are a count of their own, beside the lock: a writer
		 * excludes locks, not lease holders (nor they it). */
		return ahead != ZKL_MODE_LEASE;
	case ZKL_MODE_READ:
		return ahead == ZKL_MODE_WRITE;
	case ZKL_MODE_LEASE:
		return ahead == ZKL_MODE_LEASE;
	}
	return 1;
}

uint32_t lockrule_age(int32_t cversion, int32_t seq)
{
	/* The node took the cversion before its own create counted it up. */
	return (uint32_t)cversion - 1u - (uint32_t)seq;
}

static int lockrule_cmp(const void *pa, const void *pb)
{
	const struct zkl_node *a = pa, *b = pb;

	if (a->age != b->age)
		return a->age > b->age ? -1 : 1; /* the older first */
	if ((a->mode == ZKL_MODE_WRITE) != (b->mode == ZKL_MODE_WRITE))
		return a->mode == ZKL_MODE_WRITE ? -1 : 1;
	return strcmp(a->name, b->name);
}

void lockrule_sort(struct zkl_node *nodes, size_t n, int32_t cversion)
{
	for (size_t i = 0; i < n; i++)
		nodes[i].age = lockrule_age(cversion, nodes[i].seq);
	qsort(nodes, n, sizeof(*nodes), lockrule_cmp);
}

size_t lockrule_collect(char *const *names, size_t n, unsigned styles,
			int32_t cversion, struct zkl_node *out)
{
	size_t count = 0;

	for (size_t i = 0; i < n; i++)
		if (names_parse(names[i], &out[count]) == 0 &&
		    (styles & LOCKRULE_STYLE(out[count].style)))
			count++;
	lockrule_sort(out, count, cversion);
	return count;
}

ssize_t lockrule_find(const struct zkl_node *sorted, size_t n, int32_t cversion,
		      const char *name)
{
	struct zkl_node key;
	size_t lo = 0, hi = n;

	if (names_parse(name, &key) < 0)
		return -1;
	key.age = lockrule_age(cversion, key.seq);
	/* First index whose node does not sort before key. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (lockrule_cmp(&sorted[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < n && strcmp(sorted[lo].name, name) == 0)
		return (ssize_t)lo;
	return -1;
}

static int lockrule_tag_is(const struct zkl_node *node, const char *tag)
{
	size_t len = strlen(tag);

	return len > 0 && node->taglen == len &&
	       memcmp(node->tag, tag, len) == 0;
}

ssize_t lockrule_find_tag(const struct zkl_node *sorted, size_t n, size_t from,
			  const char *tag)
{
	for (size_t i = from; i < n; i++)
		if (lockrule_tag_is(&sorted[i], tag))
			return (ssize_t)i;
	return -1;
}

ssize_t lockrule_watch(const struct zkl_node *sorted, const unsigned char *gone,
		       size_t lo, size_t self, unsigned limit)
{
	enum zkl_mode mode = sorted[self].mode;
	unsigned ahead = 0;

	for (size_t i = self; i-- > lo;) {
		if (gone && gone[i])
			continue;
		if (lockrule_waits_for(mode, sorted[i].mode) &&
		    ++ahead == limit)
			return (ssize_t)i;
	}
	return -1;
}

static int lockrule_tag_in(const struct zkl_node *node, const char *const *set,
			   size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (lockrule_tag_is(node, set[i]))
			return 1;
	return 0;
}

ssize_t lockrule_first_blocker(const struct zkl_node *sorted, size_t n,
			       enum zkl_mode mode, unsigned limit,
			       const char *const *skip, size_t nskip)
{
	ssize_t first = -1;
	unsigned ahead = 0;

	for (size_t i = 0; i < n; i++) {
		if (lockrule_tag_in(&sorted[i], skip, nskip) ||
		    !lockrule_waits_for(mode, sorted[i].mode))
			continue;
		if (first < 0)
			first = (ssize_t)i;
		if (++ahead == limit)
			return first;
	}
	return -1;
}

size_t lockrule_count_ahead(const struct zkl_node *sorted,
			    const unsigned char *gone, size_t lo, size_t self)
{
	enum zkl_mode mode = sorted[self].mode;
	size_t ahead = 0;

	for (size_t i = lo; i < self; i++)
		if (!(gone && gone[i]) &&
		    lockrule_waits_for(mode, sorted[i].mode))
			ahead++;
	return ahead;
}

enum lockrule_lease_step lockrule_lease(const struct zkl_node *sorted,
					const unsigned char *gone,
					const unsigned char *granted, size_t lo,
					size_t self, unsigned limit,
					ssize_t *pred)
{
	size_t ahead = lockrule_count_ahead(sorted, gone, lo, self);

	assert(sorted[self].mode == ZKL_MODE_LEASE && limit > 0);
	if (ahead < limit)
		return LOCKRULE_LEASE_HOLD;
	*pred = lockrule_watch(sorted, gone, lo, self, 1);
	assert(*pred >= 0);
	if (ahead == limit || (granted && granted[*pred]))
		return LOCKRULE_LEASE_AHEAD;
	return LOCKRULE_LEASE_ONE;
}
