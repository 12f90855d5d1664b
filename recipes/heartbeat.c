/*
 * heartbeat.c - the jeopardy clock's arithmetic (heartbeat.h).
 */
#include "heartbeat.h"

void heartbeat_new_handle(struct heartbeat_proof *p, int64_t now)
{
	p->answered[0] = p->answered[1] = now;
	p->connected_ms = 0;
}

void heartbeat_connected(struct heartbeat_proof *p, int64_t now)
{
	p->connected_ms = now;
}

void heartbeat_answered(struct heartbeat_proof *p, int64_t sent_ms)
{
	if (p->connected_ms != 0 && sent_ms >= p->connected_ms &&
	    p->answered[0] < p->connected_ms) {
		p->answered[0] = p->answered[1] = sent_ms;
		return;
	}
	p->answered[1] = p->answered[0];
	p->answered[0] = sent_ms;
}

int64_t heartbeat_margin(int64_t asked, int64_t timeout_ms)
{
	int64_t quarter = timeout_ms / 4, margin = asked;

	if (margin <= 0) {
		margin = timeout_ms / 10;
		if (margin < HEARTBEAT_MIN_MARGIN_MS)
			margin = HEARTBEAT_MIN_MARGIN_MS;
	}
	return margin < quarter ? margin : quarter;
}

int64_t heartbeat_jeopardy_due(const struct heartbeat_proof *p,
			       int64_t timeout_ms, int64_t margin_ms)
{
	if (p->connected_ms == 0)
		return INT64_MAX;
	return p->answered[1] + timeout_ms - margin_ms;
}
