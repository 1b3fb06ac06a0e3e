/*
 * dcache_arena.c - shared listings: the session's complete directory
 * listings, in one mapping that every process of the session reads and
 * writes (doc/session.md, "Phase 2: shared listings").
 *
 * Design
 * ======
 * A process that makes a directory complete (dcache_populate.c,
 * complete_dir_rcu) reads its listing from the kernel: open, getdents64,
 * close.  In a session, each of a build's processes lists the same include
 * directories again.  The arena keeps each listing once, for all of them,
 * keyed by the directory's watch number on the session's one inotify
 * instance (the same number in every process, for as long as the watch
 * lives).
 *
 *   header | gens[ARENA_GENS] | heads[ARENA_BUCKETS] | entries ...
 *
 *  gens   one 64-bit generation per watch number (wd % ARENA_GENS; two
 *         numbers sharing one only invalidate each other more often).  The
 *         watcher alone bumps it (dcache_arena_invalidate), inside its read
 *         cycle and before it publishes the event's ring record, for every
 *         event about the watch that may change the listing: a name created,
 *         removed or moved in or out, and every event about the directory
 *         itself (attributes, deleted, moved, unmounted, watch gone).  Lost
 *         events (IN_Q_OVERFLOW) bump them all.
 *  heads  one chain per bucket (hash of the watch number): the offset (in
 *         8-byte units) of the newest entry, 0 for none.
 *  entries  { next, wd, gen, count, len, names } written once by the
 *         process that listed the directory, then published by a CAS of
 *         its bucket's head (release), never written again.  `gen` is the
 *         watch's generation sampled before the listing was read; the entry
 *         answers only while gens[wd] still holds it.
 *
 * Invariants
 * ==========
 *  A1 An entry is immutable once reachable: it is filled, then its `next`
 *     set, then it is published by the release CAS; readers acquire the head.
 *  A2 Space is only ever taken (an atomic bump of `bump`), never given back:
 *     no entry is reused while a reader may copy it.  A full arena refuses
 *     new entries (-ENOSPC); listings are then read from the kernel, as
 *     without a session.
 *  A3 Nothing is locked.  A writer killed at any instruction leaves at most
 *     space that no head reaches: nothing half-done is ever visible.
 *  A4 A reader trusts nothing it reads: it copies an entry into its own
 *     buffer, checks every offset, length and name against the arena's and
 *     the buffer's bounds, and checks the generation again after the copy.
 *     A corrupt arena (a process of the same user can write it, as it can
 *     ptrace the session's processes: README, "Security") gives wrong
 *     listings, never a fault or an overrun.
 *  A5 Why a valid entry is exact (doc/session.md): any change to the
 *     listing after `gen` was sampled queues an event on the watch (the
 *     watch was in place before the sample), and the watcher bumps gens[wd]
 *     before it publishes that event's record.  So once a process has
 *     caught up with the ring at a sync point, every entry older than a
 *     change it must see is invalid.  Who may publish, and with which
 *     generation, is the caller's duty (invalidate/, inval_listing_*).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "dcache.h"

#define ARENA_MAGIC 0x31414e4552415752ULL /* "RWARENA1" */
#define ARENA_VERSION 1u
#define ARENA_GENS 65536u
#define ARENA_BUCKETS 16384u
#define ARENA_CHAIN_MAX 64 /* entries a reader looks at in one chain */

struct arena_hdr {
	uint64_t magic;
	uint32_t version, ngens, nbuckets, pad;
	uint64_t size;
	_Alignas(64) uint64_t bump;  /* next free byte (A2) */
	uint64_t refused;            /* puts refused for want of space */
	_Alignas(64) uint64_t gens[ARENA_GENS];
	uint32_t heads[ARENA_BUCKETS];
};

struct arena_ent {
	uint32_t next;   /* the next older entry of the bucket (8-byte units), 0: none */
	int32_t wd;
	uint64_t gen;
	uint32_t count;  /* names */
	uint32_t len;    /* bytes of names[] */
	char names[];    /* count times: type byte, name, NUL */
};

#define ARENA_DATA (((sizeof(struct arena_hdr) + 63) / 64) * 64)

static uint32_t bucket_of(int wd)
{
	uint32_t h = (uint32_t)wd * 2654435761u;

	return (h >> 16) % ARENA_BUCKETS;
}

static uint64_t *gen_of(struct arena_hdr *a, int wd)
{
	return &a->gens[(uint32_t)wd % ARENA_GENS];
}

int dcache_arena_format(void *mem, size_t size)
{
	struct arena_hdr *a = mem;

	if (size < ARENA_DATA + 4096 || size / 8 > UINT32_MAX)
		return -EINVAL;
	a->version = ARENA_VERSION;
	a->ngens = ARENA_GENS;
	a->nbuckets = ARENA_BUCKETS;
	a->size = size;
	a->bump = ARENA_DATA;
	__atomic_store_n(&a->magic, ARENA_MAGIC, __ATOMIC_RELEASE); /* last */
	return 0;
}

