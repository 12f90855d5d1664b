/*
 * histogram.c - count an observation into its bucket (histogram.h).
 */
#include "histogram.h"

const struct histogram_bounds histogram_lock_seconds = {
	.n = 13,
	.le = { 0.001, 0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 600, 1800, 3600 },
};

const struct histogram_bounds histogram_request_seconds = {
	.n = 13,
	.le = { 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
		0.05, 0.1, 0.5, 1, 5 },
};

void histogram_observe(struct histogram *h, const struct histogram_bounds *b,
		       double value)
{
	size_t i = 0;

	while (i < b->n && value > b->le[i])
		i++;
	h->counts[i]++;
	h->n++;
	h->sum += value;
}
