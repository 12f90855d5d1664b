/* Names and inode numbers of the mount. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "names.h"
#include "tree.h"

#include <fuse_lowlevel.h>

/* The znode path of inode ino. */
static const char *zpath_of(struct tree *t, uint64_t ino)
{
	static char path[NAMES_MAX_NODE_PATH + 1];

	cr_assert_gt(tree_zpath(tree_res_of(t, ino), path, sizeof(path)), 0);
	return path;
}

Test(tree, classifies_names)
{
	enum tree_kind kind;
	char long_name[300];

	cr_assert_eq(tree_classify("deploy", 1, &kind), TREE_NAME_RESOURCE);
	cr_assert_eq(tree_classify("write", 0, &kind), TREE_NAME_FILE);
	cr_assert_eq(kind, TREE_WRITE);
	cr_assert_eq(tree_classify("read", 0, &kind), TREE_NAME_FILE);
	cr_assert_eq(kind, TREE_READ);
	cr_assert_eq(tree_classify("write", 1, &kind), TREE_NAME_INVALID,
		     "the root holds no lock files");
	cr_assert_eq(tree_classify("", 0, &kind), TREE_NAME_INVALID);
	cr_assert_eq(tree_classify(".", 0, &kind), TREE_NAME_INVALID);
	cr_assert_eq(tree_classify("..", 0, &kind), TREE_NAME_INVALID);
	cr_assert_eq(tree_classify(".hidden", 0, &kind), TREE_NAME_INVALID);
	cr_assert_eq(tree_classify("a\tb", 0, &kind), TREE_NAME_RESOURCE,
		     "control bytes are encoded, not refused");
	cr_assert_eq(tree_classify("a\x7f", 0, &kind), TREE_NAME_RESOURCE);
	cr_assert_eq(tree_classify("\xff\xfe", 0, &kind), TREE_NAME_RESOURCE);
	cr_assert_eq(tree_classify("lock", 0, &kind), TREE_NAME_FILE);
	cr_assert_eq(kind, TREE_LOCK);
	cr_assert_eq(tree_classify("lock", 1, &kind), TREE_NAME_INVALID);
	cr_assert_eq(tree_classify("lease", 0, &kind), TREE_NAME_FILE);
	cr_assert_eq(kind, TREE_LEASE);
	cr_assert_eq(tree_classify("lease", 1, &kind), TREE_NAME_INVALID);
	cr_assert_eq(tree_classify("holders", 0, &kind), TREE_NAME_FILE);
	cr_assert_eq(kind, TREE_HOLDERS);
	cr_assert_eq(tree_classify("holders", 1, &kind), TREE_NAME_INVALID);
	cr_assert_eq(tree_classify("revoke", 0, &kind), TREE_NAME_FILE);
	cr_assert_eq(kind, TREE_REVOKE);
	cr_assert_eq(tree_classify("revoke", 1, &kind), TREE_NAME_INVALID,
		     "no resource may be called revoke");
	cr_assert_eq(tree_classify("maxhold", 0, &kind), TREE_NAME_FILE);
	cr_assert_eq(kind, TREE_MAXHOLD);
	cr_assert_eq(tree_classify("maxhold", 1, &kind), TREE_NAME_INVALID,
		     "no resource may be called maxhold");
	cr_assert_eq(tree_classify(".metrics", 1, &kind), TREE_NAME_FILE);
	cr_assert_eq(kind, TREE_METRICS);
	cr_assert_eq(tree_classify(".metrics", 0, &kind), TREE_NAME_INVALID);
	cr_assert_eq(tree_classify(".status", 1, &kind), TREE_NAME_FILE);
	cr_assert_eq(kind, TREE_STATUS);
	cr_assert_eq(tree_classify(".status", 0, &kind), TREE_NAME_INVALID,
		     ".status lives in the root only");
	cr_assert_eq(tree_classify("9f2c__lock__0000000005", 0, &kind),
		     TREE_NAME_INVALID, "another tool's lock node");
	cr_assert_eq(tree_classify("_c_0123abcd-0000-4000-8000-00000000000a"
				   "-write-0000000001",
				   0, &kind),
		     TREE_NAME_INVALID,
		     "lock-node-shaped names are not resources");
	memset(long_name, 'x', 255);
	long_name[255] = '\0';
	cr_assert_eq(tree_classify(long_name, 0, &kind), TREE_NAME_RESOURCE);
	long_name[255] = 'x';
	long_name[256] = '\0';
	cr_assert_eq(tree_classify(long_name, 0, &kind), TREE_NAME_INVALID);
	cr_assert_eq(tree_classify("über-ünïcode", 0, &kind),
		     TREE_NAME_RESOURCE);
}

Test(tree, lookup_gives_stable_inodes_and_forget_frees)
{
	struct tree t;
	uint64_t dir, dir2, file, sub;

	cr_assert_eq(tree_init(&t, "/base"), 0);
	cr_assert_eq(tree_lookup(&t, FUSE_ROOT_ID, "deploy", &dir), 0);
	cr_assert_eq(tree_lookup(&t, FUSE_ROOT_ID, "deploy", &dir2), 0);
	cr_assert_eq(dir, dir2, "one resource, one inode");
	cr_assert_str_eq(zpath_of(&t, dir), "/base/deploy");
	cr_assert_eq(tree_lookup(&t, dir, "write", &file), 0);
	cr_assert_eq(tree_kind_of(file), TREE_WRITE);
	cr_assert_eq(tree_res_of(&t, file), tree_res_of(&t, dir));
	cr_assert_eq(tree_lookup(&t, dir, "db", &sub), 0);
	cr_assert_str_eq(zpath_of(&t, sub), "/base/deploy/db");
	cr_assert_eq(tree_lookup(&t, file, "x", &sub), -ENOTDIR);
	cr_assert_eq(tree_lookup(&t, dir, "..", &sub), -ENOENT);
	cr_assert_eq(t.table.nitems, 2);
	tree_forget(&t, dir, 3); /* two dir lookups, one file lookup */
	cr_assert_eq(t.table.nitems, 2, "kept alive by its sub-resource");
	tree_forget(&t, tree_ino(&t, tree_res_of(&t, sub), TREE_DIR), 1);
	cr_assert_eq(t.table.nitems, 0);
	tree_destroy(&t);
}

