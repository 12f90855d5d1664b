/*
 * session_close.c - the end of a mount's session: the releases of the
 * unmount confirmed, the threads stopped, the handle closed, whatever
 * still waited told, and the memory freed.
 */
#include "internal.h"
#include "deadline.h"

#include <assert.h>
#include <stdlib.h>

/* Before the handle goes, let the lock requests released at unmount see
 * their deletes confirmed.  zookeeper_close() of the multi-threaded client
 * stops its completion thread first: a reply still due is dropped without
 * its completion, and a request that waits for it is never freed (nor is
 * whoever waits for the delete told).  Only while connected, and at most
 * a session timeout: without a connection the server ends our nodes with
 * the session anyway. */
static void session_drain(struct zkl_session *s)
{
	struct timespec deadline = deadline_after_ms(s->session_timeout_ms);
	int rc = 0;

	pthread_mutex_lock(&s->lock);
	while (!list_empty(&s->live) && s->state == ZKL_CONN_CONNECTED &&
	       rc == 0)
		rc = pthread_cond_timedwait(&s->state_changed, &s->lock,
					    &deadline);
	pthread_mutex_unlock(&s->lock);
}

/* The handle is closed and our nodes with it: what still waits (a delete
 * deferred until a reconnection that will not come) is over, and whoever
 * waits for it is told.  A request whose reply the close dropped keeps the
 * reference of that step: nothing will ever call it again. */
static void session_finish_all(struct zkl_session *s)
{
	struct zkl_link notify, lost;

	list_init(&notify);
	list_init(&lost);
	pthread_mutex_lock(&s->lock);
	s->dead = 1;
	for (struct zkl_link *l = s->live.next; l != &s->live;) {
		struct zkl_link *next = l->next;
		struct zkl_member *m = member_of_live(l);
		m->ops->expired_locked(m, 0, &lost, &notify);
		l = next;
	}
	/* What waits for a time or the connection and is no request (a
	 * break's bound, revoke.c) ends too. */
	for (int i = 0; i < 2; i++) {
		struct zkl_link *list = i ? &s->resume : &s->later;
		while (!list_empty(list)) {
			struct zkl_member *m = ZKL_CONTAINER_OF(
				list->next, struct zkl_member, resume);
			list_del(&m->resume);
			m->ops->expired_locked(m, 0, &lost, &notify);
		}
	}
	pthread_mutex_unlock(&s->lock);
	s->lost_hook = NULL; /* released already: nobody holds them */
	session_report_lost(&lost);
	notice_run_all(&notify);
	assert(list_empty(&s->resume) && list_empty(&s->later));
}

void session_close(struct zkl_session *s)
{
	session_drain(s);
	pthread_mutex_lock(&s->lock);
	s->closing = 1;
	pthread_cond_broadcast(&s->state_changed);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->keeper, NULL);
	session_clock_stop(s);
	zookeeper_close(s->zh);
	session_finish_all(s);
	session_free(s);
}
