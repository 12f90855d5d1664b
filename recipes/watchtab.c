/*
 * watchtab.c - path -> waiting watches (see watchtab.h).
 */
#include "watchtab.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct watchtab_entry {
	struct watchtab_entry *next; /* bucket chain */
	struct zkl_link watches;
	char path[];
};

#define WATCHTAB_INITIAL_BUCKETS 256

static size_t watchtab_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return (size_t)h;
}

int watchtab_init(struct watchtab *t)
{
	t->nbuckets = WATCHTAB_INITIAL_BUCKETS;
	t->nentries = 0;
	t->buckets = calloc(t->nbuckets, sizeof(*t->buckets));
	return t->buckets ? 0 : -ENOMEM;
}

static void watchtab_detach_all(struct watchtab_entry *e)
{
	while (!list_empty(&e->watches)) {
		struct zkl_watch *w = ZKL_CONTAINER_OF(e->watches.next,
						       struct zkl_watch, link);
		list_del(&w->link);
		w->entry = NULL;
	}
}

void watchtab_destroy(struct watchtab *t)
{
	for (size_t i = 0; i < t->nbuckets; i++) {
		struct watchtab_entry *e = t->buckets[i];
		while (e) {
			struct watchtab_entry *next = e->next;
			watchtab_detach_all(e);
			free(e);
			e = next;
		}
	}
	free(t->buckets);
	t->buckets = NULL;
	t->nbuckets = t->nentries = 0;
}

static struct watchtab_entry **watchtab_slot(struct watchtab *t,
					     const char *path)
{
	struct watchtab_entry **pe = &t->buckets[watchtab_hash(path) %
						   t->nbuckets];
	while (*pe && strcmp((*pe)->path, path) != 0)
		pe = &(*pe)->next;
	return pe;
}

/* Keep chains short as the number of watched paths grows. */
static void watchtab_grow(struct watchtab *t)
{
	size_t n = t->nbuckets * 2;
	struct watchtab_entry **b = calloc(n, sizeof(*b));

	if (!b)
		return; /* longer chains, still correct */
	for (size_t i = 0; i < t->nbuckets; i++) {
		struct watchtab_entry *e = t->buckets[i];
		while (e) {
			struct watchtab_entry *next = e->next;
			size_t k = watchtab_hash(e->path) % n;
			e->next = b[k];
			b[k] = e;
			e = next;
		}
	}
	free(t->buckets);
	t->buckets = b;
	t->nbuckets = n;
}

int watchtab_add(struct watchtab *t, const char *path, struct zkl_watch *w)
{
	struct watchtab_entry **pe = watchtab_slot(t, path);
	int first = 0;

	if (!*pe) {
		size_t len = strlen(path) + 1;
		struct watchtab_entry *e = malloc(sizeof(*e) + len);
		if (!e)
			return -ENOMEM;
		memcpy(e->path, path, len);
		list_init(&e->watches);
		e->next = NULL;
		*pe = e;
		first = 1;
		if (++t->nentries > t->nbuckets)
			watchtab_grow(t);
		pe = watchtab_slot(t, path);
	}
	list_add_tail(&(*pe)->watches, &w->link);
	w->entry = *pe;
	return first;
}

static void watchtab_unlink_entry(struct watchtab *t, struct watchtab_entry *e)
{
	struct watchtab_entry **pe = watchtab_slot(t, e->path);

	*pe = e->next;
	t->nentries--;
	free(e);
}

int watchtab_remove(struct watchtab *t, struct zkl_watch *w)
{
	struct watchtab_entry *e = w->entry;

	(void)t;
	if (!e)
		return 0;
	list_del(&w->link);
	w->entry = NULL;
	/* The entry stays while ZooKeeper may still deliver its event: an
	 * empty entry is harmless and saves a second watch registration if
	 * another waiter picks the same node.  It goes when the event comes. */
	return 1;
}

static size_t watchtab_move(struct watchtab_entry *e, struct zkl_link *fired)
{
	size_t n = 0;

	while (!list_empty(&e->watches)) {
		struct zkl_watch *w = ZKL_CONTAINER_OF(e->watches.next,
						       struct zkl_watch, link);
		list_del(&w->link);
		w->entry = NULL;
		list_add_tail(fired, &w->link);
		n++;
	}
	return n;
}

size_t watchtab_take(struct watchtab *t, const char *path,
		     struct zkl_link *fired)
{
	struct watchtab_entry *e = *watchtab_slot(t, path);
	size_t n;

	list_init(fired);
	if (!e)
		return 0;
	n = watchtab_move(e, fired);
	watchtab_unlink_entry(t, e);
	return n;
}

size_t watchtab_take_all(struct watchtab *t, struct zkl_link *fired)
{
	size_t n = 0;

	list_init(fired);
	for (size_t i = 0; i < t->nbuckets; i++) {
		while (t->buckets[i]) {
			struct watchtab_entry *e = t->buckets[i];
			n += watchtab_move(e, fired);
			t->buckets[i] = e->next;
			t->nentries--;
			free(e);
		}
	}
	return n;
}
