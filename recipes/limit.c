/*
 * limit.c - parse and format a semaphore's limit (see limit.h).
 */
#include "limit.h"
#include "decimal.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>

int limit_parse(const char *buf, size_t len, int stored, unsigned *n)
{
	unsigned v;

	if (len == 0 && stored) {
		*n = 1; /* never set */
		return 0;
	}
	if (decimal_parse(buf, len, LIMIT_MAX, &v) < 0 || v == 0)
		return -EINVAL;
	*n = v;
	return 0;
}

size_t limit_format(unsigned n, char *buf, size_t size)
{
	int len = snprintf(buf, size, "%u", n);

	assert(n >= 1 && n <= LIMIT_MAX && len > 0 && (size_t)len < size);
	return (size_t)len;
}
