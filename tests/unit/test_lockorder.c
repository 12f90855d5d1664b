/* The order of lock nodes against what two mounts can see: whatever the
 * other clients put in the queue, and however listings taken at different
 * moments differ, no two views may grant two conflicting requests at once.
 * A simulated parent znode gives numbers as ZooKeeper does (its cversion,
 * counted up by every child created or deleted), hostile clients add
 * hand-made nodes with any number, and mounts take listings. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "lockrule.h"

/* Is the request named `self` granted in a listing of names[0..n) taken
 * when the parent's cversion was cversion? */
static int granted(char **names, size_t n, int32_t cversion, const char *self)
{
	struct zkl_node v[128];
	size_t got;
	ssize_t i;

	cr_assert_leq(n, 128);
	got = lockrule_collect(names, n, LOCKRULE_ALL_STYLES, cversion, v);
	i = lockrule_find(v, got, cversion, self);
	cr_assert_geq(i, 0, "%s not found in its own listing", self);
	return lockrule_watch(v, NULL, 0, (size_t)i, 1) < 0;
}

#define OURS(n) "_c_0123abcd-0000-4000-8000-00000000000" n "-write-"

Test(lockorder, the_reported_hostile_numbers_do_not_let_two_mounts_hold)
{
	/* Persistent nodes of the ZooKeeper recipe's grammar, numbers more
	 * than 2^31 apart: the old rule (before by wrapped difference) was
	 * no order at all, and two mounts both held. */
	char *hostile[] = {
		"h281470-write-0766332488",
		"h802464-write--1600172925",
		"h849723-write-0936031609",
		"h137087-write-0384086879",
	};
	/* The resource has seen 12 changes since: two real requests. */
	int32_t c = 12;
	char a[64], b[64];
	char *first[6], *second[6];

	snprintf(a, sizeof(a), OURS("a") "%010d", 10);
	snprintf(b, sizeof(b), OURS("b") "%010d", 11);
	for (int i = 0; i < 4; i++)
		first[i] = second[i] = hostile[i];
	first[4] = a;
	second[4] = a;
	second[5] = b;
	/* Mount A listed before b was made; mount B after. */
	int a_holds = granted(first, 5, c - 1, a);
	int b_holds = granted(second, 6, c, b);
	cr_assert(!(a_holds && b_holds), "both held");
	cr_assert(!b_holds, "b came after a: it cannot hold while a lives");
}

/* ---- the simulation ---------------------------------------------------- */

#define SIM_NODES 96
#define SIM_SNAPS 24

struct sim_node {
	char name[64];
	int real;       /* made by a mount's sequential create */
	int write;      /* a write request (else a read) */
	int born, died; /* step of creation, of deletion (or INT_MAX) */
};

struct sim_snap {
	int step;
	int32_t cversion;
};

struct sim {
	uint64_t rng;
	uint32_t cversion;
	struct sim_node nodes[SIM_NODES];
	int n;
	struct sim_snap snaps[SIM_SNAPS];
	int nsnaps;
};

static uint64_t sim_rand(struct sim *s)
{
	s->rng ^= s->rng << 13;
	s->rng ^= s->rng >> 7;
	s->rng ^= s->rng << 17;
	return s->rng;
}

static int sim_alive(const struct sim_node *node, int step)
{
	return node->born <= step && step < node->died;
}

/* A hand-made number: anywhere, just ahead of the counter, just behind
 * it, or across the circle from it. */
static int32_t sim_hostile_seq(struct sim *s)
{
	uint32_t near = (uint32_t)(sim_rand(s) % 64);

	switch (sim_rand(s) % 4) {
	case 0:
		return (int32_t)(uint32_t)sim_rand(s);
	case 1:
		return (int32_t)(s->cversion + near);
	case 2:
		return (int32_t)(s->cversion - near);
	default:
		return (int32_t)(s->cversion + 0x80000000u + near - 32);
	}
}

static void sim_run(struct sim *s, int steps)
{
	for (int step = 0; step < steps; step++) {
		unsigned r = (unsigned)(sim_rand(s) % 100);
		struct sim_node *node = &s->nodes[s->n];

		if (r < 35 && s->n < SIM_NODES) {
			/* A mount's create: the cversion is its number. */
			node->real = 1;
			node->write = sim_rand(s) % 10 < 6;
			snprintf(node->name, sizeof(node->name),
				 "_c_0123abcd-0000-4000-8000-%012x-%s%010d",
				 s->n, node->write ? "write-" : "read-",
				 (int32_t)s->cversion);
		} else if (r < 45 && s->n < SIM_NODES) {
			node->real = 0;
			node->write = 1;
			snprintf(node->name, sizeof(node->name),
				 "h%d-write-%010d", s->n, sim_hostile_seq(s));
		} else if (r < 75 && s->n > 0) {
			struct sim_node *victim =
				&s->nodes[sim_rand(s) % (uint64_t)s->n];
			if (sim_alive(victim, step)) {
				victim->died = step;
				s->cversion++;
			}
			continue;
		} else {
			if (s->nsnaps < SIM_SNAPS)
				s->snaps[s->nsnaps++] = (struct sim_snap){
					.step = step,
					.cversion = (int32_t)s->cversion,
				};
			continue;
		}
		node->born = step;
		node->died = steps + 1;
		s->n++;
		s->cversion++; /* any create counts it up */
	}
}

