/*
 * notice.h - owner callbacks decided under the session's mutex and run
 * after it is dropped, so that an owner may call back into the library.
 * Each entry point collects them on a list of its own:
 *
 *   struct zkl_link notify;
 *   session_enter(s, &notify);       (list_init + lock)
 *   ... notice_post(&notify, &x->notice) ...
 *   session_leave(s, &notify);       (unlock + notice_run_all)
 */
#ifndef ZKL_NOTICE_H
#define ZKL_NOTICE_H

#include "list.h"

struct zkl_notice {
	struct zkl_link link; /* in a notify list while posted */
	void (*run)(struct zkl_notice *n);
};

static inline void notice_init(struct zkl_notice *n,
			       void (*run)(struct zkl_notice *n))
{
	list_init(&n->link);
	n->run = run;
}

static inline int notice_posted(const struct zkl_notice *n)
{
	return list_linked(&n->link);
}

static inline void notice_post(struct zkl_link *notify, struct zkl_notice *n)
{
	list_add_tail(notify, &n->link);
}

/* Run and unlink every notice of the list, in order; no lock held. */
static inline void notice_run_all(struct zkl_link *notify)
{
	while (!list_empty(notify)) {
		struct zkl_notice *n =
			ZKL_CONTAINER_OF(notify->next, struct zkl_notice, link);
		list_del(&n->link);
		n->run(n);
	}
}

#endif
