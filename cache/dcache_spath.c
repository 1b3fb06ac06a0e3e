/* SPDX-License-Identifier: MIT */
/*
 * dcache_spath.c - the session's shared path table: a whole name, as a
 * process spelt it, straight to the negative answer (ENOENT, ENOTDIR) that a
 * walk of it found, for every process of the session (doc/session.md,
 * "The shared path table").  A process's first lookup of a name that
 * another process has already found absent costs one hash of the string,
 * one slot and two generation checks per component on the way: no dentry
 * of its own, no walk.
 *
 * Design
 * ======
 * What a walk's negative answer depends on, component by component: in
 * each directory it looked a name up in, what that name is bound to (absent,
 * a directory, a file, a symlink and its body), and whether the process may
 * search the directory.  Two arrays of generations in the arena stand for
 * those (the path generations, created with the first table, never moved):
 *   sgen[wd % SP_SGENS]   the directory watched as wd itself: bumped by the
 *                         watcher for every event about it without a name
 *                         (its attributes, search permission included; its
 *                         removal, move, unmount, the watch gone);
 *   ngen[name_slot(wd, name)]  the binding of `name` in directory wd: bumped
 *                         for every event naming it there that can change
 *                         it (created, removed, moved in or out) and for
 *                         IN_ATTRIB on a subdirectory's name (a scratch
 *                         directory's watch reports no change of its own
 *                         mode: its parent's does).
 * Lost events and mount changes bump every one of them (dcache_arena.c).
 * Two names sharing a slot only invalidate each other more often.  So a
 * change to another name of a directory on the way (an object file written
 * beside a header, a temporary file in /tmp) leaves the answer standing.
 *
 * The table: an array of 2^order slots of one cache line each, found
 * through the header's sp_table word, taken from the arena's space like its
 * entries and given back only when the arena is reset, which ends the table
 * for the session (S6; the mapping never goes, so no slot is ever unmapped
 * under a reader).  A slot is type-stable: it is only ever
 * rewritten in place, under its own sequence count, for another name.  Each
 * name has two candidate slots (two halves of its hash); a put takes the
 * slot already holding the name, else an empty or stale one, else it evicts
 * one of the two.  When the table has evicted live entries a sixteenth of
 * its size times, the next put makes a table four times as large (up to
 * SP_ORDER_MAX), copies the valid entries of the old one into it and
 * publishes it with a CAS of sp_table (an entry put into the old table
 * during the copy is lost; the old table's space is not reused).
 *
 * The key { start, flags, cred, name } -> { err, the walk's components } is
 * split in two so that a hit reads one cold cache line:
 *   slot   the name's last component (after its last '/', at most SP_TAIL
 *          bytes), its hash, the answer, the last component looked up (its
 *          ngen slot and value) and a reference to a chain;
 *   chain  the name up to its last '/', start, flags, cred, and for every
 *          component looked up: its directory's watch number and sgen, and
 *          but for the last its ngen slot and value.  Shared by the names of
 *          a directory offered under the same generations (interned through
 *          sp_chains), so hot in a reader's cache.
 *   start  the watch number of the directory the walk began at (the root,
 *          or the cwd for a relative name): a watch number names one inode
 *          of the session's one instance, the same in every process;
 *   flags  DCACHE_Q_FOLLOW and DCACHE_Q_DIRECTORY as asked (lstat and stat,
 *          O_DIRECTORY, answer differently);
 *   cred   the process's credentials key (invalidate/session.c,
 *          session_cred_key): search permission on the way decides too.
 * Generations are sampled as the offering process's cache stood (the
 * ticket: invalidate/inval_shared.c, spath_put).  TTL directories are never
 * in a walk that offers; a scratch directory only right after its parent,
 * whose watch reports its mode (cache/dcache_walk.c, sp_note).
 *
 * Invariants
 * ==========
 *  S0 A chain is written whole before the release store that first
 *     publishes its reference (sp_chains, or the slot's seq), and never
 *     again; readers reach it only through such a reference.  The path
 *     generations' region likewise before its CAS into sp_gens.
 *  S1 seq is even while a slot is stable.  A writer makes it odd with a
 *     CAS (acquire), writes, then stores seq + 2 (release); a reader loads
 *     seq (acquire), copies and checks, then (acquire fence) loads it again
 *     and uses nothing unless it is unchanged and even.  A slot a writer
 *     is filling is skipped by readers and other writers.
 *  S2 A writer killed between the two stores leaves seq odd: that slot is
 *     lost to everyone (no reader trusts it, no writer takes it), nothing
 *     else.  No lock, no wait anywhere.
 *  S3 A reader trusts nothing (A4): the table and generations words' offsets
 *     and the order are checked against the arena's extent, a slot's and a
 *     chain's lengths, counts, slots and answer against their bounds; a
 *     corrupt table gives a wrong answer at worst, never a fault or an
 *     overrun.
 *  S4 Memory: a table or the generations' region is taken below the
 *     arena's limit (A6) whole, so every slot is backed before anyone
 *     touches it; a take that does not fit asks the watcher for that much
 *     room (want_big) once, and the put is dropped (a later one tries
 *     again).
 *  S5 The watcher bumps a generation before it publishes the record of the
 *     event that moved it (dcache_spath_event, then the ring's tail).  Who
 *     may put, with which generations, and who may find: the caller's duty
 *     (cache/dcache_walk.c, invalidate/inval_shared.c).
 *  S6 The table, its chains and the path generations live in the arena's
 *     entry space, which a reset gives back (A2); they are read in place,
 *     without the entries' check sums (A7).  So the first reset ends the
 *     table for the rest of the session: spath_end stores SP_TABLE_OFF and
 *     SP_GENS_GONE (a value no CAS from 0 replaces: a put that made a
 *     region before the reset cannot install it after) before the epoch
 *     moves; puts are then refused and finds answer nothing.  A find loads
 *     `epoch` before the table and again after its last load of the slot,
 *     chain and generations (behind the acquire fence it already has), and
 *     answers only if it did not move: every byte it used was read before
 *     the reset, hence before any reuse (the bump's release store follows
 *     the epoch's bump).  A put stopped across the reset writes at most
 *     into reused space: entries, which fail their check.  Space taken by
 *     take_big once the epoch moved is not zero-filled, so it is never
 *     taken then.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>

#include "dcache.h"
#include "dcache_arena_int.h"

#define SP_ORDER_MIN 14   /* 16,384 slots: 1 MiB */
#define SP_ORDER_SMALL 10 /* the first table of an arena under 8 MiB (tests) */
#define SP_ORDER_MAX 18   /* 262,144 slots: 16 MiB */
#define SP_TAIL 32        /* bytes of a name after its last '/' kept in a slot */
#define SP_SGENS 65536u   /* sgen: by watch number */
#define SP_NGENS 65536u   /* ngen: by (watch number, name) */
#define SP_TABLE_OFF 1    /* sp_table's value in an arena without a table */
#define SP_GENS_GONE 1    /* sp_gens's value once the table ended (S6) */

