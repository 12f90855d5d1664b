/*
 * tree_multi.c - the resources a list directory (MOUNT/.all/<list>)
 * names, as znode paths (tree.h).  Each item is a resource path whose
 * every component must be a valid resource name, exactly as a lookup of
 * it one directory after the other would require; the whole path obeys
 * the same length limit as a single resource's.
 */
#include "tree.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "znodename.h"

/* The znode path of the resource path `item` ("a/b") under base into
 * out (NAMES_MAX_RESOURCE_PATH + 1 bytes).  Returns its length or
 * -ENOENT / -ENAMETOOLONG. */
static int tree_multi_item(const char *base, const char *item, char *out)
{
	size_t at = strlen(base);
	int is_root = 1;

	if (at > NAMES_MAX_RESOURCE_PATH)
		return -ENAMETOOLONG;
	memcpy(out, base, at);
	for (const char *p = item; *p; is_root = 0) {
		size_t len = strcspn(p, "/");
		char name[256], z[ZNODENAME_MAX + 1];
		enum tree_kind kind;
		int zlen;

		if (len == 0 || len > 255)
			return -ENOENT;
		memcpy(name, p, len);
		name[len] = '\0';
		if (tree_classify(name, is_root, &kind) != TREE_NAME_RESOURCE)
			return -ENOENT;
		zlen = znodename_encode(name, len, z, sizeof(z));
		if (zlen < 0 || at + 1 + (size_t)zlen > NAMES_MAX_RESOURCE_PATH)
			return -ENAMETOOLONG;
		out[at++] = '/';
		memcpy(out + at, z, (size_t)zlen);
		at += (size_t)zlen;
		p += len + (p[len] == '/');
	}
	out[at] = '\0';
	return (int)at;
}

int tree_multi_zpaths(const char *base, const char *list, char *buf,
		      size_t bufsize, const char *paths[MULTINAME_MAX_ITEMS])
{
	char decoded[256];
	const char *items[MULTINAME_MAX_ITEMS];
	int n = multiname_parse(list, decoded, sizeof(decoded), items);
	size_t at = 0;

	if (n < 0)
		return -ENOENT;
	for (int i = 0; i < n; i++) {
		int len;
		if (bufsize - at < NAMES_MAX_RESOURCE_PATH + 1)
			return -ENAMETOOLONG;
		len = tree_multi_item(base, items[i], buf + at);
		if (len < 0)
			return len;
		paths[i] = buf + at;
		at += (size_t)len + 1;
	}
	return n;
}
