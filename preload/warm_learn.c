/* SPDX-License-Identifier: MIT */
/*
 * warm_learn.c - the learned warm-up: in a session, a process whose warm-up
 * has spent its time (RCUWALK_WARMUP=Tus, 1 ms by default) keeps passing its
 * lookups through when the earlier processes of the same program made too
 * few lookups for a cache to repay its start (invalidate/learn.c keeps what
 * they made; doc/benchmarks-by-stop.md, "Stop 45").
 *
 * Why: the warm-up by time ends in any process whose lookups are slow, and a
 * compiler driver's or a linker's are (long names through "..": ~7 us each
 * here).  In a configure script those processes then make 30-600 more
 * lookups: GNU hello's started 219 caches for 231 ms of start and fills
 * against 40 ms of kernel time answered; zlib's 7, for 8.7 ms against 0.8.
 * A cc1 of a build makes tens of thousands and starts as before.
 *
 * The decision, once, when T is spent (preload_warm_extend): the program is
 * AT_EXECFN (the name exec was given: "/usr/lib/gcc/.../cc1",
 * "./conftest"), hashed.  If at least LEARN_MIN_N of its processes recorded,
 * the lookups still expected (their average less those seen so far) times
 * what each took so far (spent / seen) is set against LEARN_COST_NS, about
 * what a cache's start and first fills cost a process here: below it the
 * warm-up goes on.  So a program whose lookups are slow (FUSE, NFS: tens of
 * us) starts after fewer expected lookups than one on a fast disk.
 *
 * Invariants
 * ==========
 *  W1 Only the warm-up by time, in a session: a count (RCUWALK_WARMUP=N) or
 *     0 is the user's own and is kept exactly; without a session nothing is
 *     learned (one process sees no other).
 *  W2 Bounded: an extended warm-up ends, and the cache starts, once the
 *     process has seen 2 x the program's average + LEARN_SLACK lookups
 *     (count_unusable, shim.c), or once its real calls have taken
 *     PRELOAD_WARM_EXTRA_NS more than T (preload_warm_spent): a process
 *     larger than its program's usual loses at most that much time, and its
 *     record moves the average for the next ones.  What the store says
 *     (learn.c, L2: it may be torn, lost or scribbled) moves only when the
 *     cache starts, never an answer: every lookup before is the kernel's,
 *     counted in pass_warmup.
 *  W3 Async-signal-safe: preload_warm_extend runs on a wrapper's warm-up
 *     path, maybe in a signal handler: getauxval(), arithmetic, raw system
 *     calls (learn.c), relaxed atomics; errno kept.  Two threads deciding at
 *     once both read; the last store wins (they decide alike).
 *  W4 A process records at its exit (the destructor; _exit() records
 *     nothing), and only if it came to the decision: the lookups it saw in
 *     its warm-up plus those its cache answered, and whether its cache paid
 *     richly (LEARN_RICH_RATIO answers a miss or rented lookup; a cc1 of a
 *     build: ~40).  A fork() child warms up again from zero (shim.c,
 *     preload_fork_child_rewarm) and decides for itself.
 *  W5 The rent (cache/dcache_populate.c, "Directory rent") is learned with
 *     it: a process that starts its cache, of a program whose recent caches
 *     (LEARN_RICH of 256) paid richly, buys each directory at its first
 *     lookup (rent 0) instead of passing 4 lookups through first: a cc1 of
 *     the generated project rented 482 lookups, ~1 ms.  The rent still
 *     doubles in a process whose windows then earn little; --dir-rent given
 *     is the user's own.  Renting or not changes no answer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <sys/auxv.h>

#include "dcache.h"
#include "inval.h"
#include "preload.h"
#include "shim.h"

#define LEARN_MIN_N 2            /* processes of the program recorded */
#define LEARN_COST_NS 1500000ull /* a cache's start and first fills, here */
#define LEARN_SLACK 256ul
/* Above it an average is taken as scribbled (learn.c, L2), before the
 * product below could wrap: 2^40 x a warm-up's ns a lookup fits 64 bits. */
#define LEARN_AVG_MAX (1ull << 40)
#define LEARN_RICH 192u /* of 256: 3 in 4 recent caches paid richly */
#define LEARN_RICH_RATIO 16u /* richly: 16 answers a miss or rented lookup */

/* The program's key: FNV-1a of AT_EXECFN, never 0; 0 without it. */
static uint64_t program_key(void)
{
	const char *p = (const char *)getauxval(AT_EXECFN);
	uint64_t h = 0xcbf29ce484222325ull;

	if (!p)
		return 0;
	for (; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
	return h ? h : 1;
}

int preload_warm_extend(void)
{
	struct preload_warm_counters *c = preload_warm;
	unsigned long seen = __atomic_load_n(&c->seen, __ATOMIC_RELAXED);
	unsigned long long spent = __atomic_load_n(&c->spent, __ATOMIC_RELAXED), key;
	uint64_t avg;
	uint32_t n, rich;

	if (preload_warmup || !preload_warmup_ns || __atomic_load_n(&c->key, __ATOMIC_RELAXED))
		return 0; /* W1; or decided already: start */
	if (!(key = program_key()))
		return 0;
	__atomic_store_n(&c->key, key, __ATOMIC_RELAXED); /* W4: record at exit */
	if (inval_learn_get(key, &avg, &n, &rich) != 0 || n < LEARN_MIN_N || !seen ||
	    avg > LEARN_AVG_MAX)
		return 0; /* nothing known, or a scribbled average: start as before */
	if (avg > seen && (avg - seen) * (spent / seen) >= LEARN_COST_NS) {
		/* Expected to repay its start.  W5: and if its program's caches
		 * have paid richly, it buys each directory at once. */
		if (rich >= LEARN_RICH && !preload_dir_rent_given)
			dcache_set_dir_rent(0);
		return 0;
	}
	__atomic_store_n(&c->until, avg * 2 + LEARN_SLACK > seen ? avg * 2 + LEARN_SLACK : seen + 1,
			 __ATOMIC_RELAXED);
	return 1;
}

void preload_warm_learn_exit(void)
{
	struct preload_warm_counters *c = preload_warm;
	unsigned long long key = __atomic_load_n(&c->key, __ATOMIC_RELAXED);
	unsigned long long looked;
	struct dcache_stats st;
	int rich = -1;

	if (!key)
		return;
	looked = __atomic_load_n(&c->seen, __ATOMIC_RELAXED);
	if (__atomic_load_n(&preload_enabled, __ATOMIC_ACQUIRE) == PRELOAD_ON) {
		dcache_stats_sum(&st); /* its cache started: what it answered too */
		looked += st.hits + st.neg_hits;
		rich = st.hits + st.neg_hits >= LEARN_RICH_RATIO * (st.misses + st.pass_rent);
	}
	inval_learn_put(key, looked, rich);
}
