/* SPDX-License-Identifier: MIT */
/*
 * arena_stress.h - what test_dcache_arena.c and test_dcache_arena_reset.c
 * share to stress the session's shared listings (cache/dcache_arena.c):
 * an arena in anonymous shared memory, writers that publish listings whose
 * every name says which watch and which generation they were read under
 * ("w<wd>g<gen>n<i>"), and readers that check every listing they get is one
 * of their watch's, read under a generation current at some point of the
 * get (between the generation before and after it), whole.  Each test adds
 * the thread that changes generations (an invalidator, a watcher's resets).
 * Header-only, for the unit tests; include after cmocka.h.
 */
#ifndef RCUWALK_TEST_ARENA_STRESS_H
#define RCUWALK_TEST_ARENA_STRESS_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "dcache.h"

/* A formatted arena of `size` bytes, as a session's, unmapped by the test. */
static inline void *map_arena(size_t size)
{
	void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	assert_true(m != MAP_FAILED);
	assert_int_equal(dcache_arena_format(m, size), 0);
	assert_int_equal(dcache_arena_check(m, size), 0);
	return m;
}

struct stress {
	void *a;
	int wds;             /* watches 0 .. wds - 1 */
	unsigned int names;  /* a listing holds 1 .. names names */
	unsigned int rounds; /* puts per writer_main() */
	int stop;            /* atomic: the readers (and writers) stop */
	unsigned long *progress; /* shared, or NULL: bumped after each put */
	unsigned long got, bad, resets;
};

/* n names "w<wd>g<gen>n<i>" (d_type 4) into buf; the listing's length. */
static inline size_t stamped_listing(char *buf, size_t cap, int wd, uint64_t gen, unsigned int n)
{
	size_t len = 0;

	for (unsigned int i = 0; i < n; i++) {
		int w = snprintf(buf + len + 1, cap - len - 1, "w%dg%llun%u", wd,
				 (unsigned long long)gen, i);

		buf[len] = 4;
		len += (size_t)w + 2;
	}
	return len;
}

static inline void *writer_main(void *arg)
{
	struct stress *s = arg;
	char buf[4096];

	for (unsigned int r = 0; !__atomic_load_n(&s->stop, __ATOMIC_RELAXED) && r < s->rounds; r++) {
		int wd = (int)(r % (unsigned int)s->wds);
		unsigned int n = 1 + r % s->names;
		uint64_t g = dcache_arena_gen(s->a, wd);
		size_t len = stamped_listing(buf, sizeof(buf), wd, g, n);

		(void)dcache_arena_put(s->a, wd, g, buf, len, n);
		if (s->progress)
			__atomic_add_fetch(s->progress, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* A counter that a writer process bumps after each put, for its parent. */
static inline unsigned long *shared_counter(void)
{
	void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	assert_true(m != MAP_FAILED);
	return m;
}

/* SIGKILL writer process `pid` at a random point of its puts: 50 us to
 * 2 ms after `*progress` (bumped by it after each put) first moves.  Not
 * from its fork: a sanitizer's child can take longer than that to make
 * its first put, and then no kill lands among puts (TSan, a VM whose
 * first touch of a page costs tens of us: 0 puts in 200 kills). */
static inline void kill_writer_midway(pid_t pid, const unsigned long *progress)
{
	unsigned long seen = __atomic_load_n(progress, __ATOMIC_RELAXED);
	struct timespec nap = { 0, 20000 }, ts = { 0, 50000 + (rand() % 2000) * 1000L };

	for (int i = 0; i < 100000 && __atomic_load_n(progress, __ATOMIC_RELAXED) == seen; i++)
		nanosleep(&nap, NULL); /* at most a few seconds */
	nanosleep(&ts, NULL);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* Whether buf (len bytes, count names) is a whole listing of watch wd read
 * under one generation in [lo, hi]. */
static inline int listing_ok(const char *buf, size_t len, size_t count, int wd, uint64_t lo,
			     uint64_t hi)
{
	size_t off = 0, n = 0;
	unsigned long long g0 = 0;

	while (off < len) {
		int w;
		unsigned long long g;
		unsigned int i;

		if (sscanf(buf + off + 1, "w%dg%llun%u", &w, &g, &i) != 3 || w != wd || i != n ||
		    (n && g != g0) || g < lo || g > hi)
			return 0;
		g0 = g;
		off += strlen(buf + off + 1) + 2;
		n++;
	}
	return n == count;
}

static inline void *reader_main(void *arg)
{
	struct stress *s = arg;
	char buf[4096];

	while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
		for (int wd = 0; wd < s->wds; wd++) {
			size_t count;
			uint64_t lo = dcache_arena_gen(s->a, wd);
			long n = dcache_arena_get(s->a, wd, buf, sizeof(buf), &count);
			uint64_t hi = dcache_arena_gen(s->a, wd);

			if (n < 0)
				continue;
			__atomic_fetch_add(&s->got, 1, __ATOMIC_RELAXED);
			if (!listing_ok(buf, (size_t)n, count, wd, lo, hi))
				__atomic_fetch_add(&s->bad, 1, __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

#endif /* RCUWALK_TEST_ARENA_STRESS_H */
