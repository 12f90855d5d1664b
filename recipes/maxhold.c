/*
 * maxhold.c - hold limits (maxhold.h): their table parsed, edited and
 * formatted; a resource's limit read, and one stored in the table znode;
 * the session's copy of the table, loaded at each connection and kept
 * current by its watch.  The sweep that asks, then breaks, a hold that
 * outlasts its limit is the request's side: holdlimit.c.
 */
#include "maxhold.h"
#include "decimal.h"
#include "internal.h"
#include "zkerr.h"
#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

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

/*
 * Read a resource's hold limit from the table znode, and
 * store one (maxhold.h).
 *
 * Storing is a read, an edit and a write conditional on the version read
 * (a create when there was no table, a delete when it becomes empty): of
 * two hosts writing at once one wins, and the other starts over from a
 * fresh read, with its edits again.  A mount sends one such round at a
 * time, with every edit asked so far in it, so that however many of its
 * users write limits at once, it is one contender: a round that lost, to
 * another host that won, is sent again, at most MAXHOLD_ATTEMPTS times.
 */
#define MAXHOLD_ATTEMPTS 64

/* One edit asked: in s->maxhold_stores until a round takes it. */
struct maxhold_edit {
	struct zkl_link link;
	maxhold_stored_fn cb;
	void *arg;
	unsigned secs;
	char res[]; /* relative to the base */
};

/* The round in flight (one per session): its edits and its attempts. */
struct maxhold_round {
	struct zkl_session *s;
	struct zkl_link edits;
	int attempts;
	char *text; /* the table to write, while it is written */
	char path[];
};

/* A read: the limit of one resource. */
struct maxhold_query {
	maxhold_read_fn cb;
	void *arg;
	const char *res; /* in path, after the table's path and the base */
	char path[];
};

static void maxhold_path(const struct zkl_session *s, char *out, size_t size)
{
	snprintf(out, size, "%s/%s", s->base, MAXHOLD_NODE);
}

/* dir's name relative to the base, or NULL if it cannot be in the table
 * (not under the base, or a newline in it). */
static const char *maxhold_res_of(const struct zkl_session *s, const char *dir)
{
	size_t n = strlen(s->base);

	if (strncmp(dir, s->base, n) != 0 || dir[n] != '/' || strchr(dir, '\n'))
		return NULL;
	return dir + n + 1;
}

/* ---- reading ------------------------------------------------------------ */

static void maxhold_on_read(int rc, const char *value, int len,
			    const struct Stat *st, const void *data)
{
	struct maxhold_query *q = (struct maxhold_query *)data;
	struct maxhold_table t;
	unsigned secs = 0;
	int err = rc == ZNONODE ? 0 : zkerr_errno(rc);

	(void)st;
	if (rc == ZOK) {
		err = maxhold_table_parse(value, len > 0 ? (size_t)len : 0, &t);
		if (err >= 0) {
			secs = maxhold_table_lookup(&t, q->res);
			maxhold_table_free(&t);
			err = 0;
		}
	}
	q->cb(err, secs, q->arg);
	free(q);
}

int maxhold_read(struct zkl_session *s, const char *dir, maxhold_read_fn cb,
		 void *arg)
{
	struct zkl_link notify;
	const char *res = maxhold_res_of(s, dir);
	size_t pathlen = strlen(s->base) + sizeof(MAXHOLD_NODE) + 1;
	struct maxhold_query *q;
	int rc;

	if (!res)
		return -EINVAL;
	q = malloc(sizeof(*q) + pathlen + strlen(res) + 1);
	if (!q)
		return -ENOMEM;
	q->cb = cb;
	q->arg = arg;
	maxhold_path(s, q->path, pathlen);
	strcpy(q->path + pathlen, res);
	q->res = q->path + pathlen;
	session_enter(s, &notify);
	rc = zoo_aget(s->zh, q->path, 0, maxhold_on_read, q);
	session_leave(s, &notify);
	if (rc != ZOK) {
		free(q);
		return zkerr_errno(rc);
	}
	return 0;
}

/* ---- storing ------------------------------------------------------------ */

static void maxhold_on_got(int rc, const char *value, int len,
			   const struct Stat *st, const void *data);
static void maxhold_next_round(struct zkl_session *s);

/* Send the round's read (again), with the edits asked since.  Returns
 * ZooKeeper's code. */
