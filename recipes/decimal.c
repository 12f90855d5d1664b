/*
 * decimal.c - parse a setting's number (decimal.h).
 */
#include "decimal.h"

#include <errno.h>

/* More digits than any unsigned has: refused before they can overflow. */
#define DECIMAL_MAX_DIGITS 10

int decimal_parse(const char *buf, size_t len, unsigned max, unsigned *value)
{
	unsigned long long v = 0;

	if (len > 0 && buf[len - 1] == '\n')
		len--;
	if (len == 0 || len > DECIMAL_MAX_DIGITS || (buf[0] == '0' && len > 1))
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (buf[i] < '0' || buf[i] > '9')
			return -EINVAL;
		v = v * 10 + (unsigned long long)(buf[i] - '0');
	}
	if (v > max)
		return -EINVAL;
	*value = (unsigned)v;
	return 0;
}
