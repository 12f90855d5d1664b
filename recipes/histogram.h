/*
 * histogram.h - a distribution as Prometheus keeps one: how many
 * observations fell at or under each of a fixed list of bounds, their
 * number and their sum.  Kept per bucket here (not cumulative), made
 * cumulative when printed.  Not thread-safe: its owner guards it.
 */
#ifndef ZKL_HISTOGRAM_H
#define ZKL_HISTOGRAM_H

#include <stddef.h>
#include <stdint.h>

#define HISTOGRAM_MAX_BOUNDS 16

/* The upper bounds, increasing; observations above the last count in the
 * +Inf bucket alone. */
struct histogram_bounds {
	size_t n;
	double le[HISTOGRAM_MAX_BOUNDS];
};

struct histogram {
	uint64_t counts[HISTOGRAM_MAX_BOUNDS + 1]; /* [n]: above every bound */
	uint64_t n;
	double sum;
};

/* Seconds a lock was waited for or held: a millisecond to an hour. */
extern const struct histogram_bounds histogram_lock_seconds;
/* Seconds ZooKeeper took to answer a request: 100 us to 5 s. */
extern const struct histogram_bounds histogram_request_seconds;

void histogram_observe(struct histogram *h, const struct histogram_bounds *b,
		       double value);

#endif
