/*
 * sigpend.h - does the signal that interrupted a blocked open cancel it?
 *
 * The kernel sends FUSE_INTERRUPT for any signal that wakes the waiting
 * thread, including SIGCHLD for which bash has a handler.  A lock wait is
 * cancelled only by a signal whose default action is not to be ignored or
 * to stop: SIGCHLD, SIGWINCH, SIGURG, SIGCONT (ignored by default) and
 * SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU (stop, then continue: the waiter keeps
 * its place) never cancel.  We read the thread's pending masks in /proc.
 */
#ifndef ZKL_SIGPEND_H
#define ZKL_SIGPEND_H

#include <stdint.h>
#include <sys/types.h>

/* Bit (sig - 1) set for each signal, as /proc shows masks. */
#define SIGPEND_BIT(sig) (UINT64_C(1) << ((sig)-1))

/* Parse the SigPnd, ShdPnd and SigBlk lines of a /proc/<tid>/status text.
 * Returns 0, or -EINVAL if a line is missing or malformed. */
int sigpend_parse(const char *status, uint64_t *pending, uint64_t *blocked);

/* Given the pending and blocked masks: 1 if the wait must be cancelled. */
int sigpend_cancels(uint64_t pending, uint64_t blocked);

/* Read /proc/<tid>/status and decide.  A thread that is gone or unreadable
 * is treated as killed: 1. */
int sigpend_thread_cancels(pid_t tid);

#endif
