/*
 * stats.h - latency samples and their summary, for the benchmarks.
 */
#ifndef ZKB_STATS_H
#define ZKB_STATS_H

#include <stddef.h>

struct samples {
	double *us; /* microseconds */
	size_t n, cap;
};

/* Monotonic clock in microseconds. */
double now_us(void);

/* Exits the program on allocation failure: a benchmark has no better. */
void samples_init(struct samples *s, size_t cap);
void samples_add(struct samples *s, double us);
void samples_free(struct samples *s);

/* Print "median_us=.. p99_us=.. mean_us=.. n=.." on stdout, leaving out
 * the first `warmup` samples; with ZKBENCH_SAMPLES=FILE in the
 * environment, also append those samples to FILE, one per line. */
void samples_report(struct samples *s, size_t warmup);

/* Print a message naming what failed and exit(1). */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Parse a positive count or die naming `what`. */
long parse_count(const char *text, const char *what);

#endif
