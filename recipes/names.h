/*
 * names.h - lock node names: parse, format, order, and choose the one node
 * a waiter watches.  Pure functions of strings; no ZooKeeper, no FUSE.
 *
 * A zklockfs lock node is an EPHEMERAL_SEQUENTIAL child of a resource znode
 * named  _c_<guid>-write-<seq>  or  _c_<guid>-read-<seq>.  ZooKeeper appends
 * <seq> as a signed 32-bit decimal ("%010d"), so after 2147483647 comes
 * -2147483648; ordering uses serial-number arithmetic so that wrap keeps FIFO.
 */
#ifndef ZKL_NAMES_H
#define ZKL_NAMES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum zkl_mode { ZKL_MODE_READ, ZKL_MODE_WRITE };

/* Length of a textual GUID (8-4-4-4-12 hex digits) without its NUL. */
#define NAMES_GUID_LEN 36

/* The longest child name of a lock node of ours: "_c_", the GUID,
 * "-write-" and the sequence ZooKeeper appends ("%010d" of an int32, so
 * up to 11 characters with a sign). */
#define NAMES_NODE_NAME_MAX (3 + NAMES_GUID_LEN + 7 + 11)

/* The one limit on paths, in bytes: the whole znode path of a lock node,
 * base path included.  Every path buffer of the daemon holds this and a
 * NUL; a resource whose lock nodes would not fit does not exist
 * (ENAMETOOLONG), which also bounds how deep resources nest. */
#define NAMES_MAX_NODE_PATH 1023
#define NAMES_MAX_RESOURCE_PATH (NAMES_MAX_NODE_PATH - 1 - NAMES_NODE_NAME_MAX)

/* One parsed lock node.  `name` points into the caller's string. */
struct zkl_node {
	const char *name;
	enum zkl_mode mode;
	int32_t seq;
	const char *guid; /* NAMES_GUID_LEN bytes inside name, not NUL-ended */
};

/* "read" or "write". */
const char *names_mode_str(enum zkl_mode mode);

/* Fill `out` with a fresh random version-4 GUID and a NUL.
 * Returns 0 or -errno from getrandom(2). */
int names_guid_new(char out[NAMES_GUID_LEN + 1]);

/* Write the create-path prefix "_c_<guid>-<mode>-" (ZooKeeper appends the
 * sequence) into buf.  Returns the length, or -ENAMETOOLONG. */
int names_format_prefix(char *buf, size_t size, const char *guid,
			enum zkl_mode mode);

/* Parse one child name.  Returns 0 and fills *out for a zklockfs lock node,
 * -EINVAL for anything else (sub-resources, other tools' nodes, garbage). */
int names_parse(const char *name, struct zkl_node *out);

/* Parse a lock node another tool created: a sequential name whose suffix
 * follows one of the known lock recipes' markers -- Curator's "__WRIT__" and
 * "__READ__" and its mutex's "-lock-", kazoo's "__lock__" and "__rlock__",
 * ZooKeeper's recipe "write-" and "read-" (alone or after a prefix).
 * Returns 0 and sets *mode and *seq, or -EINVAL (zklockfs's own nodes, sub-
 * resources and anything else).  Such nodes play no part in zklockfs's
 * queue; they are shown, not obeyed. */
int names_parse_foreign(const char *name, enum zkl_mode *mode, int32_t *seq);

/* True if sequence a was issued before b, across the 2^31 wrap. */
int names_seq_before(int32_t a, int32_t b);

/* Parse every name in names[0..n) that is a lock node into out (capacity n),
 * sorted in queue order.  Returns how many were lock nodes. */
size_t names_collect(char *const *names, size_t n, struct zkl_node *out);

/* Sort parsed nodes into queue order. */
void names_sort(struct zkl_node *nodes, size_t n);

/* Index in sorted[0..n) of the node whose name equals `name`, or -1.
 * O(log n): a binary search on the sequence number. */
ssize_t names_find(const struct zkl_node *sorted, size_t n, const char *name);

/* Index of the first node in sorted[0..n) carrying `guid`, starting the
 * search at `from`, or -1. */
ssize_t names_find_guid(const struct zkl_node *sorted, size_t n, size_t from,
			const char *guid);

/* The node sorted[self] must watch before it may hold: a writer watches its
 * immediate predecessor, a reader the nearest writer ahead of it.  Nodes
 * before index `lo`, and those with gone[i] set (gone may be NULL), are
 * known to be deleted and skipped.  Returns that index, or -1 when
 * sorted[self] holds the lock now. */
ssize_t names_pick_watch(const struct zkl_node *sorted,
			 const unsigned char *gone, size_t lo, size_t self);

/* The first node in sorted[0..n) that a new request of `mode`, queued now,
 * would wait for (any node for a writer, the first writer for a reader),
 * ignoring the nodes whose GUID is one of skip[0..nskip): the caller's own.
 * Returns its index, or -1 if such a request would hold at once. */
ssize_t names_first_blocker(const struct zkl_node *sorted, size_t n,
			    enum zkl_mode mode, const char *const *skip,
			    size_t nskip);

#endif
