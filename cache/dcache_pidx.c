/* SPDX-License-Identifier: MIT */
/*
 * dcache_pidx.c - the path index: a whole name, as the caller spelt it,
 * straight to the dentry its last walk ended on, so that a long name costs
 * one hash of the string instead of one table lookup per component.
 *
 * PIDX_SETS sets of PIDX_WAYS (8) ways, and PIDX_SLOTS slots, in one
 * mapping made by the first fill (anonymous memory, never freed: a slot is
 * never dereferenced after the mapping goes, and the mapping never goes).
 * Each slot is a seqcount-protected record { start dentry,
 * FOLLOW/DIRECTORY flags, name } -> { dentry, its d_seq, flags, dc_tree_gen
 * when the walk began }.  A name may sit in any way of its set; a set (32
 * bytes) holds a tag byte per way (a hash byte, 0: never filled), which a
 * probe reads first, and each way's slot number: a way takes the next free
 * slot at its first fill and keeps it, so slots are used in the order names
 * arrive, 16 a page.  Readers write nothing: the walk that found a name the
 * index did not have fills a way (a try-lock on its slot's seq; a busy slot
 * is simply not filled), preferring the way that held the name, then a
 * never-filled one, then one of a past generation, else the thread's turn.
 *
 * What an entry says:
 *  - the walk resolved the name to `res` (its final dentry), PIDX_WANT_DIR
 *    if it ended asking for a directory; or
 *  - ENOENT, because `res` is the name's own negative dentry (or that of a
 *    component of it); or
 *  - ENOENT, because `res` is a complete directory (D_COMPLETE) whose
 *    listing lacks the next component (PIDX_ABSENT).  Most names a
 *    compiler's header search asks for are these.
 *
 * Why an entry is exact while its generation is current:
 *  - every change that can make a name resolve differently (a dentry
 *    unhashed, freed, made uncacheable, a directory's search permission
 *    forgotten, the root or the cwd replaced) bumps dc_tree_gen before it
 *    touches anything (d_write_begin(), dc_kill_all_locked());
 *  - the walk samples dc_tree_gen before it reads the root or the cwd, so
 *    an entry records a generation no newer than the state it walked;
 *  - a reader compares the generation after reading the slot consistently
 *    (slot seq re-checked), and only then dereferences `res`, inside its RCU
 *    read-side section: a dentry freed since the entry was made was unhashed
 *    (gen bumped) before its call_rcu(), so either the reader sees the bump,
 *    or its section began before the grace period;
 *  - `res`'s own state (attributes, access answers, being killed) is checked
 *    through its d_seq, which must still equal the one the walk saw, exactly
 *    as at the end of a walk;
 *  - PIDX_ABSENT: the walk saw D_COMPLETE on `res` (acquire), did not find
 *    the component, and found res's d_seq unchanged since res_seq.  The
 *    answer holds while no name appears in res and res stays complete, and
 *    each way that can happen moves res's d_seq (or dc_tree_gen) first:
 *     . an inotify event of a name created or moved in (IN_CREATE,
 *       IN_MOVED_TO, a directory's IN_ISDIR entry: dcache_event_child()) and
 *       an attribute event of res itself (dcache_event_self()) call
 *       dc_uncomplete_locked(), which clears D_COMPLETE in a d_seq write
 *       section, before anything else of the event; lost events
 *       (dcache_invalidate_all) bump dc_tree_gen.  This process's own
 *       creations (the shim's mutator wrappers: mkdir, rename, open with
 *       O_CREAT, link, symlink, mknod...) change nothing in the cache
 *       themselves: they note the change (note_change()), and the next
 *       lookup of any thread applies the queued event first (inval_sync()),
 *       so they reach res through that same event;
 *     . a name hashed into res while complete by the miss path (a lookup
 *       begun before the listing, answered after the name's creation, its
 *       event still queued; or a session's shared answer):
 *       dc_d_hash_locked() hashes a new positive name of a complete
 *       directory inside a write section of it;
 *     . a listing (complete_dir_rcu) is kept only by a directory not
 *       complete, and setting D_COMPLETE creates no entry: an entry needs
 *       D_COMPLETE seen, and D_COMPLETE is never cleared but by
 *       dc_uncomplete_locked() (d_seq bumped), which drops the listing;
 *       a listed name hashed at its first lookup (MISS_LISTED) never
 *       answered ENOENT, so it appears in nothing an entry says, and the
 *       walk looks in the listing before it indexes an absent name;
 *     . TTL filesystems, where a listing expires (complete_until) without
 *       any write: not indexed (a walk through a D_TTL dentry fills
 *       nothing, nor one that ends in a D_TTL directory);
 *     . res killed (evicted, its name gone, the cache emptied, the root
 *       replaced) or made uncacheable: d_write_begin(), gen bumped;
 *     . a directory's own attributes rewritten or dropped (MISS_ATTR,
 *       events) bump its d_seq too: the entries go with them, needlessly
 *       but safely, and the next walk refills them;
 *  - walks that crossed a D_TTL dentry are not indexed.
 * Memory: 8 MiB + 160 KiB of address space (32,768 slots of 256 bytes,
 * 4,096 sets of 32, the 32 KiB of pidx_seen(); MAP_NORESERVE), mapped only
 * by a thread that fills (dc_pidx_min_answers cached answers first).
 * Resident as touched: the sets' and the seen bits' pages as names spread
 * over them, then one page of slots per 16 names filled: directory prefixes
 * at their first walk, names at their second (a cc1 fills its few dozen
 * prefixes and little else).  14,400 names looked up twice: about 3.6 MiB.
 * Not counted in the dentry budget (dc_bytes, --max-mb).
 *
 * Directory prefix entries (PIDX_KEY_PREFIX, dcache_int.h): the same slots,
 * keyed apart from any name asked, filled by the walk when it reaches its
 * name's last component at depth 0 and read by a walk the index cannot
 * answer whole (dcache_walk.c, "Prefix"); exact by the rules below, `res`
 * being the directory, and the symlinks followed to it kept in `flags`.  A
 * prefix whose last component is absent (dcache_walk.c, "Absent prefixes")
 * is filled as a name's absent entry is (PIDX_ABSENT and the complete
 * directory, or the negative dentry): every name below it is ENOENT.
 *
 * The slot and its readers (pidx_hash(), pidx_find()) are in dcache_int.h,
 * inline in the walk; the filler and the mapping are here.
 */
