/*
 * metrics_file.c - -o metrics_file=PATH: PATH kept a copy of MOUNT/.metrics,
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
#include "metrics_file.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "log.h"
#include "metrics.h"

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
