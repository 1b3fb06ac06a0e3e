/* SPDX-License-Identifier: MIT */
/*
 * dcache_int.h - PRIVATE to cache/: what the dentry cache's source files
 * share.  Never included outside cache/ (the module's contract is dcache.h);
 * nothing declared here is part of the library's interface.
 *
 * It holds struct dentry and its helpers (accessors, the attribute encoding,
 * the d_seq reader and writer sections), which every file of the cache uses,
 * and, grouped by the file that defines them, the state and functions that
 * one file defines and another uses.  The design, the lock table and the lock
 * order are at the top of dcache.c; each file opens with what it adds.
 *
 * Names: what one file defines and another uses takes the prefix dc_
 * (dcache_ is the public interface), but for dcache_mutex and the tls_*
 * thread-locals, which keep the names every comment uses; static inline
 * helpers keep their short names (d_*, attr_*, pidx_*, ...).  Everything here
 * is hidden (the pragma below): nothing joins librcuwalk.so's dynamic
 * symbols, and accesses to shared variables stay direct, not through the GOT.
 * Hot-path helpers are static inline here, so that splitting the cache into
 * files turned nothing on the hit path into a call.  Not even liburcu's
 * read-side lock and unlock, in the shim: dc_read_lock() below.
 */
#ifndef RCUWALK_DCACHE_INT_H
#define RCUWALK_DCACHE_INT_H

/* liburcu through its functions only, never its inline read side
 * (_LGPL_SOURCE), which reads liburcu's own variables: the shim loads liburcu
 * at its first lookup (dcache_urcu.c), and its functions are the names
 * it forwards.  The small pointer helpers (rcu_dereference...) stay inline. */
#ifndef URCU_INLINE_SMALL_FUNCTIONS
#error "define _GNU_SOURCE and URCU_INLINE_SMALL_FUNCTIONS before any #include in cache/*.c"
#endif
#ifdef _LGPL_SOURCE
#error "cache/ must not use liburcu's inline read side (_LGPL_SOURCE): see above"
#endif

#include <urcu-bp.h>
#include <urcu/rculfhash.h>
#include <urcu/list.h>
#include <urcu/compiler.h>

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "dcache.h"

#pragma GCC visibility push(hidden)

/*
 * Shared accesses go through compiler atomics rather than liburcu's volatile
 * CMM_* / rcu_dereference macros: same code on x86-64 (plain moves), but
 * ThreadSanitizer understands them.  Publication (a dentry into the table, an
 * attribute block, the cwd reference) is a release store paired with an
 * acquire load; for hashed dentries the pair is d->seq (see dc_d_alloc/d_match).
 */
#define LOAD_RELAXED(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define STORE_RELAXED(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define LOAD_ACQUIRE(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE_RELEASE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

/* ---------------------------------------------------------------------- */
/* The lookup's read-side section: dc_read_lock() / dc_read_unlock()
 *
 * liburcu-bp's read lock is a call into the library (this file never uses its
 * inline side, above), which finds the thread's reader through
 * __tls_get_addr (liburcu is dlopen()ed: its thread-locals are dynamic), and
 * in the shim through dcache_urcu.c's forward too: about 220 instructions a
 * lookup, a quarter of a path-index hit (doc/benchmarks.md).  When the shim
 * loaded liburcu-bp itself (dcache_urcu.c, RCUWALK_URCU_LAZY), dc_rd holds
 * what the library's own inline read side reads (its _LGPL_SOURCE ABI of
 * soname 8): &urcu_bp_gp.ctr, &urcu_bp_has_sys_membarrier, and a way to find
 * this thread's urcu_bp_reader slot once.  The section is then entered as the
 * library does it: nesting 0 -> copy the grace-period counter into the
 * reader's ctr, then a full fence unless sys_membarrier (a compiler barrier:
 * the writer's membarrier() orders us); nested -> ctr + 1; leave: the same
 * fence, then ctr - 1.
 *
 * Invariants:
 *  - dc_rd is written once, before dcache_urcu.c releases `loaded`; every
 *    caller of dc_read_lock() has passed that load (the cache is used only
 *    after it), or dc_rd.slot is NULL (unit tests, liburcu linked in) and
 *    the library's functions are called, as before.
 *  - tls_rd_slot is this thread's &urcu_bp_reader: it stays valid for the
 *    thread's life (a fork()ed child's thread has the same TLS addresses).
 *    The reader it holds is read at every lock: NULL before the thread is
 *    registered and again after liburcu's thread-exit destructor
 *    unregistered it, and then the library's read_lock() (re)registers.
 *  - Lock and unlock of one section may take different paths (the first
 *    lock of a thread is the library's, its unlock ours): both act on the
 *    same reader's ctr, as the library would. */
#define DC_RD_GP_COUNT 1UL
#define DC_RD_NEST_MASK ((1UL << (sizeof(long) << 2)) - 1) /* URCU_BP_GP_CTR_NEST_MASK */
struct dc_rd_fast {
	const unsigned long *gp_ctr; /* &urcu_bp_gp.ctr */
	const int *membarrier;       /* &urcu_bp_has_sys_membarrier */
	void **(*slot)(void);        /* this thread's &urcu_bp_reader (its first field: ctr) */
};
extern struct dc_rd_fast dc_rd;
extern __thread void **tls_rd_slot __attribute__((tls_model("initial-exec")));

/* Sets tls_rd_slot where dc_rd allows it (dcache.c).  After a library lock. */
void dc_rd_learn(void);

