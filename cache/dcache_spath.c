/* SPDX-License-Identifier: MIT */
/*
 * dcache_spath.c - the session's shared path table: a whole name, as a
 * process spelt it, straight to the negative answer (ENOENT, ENOTDIR) that a
 * walk of it found, for every process of the session (doc/session.md,
 * "The shared path table").  A process's first lookup of a name that
 * another process has already found absent costs one hash of the string,
 * one slot and a generation check per directory on the way: no dentry of
 * its own, no walk.
 *
 * Design
 * ======
 * The table lives in the arena (dcache_arena.c): an array of 2^order
 * slots of one cache line each, found through the header's sp_table word,
 * taken from the arena's space like its entries and never given back (A2:
 * the mapping never goes, so no slot is ever unmapped under a reader).  A
 * slot is type-stable: it is only ever rewritten in place, under its own
 * sequence count, for another name.  Each name has two candidate slots
 * (two halves of its hash); a put takes the slot already holding the name,
 * else an empty or stale one, else it evicts one of the two.  When the
 * table has evicted live entries a sixteenth of its size times, the next
 * put makes a table four times as large (up to SP_ORDER_MAX) and publishes
 * it with a CAS of sp_table: the names are found again as they are offered
 * again (the old table's space is not reused).
 *
 * The key { start, flags, cred, name } -> { err, (wd, gen) of every
 * directory the walk looked a name up in (at most DCACHE_SPATH_DIRS) } is
 * split in two so that a hit reads one cold cache line:
 *   slot   the name's last component (after its last '/', at most SP_TAIL
 *          bytes), its hash, the answer and a reference to a chain;
 *   chain  the name up to its last '/', start, flags, cred and the
 *          directories with their generations: shared by every name of a
 *          directory offered under the same generations (interned through
 *          sp_chains), so hot in a reader's cache.
 *   start  the watch number of the directory the walk began at (the root,
 *          or the cwd for a relative name): a watch number names one inode
 *          of the session's one instance, the same in every process;
 *   flags  DCACHE_Q_FOLLOW and DCACHE_Q_DIRECTORY as asked (lstat and stat,
 *          O_DIRECTORY, answer differently);
 *   cred   the process's credentials key (invalidate/session.c,
 *          session_cred_key): search permission on the way decides too;
 *   gen    each directory's arena generation (dcache_arena.c, gens) as the
 *          offering process's cache stood (the ticket: inval_shared.c,
 *          spath_put).
 * The answer holds while every listed generation is unchanged: any event
 * that can change a listed directory's listing or its own attributes
 * (search permission, a move, a removal, a mount) bumps its generation
 * before the record telling of it is published (A5), and nothing else can
 * change where the name leads (every directory it passed is listed,
 * symlinks' parents included; TTL directories are never listed, and a
 * scratch directory only after its parent, whose watch reports its mode:
 * cache/dcache_walk.c, sp_note).
 *
 * Invariants
 * ==========
 *  S0 A chain is written whole before the release store that first
 *     publishes its reference (sp_chains, or the slot's seq), and never
 *     again; readers reach it only through such a reference.
 *  S1 seq is even while a slot is stable.  A writer makes it odd with a
 *     CAS (acquire), writes, then stores seq + 2 (release); a reader loads
 *     seq (acquire), copies and checks, then (acquire fence) loads it again
 *     and uses nothing unless it is unchanged and even.  A slot a writer
 *     is filling is skipped by readers and other writers.
 *  S2 A writer killed between the two stores leaves seq odd: that slot is
 *     lost to everyone (no reader trusts it, no writer takes it), nothing
 *     else.  No lock, no wait anywhere.
 *  S3 A reader trusts nothing (A4): the table word's offset and order are
 *     checked against the arena's extent, a slot's lengths, count and
 *     answer against their bounds; a corrupt table gives a wrong answer at
 *     worst, never a fault or an overrun.
 *  S4 Memory: a table is taken below the arena's limit (A6) whole, so every
 *     slot is backed before anyone touches it; a take that does not fit
 *     asks the watcher for that much room (want_big) and the put is
 *     dropped (the next one tries again).
 *  S5 Who may put, with which generations, and who may find: the caller's
 *     duty (cache/dcache_walk.c, invalidate/inval_shared.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "dcache.h"
#include "dcache_arena_int.h"

#define SP_ORDER_MIN 14 /* 16,384 slots: 1 MiB */
#define SP_ORDER_SMALL 10 /* the first table of an arena under 8 MiB (tests) */
#define SP_ORDER_MAX 18 /* 262,144 slots: 16 MiB */
#define SP_TAIL 40      /* bytes of a name after its last '/' kept in a slot */

