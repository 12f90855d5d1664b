/*
 * lockfile_text.c - what read() on a lock file gives (lockfile.h): the
 * fencing token on the first line, for a multi-lock one line per
 * resource with its token, then the node, the session and the mode.
 */
#include "lockfile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* A resource path of a list as the line shows it: bytes that would split
 * or garble the line as \ooo, as holders does. */
static void lockfile_text_name(FILE *out, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c < 0x20 || c == 0x7f || c == '\\')
			fprintf(out, "\\%03o", c);
		else
			fputc(c, out);
	}
}

/* The multi-lock's lines, one per resource, in the order of its list. */
static int lockfile_text_members(FILE *out, const struct tree_res *res,
				 struct zkl_lockreq *lr)
{
	char decoded[256];
	const char *items[MULTINAME_MAX_ITEMS];
	int n = multiname_parse(res->name, decoded, sizeof(decoded), items);

	for (int i = 0; i < n; i++) {
		int64_t token;
		int err = lockreq_member_token(lr, (size_t)i, &token);
		if (err < 0)
			return err;
		lockfile_text_name(out, items[i]);
		fprintf(out, " %" PRId64 "\n", token);
	}
	return n < 0 ? -EIO : 0;
}

int lockfile_text(struct zkl_fs *fs, fuse_ino_t ino, struct zkl_lockreq *lr,
		  char **text, size_t *len)
{
	const struct tree_res *res = tree_res_of(&fs->tree, ino);
	char path[NAMES_MAX_NODE_PATH + 1];
	int64_t token, session, asked_ms;
	FILE *out;
	int err = lockreq_describe(lr, &token, path, sizeof(path), &session);

	*text = NULL;
	if (err < 0)
		return err;
	out = open_memstream(text, len);
	if (!out)
		return -ENOMEM;
	fprintf(out, "%" PRId64 "\n", token);
	if (res->role == TREE_ROLE_MULTI)
		err = lockfile_text_members(out, res, lr);
	fprintf(out, "node %s\nsession 0x%" PRIx64 "\nmode %s\n", path,
		(uint64_t)session, names_mode_str(lockreq_mode(lr)));
	if (lockreq_revoke_asked(lr, &asked_ms)) {
		/* When this host saw the request, in UTC, ISO 8601. */
		time_t t = (time_t)(asked_ms / 1000);
		struct tm tm;
		char when[32];
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ",
			 gmtime_r(&t, &tm));
		fprintf(out, "revoke requested %s\n", when);
	}
	if (fclose(out) != 0 && err == 0)
		err = -ENOMEM;
	if (err < 0) {
		free(*text);
		*text = NULL;
	}
	return err;
}