#define _GNU_SOURCE
#define URCU_INLINE_SMALL_FUNCTIONS
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "dcache_int.h"

#ifdef MADV_POPULATE_WRITE
#define PIDX_MADV_POPULATE_WRITE MADV_POPULATE_WRITE
#else
#define PIDX_MADV_POPULATE_WRITE 23 /* Linux 5.14's value, for older headers */
#endif

struct pidx_map *dc_pidx; /* set once by the first dc_pidx_fill() that wants it, or NULL */

/* A thread fills slots only after this many cached answers of its own
 * (dcache_set_index()): filling maps the index and faults its pages in (1.5-2
 * us each measured on this project's VM, ~12 us on others), which a process
 * of a few lookups (a configure probe, a shell) never earns back.  Then
 * directory prefix entries (PIDX_KEY_PREFIX) at their first walk: a build's
 * processes look names up in a few dozen directories, and each entry saves
 * every later name of its directory all but one component of its walk.  And
 * a name's own entry at its second walk (dc_pidx_twice, pidx_seen()): a cc1
 * asks each (directory, header) once, and an entry for each cost it a page
 * fault per 16 names, ~95 ns a lookup, for nothing (14,400 names in a
 * session's second process, 18:15 UTC 12-05: 281-308 ns a first lookup with
 * every name filled from its 4,097th answer on, 190-205 without). */
unsigned long dc_pidx_min_answers = 64;
bool dc_pidx_twice = true;

/* Whether names get entries of their own at all (dcache_set_index_names()),
 * or only directory prefixes do.  On in this module, where the tests of the
 * name entries run; the shim turns it off (preload/config.c): a prefix entry
 * and the directory's bloom answer an absent name as fast, and a build's
 * compilers walk each name once, so the seen bit every first walk read and
 * wrote (a cold line and a locked write: ~30% of the walk's samples in a
 * generated project's cc1s) and the second walk's fill (a page fault per 16
 * names) bought them nothing (doc/benchmarks.md, "Stop 32"). */
bool dc_pidx_names = true;

/* Set by the lookup loops (dcache_lookup_len, drive_lookup) before they call
 * dc_populate_rcu(), in the thread whose lookup asks the kernel; cleared at
 * each lookup's start.  The walks of such a lookup fill no index slot:
 * only a name found again by a plain walk (looked up twice) gets one. */
__thread bool tls_populated __attribute__((tls_model("initial-exec")));

