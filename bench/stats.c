/*
 * stats.c - see stats.h.
 */
#include "stats.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "zkbench: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

long parse_count(const char *text, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(text, &end, 10);
	if (errno || *end || v <= 0)
		die("%s must be a positive number, not '%s'", what, text);
	return v;
}

void samples_init(struct samples *s, size_t cap)
{
	s->us = malloc(cap * sizeof(*s->us));
	if (!s->us)
		die("out of memory");
	s->n = 0;
	s->cap = cap;
}

void samples_add(struct samples *s, double us)
{
	if (s->n < s->cap)
		s->us[s->n++] = us;
}

void samples_free(struct samples *s)
{
	free(s->us);
}

/* For bench/run, which pools the samples of interleaved rounds. */
static void samples_dump(const double *v, size_t n)
{
	const char *path = getenv("ZKBENCH_SAMPLES");
	FILE *f;

	if (!path || !*path)
		return;
	f = fopen(path, "a");
	if (!f)
		die("cannot write %s: %m", path);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%.1f\n", v[i]);
	if (fclose(f) != 0)
		die("cannot write %s: %m", path);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void samples_report(struct samples *s, size_t warmup)
{
	double *v = s->us + (warmup < s->n ? warmup : s->n);
	size_t n = s->n - (size_t)(v - s->us);
	double sum = 0;

	if (n == 0)
		die("no samples");
	samples_dump(v, n);
	qsort(v, n, sizeof(*v), cmp_double);
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	printf("median_us=%.1f p99_us=%.1f mean_us=%.1f n=%zu\n", v[n / 2],
	       v[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1], sum / (double)n,
	       n);
}