/* A slot: one cache line. */
struct sp_slot {
	uint32_t seq;    /* S1 */
	uint8_t len;     /* bytes of tail[] */
	uint8_t err;     /* ENOENT or ENOTDIR; 0 = empty */
	uint16_t plen;   /* bytes of the name before the tail (the chain's) */
	uint32_t chain;  /* the chain's offset / 8 */
	uint32_t nidx;   /* the last component's ngen slot */
	uint64_t hash;   /* dcache_spath_hash of the key */
	uint64_t ngen;   /* ... and its value */
	char tail[SP_TAIL];
};
_Static_assert(sizeof(struct sp_slot) == 64, "a slot is one cache line");

/* A chain (S0): n components; the last one's name generation is the slot's. */
struct sp_chain {
	uint32_t n;      /* 1..DCACHE_SPATH_DIRS */
	int32_t start;
	uint32_t flags;
	uint32_t plen;   /* bytes of prefix[] */
	uint64_t cred;
	int32_t wd[DCACHE_SPATH_DIRS];
	uint32_t nidx[DCACHE_SPATH_DIRS];
	uint64_t sgen[DCACHE_SPATH_DIRS];
	uint64_t ngen[DCACHE_SPATH_DIRS];
	char prefix[];
};

/* The path generations (created with the first table; never moved). */
struct sp_gens {
	uint64_t sgen[SP_SGENS];
	uint64_t ngen[SP_NGENS];
};