static int maxhold_send_get(struct maxhold_round *r)
{
	struct zkl_link notify;
	struct zkl_session *s = r->s;
	int rc;

	session_enter(s, &notify);
	while (!list_empty(&s->maxhold_stores)) {
		struct zkl_link *l = s->maxhold_stores.next;
		list_del(l);
		list_add_tail(&r->edits, l);
	}
	rc = zoo_aget(s->zh, r->path, 0, maxhold_on_got, r);
	session_leave(s, &notify);
	return rc;
}

/* Tell each edit of the list err, and free it.  No lock held. */
static void maxhold_tell_all(struct zkl_link *edits, int err)
{
	while (!list_empty(edits)) {
		struct maxhold_edit *e = ZKL_CONTAINER_OF(
			edits->next, struct maxhold_edit, link);
		list_del(&e->link);
		e->cb(err, e->arg);
		free(e);
	}
}

/* Tell each edit of the round err, free it, and start the next round. */
static void maxhold_finish(struct maxhold_round *r, int err)
{
	struct zkl_session *s = r->s;

	maxhold_tell_all(&r->edits, err);
	free(r->text);
	free(r);
	maxhold_next_round(s);
}

/* A conditional write's answer: done, or lost to another host (again). */
static void maxhold_on_written(struct maxhold_round *r, int rc)
{
	int lost = rc == ZBADVERSION || rc == ZNODEEXISTS || rc == ZNONODE;

	free(r->text);
	r->text = NULL;
	if (lost && ++r->attempts < MAXHOLD_ATTEMPTS) {
		rc = maxhold_send_get(r);
		if (rc == ZOK)
			return;
	} else if (lost) {
		return maxhold_finish(r, -EBUSY);
	}
	maxhold_finish(r, zkerr_errno(rc));
}

static void maxhold_on_set(int rc, const struct Stat *st, const void *data)
{
	(void)st;
	maxhold_on_written((struct maxhold_round *)data, rc);
}

static void maxhold_on_created(int rc, const char *name, const void *data)
{
	(void)name;
	maxhold_on_written((struct maxhold_round *)data, rc);
}

static void maxhold_on_deleted(int rc, const void *data)
{
	maxhold_on_written((struct maxhold_round *)data, rc);
}

/* Write the table edited: on the version read (-1: there was none); an
 * empty one is deleted. */
static int maxhold_send_write(struct maxhold_round *r, int version, size_t len)
{
	struct zkl_link notify;
	struct zkl_session *s = r->s;
	int rc;

	session_enter(s, &notify);
	if (len == 0)
		rc = zoo_adelete(s->zh, r->path, version, maxhold_on_deleted,
				 r);
	else if (version < 0)
		rc = zoo_acreate(s->zh, r->path, r->text, (int)len, s->acl,
				 ZOO_PERSISTENT, maxhold_on_created, r);
	else
		rc = zoo_aset(s->zh, r->path, r->text, (int)len, version,
			      maxhold_on_set, r);
	session_leave(s, &notify);
	return rc;
}

/* Apply edit e to t, unless it makes the table too large: then it is
 * taken out of the round into `refused`, and t is as it was. */
static int maxhold_edit_one(struct maxhold_table *t, struct maxhold_edit *e,
			    struct zkl_link *refused)
{
	unsigned was = maxhold_table_lookup(t, e->res);
	int err = maxhold_table_set(t, e->res, e->secs);

	if (err < 0 || maxhold_table_text_len(t) <= MAXHOLD_TABLE_MAX)
		return err;
	list_del(&e->link);
	list_add_tail(refused, &e->link);
	return maxhold_table_set(t, e->res, was); /* was there: no room */
}

/* The table as read, with the round's edits applied, as text; the edits
 * that would make it too large are refused, each alone. */
static int maxhold_edit_all(struct maxhold_round *r, const char *value,
			    size_t len, size_t *textlen,
			    struct zkl_link *refused)
{
	struct maxhold_table t;
	int err = maxhold_table_parse(value, len, &t);

	if (err < 0)
		return err;
	err = 0;
	for (struct zkl_link *l = r->edits.next, *next; l != &r->edits && !err;
	     l = next) {
		next = l->next;
		err = maxhold_edit_one(
			&t, ZKL_CONTAINER_OF(l, struct maxhold_edit, link),
			refused);
	}
	if (err == 0)
		err = maxhold_table_format(&t, &r->text, textlen);
	maxhold_table_free(&t);
	return err;
}

