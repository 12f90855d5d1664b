/*
 * metrics.c - MOUNT/.metrics and -o metrics_file's text: this mount's
 * counters in Prometheus's text exposition format (version 0.0.4), built
 * from what the session and the daemon count already, without a request
 * to ZooKeeper.  Every series is always there, zeros included, so that a
 * rate() over a restart or a first event has a start.  Every sample
 * carries the mount point (label mountpoint): the node exporter serves
 * the files of several mounts of one host together, and refuses two
 * samples of one name and labels.
 *
 * The names and labels are documented in doc/operations.md ("Metrics") and
 * zklockfs(8): keep them in step.
 */
#include "metrics.h"
#include "config.h"
#include "lockfile.h"
#include "tree.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

static const char *const metrics_modes[ZKL_MODES] = { "read", "write",
						      "lease" };
static const char *const metrics_kinds[FS_KINDS] = {
	[FS_KIND_OPEN] = "open",
	[FS_KIND_FLOCK] = "flock",
	[FS_KIND_FCNTL] = "fcntl",
};
static const char *const metrics_ops[ZKL_OPS] = {
	[ZKL_OP_SYNC] = "sync",
	[ZKL_OP_CREATE] = "create",
	[ZKL_OP_DELETE] = "delete",
};

/* What every sample is written with: the stream, and the mount's own
 * label, escaped ("mountpoint=\"/mnt/zklock\""). */
struct metrics_out {
	FILE *f;
	char mount[1024];
};

static void metrics_head(struct metrics_out *o, const char *name,
			 const char *type, const char *help)
{
	fprintf(o->f, "# HELP zklockfs_%s %s\n# TYPE zklockfs_%s %s\n", name,
		help, name, type);
}

/* label="value", the value's backslashes, double quotes and newlines
 * escaped, into out (truncated to size). */
static void metrics_label(char *out, size_t size, const char *label,
			  const char *value)
{
	size_t n = (size_t)snprintf(out, size, "%s=\"", label);

	for (; *value && n + 4 < size; value++) {
		if (*value == '\\' || *value == '"')
			out[n++] = '\\';
		if (*value == '\n') {
			out[n++] = '\\';
			out[n++] = 'n';
		} else {
			out[n++] = *value;
		}
	}
	snprintf(out + n, size - n, "\"");
}

/* The mount's label.  Prometheus takes only UTF-8 in a label value: a
 * mount point's bytes that are not are written as znode names write
 * them (%XX, tree.h), which keeps two mounts' labels apart. */
static void metrics_mount_label(struct metrics_out *o, const char *path)
{
	char enc[sizeof(o->mount)];

	if (znodename_encode(path, strlen(path), enc, sizeof(enc)) < 0)
		snprintf(enc, sizeof(enc), "?");
	metrics_label(o->mount, sizeof(o->mount), "mountpoint", enc);
}

/* One sample: name{mount[,labels]} value. */
static void metrics_sample(struct metrics_out *o, const char *name,
			   const char *labels, uint64_t value)
{
	fprintf(o->f, "zklockfs_%s{%s%s%s} %" PRIu64 "\n", name, o->mount,
		labels ? "," : "", labels ? labels : "", value);
}

static void metrics_histogram(struct metrics_out *o, const char *name,
			      const char *labels, const struct histogram *h,
			      const struct histogram_bounds *b)
{
	char bucket[128], le[160];
	uint64_t below = 0;

	snprintf(bucket, sizeof(bucket), "%s_bucket", name);
	for (size_t i = 0; i < b->n; i++) {
		below += h->counts[i];
		snprintf(le, sizeof(le), "%s,le=\"%g\"", labels, b->le[i]);
		metrics_sample(o, bucket, le, below);
	}
	snprintf(le, sizeof(le), "%s,le=\"+Inf\"", labels);
	metrics_sample(o, bucket, le, h->n);
	fprintf(o->f, "zklockfs_%s_sum{%s,%s} %.6f\n", name, o->mount, labels,
		h->sum);
	fprintf(o->f, "zklockfs_%s_count{%s,%s} %" PRIu64 "\n", name, o->mount,
		labels, h->n);
}

