/*
 * process.c - the calling process as /proc tells it (see process.h): its
 * files read whole, the process and its ancestors, the signals pending
 * for a waiting thread, and whether an open is the kernel's own.
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
 * Classify the signals pending for a waiting thread.
 */
static int sigpend_field(const char *status, const char *key, uint64_t *out)
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

int sigpend_parse(const char *status, struct sigpend_masks *m)
{
	uint64_t thread, shared;

	if (sigpend_field(status, "\nSigPnd:", &thread) < 0 ||
	    sigpend_field(status, "\nShdPnd:", &shared) < 0 ||
	    sigpend_field(status, "\nSigBlk:", &m->blocked) < 0 ||
	    sigpend_field(status, "\nSigCgt:", &m->caught) < 0)
		return -EINVAL;
	m->pending = thread | shared;
	return 0;
}

enum sigpend_verdict sigpend_classify(const struct sigpend_masks *m)
{
	const uint64_t harmless = SIGPEND_BIT(SIGCHLD) | SIGPEND_BIT(SIGWINCH) |
				  SIGPEND_BIT(SIGURG) | SIGPEND_BIT(SIGCONT) |
				  SIGPEND_BIT(SIGSTOP) | SIGPEND_BIT(SIGTSTP) |
				  SIGPEND_BIT(SIGTTIN) | SIGPEND_BIT(SIGTTOU);
	/* SIGKILL cannot be blocked nor caught, whatever the masks say. */
	const uint64_t kill = SIGPEND_BIT(SIGKILL);
	uint64_t cancels = m->pending & (~m->blocked | kill) & ~harmless;

	if (!cancels)
		return SIGPEND_WAIT;
	return cancels & (~m->caught | kill) ? SIGPEND_CANCEL : SIGPEND_HANDLED;
}

enum sigpend_verdict sigpend_thread_classify(pid_t tid)
{
	struct sigpend_masks m;
	char buf[4096];

