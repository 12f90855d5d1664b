/*
 * watchtab.c - path -> waiting watches (see watchtab.h).
 */
#include "watchtab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct watchtab_entry {
	struct strtab_item item; /* key: path */
	struct zkl_link watches;
	unsigned connection; /* the table's, when the entry was made */
	char path[];
};

static struct watchtab_entry *watchtab_entry_of(struct strtab_item *item)
{
	return item ? ZKL_CONTAINER_OF(item, struct watchtab_entry, item)
		    : NULL;
}

int watchtab_init(struct watchtab *t)
{
	t->connection = 0;
	return strtab_init(&t->paths);
}

/* Move the entry's watches to `fired` (or just unlink them if NULL) and
 * free the entry, which is no longer in the table.  Returns how many
 * watches it had. */
static size_t watchtab_free_entry(struct watchtab_entry *e,
				  struct zkl_link *fired)
{
	size_t n = 0;

	while (!list_empty(&e->watches)) {
		struct zkl_watch *w = ZKL_CONTAINER_OF(e->watches.next,
						       struct zkl_watch, link);
		list_del(&w->link);
		w->entry = NULL;
		if (fired)
			list_add_tail(fired, &w->link);
		n++;
	}
	free(e);
	return n;
}

/* Empty the table, moving every watch to fired (or nowhere if NULL). */
static size_t watchtab_free_all(struct watchtab *t, struct zkl_link *fired)
{
	struct strtab_item *it = strtab_detach_all(&t->paths);
	size_t n = 0;

	while (it) {
		struct strtab_item *next = it->next;
		n += watchtab_free_entry(watchtab_entry_of(it), fired);
		it = next;
	}
	return n;
}

void watchtab_destroy(struct watchtab *t)
{
	watchtab_free_all(t, NULL);
	strtab_destroy(&t->paths);
}

int watchtab_add(struct watchtab *t, const char *path, struct zkl_watch *w)
{
	struct watchtab_entry *e =
		watchtab_entry_of(strtab_find(&t->paths, path));
	int first = 0;

	if (!e) {
		size_t len = strlen(path) + 1;
		e = malloc(sizeof(*e) + len);
		if (!e)
			return -ENOMEM;
		memcpy(e->path, path, len);
		e->item.key = e->path;
		e->connection = t->connection;
		list_init(&e->watches);
		strtab_insert(&t->paths, &e->item);
		first = 1;
	}
	list_add_tail(&e->watches, &w->link);
	w->entry = e;
	return first;
}

int watchtab_is_stale(const struct watchtab *t, const char *path)
{
	const struct watchtab_entry *e =
		watchtab_entry_of(strtab_find(&t->paths, path));

	return e && e->connection != t->connection;
}

int watchtab_remove(struct watchtab *t, struct zkl_watch *w)
{
	(void)t;
	if (!w->entry)
		return 0;
	list_del(&w->link);
	w->entry = NULL;
	/* The entry stays while ZooKeeper may still deliver its event: an
	 * empty entry is harmless and saves a second watch registration if
	 * another waiter picks the same node.  It goes when the event comes. */
	return 1;
}

size_t watchtab_take(struct watchtab *t, const char *path,
		     struct zkl_link *fired)
{
	struct watchtab_entry *e =
		watchtab_entry_of(strtab_find(&t->paths, path));

	list_init(fired);
	if (!e)
		return 0;
	strtab_remove(&t->paths, &e->item);
	return watchtab_free_entry(e, fired);
}

size_t watchtab_take_marks(struct watchtab *t, const char *path,
			   struct zkl_link *fired)
{
	struct watchtab_entry *e =
		watchtab_entry_of(strtab_find(&t->paths, path));
	size_t n = 0;

	list_init(fired);
	if (!e)
		return 0;
	for (struct zkl_link *l = e->watches.next; l != &e->watches;) {
		struct zkl_watch *w =
			ZKL_CONTAINER_OF(l, struct zkl_watch, link);
		l = l->next;
		if (!w->wants_marks)
			continue;
		list_del(&w->link);
		w->entry = NULL;
		list_add_tail(fired, &w->link);
		n++;
	}
	/* The entry stays: ZooKeeper still watches the node for the rest. */
	return n;
}

size_t watchtab_take_all(struct watchtab *t, struct zkl_link *fired)
{
	list_init(fired);
	return watchtab_free_all(t, fired);
}