/* One value per mode and kind: held, waiting, or a counter of m. */
typedef uint64_t (*metrics_pick_fn)(const struct zkl_session_stats *st,
				    const struct zkl_session_metrics *m,
				    int mode, int kind);

static void metrics_lock_labels(char *out, size_t size, int mode, int kind)
{
	snprintf(out, size, "mode=\"%s\",kind=\"%s\"", metrics_modes[mode],
		 metrics_kinds[kind]);
}

static void metrics_by_lock(struct metrics_out *o, const char *name,
			    const struct zkl_session_stats *st,
			    const struct zkl_session_metrics *m,
			    metrics_pick_fn pick)
{
	char labels[64];

	for (int mode = 0; mode < ZKL_MODES; mode++)
		for (int kind = 0; kind < FS_KINDS; kind++) {
			metrics_lock_labels(labels, sizeof(labels), mode, kind);
			metrics_sample(o, name, labels,
				       pick(st, m, mode, kind));
		}
}
static uint64_t metrics_held(const struct zkl_session_stats *st,
			     const struct zkl_session_metrics *m, int mode,
			     int kind)
{
	(void)m;
	return st->held_by[mode][kind];
}

static uint64_t metrics_waiting(const struct zkl_session_stats *st,
				const struct zkl_session_metrics *m, int mode,
				int kind)
{
	(void)m;
	return st->waiting_by[mode][kind];
}

static uint64_t metrics_grants(const struct zkl_session_stats *st,
			       const struct zkl_session_metrics *m, int mode,
			       int kind)
{
	(void)st;
	return m->locks[mode][kind].grants;
}

static uint64_t metrics_releases(const struct zkl_session_stats *st,
				 const struct zkl_session_metrics *m, int mode,
				 int kind)
{
	(void)st;
	return m->locks[mode][kind].releases;
}

static uint64_t metrics_losses(const struct zkl_session_stats *st,
			       const struct zkl_session_metrics *m, int mode,
			       int kind)
{
	(void)st;
	return m->locks[mode][kind].losses;
}

/* The wait (hold 0) or hold times of every mode and kind. */
static void metrics_lock_histograms(struct metrics_out *o, const char *name,
				    const struct zkl_session_metrics *m,
				    int hold)
{
	char labels[64];

	for (int mode = 0; mode < ZKL_MODES; mode++)
		for (int kind = 0; kind < FS_KINDS; kind++) {
			const struct zkl_lock_metrics *lm =
				&m->locks[mode][kind];
			metrics_lock_labels(labels, sizeof(labels), mode, kind);
			metrics_histogram(o, name, labels,
					  hold ? &lm->hold : &lm->wait,
					  &histogram_lock_seconds);
		}
}

static void metrics_locks(struct metrics_out *out,
			  const struct zkl_session_stats *st,
			  const struct zkl_session_metrics *m)
{
	metrics_head(out, "locks_held", "gauge",
		     "Locks and leases this mount holds now.");
	metrics_by_lock(out, "locks_held", st, m, metrics_held);
	metrics_head(out, "locks_waiting", "gauge",
		     "Lock requests of this mount waiting now.");
	metrics_by_lock(out, "locks_waiting", st, m, metrics_waiting);
	metrics_head(out, "grants_total", "counter", "Locks granted.");
	metrics_by_lock(out, "grants_total", st, m, metrics_grants);
	metrics_head(out, "releases_total", "counter",
		     "Held locks let go by their holder.");
	metrics_by_lock(out, "releases_total", st, m, metrics_releases);
	metrics_head(out, "losses_total", "counter",
		     "Held locks lost: session expired, node deleted by "
		     "another client, jeopardy.");
	metrics_by_lock(out, "losses_total", st, m, metrics_losses);
	metrics_head(out, "wait_seconds", "histogram",
		     "Time from a lock request to its grant.");
	metrics_lock_histograms(out, "wait_seconds", m, 0);
	metrics_head(out, "hold_seconds", "histogram",
		     "Time from a grant to the lock's release or loss.");
	metrics_lock_histograms(out, "hold_seconds", m, 1);
}

