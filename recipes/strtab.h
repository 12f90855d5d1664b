/*
 * strtab.h - an intrusive hash table keyed by strings.
 *
 * Items are embedded in the caller's structures and carry a pointer to
 * their key, which must stay unchanged while the item is in the table.
 * The table never allocates or frees items.  Not thread-safe: the owner
 * guards it.
 */
#ifndef ZKL_STRTAB_H
#define ZKL_STRTAB_H

#include <stddef.h>

struct strtab_item {
	struct strtab_item *next; /* bucket chain */
	const char *key;
};

struct strtab {
	struct strtab_item **buckets;
	size_t nbuckets;
	size_t nitems;
};

/* Returns 0 or -ENOMEM. */
int strtab_init(struct strtab *t);

/* Frees the buckets; items still in the table are the caller's. */
void strtab_destroy(struct strtab *t);

/* The item whose key equals `key`, or NULL. */
struct strtab_item *strtab_find(const struct strtab *t, const char *key);

/* Add an item whose key is not in the table yet.  Never fails: when more
 * buckets cannot be had, chains grow longer. */
void strtab_insert(struct strtab *t, struct strtab_item *item);

/* Take an item that is in the table out of it. */
void strtab_remove(struct strtab *t, struct strtab_item *item);

/* Empty the table: returns its items as a chain linked by `next`. */
struct strtab_item *strtab_detach_all(struct strtab *t);

/* The hash the table files a key of len bytes by (FNV-1a): for a caller
 * that files something else by a string (session_changed). */
size_t strtab_hash(const char *s, size_t len);

/* Call fn on every item; fn must not insert or remove. */
void strtab_each(const struct strtab *t,
		 void (*fn)(struct strtab_item *item, void *arg), void *arg);

#endif