int dcache_arena_check(const void *mem, size_t size)
{
	const struct arena_hdr *a = mem;

	if (size < ARENA_DATA + 4096 || __atomic_load_n(&a->magic, __ATOMIC_ACQUIRE) != ARENA_MAGIC ||
	    a->version != ARENA_VERSION || a->ngens != ARENA_GENS ||
	    a->nbuckets != ARENA_BUCKETS || a->size != size)
		return -EPROTO;
	return 0;
}

void dcache_arena_invalidate(void *mem, int wd)
{
	struct arena_hdr *a = mem;

	if (wd >= 0) {
		__atomic_fetch_add(gen_of(a, wd), 1, __ATOMIC_SEQ_CST);
		return;
	}
	for (uint32_t i = 0; i < ARENA_GENS; i++)
		__atomic_fetch_add(&a->gens[i], 1, __ATOMIC_SEQ_CST);
}

uint64_t dcache_arena_gen(const void *mem, int wd)
{
	return __atomic_load_n(gen_of((struct arena_hdr *)mem, wd), __ATOMIC_ACQUIRE);
}

/* Whether names[0..len) holds exactly `count` names, each a type byte, 1 to
 * NAME_MAX bytes without '/' or NUL, and a NUL (A4). */
static bool names_valid(const char *names, size_t len, size_t count)
{
	size_t off = 0, n = 0;

	while (off < len) {
		const char *nm;
		size_t l;

		if (len - off < 3)
			return false;
		nm = names + off + 1;
		l = strnlen(nm, len - off - 1);
		if (l == 0 || l > NAME_MAX || l == len - off - 1 || memchr(nm, '/', l))
			return false;
		off += l + 2;
		n++;
	}
	return n == count;
}

int dcache_arena_put(void *mem, int wd, uint64_t gen, const char *ents, size_t len, size_t count)
{
	struct arena_hdr *a = mem;
	uint32_t *head = &a->heads[bucket_of(wd)];
	uint64_t need = (sizeof(struct arena_ent) + len + 7) & ~(uint64_t)7, off;
	struct arena_ent *e;
	uint32_t old;

	if (wd < 0 || len > UINT32_MAX / 2 || count > len)
		return -EINVAL;
	if (dcache_arena_gen(mem, wd) != gen)
		return -ESTALE; /* it changed while we listed it: nobody may use it */
	off = __atomic_fetch_add(&a->bump, need, __ATOMIC_RELAXED);
	if (off < ARENA_DATA || off % 8 || off > a->size || a->size - off < need) {
		__atomic_fetch_add(&a->refused, 1, __ATOMIC_RELAXED);
		return -ENOSPC; /* A2: the bump stays past the end; nothing else moves */
	}
	e = (struct arena_ent *)((char *)mem + off);
	e->wd = wd;
	e->gen = gen;
	e->count = (uint32_t)count;
	e->len = (uint32_t)len;
	if (len)
		memcpy(e->names, ents, len);
	old = __atomic_load_n(head, __ATOMIC_RELAXED);
	do
		e->next = old; /* A1: written before the CAS that publishes e */
	while (!__atomic_compare_exchange_n(head, &old, (uint32_t)(off / 8), true, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED));
	return 0;
}

long dcache_arena_get(const void *mem, int wd, char *buf, size_t cap, size_t *count)
{
	const struct arena_hdr *a = mem;
	uint64_t size = a->size, gen;
	uint32_t cur;

	if (wd < 0)
		return -ENOENT;
	gen = dcache_arena_gen(mem, wd);
	cur = __atomic_load_n(&a->heads[bucket_of(wd)], __ATOMIC_ACQUIRE);
	for (int steps = 0; cur && steps < ARENA_CHAIN_MAX; steps++) {
		uint64_t off = (uint64_t)cur * 8;
		struct arena_ent h;
		const struct arena_ent *e;

		if (off < ARENA_DATA || off > size || size - off < sizeof(h))
			return -ENOENT; /* A4 */
		e = (const struct arena_ent *)((const char *)mem + off);
		memcpy(&h, e, sizeof(h));
		if (h.wd == wd && h.gen == gen) {
			if (h.len > size - off - sizeof(h))
				return -ENOENT;
			if (h.len > cap)
				return -E2BIG;
			memcpy(buf, e->names, h.len);
			if (!names_valid(buf, h.len, h.count))
				return -ENOENT;
			/* A5: still valid after the copy (and A1: nobody rewrote it). */
			if (dcache_arena_gen(mem, wd) != gen)
				return -ENOENT;
			*count = h.count;
			return (long)h.len;
		}
		cur = h.next;
	}
	return -ENOENT;
}

uint64_t dcache_arena_refused(const void *mem)
{
	return __atomic_load_n(&((const struct arena_hdr *)mem)->refused, __ATOMIC_RELAXED);
}