static void maxhold_on_got(int rc, const char *value, int len,
			   const struct Stat *st, const void *data)
{
	struct maxhold_round *r = (struct maxhold_round *)data;
	struct zkl_link refused;
	size_t textlen = 0;
	int err;

	if (rc != ZOK && rc != ZNONODE)
		return maxhold_finish(r, zkerr_errno(rc));
	list_init(&refused);
	err = maxhold_edit_all(r, rc == ZOK ? value : NULL,
			       rc == ZOK && len > 0 ? (size_t)len : 0, &textlen,
			       &refused);
	maxhold_tell_all(&refused, -ENOSPC);
	if (err < 0)
		return maxhold_finish(r, err);
	if (textlen == 0 && rc == ZNONODE) /* no table, none wanted */
		return maxhold_finish(r, 0);
	rc = maxhold_send_write(r, rc == ZOK ? st->version : -1, textlen);
	if (rc != ZOK)
		maxhold_finish(r, zkerr_errno(rc));
}

/* Start a round with the edits asked so far, if there are any; else the
 * session has none in flight any more. */
static void maxhold_next_round(struct zkl_session *s)
{
	struct zkl_link notify;
	size_t pathlen = strlen(s->base) + sizeof(MAXHOLD_NODE) + 1;
	struct maxhold_round *r = NULL;
	int rc;

	struct zkl_link failed;

	list_init(&failed);
	session_enter(s, &notify);
	s->maxhold_storing = !list_empty(&s->maxhold_stores);
	if (s->maxhold_storing && !(r = calloc(1, sizeof(*r) + pathlen))) {
		list_move_all(&s->maxhold_stores, &failed);
		s->maxhold_storing = 0;
	}
	session_leave(s, &notify);
	if (!r) /* none asked, or out of memory */
		return maxhold_tell_all(&failed, -ENOMEM);
	r->s = s;
	list_init(&r->edits);
	maxhold_path(s, r->path, pathlen);
	rc = maxhold_send_get(r);
	if (rc != ZOK)
		maxhold_finish(r, zkerr_errno(rc));
}

int maxhold_store(struct zkl_session *s, const char *dir, unsigned secs,
		  maxhold_stored_fn cb, void *arg)
{
	struct zkl_link notify;
	const char *res = maxhold_res_of(s, dir);
	struct maxhold_edit *e;
	int start;

	if (!res)
		return -EINVAL;
	e = malloc(sizeof(*e) + strlen(res) + 1);
	if (!e)
		return -ENOMEM;
	e->cb = cb;
	e->arg = arg;
	e->secs = secs;
	strcpy(e->res, res);
	session_enter(s, &notify);
	list_add_tail(&s->maxhold_stores, &e->link);
	start = !s->maxhold_storing;
	s->maxhold_storing = 1;
	session_leave(s, &notify);
	if (start)
		maxhold_next_round(s);
	return 0;
}

/*
 * The hold limits as this session knows them: the
 * table znode <base>/.maxhold (maxhold.h) read at each connection and
 * again whenever its watch fires, so that a grant needs no request to
 * learn its limit; and the server's clock, as our creates' replies tell
 * it, for the age of anyone's node.
 *
 * The table's watch is the session's own (maxhold_watcher), not the
 * watch table's: nobody waits on it, it only refreshes the copy.  A get
 * sets it while the znode exists, an exists while it does not; either
 * fires at the next change.  A reply that was lost (the connection broke)
 * leaves the copy as it was until the next connection reads it again.
 */
static void maxhold_load_locked(struct zkl_session *s);

/* Any change of the znode (created, set, deleted): the copy is stale
 * until read again.  The client also copies the session's events here:
 * a lost connection is the session's business (session.c), and its
 * return reads the table anyway (session_maxhold_connected_locked). */
static void maxhold_watcher(zhandle_t *zh, int type, int state,
			    const char *path, void *ctx)
{
	struct zkl_link notify;
	struct zkl_session *s = ctx;

	(void)zh;
	(void)state;
	(void)path;
	if (type == ZOO_SESSION_EVENT)
		return;
	session_enter(s, &notify);
	s->maxhold_current = 0;
	maxhold_load_locked(s);
	session_leave(s, &notify);
}

/* The session of a reply, entered (session_enter on notify: the caller
 * leaves it), or NULL for one of a handle closed since (its flags were
 * reset with the new handle's). */
static struct zkl_session *maxhold_reply_session(const void *data,
						 struct zkl_link *notify)
{
	const struct zkl_maxhold_slot *slot = data;
	struct zkl_session *s = slot->s;

	session_enter(s, notify);
	if (slot == &s->mh[s->mh_slot])
		return s;
	session_leave(s, notify);
	return NULL;
}

/* The read in flight is answered (ok: the copy is the table as of now):
 * another was asked for meanwhile? */