#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define ST(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
/* ThreadSanitizer does not model fences (GCC rejects them under -Werror
 * with -fsanitize=thread): its build, which runs no session test, gets a
 * compiler barrier (enough on x86-64, as ring.h's RING_FENCE says). */
#if defined(__SANITIZE_THREAD__)
#define SP_FENCE(order) __atomic_signal_fence(__ATOMIC_SEQ_CST)
#else
#define SP_FENCE(order) __atomic_thread_fence(order)
#endif

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

uint32_t dcache_spath_name_slot(int wd, const char *name, size_t len)
{
	return (uint32_t)(hash_bytes(mix(0x4e616d65ULL, (uint32_t)wd), name, len) >> 7) % SP_NGENS;
}

/* The path generations, or NULL (S3). */
static struct sp_gens *gens_of(const struct arena_hdr *a)
{
	uint64_t off = __atomic_load_n(&a->sp_gens, __ATOMIC_ACQUIRE) * 8, ext = arena_extent(a);

	if (!off || off < ARENA_DATA || off > ext || ext - off < sizeof(struct sp_gens))
		return NULL;
	return (struct sp_gens *)((char *)a + off);
}

static inline uint64_t *sgen_of(struct sp_gens *g, int wd)
{
	return &g->sgen[(uint32_t)wd % SP_SGENS];
}

static inline uint64_t *ngen_of(struct sp_gens *g, uint32_t nidx)
{
	return &g->ngen[nidx % SP_NGENS];
}

void dcache_spath_event(void *mem, int wd, uint32_t mask, const char *name, size_t len)
{
	struct sp_gens *g = gens_of(mem);

	if (!g)
		return;
	if (wd < 0 || (mask & IN_Q_OVERFLOW)) {
		spath_bump_all(mem);
	} else if (!len) {
		__atomic_fetch_add(sgen_of(g, wd), 1, __ATOMIC_SEQ_CST);
	} else if ((mask & (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)) ||
		   (mask & (IN_ATTRIB | IN_ISDIR)) == (IN_ATTRIB | IN_ISDIR)) {
		__atomic_fetch_add(ngen_of(g, dcache_spath_name_slot(wd, name, len)), 1,
				   __ATOMIC_SEQ_CST);
	}
}

void spath_bump_all(struct arena_hdr *a)
{
	struct sp_gens *g = gens_of(a);

	if (!g)
		return;
	for (uint32_t i = 0; i < SP_SGENS; i++)
		__atomic_fetch_add(&g->sgen[i], 1, __ATOMIC_SEQ_CST);
	for (uint32_t i = 0; i < SP_NGENS; i++)
		__atomic_fetch_add(&g->ngen[i], 1, __ATOMIC_SEQ_CST);
}

