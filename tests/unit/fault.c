/*
 * fault.c - see fault.h.  Only code linked into the test executable goes
 * through these (libc's own allocations do not), which is what is wanted:
 * the recipes, the daemon's fs/ and the tests, not Criterion.
 */
#include "fault.h"

#include <stddef.h>
#include <string.h>

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
void *__real_aligned_alloc(size_t alignment, size_t size);
void __real_free(void *p);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);
void *__wrap_aligned_alloc(size_t alignment, size_t size);
void __wrap_free(void *p);
char *__wrap_strdup(const char *s);

static long countdown, live;
static int failed;

void fault_alloc_fail_at(long n)
{
	countdown = n;
	failed = 0;
}

int fault_alloc_failed(void)
{
	return failed;
}

long fault_alloc_live(void)
{
	return live;
}

/* Is this allocation the one to fail? */
static int fault_now(void)
{
	if (countdown <= 0 || --countdown > 0)
		return 0;
	failed = 1;
	return 1;
}

static void *fault_counted(void *p)
{
	if (p)
		live++;
	return p;
}

void *__wrap_malloc(size_t size)
{
	return fault_now() ? NULL : fault_counted(__real_malloc(size));
}

void *__wrap_calloc(size_t n, size_t size)
{
	return fault_now() ? NULL : fault_counted(__real_calloc(n, size));
}

void *__wrap_realloc(void *p, size_t size)
{
	if (!p)
		return __wrap_malloc(size);
	return fault_now() ? NULL : __real_realloc(p, size);
}

/* The daemon's inode table allocates its entries aligned (fs/tree.c). */
void *__wrap_aligned_alloc(size_t alignment, size_t size)
{
	return fault_now()
		       ? NULL
		       : fault_counted(__real_aligned_alloc(alignment, size));
}

void __wrap_free(void *p)
{
	if (p)
		live--;
	__real_free(p);
}

char *__wrap_strdup(const char *s)
{
	size_t len = strlen(s) + 1;
	char *p = __wrap_malloc(len);

	return p ? memcpy(p, s, len) : NULL;
}
