/* SPDX-License-Identifier: MIT */
/*
 * test_dcache_read_side.c - the lookup's inline read-side section
 * (cache/dcache_int.h, dc_read_lock) holds off liburcu-bp's grace periods
 * exactly as the library's own read lock does.
 *
 * Linked as the shim is: cache/ with the lazy loader (cache/dcache_urcu.c),
 * not with liburcu, which dcache_urcu_load() dlopen()s.  A reader thread
 * enters a section; another thread calls synchronize_rcu(); the test checks
 * that it has not returned while the section is open (it looks after 200 ms:
 * a broken read side lets it return at once), and that it returns once the
 * section ends.  No timing is asserted: a slow machine only makes the first
 * check easier to pass.
 */
#define _GNU_SOURCE
#define URCU_INLINE_SMALL_FUNCTIONS
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "dcache.h"
#include "dcache_int.h"

#ifdef __SANITIZE_THREAD__
#define INLINE_SIDE 0
#else
#define INLINE_SIDE 1
#endif

static int sync_done;
static int reader_may_leave;
static int reader_in;

static void pause_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void *do_synchronize(void *arg)
{
	(void)arg;
	synchronize_rcu();
	__atomic_store_n(&sync_done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/* arg: how deep the section nests.  A first section learns the thread's
 * reader slot (the library's lock), so that the held one is inline. */
static void *reader(void *arg)
{
	int depth = (int)(intptr_t)arg;

	dc_read_lock();
	dc_read_unlock();
	if (!tls_rd_slot && INLINE_SIDE)
		return (void *)1; /* the inline side was not taken */
	for (int i = 0; i < depth; i++)
		dc_read_lock();
	__atomic_store_n(&reader_in, 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&reader_may_leave, __ATOMIC_SEQ_CST))
		pause_ms(1);
	for (int i = 0; i < depth - 1; i++)
		dc_read_unlock();
	__atomic_store_n(&reader_in, 2, __ATOMIC_SEQ_CST); /* the outermost still held */
	while (__atomic_load_n(&reader_may_leave, __ATOMIC_SEQ_CST) < 2)
		pause_ms(1);
	dc_read_unlock();
	return NULL;
}

static void hold_then_release(int depth)
{
	pthread_t r, s;
	void *rr = NULL;

	assert_true(dcache_urcu_load());
	/* liburcu-bp's layout was found: the inline side is on (not under
	 * ThreadSanitizer: the library's functions, checked the same way) */
	assert_true(!!dc_rd.slot == INLINE_SIDE);
	sync_done = reader_may_leave = reader_in = 0;
	assert_int_equal(pthread_create(&r, NULL, reader, (void *)(intptr_t)depth), 0);
	while (!__atomic_load_n(&reader_in, __ATOMIC_SEQ_CST))
		pause_ms(1);
	assert_int_equal(pthread_create(&s, NULL, do_synchronize, NULL), 0);
	pause_ms(200);
	assert_int_equal(__atomic_load_n(&sync_done, __ATOMIC_SEQ_CST), 0);
	__atomic_store_n(&reader_may_leave, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&reader_in, __ATOMIC_SEQ_CST) != 2)
		pause_ms(1);
	pause_ms(100); /* inner sections left: the grace period still waits */
	assert_int_equal(__atomic_load_n(&sync_done, __ATOMIC_SEQ_CST), 0);
	__atomic_store_n(&reader_may_leave, 2, __ATOMIC_SEQ_CST);
	assert_int_equal(pthread_join(s, NULL), 0);
	assert_int_equal(pthread_join(r, &rr), 0);
	assert_null(rr);
	assert_int_equal(__atomic_load_n(&sync_done, __ATOMIC_SEQ_CST), 1);
}

static void test_dcache_read_side_inline_section_holds_off_grace_period(void **state)
{
	(void)state;
	hold_then_release(1);
}

static void test_dcache_read_side_nested_sections_hold_until_outermost_unlock(void **state)
{
	(void)state;
	hold_then_release(3);
}

/* A thread that ended (liburcu's destructor unregistered its reader) and a
 * new one: the new thread's sections are its own, inline after its first. */
static void *short_lived(void *arg)
{
	(void)arg;
	for (int i = 0; i < 1000; i++) {
		dc_read_lock();
		dc_read_unlock();
	}
	return tls_rd_slot || !INLINE_SIDE ? NULL : (void *)1;
}

static void test_dcache_read_side_threads_that_come_and_go_keep_grace_periods(void **state)
{
	(void)state;
	assert_true(dcache_urcu_load());
	for (int i = 0; i < 20; i++) {
		pthread_t t;
		void *rr = (void *)2;

		assert_int_equal(pthread_create(&t, NULL, short_lived, NULL), 0);
		assert_int_equal(pthread_join(t, &rr), 0);
		assert_null(rr);
		synchronize_rcu(); /* no reader left behind: returns */
	}
	hold_then_release(1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dcache_read_side_inline_section_holds_off_grace_period),
		cmocka_unit_test(test_dcache_read_side_nested_sections_hold_until_outermost_unlock),
		cmocka_unit_test(test_dcache_read_side_threads_that_come_and_go_keep_grace_periods),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
