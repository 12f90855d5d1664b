/* The grammar of lock node names: every style parses into what it is, and
 * look-alikes are not lock nodes. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "names.h"

#define G1 "0123abcd-0000-4000-8000-00000000000a"
#define G2 "0123abcd-0000-4000-8000-00000000000b"
#define K1 "9f2c0123abcd40008000000000000000"

static const struct {
	const char *name;
	enum zkl_style style;
	enum zkl_mode mode;
	int32_t seq;
	const char *tag; /* "" for none */
} parsed[] = {
	{ "_c_" G1 "-write-0000000042", ZKL_STYLE_ZKLOCKFS, ZKL_MODE_WRITE, 42,
	  G1 },
	{ "_c_" G2 "-read-0000000007", ZKL_STYLE_ZKLOCKFS, ZKL_MODE_READ, 7,
	  G2 },
	{ "_c_" G1 "-write--2147483648", ZKL_STYLE_ZKLOCKFS, ZKL_MODE_WRITE,
	  INT32_MIN, G1 },
	{ "_c_" G1 "-write-2147483647", ZKL_STYLE_ZKLOCKFS, ZKL_MODE_WRITE,
	  INT32_MAX, G1 },
	{ "_c_" G1 "-read--000000001", ZKL_STYLE_ZKLOCKFS, ZKL_MODE_READ, -1,
	  G1 },
	/* Curator */
	{ "_c_" G1 "-lock-0000000007", ZKL_STYLE_CURATOR, ZKL_MODE_WRITE, 7,
	  G1 },
	{ "_c_" G1 "-__WRIT__0000000003", ZKL_STYLE_CURATOR, ZKL_MODE_WRITE, 3,
	  G1 },
	{ "_c_" G1 "-__READ__0000000004", ZKL_STYLE_CURATOR, ZKL_MODE_READ, 4,
	  G1 },
	/* Curator's semaphore names its leases so too, in <res>/leases. */
	{ "_c_" G2 "-lease-0000000011", ZKL_STYLE_ZKLOCKFS, ZKL_MODE_LEASE, 11,
	  G2 },
	{ "lock-0000000012", ZKL_STYLE_CURATOR, ZKL_MODE_WRITE, 12, "" },
	{ "_c_" G1 "-lock--2147483648", ZKL_STYLE_CURATOR, ZKL_MODE_WRITE,
	  INT32_MIN, G1 },
	/* kazoo */
	{ K1 "__lock__0000000005", ZKL_STYLE_KAZOO, ZKL_MODE_WRITE, 5, K1 },
	{ K1 "__rlock__0000000006", ZKL_STYLE_KAZOO, ZKL_MODE_READ, 6, K1 },
	{ K1 "__lock__-2147483647", ZKL_STYLE_KAZOO, ZKL_MODE_WRITE,
	  INT32_MIN + 1, K1 },
	/* ZooKeeper's recipes */
	{ "x-72057594037927936-0000000001", ZKL_STYLE_ZOOKEEPER, ZKL_MODE_WRITE,
	  1, "72057594037927936" },
	{ "x-0100000123abcdef-0000000002", ZKL_STYLE_ZOOKEEPER, ZKL_MODE_WRITE,
	  2, "0100000123abcdef" },
	{ "x--72057594037927936-0000000003", ZKL_STYLE_ZOOKEEPER,
	  ZKL_MODE_WRITE, 3, "-72057594037927936" },
	{ "write-0000000008", ZKL_STYLE_ZOOKEEPER, ZKL_MODE_WRITE, 8, "" },
	{ "read-0000000009", ZKL_STYLE_ZOOKEEPER, ZKL_MODE_READ, 9, "" },
	{ "x-read-0000000010", ZKL_STYLE_ZOOKEEPER, ZKL_MODE_READ, 10, "x" },
	{ "write-1000000001", ZKL_STYLE_ZOOKEEPER, ZKL_MODE_WRITE, 1000000001,
	  "" },
	/* ours with a tag that is not a GUID: the recipe's shape */
	{ "_c_nope-write-0000000001", ZKL_STYLE_ZOOKEEPER, ZKL_MODE_WRITE, 1,
	  "_c_nope" },
};

