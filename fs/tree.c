/*
 * tree.c - inode table and name rules (see tree.h).
 */
#include "tree.h"

#include <fuse_lowlevel.h>

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "list.h"
#include "names.h"
#include "znodename.h"

/* The table key of `name` under parent, into key (TREE_KEY_MAX bytes). */
#define TREE_KEY_MAX (2 * sizeof(uintptr_t) + 1 + ZNODENAME_MAX + 1)

static void tree_key(const struct tree_res *parent, const char *name,
		     char key[TREE_KEY_MAX])
{
	int n = snprintf(key, TREE_KEY_MAX, "%0*" PRIxPTR "/%s",
			 (int)(2 * sizeof(uintptr_t)), (uintptr_t)parent, name);

	assert(n > 0 && n < (int)TREE_KEY_MAX); /* names are encoded already */
	(void)n;
}

int tree_init(struct tree *t, const char *base)
{
	char *name = strdup(base);

	memset(t, 0, sizeof(*t));
	if (!name || strtab_init(&t->table) < 0) {
		free(name);
		strtab_destroy(&t->table);
		return -ENOMEM;
	}
	t->root.name = name;
	t->root.nlookup = 1;
	list_init(&t->detached);
	pthread_mutex_init(&t->lock, NULL);
	return 0;
}

void tree_destroy(struct tree *t)
{
	struct strtab_item *item = strtab_detach_all(&t->table);

	while (item) {
		struct strtab_item *next = item->next;
		free(ZKL_CONTAINER_OF(item, struct tree_res, item));
		item = next;
	}
	while (!list_empty(&t->detached)) {
		struct zkl_link *l = t->detached.next;
		list_del(l);
		free(ZKL_CONTAINER_OF(l, struct tree_res, detached));
	}
	strtab_destroy(&t->table);
	free((char *)t->root.name);
	pthread_mutex_destroy(&t->lock);
}

struct tree_res *tree_res_of(struct tree *t, uint64_t ino)
{
	if (ino == FUSE_ROOT_ID)
		return &t->root;
	return (struct tree_res *)(uintptr_t)(ino & ~(uint64_t)TREE_KIND_MAX);
}

enum tree_kind tree_kind_of(uint64_t ino)
{
	if (ino == FUSE_ROOT_ID)
		return TREE_DIR;
	return (enum tree_kind)(ino & TREE_KIND_MAX);
}

uint64_t tree_ino(struct tree *t, struct tree_res *r, enum tree_kind kind)
{
	if (r == &t->root && kind == TREE_DIR)
		return FUSE_ROOT_ID;
	return (uint64_t)(uintptr_t)r | (uint64_t)kind;
}

static struct tree_res *tree_find_locked(struct tree *t,
					 const struct tree_res *parent,
					 const char *name)
{
	char key[TREE_KEY_MAX];
	struct strtab_item *item;

	tree_key(parent, name, key);
	item = strtab_find(&t->table, key);
	return item ? ZKL_CONTAINER_OF(item, struct tree_res, item) : NULL;
}

static int tree_get_res_locked(struct tree *t, struct tree_res *parent,
			       const char *name, enum tree_role role,
			       struct tree_res **out)
{
	struct tree_res *r = tree_find_locked(t, parent, name);

	if (!r) {
		char key[TREE_KEY_MAX];
		size_t size;
		char *k;

		tree_key(parent, name, key);
		size = sizeof(*r) + strlen(key) + 1;
		/* aligned_alloc wants a multiple of the alignment */
		r = aligned_alloc(16, (size + 15) & ~(size_t)15);
		if (!r)
			return -ENOMEM;
		memset(r, 0, sizeof(*r));
		list_init(&r->detached);
		k = strcpy((char *)(r + 1), key);
		r->item.key = k;
		r->name = strchr(k, '/') + 1;
		r->parent = parent;
		r->role = role;
		parent->children++;
		strtab_insert(&t->table, &r->item);
	}
	*out = r;
	return 0;
}

int tree_zpath(const struct tree_res *r, char *out, size_t size)
{
	const struct tree_res *p;
	size_t len = 0, at;

	for (p = r; p->parent; p = p->parent)
		len += 1 + strlen(p->name);
	len += strlen(p->name);
	if (len >= size)
		return -ENAMETOOLONG;
	at = len;
	out[at] = '\0';
	for (p = r; p->parent; p = p->parent) {
		size_t n = strlen(p->name);
		at -= n;
		memcpy(out + at, p->name, n);
		out[--at] = '/';
	}
	assert(at == strlen(p->name));
	memcpy(out, p->name, at);
	return (int)len;
}

/* The znode name of file name `name` into z; then the length its path
 * under dir would have, or -ENAMETOOLONG past the limit of names.h. */
static int tree_child_znode(const struct tree_res *dir, const char *name,
			    char z[ZNODENAME_MAX + 1],
			    char dpath[NAMES_MAX_RESOURCE_PATH + 1])
{
	int zlen = znodename_encode(name, strlen(name), z, ZNODENAME_MAX + 1);
	int dlen = tree_zpath(dir, dpath, NAMES_MAX_RESOURCE_PATH + 1);

	if (zlen < 0 || dlen < 0 ||
	    (size_t)dlen + 1 + (size_t)zlen > NAMES_MAX_RESOURCE_PATH)
		return -ENAMETOOLONG;
	return dlen + 1 + zlen;
}

