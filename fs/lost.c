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
#include "process.h"
#include "lockfile.h"
#include "log.h"

/* At most so many other holders of one lock are signalled. */
#define LOST_MAX_OTHERS 32

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
				 struct lineage_proc named,
				 struct lineage_proc *out, size_t max)
{
	size_t n = 0;

	pthread_mutex_lock(&fs->lock);
	for (struct zkl_link *l = fs->lockfiles.next;
	     l != &fs->lockfiles && n < max; l = l->next) {
		struct lockfile *lf =
			ZKL_CONTAINER_OF(l, struct lockfile, link);
		if (lf->held && lf->holder.pid > 0 &&
		    !lineage_has(&named, 1, lf->holder) &&
		    lockreq_node_is(lf->held, node))
			out[n++] = lf->holder;
	}
	for (struct zkl_link *l = fs->posix_locks.next;
	     l != &fs->posix_locks && n < max; l = l->next) {
		struct posixlock *p =
			ZKL_CONTAINER_OF(l, struct posixlock, link);
		if (p->holder.pid > 0 && !lineage_has(&named, 1, p->holder) &&
		    lockreq_node_is(p->lr, node))
			out[n++] = p->holder;
	}
	pthread_mutex_unlock(&fs->lock);
	return n;
}

/* Keep in others[0..n) those that still run, each once; how many. */
static size_t lost_still_running(struct lineage_proc *others, size_t n)
{
	size_t kept = 0;

	for (size_t i = 0; i < n; i++)
		if (!lineage_has(others, kept, others[i]) &&
		    lineage_still_runs(others[i]))
			others[kept++] = others[i];
	return kept;
}

/* Say that the process the lock's node names, named (cmd), is gone, and
 * which other holders of this host (-o reentrant) are told instead.  The
 * daemon does not see a descriptor handed on (FUSE is not told of a
 * fork, nor of SCM_RIGHTS): whoever has the gone holder's now is not
 * known here, and not guessed at. */
static void lost_log_gone(struct lineage_proc named, const char *cmd,
			  const struct lineage_proc *others, size_t n)
{
	/* LOST_MAX_OTHERS pids of up to 11 characters, and their commas */
	char pids[LOST_MAX_OTHERS * 13] = "";
	size_t used = 0;
	/* Its pid taken since: another process, which is left alone. */
	const char *reused = kill(named.pid, 0) == 0 || errno == EPERM
				     ? " (its pid is another process's now)"
				     : "";

	for (size_t i = 0; i < n; i++)
		used += (size_t)snprintf(pids + used, sizeof(pids) - used,
					 "%s%d", i ? ", " : "",
					 (int)others[i].pid);
	if (n)
		log_msg(LOG_INFO,
			"pid %d (%s) is gone%s; held here too by pid %s, "
			"which took it again",
			(int)named.pid, cmd, reused, pids);
	else
		log_msg(LOG_INFO, "pid %d (%s) is gone%s: nobody to signal",
			(int)named.pid, cmd, reused);
}

/* Tell the holders of the lock at `node` with signal sig: the process its
 * identity (data[0..len)) names, if it still runs (the same pid and
 * start time: one that exec'd is still the holder, one that took a gone
 * holder's pid is not), and anyone else of this host holding it too
 * (-o reentrant). */
static void lost_tell_holders(struct zkl_fs *fs, const char *node,
			      const void *data, size_t len, int sig)
{
	struct lineage_proc named = { 0 }, others[LOST_MAX_OTHERS];
	char pid[16] = "", cmd[64] = "?";
	int runs;
	size_t n;

	identity_get(data, len, "pid", pid, sizeof(pid));
	identity_get(data, len, "cmd", cmd, sizeof(cmd));
	named.pid = (pid_t)strtol(pid, NULL, 10);
	/* Without a start time the process was gone before its request was
	 * read: whatever has its pid now is another. */
	runs = identity_holder(data, len, &named) == 0 &&
	       lineage_still_runs(named);
	n = lost_other_holders(fs, node, named, others, LOST_MAX_OTHERS);
	n = lost_still_running(others, n);
	if (named.pid <= 1) {
		/* nobody named */
	} else if (runs) {
		lost_signal_holder(named.pid, sig);
	} else {
		lost_log_gone(named, cmd, others, n);
	}
	for (size_t i = 0; i < n; i++)
		lost_signal_holder(others[i].pid, sig);
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
