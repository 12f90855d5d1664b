/*
 * deadline.h - an absolute time `ms` milliseconds from now, on the clock
 * pthread_cond_timedwait() uses by default (CLOCK_REALTIME).
 */
#ifndef ZKL_DEADLINE_H
#define ZKL_DEADLINE_H

#include <time.h>

static inline struct timespec deadline_after_ms(long ms)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_sec += ms / 1000;
	t.tv_nsec += (ms % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

/* Is a earlier than b? */
static inline int deadline_before(const struct timespec *a,
				  const struct timespec *b)
{
	return a->tv_sec < b->tv_sec ||
	       (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* Is the time t (from deadline_after_ms) past? */
static inline int deadline_reached(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return !deadline_before(&now, t);
}

#endif