int dcache_spath_gens(const void *mem, const int *wd, const uint32_t *nidx, unsigned int n,
		      uint64_t *sgen, uint64_t *ngen)
{
	struct sp_gens *g = gens_of(mem);

	if (!g)
		return -ENOENT;
	for (unsigned int i = 0; i < n; i++) {
		sgen[i] = __atomic_load_n(sgen_of(g, wd[i]), __ATOMIC_ACQUIRE);
		ngen[i] = __atomic_load_n(ngen_of(g, nidx[i]), __ATOMIC_ACQUIRE);
	}
	return 0;
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

/* Whether chain c is well-formed and every generation it lists still holds
 * (its components', then the last one's: slot_nidx, slot_ngen). */
static bool chain_holds(struct sp_gens *g, const struct sp_chain *c, uint32_t slot_nidx,
			uint64_t slot_ngen)
{
	unsigned int n;

	if (!c || !g)
		return false;
	n = LD(c->n);
	if (n == 0 || n > DCACHE_SPATH_DIRS)
		return false;
	for (unsigned int i = 0; i < n; i++) {
		if (__atomic_load_n(sgen_of(g, LD(c->wd[i])), __ATOMIC_ACQUIRE) != LD(c->sgen[i]))
			return false;
		if (i + 1 < n &&
		    __atomic_load_n(ngen_of(g, LD(c->nidx[i])), __ATOMIC_ACQUIRE) != LD(c->ngen[i]))
			return false;
	}
	return __atomic_load_n(ngen_of(g, slot_nidx), __ATOMIC_ACQUIRE) == slot_ngen;
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
	uint64_t ep = arena_epoch(a); /* before the table (S6) */
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
		    !chain_holds(gens_of(a), ch, LD(s->nidx), LD(s->ngen)))
			continue;
		SP_FENCE(__ATOMIC_ACQUIRE);
		if (LD(s->seq) != seq || LD(a->epoch) != ep)
			continue;
		return (int)err;
	}
	return 0;
}

int dcache_spath_on(const void *mem)
{
	return __atomic_load_n(&((const struct arena_hdr *)mem)->sp_table, __ATOMIC_ACQUIRE) !=
	       SP_TABLE_OFF;
}

void dcache_spath_off(void *mem)
{
	__atomic_store_n(&((struct arena_hdr *)mem)->sp_table, SP_TABLE_OFF, __ATOMIC_RELEASE);
}

void spath_end(struct arena_hdr *a)
{
	__atomic_store_n(&a->sp_table, SP_TABLE_OFF, __ATOMIC_SEQ_CST);
	__atomic_store_n(&a->sp_gens, SP_GENS_GONE, __ATOMIC_SEQ_CST);
	__atomic_store_n(&a->sp_evicted, 0, __ATOMIC_RELAXED);
}

/* `bytes` of zero-filled room now, or NULL after asking the watcher for it
 * once (S4); NULL once the arena has been reset (S6). */
static void *take_big(struct arena_hdr *a, uint64_t bytes)
{
	if (arena_epoch(a) != 0)
		return NULL;
	if (arena_room(a) < bytes) {
		if (__atomic_load_n(&a->want_big, __ATOMIC_RELAXED) < bytes) {
			__atomic_store_n(&a->want_big, bytes, __ATOMIC_RELAXED);
			arena_want_room(a);
		}
		return NULL;
	}
	return arena_take(a, bytes);
}

/* Copy the current table's valid entries into t (2^order slots, not yet
 * published: no reader or writer sees it, plain stores do), so that a
 * growth loses no answer.  An entry written into the old table meanwhile is
 * lost: it is offered again. */