static void metrics_counter(struct metrics_out *out, const char *name,
			    const char *help, uint64_t value)
{
	metrics_head(out, name, "counter", help);
	metrics_sample(out, name, NULL, value);
}

const char *metrics_state_name(const struct zkl_session_stats *st)
{
	if (st->dead || st->state == ZKL_CONN_EXPIRED)
		return "expired";
	if (st->jeopardy)
		return "jeopardy";
	return st->state == ZKL_CONN_CONNECTED ? "connected" : "suspended";
}

static void metrics_session(struct metrics_out *out, struct zkl_fs *fs,
			    const struct zkl_session_stats *st,
			    const struct zkl_session_metrics *m)
{
	static const char *const states[] = { "connected", "suspended",
					      "jeopardy", "expired" };
	const char *now = metrics_state_name(st);
	char labels[32];

	metrics_head(out, "session_state", "gauge",
		     "1 for the state the ZooKeeper session is in.");
	for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		snprintf(labels, sizeof(labels), "state=\"%s\"", states[i]);
		metrics_sample(out, "session_state", labels,
			       strcmp(now, states[i]) == 0);
	}
	metrics_counter(out, "connection_losses_total",
			"Connections to ZooKeeper lost (the session may live).",
			m->disconnects);
	metrics_counter(out, "session_expirations_total",
			"ZooKeeper sessions that expired.", st->expirations);
	metrics_counter(out, "delete_retries_total",
			"Deletes of this mount's lock nodes that ZooKeeper "
			"refused, each tried again until it lands.",
			st->delete_retries);
	metrics_counter(out, "resources_created_total",
			"Resource znodes this mount created (new names, and "
			"names made again after ZooKeeper reaped them).",
			st->resources_created);
	metrics_counter(out, "jeopardies_total",
			"Times every held lock was declared lost for want of "
			"an answer.",
			st->jeopardies);
	metrics_counter(out, "revocations_total",
			"Held locks of this mount asked to let go (revoke, "
			"Curator's Revoker, maxhold).",
			st->asked);
	metrics_counter(out, "maxhold_breaks_total",
			"Held locks of this mount broken for passing their "
			"maxhold.",
			st->maxhold_breaks);
	metrics_head(out, "revoke_sent_total", "counter",
		     "Holding nodes this mount's revoke files asked or broke.");
	metrics_sample(out, "revoke_sent_total", "how=\"ask\"",
		       atomic_load(&fs->asks_sent));
	metrics_sample(out, "revoke_sent_total", "how=\"break\"",
		       atomic_load(&fs->breaks_sent));
	metrics_counter(out, "deadlocks_total",
			"Waits of this mount failed with EDEADLK: each closed "
			"a cycle of waits across hosts.",
			st->deadlocks);
	metrics_counter(out, "deadlock_checks_total",
			"Long waits of this mount, by processes that hold a "
			"lock, checked for a cycle of waits across hosts.",
			st->deadlock_checks);
	metrics_counter(out, "refusals_total",
			"Changes refused to a user other than root and the "
			"mount's owner (limit, maxhold, revoke, rmdir).",
			atomic_load(&fs->refusals));
	metrics_head(out, "zookeeper_request_seconds", "histogram",
		     "Time ZooKeeper took to answer a request of this mount.");
	for (int op = 0; op < ZKL_OPS; op++) {
		snprintf(labels, sizeof(labels), "op=\"%s\"", metrics_ops[op]);
		metrics_histogram(out, "zookeeper_request_seconds", labels,
				  &m->requests[op], &histogram_request_seconds);
	}
}