static inline void dc_rd_fence(void)
{
#ifdef __SANITIZE_THREAD__
	/* Never reached: ThreadSanitizer cannot follow fences, so its builds
	 * keep the library's functions (dcache_urcu.c leaves dc_rd.slot NULL). */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
#else
	if (__builtin_expect(__atomic_load_n(dc_rd.membarrier, __ATOMIC_RELAXED), 1))
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
	else
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

static inline void dc_read_lock(void)
{
	void **slot = tls_rd_slot;
	unsigned long *ctr, v;

	if (__builtin_expect(slot && (ctr = __atomic_load_n(slot, __ATOMIC_RELAXED)), 1)) {
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		v = __atomic_load_n(ctr, __ATOMIC_RELAXED);
		if (__builtin_expect(!(v & DC_RD_NEST_MASK), 1)) {
			__atomic_store_n(ctr, __atomic_load_n(dc_rd.gp_ctr, __ATOMIC_RELAXED),
					 __ATOMIC_RELAXED);
			dc_rd_fence();
		} else {
			__atomic_store_n(ctr, v + DC_RD_GP_COUNT, __ATOMIC_RELAXED);
		}
		return;
	}
	rcu_read_lock();
	dc_rd_learn();
}

static inline void dc_read_unlock(void)
{
	void **slot = tls_rd_slot;
	unsigned long *ctr, v;

	if (__builtin_expect(slot && (ctr = __atomic_load_n(slot, __ATOMIC_RELAXED)), 1)) {
		v = __atomic_load_n(ctr, __ATOMIC_RELAXED);
		dc_rd_fence();
		__atomic_store_n(ctr, v - DC_RD_GP_COUNT, __ATOMIC_RELAXED);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		return;
	}
	rcu_read_unlock();
}

#define MAX_SYMLINKS 40        /* per lookup, as the kernel's MAXSYMLINKS */
#define MAX_WALK_ATTEMPTS 256  /* misses + retries per lookup before passing through */

/* ---------------------------------------------------------------------- */
/* Dentries */

/* D_UNK: the name exists (a complete directory's listing says so), nothing
 * else is known: the walk treats it as a miss and the slow path replaces it. */
enum d_type { D_NEG = 0, D_DIR, D_REG, D_LNK, D_OTHER, D_UNK };

/* d_flags bits (read by readers with atomic loads, written under dcache_mutex) */
#define D_DEAD      0x01u /* unhashed; never valid again */
#define D_SEARCHED  0x02u /* the kernel walked through this directory for us */
#define D_NOCACHE   0x04u /* nothing below / no attributes: unwatched or uncacheable fs */
#define D_NOATTR    0x08u /* attributes never cached (hard-linked file: nlink > 1; FIFO,
			     * socket or device: reads and writes through them move
			     * their times without any inotify event; a stat that
			     * attr_fits() refuses) */
#define D_COMPLETE  0x10u /* directory: every name in it is hashed or listed (dir->listing);
                            * others are absent */
#define D_TTL       0x20u /* on a filesystem others change behind this kernel: expires */
#define D_NOWATCH   0x40u /* with D_NOCACHE: no watch because of a watch limit or budget */
#define D_LISTED    0x80u /* regular file typed from a listing, never lstat'ed: its
			     * st_nlink (hard links: D_NOATTR) is not known yet */
#define D_ATTR      0x100u /* the attributes (a_* fields) hold its lstat answer */
/* Directories only, set at hashing, never changed (both answers are safe: see
 * "Scratch directories", dcache_populate.c): */
#define D_SCRATCH   0x200u /* the lstat that hashed it said: sticky, writable by all */
#define D_MODEQ     0x400u /* hashed without its mode (a listing, a shared name): ask */

struct dentry {
	struct cds_lfht_node hnode; /* keeps the hash (bit-reversed): none stored here */
	struct dentry *parent;
	/* One word, told apart by the (immutable) type: use d_dir(), d_sx_slot(). */
	union {
		/* D_DIR: its state, from when it is first watched
		 * (ensure_watch_locked), else NULL.  Set once (release), freed
		 * with d; it holds the directory's statx answer. */
		struct dir_state *dir;
		/* Any other type: RCU-published statx answer; only while D_ATTR. */
		struct dcache_sx *sx;
	};
	unsigned int seq;           /* d_seq */
	unsigned int flags;         /* D_* */
	unsigned short access_ok;   /* bit m: access(m) == 0; bit 8+m: with AT_EACCESS */
	unsigned char type;         /* enum d_type */
	unsigned char referenced;   /* CLOCK bit, set by readers only when clear */
	unsigned char namelen;      /* <= NAME_MAX; the root's is 0 */
	/*
	 * The attributes: the lstat answer of the object, compacted (attr_fits()
	 * says what is kept; st_dev is `dev`), valid while D_ATTR is set.  They
	 * are written in place, by attr_store() only, in one of two places:
	 * before the dentry is hashed (published by d_publish()), or inside a
	 * d_seq write section that also sets D_ATTR (populate_rcu, MISS_ATTR).
	 * D_ATTR is cleared only inside a write section (dc_drop_attr_locked).
	 * Readers load them with relaxed atomics after seeing D_ATTR and use
	 * them only if d_seq_retry() then says d did not change: a reader racing
	 * a writer may copy torn values, never use them.
	 */
	unsigned short a_mode;
	uint32_t a_nlink, a_uid, a_gid;
	int32_t a_blksize;
	uint32_t a_blocks;          /* 512-byte units: 2 TiB allocated at most */
	/* st_dev of the object (for mount-point detection), as the kernel's stat
	 * encodes it (new_encode_dev(): 32 bits); an object with a larger one
	 * is not cached. */
	uint32_t dev;
	uint64_t a_ino;
	int64_t a_size;
	uint64_t a_atime, a_mtime, a_ctime; /* time_pack() */
	/* D_TTL only (CLOCK_MONOTONIC_COARSE ns): the name, its search and access
	 * facts and its attributes are valid until `expires` (immutable after
	 * hashing). */
	uint64_t expires;
	ino_t ino;                  /* st_ino of the object (0: unknown, D_NEG, the root) */
	struct cds_list_head sibling; /* on parent->dir->children, under dcache_mutex */
	/* The LRU link is dead once the dentry is killed (taken off dc_lru, under
	 * dcache_mutex; readers never follow it): the rcu_head that frees the
	 * dentry reuses its words. */
	union {
		struct cds_list_head lru;
		struct rcu_head rcu;
	};
	/* The name, NUL-terminated; a D_LNK's target follows it, NUL-terminated
	 * (d_link()).  One allocation of d_bytes(). */
	char name[];
};
_Static_assert(NAME_MAX <= UCHAR_MAX, "namelen is an unsigned char");

/*
 * What only a watched directory needs, apart from its dentry so that the
 * dentries of files (most of them) do not carry it.  Allocated by
 * ensure_watch_locked() before the directory's first watch, published with a
 * release store of d->dir, never replaced, freed with the dentry after its
 * grace period (free_dentry_rcu).  Every hashed dentry's parent has one
 * (children are hashed only under a watched parent), and so does every
 * D_COMPLETE directory.  All under dcache_mutex except complete_until.
 */
