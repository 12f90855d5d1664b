/*
 * process.c - the calling process as /proc tells it (see process.h): its
 * files read whole, the process and its ancestors, and whether an open is
 * the kernel's own.
 */
#include "process.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <linux/kcmp.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * Read a file of /proc/<tid> (see process.h).
 */
ssize_t procfile_read(pid_t tid, const char *name, char *buf, size_t size)
{
	char path[64];
	ssize_t n;
	int fd;

	if (size == 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)tid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return n;
}

/*
 * A process and its ancestors (process.h).
 */
/* The decimal value of the line starting with key ("\nTgid:"). */
static int lineage_field(const char *status, const char *key, pid_t *out)
{
	const char *p = strstr(status, key);
	char *end;
	long v;

	if (!p)
		return -EINVAL;
	p += strlen(key);
	errno = 0;
	v = strtol(p, &end, 10);
	if (errno || end == p || (*end != '\n' && *end != '\0') || v < 0)
		return -EINVAL;
	*out = (pid_t)v;
	return 0;
}

int lineage_parse(const char *status, pid_t *tgid, pid_t *ppid)
{
	if (lineage_field(status, "\nTgid:", tgid) < 0 ||
	    lineage_field(status, "\nPPid:", ppid) < 0)
		return -EINVAL;
	return 0;
}

int procstat_field(const char *stat, int want, unsigned long long *out)
{
	/* After the command's closing parenthesis (field 2, which may hold
	 * spaces and parentheses itself): the state (3), then numbers. */
	const char *p = strrchr(stat, ')');
	char *end;

	if (!p || want < 4)
		return -EINVAL;
	p++;
	for (int field = 3; field <= want; field++) {
		while (*p == ' ')
			p++;
		if (!*p)
			return -EINVAL;
		if (field == want) {
			errno = 0;
			*out = strtoull(p, &end, 10);
			if (errno || end == p ||
			    (*end != ' ' && *end != '\n' && *end != '\0'))
				return -EINVAL;
			return 0;
		}
		p += strcspn(p, " ");
	}
	return -EINVAL;
}

int lineage_parse_stat(const char *stat, pid_t *ppid, unsigned long long *start)
{
	unsigned long long v;

	if (procstat_field(stat, 4, &v) < 0 ||
	    procstat_field(stat, 22, start) < 0)
		return -EINVAL;
	*ppid = (pid_t)v;
	return 0;
}

size_t lineage_of(pid_t tid, struct lineage_proc *out, size_t max)
{
	char buf[4096];
	size_t n = 0;
	pid_t pid, ppid;

	/* After a '\n', so that every field starts a line. */
	if (procfile_read(tid, "status", buf + 1, sizeof(buf) - 1) <= 0)
		return 0;
	buf[0] = '\n';
	if (lineage_parse(buf, &pid, &ppid) < 0)
		return 0;
	while (n < max && pid > 0) {
		unsigned long long start;

		if (procfile_read(pid, "stat", buf, sizeof(buf)) <= 0 ||
		    lineage_parse_stat(buf, &ppid, &start) < 0)
			break;
		out[n].pid = pid;
		out[n].start = start;
		n++;
		if (pid == 1)
			break;
		pid = ppid;
	}
	return n;
}

int lineage_has(const struct lineage_proc *lineage, size_t n,
		struct lineage_proc p)
{
	for (size_t i = 0; p.pid > 0 && i < n; i++)
		if (lineage[i].pid == p.pid && lineage[i].start == p.start)
			return 1;
	return 0;
}

/* The "ino:" line of a /proc/<pid>/fdinfo/<fd> text, or 0. */
static uint64_t lineage_fdinfo_ino(const char *text)
{
	const char *p = strncmp(text, "ino:", 4) == 0 ? text
						      : strstr(text, "\nino:");

	return p ? strtoull(strchr(p, ':') + 1, NULL, 10) : 0;
}

