/*
 * tree.h - the shape of the mount: inode numbers <-> (resource, file kind),
 * and which names are valid.
 *
 * A resource is a directory and a znode <base>/<path>.  Its inode number is
 * the address of its struct tree_res (aligned to 16); the files inside it
 * use the same address with the file kind in the low bits.  The root is
 * FUSE_ROOT_ID.  Entries live while the kernel remembers them (lookup
 * counts, released by forget) or a sub-resource needs them.
 */
#ifndef ZKL_TREE_H
#define ZKL_TREE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "list.h"
#include "names.h"
#include "strtab.h"

/*
 * File names <-> znode names.
 *
 * A file name is any bytes but NUL and '/'.  ZooKeeper refuses a path that
 * holds, once its bytes are read as UTF-8, a control character (U+0001-
 * U+001F, U+007F-U+009F), a character of U+D800-U+F8FF or U+FFF0-U+FFFF,
 * any character beyond U+FFFF (Java stores it as two surrogates), or a
 * byte that is not UTF-8 at all (it becomes U+FFFD).  So that every name a
 * shell accepts is a resource, each byte of such a character is written as
 * '%' and two upper-case hex digits; every other byte is itself.  A '%'
 * that is followed by what would read as such an escape is written %25,
 * so the mapping is one-to-one; any other '%' stays as it is ("50%",
 * "a%20b" and "%41" are their own znode names).
 *
 * Pure functions of bytes: no ZooKeeper, no FUSE.
 */

/* The longest znode name of a file name of at most 255 bytes. */
#define ZNODENAME_MAX (3 * 255)

/* Encode the file name `name` (len bytes) into out (size bytes, NUL-ended).
 * Returns the length written, or -ENAMETOOLONG if out is too small. */
int znodename_encode(const char *name, size_t len, char *out, size_t size);

/* Decode the znode name `z` into out (size bytes, NUL-ended).  Returns the
 * length written, -ENAMETOOLONG if out is too small, or -EINVAL if z is
 * not the encoding of any file name (znodename_encode would not give z
 * back: another tool's "caf%C3%A9"), so the mount does not show it. */
int znodename_decode(const char *z, char *out, size_t size);

/* How many of the len bytes at s, from the start, ZooKeeper accepts in a
 * path as they are: len if all of them. */
size_t znodename_accepted_len(const char *s, size_t len);

/*
 * The name of a multi-lock's directory, MOUNT/.all/<list>:
 * a comma-separated list of resource paths.  Inside an item, a nested
 * resource's '/' is written %2F, and a ',' or '%' that is part of a name
 * %2C or %25 (either case of hex digit); no other '%' may appear.  The
 * order of the list does not matter to the lock.
 *
 * Pure: it knows nothing of which names are valid resource names; the
 * tree checks each component of each item (tree.h).
 */

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

enum tree_kind {
	TREE_DIR = 0,     /* the resource itself */
	TREE_WRITE = 1,   /* <resource>/write */
	TREE_READ = 2,    /* <resource>/read */
	TREE_LEASE = 3,   /* <resource>/lease: one of the semaphore's N */
	TREE_LOCK = 4,    /* <resource>/lock: opens at once, for flock/fcntl */
	TREE_HOLDERS = 5, /* <resource>/holders: who holds and waits (text) */
	TREE_LIMIT = 6,   /* <resource>/limit: the semaphore's N (text, and
			   * written to set it) */
	TREE_REVOKE = 7,  /* <resource>/revoke: write-only, asks or breaks
			   * the holders (revoke.h) */
	TREE_MAXHOLD = 8, /* <resource>/maxhold: how long a hold may last
			   * (text, and written to set it; maxhold.h) */
	TREE_LAST_FILE = TREE_MAXHOLD, /* files of every resource: 1..this */
	TREE_STATUS = 9,   /* MOUNT/.status: the session (text), root only */
	TREE_METRICS = 10, /* MOUNT/.metrics: for Prometheus (text), root
			    * only */
	TREE_KIND_MAX = 15,
};

/* The read-only text files, as opposed to the lock files. */
static inline int tree_kind_is_info(enum tree_kind kind)
{
	return kind == TREE_HOLDERS || kind == TREE_STATUS ||
	       kind == TREE_METRICS;
}

/* A resource's settings: read, and written to set them. */
static inline int tree_kind_is_setting(enum tree_kind kind)
{
	return kind == TREE_LIMIT || kind == TREE_MAXHOLD;
}

/* The files whose reads come from a text taken at open (snapshot.h). */
static inline int tree_kind_is_text(enum tree_kind kind)
{
	return tree_kind_is_info(kind) || tree_kind_is_setting(kind) ||
	       kind == TREE_REVOKE;
}

/* The lock files: an open or a flock of them queues a request. */
static inline int tree_kind_is_lock(enum tree_kind kind)
{
	return kind == TREE_WRITE || kind == TREE_READ || kind == TREE_LEASE ||
	       kind == TREE_LOCK;
}

/* What a directory is: a resource, or MOUNT/.all, or one of its list
 * directories (MOUNT/.all/<r1>,<r2>: a multi-lock, tree.h), which
 * hold only write, read and lock and are no znode. */
