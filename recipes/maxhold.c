/*
 * maxhold.c - parse, edit and format the table of hold limits (maxhold.h).
 */
#include "maxhold.h"
#include "decimal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int maxhold_parse_value(const char *buf, size_t len, unsigned *secs)
{
	return decimal_parse(buf, len, MAXHOLD_MAX, secs);
}

/* The entry for res, or where it would go (*found 0). */
static size_t maxhold_find(const struct maxhold_table *t, const char *res,
			   int *found)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(t->e[mid].res, res);
		if (c == 0) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = 0;
	return lo;
}

int maxhold_table_set(struct maxhold_table *t, const char *res, unsigned secs)
{
	int found;
	size_t i = maxhold_find(t, res, &found);
	struct maxhold_entry *grown;
	char *copy;

	if (found && secs > 0) {
		t->e[i].secs = secs;
	} else if (found) {
		free(t->e[i].res);
		memmove(&t->e[i], &t->e[i + 1],
			(t->n - i - 1) * sizeof(t->e[0]));
		t->n--;
	} else if (secs > 0) {
		copy = strdup(res);
		grown = copy ? realloc(t->e, (t->n + 1) * sizeof(t->e[0]))
			     : NULL;
		if (!grown) {
			free(copy);
			return -ENOMEM;
		}
		t->e = grown;
		memmove(&t->e[i + 1], &t->e[i], (t->n - i) * sizeof(t->e[0]));
		t->e[i] = (struct maxhold_entry){ .res = copy, .secs = secs };
		t->n++;
	}
	return 0;
}

/* One line (without its newline) into (*secs, res), or -EINVAL. */
static int maxhold_parse_line(const char *line, size_t len, unsigned *secs,
			      char **res)
{
	const char *space = memchr(line, ' ', len);

	if (!space || space == line || space + 1 == line + len ||
	    maxhold_parse_value(line, (size_t)(space - line), secs) < 0 ||
	    *secs == 0 ||
	    memchr(space + 1, '\0', len - (size_t)(space + 1 - line)))
		return -EINVAL;
	*res = strndup(space + 1, len - (size_t)(space + 1 - line));
	return *res ? 0 : -ENOMEM;
}

/* A line parsed, with its place: of two for one resource, the later
 * counts. */
struct maxhold_line {
	struct maxhold_entry e;
	size_t at;
};

static int maxhold_line_cmp(const void *a, const void *b)
{
	const struct maxhold_line *x = a, *y = b;
	int c = strcmp(x->e.res, y->e.res);

	if (c != 0)
		return c;
	return x->at < y->at ? -1 : x->at > y->at;
}

/* Sort the lines and keep the last of each resource's, into t: n log n,
 * whatever order another client wrote them in. */
static int maxhold_table_from(struct maxhold_line *lines, size_t n,
			      struct maxhold_table *t)
{
	t->e = n ? malloc(n * sizeof(t->e[0])) : NULL;
	if (n && !t->e)
		return -ENOMEM;
	if (n > 1) /* lines is NULL when there are none */
		qsort(lines, n, sizeof(lines[0]), maxhold_line_cmp);
	for (size_t i = 0; i < n; i++) {
		if (i + 1 < n &&
		    strcmp(lines[i].e.res, lines[i + 1].e.res) == 0)
			free(lines[i].e.res);
		else
			t->e[t->n++] = lines[i].e;
	}
	return 0;
}

int maxhold_table_parse(const char *data, size_t len, struct maxhold_table *t)
{
	struct maxhold_line *lines = NULL, *grown;
	size_t n = 0, room = 0;
	int skipped = 0, err = 0;

	memset(t, 0, sizeof(*t));
	while (data && len > 0 && err == 0) {
		const char *nl = memchr(data, '\n', len);
		size_t linelen = nl ? (size_t)(nl - data) : len;
		struct maxhold_line line = { .at = n };

		err = maxhold_parse_line(data, linelen, &line.e.secs,
					 &line.e.res);
		if (err == -EINVAL) {
			skipped++;
			err = 0;
		} else if (err == 0 && n == room) {
			room = room ? 2 * room : 16;
			grown = realloc(lines, room * sizeof(lines[0]));
			if (!grown) {
				free(line.e.res);
				err = -ENOMEM;
			}
			lines = grown ? grown : lines;
		}
		if (err == 0 && line.e.res)
			lines[n++] = line;
		len -= linelen + (nl ? 1 : 0);
		data += linelen + (nl ? 1 : 0);
	}
	if (err == 0)
		err = maxhold_table_from(lines, n, t);
	if (err < 0)
		for (size_t i = 0; i < n; i++)
			free(lines[i].e.res);
	free(lines);
	return err < 0 ? err : skipped;
}

void maxhold_table_free(struct maxhold_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->e[i].res);
	free(t->e);
	memset(t, 0, sizeof(*t));
}

unsigned maxhold_table_lookup(const struct maxhold_table *t, const char *res)
{
	int found;
	size_t i = maxhold_find(t, res, &found);

	return found ? t->e[i].secs : 0;
}

size_t maxhold_table_text_len(const struct maxhold_table *t)
{
	size_t len = 0;
	char digits[16];

	for (size_t i = 0; i < t->n; i++)
		len += (size_t)snprintf(digits, sizeof(digits), "%u",
					t->e[i].secs) +
		       strlen(t->e[i].res) + 2;
	return len;
}

int maxhold_table_format(const struct maxhold_table *t, char **out, size_t *len)
{
	FILE *f;

	*out = NULL;
	*len = 0;
	if (t->n == 0)
		return 0;
	f = open_memstream(out, len);
	if (!f)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++)
		fprintf(f, "%u %s\n", t->e[i].secs, t->e[i].res);
	if (fclose(f) != 0) {
		free(*out);
		*out = NULL;
		*len = 0;
		return -ENOMEM;
	}
	return 0;
}

int64_t maxhold_grace_ms(unsigned secs)
{
	int64_t grace = (int64_t)secs * 100; /* a tenth, in ms */

	if (grace < MAXHOLD_GRACE_MIN_MS)
		return MAXHOLD_GRACE_MIN_MS;
	return grace > MAXHOLD_GRACE_MAX_MS ? MAXHOLD_GRACE_MAX_MS : grace;
}
