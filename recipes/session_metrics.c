/*
 * session_metrics.c - what the session counts for MOUNT/.metrics: locks
 * granted, released and lost with their wait and hold times, by mode and
 * kind, and ZooKeeper's answer times (session.h).  Updated under the
 * session's mutex where each event happens; copied out whole.
 */
#include "internal.h"

#include <assert.h>
#include <string.h>
#include <time.h>

int64_t session_metrics_now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

static struct zkl_lock_metrics *metrics_of(struct zkl_session *s,
					   enum zkl_mode mode, unsigned kind)
{
	assert((unsigned)mode < ZKL_MODES && kind < ZKL_KINDS);
	return &s->metrics.locks[mode][kind];
}

void session_metrics_granted_locked(struct zkl_session *s, enum zkl_mode mode,
				    unsigned kind, int64_t wait_ms)
{
	struct zkl_lock_metrics *m = metrics_of(s, mode, kind);

	ZKL_ASSERT_HELD(&s->lock);
	m->grants++;
	histogram_observe(&m->wait, &histogram_lock_seconds,
			  (double)(wait_ms > 0 ? wait_ms : 0) / 1000);
}

void session_metrics_ended_locked(struct zkl_session *s, enum zkl_mode mode,
				  unsigned kind, int lost, int64_t hold_ms)
{
	struct zkl_lock_metrics *m = metrics_of(s, mode, kind);

	ZKL_ASSERT_HELD(&s->lock);
	if (lost)
		m->losses++;
	else
		m->releases++;
	histogram_observe(&m->hold, &histogram_lock_seconds,
			  (double)(hold_ms > 0 ? hold_ms : 0) / 1000);
}

void session_metrics_answered_locked(struct zkl_session *s,
				     enum zkl_request_op op, int rc,
				     int64_t sent_us)
{
	int64_t took = session_metrics_now_us() - sent_us;

	ZKL_ASSERT_HELD(&s->lock);
	assert(op < ZKL_OPS);
	/* The client's own failures (the connection lost, the handle closed)
	 * time the connection's end, not the server's answer. */
	if (rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT ||
	    rc == ZCLOSING || rc == ZSESSIONEXPIRED || rc == ZINVALIDSTATE)
		return;
	histogram_observe(&s->metrics.requests[op], &histogram_request_seconds,
			  (double)(took > 0 ? took : 0) / 1e6);
}

void session_metrics(struct zkl_session *s, struct zkl_session_metrics *out)
{
	pthread_mutex_lock(&s->lock);
	memcpy(out, &s->metrics, sizeof(*out));
	pthread_mutex_unlock(&s->lock);
}
