/*
 * held.h - assert that a mutex is held where a function says "lock held".
 *
 * A default mutex cannot name its owner, so this checks that someone holds
 * it: a caller that forgot to lock is caught, one that relies on another
 * thread's lock is not.  Cheap (one trylock), and gone with NDEBUG.
 */
#ifndef ZKL_HELD_H
#define ZKL_HELD_H

#include <assert.h>
#include <pthread.h>

static inline int zkl_mutex_is_locked(pthread_mutex_t *m)
{
	if (pthread_mutex_trylock(m) != 0)
		return 1;
	pthread_mutex_unlock(m);
	return 0;
}

#define ZKL_ASSERT_HELD(m) assert(zkl_mutex_is_locked(m))

#endif
