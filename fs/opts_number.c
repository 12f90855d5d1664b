/*
 * opts_number.c - strict whole numbers for options (see opts.h).
 */
#include "opts.h"

#include <errno.h>
#include <stdlib.h>

int opts_parse_number(const char *text, unsigned base, unsigned long min,
		      unsigned long max, unsigned long *out)
{
	unsigned long v = 0;

	if (!*text)
		return -EINVAL;
	for (const char *p = text; *p; p++) {
		unsigned d = *p >= '0' && *p <= '9' ? (unsigned)(*p - '0')
						    : base;
		if (d >= base)
			return -EINVAL;
		if (v > (max - d) / base)
			return -ERANGE;
		v = v * base + d;
	}
	if (v < min)
		return -ERANGE;
	*out = v;
	return 0;
}