int lineage_has_open(struct lineage_proc p, const uint64_t *inos, size_t n)
{
	char path[64], buf[1024];
	struct dirent *d;
	int found = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo", (int)p.pid);
	dir = opendir(path);
	if (!dir)
		return 0;
	while (!found && (d = readdir(dir))) {
		char name[300];
		uint64_t ino;

		if (d->d_name[0] == '.')
			continue;
		snprintf(name, sizeof(name), "fdinfo/%s", d->d_name);
		if (procfile_read(p.pid, name, buf, sizeof(buf)) <= 0)
			continue;
		ino = lineage_fdinfo_ino(buf);
		for (size_t i = 0; ino && i < n; i++)
			found |= ino == inos[i];
	}
	closedir(dir);
	/* The same process still, not one that took its pid. */
	return found && lineage_still_runs(p);
}

int lineage_still_runs(struct lineage_proc p)
{
	unsigned long long start;
	char buf[1024];
	pid_t ppid;

	return p.pid > 0 &&
	       procfile_read(p.pid, "stat", buf, sizeof(buf)) > 0 &&
	       lineage_parse_stat(buf, &ppid, &start) == 0 && start == p.start;
}

/*
 * A mask line of a status text (see process.h).
 */
int procfile_status_mask(const char *status, const char *key, uint64_t *out)
{
	const char *p = strstr(status, key);
	char *end;

	if (!p)
		return -EINVAL;
	p += strlen(key);
	errno = 0;
	*out = strtoull(p, &end, 16);
	if (errno || end == p)
		return -EINVAL;
	return 0;
}

/*
 * Is an open the kernel's own, for an ioctl (see
 * process.h)?
 */
/* ioctl's number in the 32-bit system call table (i386 and arm), which
 * /proc shows for a compat task's call. */
#define KERNELOPEN_COMPAT_IOCTL 54

long kernelopen_syscall_of(const char *text)
{
	char *end;
	long nr;

	if (text[0] < '0' || text[0] > '9')
		return -1; /* "running", "-1 ...": in no system call */
	errno = 0;
	nr = strtol(text, &end, 10);
	if (errno != 0 || (*end != ' ' && *end != '\n'))
		return -1;
	return nr;
}

int kernelopen_is_ioctl(long nr)
{
	return nr == SYS_ioctl || nr == KERNELOPEN_COMPAT_IOCTL;
}

int kernelopen_in_ioctl(pid_t tid)
{
	char text[64];

	if (procfile_read(tid, "syscall", text, sizeof(text)) <= 0)
		return 0;
	return kernelopen_is_ioctl(kernelopen_syscall_of(text));
}

int process_threads(struct lineage_proc p)
{
	unsigned long long start, threads;
	char buf[1024];
	pid_t ppid;

	if (p.pid <= 0 || procfile_read(p.pid, "stat", buf, sizeof(buf)) <= 0 ||
	    lineage_parse_stat(buf, &ppid, &start) < 0 || start != p.start ||
	    procstat_field(buf, 20, &threads) < 0)
		return -ESRCH;
	return (int)threads;
}

/* Note that process pid has a descriptor on inos[i]: the first one
 * named, else several. */
static void process_note_user(pid_t *users, size_t i, pid_t pid)
{
	if (users[i] == 0)
		users[i] = pid;
	else if (users[i] != pid)
		users[i] = -1;
}

/* The device of the mount at `mountpoint`, as this process's mountinfo
 * says ("ID parent major:minor root mountpoint ..."): 0 and *dev, or
 * -ENOENT.  A mount point with a space shows as \040: not found then. */
static int process_mount_dev(const char *mountpoint, dev_t *dev)
{
	char *line = NULL;
	size_t cap = 0;
	int err = -ENOENT;
	FILE *f = mountpoint ? fopen("/proc/self/mountinfo", "re") : NULL;

	while (f && getline(&line, &cap, f) > 0) {
		char mnt[PATH_MAX];
		unsigned ma, mi;

		if (sscanf(line, "%*d %*d %u:%u %*s %4095s", &ma, &mi, mnt) ==
			    3 &&
		    strcmp(mnt, mountpoint) == 0) {
			*dev = makedev(ma, mi);
			err = 0;
		}
	}
	free(line);
	if (f)
		fclose(f);
	return err;
}

