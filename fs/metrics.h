/*
 * metrics.h - this mount's counters as Prometheus reads them
 * (MOUNT/.metrics, -o metrics_file: metrics.c).
 */
#ifndef ZKL_METRICS_H
#define ZKL_METRICS_H

#include <stddef.h>

#include "fs.h"

/* The text exposition, in *text (malloc'd, len bytes).  Asks ZooKeeper
 * nothing.  Any thread; fs->session open.  Returns 0 or -ENOMEM. */
int metrics_text(struct zkl_fs *fs, char **text, size_t *len);

/* The session's state as .status and .metrics name it: connected,
 * suspended, jeopardy or expired. */
const char *metrics_state_name(const struct zkl_session_stats *st);

/*
 * -o metrics_file=PATH: PATH kept a copy of MOUNT/.metrics
 * (metrics.c says how and when).
 */

struct metrics_file;

/* Can PATH be written (its directory exists and is writable)?  Before
 * anything starts, so that a wrong path fails the start.  Returns 0, or
 * -errno with a message in err. */
int metrics_file_check(const char *path, char *err, size_t errlen);

/* Write PATH now and keep it current from a thread of its own; fs's
 * session open.  Returns 0 and *out, or -errno. */
int metrics_file_start(struct zkl_fs *fs, const char *path,
		       struct metrics_file **out);

/* Stop the thread and remove PATH.  NULL: nothing. */
void metrics_file_stop(struct metrics_file *mf);

#endif
