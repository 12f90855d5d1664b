/*
 * session_info.c - what a session tells about itself: its base path,
 * servers, id, state and counters.
 */
#include "internal.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

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

/* "host:port" of the server the handle is connected to, or "".  Not with
 * zoo_get_current_server: it formats into one static buffer of the
 * client's, which the client's own thread rewrites as it connects. */
static void session_server_text(zhandle_t *zh, char *out, size_t size)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char host[INET6_ADDRSTRLEN];

	out[0] = '\0';
	if (!zookeeper_get_connected_host(zh, (struct sockaddr *)&ss, &len))
		return;
	if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;
		if (inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host)))
			snprintf(out, size, "%s:%u", host, ntohs(in->sin_port));
	} else if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 =
			(const struct sockaddr_in6 *)&ss;
		if (inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host)))
			snprintf(out, size, "[%s]:%u", host,
				 ntohs(in6->sin6_port));
	}
}

void session_stats(struct zkl_session *s, struct zkl_session_stats *out)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&s->lock);
	out->state = s->state;
	out->dead = s->dead;
	out->session_id = s->client_id;
	out->timeout_ms = zoo_recv_timeout(s->zh);
	session_server_text(s->zh, out->server, sizeof(out->server));
	for (struct zkl_link *l = s->live.next; l != &s->live; l = l->next) {
		struct zkl_member *m = member_of_live(l);
		m->ops->count_locked(m, out);
	}
	out->grants = s->grants;
	out->losses = s->losses;
	out->expirations = s->expirations;
	out->asked = s->revokes_seen;
	out->maxhold_asks = s->maxhold_asks;
	out->maxhold_breaks = s->maxhold_breaks;
	out->delete_retries = s->delete_retries;
	session_clock_stats_locked(s, out);
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