/* The real nodes granted in snapshot k: their indexes into g[]. */
static int sim_grants(struct sim *s, int k, int *g)
{
	char *names[SIM_NODES];
	size_t n = 0;
	int ng = 0;

	/* A listing taken after this step's change. */
	for (int i = 0; i < s->n; i++)
		if (sim_alive(&s->nodes[i], s->snaps[k].step))
			names[n++] = s->nodes[i].name;
	for (int i = 0; i < s->n; i++)
		if (s->nodes[i].real &&
		    sim_alive(&s->nodes[i], s->snaps[k].step) &&
		    granted(names, n, s->snaps[k].cversion, s->nodes[i].name))
			g[ng++] = i;
	return ng;
}

/* Starting points: anywhere, just before the 2^31 wrap of the signed
 * number, and just before the 2^32 wrap of the counter. */
static uint32_t sim_start(struct sim *s)
{
	switch (sim_rand(s) % 3) {
	case 0:
		return (uint32_t)sim_rand(s);
	case 1:
		return 0x7fffffffu - (uint32_t)(sim_rand(s) % 40);
	default:
		return 0xffffffffu - (uint32_t)(sim_rand(s) % 40);
	}
}

Test(lockorder, no_two_listings_grant_two_conflicting_requests)
{
	struct sim s = { .rng = 0x9e3779b97f4a7c15ull };
	long checked = 0;

	for (int round = 0; round < 3000; round++) {
		int grants[SIM_SNAPS][SIM_NODES], ng[SIM_SNAPS];

		s.n = s.nsnaps = 0;
		s.cversion = sim_start(&s);
		sim_run(&s, 70);
		for (int k = 0; k < s.nsnaps; k++)
			ng[k] = sim_grants(&s, k, grants[k]);
		/* x granted in an earlier (or the same) listing and still there
		 * at a later one, y granted in the later one. */
		for (int a = 0; a < s.nsnaps; a++)
			for (int b = a; b < s.nsnaps; b++)
				for (int i = 0; i < ng[a]; i++)
					for (int j = 0; j < ng[b]; j++) {
						struct sim_node *x =
							&s.nodes[grants[a][i]];
						struct sim_node *y =
							&s.nodes[grants[b][j]];
						checked++;
						if (x == y ||
						    !sim_alive(
							    x,
							    s.snaps[b].step) ||
						    (!x->write && !y->write))
							continue;
						cr_assert_fail(
							"round %d: %s held at "
							"step %d and %s at "
							"step %d",
							round, x->name,
							s.snaps[a].step,
							y->name,
							s.snaps[b].step);
					}
	}
	cr_assert_gt(checked, 10000, "the simulation checked too little");
}

Test(lockorder, a_real_queue_is_served_in_creation_order_across_the_wrap)
{
	/* With no hand-made node, the first real node alive holds, whatever
	 * side of the wrap the counter is on. */
	struct sim s = { .rng = 12345 };

	for (int round = 0; round < 500; round++) {
		char *names[SIM_NODES];
		size_t n = 0;
		int first = -1, last_step = 60;

		s.n = s.nsnaps = 0;
		s.cversion = 0x7fffffffu - 20 + (uint32_t)(sim_rand(&s) % 40);
		for (int step = 0; step < last_step; step++) {
			struct sim_node *node = &s.nodes[s.n++];
			node->real = node->write = 1;
			node->born = step;
			node->died = sim_rand(&s) % 3 ? last_step + 1
						      : step + 1;
			snprintf(node->name, sizeof(node->name),
				 "_c_0123abcd-0000-4000-8000-%012x-write-%010d",
				 step, (int32_t)s.cversion++);
			if (node->died <= last_step)
				s.cversion++;
		}
		for (int i = 0; i < s.n; i++)
			if (sim_alive(&s.nodes[i], last_step)) {
				names[n++] = s.nodes[i].name;
				if (first < 0)
					first = i;
			}
		for (int i = 0; i < s.n; i++)
			if (sim_alive(&s.nodes[i], last_step))
				cr_assert_eq(granted(names, n,
						     (int32_t)s.cversion,
						     s.nodes[i].name),
					     i == first, "round %d: %s", round,
					     s.nodes[i].name);
	}
}
