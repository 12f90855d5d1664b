/*
 * znodename.c - file names <-> znode names (see znodename.h).
 */
#include "znodename.h"

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

static const char znodename_hex[] = "0123456789ABCDEF";

/* The length of the character at s (n > 0 bytes left) if ZooKeeper accepts
 * it, else 0.  Java decodes the path as UTF-8 and refuses what its
 * PathUtils.validatePath names, and every malformed sequence (U+FFFD). */
static size_t znodename_char_len(const unsigned char *s, size_t n)
{
	uint32_t cp;
	size_t len;

	if (s[0] < 0x80)
		return s[0] >= 0x20 && s[0] != 0x7f ? 1 : 0;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		cp = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		cp = s[0] & 0x0f;
	} else {
		/* 0x80-0xc1 start nothing or an overlong form; 0xf0 and up
		 * start characters beyond U+FFFF (surrogates in Java). */
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((cp >= 0xa0 && cp <= 0xd7ff) || (cp >= 0xf900 && cp <= 0xffef))
		return len; /* also refuses 3-byte overlong forms: < 0x800 */
	return 0;
}

size_t znodename_accepted_len(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, n;

	while (i < len && (n = znodename_char_len(u + i, len - i)) > 0)
		i += n;
	return i;
}

static int znodename_hex_value(char c)
{
	const char *p = c ? strchr(znodename_hex, c) : NULL;

	return p ? (int)(p - znodename_hex) : -1;
}

/* The byte that the escape at s stands for, or -1 if s does not start one.
 * Only bytes that encoding escapes are escapes: '%', control bytes and
 * the bytes of multi-byte characters. */
static int znodename_escape_at(const char *s)
{
	int hi, lo, b;

	if (s[0] != '%' || (hi = znodename_hex_value(s[1])) < 0 ||
	    (lo = znodename_hex_value(s[2])) < 0)
		return -1;
	b = hi << 4 | lo;
	if (b == '%' || (b >= 0x01 && b < 0x20) || b >= 0x7f)
		return b;
	return -1;
}

int znodename_encode(const char *name, size_t len, char *out, size_t size)
{
	const unsigned char *u = (const unsigned char *)name;
	size_t o = 0;

	for (size_t i = 0; i < len;) {
		size_t n = znodename_char_len(u + i, len - i);
		int escape = n == 0 || (u[i] == '%' && i + 2 < len &&
					znodename_escape_at(name + i) >= 0);

		if (escape) {
			if (o + 3 >= size)
				return -ENAMETOOLONG;
			out[o++] = '%';
			out[o++] = znodename_hex[u[i] >> 4];
			out[o++] = znodename_hex[u[i] & 0xf];
			i++;
		} else {
			if (o + n >= size)
				return -ENAMETOOLONG;
			memcpy(out + o, name + i, n);
			o += n;
			i += n;
		}
	}
	if (o >= size)
		return -ENAMETOOLONG;
	out[o] = '\0';
	return (int)o;
}

int znodename_decode(const char *z, char *out, size_t size)
{
	char again[ZNODENAME_MAX + 1];
	size_t o = 0;
	int rc;

	for (size_t i = 0; z[i];) {
		int b = znodename_escape_at(z + i);
		if (o + 1 >= size)
			return -ENAMETOOLONG;
		out[o++] = b >= 0 ? (char)b : z[i];
		i += b >= 0 ? 3 : 1;
	}
	out[o] = '\0';
	rc = znodename_encode(out, o, again, sizeof(again));
	if (rc < 0 || strcmp(again, z) != 0)
		return -EINVAL;
	return (int)o;
}
