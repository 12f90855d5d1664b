/*
 * holdcache.c - the holders texts shared by the opens of a short window
 * (see holdcache.h).
 */
#include "holdcache.h"
#include "fs.h"
#include "snapshot.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* An open parked on a fetch, and the copy of the text that answers it. */
struct holdcache_wait {
	struct zkl_link link; /* in its entry's joined or next, then in an
			       * answer list */
	struct snapshot_pending open;
	char *text;
};

/* One resource: in the table while it keeps a text or a fetch of it is in
 * flight (holdcache_free_if_idle says when it goes). */
struct holdcache_entry {
	struct strtab_item item; /* key: dir */
	struct zkl_link kept;    /* in c->kept while text is kept */
	char *text;              /* the last fetch's, or NULL */
	size_t len;
	struct holdcache_stamp taken; /* text's */
	int fetching;                 /* a fetch is in flight */
	struct holdcache_stamp sent;  /* ... stamped so */
	struct zkl_link joined;       /* the opens it answers */
	struct zkl_link next;         /* opens for the fetch after it: only
				      * while one is in flight */
	char dir[];
};

/* The cap evicts the oldest text, never the one just kept. */
_Static_assert(HOLDCACHE_KEPT_MAX > 1, "a cap that keeps the newest text");

int holdcache_expired(const struct holdcache_stamp *taken, int64_t now_ms)
{
	return now_ms - taken->ms >= HOLDCACHE_WINDOW_MS;
}

int holdcache_fresh(const struct holdcache_stamp *taken,
		    const struct holdcache_stamp *now)
{
	/* An open stamped before the fetch (now->ms < taken->ms) counted
	 * the same changes: the fetch saw everything the open must. */
	return taken->changes == now->changes &&
	       !holdcache_expired(taken, now->ms);
}

void holdcache_init(struct holdcache *c)
{
	pthread_mutex_init(&c->lock, NULL);
	memset(&c->entries, 0, sizeof(c->entries));
	list_init(&c->kept);
	c->nkept = 0;
}

static struct holdcache_entry *holdcache_entry_of(struct strtab_item *item)
{
	return ZKL_CONTAINER_OF(item, struct holdcache_entry, item);
}

/* Forget e's text (c->lock held). */
static void holdcache_drop_text(struct holdcache *c, struct holdcache_entry *e)
{
	if (!e->text)
		return;
	free(e->text);
	e->text = NULL;
	list_del(&e->kept);
	c->nkept--;
}

/* Free e if it is of no more use: no text and no fetch.  c->lock held. */
static void holdcache_free_if_idle(struct holdcache *c,
				   struct holdcache_entry *e)
{
	if (e->text || e->fetching)
		return;
	assert(list_empty(&e->joined) && list_empty(&e->next));
	strtab_remove(&c->entries, &e->item);
	free(e);
}

/* e's text goes, and e too if that leaves it of no use.  c->lock held. */
static void holdcache_evict(struct holdcache *c, struct holdcache_entry *e)
{
	holdcache_drop_text(c, e);
	holdcache_free_if_idle(c, e);
}

/* The texts that can answer no open any more go: at each open and each
 * fetch's end, so that none outlives its window by more than the next
 * call.  c->lock held. */
static void holdcache_sweep(struct holdcache *c, int64_t now_ms)
{
	for (struct zkl_link *l = c->kept.next; l != &c->kept;) {
		struct holdcache_entry *e =
			ZKL_CONTAINER_OF(l, struct holdcache_entry, kept);
		l = l->next;
		if (holdcache_expired(&e->taken, now_ms))
			holdcache_evict(c, e);
	}
}

/* dir's entry, made if there is none.  NULL when out of memory. */
static struct holdcache_entry *holdcache_entry(struct holdcache *c,
					       const char *dir)
{
	size_t len = strlen(dir) + 1;
	struct strtab_item *item;
	struct holdcache_entry *e;

	if (!c->entries.buckets && strtab_init(&c->entries) < 0)
		return NULL;
	item = strtab_find(&c->entries, dir);
	if (item)
		return holdcache_entry_of(item);
	e = calloc(1, sizeof(*e) + len);
	if (!e)
		return NULL;
	memcpy(e->dir, dir, len);
	e->item.key = e->dir;
	list_init(&e->kept);
	list_init(&e->joined);
	list_init(&e->next);
	strtab_insert(&c->entries, &e->item);
	return e;
}

/* A copy of a text for one open (NULL when out of memory: that open
 * fails with ENOMEM). */
static char *holdcache_copy(const char *text, size_t len)
{
	char *copy = malloc(len + 1); /* + 1: an empty text is one too */

	if (copy)
		memcpy(copy, text, len);
	return copy;
}

