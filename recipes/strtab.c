/*
 * strtab.c - string-keyed intrusive hash table (see strtab.h).
 */
#include "strtab.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define STRTAB_INITIAL_BUCKETS 256

size_t strtab_hash(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return (size_t)h;
}

int strtab_init(struct strtab *t)
{
	t->nbuckets = STRTAB_INITIAL_BUCKETS;
	t->nitems = 0;
	t->buckets = calloc(t->nbuckets, sizeof(*t->buckets));
	return t->buckets ? 0 : -ENOMEM;
}

void strtab_destroy(struct strtab *t)
{
	free(t->buckets);
	t->buckets = NULL;
	t->nbuckets = t->nitems = 0;
}

static struct strtab_item **strtab_slot(const struct strtab *t, const char *key)
{
	struct strtab_item **pi =
		&t->buckets[strtab_hash(key, strlen(key)) % t->nbuckets];

	while (*pi && strcmp((*pi)->key, key) != 0)
		pi = &(*pi)->next;
	return pi;
}

struct strtab_item *strtab_find(const struct strtab *t, const char *key)
{
	return *strtab_slot(t, key);
}

/* Keep chains short as the table fills. */
static void strtab_grow(struct strtab *t)
{
	size_t n = t->nbuckets * 2;
	struct strtab_item **b = calloc(n, sizeof(*b));

	if (!b)
		return;
	for (size_t i = 0; i < t->nbuckets; i++) {
		struct strtab_item *it = t->buckets[i];
		while (it) {
			struct strtab_item *next = it->next;
			size_t k = strtab_hash(it->key, strlen(it->key)) % n;
			it->next = b[k];
			b[k] = it;
			it = next;
		}
	}
	free(t->buckets);
	t->buckets = b;
	t->nbuckets = n;
}

void strtab_insert(struct strtab *t, struct strtab_item *item)
{
	struct strtab_item **head;

	if (t->nitems + 1 > t->nbuckets)
		strtab_grow(t);
	head = &t->buckets[strtab_hash(item->key, strlen(item->key)) %
			   t->nbuckets];
	item->next = *head;
	*head = item;
	t->nitems++;
}

void strtab_remove(struct strtab *t, struct strtab_item *item)
{
	struct strtab_item **pi = strtab_slot(t, item->key);

	*pi = item->next;
	item->next = NULL;
	t->nitems--;
}

struct strtab_item *strtab_detach_all(struct strtab *t)
{
	struct strtab_item *all = NULL;

	for (size_t i = 0; i < t->nbuckets; i++) {
		while (t->buckets[i]) {
			struct strtab_item *it = t->buckets[i];
			t->buckets[i] = it->next;
			it->next = all;
			all = it;
		}
	}
	t->nitems = 0;
	return all;
}

void strtab_each(const struct strtab *t,
		 void (*fn)(struct strtab_item *item, void *arg), void *arg)
{
	for (size_t i = 0; i < t->nbuckets; i++)
		for (struct strtab_item *it = t->buckets[i]; it; it = it->next)
			fn(it, arg);
}