/* Which slot of a full set, none of them stale, the next fill replaces: a
 * per-thread turn, so that nine names of one set do not always evict the
 * same one. */
static __thread unsigned int tls_victim __attribute__((tls_model("initial-exec")));

/* Set when mmap() refused the index (an address-space limit): not asked
 * again at every fill. */
static bool pidx_unmappable;

/* Map the index, once (the first thread to fill wins; a loser unmaps its own
 * mapping).  NULL if it cannot be mapped: nothing is indexed then. */
static struct pidx_map *pidx_map(void)
{
	struct pidx_map *x = LOAD_ACQUIRE(dc_pidx), *want = NULL;
	void *p;

	if (x)
		return x;
	if (LOAD_RELAXED(pidx_unmappable))
		return NULL;
	p = mmap(NULL, sizeof(struct pidx_map), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		STORE_RELAXED(pidx_unmappable, true);
		return NULL;
	}
	/* The sets and the seen bits (160 KiB) in one call, written: a walk
	 * reads a set or a seen word before any fill writes it, so each of
	 * their 40 pages would fault twice (the zero page mapped, then copied
	 * on write: ~3.8 us a page on this project's VM, ~1.4 us populated).
	 * A cc1 touches them all.  Before Linux 5.14: EINVAL, faulted as
	 * touched. */
	(void)madvise(p, LOAD_RELAXED(dc_pidx_names) ? offsetof(struct pidx_map, slot)
						     : offsetof(struct pidx_map, seen),
		      PIDX_MADV_POPULATE_WRITE);
#ifdef MADV_WIPEONFORK /* Linux 4.14 */
	/* A fork() child starts with an empty cache (dcache_fork_child) and
	 * so an empty index: zero pages, as a fresh map, instead of the
	 * parent's page table entries copied at every fork and each page the
	 * parent writes after it a copy-on-write fault.  Where it fails, the
	 * child's entries are stale by dc_tree_gen anyway. */
	(void)madvise(p, sizeof(struct pidx_map), MADV_WIPEONFORK);
#endif
	if (__atomic_compare_exchange_n(&dc_pidx, &want, (struct pidx_map *)p, false,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return (struct pidx_map *)p;
	munmap(p, sizeof(struct pidx_map));
	return want; /* the winner's */
}

/* The slot of way w (0: none yet). */
static struct pidx_slot *way_slot(struct pidx_map *x, const struct pidx_set *set, unsigned int w)
{
	unsigned int i = LOAD_RELAXED(set->slot[w]);

	return i ? &x->slot[i - 1] : NULL;
}

/* Which way of `set` (tags: its tag word) a fill of hash h takes: the one
 * that holds this name already (an entry gone stale), else one never filled,
 * else one whose generation is past, else the thread's turn.  A hint only:
 * the slot's own seq decides who writes it. */
static unsigned int pidx_victim(struct pidx_map *x, const struct pidx_set *set, uint64_t tags,
				uint64_t h, uint64_t gen)
{
	struct pidx_slot *e;

	for (uint64_t m = pidx_tag_match(tags, pidx_tag(h)); m; m &= m - 1) {
		unsigned int w = (unsigned int)__builtin_ctzll(m) / 8;

		if ((e = way_slot(x, set, w)) && LOAD_RELAXED(e->hash) == h)
			return w;
	}
	for (unsigned int w = 0; w < PIDX_WAYS; w++)
		if (!((tags >> (8 * w)) & 0xff))
			return w;
	for (unsigned int w = 0; w < PIDX_WAYS; w++)
		if ((e = way_slot(x, set, w)) && LOAD_RELAXED(e->gen) != gen)
			return w;
	return tls_victim++ % PIDX_WAYS;
}

/*
 * Slots are handed out in order (x->next), 16 to a page, each page first
 * touched by its first slot's fill: a fault per 16 names, ~35 in a cc1 of
 * the generated project (perf, page-faults, 12-07), ~10 us each on this
 * project's VM against ~1 us a page populated in one call.  So the thread
 * that takes slot n, a multiple of PIDX_AHEAD, populates the pages of slots
 * n to n + PIDX_AHEAD - 1 (32 KiB) before writing it: one madvise() per 128
 * names.  Only that thread (fetch_add hands n out once); another thread's
 * write meanwhile faults its page as before, and populating a page already
 * there does nothing.  Before Linux 5.14: EINVAL, faulted as touched.
 */
#define PIDX_AHEAD 128

static void populate_ahead(struct pidx_map *x, unsigned int n)
{
	uintptr_t a = (uintptr_t)&x->slot[n] & ~(uintptr_t)4095;
	uintptr_t e = (uintptr_t)&x->slot[n + PIDX_AHEAD <= PIDX_SLOTS ? n + PIDX_AHEAD : PIDX_SLOTS];

	(void)madvise((void *)a, e - a, PIDX_MADV_POPULATE_WRITE);
}

/* Way w's slot, handing it the next free one at its first fill (*fresh);
 * NULL when none is left (threads that raced for one way each took one). */
static struct pidx_slot *way_slot_get(struct pidx_map *x, struct pidx_set *set, unsigned int w,
				      bool *fresh)
{
	uint16_t i = LOAD_RELAXED(set->slot[w]), mine;
	unsigned int n;

	*fresh = false;
	if (i)
		return &x->slot[i - 1];
	n = __atomic_fetch_add(&x->next, 1, __ATOMIC_RELAXED);
	if (n >= PIDX_SLOTS)
		return NULL;
	if (n % PIDX_AHEAD == 0)
		populate_ahead(x, n);
	mine = (uint16_t)(n + 1);
	if (!__atomic_compare_exchange_n(&set->slot[w], &i, mine, false, __ATOMIC_RELAXED,
					 __ATOMIC_RELAXED))
		return &x->slot[i - 1]; /* another thread's (slot n stays unused) */
	*fresh = true;
	return &x->slot[n];
}

/* Reader, under rcu_read_lock(), at the end of a walk that began at `gen`:
 * remember (start, key, name) -> (res, res_seq, flags).  Lock-free; gives up
 * if another thread is filling the slot. */
void dc_pidx_fill(const struct dentry *start, unsigned int key, const char *name,
		  size_t len, uint64_t h, uint64_t gen, struct dentry *res,
		  unsigned int res_seq, unsigned int flags)
{
	struct pidx_map *x;
	struct pidx_set *set;
	struct pidx_slot *e;
	unsigned int w, s;
	uint64_t tags, nt;
	bool fresh;
	size_t i = 0;

	if (LOAD_ACQUIRE(dc_tree_gen) != gen || !(x = pidx_map()))
		return; /* already stale, or no index */
	set = &x->set[pidx_set(h)];
	tags = LOAD_RELAXED(set->tags);
	w = pidx_victim(x, set, tags, h, gen);
	if (!(e = way_slot_get(x, set, w, &fresh)))
		return;
	/* A fresh slot (seq 0) is first touched by the write: its page faults
	 * in once, not as a zero page read and then again written. */
	s = fresh ? 0 : LOAD_RELAXED(e->seq);
	if ((s & 1) || !__atomic_compare_exchange_n(&e->seq, &s, s + 1, false, __ATOMIC_ACQUIRE,
						    __ATOMIC_RELAXED))
		return;
	D_SEQ_FENCE(__ATOMIC_RELEASE); /* the odd seq before the new fields */
	STORE_RELAXED(e->hash, h);
	STORE_RELAXED(e->len, (unsigned int)len);
	STORE_RELAXED(e->start, start);
	STORE_RELAXED(e->key, key);
	STORE_RELAXED(e->flags, flags);
	STORE_RELAXED(e->gen, gen);
	STORE_RELAXED(e->res, res);
	STORE_RELAXED(e->res_seq, res_seq);
	for (; i + 8 <= len; i += 8) {
		uint64_t v;

		memcpy(&v, name + i, 8);
		STORE_RELAXED(e->name[i / 8], v);
	}
	if (i < len) {
		STORE_RELAXED(e->name[i / 8], pidx_tail(name + i, len - i, len >= 8));
	}
	STORE_RELEASE(e->seq, s + 2);
	/* The tag after the slot: a reader that sees it and then the slot
	 * mid-refill by another thread fails the slot's own checks. */
	do {
		nt = (tags & ~(0xffULL << (8 * w))) | (pidx_tag(h) << (8 * w));
		if (nt == tags)
			break;
	} while (!__atomic_compare_exchange_n(&set->tags, &tags, nt, true, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
}

void dcache_set_index_names(int on)
{
	dc_pidx_names = on != 0;
}

void dcache_set_index(unsigned long min_answers)
{
	dc_pidx_min_answers = min_answers;
	dc_pidx_twice = min_answers != 0;
}
