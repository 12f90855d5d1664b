/*
 * names.c - parse, order and pick lock node names (see names.h).
 */
#include "names.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define NAMES_PREFIX "_c_"
#define NAMES_PREFIX_LEN 3

const char *names_mode_str(enum zkl_mode mode)
{
	return mode == ZKL_MODE_WRITE ? "write" : "read";
}

int names_guid_new(char out[NAMES_GUID_LEN + 1])
{
	unsigned char b[16];
	size_t got = 0;

	while (got < sizeof(b)) {
		ssize_t n = getrandom(b + got, sizeof(b) - got, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)n;
	}
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
	snprintf(out, NAMES_GUID_LEN + 1,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9],
		 b[10], b[11], b[12], b[13], b[14], b[15]);
	return 0;
}

int names_format_prefix(char *buf, size_t size, const char *guid,
			enum zkl_mode mode)
{
	int n = snprintf(buf, size, NAMES_PREFIX "%.*s-%s-", NAMES_GUID_LEN,
			 guid, names_mode_str(mode));
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	return n;
}

static int names_is_guid(const char *s)
{
	for (int i = 0; i < NAMES_GUID_LEN; i++) {
		int dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? s[i] != '-'
			 : !((s[i] >= '0' && s[i] <= '9') ||
			     (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	}
	return 1;
}

/* ZooKeeper's suffix: ten digits, or '-' and ten digits once the counter
 * wrapped.  Anything else (spaces, '+', short) is not ours. */
static int names_parse_seq(const char *s, int32_t *out)
{
	const char *digits = s[0] == '-' ? s + 1 : s;
	long long v = 0;

	if (strlen(digits) != 10)
		return -EINVAL;
	for (int i = 0; i < 10; i++) {
		if (digits[i] < '0' || digits[i] > '9')
			return -EINVAL;
		v = v * 10 + (digits[i] - '0');
	}
	if (s[0] == '-')
		v = -v;
	if (v < INT32_MIN || v > INT32_MAX)
		return -EINVAL;
	*out = (int32_t)v;
	return 0;
}

int names_parse(const char *name, struct zkl_node *out)
{
	const char *p = name;

	if (strncmp(p, NAMES_PREFIX, NAMES_PREFIX_LEN) != 0)
		return -EINVAL;
	p += NAMES_PREFIX_LEN;
	if (strnlen(p, NAMES_GUID_LEN) < NAMES_GUID_LEN || !names_is_guid(p))
		return -EINVAL;
	out->guid = p;
	p += NAMES_GUID_LEN;
	if (strncmp(p, "-write-", 7) == 0) {
		out->mode = ZKL_MODE_WRITE;
		p += 7;
	} else if (strncmp(p, "-read-", 6) == 0) {
		out->mode = ZKL_MODE_READ;
		p += 6;
	} else {
		return -EINVAL;
	}
	if (names_parse_seq(p, &out->seq) < 0)
		return -EINVAL;
	out->name = name;
	return 0;
}

static const struct {
	const char *marker;
	enum zkl_mode mode;
	int anywhere; /* else only at the start of the name or after '-' */
} names_foreign_markers[] = {
	{ "__WRIT__", ZKL_MODE_WRITE, 1 }, { "__READ__", ZKL_MODE_READ, 1 },
	{ "__rlock__", ZKL_MODE_READ, 1 }, { "__lock__", ZKL_MODE_WRITE, 1 },
	{ "-lock-", ZKL_MODE_WRITE, 1 },   { "write-", ZKL_MODE_WRITE, 0 },
	{ "read-", ZKL_MODE_READ, 0 },
};

/* Does a known marker end at name[sfx]?  Sets *mode. */
static int names_foreign_marker(const char *name, size_t sfx,
				enum zkl_mode *mode)
{
	for (size_t i = 0; i < sizeof(names_foreign_markers) /
				       sizeof(names_foreign_markers[0]);
	     i++) {
		const char *m = names_foreign_markers[i].marker;
		size_t mlen = strlen(m);
		if (sfx < mlen || memcmp(name + sfx - mlen, m, mlen) != 0)
			continue;
		if (!names_foreign_markers[i].anywhere && sfx > mlen &&
		    name[sfx - mlen - 1] != '-')
			continue;
		*mode = names_foreign_markers[i].mode;
		return 1;
	}
	return 0;
}

int names_parse_foreign(const char *name, enum zkl_mode *mode, int32_t *seq)
{
	struct zkl_node ours;
	size_t len = strlen(name);

	if (names_parse(name, &ours) == 0)
		return -EINVAL;
	/* The suffix is ten digits, or '-' and ten digits once wrapped; a
	 * marker must end right before it ("write-" + "-2147483648"). */
	for (size_t width = 10; width <= 11; width++) {
		size_t sfx = len - width;
		if (len < width || names_parse_seq(name + sfx, seq) < 0)
			continue;
		if (names_foreign_marker(name, sfx, mode))
			return 0;
	}
	return -EINVAL;
}

int names_seq_before(int32_t a, int32_t b)
{
	return (int32_t)((uint32_t)a - (uint32_t)b) < 0;
}

static int names_cmp(const void *pa, const void *pb)
{
	const struct zkl_node *a = pa, *b = pb;

	if (a->seq == b->seq)
		return strcmp(a->name, b->name);
	return names_seq_before(a->seq, b->seq) ? -1 : 1;
}

void names_sort(struct zkl_node *nodes, size_t n)
{
	qsort(nodes, n, sizeof(*nodes), names_cmp);
}

size_t names_collect(char *const *names, size_t n, struct zkl_node *out)
{
	size_t count = 0;

	for (size_t i = 0; i < n; i++)
		if (names_parse(names[i], &out[count]) == 0)
			count++;
	names_sort(out, count);
	return count;
}

ssize_t names_find(const struct zkl_node *sorted, size_t n, const char *name)
{
	struct zkl_node key;
	size_t lo = 0, hi = n;

	if (names_parse(name, &key) < 0)
		return -1;
	/* First index whose node does not sort before key. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (names_cmp(&sorted[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < n && strcmp(sorted[lo].name, name) == 0)
		return (ssize_t)lo;
	return -1;
}

ssize_t names_find_guid(const struct zkl_node *sorted, size_t n, size_t from,
			const char *guid)
{
	for (size_t i = from; i < n; i++)
		if (memcmp(sorted[i].guid, guid, NAMES_GUID_LEN) == 0)
			return (ssize_t)i;
	return -1;
}

ssize_t names_pick_watch(const struct zkl_node *sorted,
			 const unsigned char *gone, size_t lo, size_t self)
{
	int writer = sorted[self].mode == ZKL_MODE_WRITE;

	for (size_t i = self; i-- > lo;) {
		if (gone && gone[i])
			continue;
		if (writer || sorted[i].mode == ZKL_MODE_WRITE)
			return (ssize_t)i;
	}
	return -1;
}

static int names_guid_in(const struct zkl_node *node, const char *const *set,
			 size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (memcmp(node->guid, set[i], NAMES_GUID_LEN) == 0)
			return 1;
	return 0;
}

ssize_t names_first_blocker(const struct zkl_node *sorted, size_t n,
			    enum zkl_mode mode, const char *const *skip,
			    size_t nskip)
{
	for (size_t i = 0; i < n; i++) {
		if (names_guid_in(&sorted[i], skip, nskip))
			continue;
		if (mode == ZKL_MODE_WRITE || sorted[i].mode == ZKL_MODE_WRITE)
			return (ssize_t)i;
	}
	return -1;
}