#define DIR_BLOOM_BITS 1024u /* struct dir_state.bloom: 128 bytes a watched directory */
struct dir_state {
	/* D_TTL: D_COMPLETE holds until then (CLOCK_MONOTONIC_COARSE ns).
	 * Written before D_COMPLETE is set (release); readers load it after
	 * seeing D_COMPLETE (acquire), through d->dir. */
	uint64_t complete_until;
	struct dcache_sx *sx;       /* as struct dentry's sx, for the directory */
	struct cds_list_head children; /* every hashed child (their `sibling`) */
	int wd;                     /* watch id of this directory, -1 if none */
	unsigned int dir_gen;       /* bumped by every event about an entry of this dir */
	unsigned int attr_gen;      /* bumped by the events that can move this directory's own
				     * attributes (a name created, deleted or moved in it; an
				     * event on itself), not by writes to its files */
	unsigned short neg_probes;  /* negative answers fetched since it was last complete */
	unsigned short pos_probes;  /* unknown names found present since then */
	unsigned short completions; /* times it was made complete (backs off the policy) */
	unsigned short rent;        /* its lookups passed through unwatched: dcache_populate.c,
				     * "Directory rent"; under dcache_mutex */
	/* While D_COMPLETE: the names of its listing (struct dir_listing), of
	 * which only those looked up are hashed.  Set (release) before
	 * D_COMPLETE; detached, in a d_seq write section, with it
	 * (dc_uncomplete_locked) or with the directory (dc_kill_one_locked),
	 * and freed after a grace period.  Readers load it after seeing
	 * D_COMPLETE (acquire) and check d_seq after reading it. */
	struct dir_listing *listing;
	bool no_complete;           /* its listing cannot be used (too big, case-folded) */
	bool early_tried;           /* completed, or tried, from the session's listing at its
				     * first unknown name (dcache_populate.c, "From the
				     * session's listing"); under dcache_mutex */
	bool names_only;            /* its watch was asked for names only (a scratch
				     * directory): no attribute or write event about its
				     * entries reaches us; set with wd, under dcache_mutex */
	/* Which names may be hashed or listed here: two bits of name_hash()
	 * (dir_bloom_*) for every child ever hashed in it and every name of its
	 * listings, set under dcache_mutex before the child is added to the
	 * table or before D_COMPLETE is set (release), never cleared while the
	 * directory lives.  A name whose bits are not both set is neither in the
	 * table nor in the listing: the walk skips both lookups (a compiler's
	 * names are mostly absent ones), and so does a listing's check of the
	 * names it brings (complete_dir_rcu, under the mutex, where the bits
	 * are exact). */
	uint64_t bloom[DIR_BLOOM_BITS / 64];
};

/*
 * A complete directory's listing (complete_dir_rcu): immutable once
 * published.  An open-addressed table of slot[mask + 1] (at most half full):
 * fingerprint (name_hash() >> 32) << 32 | (offset of the name's record + 1),
 * 0 empty; then the records: the type it is hashed as (D_DIR, D_REG or
 * D_UNK), the length, the name.  A name of a complete directory is absent
 * iff neither the table nor its listing has it; a listed name is hashed at
 * its first lookup (MISS_LISTED), exactly as the listing would have hashed
 * it: so a cc1 that asks ~100 of a session's 2,700 listed names makes ~100
 * dentries, not 2,700.
 */
struct dir_listing {
	struct rcu_head rcu;
	size_t bytes;      /* counted in dc_bytes while attached */
	uint64_t t0;       /* when it was read (now_coarse): D_TTL expiry of its names */
	uint32_t mask;
	uint32_t count;
	uint64_t slot[];   /* then the records */
};

#define LISTING_REC_TYPE 0
#define LISTING_REC_LEN 1
#define LISTING_REC_NAME 2

/* The record of `name` (hash h in its directory) in l, or NULL.  Readers
 * under rcu_read_lock(), and the writer. */
static inline const unsigned char *listing_find(const struct dir_listing *l, unsigned long h,
						const char *name, size_t len)
{
	const unsigned char *recs = (const unsigned char *)&l->slot[l->mask + 1];
	uint64_t fp = (uint64_t)(uint32_t)((uint64_t)h >> 32);

	for (uint32_t i = (uint32_t)h & l->mask;; i = (i + 1) & l->mask) {
		uint64_t v = l->slot[i];
		const unsigned char *r;

		if (!v)
			return NULL;
		if (v >> 32 != fp)
			continue;
		r = recs + (uint32_t)v - 1;
		if (r[LISTING_REC_LEN] == len && memcmp(r + LISTING_REC_NAME, name, len) == 0)
			return r;
	}
}

/* d's dir_state: NULL for a directory never watched and for anything else.
 * Under dcache_mutex (readers load d->dir themselves, of a D_DIR). */
static inline struct dir_state *d_dir(const struct dentry *d)
{
	return d->type == D_DIR ? d->dir : NULL;
}

/* Writer-side views of d_dir() that hold for a dentry without one (under
 * dcache_mutex).  A file's attr_gen is 0 forever: only directory events bump
 * it, and they reach only watched directories. */
static inline int d_wd(const struct dentry *d)
{
	return d_dir(d) ? d->dir->wd : -1;
}

static inline unsigned int d_dir_gen(const struct dentry *d)
{
	return d_dir(d) ? d->dir->dir_gen : 0;
}

static inline unsigned int d_attr_gen(const struct dentry *d)
{
	return d_dir(d) ? d->dir->attr_gen : 0;
}

/* Where d's statx answer is published: NULL for a directory never watched
 * (none is kept there).  Under dcache_mutex, or, by a reader, under RCU. */
static inline struct dcache_sx **d_sx_slot(struct dentry *d)
{
	if (d->type == D_DIR) {
		struct dir_state *ds = LOAD_ACQUIRE(d->dir);

		return ds ? &ds->sx : NULL;
	}
	return &d->sx;
}

/* A symlink's target: after its name, in the same allocation (immutable). */
static inline const char *d_link(const struct dentry *d)
{
	return d->name + d->namelen + 1;
}

/* What d's allocations are counted as in dc_bytes: ensure_watch_locked()
 * adds its dir_state when it makes one.  The root's namelen is 0 from before
 * it is counted, so this stays what was added. */
static inline size_t d_bytes(const struct dentry *d)
{
	size_t sz = sizeof(*d) + d->namelen + 1;

	if (d->type == D_LNK)
		sz += strlen(d_link(d)) + 1;
	if (d_dir(d))
		sz += sizeof(*d->dir);
	return sz;
}

/* What the kernel's statx() filled for one request mask (exact-match key: the
 * kernel's stx_mask and fields depend on the request). */
struct dcache_sx {
	unsigned int mask;
	struct statx stx;
	struct rcu_head rcu;
};

/*
 * Timestamps: seconds and nanoseconds in 64 bits, the seconds (signed, 34
 * bits: years 1698 to 2242) above 30 bits of nanoseconds.
 */
