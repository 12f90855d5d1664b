/*
 * session_info.c - what a session tells about itself: its base path,
 * servers, id, state and counters.
 */
#include "internal.h"

#include <stdio.h>
#include <string.h>

const char *session_base(const struct zkl_session *s)
{
	return s->base;
}

int64_t session_id(struct zkl_session *s)
{
	int64_t id;

	pthread_mutex_lock(&s->lock);
	id = s->client_id;
	pthread_mutex_unlock(&s->lock);
	return id;
}

const char *session_hosts(const struct zkl_session *s)
{
	return s->hosts;
}

void session_stats(struct zkl_session *s, struct zkl_session_stats *out)
{
	const char *server;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&s->lock);
	out->state = s->state;
	out->dead = s->dead;
	out->session_id = s->client_id;
	out->timeout_ms = zoo_recv_timeout(s->zh);
	/* The client formats it into a buffer of its own: copy at once. */
	server = zoo_get_current_server(s->zh);
	snprintf(out->server, sizeof(out->server), "%s", server ? server : "");
	for (struct zkl_link *l = s->live.next; l != &s->live; l = l->next) {
		struct zkl_member *m = member_of_live(l);
		m->ops->count_locked(m, out);
	}
	out->grants = s->grants;
	out->losses = s->losses;
	out->expirations = s->expirations;
	pthread_mutex_unlock(&s->lock);
}

enum zkl_conn_state session_state(struct zkl_session *s)
{
	enum zkl_conn_state st;

	pthread_mutex_lock(&s->lock);
	st = s->state;
	pthread_mutex_unlock(&s->lock);
	return st;
}