int tree_child_zpath(const struct tree_res *dir, const char *name, char *out,
		     size_t size)
{
	char z[ZNODENAME_MAX + 1], dpath[NAMES_MAX_RESOURCE_PATH + 1];
	int len = tree_child_znode(dir, name, z, dpath);

	if (len < 0)
		return len;
	if (!out)
		return 0;
	if ((size_t)len >= size)
		return -ENAMETOOLONG;
	snprintf(out, size, "%s/%s", dpath, z); /* fits: checked above */
	return 0;
}

enum tree_role tree_role_of(struct tree *t, uint64_t ino)
{
	return tree_res_of(t, ino)->role;
}

/* Is `name` a list directory's name (a child of .all)?  0, -ENOENT or
 * -ENAMETOOLONG (also when its own path, which the log shows, would not
 * fit a node path). */
static int tree_check_multi(struct tree *t, const char *name)
{
	const char *paths[MULTINAME_MAX_ITEMS];
	char *buf;
	int n;

	if (strlen(t->root.name) + sizeof(TREE_ALL_NAME) + strnlen(name, 256) >
	    NAMES_MAX_NODE_PATH)
		return -ENAMETOOLONG;
	buf = malloc(TREE_MULTI_BUF);
	if (!buf)
		return -ENOMEM;
	n = tree_multi_zpaths(t->root.name, name, buf, TREE_MULTI_BUF, paths);
	free(buf);
	return n < 0 ? n : 0;
}

/* The entry `key` of dir, counted. */
static int tree_enter(struct tree *t, struct tree_res *dir, const char *key,
		      enum tree_role role, uint64_t *ino)
{
	struct tree_res *r;
	int err;

	pthread_mutex_lock(&t->lock);
	err = tree_get_res_locked(t, dir, key, role, &r);
	if (err == 0) {
		r->nlookup++;
		*ino = tree_ino(t, r, TREE_DIR);
	}
	pthread_mutex_unlock(&t->lock);
	return err;
}

static int tree_enter_file(struct tree *t, struct tree_res *dir,
			   enum tree_kind kind, uint64_t *ino)
{
	pthread_mutex_lock(&t->lock);
	dir->nlookup++;
	pthread_mutex_unlock(&t->lock);
	*ino = tree_ino(t, dir, kind);
	return 0;
}

int tree_lookup(struct tree *t, uint64_t parent, const char *name,
		uint64_t *ino)
{
	struct tree_res *dir = tree_res_of(t, parent);
	char z[ZNODENAME_MAX + 1], dpath[NAMES_MAX_RESOURCE_PATH + 1];
	enum tree_kind kind = TREE_DIR;
	enum tree_name_class class;
	int err;

	if (tree_kind_of(parent) != TREE_DIR)
		return -ENOTDIR;
	if (dir->role == TREE_ROLE_ALL) {
		err = tree_check_multi(t, name);
		return err < 0 ? err
			       : tree_enter(t, dir, name, TREE_ROLE_MULTI, ino);
	}
	class = tree_classify(name, dir == &t->root, &kind);
	if (dir->role == TREE_ROLE_MULTI)
		return class == TREE_NAME_FILE && tree_kind_in_multi(kind)
			       ? tree_enter_file(t, dir, kind, ino)
			       : -ENOENT;
	switch (class) {
	case TREE_NAME_INVALID:
		return -ENOENT;
	case TREE_NAME_FILE:
		return tree_enter_file(t, dir, kind, ino);
	case TREE_NAME_ALL:
		return tree_enter(t, dir, TREE_ALL_NAME, TREE_ROLE_ALL, ino);
	case TREE_NAME_RESOURCE:
		break;
	}
	if (tree_child_znode(dir, name, z, dpath) < 0)
		return -ENAMETOOLONG;
	return tree_enter(t, dir, z, TREE_ROLE_RESOURCE, ino);
}

/* Free r and then any parent it kept alive alone. */
static void tree_drop_locked(struct tree *t, struct tree_res *r)
{
	while (r != &t->root && r->nlookup == 0 && r->children == 0) {
		struct tree_res *parent = r->parent;
		if (list_linked(&r->detached))
			list_del(&r->detached);
		else
			strtab_remove(&t->table, &r->item);
		free(r);
		parent->children--;
		r = parent;
	}
}

void tree_forget(struct tree *t, uint64_t ino, uint64_t n)
{
	struct tree_res *r = tree_res_of(t, ino);

	pthread_mutex_lock(&t->lock);
	if (r == &t->root)
		;
	else if (r->nlookup <= n)
		r->nlookup = 0;
	else
		r->nlookup -= n;
	tree_drop_locked(t, r);
	pthread_mutex_unlock(&t->lock);
}

void tree_detach(struct tree *t, uint64_t parent, const char *name)
{
	struct tree_res *dir = tree_res_of(t, parent), *r;
	char z[ZNODENAME_MAX + 1], dpath[NAMES_MAX_RESOURCE_PATH + 1];

	if (tree_child_znode(dir, name, z, dpath) < 0)
		return;
	pthread_mutex_lock(&t->lock);
	r = tree_find_locked(t, dir, z);
	if (r) {
		strtab_remove(&t->table, &r->item);
		list_add_tail(&t->detached, &r->detached);
	}
	pthread_mutex_unlock(&t->lock);
}