#define TIME_NS_BITS 30
#define TIME_SEC_LIMIT (1LL << (63 - TIME_NS_BITS))

static inline bool time_fits(const struct timespec *t)
{
	return (unsigned long)t->tv_nsec < 1000000000UL && t->tv_sec >= -TIME_SEC_LIMIT &&
	       t->tv_sec < TIME_SEC_LIMIT;
}

static inline uint64_t time_pack(const struct timespec *t)
{
	return ((uint64_t)t->tv_sec << TIME_NS_BITS) | (uint64_t)t->tv_nsec;
}

static inline void time_unpack(struct timespec *t, uint64_t v)
{
	t->tv_sec = (time_t)((int64_t)v >> TIME_NS_BITS); /* arithmetic shift (GCC, Clang) */
	t->tv_nsec = (long)(v & ((1ULL << TIME_NS_BITS) - 1));
}

/* Rebuild the kernel's struct stat from d's attributes, padding zeroed as
 * the kernel's cp_new_stat() leaves it.  The caller saw D_ATTR and checks
 * d_seq afterwards. */
static inline void attr_unpack(struct stat *st, const struct dentry *d)
{
#if defined(__x86_64__) && defined(__GLIBC__)
	/* Every member stored once, the padding ones by name (x86-64 glibc's
	 * layout: 144 bytes, no hidden holes): a memset of the struct compiles
	 * to `rep stos`, 12% of a hit. */
	_Static_assert(sizeof(struct stat) == 144, "x86-64 glibc struct stat");
	st->__pad0 = 0;
	st->__glibc_reserved[0] = 0;
	st->__glibc_reserved[1] = 0;
	st->__glibc_reserved[2] = 0;
#else
	memset(st, 0, sizeof(*st));
#endif
	st->st_dev = LOAD_RELAXED(d->dev);
	st->st_ino = LOAD_RELAXED(d->a_ino);
	st->st_rdev = 0;
	st->st_size = LOAD_RELAXED(d->a_size);
	st->st_blocks = LOAD_RELAXED(d->a_blocks);
	time_unpack(&st->st_atim, LOAD_RELAXED(d->a_atime));
	time_unpack(&st->st_mtim, LOAD_RELAXED(d->a_mtime));
	time_unpack(&st->st_ctim, LOAD_RELAXED(d->a_ctime));
	st->st_mode = LOAD_RELAXED(d->a_mode);
	st->st_nlink = LOAD_RELAXED(d->a_nlink);
	st->st_uid = LOAD_RELAXED(d->a_uid);
	st->st_gid = LOAD_RELAXED(d->a_gid);
	st->st_blksize = LOAD_RELAXED(d->a_blksize);
}

struct cwd_ref {
	struct dentry *d;
	struct rcu_head rcu;
};