/* The descriptors of the table of task `task` of process pid (its
 * /proc/<pid>/task/<task>/fd): each one on our filesystem (device dev)
 * whose inode is inos[i] noted in users.  Each is looked at with statx,
 * which follows the descriptor to its file wherever it was opened (another
 * mount namespace, a path gone since), from cached attributes (no request
 * to a file server, ours included).  Returns 0, or -EACCES if a
 * descriptor could not be looked at (then it may be any). */
static int process_fds_of(pid_t pid, pid_t task, dev_t dev,
			  const uint64_t *inos, size_t n, pid_t *users)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	int fd, err = 0;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/fd", (int)pid,
		 (int)task);
	if (!(dir = opendir(path)))
		return errno == ENOENT || errno == ESRCH ? 0 : -EACCES;
	fd = dirfd(dir);
	while ((d = readdir(dir))) {
		struct statx stx;

		if (d->d_name[0] == '.')
			continue;
		if (statx(fd, d->d_name, AT_STATX_DONT_SYNC, STATX_INO, &stx) <
		    0) {
			if (errno != ENOENT) /* closed meanwhile: not there */
				err = -EACCES;
			continue;
		}
		if (makedev(stx.stx_dev_major, stx.stx_dev_minor) != dev &&
		    dev != 0)
			continue;
		for (size_t i = 0; i < n; i++)
			if (stx.stx_ino == inos[i])
				process_note_user(users, i, pid);
	}
	closedir(dir);
	return err;
}

/* Every descriptor table of process pid: its threads share one, but a
 * main thread that exited shows none and a thread that unshared its table
 * (unshare(CLONE_FILES)) has its own, so each thread's is read unless
 * kcmp(2) says it is one already read. */
static int process_tables_of(pid_t pid, dev_t dev, const uint64_t *inos,
			     size_t n, pid_t *users)
{
	pid_t read_tasks[16];
	size_t nread = 0;
	char path[64];
	struct dirent *d;
	DIR *tasks;
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(tasks = opendir(path)))
		return errno == ENOENT || errno == ESRCH ? 0 : -EACCES;
	while (!err && (d = readdir(tasks))) {
		char *end;
		long task = strtol(d->d_name, &end, 10);
		int seen = 0;

		if (task <= 0 || *end)
			continue;
		for (size_t i = 0; i < nread && !seen; i++)
			seen = syscall(SYS_kcmp, read_tasks[i], (pid_t)task,
				       KCMP_FILES, 0, 0) == 0;
		if (seen)
			continue;
		err = process_fds_of(pid, (pid_t)task, dev, inos, n, users);
		if (nread < sizeof(read_tasks) / sizeof(read_tasks[0]))
			read_tasks[nread++] = (pid_t)task;
	}
	closedir(tasks);
	return err;
}

int process_fd_users(const char *mountpoint, const uint64_t *inos, size_t n,
		     pid_t *users, pid_t *hidden, size_t *nhidden,
		     size_t max_hidden)
{
	DIR *proc = opendir("/proc");
	struct dirent *d;
	dev_t dev = 0; /* 0: unknown, every device's inode numbers count */
	int err = proc ? 0 : -errno;

	memset(users, 0, n * sizeof(*users));
	*nhidden = 0;
	(void)process_mount_dev(mountpoint, &dev);
	while (!err && (d = readdir(proc))) {
		char *end;
		long pid = strtol(d->d_name, &end, 10);

		if (pid <= 0 || *end || pid == getpid() ||
		    process_tables_of((pid_t)pid, dev, inos, n, users) == 0)
			continue;
		if (*nhidden == max_hidden)
			err = -EACCES; /* too many to say */
		else
			hidden[(*nhidden)++] = (pid_t)pid;
	}
	if (proc)
		closedir(proc);
	if (err < 0) /* nothing is known */
		for (size_t i = 0; i < n; i++)
			users[i] = -1;
	return err;
}