static void migrate(struct arena_hdr *a, struct sp_slot *t, unsigned int order)
{
	struct sp_gens *g = gens_of(a);
	unsigned int oorder;
	const struct sp_slot *o = table_of(a, &oorder);

	if (!o || !g)
		return;
	for (uint64_t i = 0; i < ((uint64_t)1 << oorder); i++) {
		const struct sp_slot *s = &o[i];
		uint32_t seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
		struct sp_slot c;
		uint64_t idx[2];

		if (seq & 1 || !LD(s->err))
			continue;
		c.seq = 0;
		c.len = LD(s->len);
		c.err = LD(s->err);
		c.plen = LD(s->plen);
		c.chain = LD(s->chain);
		c.nidx = LD(s->nidx);
		c.hash = LD(s->hash);
		c.ngen = LD(s->ngen);
		if (c.len > SP_TAIL)
			continue;
		memcpy(c.tail, s->tail, sizeof(c.tail));
		SP_FENCE(__ATOMIC_ACQUIRE);
		if (LD(s->seq) != seq || !chain_holds(g, chain_at(a, c.chain, c.plen), c.nidx, c.ngen))
			continue;
		candidates(c.hash, order, idx);
		if (!t[idx[0]].err)
			t[idx[0]] = c;
		else if (!t[idx[1]].err)
			t[idx[1]] = c;
	}
}

/* Make a table of 2^order slots the current one, unless another process
 * already replaced `old` (S4); the path generations first. */