enum tree_role {
	TREE_ROLE_RESOURCE,
	TREE_ROLE_ALL,
	TREE_ROLE_MULTI,
};

/* MOUNT/.all's name. */
#define TREE_ALL_NAME ".all"

/* An entry holds its own znode name, not its path, so that its size does
 * not grow with its depth: tree_zpath walks the parents.  A list
 * directory's name is its file name, the list (tree.h). */
struct tree_res {
	struct tree_res *parent; /* NULL for the root */
	enum tree_role role;
	/* In tree.table; key "<parent's address in hex>/<znode name>", in
	 * the same allocation. */
	struct strtab_item item;
	uint64_t nlookup;  /* kernel references to it and its files */
	uint64_t children; /* cached sub-resources pointing here */
	/* Removed by rmdir (tree_detach): no longer found by its name, in
	 * tree.detached until the kernel forgets it. */
	struct zkl_link detached;
	/* The znode name (tree.h), inside the key; for the root, the
	 * base path. */
	const char *name;
} __attribute__((aligned(16)));

struct tree {
	/* Guards the table and every nlookup/children count. */
	pthread_mutex_t lock;
	struct tree_res root;
	struct strtab table; /* every entry but the root and the detached */
	struct zkl_link detached; /* struct tree_res, removed by rmdir */
};

/* What a name means inside a resource directory. */
enum tree_name_class {
	TREE_NAME_INVALID,  /* can never exist */
	TREE_NAME_FILE,     /* one of the fixed lock file names */
	TREE_NAME_RESOURCE, /* a (sub-)resource */
	TREE_NAME_ALL,      /* MOUNT/.all (root only) */
};

/* Classify `name` as a child of a resource (is_root = 0) or of the root
 * (is_root = 1: only .status there).  *kind is set for TREE_NAME_FILE.
 * Resource names: 1-255 bytes, not starting with '.', not a file name, not
 * shaped like a lock node (ours or another tool's).  Bytes ZooKeeper
 * refuses are encoded in the znode name (tree.h). */
enum tree_name_class tree_classify(const char *name, int is_root,
				   enum tree_kind *kind);

/* The file name of a kind ("write", ..., ".status"), or NULL. */
const char *tree_kind_name(enum tree_kind kind);

/* The files of a list directory: write, read and lock. */
static inline int tree_kind_in_multi(enum tree_kind kind)
{
	return kind == TREE_WRITE || kind == TREE_READ || kind == TREE_LOCK;
}

/* The role of the directory of inode ino (of a file: of its directory). */
enum tree_role tree_role_of(struct tree *t, uint64_t ino);

/* The resources of the list directory named `list` (tree.c): their
 * znode paths under the base path `base`, written to buf (one after the
 * other), paths[i] pointing at each.  TREE_MULTI_BUF bytes of buf are
 * always enough.  Returns how many, -ENOENT if the list or one of its
 * names is invalid (as a lookup of that name would say), or
 * -ENAMETOOLONG. */
#define TREE_MULTI_BUF (MULTINAME_MAX_ITEMS * (NAMES_MAX_RESOURCE_PATH + 1))
int tree_multi_zpaths(const char *base, const char *list, char *buf,
		      size_t bufsize, const char *paths[MULTINAME_MAX_ITEMS]);

int tree_init(struct tree *t, const char *base);
void tree_destroy(struct tree *t);

/* Decode an inode number. */
struct tree_res *tree_res_of(struct tree *t, uint64_t ino);

/* The znode path of resource r into out (size bytes).  Returns its length,
 * or -ENAMETOOLONG if out is too small.  r must be referenced (its parents
 * live and do not change meanwhile). */
int tree_zpath(const struct tree_res *r, char *out, size_t size);

/* The znode path of the resource whose file name is `name` under dir into
 * out (size bytes; out may be NULL to check the length only).  Returns 0,
 * or -ENAMETOOLONG if its lock nodes' paths would exceed NAMES_MAX_NODE_PATH
 * (names.h) or out is too small. */
int tree_child_zpath(const struct tree_res *dir, const char *name, char *out,
		     size_t size);
enum tree_kind tree_kind_of(uint64_t ino);
uint64_t tree_ino(const struct tree *t, const struct tree_res *r,
		  enum tree_kind kind);

/* Look up the file name `name` in directory `parent` and count one kernel
 * reference.  Returns 0 and the child's inode number, -ENOENT for a name
 * that cannot exist, -ENAMETOOLONG, -ENOTDIR if parent is a file,
 * -ENOMEM. */
int tree_lookup(struct tree *t, uint64_t parent, const char *name,
		uint64_t *ino);

/* The kernel dropped n references to ino. */
void tree_forget(struct tree *t, uint64_t ino, uint64_t n);
/* How many resources (and list directories) the daemon keeps an entry
 * for now: those the kernel has looked up and not forgotten, and their
 * parents.  Not every name ever used: a forgotten one is freed. */
size_t tree_count(struct tree *t);

/* The resource directory `name` of `parent` was removed (rmdir): the
 * kernel now holds its inode for dead, so the next lookup of that name
 * gets a new entry and inode.  The old one stays, for the files and
 * working directories still open in it, until it is forgotten. */
void tree_detach(struct tree *t, uint64_t parent, const char *name);

#endif