/* Coarse monotonic clock for TTLs (vDSO; a few ns; jiffy resolution). */
static inline uint64_t now_coarse(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Fine monotonic clock (vDSO, ~20 ns): only around misses, whose kernel
 * calls take microseconds (DCACHE_STAT_FILL_NS). */
static inline uint64_t now_fine(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* ---------------------------------------------------------------------- */
/* Shared state of dcache.c (see there) */

extern pthread_mutex_t dcache_mutex;
extern const struct dcache_ops *dc_ops;
extern size_t dc_max_bytes;
extern struct cds_lfht *dc_table;
extern struct dentry *dc_root;
extern struct cwd_ref *dc_cwd;
extern unsigned long dc_cwd_gen;
extern size_t dc_bytes;
extern size_t dc_count;
extern struct cds_list_head dc_lru;
extern unsigned long dc_attr_gen;
extern unsigned long dc_file_attr_gen;
extern uint64_t dc_tree_gen;
extern int dc_maint;

/* The generation a kernel answer about an object of `type` samples before it
 * is fetched and compares before it is published (dcache.c, dc_attr_gen).
 * Under dcache_mutex.  Both counters only grow, so the sum moves whenever
 * either does. */
static inline unsigned long dc_attr_gen_for(enum d_type type)
{
	return type == D_DIR ? dc_attr_gen : dc_attr_gen + dc_file_attr_gen;
}

/* Every call_rcu() of the cache goes through dc_call_rcu() (dcache.c, "Threads
 * we do not start"): under dcache_mutex. */
void dc_call_rcu(struct rcu_head *head, void (*func)(struct rcu_head *head));
#undef call_rcu /* urcu-bp's mapping to urcu_bp_call_rcu */
#define call_rcu(head, func) dc_call_rcu(head, func)

/* Per-thread statistics (dcache.c). */

/* One block per thread, each on cache lines of its own (128: the adjacent-
 * line prefetcher pairs lines): the hit path writes only its own. */
struct stat_block {
	uint64_t c[DCACHE_STAT_N_];
} __attribute__((aligned(128)));
extern __thread struct stat_block *tls_stats __attribute__((tls_model("initial-exec")));
extern __thread unsigned char tls_pass_why __attribute__((tls_model("initial-exec")));

/* Why the walk passes through at d, for the statistics: tls_pass_why is
 * PASS_WHY_WATCH (no watch for lack of budget), PASS_WHY_FS (D_NOCACHE:
 * uncached filesystem, excluded or unwatchable directory), PASS_WHY_ATTR
 * (D_NOATTR), PASS_WHY_RACY or PASS_WHY_RENT (both set by dc_populate_rcu). */
enum { PASS_WHY_NONE, PASS_WHY_WATCH, PASS_WHY_FS, PASS_WHY_ATTR, PASS_WHY_RACY, PASS_WHY_RENT };

/* Idle spells (dcache_populate.c): while tls_idle_left, a lookup passes
 * through before walking (dcache_idle_pass(), which counts it down).  The
 * calling thread's own, outside any read-side section. */
extern __thread unsigned int tls_idle_left __attribute__((tls_model("initial-exec")));
#define NOTE_PASS_WHY(d)                                                               \
	do {                                                                          \
		unsigned int f_ = d_flags(d);                                         \
		tls_pass_why = (f_ & D_NOWATCH)	 ? PASS_WHY_WATCH                     \
			      : (f_ & D_NOCACHE) ? PASS_WHY_FS                        \
			      : (f_ & D_NOATTR)	 ? PASS_WHY_ATTR                      \
						 : PASS_WHY_NONE;                     \
	} while (0)

/* ---------------------------------------------------------------------- */
/* d_seq helpers */

/* Reader: sample d_seq, waiting out a writer in progress. */
static inline unsigned int d_seq_begin(const struct dentry *d)
{
	unsigned int s;

	while ((s = LOAD_ACQUIRE(d->seq)) & 1)
		caa_cpu_relax();
	return s;
}

/*
 * The seqlock's fences order the reader's relaxed data loads before its
 * re-check, and the writer's odd store before its data stores.  GCC's
 * ThreadSanitizer does not support fences (-Wtsan): there every shared field
 * is an atomic already (no data race to report), and seq_cst accesses of
 * d_seq stand in for the fences.
 */
#ifdef __SANITIZE_THREAD__
#define D_SEQ_FENCE(order) ((void)0)
#define D_SEQ_ORDER __ATOMIC_SEQ_CST
#else
#define D_SEQ_FENCE(order) __atomic_thread_fence(order)
#define D_SEQ_ORDER __ATOMIC_RELAXED
#endif

/* Reader: true if d changed since d_seq_begin() returned s. */
static inline bool d_seq_retry(const struct dentry *d, unsigned int s)
{
	D_SEQ_FENCE(__ATOMIC_ACQUIRE);
	return __atomic_load_n(&d->seq, D_SEQ_ORDER) != s;
}

/* Writer, under dcache_mutex: every path-index entry becomes stale (see
 * dc_tree_gen), before anything changes. */
static inline void tree_changed_locked(void)
{
	__atomic_store_n(&dc_tree_gen, dc_tree_gen + 1, __ATOMIC_SEQ_CST);
}

/* Writer, under dcache_mutex, for a change that leaves every name resolving
 * to the same dentry (an object's attributes dropped or written in place, a
 * directory's listing no longer complete): d's readers retry, path-index
 * entries stay (their d_seq no longer matches: the next walk refills them). */
static inline void d_write_begin_attr(struct dentry *d)
{
	__atomic_store_n(&d->seq, d->seq + 1, D_SEQ_ORDER);
	D_SEQ_FENCE(__ATOMIC_RELEASE);
}

/* Writer, under dcache_mutex. */
static inline void d_write_begin(struct dentry *d)
{
	tree_changed_locked();
	d_write_begin_attr(d);
}

static inline void d_write_end(struct dentry *d)
{
	STORE_RELEASE(d->seq, d->seq + 1);
}

static inline unsigned int d_flags(const struct dentry *d)
{
	return LOAD_RELAXED(d->flags);
}

/* ---------------------------------------------------------------------- */
/* Path components */

/* The end of the path component at p: its '/' or NUL.  Inline: components
 * are short, and a strchrnul() call cost 12% of a 10-component hit. */
static inline const char *comp_end(const char *p)
{
	while (*p && *p != '/')
		p++;
	return p;
}

static inline const char *skip_slashes(const char *p)
{
	while (*p == '/')
		p++;
	return p;
}

/* ---------------------------------------------------------------------- */
/* Hashing (the table: dcache.c) */

static inline unsigned long name_hash(const struct dentry *parent, const char *name, size_t len)
{
	/* A word at a time (a component of a build's path is a few words at
	 * most; FNV-1a's byte at a time cost ~110 instructions a cc1 walk),
	 * seeded with the parent's address and the length.  Only bytes of the
	 * name are read: for a given length each encoding below is one-to-one. */
	uint64_t h = ((uint64_t)(uintptr_t)parent ^ ((uint64_t)len << 48)) * 0x9E3779B97F4A7C15ULL;
	uint64_t w = 0;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		memcpy(&w, name + i, 8);
		h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
		h ^= h >> 29;
	}
	if (i < len) {
		size_t n = len - i;

		if (len >= 8) {
			/* The last 8 bytes, of which the first 8 - n hashed above. */
			memcpy(&w, name + len - 8, 8);
			w = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? w >> (8 * (8 - n))
								       : w << (8 * (8 - n));
		} else if (n >= 4) {
			uint32_t lo, hi;

			memcpy(&lo, name, 4);
			memcpy(&hi, name + n - 4, 4); /* the last 4: overlapping lo's */
			w = lo | (uint64_t)hi << 32;
		} else {
			w = (unsigned char)name[0] | (uint64_t)(unsigned char)name[n / 2] << 8 |
			    (uint64_t)(unsigned char)name[n - 1] << 16;
		}
		h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
		h ^= h >> 29;
	}
	return (unsigned long)(h ^ (h >> 32));
}

/* The hash d is filed under: recomputed (hashing is rare, lookups are not). */
static inline unsigned long d_hash_value(const struct dentry *d)
{
	return name_hash(d->parent, d->name, d->namelen);
}

/* The two bits of dir_state.bloom that stand for hash h (name_hash()). */
static inline void dir_bloom_bits(unsigned long h, unsigned int *a, unsigned int *b)
{
	*a = (unsigned int)(h >> 40) & (DIR_BLOOM_BITS - 1);
	*b = (unsigned int)(h >> 52) & (DIR_BLOOM_BITS - 1);
}

/* Under dcache_mutex, before a child of hash h is added to the table (and,
 * where its directory is complete, inside the directory's d_seq write
 * section: dc_d_hash_locked). */
static inline void dir_bloom_add(struct dir_state *s, unsigned long h)
{
	unsigned int a, b;

	dir_bloom_bits(h, &a, &b);
	STORE_RELAXED(s->bloom[a / 64], LOAD_RELAXED(s->bloom[a / 64]) | (1ULL << (a % 64)));
	STORE_RELAXED(s->bloom[b / 64], LOAD_RELAXED(s->bloom[b / 64]) | (1ULL << (b % 64)));
}

/* Reader: false if no child of hash h is hashed in the directory, as of
 * what the caller's acquire of its D_COMPLETE or d_seq lets it see; a child
 * hashed concurrently is the race any table lookup has (the caller's
 * d_seq_retry() or its miss decides). */
static inline bool dir_bloom_maybe(const struct dir_state *s, unsigned long h)
{
	unsigned int a, b;

	dir_bloom_bits(h, &a, &b);
	return (LOAD_RELAXED(s->bloom[a / 64]) >> (a % 64) & 1) &&
	       (LOAD_RELAXED(s->bloom[b / 64]) >> (b % 64) & 1);
}

/* Publish d's initialised fields to readers that find it in the table. */
static inline void d_publish(struct dentry *d)
{
	STORE_RELEASE(d->seq, d->seq);
}

/* ---------------------------------------------------------------------- */
/* Functions of dcache.c */

/* The hashed child `name` of `parent`, or NULL.  Under rcu_read_lock(). */
struct dentry *dc_d_lookup_rcu(struct cds_lfht *ht, const struct dentry *parent,
			       const char *name, size_t len);
/* The same, h being name_hash(parent, name, len). */
struct dentry *dc_d_lookup_hash_rcu(struct cds_lfht *ht, const struct dentry *parent,
				    const char *name, size_t len, unsigned long h);
/* d's absolute path into buf.  Under rcu_read_lock(). */
long dc_d_path_rcu(const struct dentry *d, char *buf, size_t size);
/* Freeing, after a grace period: the cwd reference; d's statx answer
 * (unpublished first).  Under dcache_mutex. */
void dc_free_cwd_rcu(struct rcu_head *head);
void dc_drop_sx_locked(struct dentry *d);
/* Watch map: the dentries watching wd into out[] (at most max); drop d's
 * entry for wd, releasing the watch with the last.  Under dcache_mutex. */
size_t dc_wd_map_get_locked(int wd, struct dentry **out, size_t max);
void dc_wd_map_del_locked(int wd, struct dentry *d);
void dc_wd_map_add_locked(int wd, struct dentry *d);
/* Killing and dropping, in d_seq write sections.  Under dcache_mutex. */
void dc_drop_attr_locked(struct dentry *d, bool clear_search);
void dc_uncomplete_locked(struct dentry *dir);
void dc_kill_children_locked(struct dentry *d);
void dc_kill_locked(struct dentry *d);
void dc_kill_one_locked(struct dentry *d);
void dc_kill_all_locked(void);
/* Evict down to 7/8 of the memory cap.  Under dcache_mutex. */
void dc_evict_locked(void);
/* A new dentry, not hashed; hash it under dcache_mutex (parent watched). */
struct dentry *dc_d_alloc(struct dentry *parent, const char *name, size_t len,
			  unsigned char type, const char *link, size_t linklen);
void dc_d_hash_locked(struct dentry *d);
/* Detach a complete directory's listing (struct dir_listing); freed after a
 * grace period.  Under dcache_mutex, in a d_seq write section of it. */
void dc_listing_drop_locked(struct dir_state *ds);
/* After insertions made without dc_d_hash_locked().  Under dcache_mutex. */
void dc_note_growth_locked(void);
/* Deferred work ("Threads we do not start"), when dc_maint is set.  No lock
 * held, not in a read-side section. */
void dc_maintenance(void);
/* Create the table and the root.  No lock held. */
bool dc_ensure_table_slow(void);

/* Make sure the table and the root exist: false if the cache is unusable.
 * The check inline, the work (once) in dc_ensure_table_slow().  Any thread,
 * no lock held. */
static inline bool dc_ensure_table(void)
{
	if (caa_likely(LOAD_ACQUIRE(dc_root) != NULL))
		return true;
	return dc_ensure_table_slow();
}

/* ---------------------------------------------------------------------- */
/* The walk (dcache_walk.c) and the miss path (dcache_populate.c) */

enum miss_kind { MISS_NONE, MISS_CHILD, MISS_SEARCH, MISS_ATTR, MISS_ACCESS, MISS_CWD,
		 MISS_STATX, MISS_EXPIRED, MISS_LISTED };

/* What walk_absent_fast() (dcache_walk.c) read of a name's directory prefix
 * before it handed the name to the walk: the walk's first attempt uses it in
 * place of its own probe of the same entry while dc_tree_gen and the start
 * are what they were (dcache_walk.c, "Prefix").  k == 0: nothing read. */
struct pfx_hint {
	uint64_t gen;               /* dc_tree_gen sampled before start was read */
	const struct dentry *start; /* the root or the cwd */
	size_t k;                   /* the prefix's length */
	uint64_t h;                 /* pidx_hash(start, PIDX_KEY_PREFIX, prefix) */
	struct dentry *pd;          /* pidx_find()'s entry, or NULL */
	unsigned int ps, pfl;       /* its d_seq and flags, if pd */
};

struct miss {
	enum miss_kind kind;
	struct dentry *d;       /* directory (CHILD, SEARCH) or object (ATTR, ACCESS, STATX) */
	const char *name;       /* CHILD */
	size_t len;
	int amode;              /* ACCESS: bit index */
	unsigned int mask;      /* STATX: the request mask */
	unsigned int seq;       /* DCACHE_Q_FIND_: d_seq of the final dentry d */
	/* CHILD, ATTR: the gap is the final object of a plain stat/lstat
	 * (answer), which asks for a directory (want_dir) and follows a final
	 * symlink (follow): dc_populate_rcu() may answer the caller itself with
	 * the kernel's reply (POP_MISS_ANSWERED) instead of a second walk. */
	bool answer, want_dir, follow;
	/* CHILD: the name is hashed as a D_LISTED file and the caller needs
	 * what only the kernel's lstat tells (st_nlink): no shared answer,
	 * which would hash the same D_LISTED entry again, and again. */
	bool relist;
	int err;                /* POP_MISS_ANSWERED: 0 (m->st) or the errno */
	/* The shared path table's answer for this name, found at the walk's
	 * start, when the walk went on to fill the path index (dcache_walk.c,
	 * sp_walk_on): a WALK_MISS or DCACHE_PASS of that walk is answered
	 * with it (dcache_lookup_len) instead of asking the kernel. */
	int sp_answer;
	/* The walk's first attempt after walk_absent_fast(): its prefix probe. */
	const struct pfx_hint *hint;
	unsigned char pass_why; /* POP_MISS_ANSWERED: PASS_WHY_* if the reply's attributes
				 * were not kept (counted as the kernel's answer) */
	/* Last, and not cleared by MISS_INIT: written by dc_populate_rcu()
	 * before every POP_ANSWERED / POP_MISS_ANSWERED that carries it, read
	 * only after one.  (Clearing its 144 bytes in every walk attempt was a
	 * rep stos on the hit path.) */
	struct stat st;         /* POP_ANSWERED: the kernel's lstat answer */
};

/* A walk attempt's struct miss: every field zero but st. */
#define MISS_INIT(m) memset(&(m), 0, offsetof(struct miss, st))

#define DCACHE_Q_FIND_ 0x100u /* internal: report the final dentry, answer nothing */
#define WALK_RETRY (-2)
#define WALK_MISS  (-3)
#define POP_ANSWERED (-4) /* dc_populate_rcu(): m->st is the answer, not cached */
#define POP_MISS_ANSWERED (-5) /* dc_populate_rcu(): cached, and m->err / m->st answer */

/* Is `name` (hash h) in the listing of complete directory ds?  Under
 * rcu_read_lock(), after D_COMPLETE was seen (acquire); the caller checks
 * the directory's d_seq after.  A listing gone meanwhile (NULL) says "yes":
 * the caller's MISS_LISTED then finds out under the mutex. */
static inline bool listed_rcu(const struct dir_state *ds, unsigned long h, const char *name,
			      size_t len)
{
	const struct dir_listing *l = LOAD_ACQUIRE(ds->listing);

	return !l || listing_find(l, h, name, len);
}

/* A listed name of complete directory d not hashed yet (listed_rcu()):
 * WALK_RETRY if d moved since seq, else the MISS_LISTED that hashes it as
 * listed (dc_populate_rcu(), no kernel call). */
static inline int miss_listed(struct miss *m, struct dentry *d, unsigned int seq,
			      const char *name, size_t len)
{
	if (d_seq_retry(d, seq))
		return WALK_RETRY;
	m->kind = MISS_LISTED;
	m->d = d;
	m->name = name;
	m->len = len;
	return WALK_MISS;
}

/* Has a D_TTL deadline passed?  *now is read from the clock on first use. */
static inline bool ttl_passed(uint64_t deadline, uint64_t *now)
{
	if (!*now)
		*now = now_coarse();
	return *now >= deadline;
}

static inline bool d_expired(const struct dentry *d, uint64_t *now)
{
	return (d_flags(d) & D_TTL) && ttl_passed(LOAD_RELAXED(d->expires), now);
}

/* One RCU-walk attempt; under rcu_read_lock(). */
int dc_walk_rcu(const char *path, size_t known_len, unsigned int qflags, int amode,
		struct stat *st, struct miss *m);
/* Fill the gap m describes; under rcu_read_lock(), not under the mutex. */
int dc_populate_rcu(struct miss *m);

/* ---------------------------------------------------------------------- */
/* The path index (dcache_pidx.c: its design, and why an entry is exact).
 * The readers are inline: the walk's hit path is one pidx_find(). */

#define PIDX_WAYS 8u      /* ways per set: a name lives in any way of its set */
#define PIDX_SETS 4096u   /* a power of two */
#define PIDX_SLOTS (PIDX_SETS * PIDX_WAYS)
#define PIDX_NAME_MAX 192u /* longer names are walked, never indexed */

/* pidx_slot.flags */
#define PIDX_WANT_DIR 1u /* the walk ended asking for a directory (the flag, or a
			  * trailing slash in the name or in a symlink body) */
