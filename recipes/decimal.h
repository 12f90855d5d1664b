/*
 * decimal.h - a whole number as a user writes it to a setting's file
 * (MOUNT/<resource>/limit, maxhold): what echo and printf write.
 */
#ifndef ZKL_DECIMAL_H
#define ZKL_DECIMAL_H

#include <stddef.h>

/* The len bytes at buf: decimal digits, no sign, no leading zero (but
 * "0"), no spaces, at most one newline after them, at most max.  Returns 0
 * with *value set, or -EINVAL. */
int decimal_parse(const char *buf, size_t len, unsigned max, unsigned *value);

#endif
