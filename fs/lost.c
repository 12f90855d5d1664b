/*
 * lost.c - a held lock's holder is told: its lock was lost (with the
 * mount's ZooKeeper session, or its node deleted), or it was asked to let
 * go (its node given the revocation mark: MOUNT/<resource>/revoke, or
 * Curator's Revoker).
 *
 * The descriptor already answers EIO for a lost lock, and read() shows a
 * request to let go (lockreq knows both).  Here we say so in the log,
 * naming the holder, and with -o on_lost=signal or -o on_revoke=signal
 * tell the holder itself: shell scripts do not poll their lock
 * descriptors.  Never called with fs->lock held: the reports come from
 * the session's threads.
 */
#include "fs.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "identity.h"
#include "lineage.h"
#include "lockfile.h"
#include "log.h"

/* At most so many other holders of one lock are signalled. */
#define LOST_MAX_OTHERS 32

/* Is `pid` still the process that took the lock?  Its command name must
 * match: a pid reused since must not be signalled. */
static int lost_holder_alive(pid_t pid, const char *cmd)
{
	char path[64], comm[64];
	FILE *f;
	int same = 0;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fgets(comm, sizeof(comm), f)) {
		comm[strcspn(comm, "\n")] = '\0';
		same = strcmp(comm, cmd) == 0;
	}
	fclose(f);
	return same;
}

/* Signal the holder's process group, or the holder alone if it shares
 * ours (a daemon started from the same shell must not signal itself). */
static void lost_signal_holder(pid_t pid, int sig)
{
	pid_t pgid = getpgid(pid);
	int rc;

	if (pgid > 1 && pgid != getpgrp()) {
		rc = kill(-pgid, sig);
		log_msg(LOG_WARNING, "sent %s to process group %d: %s",
			sigabbrev_np(sig), (int)pgid,
			rc < 0 ? strerror(errno) : "ok");
	} else {
		rc = kill(pid, sig);
		log_msg(LOG_WARNING, "sent %s to pid %d: %s", sigabbrev_np(sig),
			(int)pid, rc < 0 ? strerror(errno) : "ok");
	}
}

/* A lock of several owners (-o reentrant): the processes that took it
 * again, besides the one its node names, into out; how many. */
static size_t lost_other_holders(struct zkl_fs *fs, const char *node,
				 pid_t named, struct lineage_proc *out,
				 size_t max)
{
	size_t n = 0;

	pthread_mutex_lock(&fs->lock);
	for (struct zkl_link *l = fs->lockfiles.next;
	     l != &fs->lockfiles && n < max; l = l->next) {
		struct lockfile *lf =
			ZKL_CONTAINER_OF(l, struct lockfile, link);
		if (lf->held && lf->holder.pid > 0 && lf->holder.pid != named &&
		    lockreq_node_is(lf->held, node))
			out[n++] = lf->holder;
	}
	for (struct zkl_link *l = fs->posix_locks.next;
	     l != &fs->posix_locks && n < max; l = l->next) {
		struct posixlock *p =
			ZKL_CONTAINER_OF(l, struct posixlock, link);
		if (p->holder.pid > 0 && p->holder.pid != named &&
		    lockreq_node_is(p->lr, node))
			out[n++] = p->holder;
	}
	pthread_mutex_unlock(&fs->lock);
	return n;
}

/* Tell the holders of the lock at `node` with signal sig: the process its
 * identity (data[0..len)) names, and anyone else of this host holding it
 * too (-o reentrant). */
static void lost_tell_holders(struct zkl_fs *fs, const char *node,
			      const void *data, size_t len, int sig)
{
	char pid_text[16] = "?", cmd[64] = "?";
	struct lineage_proc others[LOST_MAX_OTHERS];
	size_t n;
	pid_t pid;

	identity_get(data, len, "pid", pid_text, sizeof(pid_text));
	identity_get(data, len, "cmd", cmd, sizeof(cmd));
	pid = (pid_t)strtol(pid_text, NULL, 10);
	if (pid <= 1) {
		/* nobody named */
	} else if (!lost_holder_alive(pid, cmd)) {
		log_msg(LOG_INFO, "pid %d (%s) is gone: nobody to signal",
			(int)pid, cmd);
	} else {
		lost_signal_holder(pid, sig);
	}
	n = lost_other_holders(fs, node, pid, others, LOST_MAX_OTHERS);
	for (size_t i = 0; i < n; i++) {
		int seen = 0;
		for (size_t j = 0; j < i; j++)
			seen |= others[j].pid == others[i].pid;
		if (!seen && lineage_still_runs(others[i]))
			lost_signal_holder(others[i].pid, sig);
	}
}

/* Say in the log what happened to the lock at node (`what`, naming it,
 * then its holder, `why` and what follows), and signal its holders with
 * sig unless 0. */
static void lost_tell(struct zkl_fs *fs, const char *node, const void *data,
		      size_t len, int level, const char *what, const char *why,
		      const char *then, int sig)
{
	char pid[16] = "?", cmd[64] = "?";

	identity_get(data, len, "pid", pid, sizeof(pid));
	identity_get(data, len, "cmd", cmd, sizeof(cmd));
	log_msg(level, "%s %s held by pid %s (%s): %s; %s", what, node, pid,
		cmd, why, then);
	if (sig)
		lost_tell_holders(fs, node, data, len, sig);
}

void fs_lock_lost(const char *node, const char *why, const void *data,
		  size_t len, void *arg)
{
	struct zkl_fs *fs = arg;

	lost_tell(fs, node, data, len, LOG_WARNING, "lost lock", why,
		  "reads and writes of its descriptor now fail with EIO",
		  fs->on_lost_signal);
}

void fs_lock_revoked(const char *node, const char *why, const void *data,
		     size_t len, void *arg)
{
	struct zkl_fs *fs = arg;

	lockfile_notify_revoked(fs, node);
	lost_tell(fs, node, data, len, LOG_NOTICE, "lock", why,
		  "it holds on until it does", fs->on_revoke_signal);
}