/* Answer w with its copy, or err (-errno), and free it.  No lock held. */
static void holdcache_answer(struct holdcache_wait *w, int err, size_t len)
{
	if (err == 0 && !w->text)
		err = -ENOMEM;
	if (err < 0)
		snapshot_pending_fail(&w->open, err);
	else
		snapshot_pending_answer(&w->open, w->text, len);
	free(w);
}

int holdcache_open(struct holdcache *c, const char *dir,
		   const struct holdcache_stamp *now,
		   const struct snapshot_pending *open)
{
	struct holdcache_wait *w = malloc(sizeof(*w));
	struct holdcache_entry *e;
	int fetch = 0;
	size_t len;

	if (!w)
		return -ENOMEM;
	w->open = *open;
	w->text = NULL;
	pthread_mutex_lock(&c->lock);
	holdcache_sweep(c, now->ms);
	e = holdcache_entry(c, dir);
	if (!e) {
		pthread_mutex_unlock(&c->lock);
		free(w);
		return -ENOMEM;
	}
	if (e->text && holdcache_fresh(&e->taken, now)) {
		w->text = holdcache_copy(e->text, e->len);
		len = e->len;
		pthread_mutex_unlock(&c->lock);
		holdcache_answer(w, 0, len);
		return 0;
	}
	if (!e->fetching) {
		e->fetching = fetch = 1;
		e->sent = *now;
	}
	/* The fetch in flight may answer it only if it saw every change the
	 * open must see; else the next one will. */
	list_add_tail(holdcache_fresh(&e->sent, now) ? &e->joined : &e->next,
		      &w->link);
	pthread_mutex_unlock(&c->lock);
	return fetch;
}

int holdcache_fetched(struct holdcache *c, const char *dir, int err, char *text,
		      size_t len, const struct holdcache_stamp *now)
{
	struct zkl_link answer;
	struct holdcache_entry *e;
	int again;

	assert((err < 0) == (text == NULL));
	pthread_mutex_lock(&c->lock);
	holdcache_sweep(c, now->ms);
	e = holdcache_entry_of(strtab_find(&c->entries, dir));
	assert(e && e->fetching); /* it stays while its fetch is out */
	list_move_all(&e->joined, &answer);
	e->fetching = 0;
	/* The text before is older than this fetch; and a failed fetch
	 * leaves none: the open after it asks again (while ZooKeeper is out
	 * of reach, and fails: no old text is shown). */
	holdcache_drop_text(c, e);
	if (err < 0) {
		/* The next fetch would meet the same trouble now: those
		 * waiting for it are told at once. */
		while (!list_empty(&e->next)) {
			struct zkl_link *l = e->next.next;
			list_del(l);
			list_add_tail(&answer, l);
		}
	}
	for (struct zkl_link *l = answer.next; l != &answer && text;
	     l = l->next)
		ZKL_CONTAINER_OF(l, struct holdcache_wait, link)->text =
			holdcache_copy(text, len);
	if (text && !holdcache_expired(&e->sent, now->ms)) {
		e->text = text;
		e->len = len;
		e->taken = e->sent;
		list_add_tail(&c->kept, &e->kept);
		if (++c->nkept > HOLDCACHE_KEPT_MAX) /* not e: the newest */
			holdcache_evict(c,
					ZKL_CONTAINER_OF(c->kept.next,
							 struct holdcache_entry,
							 kept));
	} else {
		free(text);
	}
	again = !list_empty(&e->next);
	if (again) {
		list_move_all(&e->next, &e->joined);
		e->fetching = 1;
		e->sent = *now;
	}
	holdcache_free_if_idle(c, e);
	pthread_mutex_unlock(&c->lock);
	while (!list_empty(&answer)) {
		struct holdcache_wait *w = ZKL_CONTAINER_OF(
			answer.next, struct holdcache_wait, link);
		list_del(&w->link);
		holdcache_answer(w, err, len);
	}
	return again;
}

/* Free the waits of list, unanswered. */
static void holdcache_free_waits(struct zkl_link *list)
{
	while (!list_empty(list)) {
		struct zkl_link *l = list->next;
		list_del(l);
		free(ZKL_CONTAINER_OF(l, struct holdcache_wait, link));
	}
}

void holdcache_destroy(struct holdcache *c)
{
	struct strtab_item *item =
		c->entries.buckets ? strtab_detach_all(&c->entries) : NULL;

	while (item) {
		struct holdcache_entry *e = holdcache_entry_of(item);
		item = item->next;
		holdcache_free_waits(&e->joined);
		holdcache_free_waits(&e->next);
		free(e->text);
		free(e);
	}
	strtab_destroy(&c->entries);
	pthread_mutex_destroy(&c->lock);
}