#define PIDX_ABSENT 2u   /* ENOENT: `res` is a complete directory whose listing
			  * lacks a component of the name */
#define PIDX_LINKS_SHIFT 8u /* PIDX_KEY_PREFIX entries: symlinks the walk followed */

/* pidx_slot.key of a directory prefix entry (not a DCACHE_Q_* bit): `name` is
 * a path up to (not including) the slash before its last component, and
 * `res` the directory the walk was in when it reached that component, at
 * depth 0 (not inside a symlink's body), having followed (flags >>
 * PIDX_LINKS_SHIFT) symlinks.  A walk of a name the index lacks starts from
 * there: one component instead of all (dcache_walk.c, "Prefix"). */
#define PIDX_KEY_PREFIX 0x100u

struct pidx_slot {
	unsigned int seq;           /* odd while being filled */
	unsigned int len;           /* strlen(name) */
	uint64_t hash;              /* pidx_hash(start, key, name) */
	uint64_t gen;               /* dc_tree_gen when the walk began */
	const struct dentry *start; /* the root or the cwd's dentry */
	struct dentry *res;         /* where the walk ended (PIDX_ABSENT: the directory) */
	unsigned int res_seq;       /* res's d_seq then */
	unsigned int key;           /* DCACHE_Q_FOLLOW, DCACHE_Q_DIRECTORY of the walk */
	unsigned int flags;         /* PIDX_WANT_DIR, PIDX_ABSENT */
	uint64_t name[(PIDX_NAME_MAX + 7) / 8 + 1]; /* the last word: pidx_tail() */
};
_Static_assert(sizeof(struct pidx_slot) <= 256, "a path-index slot fits 256 bytes");
_Static_assert(PIDX_WAYS == 8, "a set's tags are the 8 bytes of one uint64_t");

