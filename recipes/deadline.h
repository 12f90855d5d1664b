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

#endif
