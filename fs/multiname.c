/*
 * multiname.c - split and decode a multi-lock directory's name (see
 * multiname.h).
 */
#include "multiname.h"

#include <errno.h>
#include <string.h>

/* The byte a "%XY" escape at s stands for, or -1 if it is none of ours. */
static int multiname_escape(const char *s)
{
	if (s[0] != '%' || s[1] != '2')
		return -1;
	switch (s[2]) {
	case 'F':
	case 'f':
		return '/';
	case 'C':
	case 'c':
		return ',';
	case '5':
		return '%';
	default:
		return -1;
	}
}

/* Decode one item, name[0..len), into out; '/' separates components,
 * none empty.  Returns the decoded length or -EINVAL. */
static int multiname_item(const char *name, size_t len, char *out)
{
	size_t at = 0;

	for (size_t i = 0; i < len; i++) {
		int c = (unsigned char)name[i];
		if (c == '%') {
			c = multiname_escape(name + i);
			if (c < 0)
				return -EINVAL;
			i += 2;
		}
		if (c == '/' && (at == 0 || out[at - 1] == '/'))
			return -EINVAL; /* an empty component */
		out[at++] = (char)c;
	}
	if (at == 0 || out[at - 1] == '/')
		return -EINVAL;
	out[at] = '\0';
	return (int)at;
}

int multiname_parse(const char *name, char *buf, size_t bufsize,
		    const char *items[MULTINAME_MAX_ITEMS])
{
	size_t len = strnlen(name, 256), at = 0;
	int n = 0;

	if (len == 0 || len > 255 || bufsize < len + 1)
		return -EINVAL;
	for (const char *p = name; p <= name + len;) {
		const char *end = memchr(p, ',', len - (size_t)(p - name));
		size_t itemlen = end ? (size_t)(end - p)
				     : len - (size_t)(p - name);
		int got;

		if (n == MULTINAME_MAX_ITEMS)
			return -EINVAL;
		/* Decoding only shortens: the item fits where it was. */
		got = multiname_item(p, itemlen, buf + at);
		if (got < 0)
			return got;
		for (int k = 0; k < n; k++)
			if (strcmp(items[k], buf + at) == 0)
				return -EINVAL;
		items[n++] = buf + at;
		at += (size_t)got + 1;
		if (!end)
			break;
		p = end + 1;
	}
	return n;
}
