/*
 * lockrule.c - the queue rule (see lockrule.h).
 */
#include "lockrule.h"

#include <assert.h>
#include <errno.h>
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

/* The sequence a name ends with, read cheaply (its last ten characters),
 * to look it up: 0, or -1 if they are not a number (the name is then
 * parsed in full).  Ten digits after a '-' may be a negative number of
 * eleven characters (below -999,999,999): *alt is that reading, or
 * *seq again. */
static int lockrule_tail_seq(const char *name, int32_t *seq, int32_t *alt)
{
	size_t len = strlen(name);
	const char *p;
	int neg = 0;
	int64_t v = 0;

	if (len < 10)
		return -1;
	p = name + len - 10;
	if (*p == '-') {
		neg = 1;
		p++;
	}
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (*p - '0');
	}
	*seq = (int32_t)(neg ? -v : v);
	*alt = !neg && len > 10 && name[len - 11] == '-' ? (int32_t)-v : *seq;
	return 0;
}

/* The old view's nodes by sequence: an open-addressing table of index + 1
 * (0: empty), its size a power of two at least twice n. */
struct lockrule_seqtab {
	uint32_t *slots;
	uint32_t mask;
};

static uint32_t lockrule_seq_hash(int32_t seq, uint32_t mask)
{
	return ((uint32_t)seq * 2654435761u) & mask;
}

static int lockrule_seqtab_init(struct lockrule_seqtab *t,
				const struct zkl_node *nodes, size_t n)
{
	size_t size = 16;

	while (size < 2 * n)
		size *= 2;
	t->slots = calloc(size, sizeof(*t->slots));
	if (!t->slots)
		return -ENOMEM;
	t->mask = (uint32_t)(size - 1);
	for (size_t i = 0; i < n; i++) {
		uint32_t h = lockrule_seq_hash(nodes[i].seq, t->mask);
		while (t->slots[h])
			h = (h + 1) & t->mask;
		t->slots[h] = (uint32_t)i + 1;
	}
	return 0;
}

/* Index in nodes[] of the node named `name` whose sequence is seq, or -1
 * (several may share a sequence number: names tell them apart). */
static ssize_t lockrule_seqtab_find(const struct lockrule_seqtab *t,
				    const struct zkl_node *nodes, int32_t seq,
				    const char *name)
{
	for (uint32_t h = lockrule_seq_hash(seq, t->mask); t->slots[h];
	     h = (h + 1) & t->mask) {
		const struct zkl_node *c = &nodes[t->slots[h] - 1];
		if (c->seq == seq && strcmp(c->name, name) == 0)
			return (ssize_t)t->slots[h] - 1;
	}
	return -1;
}

/* Merge fresh[0..f) (sorted) into out[0..k) (sorted), in out. */
static void lockrule_merge(struct zkl_node *out, size_t k,
			   const struct zkl_node *fresh, size_t f)
{
	size_t i = k, j = f, w = k + f;

	while (j > 0) {
		if (i > 0 && lockrule_cmp(&out[i - 1], &fresh[j - 1]) > 0)
			out[--w] = out[--i];
		else
			out[--w] = fresh[--j];
	}
}

ssize_t lockrule_collect_again(char *const *names, size_t n, unsigned styles,
			       int32_t cversion, const struct zkl_node *old,
			       size_t nold, struct zkl_node *out)
{
	const char **again = calloc(nold ? nold : 1, sizeof(*again));
	struct zkl_node *fresh = malloc((n ? n : 1) * sizeof(*fresh));
	struct lockrule_seqtab tab = { 0 };
	size_t k = 0, f = 0;

	if (!again || !fresh || lockrule_seqtab_init(&tab, old, nold) < 0) {
		free(again);
		free(fresh);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		int32_t seq, alt;
		ssize_t at = -1;

		if (lockrule_tail_seq(names[i], &seq, &alt) == 0) {
			at = lockrule_seqtab_find(&tab, old, seq, names[i]);
			if (at < 0 && alt != seq)
				at = lockrule_seqtab_find(&tab, old, alt,
							  names[i]);
		}
		if (at >= 0)
			again[at] = names[i];
		else if (names_parse(names[i], &fresh[f]) == 0 &&
			 (styles & LOCKRULE_STYLE(fresh[f].style)))
			f++;
	}
	/* The old ones in their order, as they are named now. */
	for (size_t j = 0; j < nold; j++) {
		if (!again[j])
			continue;
		out[k] = old[j];
		out[k].name = again[j];
		if (old[j].tag)
			out[k].tag = again[j] + (old[j].tag - old[j].name);
		out[k].age = lockrule_age(cversion, out[k].seq);
		k++;
	}
	/* Sequence numbers that wrapped between the two listings may
	 * reorder them: then sort (rare). */
	for (size_t j = 1; j < k; j++)
		if (lockrule_cmp(&out[j - 1], &out[j]) > 0) {
			qsort(out, k, sizeof(*out), lockrule_cmp);
			break;
		}
	lockrule_sort(fresh, f, cversion);
	lockrule_merge(out, k, fresh, f);
	free(tab.slots);
	free(again);
	free(fresh);
	return (ssize_t)(k + f);
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

size_t lockrule_holders_in_way(const struct zkl_node *sorted, size_t self,
			       unsigned char *in_way)
{
	/* A write node holds when no lock node is ahead of it, a read node
	 * when no write node is: so each holds iff it is ahead of the first
	 * node of the kind it waits for. */
	size_t first_lock = self, first_write = self, found = 0;
	unsigned reach; /* modes of the waits that reach back this far */

	if (sorted[self].mode == ZKL_MODE_LEASE)
		return 0;
	for (size_t k = self; k-- > 0;) {
		if (sorted[k].mode == ZKL_MODE_LEASE)
			continue;
		first_lock = k;
		if (sorted[k].mode == ZKL_MODE_WRITE)
			first_write = k;
	}
	if (sorted[self].mode == ZKL_MODE_WRITE ? first_lock == self
						: first_write == self)
		return 0; /* it holds */
	reach = 1u << sorted[self].mode;
	for (size_t k = self; k-- > 0;) {
		enum zkl_mode m = sorted[k].mode;
		int waited = 0, holds;

		in_way[k] = 0;
		if (m == ZKL_MODE_LEASE)
			continue;
		for (unsigned r = ZKL_MODE_READ; r <= ZKL_MODE_WRITE; r++)
			if ((reach & (1u << r)) &&
			    lockrule_waits_for((enum zkl_mode)r, m))
				waited = 1;
		if (!waited)
			continue;
		holds = m == ZKL_MODE_WRITE ? k == first_lock : k < first_write;
		if (holds) {
			in_way[k] = 1;
			found++;
		} else {
			reach |= 1u << m;
		}
	}
	return found;
}
