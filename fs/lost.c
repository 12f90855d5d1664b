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
 *
 * The signal goes only where the holder could send it itself.  A holder
 * chooses its process group (setpgid, within its session): run by nobody,
 * it may join a root job's, and the daemon, root, must not signal that
 * job for it (issue 55).  Unless the holder may signal anything we may
 * (CAP_KILL in our user namespace: root, as a rule), a child process of
 * ours takes the holder's uids and sends: the kernel applies its own rule
 * to every member of the group at once, and the daemon names in the log
 * the members the holder could not signal.
 */
#include "fs.h"

#include <assert.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "identity.h"
#include "process.h"
#include "lockfile.h"
#include "log.h"

/* At most so many other holders of one lock are signalled. */
#define LOST_MAX_OTHERS 32
/* At most so many members of a group that a holder's signal spared are
 * named in the log; the others are counted. */
#define LOST_MAX_SPARED 32
/* The sender makes a few system calls; the holder may stop it (it has the
 * holder's uid), and then it is killed after this long. */
#define LOST_SENDER_MS 1000
/* setresuid(2) with 32-bit uids: on 32-bit x86 and arm SYS_setresuid takes
 * 16-bit ones. */
#ifdef SYS_setresuid32
#define LOST_SYS_SETRESUID SYS_setresuid32
#else
#define LOST_SYS_SETRESUID SYS_setresuid
#endif

/* What the sender did, in memory it shares with the daemon: written by the
 * sender alone, read once it has ended. */
struct lost_sent {
	int took; /* 1: ran as the holder; 0: not yet; -errno: could not */
	int sent; /* 1 once kill() returned */
	int err;  /* kill's errno, 0: sent */
	size_t nspared; /* members the holder could not signal */
	pid_t spared[LOST_MAX_SPARED];
};

/* The sender's end: exit_group(2) never returns. */
static void __attribute__((noreturn)) lost_sender_exit(void)
{
	for (;;)
		syscall(SYS_exit_group, 0L);
}

/* The sender, a child of the daemon forked for one signal: takes the
 * holder's real and effective uids, drops CAP_KILL, notes which of
 * members[0..n) the holder could not signal, sends sig to target and
 * says so in *out.  Only raw system calls: the daemon had other threads
 * when it forked, which may have held the C library's locks, and the
 * sanitizers' interceptors expect a whole process.  The saved uid and the
 * groups stay the daemon's, so that the holder cannot trace the sender (a
 * copy of the daemon's memory); a signal to it from the holder ends only
 * the sender. */
static void __attribute__((noreturn))
lost_sender(const struct process_creds *as, pid_t target, int sig,
	    const pid_t *members, size_t n, struct lost_sent *out)
{
	struct __user_cap_header_struct head = { _LINUX_CAPABILITY_VERSION_3,
						 0 };
	struct __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3];
	long rc = syscall(LOST_SYS_SETRESUID, (long)as->ruid, (long)as->euid,
			  -1L);

	/* An effective uid other than 0 has dropped every capability
	 * already; root's uid without CAP_KILL keeps the others, which
	 * kill() does not look at. */
	if (rc == 0)
		rc = syscall(SYS_capget, &head, caps);
	if (rc == 0) {
		caps[CAP_TO_INDEX(CAP_KILL)].effective &=
			~CAP_TO_MASK(CAP_KILL);
		rc = syscall(SYS_capset, &head, caps);
	}
	if (rc < 0) {
		out->took = -errno;
		lost_sender_exit();
	}
	out->took = 1;
	for (size_t i = 0; i < n; i++) {
		if (syscall(SYS_kill, (long)members[i], 0L) == 0 ||
		    errno != EPERM)
			continue;
		if (out->nspared < LOST_MAX_SPARED)
			out->spared[out->nspared] = members[i];
		out->nspared++;
	}
	out->err = syscall(SYS_kill, (long)target, (long)sig) < 0 ? errno : 0;
	out->sent = 1;
	lost_sender_exit();
}