Test(names, every_style_parses_into_what_it_is)
{
	for (size_t i = 0; i < sizeof(parsed) / sizeof(parsed[0]); i++) {
		const char *name = parsed[i].name;
		struct zkl_node n;
		cr_assert_eq(names_parse(name, &n), 0, "%s not parsed", name);
		cr_expect_eq(n.style, parsed[i].style, "%s: style %s", name,
			     names_style_str(n.style));
		cr_expect_eq(n.mode, parsed[i].mode, "%s: mode %s", name,
			     names_mode_str(n.mode));
		cr_expect_eq(n.seq, parsed[i].seq, "%s: seq %d", name, n.seq);
		cr_expect_eq(n.taglen, strlen(parsed[i].tag), "%s: tag '%.*s'",
			     name, (int)n.taglen, n.tag ? n.tag : "");
		if (n.taglen)
			cr_expect_eq(memcmp(n.tag, parsed[i].tag, n.taglen), 0,
				     "%s", name);
		cr_expect_eq(n.name, name);
	}
}

Test(names, look_alikes_are_not_lock_nodes)
{
	static const char *const bad[] = {
		"",
		"deploy",
		"backup0000000001",
		"overwrite-0000000001", /* "write-" inside a word */
		"write-000000001",      /* nine digits */
		"write-00000000001",    /* eleven */
		"write-00000000x1",
		"write-2147483648", /* past int32 */
		"write--2147483649",
		"write--0000000001", /* not "%010d" of -1 */
		"write- 000000001",
		"write-+000000001",
		"__lock__",
		"_c_" G1 "-write-",
		"_c_" G1 "-writ-0000000001",
		"x-zz-0000000001", /* not a session id */
		"x--0000000001",
		"lockx0000000001",
	};
	struct zkl_node n;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(names_parse(bad[i], &n), -EINVAL,
			     "'%s' should not parse as a lock node", bad[i]);
}

Test(names, a_guid_in_the_wrong_case_or_place_is_no_tag)
{
	struct zkl_node n;

	cr_assert_eq(names_parse("_c_0123ABCD-0000-4000-8000-00000000000a"
				 "-lock-0000000001",
				 &n),
		     0);
	cr_assert_eq(n.style, ZKL_STYLE_CURATOR);
	cr_assert_eq(n.taglen, 0, "not a protected-mode GUID");
	cr_assert_eq(names_parse("x_c_" G1 "-__READ__0000000001", &n), 0);
	cr_assert_eq(n.taglen, 0);
}

