/* Deadlocks across hosts (waitgraph.h): the owner a lock node's identity
 * names, the mark a walker writes, and the data-field grammar both read
 * (names_data_field). */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "names.h"
#include "waitgraph.h"

#define IDENTITY \
	"host web1\npid 4121\nstart 88231\nuid 0\ncmd deploy.sh\ntime 17\n"

Test(waitgraph, an_identity_names_its_process)
{
	char key[64];

	cr_assert_eq(waitgraph_owner_key(IDENTITY, strlen(IDENTITY), key,
					 sizeof(key)),
		     (int)strlen("web1~4121~88231"));
	cr_assert_str_eq(key, "web1~4121~88231");
}

Test(waitgraph, a_node_without_a_process_has_no_owner)
{
	static const char *const none[] = {
		"",                      /* an empty node */
		"10.0.0.1",              /* Curator's client address */
		"worker 7",              /* kazoo's identifier */
		"host web1\npid 4121\n", /* no start: pid alone is reused */
		"host a~b\npid 1\nstart 2\n", /* '~' would split the key */
	};
	char key[64];

	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++)
		cr_assert_eq(waitgraph_owner_key(none[i], strlen(none[i]), key,
						 sizeof(key)),
			     -EINVAL, "%s", none[i]);
	cr_assert_eq(waitgraph_owner_key(NULL, 0, key, sizeof(key)), -EINVAL);
	cr_assert_eq(waitgraph_owner_key(IDENTITY, strlen(IDENTITY), key, 8),
		     -EINVAL, "a key that does not fit is none");
}

Test(waitgraph, a_tree_key_is_a_whole_pid_and_start_on_the_host)
{
	static const char *const bad[] = {
		"host web1\ntree 41\n",    /* no start */
		"host web1\ntree ~41\n",   /* no pid */
		"host web1\ntree 41~\n",   /* an empty start */
		"host web1\ntree 4x~41\n", /* not a number */
		"host web1\ntree 4~1~2\n", /* a third part */
		"tree 41~7\n",             /* no host */
		"host web1\ntree 123456789012345678901~7\n", /* too long */
	};
	char key[64];
	const char two[] = "host web1\ntree  41~7   42~8 \n";

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(waitgraph_tree_key(bad[i], strlen(bad[i]), 0, key,
						sizeof(key)),
			     -EINVAL, "%s", bad[i]);
	cr_assert_eq(waitgraph_tree_key(IDENTITY, strlen(IDENTITY), 0, key,
					sizeof(key)),
		     -ENOENT, "no tree line: no key");
	cr_assert_eq(waitgraph_tree_key(two, strlen(two), 1, key, sizeof(key)),
		     (int)strlen("web1~42~8"));
	cr_assert_str_eq(key, "web1~42~8", "spaces around keys are none");
	cr_assert_eq(waitgraph_tree_key(two, strlen(two), 2, key, sizeof(key)),
		     -ENOENT);
	/* The last line without its newline: read within len alone. */
	cr_assert_eq(waitgraph_tree_key(two, strlen(two) - 2, 1, key,
					sizeof(key)),
		     (int)strlen("web1~42~8"));
	cr_assert_eq(waitgraph_tree_key(two, strlen(two) - 3, 1, key,
					sizeof(key)),
		     -EINVAL, "a start cut short by len is none");
}

Test(waitgraph, the_mark_is_told_from_an_identity)
{
	const char mark[] = WAITGRAPH_MARK "web1~1~2 (sh) holds a\n";

	cr_assert(waitgraph_is_mark(mark, strlen(mark)));
	cr_assert(!waitgraph_is_mark(IDENTITY, strlen(IDENTITY)));
	cr_assert(!waitgraph_is_mark(mark, 5), "a part of a mark is none");
	cr_assert(!waitgraph_is_mark(NULL, 0));
}

Test(waitgraph, data_fields_are_whole_lines)
{
	size_t len;
	const char *v =
		names_data_field(IDENTITY, strlen(IDENTITY), "cmd", &len);

	cr_assert(v && len == strlen("deploy.sh") &&
		  memcmp(v, "deploy.sh", len) == 0);
	cr_assert_null(names_data_field(IDENTITY, strlen(IDENTITY), "pi", &len),
		       "a key is a whole word");
	cr_assert_null(names_data_field("pid", 3, "pid", &len),
		       "a key without a value");
	v = names_data_field("note x\npid 9", 12, "pid", &len);
	cr_assert(v && len == 1 && *v == '9', "the last line, unended");
}