/* A slot: one cache line.  The name's last component (what follows its
 * last '/') is here; what comes before, the rest of the key and the
 * directories are in the chain, which a directory's names share (hot). */
struct sp_slot {
	uint32_t seq;    /* S1 */
	uint8_t len;     /* bytes of tail[] */
	uint8_t err;     /* ENOENT or ENOTDIR; 0 = empty */
	uint16_t plen;   /* bytes of the name before the tail (the chain's) */
	uint32_t chain;  /* the chain's offset / 8 */
	uint32_t pad;
	uint64_t hash;   /* dcache_spath_hash of the key */
	char tail[SP_TAIL];
};
_Static_assert(sizeof(struct sp_slot) == 64, "a slot is one cache line");

/* A chain: the rest of a key - the name up to its last '/' included, the
 * start, flags, credentials - and the directories a walk of such names
 * passed, with their generations.  Written once, published by the release
 * of the slot that first names it or of its sp_chains entry, never written
 * again (A1); taken from the arena's space (A2) and interned through
 * sp_chains by hash (a collision only makes a new one). */
struct sp_chain {
	uint32_t n;      /* 1..DCACHE_SPATH_DIRS */
	int32_t start;
	uint32_t flags;
	uint32_t plen;   /* bytes of prefix[] */
	uint64_t cred;
	int32_t wd[DCACHE_SPATH_DIRS];
	uint64_t gen[DCACHE_SPATH_DIRS];
	char prefix[];
};

#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define ST(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

static inline uint64_t mix(uint64_t h, uint64_t w)
{
	h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
	return h ^ (h >> 31);
}

static uint64_t hash_bytes(uint64_t h, const char *p, size_t len)
{
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t w;

		memcpy(&w, p + i, 8);
		h = mix(h, w);
	}
	if (i < len) {
		uint64_t w = 0;

		memcpy(&w, p + i, len - i);
		h = mix(h, w);
	}
	return h;
}

uint64_t dcache_spath_hash(const struct dcache_spath_key *k, const char *path, size_t len)
{
	uint64_t h = mix(mix(0x5370617468ULL ^ k->cred, ((uint64_t)(uint32_t)k->start << 32) | k->flags),
			 len);

	h = hash_bytes(h, path, len);
	return h ? h : 1;
}

/* Where the tail of path[0..len) begins: after its last '/'. */
static size_t tail_at(const char *path, size_t len)
{
	const char *sl = memrchr(path, '/', len);

	return sl ? (size_t)(sl - path) + 1 : 0;
}

/* The current table: its slots and log2 of their count, or NULL (S3). */
static struct sp_slot *table_of(const struct arena_hdr *a, unsigned int *order)
{
	uint64_t w = __atomic_load_n(&a->sp_table, __ATOMIC_ACQUIRE);
	uint64_t off = (w >> 8) * 8, ext = arena_extent(a);
	unsigned int o = (unsigned int)(w & 0xff);

	if (!w || o < SP_ORDER_SMALL || o > SP_ORDER_MAX || off < ARENA_DATA || off > ext ||
	    ext - off < ((uint64_t)sizeof(struct sp_slot) << o))
		return NULL;
	*order = o;
	return (struct sp_slot *)((char *)a + off);
}

/* Chain `ref` (offset / 8) with a prefix of plen bytes, if it lies within
 * the arena (S3), else NULL. */
static const struct sp_chain *chain_at(const struct arena_hdr *a, uint32_t ref, size_t plen)
{
	uint64_t off = (uint64_t)ref * 8, ext = arena_extent(a);

	if (off < ARENA_DATA || off > ext || ext - off < sizeof(struct sp_chain) + plen)
		return NULL;
	return (const struct sp_chain *)((const char *)a + off);
}

/* The two slots a hash may live in. */
static void candidates(uint64_t h, unsigned int order, uint64_t idx[2])
{
	uint64_t mask = ((uint64_t)1 << order) - 1;

	idx[0] = h & mask;
	idx[1] = ((h >> 32) * 0x9e3779b1u >> 7) & mask;
	if (idx[1] == idx[0])
		idx[1] = (idx[0] + 1) & mask;
}

