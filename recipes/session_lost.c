/*
 * session_lost.c - telling the daemon of locks lost (internal.h): with the
 * session, or one by one (a node deleted by another client).
 */
#include "internal.h"

#include <stdlib.h>

void session_set_lost_hook(struct zkl_session *s, session_lost_fn fn, void *arg)
{
	pthread_mutex_lock(&s->lock);
	s->lost_hook = fn;
	s->lost_arg = arg;
	pthread_mutex_unlock(&s->lock);
}

void session_set_revoke_hook(struct zkl_session *s, session_lost_fn fn,
			     void *arg)
{
	pthread_mutex_lock(&s->lock);
	s->revoke_hook = fn;
	s->revoke_arg = arg;
	pthread_mutex_unlock(&s->lock);
}

void session_tell_lost(struct zkl_lost *item)
{
	struct zkl_session *s = item->s;

	if (s->lost_hook)
		s->lost_hook(item->node, item->why, item->data, item->len,
			     s->lost_arg);
	free(item->node);
	free(item);
}

/* Tell the owner of each lock lost with the session, then free the list. */
void session_report_lost(struct zkl_link *lost)
{
	while (!list_empty(lost)) {
		struct zkl_lost *item =
			ZKL_CONTAINER_OF(lost->next, struct zkl_lost, link);
		list_del(&item->link);
		session_tell_lost(item);
	}
}
