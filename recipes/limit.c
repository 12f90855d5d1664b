/*
 * limit.c - parse and format a semaphore's limit (see limit.h).
 */
#include "limit.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>

int limit_parse(const char *buf, size_t len, int stored, unsigned *n)
{
	unsigned long v = 0;

	if (len == 0 && stored) {
		*n = 1; /* never set */
		return 0;
	}
	if (len > 0 && buf[len - 1] == '\n')
		len--;
	if (len == 0 || buf[0] == '0' || len > 7)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (buf[i] < '0' || buf[i] > '9')
			return -EINVAL;
		v = v * 10 + (unsigned long)(buf[i] - '0');
	}
	if (v > LIMIT_MAX)
		return -EINVAL;
	*n = (unsigned)v;
	return 0;
}

size_t limit_format(unsigned n, char *buf, size_t size)
{
	int len = snprintf(buf, size, "%u", n);

	assert(n >= 1 && n <= LIMIT_MAX && len > 0 && (size_t)len < size);
	return (size_t)len;
}
