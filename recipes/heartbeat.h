/*
 * heartbeat.h - what answered heartbeats prove about how long ZooKeeper
 * keeps a session, and when the jeopardy is due.  Pure arithmetic on
 * times in milliseconds of one clock (session_clock.c uses CLOCK_BOOTTIME);
 * the argument is in session_clock.c and doc/design.md ("Jeopardy").
 */
#ifndef ZKL_HEARTBEAT_H
#define ZKL_HEARTBEAT_H

#include <stdint.h>

/* The default margin: a tenth of the timeout, and at least this. */
#define HEARTBEAT_MIN_MARGIN_MS 500

struct heartbeat_proof {
	/* Send times of the last two heartbeats answered, newest first:
	 * the session lives until answered[1] + timeout at least. */
	int64_t answered[2];
	/* When the handle last connected (0: not yet, on this handle). */
	int64_t connected_ms;
};

/* A new handle is about to be made at `now`: its session is created
 * after now, and lasts a timeout from then at least. */
void heartbeat_new_handle(struct heartbeat_proof *p, int64_t now);

/* The handle connected (or connected again) at `now`. */
void heartbeat_connected(struct heartbeat_proof *p, int64_t now);

/* A heartbeat sent at sent_ms was answered.  The first answered after a
 * connection counts twice: connecting, the server created or revalidated
 * the session through the leader just before (see session_clock.c). */
void heartbeat_answered(struct heartbeat_proof *p, int64_t sent_ms);

/* The margin kept for a session of timeout_ms: `asked` (0: the default,
 * a tenth of the timeout and HEARTBEAT_MIN_MARGIN_MS at least), but under
 * a quarter of the timeout, so that heartbeats answered on time never
 * reach it. */
int64_t heartbeat_margin(int64_t asked, int64_t timeout_ms);

/* When every held lock is to be declared lost if nothing sent since has
 * been answered; INT64_MAX before the handle first connected (nothing can
 * be held). */
int64_t heartbeat_jeopardy_due(const struct heartbeat_proof *p,
			       int64_t timeout_ms, int64_t margin_ms);

#endif
