/*
 * waitgraph.c - deadlocks across hosts (waitgraph.h).
 *
 * A checked wait (struct wg_wait, lr->wg) owns its records, one per pin,
 * from the check that fs/ asks for until the wait ends; then they are
 * deleted (again once connected, if a delete was cut off) and it is freed
 * once no reply of its is due.  A walk (struct wg_walk) lives only while
 * it reads: one ZooKeeper call at a time, each reply running the next
 * step under the session's mutex.  A wait costs its record and the names
 * of its records; a walk what it read, freed at its end.
 */
#include "waitgraph.h"

#include "internal.h"
#include "lockrule.h"
#include "log.h"
#include "lr.h"
#include "zkerr.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

/* ---- names and data of records -------------------------------------- */

uint64_t waitgraph_hash(const char *s)
{
	uint64_t h = 14695981039346656037ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

int waitgraph_record_name(const char *dir, const char *pin, const char *wait,
			  char *out, size_t size)
{
	int n = snprintf(out, size, "%016" PRIx64 "~%s~%016" PRIx64,
			 waitgraph_hash(dir), pin, waitgraph_hash(wait));

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : n;
}

static int wg_hex16(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	for (int i = 0; i < 16; i++) {
		char c = s[i];
		int d = c >= '0' && c <= '9'   ? c - '0'
			: c >= 'a' && c <= 'f' ? c - 'a' + 10
					       : -1;
		if (d < 0)
			return -EINVAL;
		v = v << 4 | (uint64_t)d;
	}
	*out = v;
	return 0;
}

int waitgraph_record_parse(const char *name, uint64_t *dir_hash,
			   const char **pin, size_t *pin_len)
{
	size_t len = strlen(name);
	uint64_t wait_hash;

	/* 16 hex, '~', a name of one byte or more, '~', 16 hex */
	if (len < 16 + 1 + 1 + 1 + 16 || name[16] != '~' ||
	    name[len - 17] != '~' || wg_hex16(name, dir_hash) < 0 ||
	    wg_hex16(name + len - 16, &wait_hash) < 0)
		return -EINVAL;
	*pin = name + 17;
	*pin_len = len - 17 - 17;
	return memchr(*pin, '~', *pin_len) ? -EINVAL : 0;
}

int waitgraph_record_data(int64_t timeout_ms, const char *who,
			  const char *const *waits, size_t n, char *out,
			  size_t size)
{
	int k = snprintf(out, size, "%" PRId64 "\n%s\n", timeout_ms, who);
	size_t at;

	if (k < 0 || (size_t)k >= size || strchr(who, '\n'))
		return -EINVAL;
	at = (size_t)k;
	for (size_t i = 0; i < n; i++) {
		k = snprintf(out + at, size - at, "%s\n", waits[i]);
		if (k < 0 || (size_t)k >= size - at)
			return -ENAMETOOLONG;
		at += (size_t)k;
	}
	return (int)at;
}

int waitgraph_record_parse_data(const char *data, size_t len,
				int64_t *timeout_ms, const char **who,
				size_t *who_len, const char **paths,
				size_t *lens, size_t max)
{
	const char *end = data ? data + len : NULL, *at = data, *nl;
	int64_t t = 0;
	size_t n = 0;

	if (!data || len == 0)
		return -EINVAL;
	for (; at < end && *at >= '0' && *at <= '9'; at++)
		if (t > INT64_MAX / 20)
			return -EINVAL;
		else
			t = t * 10 + (*at - '0');
	if (at == data || at == end || *at++ != '\n' ||
	    !(nl = memchr(at, '\n', (size_t)(end - at))))
		return -EINVAL;
	*timeout_ms = t;
	*who = at;
	*who_len = (size_t)(nl - at);
	for (at = nl + 1; at < end; at = nl + 1) {
		nl = memchr(at, '\n', (size_t)(end - at));
		if (!nl || nl == at || *at != '/')
			return -EINVAL;
		if (n < max) {
			paths[n] = at;
			lens[n++] = (size_t)(nl - at);
		}
	}
	return n > 0 ? (int)n : -EINVAL;
}

/* ---- a checked wait -------------------------------------------------- */

/* A cycle of WAITGRAPH_MAX_WAITS waits costs a walk one queue and one
 * record each: the bounds must leave room for it. */
_Static_assert(WAITGRAPH_MAX_READS >= WAITGRAPH_MAX_WAITS,
	       "a walk's bounds hold the longest cycle promised");

/* A call cut off by the connection is sent again this much later (the
 * session's clock resumes nothing before it is connected). */
#define WG_RETRY_MS 100

/* One pin of the wait, published. */
struct wg_record {
	struct wg_record *next;
	int64_t czxid;        /* as its create gave it (0: not yet) */
	unsigned created : 1; /* its create came back ZOK: it is there */
	unsigned sent : 1;    /* a create went out: delete it at the end */
	char path[];          /* <base>/.zklockfs-pins/<name> */
};

struct wg_walk;

struct wg_wait {
	/* Resumed: after a connection lost, the deletes again; a second
	 * look at a cycle, at its time. */
	struct zkl_member timer;
	struct zkl_session *s;
	struct zkl_lockreq *lr; /* the waiting owner request; NULL once its
				 * wait ended */
	unsigned in_flight;     /* replies due: it stays for them */
	unsigned creates_due;   /* records' creates not yet answered */
	struct wg_record *records;
	struct wg_walk *walk;    /* the walk under way, or NULL */
	unsigned walk_again : 1; /* a pin came during a walk */
	unsigned dir_made : 1; /* made again once, after a create found it gone */
	unsigned deletes_due : 1; /* a delete cut off: again, once connected */
	unsigned resume_walk : 1; /* a walk cut off: again, once connected */
	char *cycle; /* a cycle to report: this wait fails (wg_leave) */
	/* A cycle through other sessions' records, to read again at its
	 * time (the timer): those records' names, else NULL. */
	char **known;
	size_t nknown;
};

/* The wait's request ended, or nothing more to do: free it once no reply
 * of its is due and no resume is waiting. */
static void wg_put_if_done_locked(struct wg_wait *w);

/* ---- the walk --------------------------------------------------------- */

/* A waiting node reached: one of the wait's own (parent -1), or one that
 * a record names.  Of the ways the walk found to it, the one whose
 * youngest record is the oldest (`worst`, that record's czxid): a cycle
 * through it is this wait's to report only if every record on it is
 * older than this wait's own (wg_found), so a younger way found first
 * must not hide an older one found later. */
struct wg_step {
	int parent; /* the step whose queue has the record's pin */
	int record; /* index in walk->recs of the record, -1: own */
	int64_t worst;
	char *path;
};

/* A record reached: its pinned node stands in the way of step `from` (the
 * best way to it the walk knows); once read, the waits it names are the
 * steps `targets`. */
struct wg_rec {
	int from;
	int read; /* its data came back (and named waits) */
	int64_t czxid, session, timeout_ms;
	char who[128];
	char *name;
	int *targets;
	size_t ntargets;
};

struct wg_queue {
	char *dir;
	struct String_vector names;
	struct zkl_node *nodes;
	size_t n;
	int gone; /* the resource is gone: nothing waits there */
};

enum wg_stage {
	WG_LISTING_RECORDS,
	WG_LISTING_QUEUE,
	WG_READING_RECORD,
};

struct wg_walk {
	enum wg_stage stage;
	struct String_vector records; /* the names in WAITGRAPH_DIR */
	uint64_t *dir_hashes;         /* of each record's pinned queue */
	struct wg_step *steps;
	size_t nsteps;
	/* The steps to expand, in order; a step is there again when a
	 * better way to it is found. */
	int *todo;
	size_t ntodo, next_todo, captodo;
	struct wg_rec *recs;
	size_t nrecs, next_rec;
	struct wg_queue *queues;
	size_t nqueues;
	unsigned reads, expansions;
	unsigned second_look : 1; /* only the records of w->known count */
};

static void wg_walk_free(struct wg_walk *k)
{
	if (!k)
		return;
	deallocate_String_vector(&k->records);
	free(k->dir_hashes);
	for (size_t i = 0; i < k->nsteps; i++)
		free(k->steps[i].path);
	free(k->steps);
	free(k->todo);
	for (size_t i = 0; i < k->nrecs; i++) {
		free(k->recs[i].name);
		free(k->recs[i].targets);
	}
	free(k->recs);
	for (size_t i = 0; i < k->nqueues; i++) {
		free(k->queues[i].dir);
		deallocate_String_vector(&k->queues[i].names);
		free(k->queues[i].nodes);
	}
	free(k->queues);
	free(k);
}

static void wg_known_free(struct wg_wait *w)
{
	for (size_t i = 0; i < w->nknown; i++)
		free(w->known[i]);
	free(w->known);
	w->known = NULL;
	w->nknown = 0;
}

static void wg_free(struct wg_wait *w)
{
	while (w->records) {
		struct wg_record *r = w->records;
		w->records = r->next;
		free(r);
	}
	wg_walk_free(w->walk);
	wg_known_free(w);
	free(w->cycle);
	free(w);
}

static void wg_put_if_done_locked(struct wg_wait *w)
{
	if (!w->lr && w->in_flight == 0 && !list_linked(&w->timer.resume) &&
	    !w->deletes_due)
		wg_free(w);
}

/* ---- replies ---------------------------------------------------------- */

/* What a reply brought. */
struct wg_reply {
	const struct String_vector *names;
	const struct Stat *st;
	const char *value;
	int len;
};

/* A call's context: the wait, and for a record's create or delete the
 * record (else NULL). */
struct wg_call {
	struct wg_wait *w;
	struct wg_record *record;
	enum { WG_CALL_CREATE, WG_CALL_DELETE, WG_CALL_DIR, WG_CALL_WALK } what;
};

static void wg_on_reply(struct wg_call *c, int rc, const struct wg_reply *r);

static void wg_on_string_stat(int rc, const char *value, const struct Stat *st,
			      const void *data)
{
	(void)value;
	wg_on_reply((struct wg_call *)data, rc, &(struct wg_reply){ .st = st });
}

static void wg_on_string(int rc, const char *value, const void *data)
{
	(void)value;
	wg_on_reply((struct wg_call *)data, rc, &(struct wg_reply){ 0 });
}

static void wg_on_void(int rc, const void *data)
{
	wg_on_reply((struct wg_call *)data, rc, &(struct wg_reply){ 0 });
}

static void wg_on_strings_stat(int rc, const struct String_vector *names,
			       const struct Stat *st, const void *data)
{
	wg_on_reply((struct wg_call *)data, rc,
		    &(struct wg_reply){ .names = names, .st = st });
}

static void wg_on_strings(int rc, const struct String_vector *names,
			  const void *data)
{
	wg_on_reply((struct wg_call *)data, rc,
		    &(struct wg_reply){ .names = names });
}

static void wg_on_data(int rc, const char *value, int len,
		       const struct Stat *st, const void *data)
{
	wg_on_reply((struct wg_call *)data, rc,
		    &(struct wg_reply){ .st = st, .value = value, .len = len });
}

/* A call for w (and record): its context, counted while due; NULL if out
 * of memory. */
static struct wg_call *wg_call(struct wg_wait *w, struct wg_record *record,
			       int what)
{
	struct wg_call *c = malloc(sizeof(*c));

	if (c) {
		*c = (struct wg_call){ .w = w, .record = record, .what = what };
		w->in_flight++;
	}
	return c;
}

/* The zoo_a* result of sending c: 0, or the call is taken back (its
 * reply will not come) and -1. */
static int wg_sent(struct wg_call *c, int rc)
{
	if (rc == ZOK)
		return 0;
	c->w->in_flight--;
	free(c);
	return -1;
}

/* ---- deletes ---------------------------------------------------------- */

/* w has deletes cut off (due) or not, counted for the session. */
static void wg_deletes_due(struct wg_wait *w, int due)
{
	if (due && !w->deletes_due)
		w->s->pins_deletes_due++;
	else if (!due && w->deletes_due)
		w->s->pins_deletes_due--;
	w->deletes_due = due != 0;
}

static void wg_delete(struct wg_wait *w, struct wg_record *r)
{
	struct wg_call *c = wg_call(w, r, WG_CALL_DELETE);

	if (!c ||
	    wg_sent(c, zoo_adelete(w->s->zh, r->path, -1, wg_on_void, c)) < 0) {
		wg_deletes_due(w, 1); /* again, once connected */
		session_resume_at_locked(w->s, &w->timer,
					 session_clock_now() + WG_RETRY_MS);
	}
}

/* Every record that may be there goes (a create on its way is deleted
 * when it comes back: the wait has ended by then). */
static void wg_delete_all(struct wg_wait *w)
{
	wg_deletes_due(w, 0);
	for (struct wg_record *r = w->records; r; r = r->next)
		if (r->created)
			wg_delete(w, r);
}

/* A delete came back: gone, or cut off (again once connected). */
static void wg_deleted(struct wg_wait *w, struct wg_record *r, int rc)
{
	if (rc == ZOK || rc == ZNONODE || w->s->closing) {
		r->created = 0;
		return;
	}
	if (zkerr_is_connection_loss(rc)) {
		wg_deletes_due(w, 1);
		session_resume_at_locked(w->s, &w->timer,
					 session_clock_now() + WG_RETRY_MS);
		return;
	}
	log_msg(LOG_WARNING, "deadlock record %s: delete refused: %s", r->path,
		zerror(rc));
	r->created = 0;
}

/* ---- the walk's steps ------------------------------------------------- */

static void wg_walk_on(struct wg_wait *w);

/* The walk ends (why: NULL when it ran its course), counted.  One cut
 * off by the connection walks again once connected; a pin that came
 * meanwhile walks again at once (wg_leave). */
static void wg_walk_end(struct wg_wait *w, const char *why)
{
	if (why && w->lr)
		log_msg(LOG_DEBUG, "deadlock check of %s: %s", w->lr->node,
			why);
	if (w->walk && w->walk->second_look) {
		/* The cycle looked at again broke: another one may stand
		 * that this look, which read only its records, did not
		 * see.  Walk again, in full. */
		wg_known_free(w);
		if (!w->cycle)
			w->walk_again = 1;
	}
	wg_walk_free(w->walk);
	w->walk = NULL;
}

/* A walk's call came back with rc, not ZOK: the walk ends; cut off by
 * the connection, it walks again once connected. */
static void wg_walk_failed(struct wg_wait *w, int rc)
{
	wg_walk_end(w, zerror(rc));
	if (zkerr_is_connection_loss(rc) && w->lr && !w->known) {
		w->resume_walk = 1;
		session_resume_at_locked(w->s, &w->timer,
					 session_clock_now() + WG_RETRY_MS);
	}
}

static void wg_dirname(const char *path, char *out, size_t size)
{
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : 0;

	snprintf(out, size, "%.*s", (int)n, path);
}

static const char *wg_resource(const struct wg_wait *w, const char *dir)
{
	size_t base = strlen(w->s->base);

	return strncmp(dir, w->s->base, base) == 0 && dir[base] == '/'
		       ? dir + base + 1
		       : dir;
}

/* Send the walk's next call (the one it waits for), or end it. */
static void wg_walk_send(struct wg_wait *w, struct wg_call *c, int rc)
{
	if (wg_sent(c, rc) < 0)
		wg_walk_failed(w, rc);
}

/* Put step s (again) on the steps to expand: 0 or -ENOMEM. */
static int wg_todo(struct wg_walk *k, int s)
{
	if (k->ntodo == k->captodo) {
		size_t cap = k->captodo ? 2 * k->captodo : 16;
		int *more = realloc(k->todo, cap * sizeof(*more));

		if (!more)
			return -ENOMEM;
		k->todo = more;
		k->captodo = cap;
	}
	k->todo[k->ntodo++] = s;
	return 0;
}

/* The waiting node path[0..len) reached from step `parent` through record
 * `record`, with `worst` the youngest record on that way: a new step, or
 * a better way to a step reached before (expanded again).  Returns the
 * step, or -ENOSPC (too many), -ENOMEM. */
static int wg_reach(struct wg_walk *k, int parent, int record, int64_t worst,
		    const char *path, size_t len)
{
	struct wg_step *st;
	size_t i;

	for (i = 0; i < k->nsteps; i++)
		if (strlen(k->steps[i].path) == len &&
		    memcmp(k->steps[i].path, path, len) == 0)
			break;
	if (i < k->nsteps && k->steps[i].worst <= worst)
		return (int)i; /* no better way */
	if (i == k->nsteps) {
		if (k->nsteps == WAITGRAPH_MAX_READS)
			return -ENOSPC;
		if (k->nsteps % 16 == 0) {
			struct wg_step *more = realloc(
				k->steps, (k->nsteps + 16) * sizeof(*k->steps));
			if (!more)
				return -ENOMEM;
			k->steps = more;
		}
		if (!(k->steps[i].path = strndup(path, len)))
			return -ENOMEM;
		k->nsteps++;
	}
	st = &k->steps[i];
	st->parent = parent;
	st->record = record;
	st->worst = worst;
	return wg_todo(k, (int)i) < 0 ? -ENOMEM : (int)i;
}

/* Record r, read, reached from step s: its waits by that way.  0, or
 * -errno (the walk is over). */
static int wg_relax(struct wg_walk *k, size_t r, int s)
{
	struct wg_rec *rec = &k->recs[r];
	int64_t worst = k->steps[s].worst > rec->czxid ? k->steps[s].worst
						       : rec->czxid;

	for (size_t i = 0; i < rec->ntargets; i++) {
		const char *path = k->steps[rec->targets[i]].path;
		int t = wg_reach(k, s, (int)r, worst, path, strlen(path));
		if (t < 0)
			return t;
	}
	return 0;
}

/* The waiting nodes of the wait itself: its own node, or a multi-lock's
 * members that wait. */
static size_t wg_own_waits(const struct zkl_lockreq *lr, const char **out,
			   size_t max)
{
	size_t n = 0;

	if (lr->kind == LR_MULTI) {
		for (unsigned i = 0; i < lr->nmembers && n < max; i++) {
			const struct zkl_lockreq *m = lr->members[i];
			if (m->outcome == LR_PENDING && lr_has_node(m))
				out[n++] = m->node;
		}
	} else if (lr->outcome == LR_PENDING && lr_has_node(lr)) {
		out[n++] = lr->node;
	}
	return n;
}

static void wg_records_listed(struct wg_wait *w,
			      const struct String_vector *names)
{
	struct wg_walk *k = w->walk;
	const char *own[LOCKREQ_MULTI_MAX];
	size_t nown = wg_own_waits(w->lr, own, LOCKREQ_MULTI_MAX);

	k->records.data = calloc((size_t)names->count + 1, sizeof(char *));
	k->dir_hashes = calloc((size_t)names->count + 1, sizeof(uint64_t));
	if (!k->records.data || !k->dir_hashes)
		return wg_walk_end(w, "out of memory");
	k->records.count = names->count; /* what the free frees */
	for (int i = 0; i < names->count; i++) {
		const char *pin;
		size_t len;

		if (!(k->records.data[i] = strdup(names->data[i])))
			return wg_walk_end(w, "out of memory");
		if (waitgraph_record_parse(names->data[i], &k->dir_hashes[i],
					   &pin, &len) < 0)
			k->dir_hashes[i] = 0; /* no record's: never matches */
	}
	for (size_t i = 0; i < nown; i++)
		if (wg_reach(k, -1, -1, INT64_MIN, own[i], strlen(own[i])) < 0)
			return wg_walk_end(w, "out of memory");
	wg_walk_on(w);
}

/* Does any record pin a node of the queue dir?  Only then is it read. */
static int wg_queue_pinned(const struct wg_walk *k, uint64_t dir_hash)
{
	for (int i = 0; i < k->records.count; i++)
		if (k->dir_hashes[i] == dir_hash)
			return 1;
	return 0;
}

static struct wg_queue *wg_queue_of(struct wg_walk *k, const char *dir)
{
	for (size_t i = 0; i < k->nqueues; i++)
		if (strcmp(k->queues[i].dir, dir) == 0)
			return &k->queues[i];
	return NULL;
}

static int wg_is_known(const struct wg_wait *w, const char *name)
{
	if (!w->walk->second_look)
		return 1; /* a first look: every record counts */
	for (size_t i = 0; i < w->nknown; i++)
		if (strcmp(w->known[i], name) == 0)
			return 1;
	return 0;
}

/* The record `name` among those the walk reached, or -1. */
static ssize_t wg_rec_of(const struct wg_walk *k, const char *name)
{
	for (size_t i = 0; i < k->nrecs; i++)
		if (strcmp(k->recs[i].name, name) == 0)
			return (ssize_t)i;
	return -1;
}

static struct wg_record *wg_own_record(const struct wg_wait *w,
				       const char *name)
{
	size_t dirlen = strlen(w->s->base) + 1 + strlen(WAITGRAPH_DIR) + 1;

	for (struct wg_record *r = w->records; r; r = r->next)
		if (r->created && strcmp(r->path + dirlen, name) == 0)
			return r;
	return NULL;
}

static void wg_found(struct wg_wait *w, int step);

/* The holders in the way of step's waiting node, in its queue's listing:
 * for each one pinned, the record that pins it.  Returns 1 if a cycle was
 * found (and dealt with), -1 if the walk is over, else 0. */
static int wg_expand(struct wg_wait *w, size_t step, const struct wg_queue *q)
{
	struct wg_walk *k = w->walk;
	const char *name = strrchr(k->steps[step].path, '/') + 1;
	uint64_t dir_hash = waitgraph_hash(q->dir);
	unsigned char *in_way;
	ssize_t me = -1;

	for (size_t i = 0; i < q->n; i++)
		if (strcmp(q->nodes[i].name, name) == 0)
			me = (ssize_t)i;
	if (me < 0) /* gone: it waits no more */
		return 0;
	in_way = calloc((size_t)me + 1, 1);
	if (!in_way) {
		wg_walk_end(w, "out of memory");
		return -1;
	}
	lockrule_holders_in_way(q->nodes, (size_t)me, in_way);
	for (ssize_t h = 0; h < me; h++) {
		size_t plen = strlen(q->nodes[h].name);

		if (!in_way[h])
			continue;
		for (int i = 0; i < k->records.count; i++) {
			const char *rec = k->records.data[i], *pin;
			size_t len;
			const struct wg_record *own;
			ssize_t r;

			if (k->dir_hashes[i] != dir_hash ||
			    waitgraph_record_parse(rec, &(uint64_t){ 0 }, &pin,
						   &len) < 0 ||
			    len != plen ||
			    memcmp(pin, q->nodes[h].name, plen) != 0)
				continue;
			if ((own = wg_own_record(w, rec))) {
				/* Back at this wait's own pin: a cycle of its
				 * to report if this way's records are all
				 * older than that pin's. */
				if (own->czxid == 0 ||
				    k->steps[step].worst >= own->czxid)
					continue;
				wg_found(w, (int)step);
				free(in_way);
				return 1; /* reported, or looked at later */
			}
			if (!wg_is_known(w, rec))
				continue;
			if ((r = wg_rec_of(k, rec)) >= 0) {
				/* Reached before: by a better way now? */
				if (!k->recs[r].read) {
					if (k->steps[step].worst <
					    k->steps[k->recs[r].from].worst)
						k->recs[r].from = (int)step;
				} else if (wg_relax(k, (size_t)r, (int)step) <
					   0) {
					free(in_way);
					wg_walk_end(w, "too many waits");
					return -1;
				}
				continue;
			}
			if (k->nrecs == WAITGRAPH_MAX_READS) {
				free(in_way);
				wg_walk_end(w, "too many records");
				return -1;
			}
			if (k->nrecs % 16 == 0) {
				struct wg_rec *more = realloc(
					k->recs,
					(k->nrecs + 16) * sizeof(*k->recs));
				if (!more) {
					free(in_way);
					wg_walk_end(w, "out of memory");
					return -1;
				}
				k->recs = more;
			}
			memset(&k->recs[k->nrecs], 0, sizeof(k->recs[0]));
			k->recs[k->nrecs].from = (int)step;
			if (!(k->recs[k->nrecs].name = strdup(rec))) {
				free(in_way);
				wg_walk_end(w, "out of memory");
				return -1;
			}
			k->nrecs++;
		}
	}
	free(in_way);
	return 0;
}

/* Go on: read the next record reached, else expand the next step (its
 * queue read first, if any record pins a node of it), else the walk found
 * no cycle of the wait's. */
static void wg_walk_on(struct wg_wait *w)
{
	struct wg_walk *k = w->walk;
	char dir[NAMES_MAX_NODE_PATH + 1], path[NAMES_MAX_NODE_PATH + 64];
	struct wg_call *c;

	if (!k) { /* a new walk: the records first */
		if (!(k = w->walk = calloc(1, sizeof(*k))))
			return;
		snprintf(dir, sizeof(dir), "%s/%s", w->s->base, WAITGRAPH_DIR);
		k->stage = WG_LISTING_RECORDS;
		if ((c = wg_call(w, NULL, WG_CALL_WALK)))
			wg_walk_send(w, c,
				     zoo_aget_children(w->s->zh, dir, 0,
						       wg_on_strings, c));
		else
			wg_walk_end(w, "out of memory");
		return;
	}
	while (k->next_rec < k->nrecs || k->next_todo < k->ntodo) {
		struct wg_queue *q;
		int step;

		if (k->reads >= 2 * WAITGRAPH_MAX_READS ||
		    k->expansions >= 4 * WAITGRAPH_MAX_READS)
			return wg_walk_end(w, "too many reads");
		if (k->next_rec < k->nrecs) {
			snprintf(path, sizeof(path), "%s/%s/%s", w->s->base,
				 WAITGRAPH_DIR, k->recs[k->next_rec].name);
			k->stage = WG_READING_RECORD;
			k->reads++;
			if (!(c = wg_call(w, NULL, WG_CALL_WALK)))
				return wg_walk_end(w, "out of memory");
			return wg_walk_send(w, c,
					    zoo_aget(w->s->zh, path, 0,
						     wg_on_data, c));
		}
		step = k->todo[k->next_todo];
		wg_dirname(k->steps[step].path, dir, sizeof(dir));
		if (!wg_queue_pinned(k, waitgraph_hash(dir))) {
			k->next_todo++; /* nothing there is pinned */
			continue;
		}
		if (!(q = wg_queue_of(k, dir))) {
			struct wg_queue *more;

			if (k->nqueues == WAITGRAPH_MAX_READS)
				return wg_walk_end(w, "too many queues");
			more = realloc(k->queues,
				       (k->nqueues + 1) * sizeof(*k->queues));
			if (!more)
				return wg_walk_end(w, "out of memory");
			k->queues = more;
			memset(&k->queues[k->nqueues], 0, sizeof(*k->queues));
			if (!(k->queues[k->nqueues].dir = strdup(dir)))
				return wg_walk_end(w, "out of memory");
			k->nqueues++;
			k->stage = WG_LISTING_QUEUE;
			k->reads++;
			if (!(c = wg_call(w, NULL, WG_CALL_WALK)))
				return wg_walk_end(w, "out of memory");
			return wg_walk_send(
				w, c,
				zoo_aget_children2(w->s->zh, dir, 0,
						   wg_on_strings_stat, c));
		}
		k->next_todo++;
		k->expansions++;
		if (!q->gone && wg_expand(w, (size_t)step, q) != 0)
			return; /* found, or over */
	}
	wg_walk_end(w, NULL); /* no cycle of its own */
}

/* A queue's listing came back (the last queue added). */
static void wg_queue_listed(struct wg_wait *w, int rc, const struct wg_reply *r)
{
	struct wg_walk *k = w->walk;
	struct wg_queue *q = &k->queues[k->nqueues - 1];

	if (rc == ZNONODE) {
		q->gone = 1;
		return wg_walk_on(w);
	}
	if (rc != ZOK || !r->names || !r->st)
		return wg_walk_failed(w, rc);
	q->names.data = calloc((size_t)r->names->count + 1, sizeof(char *));
	q->nodes = calloc((size_t)r->names->count + 1, sizeof(*q->nodes));
	if (!q->names.data || !q->nodes)
		return wg_walk_end(w, "out of memory");
	q->names.count = r->names->count; /* what the free frees */
	for (int i = 0; i < r->names->count; i++)
		if (!(q->names.data[i] = strdup(r->names->data[i])))
			return wg_walk_end(w, "out of memory");
	q->n = lockrule_collect(q->names.data, (size_t)q->names.count,
				LOCKRULE_QUEUED_STYLES, r->st->cversion,
				q->nodes);
	wg_walk_on(w);
}

/* A record's data came back: the waits of its pin's owner, steps to
 * expand. */
static void wg_record_read(struct wg_wait *w, int rc, const struct wg_reply *r)
{
	struct wg_walk *k = w->walk;
	size_t r_at = k->next_rec++;
	struct wg_rec *rec = &k->recs[r_at];
	const char *paths[LOCKREQ_MULTI_MAX], *who;
	size_t lens[LOCKREQ_MULTI_MAX], who_len;
	int64_t worst;
	int n;

	if (rc == ZNONODE) /* its wait ended */
		return wg_walk_on(w);
	if (rc != ZOK || !r->st)
		return wg_walk_failed(w, rc);
	n = waitgraph_record_parse_data(r->value,
					r->len > 0 ? (size_t)r->len : 0,
					&rec->timeout_ms, &who, &who_len, paths,
					lens, LOCKREQ_MULTI_MAX);
	if (n < 0)
		return wg_walk_on(w); /* not a record of ours: no edge */
	rec->czxid = r->st->czxid;
	rec->session = r->st->ephemeralOwner;
	snprintf(rec->who, sizeof(rec->who), "%.*s", (int)who_len, who);
	if (!(rec->targets = calloc((size_t)n, sizeof(*rec->targets))))
		return wg_walk_end(w, "out of memory");
	worst = k->steps[rec->from].worst > rec->czxid
			? k->steps[rec->from].worst
			: rec->czxid;
	for (int i = 0; i < n; i++) {
		int t = wg_reach(k, k->recs[r_at].from, (int)r_at, worst,
				 paths[i], lens[i]);
		if (t < 0)
			return wg_walk_end(w, "too many waits");
		rec = &k->recs[r_at];
		rec->targets[rec->ntargets++] = t;
	}
	rec->read = 1;
	wg_walk_on(w);
}

/* ---- a cycle ---------------------------------------------------------- */

/* "<host>~<pid> (<cmd>)" of the identity lr's node carries. */
static void wg_who(const struct zkl_lockreq *lr, char *out, size_t size)
{
	size_t hl, pl, cl;
	const char *h = names_data_field(lr->data, lr->datalen, "host", &hl);
	const char *p = names_data_field(lr->data, lr->datalen, "pid", &pl);
	const char *c = names_data_field(lr->data, lr->datalen, "cmd", &cl);

	snprintf(out, size, "%.*s~%.*s (%.*s)", h ? (int)hl : 1, h ? h : "?",
		 p ? (int)pl : 1, p ? p : "?", c ? (int)cl : 1, c ? c : "?");
	for (char *at = out; *at; at++)
		if (*at == '\n')
			*at = ' ';
}

/* "<who> holds <res> and waits in <res>; ..." along the cycle, from the
 * wait closing it (`step`, whose queue holds the wait's own pin) back to
 * the wait's own node. */
static void wg_describe(const struct wg_wait *w, int step, char *out,
			size_t size)
{
	const struct wg_walk *k = w->walk;
	char held[NAMES_MAX_NODE_PATH + 1], waits[NAMES_MAX_NODE_PATH + 1];
	char own[128];
	size_t n = 0;

	wg_who(w->lr, own, sizeof(own));
	out[0] = '\0';
	for (int s = step; s >= 0; s = k->steps[s].parent) {
		const struct wg_step *st = &k->steps[s];
		int r = st->record, m;

		wg_dirname(r >= 0 ? k->steps[st->parent].path
				  : k->steps[step].path,
			   held, sizeof(held));
		wg_dirname(st->path, waits, sizeof(waits));
		m = snprintf(out + n, size - n, "%s%s holds %s and waits in %s",
			     n ? "; " : "", r >= 0 ? k->recs[r].who : own,
			     wg_resource(w, held), wg_resource(w, waits));
		if (m < 0 || (size_t)m >= size - n)
			return;
		n += (size_t)m;
	}
}

/*
 * The walk came back to a node this wait pins itself, from `step`: a
 * cycle, which stood whole when the records were listed (doc/design.md).
 * The wait whose record in it is the youngest fails; another walker
 * leaves it to that wait's own walk, which comes after every record of
 * the cycle.  Through another session's records, not yet: those are
 * read again twice that session's timeout later, when a mount that died
 * meanwhile has left no record.
 */
static void wg_found(struct wg_wait *w, int step)
{
	struct wg_walk *k = w->walk;
	int64_t later_ms = 0, session = zoo_client_id(w->s->zh)->client_id;
	size_t nforeign = 0;
	char cycle[1024];

	for (int s = step; s >= 0; s = k->steps[s].parent) {
		const struct wg_rec *rec;

		if (k->steps[s].record < 0)
			continue;
		rec = &k->recs[k->steps[s].record];
		if (rec->session != session || w->s->pins_deletes_due > 0) {
			nforeign++;
			if (2 * rec->timeout_ms > later_ms)
				later_ms = 2 * rec->timeout_ms;
		}
	}
	wg_describe(w, step, cycle, sizeof(cycle));
	if (nforeign > 0 && !k->second_look) {
		/* The first look: remember the cycle's records (every one:
		 * the second look reads only these), look again at that time
		 * (the walk ends here). */
		size_t nrecs = 0;

		for (int s = step; s >= 0; s = k->steps[s].parent)
			nrecs += k->steps[s].record >= 0;
		w->known = calloc(nrecs, sizeof(char *));
		for (int s = step; w->known && s >= 0; s = k->steps[s].parent) {
			if (k->steps[s].record < 0)
				continue;
			if (!(w->known[w->nknown] =
				      strdup(k->recs[k->steps[s].record].name)))
				break;
			w->nknown++;
		}
		if (!w->known || w->nknown < nrecs) {
			wg_known_free(w);
			return wg_walk_end(w, "out of memory");
		}
		log_msg(LOG_INFO,
			"deadlock check of %s: a cycle (%s): looked at again "
			"in %" PRId64 " ms, when a host that died is known to "
			"be gone",
			w->lr->node, cycle, later_ms);
		if (list_linked(&w->timer.resume))
			list_del(&w->timer.resume);
		session_resume_at_locked(w->s, &w->timer,
					 session_clock_now() + later_ms);
		return wg_walk_end(w, NULL);
	}
	w->cycle = strdup(cycle);
	wg_walk_end(w, w->cycle ? NULL : "out of memory");
}

/* ---- publishing the pins ---------------------------------------------- */

/* A record for the pinned node `node` (a full path) unless there is one:
 * 0, or -errno. */
static int wg_add_record(struct wg_wait *w, const char *node,
			 const char *first_wait)
{
	char dir[NAMES_MAX_NODE_PATH + 1], name[NAMES_MAX_NODE_PATH + 64];
	size_t dirlen;
	struct wg_record *r;

	wg_dirname(node, dir, sizeof(dir));
	if (waitgraph_record_name(dir, strrchr(node, '/') + 1, first_wait, name,
				  sizeof(name)) < 0)
		return -ENAMETOOLONG;
	dirlen = strlen(w->s->base) + 1 + strlen(WAITGRAPH_DIR) + 1;
	for (r = w->records; r; r = r->next)
		if (strcmp(r->path + dirlen, name) == 0)
			return 0;
	r = calloc(1, sizeof(*r) + dirlen + strlen(name) + 1);
	if (!r)
		return -ENOMEM;
	sprintf(r->path, "%s/%s/%s", w->s->base, WAITGRAPH_DIR, name);
	r->next = w->records;
	w->records = r;
	return 0;
}

/* The pinned nodes of the held owner request p: its node, or a multi-lock's
 * members' (leases take no part). */
static void wg_add_pin(struct wg_wait *w, const struct zkl_lockreq *p,
		       const char *first_wait)
{
	if (p->kind == LR_MULTI) {
		for (unsigned i = 0; i < p->nmembers; i++)
			if (lr_node_holds(p->members[i]))
				wg_add_record(w, p->members[i]->node,
					      first_wait);
	} else if (p->kind == LR_PLAIN && p->mode != ZKL_MODE_LEASE &&
		   lr_node_holds(p) && lr_has_node(p)) {
		wg_add_record(w, p->node, first_wait);
	}
}

/* The records' directory, once a session, before its first record: a
 * session's requests are applied in the order sent, so every record sent
 * after finds it, and no check of a crowd pays for it.  A container: the
 * server reaps it once emptied (a create that finds it gone sends it
 * again, wg_created). */
static void wg_make_dir(struct wg_wait *w)
{
	char dir[NAMES_MAX_NODE_PATH + 64];
	int64_t session = zoo_client_id(w->s->zh)->client_id;
	struct wg_call *c;

	if ((session != 0 && w->s->pins_dir_session == session) ||
	    !(c = wg_call(w, NULL, WG_CALL_DIR)))
		return;
	snprintf(dir, sizeof(dir), "%s/%s", w->s->base, WAITGRAPH_DIR);
	if (wg_sent(c, zoo_acreate(w->s->zh, dir, "", 0, w->s->acl,
				   w->s->containers ? ZOO_CONTAINER
						    : ZOO_PERSISTENT,
				   wg_on_string, c)) == 0)
		w->s->pins_dir_session = session;
}

/* Create every record not yet sent, pipelined; the walk starts once the
 * last create is back (wg_leave). */
static void wg_publish(struct wg_wait *w)
{
	const char *waits[LOCKREQ_MULTI_MAX];
	size_t nwaits = wg_own_waits(w->lr, waits, LOCKREQ_MULTI_MAX);
	char who[128],
		data[LOCKREQ_MULTI_MAX * (NAMES_MAX_NODE_PATH + 1) + 256];
	int len;

	wg_who(w->lr, who, sizeof(who));
	len = waitgraph_record_data(zoo_recv_timeout(w->s->zh), who, waits,
				    nwaits, data, sizeof(data));
	if (len < 0 || nwaits == 0)
		return;
	wg_make_dir(w);
	for (struct wg_record *r = w->records; r; r = r->next) {
		struct wg_call *call;

		if (r->sent)
			continue;
		if (!(call = wg_call(w, r, WG_CALL_CREATE)))
			return;
		if (wg_sent(call, zoo_acreate2(w->s->zh, r->path, data, len,
					       w->s->acl, ZOO_EPHEMERAL,
					       wg_on_string_stat, call)) < 0)
			return; /* the connection: not published */
		r->sent = 1;
		w->creates_due++;
	}
}

/* A record's create came back. */
static void wg_created(struct wg_wait *w, struct wg_record *r, int rc,
		       const struct Stat *st)
{
	assert(w->creates_due > 0);
	w->creates_due--;
	if (rc == ZOK || zkerr_is_connection_loss(rc)) {
		/* Cut off, it may be there all the same: deleted at the end,
		 * never taken for this wait's own (its czxid unknown). */
		r->created = 1;
		r->czxid = rc == ZOK && st ? st->czxid : 0;
		if (!w->lr) /* the wait ended meanwhile */
			wg_delete(w, r);
		return;
	}
	r->sent = 0;
	if (rc != ZNONODE || w->dir_made || !w->lr)
		return; /* not published: that pin takes no part */
	/* The records' container was reaped since: make it again, and
	 * this pin after it (once: a second failure leaves it out). */
	w->dir_made = 1;
	w->s->pins_dir_session = 0;
	wg_publish(w);
}

/* Is a record of w's there (a walk can find a cycle through it)? */
static int wg_published(const struct wg_wait *w)
{
	for (const struct wg_record *r = w->records; r; r = r->next)
		if (r->created)
			return 1;
	return 0;
}

/* ---- entries: each under the session's mutex, w kept while in it ---- */

static void wg_enter(struct wg_wait *w)
{
	w->in_flight++;
}

/* What an entry leaves to do: fail the wait for a cycle found; walk,
 * once every record is in and no walk or second look is under way. */
static void wg_leave(struct wg_wait *w, struct zkl_link *notify)
{
	if (w->cycle && w->lr) {
		struct zkl_lockreq *lr = w->lr, *victim = lr;

		if (lr->kind == LR_MULTI) /* one waiting member fails it all */
			for (unsigned i = 0; i < lr->nmembers; i++)
				if (lr->members[i]->outcome == LR_PENDING)
					victim = lr->members[i];
		log_msg(LOG_WARNING,
			"%s: fails with EDEADLK: its wait closes a cycle "
			"across hosts (%s)",
			victim->node, w->cycle);
		lr->s->deadlocks++;
		free(w->cycle);
		w->cycle = NULL;
		lr_deadlock_locked(victim, notify); /* ends the wait */
	} else if (w->lr && !w->walk && !w->known && w->creates_due == 0 &&
		   w->walk_again) {
		w->walk_again = 0;
		wg_walk_on(w);
	}
	assert(w->in_flight > 0);
	w->in_flight--;
	wg_put_if_done_locked(w);
}

static void wg_walk_reply(struct wg_wait *w, int rc, const struct wg_reply *r)
{
	switch (w->walk->stage) {
	case WG_LISTING_RECORDS:
		if (rc == ZNONODE) /* no record at all */
			return wg_walk_end(w, NULL);
		if (rc != ZOK || !r->names)
			return wg_walk_failed(w, rc);
		return wg_records_listed(w, r->names);
	case WG_LISTING_QUEUE:
		return wg_queue_listed(w, rc, r);
	case WG_READING_RECORD:
		return wg_record_read(w, rc, r);
	}
}

static void wg_on_reply(struct wg_call *c, int rc, const struct wg_reply *r)
{
	struct wg_wait *w = c->w;
	struct zkl_session *s = w->s;
	struct zkl_link notify;

	session_enter(s, &notify);
	/* The call's count stands for the entry's. */
	switch (c->what) {
	case WG_CALL_CREATE:
		wg_created(w, c->record, rc, r->st);
		if (w->creates_due == 0 && w->lr && wg_published(w))
			w->walk_again = 1;
		break;
	case WG_CALL_DELETE:
		wg_deleted(w, c->record, rc);
		break;
	case WG_CALL_DIR: /* for the creates sent after it */
		break;
	case WG_CALL_WALK:
		if (!w->lr) /* the wait ended: so does its walk */
			wg_walk_end(w, NULL);
		else if (w->walk)
			wg_walk_reply(w, rc, r);
		break;
	}
	free(c);
	wg_leave(w, &notify);
	session_leave(s, &notify);
}

/* The timer: deletes cut off, a walk cut off, or a second look due. */
static void wg_due(struct zkl_member *m, struct zkl_link *notify)
{
	struct wg_wait *w = ZKL_CONTAINER_OF(m, struct wg_wait, timer);

	wg_enter(w);
	if (w->deletes_due)
		wg_delete_all(w);
	if (w->lr && !w->walk && w->known) {
		/* A walk like any, counting only the cycle's records of
		 * other sessions. */
		wg_walk_on(w);
		if (w->walk)
			w->walk->second_look = 1;
		else
			wg_known_free(w);
	} else if (w->lr && !w->walk && w->resume_walk) {
		w->resume_walk = 0;
		w->walk_again = 1;
	}
	wg_leave(w, notify);
}

/* The session ended: its records went with it; the wait's request is
 * told by its own member, and ends its check (waitgraph_end_locked). */
static void wg_timer_expired(struct zkl_member *m, int requeue,
			     struct zkl_link *lost, struct zkl_link *notify)
{
	struct wg_wait *w = ZKL_CONTAINER_OF(m, struct wg_wait, timer);

	(void)requeue;
	(void)lost;
	wg_enter(w);
	wg_deletes_due(w, 0);
	for (struct wg_record *r = w->records; r; r = r->next)
		r->created = 0;
	wg_known_free(w);
	wg_leave(w, notify);
}

static const struct zkl_member_ops wg_timer_ops = {
	.resume_locked = wg_due,
	.expired_locked = wg_timer_expired,
};

/* ---- the request's side (lr.h) ---------------------------------------- */

void waitgraph_check_locked(struct zkl_lockreq *lr,
			    struct zkl_lockreq *const *pins, size_t n,
			    struct zkl_link *notify)
{
	const char *waits[LOCKREQ_MULTI_MAX];
	struct wg_wait *w;

	ZKL_ASSERT_HELD(&lr->s->lock);
	if (lr->outcome == LR_PENDING)
		lr->s->deadlock_checks++;
	if (lr->wg || lr->outcome != LR_PENDING || lr->try_only ||
	    lr->mode == ZKL_MODE_LEASE ||
	    (lr->kind != LR_PLAIN && lr->kind != LR_MULTI) ||
	    wg_own_waits(lr, waits, LOCKREQ_MULTI_MAX) == 0)
		return;
	if (!(w = calloc(1, sizeof(*w))))
		return; /* unchecked: it waits as before */
	w->s = lr->s;
	w->lr = lr;
	list_init(&w->timer.live);
	list_init(&w->timer.resume);
	w->timer.ops = &wg_timer_ops;
	for (size_t i = 0; i < n; i++)
		wg_add_pin(w, pins[i], waits[0]);
	if (lr->kind == LR_MULTI)
		wg_add_pin(w, lr, waits[0]); /* its members that hold */
	else if (!w->records) {
		free(w); /* it pins nothing: nothing to publish */
		return;
	}
	/* A multi-lock that pins nothing yet stays: a member granted while
	 * others wait is a pin (waitgraph_member_held_locked). */
	lr->wg = w;
	wg_enter(w);
	wg_publish(w);
	wg_leave(w, notify);
}

void waitgraph_member_held_locked(struct zkl_lockreq *g, struct zkl_lockreq *m,
				  struct zkl_link *notify)
{
	struct wg_wait *w = g->wg;
	const char *waits[LOCKREQ_MULTI_MAX];

	if (!w || !w->lr || wg_own_waits(g, waits, LOCKREQ_MULTI_MAX) == 0)
		return;
	wg_enter(w);
	wg_add_record(w, m->node, waits[0]);
	wg_publish(w);
	if (w->walk) /* the walk under way may not see it */
		w->walk_again = 1;
	wg_leave(w, notify);
}

void waitgraph_end_locked(struct zkl_lockreq *lr)
{
	struct wg_wait *w = lr->wg;

	if (!w)
		return;
	ZKL_ASSERT_HELD(&lr->s->lock);
	lr->wg = NULL;
	w->lr = NULL;
	if (list_linked(&w->timer.resume))
		list_del(&w->timer.resume);
	wg_known_free(w);
	if (!w->s->closing) /* else they go with the session */
		wg_delete_all(w);
	wg_put_if_done_locked(w);
}
