/* SPDX-License-Identifier: MIT */
/*
 * dcache_pidx.c - the path index: a whole name, as the caller spelt it,
 * straight to the dentry its last walk ended on, so that a long name costs
 * one hash of the string instead of one table lookup per component.
 *
 * A direct-mapped array of slots, mapped at the first lookup (anonymous
 * memory, never freed: a slot is never dereferenced after the mapping
 * goes, and the mapping never goes).  Each slot is a seqcount-protected
 * record { start dentry, FOLLOW/DIRECTORY flags, name } -> { final dentry,
 * its d_seq, whether the walk ended asking for a directory, dc_tree_gen when
 * the walk began }.  Readers write nothing: the walk that
 * found a name the index did not have fills the slot (a try-lock on the
 * slot's seq; a busy slot is simply not filled).
 *
 * Why an entry is exact while its generation is current:
 *  - every change that can make a name resolve differently (a dentry
 *    unhashed, freed, made uncacheable, a directory's search permission
 *    forgotten, the root or the cwd replaced) bumps dc_tree_gen before it
 *    touches anything (d_write_begin(), dc_kill_all_locked());
 *  - the walk samples dc_tree_gen before it reads the root or the cwd, so
 *    an entry records a generation no newer than the state it walked;
 *  - a reader compares the generation after reading the slot consistently
 *    (slot seq re-checked), and only then dereferences the final dentry,
 *    inside its RCU read-side section: a dentry freed since the entry was
 *    made was unhashed (gen bumped) before its call_rcu(), so either the
 *    reader sees the bump, or its section began before the grace period;
 *  - the final dentry's own state (attributes, access answers, being
 *    killed) is checked through its d_seq, which must still equal the one
 *    the walk saw, exactly as at the end of a walk;
 *  - walks that crossed a D_TTL dentry, or ended on ENOENT from a complete
 *    listing (no dentry to check), are not indexed.
 * Memory: PIDX_SLOTS x 256 bytes of address space, resident as touched;
 * not counted in the dentry budget (dc_bytes).
 *
 * The slot and its readers (pidx_hash(), pidx_find()) are in dcache_int.h,
 * inline in the walk; the filler and the mapping are here.
 */
#define _GNU_SOURCE
#define URCU_INLINE_SMALL_FUNCTIONS
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "dcache_int.h"

struct pidx_slot *dc_pidx; /* the path index: set once by dc_ensure_table(), or NULL */

/* Bit i: slot i was ever filled.  A probe of a never-filled slot reads only
 * this (a process that repeats no name never faults the slots' pages in). */
uint64_t dc_pidx_used[PIDX_SLOTS / 64];

/* A thread fills slots only after this many cached answers of its own
 * (dcache_set_index()): each slot's first touch of its page costs a page
 * fault (~12 us on a VM), which a cc1 (a few thousand lookups, few names
 * repeated) never earns back; a build tool or a benchmark loop does. */
unsigned long dc_pidx_min_answers = 4096;

/* Set by the lookup loops (dcache_lookup_len, drive_lookup) before they call
 * dc_populate_rcu(), in the thread whose lookup asks the kernel; cleared at
 * each lookup's start.  The walks of such a lookup fill no index slot:
 * only a name found again by a plain walk (looked up twice) gets one. */
__thread bool tls_populated __attribute__((tls_model("initial-exec")));

/* Reader, under rcu_read_lock(), at the end of a walk that began at `gen`:
 * remember (start, key, name) -> (res, res_seq, want_dir).  Lock-free; gives
 * up if another thread is filling the slot. */
void dc_pidx_fill(const struct dentry *start, unsigned int key, const char *name,
		  size_t len, uint64_t h, uint64_t gen, struct dentry *res,
		  unsigned int res_seq, bool want_dir)
{
	unsigned int slot = (unsigned int)(h % PIDX_SLOTS);
	struct pidx_slot *e = &dc_pidx[slot];
	unsigned int s = LOAD_RELAXED(e->seq);
	size_t i = 0;

	if (LOAD_ACQUIRE(dc_tree_gen) != gen)
		return; /* already stale */
	if (!(LOAD_RELAXED(dc_pidx_used[slot / 64]) & (1ULL << (slot % 64))))
		__atomic_fetch_or(&dc_pidx_used[slot / 64], 1ULL << (slot % 64), __ATOMIC_RELAXED);
	if ((s & 1) || !__atomic_compare_exchange_n(&e->seq, &s, s + 1, false, __ATOMIC_ACQUIRE,
						    __ATOMIC_RELAXED))
		return;
	D_SEQ_FENCE(__ATOMIC_RELEASE); /* the odd seq before the new fields */
	STORE_RELAXED(e->hash, h);
	STORE_RELAXED(e->len, (unsigned int)len);
	STORE_RELAXED(e->start, start);
	STORE_RELAXED(e->key, key);
	STORE_RELAXED(e->want_dir, want_dir ? 1u : 0u);
	STORE_RELAXED(e->gen, gen);
	STORE_RELAXED(e->res, res);
	STORE_RELAXED(e->res_seq, res_seq);
	for (; i + 8 <= len; i += 8) {
		uint64_t w;

		memcpy(&w, name + i, 8);
		STORE_RELAXED(e->name[i / 8], w);
	}
	if (i < len) {
		STORE_RELAXED(e->name[i / 8], pidx_tail(name + i, len - i, len >= 8));
	}
	STORE_RELEASE(e->seq, s + 2);
}

/* dc_ensure_table(), once: map the index; without it every walk is a full one. */
void dc_pidx_map(void)
{
	void *p = mmap(NULL, (size_t)PIDX_SLOTS * sizeof(struct pidx_slot), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p != MAP_FAILED)
		STORE_RELEASE(dc_pidx, (struct pidx_slot *)p);
}

void dcache_set_index(unsigned long min_answers)
{
	dc_pidx_min_answers = min_answers;
}