Test(tree, a_resource_whose_lock_nodes_would_be_too_long_does_not_exist)
{
	struct tree t;
	char name[256];
	uint64_t ino = FUSE_ROOT_ID, last = 0;
	size_t depth = 0, zlen = strlen("/b");
	int rc = 0;

	cr_assert_eq(tree_init(&t, "/b"), 0);
	memset(name, 'n', 200);
	name[200] = '\0';
	/* Nest 201-byte components ("/" + name) until the limit says no. */
	while ((rc = tree_lookup(&t, ino, name, &ino)) == 0) {
		zlen += 201;
		depth++;
		last = ino;
		cr_assert_lt(depth, 100, "no limit on nesting");
	}
	cr_assert_eq(rc, -ENAMETOOLONG);
	cr_assert_leq(zlen, NAMES_MAX_RESOURCE_PATH);
	cr_assert_gt(zlen + 201, NAMES_MAX_RESOURCE_PATH);
	/* What is left still fits exactly. */
	name[NAMES_MAX_RESOURCE_PATH - zlen - 1] = '\0';
	cr_assert_eq(tree_lookup(&t, last, name, &ino), 0);
	cr_assert_eq(strlen(zpath_of(&t, ino)), NAMES_MAX_RESOURCE_PATH);
	cr_assert_leq(NAMES_MAX_RESOURCE_PATH + 1 + NAMES_NODE_NAME_MAX,
		      NAMES_MAX_NODE_PATH);
	tree_destroy(&t);
}

Test(tree, names_zookeeper_refuses_are_encoded_in_the_znode_path)
{
	struct tree t;
	uint64_t dir, sub, again;
	char path[NAMES_MAX_NODE_PATH + 1];

	cr_assert_eq(tree_init(&t, "/b"), 0);
	cr_assert_eq(tree_lookup(&t, FUSE_ROOT_ID, "\xf0\x9f\x9a\x80go", &dir),
		     0);
	cr_assert_str_eq(zpath_of(&t, dir), "/b/%F0%9F%9A%80go");
	cr_assert_eq(tree_lookup(&t, dir, "tab\there", &sub), 0);
	cr_assert_str_eq(zpath_of(&t, sub), "/b/%F0%9F%9A%80go/tab%09here");
	cr_assert_eq(
		tree_lookup(&t, FUSE_ROOT_ID, "\xf0\x9f\x9a\x80go", &again), 0);
	cr_assert_eq(again, dir, "one name, one inode");
	cr_assert_eq(tree_child_zpath(tree_res_of(&t, dir), "\x80", path,
				      sizeof(path)),
		     0);
	cr_assert_str_eq(path, "/b/%F0%9F%9A%80go/%80");
	tree_destroy(&t);
}

Test(tree, the_limit_counts_the_encoded_path)
{
	struct tree t;
	char name[256];
	uint64_t ino;

	cr_assert_eq(tree_init(&t, "/b"), 0);
	/* 255 bytes, 765 once encoded: under the limit alone... */
	memset(name, 0xff, 255);
	name[255] = '\0';
	cr_assert_eq(tree_lookup(&t, FUSE_ROOT_ID, name, &ino), 0);
	cr_assert_eq(strlen(zpath_of(&t, ino)), 2 + 1 + 765);
	/* ...but not twice. */
	cr_assert_eq(tree_lookup(&t, ino, name, &ino), -ENAMETOOLONG);
	tree_destroy(&t);
}

Test(tree, a_removed_directory_gets_a_new_inode_and_the_old_lives_on)
{
	struct tree t;
	uint64_t old, old_file, fresh, sub;

	cr_assert_eq(tree_init(&t, "/b"), 0);
	cr_assert_eq(tree_lookup(&t, FUSE_ROOT_ID, "job", &old), 0);
	cr_assert_eq(tree_lookup(&t, old, "write", &old_file), 0);
	cr_assert_eq(tree_lookup(&t, old, "sub", &sub), 0);
	tree_detach(&t, FUSE_ROOT_ID, "job");
	cr_assert_eq(tree_lookup(&t, FUSE_ROOT_ID, "job", &fresh), 0);
	cr_assert_neq(fresh, old, "the removed inode was handed out again");
	/* The old one still names its node, for what is open in it. */
	{
		char path[64];
		cr_assert_gt(tree_zpath(tree_res_of(&t, old_file), path,
					sizeof(path)),
			     0);
		cr_assert_str_eq(path, "/b/job");
	}
	tree_forget(&t, sub, 1);
	tree_forget(&t, old_file, 1);
	tree_forget(&t, old, 1); /* freed here (ASan) */
	tree_forget(&t, fresh, 1);
	cr_assert_eq(t.table.nitems, 0);
	tree_destroy(&t);
}