/* Whether every generation chain c lists still holds: its directory count
 * if so (and c is well-formed), else 0. */
static unsigned int chain_holds(struct arena_hdr *a, const struct sp_chain *c)
{
	unsigned int n;

	if (!c)
		return 0;
	n = LD(c->n);
	if (n == 0 || n > DCACHE_SPATH_DIRS)
		return 0;
	for (unsigned int i = 0; i < n; i++)
		if (__atomic_load_n(gen_of(a, LD(c->wd[i])), __ATOMIC_ACQUIRE) != LD(c->gen[i]))
			return 0;
	return n;
}

/* Whether chain c is for key k and prefix path[0..plen). */
static bool chain_is(const struct sp_chain *c, const struct dcache_spath_key *k,
		     const char *path, size_t plen)
{
	return LD(c->start) == k->start && LD(c->flags) == k->flags && LD(c->cred) == k->cred &&
	       LD(c->plen) == plen && memcmp(c->prefix, path, plen) == 0;
}

int dcache_spath_find(const void *mem, const struct dcache_spath_key *k, const char *path,
		      size_t len, uint64_t h)
{
	struct arena_hdr *a = (struct arena_hdr *)mem;
	unsigned int order;
	struct sp_slot *t = table_of(a, &order);
	size_t plen = tail_at(path, len);
	uint64_t idx[2];

	if (!t || len == 0 || len > DCACHE_SPATH_NAME || len - plen > SP_TAIL)
		return 0;
	candidates(h, order, idx);
	for (int c = 0; c < 2; c++) {
		const struct sp_slot *s = &t[idx[c]];
		uint32_t seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
		const struct sp_chain *ch;
		unsigned int err;

		if ((seq & 1) || LD(s->hash) != h || LD(s->len) != len - plen || LD(s->plen) != plen)
			continue;
		err = LD(s->err);
		if ((err != ENOENT && err != ENOTDIR) || memcmp(s->tail, path + plen, len - plen) != 0 ||
		    !(ch = chain_at(a, LD(s->chain), plen)) || !chain_is(ch, k, path, plen) ||
		    !chain_holds(a, ch))
			continue;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (LD(s->seq) != seq)
			continue;
		return (int)err;
	}
	return 0;
}

#define SP_TABLE_OFF 1 /* sp_table's value in an arena without a table */

void dcache_spath_off(void *mem)
{
	__atomic_store_n(&((struct arena_hdr *)mem)->sp_table, SP_TABLE_OFF, __ATOMIC_RELEASE);
}

/* Make a table of 2^order slots the current one, unless another process
 * already replaced `old` (S4). */
static void table_grow(struct arena_hdr *a, uint64_t old, unsigned int order)
{
	uint64_t bytes = (uint64_t)sizeof(struct sp_slot) << order;
	char *p;
	uint64_t w;

	/* Not enough room yet: one request for it, not one per put while the
	 * watcher allocates. */
	if (arena_room(a) < bytes) {
		if (__atomic_load_n(&a->want_big, __ATOMIC_RELAXED) < bytes) {
			__atomic_store_n(&a->want_big, bytes, __ATOMIC_RELAXED);
			arena_want_room(a);
		}
		return;
	}
	p = arena_take(a, bytes);
	if (!p)
		return;
	w = ((uint64_t)(p - (char *)a) / 8) << 8 | order;
	if (__atomic_compare_exchange_n(&a->sp_table, &old, w, false, __ATOMIC_RELEASE,
					__ATOMIC_RELAXED))
		__atomic_store_n(&a->sp_evicted, 0, __ATOMIC_RELAXED);
}

/* The chain for (k, path[0..plen), wd, gen), found interned or made: its
 * ref, or 0 (no room). */
