/* SPDX-License-Identifier: MIT */
/*
 * dcache_arena_int.h - the arena's layout, private to cache/dcache_arena.c
 * and cache/dcache_spath.c (the shared path table, which lives in the
 * arena).  Invariants A1-A6: the top of dcache_arena.c.
 */
#ifndef RCUWALK_DCACHE_ARENA_INT_H
#define RCUWALK_DCACHE_ARENA_INT_H

#include <stdint.h>

#define ARENA_MAGIC 0x31414e4552415752ULL /* "RWARENA1" */
#define ARENA_VERSION 8u /* 5: the shared path table (dcache_spath.c), want_big;
			  * 6: epochs (A2), entries' check sums;
			  * 7: filesystem classes by mount (A8);
			  * 8: files' attributes (ENT_FILE), file_wds */
#define ARENA_GENS 65536u
#define ARENA_BUCKETS 16384u
#define ARENA_SP_CHAINS 4096u /* dcache_spath.c: chains interned */
#define ARENA_CHAIN_MAX 64 /* entries a reader looks at in one chain */
#define ARENA_FSV 64u      /* filesystem classes by mount (A8): slots */
#define ARENA_FSV_PROBE 8u /* slots a put or a find looks at */

struct arena_hdr {
	uint64_t magic;
	uint32_t version, ngens, nbuckets;
	uint32_t file_wds;           /* ENT_FILE: file watch numbers below it (A9) */
	uint64_t size;
	_Alignas(64) uint64_t bump;  /* next free byte (A2) */
	uint64_t refused;            /* puts refused for want of space */
	uint32_t mounts_done;        /* the mount count whose bump is complete */
	uint32_t wants;              /* futex: bumped when room runs short (A6) */
	uint64_t limit;              /* bytes backed by memory: entries end below it (A6) */
	uint64_t want_big;           /* the largest take refused for room (A6), bytes */
	uint64_t epoch;              /* bumped by each reset of the entry space (A2) */
	uint64_t resets;             /* resets so far (a statistic) */
	uint32_t full;               /* set by a take refused in an arena that may be
				      * full: the watcher resets it (A2) */
	uint32_t file_off;           /* ENT_FILE: set once a file watch number
				      * reached file_wds: no more are made (A9) */
	_Alignas(64) uint64_t gens[ARENA_GENS];
	uint32_t heads[ARENA_BUCKETS];
	/* The shared path table (dcache_spath.c): (offset / 8) << 8 | log2 of
	 * its slots, 0 while there is none; replaced (CAS) by a larger one.
	 * After the heads: the layout before them is the fuzzer's too. */
	_Alignas(64) uint64_t sp_table;
	uint64_t sp_gens;            /* offset / 8 of the path generations, 0: none yet */
	uint64_t sp_evicted;         /* live entries replaced in the current table */
	uint32_t sp_chains[ARENA_SP_CHAINS]; /* the table's chains, interned by hash */
	/* Filesystem classes by unique mount ID (A8): id << 2 | class, 0 for
	 * an empty slot.  Not reset with the entry space. */
	_Alignas(64) uint64_t fsv[ARENA_FSV];
};

#define ARENA_DATA (((sizeof(struct arena_hdr) + 63) / 64) * 64)

static inline uint64_t *gen_of(struct arena_hdr *a, int wd)
{
	return &a->gens[(uint32_t)wd % ARENA_GENS];
}

/* The bytes entries may occupy (A6): below `limit` and `size`. */
uint64_t arena_extent(const struct arena_hdr *a);
/* `need` bytes (a multiple of 8) of zero-filled space below the limit, or
 * NULL (A2, A6).  Any thread. */
void *arena_take(struct arena_hdr *a, uint64_t need);
/* The current epoch (acquire): A2. */
static inline uint64_t arena_epoch(const struct arena_hdr *a)
{
	return __atomic_load_n(&a->epoch, __ATOMIC_ACQUIRE);
}
/* End the shared path table for the rest of the session (dcache_spath.c,
 * S6): a reset of the entry space is about to reuse its bytes.  The
 * watcher, before it bumps the epoch. */
void spath_end(struct arena_hdr *a);
/* The path table's part of dcache_arena_census (dcache_spath.c). */
struct dcache_arena_census;
void spath_census(const struct arena_hdr *a, struct dcache_arena_census *c);
/* Bump every path generation (dcache_spath.c): events lost, mounts. */
void spath_bump_all(struct arena_hdr *a);
/* Ask the watcher for room (A6): it allocates until the room left is at
 * least max(DCACHE_ARENA_MARGIN, want_big). */
void arena_want_room(struct arena_hdr *a);
/* Bytes left below the limit. */
static inline uint64_t arena_room(const struct arena_hdr *a)
{
	uint64_t lim = arena_extent(a), used = __atomic_load_n(&a->bump, __ATOMIC_RELAXED);

	return used < lim ? lim - used : 0;
}

#endif /* RCUWALK_DCACHE_ARENA_INT_H */
