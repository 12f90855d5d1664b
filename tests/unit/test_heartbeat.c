/*
 * The jeopardy clock's arithmetic (recipes/heartbeat.h): what answered
 * heartbeats prove, when the jeopardy is due, and the margin.
 */
#include <criterion/criterion.h>
#include <stdint.h>

#include "heartbeat.h"

#define T 10000 /* the session timeout, ms */
#define M 1000  /* its default margin */

static struct heartbeat_proof connected_at(int64_t t)
{
	struct heartbeat_proof p;

	heartbeat_new_handle(&p, t - 50);
	heartbeat_connected(&p, t);
	return p;
}

Test(heartbeat, nothing_is_due_before_the_handle_first_connects)
{
	struct heartbeat_proof p;

	heartbeat_new_handle(&p, 0);
	cr_assert_eq(heartbeat_jeopardy_due(&p, T, M), INT64_MAX,
		     "no lock can be held before a connection");
	heartbeat_connected(&p, 30000);
	cr_assert_eq(heartbeat_jeopardy_due(&p, T, M), T - M,
		     "the session began after the handle was made");
}

Test(heartbeat, the_older_of_the_last_two_answered_bounds_the_session)
{
	struct heartbeat_proof p = connected_at(1000);

	heartbeat_answered(&p, 1000); /* the first after connecting: twice */
	cr_assert_eq(heartbeat_jeopardy_due(&p, T, M), 1000 + T - M);
	heartbeat_answered(&p, 3500);
	cr_assert_eq(heartbeat_jeopardy_due(&p, T, M), 1000 + T - M);
	heartbeat_answered(&p, 6000);
	cr_assert_eq(heartbeat_jeopardy_due(&p, T, M), 3500 + T - M);
}

/* The review's case: cut, jeopardy declared, healed with the session
 * alive.  Before, the heartbeat from before the cut stayed the proof and
 * a second jeopardy came a period later, losing what was granted since. */
Test(heartbeat, a_reconnection_does_not_bring_a_second_jeopardy)
{
	const int64_t t0 = 100000; /* boot time: every time is past 0 */
	struct heartbeat_proof p = connected_at(t0);
	int64_t due;

	heartbeat_answered(&p, t0);
	heartbeat_answered(&p, t0 + 2500);
	/* Cut at t0 + 3000: declared at the older proof's due. */
	due = heartbeat_jeopardy_due(&p, T, M);
	cr_assert_eq(due, t0 + T - M);
	/* Healed at t0 + 9500, before the expiry: connected again, a
	 * heartbeat at once, answered. */
	heartbeat_connected(&p, t0 + 9500);
	heartbeat_answered(&p, t0 + 9510);
	due = heartbeat_jeopardy_due(&p, T, M);
	cr_assert_eq(due, t0 + 9510 + T - M,
		     "the next due is a timeout after the new proof, not %lld",
		     (long long)(due - t0));
	/* The next heartbeat, a period after that answer, moves it on. */
	heartbeat_answered(&p, t0 + 9520 + T / 4);
	cr_assert_eq(heartbeat_jeopardy_due(&p, T, M), t0 + 9510 + T - M);
}

Test(heartbeat, a_heartbeat_sent_before_the_reconnection_proves_the_old_way)
{
	struct heartbeat_proof p = connected_at(100000);

	heartbeat_answered(&p, 100000);
	heartbeat_answered(&p, 102500);
	heartbeat_connected(&p, 104000);
	heartbeat_answered(&p, 103900); /* in flight across it */
	cr_assert_eq(p.answered[1], 102500);
	cr_assert_eq(p.answered[0], 103900);
}

Test(heartbeat, the_default_margin_follows_the_timeout_the_server_granted)
{
	cr_assert_eq(heartbeat_margin(0, 10000), 1000, "a tenth");
	cr_assert_eq(heartbeat_margin(0, 30000), 3000,
		     "a longer timeout granted: a tenth of it");
	cr_assert_eq(heartbeat_margin(0, 4000), 500, "half a second at least");
	cr_assert_eq(heartbeat_margin(0, 1600), 400,
		     "under a quarter of a short timeout");
	cr_assert_eq(heartbeat_margin(2000, 10000), 2000, "as asked");
	cr_assert_eq(heartbeat_margin(3000, 10000), 2500,
		     "a quarter of the timeout at most");
}