/* A set: which slots hold its names.  Two sets a cache line. */
struct pidx_set {
	/* Byte w: a hint of which name way w holds (pidx_tag()), 0 if it was
	 * never filled: a probe reads only this line unless a byte matches. */
	uint64_t tags;
	/* Way w's slot in pidx_map.slot, plus 1; 0 until its first fill, which
	 * takes the next free slot for good (pidx_map.next).  Slots are thus
	 * handed out in the order names first arrive: the pages that hold them
	 * are touched one after the other, 16 names a page. */
	uint16_t slot[PIDX_WAYS];
	uint64_t pad;
};
_Static_assert(sizeof(struct pidx_set) == 32, "two sets a cache line");
_Static_assert(PIDX_SLOTS < 65536, "a slot number fits pidx_set.slot");

/* The index: NULL until a thread first fills a slot (dc_pidx_fill).  One
 * mapping, never unmapped. */
#define PIDX_SEEN_BITS (1u << 18) /* pidx_seen(): 32 KiB */
struct pidx_map {
	struct pidx_set set[PIDX_SETS];
	uint64_t seen[PIDX_SEEN_BITS / 64]; /* names walked once (pidx_seen) */
	struct pidx_slot slot[PIDX_SLOTS];
	unsigned int next; /* slots handed out (may run past PIDX_SLOTS: then none) */
};
extern struct pidx_map *dc_pidx;
extern unsigned long dc_pidx_min_answers;
extern bool dc_pidx_twice;
extern bool dc_pidx_names;
extern __thread bool tls_populated __attribute__((tls_model("initial-exec")));

/* The shared path table in use (dcache_spath.c; dcache_spath_use()): the
 * arena (NULL: none), the credentials key, and the ring's mount count that
 * the arena's must equal. */
struct dc_spath_use {
	void *arena;
	uint64_t cred;
	const uint32_t *mounts;
};
extern struct dc_spath_use dc_spath;

/* The set of hash h, and its tag byte (never 0). */
static inline unsigned int pidx_set(uint64_t h)
{
	return (unsigned int)(h & (PIDX_SETS - 1));
}

static inline uint64_t pidx_tag(uint64_t h)
{
	uint64_t t = h >> 56;

	return t ? t : 1;
}