Test(names, formats_what_each_style_creates)
{
	static const struct {
		enum zkl_style style;
		enum zkl_mode mode;
		const char *tag, *prefix;
	} fmt[] = {
		{ ZKL_STYLE_ZKLOCKFS, ZKL_MODE_READ, G1, "_c_" G1 "-read-" },
		{ ZKL_STYLE_ZKLOCKFS, ZKL_MODE_WRITE, G1, "_c_" G1 "-write-" },
		{ ZKL_STYLE_ZKLOCKFS, ZKL_MODE_LEASE, G1, "_c_" G1 "-lease-" },
		{ ZKL_STYLE_CURATOR, ZKL_MODE_WRITE, G2, "_c_" G2 "-__WRIT__" },
		{ ZKL_STYLE_CURATOR, ZKL_MODE_READ, G2, "_c_" G2 "-__READ__" },
		{ ZKL_STYLE_KAZOO, ZKL_MODE_WRITE, K1, K1 "__lock__" },
		{ ZKL_STYLE_KAZOO, ZKL_MODE_READ, K1, K1 "__rlock__" },
	};
	char buf[128], name[160];
	struct zkl_node n;

	for (size_t i = 0; i < sizeof(fmt) / sizeof(fmt[0]); i++) {
		int len = names_format_prefix(buf, sizeof(buf), fmt[i].style,
					      NAMES_RECIPE_LOCK, fmt[i].mode,
					      fmt[i].tag);
		cr_assert_eq(len, (int)strlen(fmt[i].prefix));
		cr_assert_str_eq(buf, fmt[i].prefix);
		/* What ZooKeeper makes of it parses back to the same. */
		snprintf(name, sizeof(name), "%s%010d", buf, -5);
		cr_assert_eq(names_parse(name, &n), 0, "%s", name);
		cr_assert_eq(n.style, fmt[i].style, "%s", name);
		cr_assert_eq(n.mode, fmt[i].mode, "%s", name);
		cr_assert_eq(n.seq, -5, "%s", name);
		cr_assert_eq(n.taglen, strlen(fmt[i].tag), "%s", name);
		cr_assert_leq(strlen(name), NAMES_NODE_NAME_MAX);
	}
	/* Curator's semaphore and ours name a lease alike (apart from place). */
	cr_assert_eq(names_format_prefix(buf, sizeof(buf), ZKL_STYLE_CURATOR,
					 NAMES_RECIPE_LOCK, ZKL_MODE_LEASE, G2),
		     (int)strlen("_c_" G2 "-lease-"));
	cr_assert_str_eq(buf, "_c_" G2 "-lease-");
	cr_assert_eq(names_format_prefix(buf, 10, ZKL_STYLE_ZKLOCKFS,
					 NAMES_RECIPE_LOCK, ZKL_MODE_READ, G1),
		     -ENAMETOOLONG);
	/* kazoo's semaphore's lease is its tag, not sequential: no lock
	 * node by name. */
	cr_assert_eq(names_format_prefix(buf, sizeof(buf), ZKL_STYLE_KAZOO,
					 NAMES_RECIPE_LOCK, ZKL_MODE_LEASE, K1),
		     (int)strlen(K1));
	cr_assert_str_eq(buf, K1);
	cr_assert_eq(names_parse(K1, &n), -EINVAL);
	/* The peers' semaphores' own locks. */
	cr_assert_eq(names_format_prefix(buf, sizeof(buf), ZKL_STYLE_CURATOR,
					 NAMES_RECIPE_MUTEX, ZKL_MODE_WRITE,
					 G2),
		     (int)strlen("_c_" G2 "-lock-"));
	cr_assert_str_eq(buf, "_c_" G2 "-lock-");
	snprintf(name, sizeof(name), "%s%010d", buf, 3);
	cr_assert_eq(names_parse(name, &n), 0);
	cr_assert(n.style == ZKL_STYLE_CURATOR && n.mode == ZKL_MODE_WRITE);
	cr_assert_eq(names_format_prefix(buf, sizeof(buf), ZKL_STYLE_KAZOO,
					 NAMES_RECIPE_MUTEX, ZKL_MODE_WRITE,
					 K1),
		     (int)strlen(K1 "__lock__"));
	cr_assert_str_eq(buf, K1 "__lock__");
	cr_assert_eq(names_format_prefix(buf, sizeof(buf), ZKL_STYLE_ZKLOCKFS,
					 NAMES_RECIPE_MUTEX, ZKL_MODE_WRITE,
					 G1),
		     -EINVAL);
	cr_assert_eq(names_format_prefix(buf, 8, ZKL_STYLE_KAZOO,
					 NAMES_RECIPE_MUTEX, ZKL_MODE_WRITE,
					 K1),
		     -ENAMETOOLONG);
	cr_assert_eq(names_format_prefix(buf, sizeof(buf), ZKL_STYLE_ZOOKEEPER,
					 NAMES_RECIPE_LOCK, ZKL_MODE_WRITE,
					 "1"),
		     -EINVAL);
}

