/*
 * sigpend.h - the signals pending for a thread that waits for a lock,
 * read from /proc, and which of them end its wait: what a signal does to
 * a parked request is the waiter's (waiter.c, waiter.h).
 */
#ifndef ZKL_SIGPEND_H
#define ZKL_SIGPEND_H

#include <stdint.h>
#include <sys/types.h>

/*
 * Does the signal that interrupted a blocked open cancel it?
 *
 * The kernel sends FUSE_INTERRUPT for any signal that wakes the waiting
 * thread, including SIGCHLD for which bash has a handler.  A lock wait is
 * cancelled only by a signal whose default action is not to be ignored or
 * to stop: SIGCHLD, SIGWINCH, SIGURG, SIGCONT (ignored by default) and
 * SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU (stop, then continue: the waiter keeps
 * its place) never cancel.  We read the thread's pending masks in /proc.
 *
 * A cancelling signal that the process catches (SIGALRM of a timer with a
 * handler, a profiler's SIGPROF) makes the call return EINTR to the
 * handler, and a program, a runtime or SA_RESTART may well ask again at
 * once: such a wait keeps its place for that (waiter.c).
 */

/* Bit (sig - 1) set for each signal, as /proc shows masks. */
#define SIGPEND_BIT(sig) (UINT64_C(1) << ((sig)-1))

/* The pending, blocked and caught (handled) masks of a thread. */
struct sigpend_masks {
	uint64_t pending, blocked, caught;
};

/* Parse the SigPnd, ShdPnd, SigBlk and SigCgt lines of a
 * /proc/<tid>/status text.  Returns 0, or -EINVAL if a line is missing or
 * malformed. */
int sigpend_parse(const char *status, struct sigpend_masks *m);

enum sigpend_verdict {
	SIGPEND_WAIT,    /* nothing that cancels a wait */
	SIGPEND_CANCEL,  /* a signal that kills, or is not caught */
	SIGPEND_HANDLED, /* only signals the process catches */
};

enum sigpend_verdict sigpend_classify(const struct sigpend_masks *m);

/* Read /proc/<tid>/status and decide.  A thread that is gone or unreadable
 * is treated as killed: SIGPEND_CANCEL. */
enum sigpend_verdict sigpend_thread_classify(pid_t tid);

#endif