static uint32_t chain_get(struct arena_hdr *a, const struct dcache_spath_key *k, const char *path,
			  size_t plen, const int *wd, const uint64_t *gen, unsigned int n)
{
	uint64_t h = hash_bytes(mix(mix(k->cred, ((uint64_t)(uint32_t)k->start << 32) | k->flags), n),
				path, plen);
	uint32_t *slot, ref;
	const struct sp_chain *c;
	struct sp_chain *nc;

	for (unsigned int i = 0; i < n; i++)
		h = mix(mix(h, (uint32_t)wd[i]), gen[i]);
	slot = &a->sp_chains[h % ARENA_SP_CHAINS];
	ref = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	c = ref ? chain_at(a, ref, plen) : NULL;
	if (c && LD(c->n) == n && chain_is(c, k, path, plen)) {
		unsigned int i = 0;

		while (i < n && LD(c->wd[i]) == wd[i] && LD(c->gen[i]) == gen[i])
			i++;
		if (i == n)
			return ref;
	}
	nc = arena_take(a, (sizeof(*nc) + plen + 7) & ~(size_t)7);
	if (!nc)
		return 0;
	nc->n = n;
	nc->start = k->start;
	nc->flags = k->flags;
	nc->plen = (uint32_t)plen;
	nc->cred = k->cred;
	for (unsigned int i = 0; i < n; i++) {
		nc->wd[i] = wd[i];
		nc->gen[i] = gen[i];
	}
	memcpy(nc->prefix, path, plen);
	ref = (uint32_t)(((char *)nc - (char *)a) / 8);
	__atomic_store_n(slot, ref, __ATOMIC_RELEASE);
	return ref;
}

int dcache_spath_put(void *mem, const struct dcache_spath_key *k, const char *path, size_t len,
		     uint64_t h, int err, const int *wd, const uint64_t *gen, unsigned int n)
{
	struct arena_hdr *a = mem;
	uint64_t tw = __atomic_load_n(&a->sp_table, __ATOMIC_ACQUIRE), idx[2];
	size_t plen = tail_at(path, len);
	unsigned int order;
	struct sp_slot *t, *s = NULL;
	uint32_t seq = 0, ref;
	bool evict = true;

	if (len == 0 || len > DCACHE_SPATH_NAME || len - plen > SP_TAIL || n == 0 ||
	    n > DCACHE_SPATH_DIRS || (err != ENOENT && err != ENOTDIR))
		return -EINVAL;
	t = table_of(a, &order);
	if (!t) {
		if (tw == SP_TABLE_OFF)
			return -EPERM;
		table_grow(a, tw, a->size < ((uint64_t)8 << 20) ? SP_ORDER_SMALL : SP_ORDER_MIN);
		return -ENOSPC; /* the next put uses it */
	}
	candidates(h, order, idx);
	/* The slot holding this name, else an empty or stale one, else one to
	 * evict (chosen by a hash bit). */
	for (int pass = 0; pass < 2 && !s; pass++) {
		for (int c = 0; c < 2 && !s; c++) {
			struct sp_slot *x = &t[idx[c]];
			uint32_t q = __atomic_load_n(&x->seq, __ATOMIC_ACQUIRE);

			if (q & 1)
				continue;
			if (pass == 0 ? LD(x->hash) == h :
			    (LD(x->err) == 0 ||
			     !chain_holds(a, chain_at(a, LD(x->chain), LD(x->plen))))) {
				s = x;
				seq = q;
				evict = false;
			}
		}
	}
	if (!s) {
		s = &t[idx[(h >> 63) & 1]];
		seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
		if (seq & 1)
			return -EBUSY;
	}
	ref = chain_get(a, k, path, plen, wd, gen, n);
	if (!ref)
		return -ENOSPC;
	if (!__atomic_compare_exchange_n(&s->seq, &seq, seq + 1, false, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED))
		return -EBUSY;
	__atomic_thread_fence(__ATOMIC_RELEASE); /* the odd seq before the new fields */
	ST(s->len, (uint8_t)(len - plen));
	ST(s->plen, (uint16_t)plen);
	ST(s->err, (uint8_t)err);
	ST(s->chain, ref);
	ST(s->hash, h);
	memcpy(s->tail, path + plen, len - plen);
	__atomic_store_n(&s->seq, seq + 2, __ATOMIC_RELEASE);
	if (evict && __atomic_add_fetch(&a->sp_evicted, 1, __ATOMIC_RELAXED) >
			     ((uint64_t)1 << order) / 16 &&
	    order < SP_ORDER_MAX)
		table_grow(a, tw, order + 2 > SP_ORDER_MAX ? SP_ORDER_MAX : order + 2);
	return 0;
}

void dcache_spath_counts(const void *mem, uint64_t *evicted, unsigned int *slots)
{
	const struct arena_hdr *a = mem;
	unsigned int order = 0;

	*evicted = __atomic_load_n(&a->sp_evicted, __ATOMIC_RELAXED);
	*slots = table_of(a, &order) ? 1u << order : 0;
}
