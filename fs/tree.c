/*
 * tree.c - the mount's names (see tree.h): the inode table, which names
 * each directory holds and the rules for a resource's name, a list
 * directory's resources, and file names <-> znode names.
 */
#include "tree.h"
#include "list.h"
#include "names.h"

#include <assert.h>
#include <errno.h>
#include <fuse_lowlevel.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The inode table.
 */
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

uint64_t tree_ino(const struct tree *t, const struct tree_res *r,
		  enum tree_kind kind)
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

size_t tree_count(struct tree *t)
{
	size_t n;

	pthread_mutex_lock(&t->lock);
	n = t->table.nitems;
	for (struct zkl_link *l = t->detached.next; l != &t->detached;
	     l = l->next)
		n++;
	pthread_mutex_unlock(&t->lock);
	return n;
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

/*
 * Which names the mount's directories hold (tree.h): the
 * fixed file names, and the rules for a resource's name.
 */
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

/*
 * The resources a list directory (MOUNT/.all/<list>)
 * names, as znode paths (tree.h).  Each item is a resource path whose
 * every component must be a valid resource name, exactly as a lookup of
 * it one directory after the other would require; the whole path obeys
 * the same length limit as a single resource's.
 */
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

/*
 * Split and decode a multi-lock directory's name (see
 * tree.h).
 */
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

/*
 * File names <-> znode names (see tree.h).
 */
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
