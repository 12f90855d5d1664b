/*
 * multiname.h - the name of a multi-lock's directory, MOUNT/.all/<list>:
 * a comma-separated list of resource paths.  Inside an item, a nested
 * resource's '/' is written %2F, and a ',' or '%' that is part of a name
 * %2C or %25 (either case of hex digit); no other '%' may appear.  The
 * order of the list does not matter to the lock.
 *
 * Pure: it knows nothing of which names are valid resource names; the
 * tree checks each component of each item (tree.h).
 */
#ifndef ZKL_MULTINAME_H
#define ZKL_MULTINAME_H

#include <stddef.h>

/* At most this many items (lockreq.h's LOCKREQ_MULTI_MAX). */
#define MULTINAME_MAX_ITEMS 64

/* Split and decode `name` (a file name: at most 255 bytes).  Each item is
 * written to `buf` as a resource path with '/' between its components,
 * NUL-terminated, and items[i] points at it; buf needs strlen(name) + 1
 * bytes at most.  Returns the number of items, or -EINVAL for an empty
 * item or component, a '%' that is no escape above, a duplicate item,
 * more than MULTINAME_MAX_ITEMS items, or a name too long to be a file
 * name. */
int multiname_parse(const char *name, char *buf, size_t bufsize,
		    const char *items[MULTINAME_MAX_ITEMS]);

#endif