int metrics_text(struct zkl_fs *fs, char **text, size_t *len)
{
	struct zkl_session_stats st;
	struct zkl_session_metrics *m = malloc(sizeof(*m));
	struct metrics_out o;
	struct timespec mono, wall;
	char base[1024];

	*text = NULL;
	*len = 0;
	if (!m || !(o.f = open_memstream(text, len))) {
		free(m);
		return -ENOMEM;
	}
	metrics_mount_label(&o, fs->mountpoint ? fs->mountpoint : "");
	session_stats(fs->session, &st);
	session_metrics(fs->session, m);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	clock_gettime(CLOCK_REALTIME, &wall);
	metrics_head(&o, "info", "gauge",
		     "The daemon's version and the base path it serves.");
	metrics_label(base, sizeof(base), "base", session_base(fs->session));
	fprintf(o.f,
		"zklockfs_info{%s,version=\"" ZKLOCKFS_VERSION "\",%s} 1\n",
		o.mount, base);
	metrics_head(&o, "start_time_seconds", "gauge",
		     "When the mount was made, in seconds since the epoch.");
	metrics_sample(
		&o, "start_time_seconds", NULL,
		(uint64_t)(wall.tv_sec - (mono.tv_sec - fs->started.tv_sec)));
	metrics_head(&o, "resources_known", "gauge",
		     "Resources the daemon keeps an entry for (looked up by "
		     "the kernel, not yet forgotten).");
	metrics_sample(&o, "resources_known", NULL, tree_count(&fs->tree));
	metrics_session(&o, fs, &st, m);
	metrics_locks(&o, &st, m);
	free(m);
	if (fclose(o.f) != 0) {
		free(*text);
		*text = NULL;
		return -ENOMEM;
	}
	return 0;
}

/*
 * -o metrics_file=PATH: PATH kept a copy of MOUNT/.metrics,
 * for the Prometheus node exporter's textfile collector, which serves
 * every *.prom file of a directory with its own metrics.
 *
 * The text is written whole to a hidden temporary file beside PATH and
 * renamed over it, so that a reader never sees half of it: every
 * METRICS_FILE_EVERY_MS, and within METRICS_FILE_LOOK_MS of a change of
 * the session's state (the number an alert watches).  At unmount PATH is
 * removed: a daemon that is gone has no current numbers, and a stale file
 * would be served as if it had.
 */
#define METRICS_FILE_EVERY_MS 5000
#define METRICS_FILE_LOOK_MS 500

struct metrics_file {
	struct zkl_fs *fs;
	char *path;
	pthread_t thread;
	pthread_mutex_t lock; /* guards stop */
	pthread_cond_t wake;
	int stop;
	int last_err; /* of the last write, logged once until it changes */
};

/* The directory of path, in out (PATH_MAX). */
static void metrics_file_dir(const char *path, char *out, size_t size)
{
	char copy[4096];

	snprintf(copy, sizeof(copy), "%s", path);
	snprintf(out, size, "%s", dirname(copy));
}

int metrics_file_check(const char *path, char *err, size_t errlen)
{
	char dir[4096];
	struct stat st;

	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "metrics_file=%s: not a regular file",
			 path);
		return -EISDIR;
	}
	metrics_file_dir(path, dir, sizeof(dir));
	if (access(dir, W_OK | X_OK) < 0) {
		snprintf(err, errlen, "metrics_file=%s: cannot write in %s: %s",
			 path, dir, strerror(errno));
		return -errno;
	}
	return 0;
}

/* Write the text to a temporary file and rename it to path.  Returns 0
 * or -errno. */
