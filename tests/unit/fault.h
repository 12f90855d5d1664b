/*
 * fault.h - the allocation fault simulator of the fault tests (as SQLite's
 * test_malloc.c): the unit test executable is linked with --wrap for the
 * allocator, so the recipes' every malloc, calloc, realloc and strdup can
 * be made to fail at the N-th call, and the blocks still live counted.
 */
#ifndef FAULT_H
#define FAULT_H

/* Fail the n-th allocation from now (1: the next one), and only that one;
 * 0 turns failing off. */
void fault_alloc_fail_at(long n);
/* Has the armed failure happened? */
int fault_alloc_failed(void);
/* Blocks allocated through the wrappers and not yet freed. */
long fault_alloc_live(void);

#endif