/* Reap the sender, killed if it has not ended within LOST_SENDER_MS: the
 * calling thread (ZooKeeper's completion thread) must not wait on the
 * holder. */
static void lost_reap_sender(pid_t child)
{
	struct timespec nap = { 0, 100 * 1000L };
	long waited_ns = 0;
	pid_t r;

	while ((r = waitpid(child, NULL, WNOHANG)) == 0 &&
	       waited_ns < LOST_SENDER_MS * 1000000L) {
		nanosleep(&nap, NULL);
		waited_ns += nap.tv_nsec;
		if (nap.tv_nsec < 10 * 1000000L)
			nap.tv_nsec *= 2;
	}
	if (r == 0) { /* not reaped: still ours, its pid no other's */
		kill(child, SIGKILL);
		while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
			;
	}
}

/* Send sig to target (a pid, or minus a process group) with the holder's
 * credentials `as`, from a sender process (lost_sender).  A thread of
 * ours that took them would do as well for kill(), but the holder could
 * signal that thread, and SIGKILL to one thread ends the daemon.
 * members[0..n): the group's processes, to find whom the holder could not
 * signal.  Returns 0 and what the sender did in *out, or -errno if no
 * sender ran (nothing was sent). */
static int lost_send_as(const struct process_creds *as, pid_t target, int sig,
			const pid_t *members, size_t n, struct lost_sent *out)
{
	struct lost_sent *shared = mmap(NULL, sizeof(*shared),
					PROT_READ | PROT_WRITE,
					MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t child;
	int err = 0;

	if (shared == MAP_FAILED)
		return -errno;
	child = fork();
	if (child == 0)
		lost_sender(as, target, sig, members, n, shared);
	if (child < 0)
		err = -errno;
	else
		lost_reap_sender(child);
	*out = *shared; /* zeros when none ran */
	munmap(shared, sizeof(*shared));
	return err;
}

/* Add what fmt says to buf (of size, holding a string of *used bytes),
 * cut to fit. */
static void lost_append(char *buf, size_t size, size_t *used, const char *fmt,
			...) __attribute__((format(printf, 4, 5)));

static void lost_append(char *buf, size_t size, size_t *used, const char *fmt,
			...)
{
	va_list ap;
	int n;

	assert(*used < size);
	va_start(ap, fmt);
	n = vsnprintf(buf + *used, size - *used, fmt, ap);
	va_end(ap);
	if (n > 0)
		*used = *used + (size_t)n < size ? *used + (size_t)n : size - 1;
}

/* "P (comm, uid U)" of a process that the holder's signal spared, as far
 * as /proc still shows it, added to buf. */
static void lost_describe_spared(char *buf, size_t size, size_t *used,
				 pid_t pid)
{
	struct process_creds c;
	char status[4096], comm[64], uid[16] = "?";
	ssize_t len = procfile_read(pid, "comm", comm, sizeof(comm));

	if (len <= 0)
		strcpy(comm, "?");
	else if (comm[len - 1] == '\n')
		comm[len - 1] = '\0';
	status[0] = '\n'; /* so that every field starts a line */
	if (procfile_read(pid, "status", status + 1, sizeof(status) - 1) > 0 &&
	    process_creds_parse(status, &c) == 0)
		snprintf(uid, sizeof(uid), "%u", (unsigned)c.ruid);
	lost_append(buf, size, used, "%d (%s, uid %s)", (int)pid, comm, uid);
}

/* Send sig to target (pid, or -pgid for the group pgid; pgid 0 for a pid)
 * as the holder whose credentials are `as`, and say in the log what was
 * done, naming whom the holder could not signal. */
static void lost_signal_as(const struct process_creds *as, pid_t target,
			   pid_t pgid, int sig, const char *whom)
{
	/* LOST_MAX_SPARED of "pid (comm, uid U), ": under 50 bytes each */
	char sender[64], spared[LOST_MAX_SPARED * 50 + 100] = "";
	struct lost_sent sent = { 0 };
	pid_t *members = NULL;
	size_t n = 0, sender_len = 0, used = 0;
	int err;

	/* Listed as the daemon, which sees every process in /proc. */
	if (pgid > 0 && process_group_members(pgid, &members, &n) < 0)
		n = 0; /* sent all the same; whom it spared is not known */
	err = lost_send_as(as, target, sig, members, n, &sent);
	free(members);
	assert(sent.nspared <= n);
	lost_append(sender, sizeof(sender), &sender_len, "uid %u",
		    (unsigned)as->euid);
	if (as->ruid != as->euid)
		lost_append(sender, sizeof(sender), &sender_len,
			    " (real uid %u)", (unsigned)as->ruid);
	/* Else it could signal whatever we may (lost_signal_holder). */
	if (as->euid == 0)
		lost_append(sender, sizeof(sender), &sender_len,
			    " without CAP_KILL");
	if (err < 0 || sent.took < 0) {
		log_msg(LOG_WARNING,
			"sent nothing to %s: cannot take the holder's "
			"credentials (%s) to send only where it could: %s",
			whom, sender, strerror(err < 0 ? -err : -sent.took));
		return;
	}
	if (!sent.sent) {
		log_msg(LOG_WARNING,
			"%s to %s as %s: its sender was stopped or killed "
			"before it said whether it sent it",
			sigabbrev_np(sig), whom, sender);
		return;
	}
	if (sent.nspared)
		lost_append(spared, sizeof(spared), &used, "; spared pid%s ",
			    sent.nspared > 1 ? "s" : "");
	for (size_t i = 0; i < sent.nspared && i < LOST_MAX_SPARED; i++) {
		if (i)
			lost_append(spared, sizeof(spared), &used, ", ");
		lost_describe_spared(spared, sizeof(spared), &used,
				     sent.spared[i]);
	}
	if (sent.nspared > LOST_MAX_SPARED)
		lost_append(spared, sizeof(spared), &used, " and %zu more",
			    sent.nspared - LOST_MAX_SPARED);
	if (sent.nspared)
		lost_append(spared, sizeof(spared), &used,
			    ": the holder could not signal %s",
			    sent.nspared > 1 ? "them" : "it");
	log_msg(LOG_WARNING, "sent %s to %s as %s: %s%s", sigabbrev_np(sig),
		whom, sender, sent.err ? strerror(sent.err) : "ok", spared);
}

/* Signal the holder p's process group, or p alone if it shares ours (a
 * daemon started from the same shell must not signal itself): only where
 * p itself could send (lost_signal_as), unless it may signal whatever we
 * may. */
static void lost_signal_holder(struct lineage_proc p, int sig)
{
	struct process_creds as;
	int err = process_creds_of(p, &as);
	pid_t pgid = getpgid(p.pid);
	int group = pgid > 1 && pgid != getpgrp();
	pid_t target = group ? -pgid : p.pid;
	char whom[40];

	snprintf(whom, sizeof(whom), "%s %d", group ? "process group" : "pid",
		 (int)(group ? pgid : p.pid));
	if (err < 0) {
		log_msg(LOG_WARNING,
			"sent nothing to %s: the holder's credentials "
			"cannot be read: %s",
			whom, strerror(-err));
	} else if (as.cap_kill) {
		int rc = kill(target, sig);

		log_msg(LOG_WARNING, "sent %s to %s: %s", sigabbrev_np(sig),
			whom, rc < 0 ? strerror(errno) : "ok");
	} else {
		lost_signal_as(&as, target, group ? pgid : 0, sig, whom);
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
		lost_signal_holder(named, sig);
	} else {
		lost_log_gone(named, cmd, others, n);
	}
	for (size_t i = 0; i < n; i++)
		lost_signal_holder(others[i], sig);
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
