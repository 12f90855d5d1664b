/*
 * tree_name.c - which names the mount's directories hold (tree.h): the
 * fixed file names, and the rules for a resource's name.
 */
#include "tree.h"

#include <string.h>

#include "names.h"

static const char *const tree_file_names[] = {
	[TREE_WRITE] = "write",     [TREE_READ] = "read",
	[TREE_LEASE] = "lease",     [TREE_LOCK] = "lock",
	[TREE_HOLDERS] = "holders", [TREE_LIMIT] = "limit",
	[TREE_REVOKE] = "revoke",   [TREE_MAXHOLD] = "maxhold",
	[TREE_STATUS] = ".status",  [TREE_METRICS] = ".metrics",
};

#define TREE_NFILES (sizeof(tree_file_names) / sizeof(tree_file_names[0]))

const char *tree_kind_name(enum tree_kind kind)
{
	return (size_t)kind < TREE_NFILES ? tree_file_names[kind] : NULL;
}

enum tree_name_class tree_classify(const char *name, int is_root,
				   enum tree_kind *kind)
{
	size_t len = strnlen(name, 256);
	struct zkl_node node;

	for (size_t k = TREE_STATUS; is_root && k <= TREE_METRICS; k++) {
		if (strcmp(name, tree_file_names[k]) == 0) {
			*kind = (enum tree_kind)k;
			return TREE_NAME_FILE;
		}
	}
	if (is_root && strcmp(name, TREE_ALL_NAME) == 0)
		return TREE_NAME_ALL;
	if (len == 0 || len > 255 || name[0] == '.')
		return TREE_NAME_INVALID;
	if (memchr(name, '/', len))
		return TREE_NAME_INVALID;
	for (size_t k = 1; k <= TREE_LAST_FILE; k++) {
		if (strcmp(name, tree_file_names[k]) == 0) {
			if (is_root)
				return TREE_NAME_INVALID;
			*kind = (enum tree_kind)k;
			return TREE_NAME_FILE;
		}
	}
	if (names_parse(name, &node) == 0)
		return TREE_NAME_INVALID;
	return TREE_NAME_RESOURCE;
}
