/*
 * names.h - the grammar of lock node names: parse any child of a resource
 * znode into what it is, and format the names a request creates.  Pure
 * functions of strings; no ZooKeeper, no FUSE.  The order of nodes and
 * what a request waits for are in lockrule.h.
 *
 * Every lock node is a sequential child; ZooKeeper appends its number as
 * "%010d" of a signed 32-bit counter, so after 2147483647 comes
 * -2147483648 and the text of a negative number is '-' and 9 or 10
 * digits.  The styles recognised, by the tool that creates them:
 *
 *   zklockfs    _c_<guid>-write-<seq>  _c_<guid>-read-<seq>
 *               _c_<guid>-lease-<seq> (a lease, beside the locks)
 *   curator     _c_<uuid>-lock-<seq>   (InterProcessMutex; also Curator's
 *               semaphore's internal lock), _c_<uuid>-__WRIT__<seq> and
 *               _c_<uuid>-__READ__<seq> (InterProcessReadWriteLock; since
 *               Curator 5.5 a downgrading reader reuses its writer's
 *               number), and in <res>/leases _c_<uuid>-lease-<seq>
 *               (InterProcessSemaphoreV2; by name alone a zklockfs lease)
 *   kazoo       <hex32>__lock__<seq>   <hex32>__rlock__<seq>
 *   zookeeper   x-<session>-<seq> (the recipe's WriteLock, in Java and
 *               C), and the shared-lock recipe's <prefix>write-<seq> and
 *               <prefix>read-<seq> (at the start or after a '-')
 *
 * Anything else -- sub-resources, other tools' data nodes -- is not a lock
 * node.
 */
#ifndef ZKL_NAMES_H
#define ZKL_NAMES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What a node asks for. */
enum zkl_mode {
	ZKL_MODE_READ,  /* shared: waits for exclusive nodes ahead */
	ZKL_MODE_WRITE, /* exclusive: waits for every node ahead */
	ZKL_MODE_LEASE, /* one of N leases (a semaphore) */
};

/* Which tool's recipe made it. */
enum zkl_style {
	ZKL_STYLE_ZKLOCKFS,
	ZKL_STYLE_CURATOR,
	ZKL_STYLE_KAZOO,
	ZKL_STYLE_ZOOKEEPER,
	ZKL_STYLE_COUNT,
};

/* Length of a textual GUID (8-4-4-4-12 hex digits) without its NUL: the
 * owner tag of zklockfs's and Curator's names.  kazoo's is 32 hex digits. */
#define NAMES_GUID_LEN 36
#define NAMES_TAG_MAX NAMES_GUID_LEN

/* The longest child name zklockfs creates, in any style: "_c_", the GUID,
 * the longest marker ("-__WRIT__", "-write-") and the sequence ZooKeeper
 * appends (up to 11 characters with a sign). */
#define NAMES_NODE_NAME_MAX (3 + NAMES_GUID_LEN + 9 + 11)

/* The one limit on paths, in bytes: the whole znode path of a lock node,
 * base path included.  Every path buffer of the daemon holds this and a
 * NUL; a resource whose lock nodes would not fit does not exist
 * (ENAMETOOLONG), which also bounds how deep resources nest. */
#define NAMES_MAX_NODE_PATH 1023
#define NAMES_MAX_RESOURCE_PATH (NAMES_MAX_NODE_PATH - 1 - NAMES_NODE_NAME_MAX)

/* One parsed lock node.  `name` and `tag` point into the caller's string. */
struct zkl_node {
	const char *name;
	enum zkl_style style;
	enum zkl_mode mode;
	int32_t seq;
	const char *tag; /* the creator's own mark, found again after a lost
			  * create reply: taglen bytes, not NUL-ended */
	size_t taglen;   /* 0 when the name carries none */
	uint32_t age;    /* in a listing: its place in time (lockrule.h) */
};

/* "read", "write" or "lease". */
const char *names_mode_str(enum zkl_mode mode);

/* The value of the line "key value" of a lock node's data (the identity a
 * mount writes: fs/identity.h), *vlen its length; NULL if it has none. */
const char *names_data_field(const char *data, size_t len, const char *key,
			     size_t *vlen);

/* "zklockfs", "curator", "kazoo" or "zookeeper". */
const char *names_style_str(enum zkl_style style);

/* Parse one child name.  Returns 0 and fills *out for a lock node of any
 * style above, -EINVAL for anything else. */
int names_parse(const char *name, struct zkl_node *out);

/* A fresh random tag for a request of `style` into out (with a NUL): a
 * version-4 GUID, or for kazoo its 32 hex digits.  Returns its length, or
 * -EINVAL for a style zklockfs does not create, or -errno from
 * getrandom(2). */
int names_tag_new(enum zkl_style style, char out[NAMES_TAG_MAX + 1]);

/* Which of a style's recipes names a node: its read-write lock (and its
 * semaphore's leases), or the mutex that guards a peer's semaphore
 * (Curator's InterProcessMutex, kazoo's Lock; see peerlease.c). */
enum names_recipe {
	NAMES_RECIPE_LOCK,
	NAMES_RECIPE_MUTEX,
};

/* Write the create-path prefix of a node of `style`, `recipe` and `mode`
 * owned by tag (ZooKeeper appends the sequence) into buf:
 * "_c_<guid>-write-", "_c_<uuid>-__READ__", "<hex32>__lock__", a mutex's
 * "_c_<uuid>-lock-", ...  A kazoo lease is the bare tag (kazoo's
 * Semaphore creates it so, not sequential: see peerlease.c).  A mutex is
 * taken for writing.  Returns its length, -ENAMETOOLONG, or -EINVAL for
 * a combination that style has no name for (no mutex in the zklockfs
 * and zookeeper styles). */
int names_format_prefix(char *buf, size_t size, enum zkl_style style,
			enum names_recipe recipe, enum zkl_mode mode,
			const char *tag);

/* Where the semaphore of a peer's layout keeps its nodes, for the
 * resource znode `res` (see peerlease.c): */
enum names_peer_dir {
	NAMES_PEER_LEASES, /* Curator "<res>/leases", kazoo res itself */
	NAMES_PEER_LOCK, /* the tool's lock: "<res>/locks", "<res>-__lock__" */
};
/* That directory's path into out.  Returns 0, -ENAMETOOLONG, or -EINVAL
 * for the zklockfs and zookeeper styles, which have no such layout. */
int names_peer_dir(enum zkl_style style, enum names_peer_dir which,
		   const char *res, char out[NAMES_MAX_NODE_PATH + 1]);

/* Parse a child of the lease directory of `style`'s layout that is a
 * lease there: Curator's _c_<uuid>-lease-<seq>, or kazoo's bare 32
 * lowercase hex digits (not sequential: seq 0, the name is its tag).
 * Returns 0 and fills *out (style, mode lease), or -EINVAL. */
int names_parse_peer_lease(enum zkl_style style, const char *name,
			   struct zkl_node *out);

#endif