static int metrics_file_write(struct metrics_file *mf)
{
	char dir[4096], tmp[4096 + 64], *text, *base, copy[4096];
	size_t len, done = 0;
	int err = metrics_text(mf->fs, &text, &len), fd;

	if (err < 0)
		return err;
	metrics_file_dir(mf->path, dir, sizeof(dir));
	snprintf(copy, sizeof(copy), "%s", mf->path);
	base = basename(copy);
	snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, base);
	fd = mkstemp(tmp);
	if (fd < 0) {
		free(text);
		return -errno;
	}
	while (err == 0 && done < len) {
		ssize_t n = write(fd, text + done, len - done);
		if (n < 0 && errno != EINTR)
			err = -errno;
		else if (n > 0)
			done += (size_t)n;
	}
	free(text);
	if (err == 0 && fchmod(fd, 0644) < 0)
		err = -errno;
	if (close(fd) < 0 && err == 0)
		err = -errno;
	if (err == 0 && rename(tmp, mf->path) < 0)
		err = -errno;
	if (err < 0)
		unlink(tmp);
	return err;
}

static void metrics_file_update(struct metrics_file *mf)
{
	int err = metrics_file_write(mf);

	if (err < 0 && err != mf->last_err)
		log_msg(LOG_WARNING, "metrics_file=%s: cannot write it: %s",
			mf->path, strerror(-err));
	else if (err == 0 && mf->last_err < 0)
		log_msg(LOG_INFO, "metrics_file=%s: written again", mf->path);
	mf->last_err = err;
}

static const char *metrics_file_state(struct metrics_file *mf)
{
	struct zkl_session_stats st;

	session_stats(mf->fs->session, &st);
	return metrics_state_name(&st);
}

/* CLOCK_MONOTONIC, in ms: a step of the wall clock must not hold the
 * writes back (the condition waits on this clock too). */
static int64_t metrics_file_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void *metrics_file_run(void *arg)
{
	struct metrics_file *mf = arg;
	const char *state = metrics_file_state(mf);
	int64_t written = metrics_file_now_ms();

	metrics_file_update(mf);
	pthread_mutex_lock(&mf->lock);
	while (!mf->stop) {
		int64_t wake = metrics_file_now_ms() + METRICS_FILE_LOOK_MS;
		struct timespec t = { .tv_sec = wake / 1000,
				      .tv_nsec = (wake % 1000) * 1000000L };
		const char *now;

		pthread_cond_timedwait(&mf->wake, &mf->lock, &t);
		if (mf->stop)
			break;
		pthread_mutex_unlock(&mf->lock);
		now = metrics_file_state(mf);
		if (strcmp(now, state) != 0 ||
		    metrics_file_now_ms() - written >= METRICS_FILE_EVERY_MS) {
			metrics_file_update(mf);
			state = now;
			written = metrics_file_now_ms();
		}
		pthread_mutex_lock(&mf->lock);
	}
	pthread_mutex_unlock(&mf->lock);
	return NULL;
}

int metrics_file_start(struct zkl_fs *fs, const char *path,
		       struct metrics_file **out)
{
	struct metrics_file *mf = calloc(1, sizeof(*mf));
	pthread_condattr_t attr;
	int err;

	if (!mf || !(mf->path = strdup(path))) {
		free(mf);
		return -ENOMEM;
	}
	mf->fs = fs;
	pthread_mutex_init(&mf->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&mf->wake, &attr);
	pthread_condattr_destroy(&attr);
	err = -pthread_create(&mf->thread, NULL, metrics_file_run, mf);
	if (err < 0) {
		pthread_cond_destroy(&mf->wake);
		pthread_mutex_destroy(&mf->lock);
		free(mf->path);
		free(mf);
		return err;
	}
	*out = mf;
	return 0;
}

void metrics_file_stop(struct metrics_file *mf)
{
	if (!mf)
		return;
	pthread_mutex_lock(&mf->lock);
	mf->stop = 1;
	pthread_cond_signal(&mf->wake);
	pthread_mutex_unlock(&mf->lock);
	pthread_join(mf->thread, NULL);
	if (unlink(mf->path) < 0 && errno != ENOENT)
		log_msg(LOG_WARNING, "metrics_file=%s: cannot remove it: %s",
			mf->path, strerror(errno));
	pthread_cond_destroy(&mf->wake);
	pthread_mutex_destroy(&mf->lock);
	free(mf->path);
	free(mf);
}