int process_descends_from(pid_t q, pid_t p)
{
	char buf[1024];

	/* Bounded: a loop in what /proc said meanwhile ends too. */
	for (int depth = 0; depth < 256 && q > 1; depth++) {
		unsigned long long start;
		pid_t parent;

		if (q == p)
			return 1;
		if (procfile_read(q, "stat", buf, sizeof(buf)) <= 0 ||
		    lineage_parse_stat(buf, &parent, &start) < 0)
			return 0;
		q = parent;
	}
	return q == p;
}

/*
 * Whom a process may signal (see process.h).
 */
/* The real and effective uids, the first two numbers of the "\nUid:"
 * line (saved and filesystem uids follow). */
static int creds_uids(const char *status, uid_t *ruid, uid_t *euid)
{
	const char *p = strstr(status, "\nUid:");
	unsigned long long v[2];
	char *end;

	if (!p)
		return -EINVAL;
	p += strlen("\nUid:");
	for (int i = 0; i < 2; i++) {
		errno = 0;
		v[i] = strtoull(p, &end, 10);
		if (errno || end == p || (*end != '\t' && *end != ' ') ||
		    v[i] > UINT32_MAX)
			return -EINVAL;
		p = end;
	}
	*ruid = (uid_t)v[0];
	*euid = (uid_t)v[1];
	return 0;
}

int process_creds_parse(const char *status, struct process_creds *c)
{
	uint64_t caps;

	if (creds_uids(status, &c->ruid, &c->euid) < 0 ||
	    procfile_status_mask(status, "\nCapEff:", &caps) < 0)
		return -EINVAL;
	c->cap_kill = (caps >> CAP_KILL & 1) != 0;
	return 0;
}

/* Is process pid in our user namespace?  0 when it cannot be told (the
 * namespace's link is shown only to whom may trace pid). */
static int creds_in_our_userns(pid_t pid)
{
	struct stat ours, theirs;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	return stat("/proc/self/ns/user", &ours) == 0 &&
	       stat(path, &theirs) == 0 && ours.st_dev == theirs.st_dev &&
	       ours.st_ino == theirs.st_ino;
}

int process_creds_of(struct lineage_proc p, struct process_creds *c)
{
	char buf[4096];
	ssize_t n;

	/* After a '\n', so that every field starts a line. */
	n = procfile_read(p.pid, "status", buf + 1, sizeof(buf) - 1);
	if (n == 0 || n == -ENOENT || n == -ESRCH)
		return -ESRCH;
	if (n < 0)
		return (int)n;
	buf[0] = '\n';
	if (process_creds_parse(buf, c) < 0)
		return -EINVAL;
	/* CAP_KILL in a namespace of its own reaches only that one's
	 * processes (root of a container made by a user). */
	if (c->cap_kill)
		c->cap_kill = creds_in_our_userns(p.pid);
	/* Read after the status: the same process still, so it was its. */
	return lineage_still_runs(p) ? 0 : -ESRCH;
}

int process_group_members(pid_t pgid, pid_t **out, size_t *n)
{
	DIR *proc = opendir("/proc");
	size_t count = 0, room = 0;
	pid_t *pids = NULL;
	struct dirent *d;

	*out = NULL;
	*n = 0;
	if (!proc)
		return -errno;
	while ((d = readdir(proc))) {
		unsigned long long group;
		char buf[1024], *end;
		long pid = strtol(d->d_name, &end, 10);

		/* Field 5 of its stat: the process's group. */
		if (pid <= 0 || *end ||
		    procfile_read((pid_t)pid, "stat", buf, sizeof(buf)) <= 0 ||
		    procstat_field(buf, 5, &group) < 0 ||
		    group != (unsigned long long)pgid)
			continue;
		if (count == room) {
			size_t more = room ? 2 * room : 16;
			pid_t *bigger = realloc(pids, more * sizeof(*pids));

			if (!bigger) {
				free(pids);
				closedir(proc);
				return -ENOMEM;
			}
			pids = bigger;
			room = more;
		}
		pids[count++] = (pid_t)pid;
	}
	closedir(proc);
	*out = pids;
	*n = count;
	return 0;
}