/* Bit 8w+7 set for each byte w of tags equal to tag (and perhaps for a byte
 * above an equal one: a candidate, checked in full, never a miss). */
static inline uint64_t pidx_tag_match(uint64_t tags, uint64_t tag)
{
	uint64_t x = tags ^ (tag * 0x0101010101010101ULL);

	return (x - 0x0101010101010101ULL) & ~x & 0x8080808080808080ULL;
}

/* The word pidx_slot.name stores for the n < 8 bytes at p, a name's last:
 * one-to-one for a given n (the slot's len is compared apart), as
 * name_hash() encodes a short name.  p - 8 + n is still inside the name
 * when it has >= 8 bytes (`whole`): one load of its last 8 bytes, shifted,
 * the last n bytes zero-padded.  A shorter name: its first and last 4 bytes
 * (overlapping) for n >= 4, else its bytes 0, n/2 and n-1 (a loop over the
 * bytes cost ~20 instructions a probe of a short prefix such as "inc05").
 * Never reads outside the name, never calls libc's memcpy for a variable
 * length. */
static inline uint64_t pidx_tail(const char *p, size_t n, bool whole)
{
	uint64_t w = 0;

	if (whole && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__) {
		memcpy(&w, p + n - 8, 8);
		return w >> (8 * (8 - n)); /* little-endian: the last n bytes */
	}
	if (n >= 4) {
		uint32_t lo, hi;

		memcpy(&lo, p, 4);
		memcpy(&hi, p + n - 4, 4);
		return lo | (uint64_t)hi << 32;
	}
	if (n)
		w = (unsigned char)p[0] | (uint64_t)(unsigned char)p[n / 2] << 8 |
		    (uint64_t)(unsigned char)p[n - 1] << 16;
	return w;
}

/* Hash of (start, key, name); len = strlen(name) < PIDX_NAME_MAX. */
static inline uint64_t pidx_hash(const struct dentry *start, unsigned int key,
				 const char *name, size_t len)
{
	uint64_t h = ((uint64_t)(uintptr_t)start ^ key ^ ((uint64_t)len << 48)) *
		     0x9E3779B97F4A7C15ULL;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t w;

		memcpy(&w, name + i, 8);
		h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
		h ^= h >> 29;
	}
	if (i < len) {
		uint64_t w = pidx_tail(name + i, len - i, len >= 8);

		h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
		h ^= h >> 29;
	}
	return h ^ (h >> 32);
}

/* Reader, under rcu_read_lock(): does slot e hold (start, key, name) as of
 * `gen`?  The outputs are written only when it does. */
static inline struct dentry *pidx_slot_read(const struct pidx_slot *e, const struct dentry *start,
					    unsigned int key, const char *name, size_t len,
					    uint64_t h, uint64_t gen, unsigned int *res_seq,
					    unsigned int *flags)
{
	unsigned int s = LOAD_ACQUIRE(e->seq), rs, fl;
	struct dentry *res;
	size_t i = 0;

	if ((s & 1) || LOAD_RELAXED(e->hash) != h || LOAD_RELAXED(e->len) != len ||
	    LOAD_RELAXED(e->start) != start || LOAD_RELAXED(e->key) != key ||
	    LOAD_RELAXED(e->gen) != gen)
		return NULL;
	for (; i + 8 <= len; i += 8) {
		uint64_t w;

		memcpy(&w, name + i, 8);
		if (LOAD_RELAXED(e->name[i / 8]) != w)
			return NULL;
	}
	if (i < len) {
		if (LOAD_RELAXED(e->name[i / 8]) != pidx_tail(name + i, len - i, len >= 8))
			return NULL;
	}
	res = LOAD_RELAXED(e->res);
	rs = LOAD_RELAXED(e->res_seq);
	fl = LOAD_RELAXED(e->flags);
	D_SEQ_FENCE(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&e->seq, D_SEQ_ORDER) != s)
		return NULL; /* refilled meanwhile: what was read may be another name's */
	*res_seq = rs;
	*flags = fl;
	return res;
}

/* Reader, under rcu_read_lock(), dc_pidx mapped: the entry for (start, key,
 * name) if one is current as of `gen` (dc_tree_gen sampled before start was
 * read).  The outputs are written only when it returns an entry. */
static inline struct dentry *pidx_find(const struct pidx_map *x, const struct dentry *start,
				       unsigned int key, const char *name, size_t len, uint64_t h,
				       uint64_t gen, unsigned int *res_seq, unsigned int *flags)
{
	const struct pidx_set *set = &x->set[pidx_set(h)];
	uint64_t m = pidx_tag_match(LOAD_RELAXED(set->tags), pidx_tag(h));

	for (; m; m &= m - 1) {
		unsigned int i = LOAD_RELAXED(set->slot[__builtin_ctzll(m) / 8]);
		struct dentry *res;

		if (!i)
			continue; /* a byte next to a match (pidx_tag_match) */
		res = pidx_slot_read(&x->slot[i - 1], start, key, name, len, h, gen, res_seq, flags);
		if (res)
			return res;
	}
	return NULL;
}

/* Whether this thread's walks fill slots: see dc_pidx_min_answers. */
static inline bool pidx_worth_filling(void)
{
	const struct stat_block *b = tls_stats;

	return b && LOAD_RELAXED(b->c[DCACHE_STAT_HIT]) + LOAD_RELAXED(b->c[DCACHE_STAT_NEG_HIT]) >=
			    dc_pidx_min_answers;
}

/* Whether name hash h was walked before in this process (dc_pidx_twice: a
 * name gets an entry at its second walk), noting that it now was.  A hint: a
 * bit shared by two names (or lost to a racing thread) only moves a fill. */
static inline bool pidx_seen(struct pidx_map *x, uint64_t h)
{
	unsigned int i = (unsigned int)(h >> 24) & (PIDX_SEEN_BITS - 1);
	uint64_t bit = 1ULL << (i % 64);

	if (LOAD_RELAXED(x->seen[i / 64]) & bit)
		return true;
	__atomic_fetch_or(&x->seen[i / 64], bit, __ATOMIC_RELAXED);
	return false;
}

/* A walk that went on after a shared table hit answered itself (true) or
 * not (dcache_walk.c, sp_walk_on). */
void dc_sp_walk_done(bool answered);

void dc_pidx_fill(const struct dentry *start, unsigned int key, const char *name,
		  size_t len, uint64_t h, uint64_t gen, struct dentry *res,
		  unsigned int res_seq, unsigned int flags);

#pragma GCC visibility pop

#endif /* RCUWALK_DCACHE_INT_H */