Test(names, fresh_tags_are_well_formed_and_differ)
{
	char a[NAMES_TAG_MAX + 1], b[NAMES_TAG_MAX + 1], name[128];
	struct zkl_node n;

	cr_assert_eq(names_tag_new(ZKL_STYLE_ZKLOCKFS, a), NAMES_GUID_LEN);
	cr_assert_eq(names_tag_new(ZKL_STYLE_ZKLOCKFS, b), NAMES_GUID_LEN);
	cr_assert_str_neq(a, b);
	snprintf(name, sizeof(name), "_c_%s-write-0000000001", a);
	cr_assert_eq(names_parse(name, &n), 0, "guid %s not accepted", a);
	cr_assert_eq(n.style, ZKL_STYLE_ZKLOCKFS);
	cr_assert_eq(names_tag_new(ZKL_STYLE_KAZOO, a), 32);
	cr_assert_eq(strspn(a, "0123456789abcdef"), 32, "%s", a);
	cr_assert_eq(names_tag_new(ZKL_STYLE_ZOOKEEPER, a), -EINVAL);
}

Test(names, the_peers_semaphore_layouts)
{
	char dir[NAMES_MAX_NODE_PATH + 1], res[NAMES_MAX_NODE_PATH + 1];
	struct zkl_node n;

	static const struct {
		enum zkl_style style;
		enum names_peer_dir which;
		const char *path;
	} dirs[] = {
		{ ZKL_STYLE_CURATOR, NAMES_PEER_LEASES, "/b/r/leases" },
		{ ZKL_STYLE_CURATOR, NAMES_PEER_LOCK, "/b/r/locks" },
		{ ZKL_STYLE_KAZOO, NAMES_PEER_LEASES, "/b/r" },
		{ ZKL_STYLE_KAZOO, NAMES_PEER_LOCK, "/b/r-__lock__" },
	};

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		cr_assert_eq(names_peer_dir(dirs[i].style, dirs[i].which,
					    "/b/r", dir),
			     0);
		cr_assert_str_eq(dir, dirs[i].path);
	}
	cr_assert_eq(names_peer_dir(ZKL_STYLE_ZKLOCKFS, NAMES_PEER_LOCK, "/b/r",
				    dir),
		     -EINVAL);
	memset(res, 'r', sizeof(res) - 1);
	res[0] = '/';
	res[NAMES_MAX_NODE_PATH - 2] = '\0'; /* room for 2 more, not 6 */
	cr_assert_eq(names_peer_dir(ZKL_STYLE_CURATOR, NAMES_PEER_LOCK, res,
				    dir),
		     -ENAMETOOLONG);

	cr_assert_eq(names_parse_peer_lease(ZKL_STYLE_CURATOR,
					    "_c_" G1 "-lease-0000000003", &n),
		     0);
	cr_assert_eq(n.style, ZKL_STYLE_CURATOR, "in leases/: Curator's");
	cr_assert_eq(n.mode, ZKL_MODE_LEASE);
	cr_assert_eq(n.seq, 3);
	cr_assert_eq(names_parse_peer_lease(ZKL_STYLE_CURATOR,
					    "_c_" G1 "-lock-0000000003", &n),
		     -EINVAL);
	cr_assert_eq(names_parse_peer_lease(ZKL_STYLE_KAZOO, K1, &n), 0);
	cr_assert_eq(n.style, ZKL_STYLE_KAZOO);
	cr_assert_eq(n.mode, ZKL_MODE_LEASE);
	cr_assert_eq(n.taglen, 32);
	cr_assert_eq(names_parse_peer_lease(ZKL_STYLE_KAZOO, K1 "0", &n),
		     -EINVAL);
	cr_assert_eq(names_parse_peer_lease(ZKL_STYLE_KAZOO,
					    "9F2C0123ABCD40008000000000000000",
					    &n),
		     -EINVAL, "kazoo's uuid4().hex is lower case");
	cr_assert_eq(names_parse_peer_lease(ZKL_STYLE_KAZOO, "sub", &n),
		     -EINVAL);
	cr_assert_eq(names_parse_peer_lease(ZKL_STYLE_ZKLOCKFS,
					    "_c_" G1 "-lease-0000000003", &n),
		     -EINVAL);
}
