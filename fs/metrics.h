/*
 * metrics.h - this mount's counters as Prometheus reads them
 * (MOUNT/.metrics, -o metrics_file: metrics_file.c).
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

#endif