	/* After a '\n', so that every field starts a line. */
	if (procfile_read(tid, "status", buf + 1, sizeof(buf) - 1) <= 0)
		return SIGPEND_CANCEL;
	buf[0] = '\n';
	if (sigpend_parse(buf, &m) < 0)
		return SIGPEND_CANCEL;
	return sigpend_classify(&m);
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

/* A "key:" line's number of a /proc/<pid>/fdinfo/<fd> text, or -1. */
static long long process_fdinfo_field(const char *text, const char *key)
{
	size_t len = strlen(key);
	const char *p = text;

	while (p && strncmp(p, key, len) != 0)
		if ((p = strchr(p, '\n')))
			p++;
	return p ? strtoll(p + len, NULL, 10) : -1;
}

/* Where the daemon's filesystem shows in the mount namespaces met in one
 * look at every process: its mounts' IDs there (a bind mount adds one),
 * as fdinfo's mnt_id names them. */
#define PROCESS_NS_MAX 16
#define PROCESS_MOUNTS_MAX 8
struct process_ns {
	char ns[64]; /* /proc/<pid>/ns/mnt's link */
	long long ids[PROCESS_MOUNTS_MAX];
	size_t n;
};
struct process_look {
	char dev[32]; /* "major:minor" of our mount, "" if unknown */
	struct process_ns ns[PROCESS_NS_MAX];
	size_t nns;
};

/* The IDs of pid's mounts of device dev, from its mountinfo ("ID parent
 * major:minor root mountpoint ..."), into ns. */
static void process_mounts_of(pid_t pid, const char *dev, struct process_ns *ns)
{
	char path[64], *line = NULL;
	size_t cap = 0, dlen = strlen(dev);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/mountinfo", (int)pid);
	if (!(f = fopen(path, "re")))
		return;
	while (getline(&line, &cap, f) > 0 && ns->n < PROCESS_MOUNTS_MAX) {
		long long id;
		int at = 0;

		if (sscanf(line, "%lld %*d %n", &id, &at) == 1 && at > 0 &&
		    strncmp(line + at, dev, dlen) == 0 &&
		    line[at + dlen] == ' ')
			ns->ids[ns->n++] = id;
	}
	free(line);
	fclose(f);
}

/* Our mount's device: the mountinfo line of this process whose mount
 * point is `mountpoint`.  "" if none is found. */
static void process_our_dev(const char *mountpoint, char *dev, size_t size)
{
	char *line = NULL;
	size_t cap = 0;
	FILE *f = mountpoint ? fopen("/proc/self/mountinfo", "re") : NULL;

	dev[0] = '\0';
	while (f && getline(&line, &cap, f) > 0) {
		char d[32], mnt[PATH_MAX];

		/* A mount point with a space shows as \040: not ours then,
		 * and every process's descriptors count by inode alone. */
		if (sscanf(line, "%*d %*d %31s %*s %4095s", d, mnt) == 2 &&
		    strcmp(mnt, mountpoint) == 0)
			snprintf(dev, size, "%s", d);
	}
	free(line);
	if (f)
		fclose(f);
}

/* Does fdinfo's mnt_id show our filesystem, for process pid?  Unknown
 * (our device not found, too many namespaces): yes, which only makes a
 * lock look shared. */
static int process_on_ours(struct process_look *look, pid_t pid, long long id)
{
	char path[64], ns[64];
	ssize_t len;
	struct process_ns *n = NULL;

	if (!look->dev[0])
		return 1;
	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
	if ((len = readlink(path, ns, sizeof(ns) - 1)) < 0)
		return 1;
	ns[len] = '\0';
	for (size_t i = 0; i < look->nns && !n; i++)
		if (strcmp(look->ns[i].ns, ns) == 0)
			n = &look->ns[i];
	if (!n) {
		if (look->nns == PROCESS_NS_MAX)
			return 1;
		n = &look->ns[look->nns++];
		snprintf(n->ns, sizeof(n->ns), "%s", ns);
		n->n = 0;
		process_mounts_of(pid, look->dev, n);
	}
	for (size_t i = 0; i < n->n; i++)
		if (n->ids[i] == id)
			return 1;
	return 0;
}

/* The inodes of our filesystem that process pid has descriptors on,
 * noted in users.  Returns 0, or -EACCES if its descriptors could not be
 * read. */
static int process_fds_of(struct process_look *look, pid_t pid,
			  const uint64_t *inos, size_t n, pid_t *users)
{
	char path[64], link[16], buf[512];
	struct dirent *d;
	DIR *dir;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	if (!(dir = opendir(path)))
		return errno == EACCES ? -EACCES : 0; /* gone: none */
	fd = dirfd(dir);
	while ((d = readdir(dir))) {
		char name[300];
		long long ino;

		if (d->d_name[0] == '.')
			continue;
		/* A file has a path: a socket, a pipe, an event fd do not,
		 * and need no fdinfo read. */
		if (readlinkat(fd, d->d_name, link, sizeof(link)) < 1 ||
		    link[0] != '/')
			continue;
		snprintf(name, sizeof(name), "fdinfo/%s", d->d_name);
		if (procfile_read(pid, name, buf, sizeof(buf)) <= 0 ||
		    (ino = process_fdinfo_field(buf, "ino:")) <= 0)
			continue;
		for (size_t i = 0; i < n; i++)
			if ((uint64_t)ino == inos[i] &&
			    process_on_ours(look, pid,
					    process_fdinfo_field(buf,
								 "mnt_id:")))
				process_note_user(users, i, pid);
	}
	closedir(dir);
	return 0;
}

int process_fd_users(const char *mountpoint, const uint64_t *inos, size_t n,
		     pid_t *users)
{
	struct process_look *look = calloc(1, sizeof(*look));
	DIR *proc = opendir("/proc");
	struct dirent *d;
	int err = look ? 0 : -ENOMEM;

	memset(users, 0, n * sizeof(*users));
	if (!proc && !err)
		err = -errno;
	if (look)
		process_our_dev(mountpoint, look->dev, sizeof(look->dev));
	while (!err && (d = readdir(proc))) {
		char *end;
		long pid = strtol(d->d_name, &end, 10);

		if (pid <= 0 || *end || pid == getpid())
			continue;
		if (process_fds_of(look, (pid_t)pid, inos, n, users) < 0)
			err = -EACCES;
	}
	if (proc)
		closedir(proc);
	free(look);
	if (err < 0) /* someone we cannot see may have any of them open */
		for (size_t i = 0; i < n; i++)
			users[i] = -1;
	return err;
}