static void maxhold_loaded_locked(struct zkl_session *s, int ok)
{
	s->maxhold_loading = 0;
	if (s->maxhold_again) {
		s->maxhold_again = 0;
		maxhold_load_locked(s);
	} else if (ok) {
		s->maxhold_current = 1;
	}
}

static void maxhold_on_exists(int rc, const struct Stat *st, const void *data)
{
	struct zkl_link notify;
	struct zkl_session *s = maxhold_reply_session(data, &notify);

	(void)st;
	if (!s)
		return;
	if (rc == ZOK) /* created between our get and this exists */
		s->maxhold_again = 1;
	maxhold_loaded_locked(s, rc == ZNONODE);
	session_leave(s, &notify);
}

/* The table's data parsed: 0 and t, or -errno.  Outside the session's
 * lock: anyone may have written anything there, a megabyte of it. */
static int maxhold_parse_reply(const char *base, const char *value, int len,
			       struct maxhold_table *t)
{
	int skipped = maxhold_table_parse(value, len > 0 ? (size_t)len : 0, t);

	if (skipped > 0)
		log_msg(LOG_WARNING,
			"%s/%s: %d lines are no hold limits (\"<seconds> "
			"<resource>\"): ignored",
			base, MAXHOLD_NODE, skipped);
	return skipped < 0 ? skipped : 0;
}

static void maxhold_on_loaded(int rc, const char *value, int len,
			      const struct Stat *st, const void *data)
{
	const struct zkl_maxhold_slot *slot = data;
	char path[NAMES_MAX_NODE_PATH + sizeof(MAXHOLD_NODE) + 1];
	struct maxhold_table t = { 0 };
	struct zkl_link notify;
	struct zkl_session *s;
	int err = 0;

	(void)st;
	/* The base never changes: no lock needed to read it. */
	if (rc == ZOK)
		err = maxhold_parse_reply(slot->s->base, value, len, &t);
	s = maxhold_reply_session(data, &notify);
	if (!s) {
		maxhold_table_free(&t);
		return;
	}
	/* Every resource's holders text says its limit. */
	if ((rc == ZOK && err == 0) || rc == ZNONODE)
		session_changed_all(s);
	if (rc == ZOK && err == 0) {
		maxhold_table_free(&s->maxhold);
		s->maxhold = t;
	} else if (rc == ZNONODE) {
		maxhold_table_free(&s->maxhold);
		maxhold_path(s, path, sizeof(path));
		if (zoo_awexists(s->zh, path, maxhold_watcher, s,
				 maxhold_on_exists, slot) == ZOK) {
			session_leave(s, &notify);
			return; /* still loading */
		}
	}
	maxhold_loaded_locked(s, rc == ZOK && err == 0);
	session_leave(s, &notify);
}

static void maxhold_load_locked(struct zkl_session *s)
{
	char path[NAMES_MAX_NODE_PATH + sizeof(MAXHOLD_NODE) + 1];

	ZKL_ASSERT_HELD(&s->lock);
	if (s->maxhold_loading) {
		s->maxhold_again = 1;
		return;
	}
	maxhold_path(s, path, sizeof(path));
	if (zoo_awget(s->zh, path, maxhold_watcher, s, maxhold_on_loaded,
		      &s->mh[s->mh_slot]) == ZOK)
		s->maxhold_loading = 1;
}

void session_maxhold_new_handle_locked(struct zkl_session *s)
{
	ZKL_ASSERT_HELD(&s->lock);
	/* The old handle's replies may never come (zookeeper_close drops
	 * them): nothing waits for them any more. */
	s->mh[0].s = s->mh[1].s = s;
	s->mh_slot ^= 1;
	s->maxhold_loading = s->maxhold_again = 0;
	s->maxhold_current = 0;
}

void session_maxhold_connected_locked(struct zkl_session *s)
{
	s->maxhold_current = 0; /* changes may have gone unseen meanwhile */
	maxhold_load_locked(s);
}

unsigned session_maxhold_of_locked(struct zkl_session *s, const char *dir)
{
	const char *res = maxhold_res_of(s, dir);

	ZKL_ASSERT_HELD(&s->lock);
	return res ? maxhold_table_lookup(&s->maxhold, res) : 0;
}

unsigned session_maxhold(struct zkl_session *s, const char *dir)
{
	struct zkl_link notify;
	unsigned secs;

	session_enter(s, &notify);
	secs = session_maxhold_of_locked(s, dir);
	session_leave(s, &notify);
	return secs;
}
