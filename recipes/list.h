/*
 * list.h - a minimal intrusive doubly linked list.  The caller provides the
 * locking; every list in zklockfs names the mutex that guards it.
 */
#ifndef ZKL_LIST_H
#define ZKL_LIST_H

#include <stddef.h>

struct zkl_link {
	struct zkl_link *next, *prev;
};

#define ZKL_CONTAINER_OF(ptr, type, member) \
	((type *)(void *)((char *)(ptr)-offsetof(type, member)))

static inline void list_init(struct zkl_link *head)
{
	head->next = head->prev = head;
}

static inline int list_empty(const struct zkl_link *head)
{
	return head->next == head;
}

/* A link that is in no list points to itself (after list_init/list_del). */
static inline int list_linked(const struct zkl_link *link)
{
	return link->next != link;
}

static inline void list_add_tail(struct zkl_link *head, struct zkl_link *link)
{
	link->prev = head->prev;
	link->next = head;
	head->prev->next = link;
	head->prev = link;
}

static inline void list_del(struct zkl_link *link)
{
	link->prev->next = link->next;
	link->next->prev = link->prev;
	list_init(link);
}

/* Move every element of `from` to the (empty) list `to`. */
static inline void list_move_all(struct zkl_link *from, struct zkl_link *to)
{
	list_init(to);
	if (list_empty(from))
		return;
	to->next = from->next;
	to->prev = from->prev;
	to->next->prev = to;
	to->prev->next = to;
	list_init(from);
}

#endif