static void table_grow(struct arena_hdr *a, uint64_t old, unsigned int order)
{
	uint64_t bytes = (uint64_t)sizeof(struct sp_slot) << order, w;
	char *p;

	if (!gens_of(a)) {
		uint64_t none = 0;

		p = take_big(a, sizeof(struct sp_gens));
		if (!p)
			return;
		/* Zero-filled: every generation 0.  Lost to a racing CAS: the
		 * space is not reused (A2). */
		if (!__atomic_compare_exchange_n(&a->sp_gens, &none, (uint64_t)(p - (char *)a) / 8,
						 false, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
			return;
	}
	p = take_big(a, bytes);
	if (!p)
		return;
	migrate(a, (struct sp_slot *)p, order);
	w = ((uint64_t)(p - (char *)a) / 8) << 8 | order;
	if (__atomic_compare_exchange_n(&a->sp_table, &old, w, false, __ATOMIC_RELEASE,
					__ATOMIC_RELAXED))
		__atomic_store_n(&a->sp_evicted, 0, __ATOMIC_RELAXED);
}

/* The chain for (k, path[0..plen), f's components but the last's name
 * generation), found interned or made: its ref, or 0 (no room). */
static uint32_t chain_get(struct arena_hdr *a, const struct dcache_spath_key *k, const char *path,
			  size_t plen, const struct dcache_spath_fill *f, const uint64_t *sgen,
			  const uint64_t *ngen)
{
	unsigned int n = f->n;
	uint64_t h = hash_bytes(mix(mix(k->cred, ((uint64_t)(uint32_t)k->start << 32) | k->flags), n),
				path, plen);
	uint32_t *slot, ref;
	const struct sp_chain *c;
	struct sp_chain *nc;

	for (unsigned int i = 0; i < n; i++)
		h = mix(mix(mix(h, (uint32_t)f->wd[i]), sgen[i]),
			i + 1 < n ? ngen[i] ^ ((uint64_t)f->nidx[i] << 40) : 0);
	slot = &a->sp_chains[h % ARENA_SP_CHAINS];
	ref = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	c = ref ? chain_at(a, ref, plen) : NULL;
	if (c && LD(c->n) == n && chain_is(c, k, path, plen)) {
		unsigned int i = 0;

		while (i < n && LD(c->wd[i]) == f->wd[i] && LD(c->sgen[i]) == sgen[i] &&
		       (i + 1 == n || (LD(c->nidx[i]) == f->nidx[i] && LD(c->ngen[i]) == ngen[i])))
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
		nc->wd[i] = f->wd[i];
		nc->sgen[i] = sgen[i];
		nc->nidx[i] = i + 1 < n ? f->nidx[i] : 0;
		nc->ngen[i] = i + 1 < n ? ngen[i] : 0;
	}
	memcpy(nc->prefix, path, plen);
	ref = (uint32_t)(((char *)nc - (char *)a) / 8);
	__atomic_store_n(slot, ref, __ATOMIC_RELEASE);
	return ref;
}

int dcache_spath_put(void *mem, const struct dcache_spath_fill *f, const uint64_t *sgen,
		     const uint64_t *ngen)
{
	struct arena_hdr *a = mem;
	const struct dcache_spath_key *k = &f->key;
	const char *path = f->path;
	size_t len = f->len, plen = tail_at(path, len);
	uint64_t tw = __atomic_load_n(&a->sp_table, __ATOMIC_ACQUIRE), idx[2], h = f->h;
	unsigned int order, n = f->n;
	struct sp_slot *t, *s = NULL;
	uint32_t seq = 0, ref;
	bool evict = true;

	if (len == 0 || len > DCACHE_SPATH_NAME || len - plen > SP_TAIL || n == 0 ||
	    n > DCACHE_SPATH_DIRS || (f->err != ENOENT && f->err != ENOTDIR))
		return -EINVAL;
	if (tw == SP_TABLE_OFF)
		return -EPERM;
	t = table_of(a, &order);
	if (!t || !gens_of(a)) {
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
			     !chain_holds(gens_of(a), chain_at(a, LD(x->chain), LD(x->plen)),
					  LD(x->nidx), LD(x->ngen)))) {
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
	ref = chain_get(a, k, path, plen, f, sgen, ngen);
	if (!ref)
		return -ENOSPC;
	if (!__atomic_compare_exchange_n(&s->seq, &seq, seq + 1, false, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED))
		return -EBUSY;
	SP_FENCE(__ATOMIC_RELEASE); /* the odd seq before the new fields */
	ST(s->len, (uint8_t)(len - plen));
	ST(s->plen, (uint16_t)plen);
	ST(s->err, (uint8_t)f->err);
	ST(s->chain, ref);
	ST(s->nidx, f->nidx[n - 1]);
	ST(s->ngen, ngen[n - 1]);
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

static int ref_cmp(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	return a < b ? -1 : a > b;
}

/* The path table's part of dcache_arena_census: its slots, those in use and
 * valid, and the distinct chains they refer to (sorted in a scratch array
 * of the heap: a report, not a lookup; without it, sp_chains stays 0). */
void spath_census(const struct arena_hdr *a, struct dcache_arena_census *c)
{
	struct sp_gens *g = gens_of(a);
	unsigned int order;
	const struct sp_slot *t = table_of(a, &order);
	uint32_t *refs;
	uint64_t n = 0;

	if (g)
		c->sp_gens_bytes = sizeof(*g);
	if (!t)
		return;
	c->sp_slots = (uint64_t)1 << order;
	c->sp_table_bytes = c->sp_slots * sizeof(*t);
	c->sp_evicted = __atomic_load_n(&a->sp_evicted, __ATOMIC_RELAXED);
	refs = malloc(c->sp_slots * sizeof(*refs));
	for (uint64_t i = 0; i < c->sp_slots; i++) {
		const struct sp_slot *s = &t[i];
		uint32_t seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
		uint16_t plen = LD(s->plen);

		if ((seq & 1) || !LD(s->err))
			continue;
		c->sp_used++;
		c->sp_valid += chain_holds(g, chain_at(a, LD(s->chain), plen), LD(s->nidx), LD(s->ngen));
		if (refs && chain_at(a, LD(s->chain), plen))
			refs[n++] = LD(s->chain);
	}
	if (!refs)
		return;
	qsort(refs, n, sizeof(*refs), ref_cmp);
	for (uint64_t i = 0; i < n; i++) {
		const struct sp_chain *ch;

		if (i && refs[i] == refs[i - 1])
			continue;
		ch = chain_at(a, refs[i], 0);
		c->sp_chains++;
		if (ch) {
			uint64_t plen = LD(ch->plen), ext = arena_extent(a);

			if (ext - (uint64_t)refs[i] * 8 >= sizeof(*ch) + plen)
				c->sp_chain_bytes += (sizeof(*ch) + plen + 7) & ~(uint64_t)7;
		}
	}
	free(refs);
}
