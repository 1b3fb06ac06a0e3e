/* SPDX-License-Identifier: MIT */
/*
 * dcache.c - rcuwalk's userspace dentry cache: its design, its locks and
 * their order, and its core: dentries and their table, freeing, the watch
 * map, killing and eviction, the call_rcu thread and table growth, the
 * statistics, creation, reset and teardown.
 *
 * Design
 * ======
 * One dentry per (parent dentry, name) that this process has asked the
 * kernel about, hashed in an RCU lock-free hash table (liburcu cds_lfht, key =
 * parent pointer + name).  Dentries are path positions: a symlink is a
 * dentry of its own whose target is walked from the symlink's directory, so a
 * dentry's parent chain is always a symlink-free absolute path ("canonical
 * path"), which is what we hand to the kernel on a miss.
 *
 * Lookups walk the cache component by component, taking no lock (the
 * RCU-walk: dcache_walk.c).  A gap the walk finds is asked of the kernel and
 * the answer inserted under the writer mutex (the miss path:
 * dcache_populate.c); whatever the cache cannot answer exactly passes
 * through to the real syscall.
 *
 * Coherence: before the kernel is asked about an entry of directory P, P is
 * watched (ops->watch_dir) and P->dir_gen is sampled; the answer is inserted
 * only if no event for P arrived meanwhile (dir_gen unchanged, checked under
 * the writer mutex that event processing also takes).  Any change after the
 * kernel's answer produces an event on P's watch, which kills the dentry
 * (dcache_populate.c inserts, dcache_events.c kills).
 *
 * Files
 * =====
 *  dcache.c           this note, the lock table and order; the core (above)
 *  dcache_walk.c      the RCU-walk and the lookup loop (dcache_lookup)
 *  dcache_pidx.c      the path index: a whole name to its final dentry
 *  dcache_populate.c  the miss path: the kernel asked, the answer inserted;
 *                     completion; the caching policy
 *  dcache_events.c    inotify events, dcache_forget_inode, and "Names that
 *                     outlive their inode's other names"
 *  dcache_answers.c   readlink, statx and realpath
 *  dcache_int.h       what they share (private to cache/)
 *  dcache.h           the module's contract
 * Each .c file opens with its design and the invariants it relies on or
 * keeps; this one's table below holds for all of them.
 *
 * Locks and invariants
 * ====================
 *  dcache_mutex (the writer mutex) serialises every change: insertion and
 *    killing of dentries, publication of attributes, the children and LRU
 *    lists, the watch map, the byte count, the cwd reference.  Readers never
 *    take it.  It nests inside nothing of ours; ops callbacks run under it and
 *    must not call back into the cache.
 *  RCU (urcu-bp): readers run under rcu_read_lock().  A dentry, a statx
 *    answer or a cwd reference is first unpublished (unhashed / pointer
 *    cleared) under dcache_mutex and then freed with call_rcu(), so a reader
 *    that found it may keep reading it until its read-side section ends.
 *  d_seq: even when stable.  Writers (under dcache_mutex) make it odd, change
 *    the mutable state (D_DEAD, D_ATTR cleared, attributes rewritten in place,
 *    access bits cleared, D_SEARCHED cleared), and make it even again.
 *    Readers sample it with d_seq_begin() before using a dentry and check it
 *    with d_seq_retry() after reading what they need; a changed d_seq means
 *    "start over".  Adding information (setting an access bit or D_SEARCHED,
 *    publishing a statx answer) does not bump d_seq: a reader that missed it
 *    just misses.  Attributes are kept in the dentry itself (struct dentry),
 *    so publishing them into a hashed dentry rewrites fields a reader may be
 *    copying: that is a write section.
 *  Immutable after hashing: parent, name, type, link target, dev.  The
 *    root is never hashed: dcache_reset() may rewrite its dev (relaxed atomics).
 *  A dentry is hashed only while its parent directory is watched (its
 *    wd >= 0), so every change that could make it wrong reaches us as an
 *    event; a directory's own attributes are cached only while it is watched
 *    itself (entries created inside it change its mtime/nlink/size).
 *  A directory's watch, generations, completion state and children list live
 *    in its struct dir_state (d->dir), made before its first watch and freed
 *    with the dentry: a watched directory, and so every hashed dentry's
 *    parent, has one.  Readers use only its complete_until, its listing and
 *    its bloom, after seeing D_COMPLETE (acquire), which is set only on a
 *    watched directory, after the listing and its names' bloom bits.
 *  Every hashed dentry is on its parent's children list: killing a directory
 *    kills its subtree.
 *
 * Lock order (fork safety)
 * ========================
 *  rcu_read_lock -> [inval read_mutex ->] dcache_mutex.  A thread may wait for
 *  dcache_mutex inside a read-side section (the slow path does), so nobody
 *  may hold dcache_mutex while waiting for a grace period, and nobody may
 *  register with urcu-bp (which takes liburcu's registry lock) while holding
 *  it: writer entry points enter the read-side section before the mutex.
 *  fork() (shim.c) therefore runs liburcu's fork hooks first, while our
 *  mutexes are free, and takes read_mutex and dcache_mutex after them.
 *  liburcu allocations that take liburcu mutexes happen under dc_init_mutex.
 */
#define _GNU_SOURCE
#define URCU_INLINE_SMALL_FUNCTIONS
#include <urcu-bp.h>
#include <urcu/rculfhash.h>
#include <urcu/list.h>
#include <urcu/uatomic.h>
#include <urcu/compiler.h>

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sys/mman.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <fcntl.h>
#include <time.h>

#include "dcache_int.h"

#define DEFAULT_MAX_BYTES (64UL << 20)

/* watch id -> dentries using it (several paths may reach one inode) */
struct wd_entry {
	int wd;
	struct dentry *d;
	struct wd_entry *next;
};
#define WD_BUCKETS 1024
#define STAT_BLOCKS 256

pthread_mutex_t dcache_mutex = PTHREAD_MUTEX_INITIALIZER;
const struct dcache_ops *dc_ops DCACHE_START_DATA;
size_t dc_max_bytes = DEFAULT_MAX_BYTES;

/* Published under dcache_mutex, read under RCU. */
struct cds_lfht *dc_table;
struct dentry *dc_root;
struct cwd_ref *dc_cwd;
/* Writer-side, under dcache_mutex. */
unsigned long dc_cwd_gen;
size_t dc_bytes;
size_t dc_count;
CDS_LIST_HEAD(dc_lru);
/*
 * What a fork() child discards and must find empty, in pages of their own
 * made MADV_WIPEONFORK when the cache starts (dc_wiped_on): the child gets
 * zero pages there instead of the parent's, so dcache_fork_child() writes
 * none of them (each page it cleared was a copy-on-write fault in every
 * child, most of which exec at once), fork() copies none of their page
 * table entries, and the parent's next counter increment after a fork is no
 * copy-on-write fault either.  Where madvise() refuses, the child clears
 * what the parent wrote, as before.
 */
static struct __attribute__((aligned(4096))) dc_wiped {
	struct wd_entry *wd_map[WD_BUCKETS]; /* watch id -> dentries */
	struct stat_block stat_pool[STAT_BLOCKS + 1]; /* per-thread counters */
} dc_wiped DCACHE_COLD_BSS;
_Static_assert(sizeof(struct dc_wiped) % 4096 == 0, "whole pages: nothing else is wiped");
static bool dc_wiped_on;
#define dc_wd_map dc_wiped.wd_map
#define stat_pool dc_wiped.stat_pool
/* Bumped whenever attributes are dropped by inode rather than by name
 * (forget_inode_locked: directories' too); dc_file_attr_gen whenever every
 * non-directory's of a device are (forget_dev_files_locked).  A kernel answer
 * fetched before the bump that concerns it is not published: dc_populate_rcu
 * samples dc_attr_gen_for() of the object's type.  Split so that other
 * programs' short-lived files in a watched directory, which escalate, do not
 * throw away directories' answers in flight. */
unsigned long dc_attr_gen;
unsigned long dc_file_attr_gen;
/* The tree generation: bumped (seq_cst) by every writer that may change what
 * a name resolves to - every d_write_begin() except the ones that only drop or
 * rewrite an object's attributes or a directory's completeness - BEFORE it changes
 * anything, and so before any call_rcu() of what it unhashes.  The path index
 * (dcache_pidx.c) trusts an entry only while this is the value its walk began with. */
uint64_t dc_tree_gen;

/* ---------------------------------------------------------------------- */
/* Threads we do not start: call_rcu and hash-table resizing.
 *
 * call_rcu() callbacks run in a thread (dc_crdp, below), and liburcu grows
 * an AUTO_RESIZE table from a worker thread.  Each thread costs a short-lived
 * process (a compiler) ~45 us to create and more at exit, when the parent's
 * wait() waits for every thread to be scheduled and die (measured with a
 * one-stat program: exit to reaped 247 us without our threads against 532 us
 * with them, p90 2.6 ms).  Most such processes never free a dentry nor
 * outgrow the initial table, so:
 *
 *  - call_rcu() (a macro, dcache_int.h: every call site in cache/) queues the
 *    head on dc_pending until our call_rcu thread exists; the first
 *    dcache_lookup(), dcache_statx(), dcache_readlink() or dcache_realpath()
 *    after that runs dc_maintenance().  If the caller is the
 *    program's only thread (ops->sole_thread: every other thread is
 *    invalidate/'s reader, which blocks every signal and never waits inside
 *    a read-side section on anything the caller holds), dc_maintenance()
 *    waits for a grace period itself (synchronize_rcu(), no lock held, not
 *    in a read-side section) and runs the callbacks there: no thread is
 *    started.  Otherwise it starts our call_rcu thread
 *    (start_call_rcu_locked) and hands the queue over.  Until then the
 *    memory stays allocated (it is no longer counted in dc_bytes); it is
 *    released by the next lookup, so a process that stops looking things up
 *    keeps at most what its cache held.
 *    Why not always the thread: before every fork() liburcu pauses each
 *    call_rcu thread and after it resumes it, and both sides wait for the
 *    other in poll(NULL, 0, 1) loops (call_rcu_before_fork,
 *    call_rcu_after_fork_parent): 2-3 ms of sleep per fork.  A shell that
 *    had freed one dentry paid that at every command it started: zlib's
 *    ./configure slept in 216 such polls (strace -f), 0.54 s against
 *    0.25 s without rcuwalk.
 *    Why "only thread": with another program thread registered as a
 *    reader, a grace period could wait for a thread that a signal handler
 *    keeps inside its read-side section while the handler waits for the
 *    caller (a pipe it will write): a deadlock the thread never risks.  A
 *    single-threaded program cannot gain a thread while the caller is in
 *    dc_maintenance() (every signal blocked), so the verdict holds until
 *    the frees have run.
 *  - the table is created without CDS_LFHT_AUTO_RESIZE; when it holds more
 *    dentries than buckets, the next lookup (any of the four) grows it 4x with
 *    cds_lfht_resize().  Growing takes no grace period (only shrinking does,
 *    which we never do); concurrent lookups and adds are lock-free as
 *    before.  liburcu may start helper threads for large steps (>= 8192
 *    buckets) and joins them before returning.
 *
 * dc_maintenance() runs at the top of each lookup: outside any read-side
 * section and lock of ours (the fork rules at the top of this file: liburcu
 * calls only under dc_init_mutex, never under dcache_mutex), with every
 * signal blocked so that threads liburcu starts inherit an all-blocked mask;
 * it is skipped while the calling thread is inside an urcu-bp read-side
 * section of the program's own (a program linked with liburcu-bp shares it).
 */
static struct rcu_head *dc_pending;     /* under dcache_mutex; linked by next.next */
static bool dc_callrcu_ready;           /* call_rcu() has a thread (dc_crdp or inherited) */
static unsigned long dc_table_size;     /* buckets asked for; under dcache_mutex */
int dc_maint;                           /* dc_maintenance() has work (atomic) */
/* liburcu allocations and thread starts: see dc_ensure_table(). */
static pthread_mutex_t dc_init_mutex = PTHREAD_MUTEX_INITIALIZER;

void dc_call_rcu(struct rcu_head *head, void (*func)(struct rcu_head *head))
{
	if (LOAD_ACQUIRE(dc_callrcu_ready)) {
		urcu_bp_call_rcu(head, func);
		return;
	}
	head->func = func; /* under dcache_mutex, like every caller */
	head->next.next = (struct cds_wfcq_node *)dc_pending;
	dc_pending = head;
	STORE_RELAXED(dc_maint, 1);
}

/* After an insertion, under dcache_mutex. */
void dc_note_growth_locked(void)
{
	if (dc_count > dc_table_size && !LOAD_RELAXED(dc_maint))
		STORE_RELAXED(dc_maint, 1);
}

/* ---------------------------------------------------------------------- */
/* Per-thread statistics: a block per thread from a static pool (no malloc,
 * so first use is async-signal-safe), shared atomic overflow block beyond. */

static unsigned int stat_pool_used;
__thread struct stat_block *tls_stats __attribute__((tls_model("initial-exec")));
/* The lookup's inline read side (dcache_int.h, dc_read_lock): filled by
 * dcache_urcu.c when the shim loads liburcu-bp, zero otherwise. */
struct dc_rd_fast dc_rd;
__thread void **tls_rd_slot __attribute__((tls_model("initial-exec")));

void dc_rd_learn(void)
{
	if (dc_rd.slot && !tls_rd_slot)
		tls_rd_slot = dc_rd.slot();
}

/* Set (PASS_WHY_*) where a lookup gives up for a reason the statistics tell
 * apart; turned into DCACHE_STAT_PASS_WATCH/_FS/_ATTR/_RACY by the lookup's
 * DCACHE_STAT_PASS.  tls_last_pass_why: what the last pass was. */
__thread unsigned char tls_pass_why __attribute__((tls_model("initial-exec")));
static __thread unsigned char tls_last_pass_why __attribute__((tls_model("initial-exec")));

void dcache_stat_add(enum dcache_stat_id id, uint64_t n)
{
	struct stat_block *b = tls_stats;

	if (caa_unlikely(!b)) {
		unsigned int i = __atomic_fetch_add(&stat_pool_used, 1, __ATOMIC_RELAXED);

		b = &stat_pool[i < STAT_BLOCKS ? i : STAT_BLOCKS];
		tls_stats = b;
	}
	if (caa_likely(b != &stat_pool[STAT_BLOCKS]))
		STORE_RELAXED(b->c[id], b->c[id] + n); /* owner-only writer */
	else
		__atomic_fetch_add(&b->c[id], n, __ATOMIC_RELAXED);
}

/* A pass's reason, counted beside DCACHE_STAT_PASS (dcache_stat_inc). */
static __attribute__((noinline)) void stat_pass_why(void)
{
	static const unsigned char why_stat[] = {
		[PASS_WHY_WATCH] = DCACHE_STAT_PASS_WATCH, [PASS_WHY_FS] = DCACHE_STAT_PASS_FS,
		[PASS_WHY_ATTR] = DCACHE_STAT_PASS_ATTR, [PASS_WHY_RACY] = DCACHE_STAT_PASS_RACY,
		[PASS_WHY_RENT] = DCACHE_STAT_PASS_RENT,
	};
	unsigned char why = tls_pass_why;

	tls_last_pass_why = why;
	if (why) {
		tls_pass_why = PASS_WHY_NONE;
		dcache_stat_add((enum dcache_stat_id)why_stat[why], 1);
	}
}

void dcache_stat_inc(enum dcache_stat_id id)
{
	dcache_stat_add(id, 1);
	if (caa_unlikely(id == DCACHE_STAT_PASS))
		stat_pass_why();
}

int dcache_last_lookup_filled(void)
{
	return tls_populated;
}

int dcache_last_pass_classified(void)
{
	return tls_last_pass_why != PASS_WHY_NONE;
}

/* The blocks of stat_pool handed out: stat_pool[0..n) and, if *shared, the
 * block of the threads past them, stat_pool[STAT_BLOCKS].  The others were
 * never written (a block is taken, by its index, before its first count):
 * the pool is 33 KiB of .bss, and reading or clearing all of it was 8 page
 * faults (the sum at every exit, for the learned warm-up's record; the
 * clear in a fork child). */
static unsigned int stat_blocks_used(bool *shared)
{
	unsigned int used = __atomic_load_n(&stat_pool_used, __ATOMIC_RELAXED);

	*shared = used > STAT_BLOCKS;
	return used < STAT_BLOCKS ? used : STAT_BLOCKS;
}

static void stat_block_add(uint64_t c[DCACHE_STAT_N_], const struct stat_block *b)
{
	for (int k = 0; k < DCACHE_STAT_N_; k++)
		c[k] += LOAD_RELAXED(b->c[k]);
}

void dcache_stats_sum(struct dcache_stats *out)
{
	uint64_t c[DCACHE_STAT_N_] = { 0 };
	bool shared;
	unsigned int n = stat_blocks_used(&shared);

	for (unsigned int i = 0; i < n; i++)
		stat_block_add(c, &stat_pool[i]);
	if (shared)
		stat_block_add(c, &stat_pool[STAT_BLOCKS]);
	out->hits = c[DCACHE_STAT_HIT];
	out->neg_hits = c[DCACHE_STAT_NEG_HIT];
	out->misses = c[DCACHE_STAT_MISS];
	out->passthrough = c[DCACHE_STAT_PASS];
	out->invalidations = c[DCACHE_STAT_INVAL];
	out->pass_watch = c[DCACHE_STAT_PASS_WATCH];
	out->pass_fs = c[DCACHE_STAT_PASS_FS];
	out->pass_attr = c[DCACHE_STAT_PASS_ATTR];
	out->pass_racy = c[DCACHE_STAT_PASS_RACY];
	out->pass_rent = c[DCACHE_STAT_PASS_RENT];
	out->index_hits = c[DCACHE_STAT_INDEX];
	out->prefix_hits = c[DCACHE_STAT_PREFIX];
	out->shared_path_hits = c[DCACHE_STAT_SPATH];
	out->fill_ns = c[DCACHE_STAT_FILL_NS];
}


/* ---------------------------------------------------------------------- */
/* Hashing */

struct d_key {
	const struct dentry *parent;
	const char *name;
	size_t len;
};

/* a[0..len) == b[0..len), for the short names of paths: 8 bytes at a time,
 * never reading past either (a libc memcmp call cost more than the
 * comparison itself: 16% of a 10-component hit). */
static inline bool name_eq(const char *a, const char *b, size_t len)
{
	while (len >= 8) {
		uint64_t x, y;

		memcpy(&x, a, 8);
		memcpy(&y, b, 8);
		if (x != y)
			return false;
		a += 8;
		b += 8;
		len -= 8;
	}
	while (len--)
		if (*a++ != *b++)
			return false;
	return true;
}

static int d_match(struct cds_lfht_node *node, const void *key)
{
	const struct dentry *d = caa_container_of(node, struct dentry, hnode);
	const struct d_key *k = key;

	(void)LOAD_ACQUIRE(d->seq); /* pairs with dc_d_alloc's release: fields are set */
	return d->parent == k->parent && d->namelen == k->len && name_eq(d->name, k->name, k->len);
}

/* Find the hashed child `name` of `parent`.  Call under rcu_read_lock(). */
struct dentry *dc_d_lookup_hash_rcu(struct cds_lfht *ht, const struct dentry *parent,
				    const char *name, size_t len, unsigned long h)
{
	struct d_key key = { parent, name, len };
	struct cds_lfht_iter iter;
	struct cds_lfht_node *node;

	cds_lfht_lookup(ht, h, d_match, &key, &iter);
	node = cds_lfht_iter_get_node(&iter);
	return node ? caa_container_of(node, struct dentry, hnode) : NULL;
}

struct dentry *dc_d_lookup_rcu(struct cds_lfht *ht, const struct dentry *parent,
				   const char *name, size_t len)
{
	return dc_d_lookup_hash_rcu(ht, parent, name, len, name_hash(parent, name, len));
}

/* ---------------------------------------------------------------------- */
/* Freeing (after a grace period) */

static void free_dentry_rcu(struct rcu_head *head)
{
	struct dentry *d = caa_container_of(head, struct dentry, rcu);

	free(d_dir(d));
	free(d);
}

static void free_sx_rcu(struct rcu_head *head)
{
	free(caa_container_of(head, struct dcache_sx, rcu));
}

/* Unpublish d's statx answer.  Under dcache_mutex. */
void dc_drop_sx_locked(struct dentry *d)
{
	struct dcache_sx **slot = d_sx_slot(d);
	struct dcache_sx *x = slot ? *slot : NULL;

	if (!x)
		return;
	STORE_RELEASE(*slot, NULL);
	dc_bytes -= sizeof(*x);
	call_rcu(&x->rcu, free_sx_rcu);
}

void dc_free_cwd_rcu(struct rcu_head *head)
{
	free(caa_container_of(head, struct cwd_ref, rcu));
}

/* ---------------------------------------------------------------------- */
/* Watch map.  All under dcache_mutex. */

void dc_wd_map_add_locked(int wd, struct dentry *d)
{
	struct wd_entry *e = malloc(sizeof(*e));

	if (!e)
		return; /* caller checks d->wd via wd_map_has() */
	e->wd = wd;
	e->d = d;
	e->next = dc_wd_map[(unsigned int)wd % WD_BUCKETS];
	dc_wd_map[(unsigned int)wd % WD_BUCKETS] = e;
}

/* Remove d's entry for wd; release the watch when nobody else uses it. */
void dc_wd_map_del_locked(int wd, struct dentry *d)
{
	struct wd_entry **pp = &dc_wd_map[(unsigned int)wd % WD_BUCKETS];
	bool others = false;

	while (*pp) {
		struct wd_entry *e = *pp;

		if (e->wd == wd && e->d == d) {
			*pp = e->next;
			free(e);
			continue;
		}
		if (e->wd == wd)
			others = true;
		pp = &e->next;
	}
	if (!others && dc_ops && dc_ops->unwatch_dir)
		dc_ops->unwatch_dir(wd);
}

/* Collect the dentries watching `wd` into out[] (at most max). */
size_t dc_wd_map_get_locked(int wd, struct dentry **out, size_t max)
{
	size_t n = 0;

	for (struct wd_entry *e = dc_wd_map[(unsigned int)wd % WD_BUCKETS]; e; e = e->next)
		if (e->wd == wd && n < max)
			out[n++] = e->d;
	return n;
}

/* ---------------------------------------------------------------------- */
/* Killing and dropping.  All under dcache_mutex. */

void dc_drop_attr_locked(struct dentry *d, bool clear_search)
{
	if (!(d->flags & D_ATTR) && !d->access_ok && !(clear_search && (d->flags & D_SEARCHED)))
		return;
	/* Search permission is part of resolution; attributes and access
	 * answers are read from the final dentry under its own d_seq. */
	if (clear_search && (d->flags & D_SEARCHED))
		d_write_begin(d);
	else
		d_write_begin_attr(d);
	dc_drop_sx_locked(d);
	STORE_RELAXED(d->access_ok, 0);
	STORE_RELAXED(d->flags, d->flags & ~(D_ATTR | (clear_search ? D_SEARCHED : 0)));
	d_write_end(d);
	dcache_stat_inc(DCACHE_STAT_INVAL);
}

/*
 * dir no longer knows every name in it.  D_COMPLETE is cleared with dir's
 * d_seq bumped, BEFORE the child that made it incomplete is unhashed: a reader
 * that sampled D_COMPLETE and then failed to find that child sees the bump in
 * its d_seq_retry(dir) and starts over instead of answering ENOENT.
 */
void dc_uncomplete_locked(struct dentry *dir)
{
	if (!d_dir(dir))
		return; /* never watched: neither complete nor probed */
	dir->dir->neg_probes = 0;
	dir->dir->pos_probes = 0;
	if (!(dir->flags & D_COMPLETE))
		return;
	/* The bump also retires every path-index entry that answers ENOENT
	 * from this listing (PIDX_ABSENT: see dcache_pidx.c).  The listing
	 * goes inside it: a reader that read it (or found it gone) sees the
	 * bump before it answers. */
	d_write_begin_attr(dir);
	STORE_RELAXED(dir->flags, dir->flags & ~D_COMPLETE);
	dc_listing_drop_locked(dir->dir);
	d_write_end(dir);
}

static void free_listing_rcu(struct rcu_head *head)
{
	free(caa_container_of(head, struct dir_listing, rcu));
}

/* Detach ds's listing, if any, and free it after a grace period.  Under
 * dcache_mutex, inside a d_seq write section of its directory. */
void dc_listing_drop_locked(struct dir_state *ds)
{
	struct dir_listing *l = ds->listing;

	if (!l)
		return;
	STORE_RELAXED(ds->listing, NULL);
	dc_bytes -= l->bytes;
	call_rcu(&l->rcu, free_listing_rcu);
}


void dc_kill_children_locked(struct dentry *d)
{
	if (!d_dir(d))
		return; /* never watched (or not a directory): no children */
	while (!cds_list_empty(&d->dir->children))
		dc_kill_locked(cds_list_first_entry(&d->dir->children, struct dentry, sibling));
}

/* Unhash d and its subtree; free after a grace period.  d != root.  Its
 * parent stops being complete. */
void dc_kill_locked(struct dentry *d)
{
	dc_uncomplete_locked(d->parent);
	dc_kill_one_locked(d);
}

/* dc_kill_locked() without touching the parent's completeness: only for a
 * D_UNK placeholder whose replacement is already hashed. */
void dc_kill_one_locked(struct dentry *d)
{
	dc_kill_children_locked(d);
	d_write_begin(d);
	STORE_RELAXED(d->flags, d->flags | D_DEAD);
	if (d_dir(d))
		dc_listing_drop_locked(d->dir); /* a complete directory's */
	d_write_end(d);
	cds_lfht_del(dc_table, &d->hnode);
	cds_list_del(&d->sibling);
	cds_list_del(&d->lru);
	if (d_wd(d) >= 0)
		dc_wd_map_del_locked(d_wd(d), d);
	if (dc_cwd && dc_cwd->d == d) {
		struct cwd_ref *old = dc_cwd;

		STORE_RELEASE(dc_cwd, NULL);
		call_rcu(&old->rcu, dc_free_cwd_rcu);
	}
	dc_drop_sx_locked(d);
	dc_bytes -= d_bytes(d);
	dc_count--;
	call_rcu(&d->rcu, free_dentry_rcu);
	dcache_stat_inc(DCACHE_STAT_INVAL);
}

/* Forget everything below the root, and the root's own state. */
void dc_kill_all_locked(void)
{
	tree_changed_locked();
	/* The shared path table too, until invalidate/ says again that this
	 * instance may use it (dcache_spath_use): an emptied cache is an
	 * instance given up, events lost, or credentials changed. */
	dcache_spath_use(NULL, 0, NULL);
	if (!dc_root)
		return;
	dc_uncomplete_locked(dc_root);
	dc_kill_children_locked(dc_root);
	dc_drop_attr_locked(dc_root, true);
	if (dc_cwd) {
		struct cwd_ref *old = dc_cwd;

		STORE_RELEASE(dc_cwd, NULL);
		call_rcu(&old->rcu, dc_free_cwd_rcu);
	}
	dc_cwd_gen++;
}

/* Second-chance eviction down to 7/8 of the cap: leaves only, so that a
 * directory goes once its children have gone. */
void dc_evict_locked(void)
{
	size_t target = dc_max_bytes / 8 * 7;
	size_t budget = 2 * dc_count + 16;
	struct dentry *d, *tmp;

	cds_list_for_each_entry_safe(d, tmp, &dc_lru, lru) {
		if (dc_bytes <= target || budget-- == 0)
			break;
		if (d == dc_root || (d_dir(d) && !cds_list_empty(&d->dir->children)))
			continue;
		if (LOAD_RELAXED(d->referenced)) {
			STORE_RELAXED(d->referenced, 0);
			cds_list_move(&d->lru, dc_lru.prev); /* to the tail */
			continue;
		}
		/* tmp may be d's parent only if d was its last child: re-read. */
		dc_kill_locked(d);
		tmp = cds_list_first_entry(&dc_lru, struct dentry, lru);
	}
}

/* ---------------------------------------------------------------------- */
/* Allocation and insertion.  Under dcache_mutex. */

struct dentry *dc_d_alloc(struct dentry *parent, const char *name, size_t len,
			      unsigned char type, const char *link, size_t linklen)
{
	size_t sz = sizeof(struct dentry) + len + 1 + (link ? linklen + 1 : 0);
	struct dentry *d = calloc(1, sz);

	if (!d)
		return NULL;
	d->parent = parent ? parent : d;
	d->type = type;
	d->namelen = (unsigned char)len;
	memcpy(d->name, name, len);
	d->name[len] = '\0';
	if (link) {
		char *l = d->name + len + 1;

		memcpy(l, link, linklen);
		l[linklen] = '\0';
	}
	CDS_INIT_LIST_HEAD(&d->sibling);
	CDS_INIT_LIST_HEAD(&d->lru);
	cds_lfht_node_init(&d->hnode);
	return d;
}

/* Under rcu_read_lock() too.  A name new to a complete directory (the
 * kernel's answer to a lookup begun before the listing, its creation's event
 * still queued) is hashed inside a write section of the directory: the
 * path index's entries that answer ENOENT from that listing die with it
 * (dcache_pidx.c, PIDX_ABSENT).  A placeholder's replacement (same name),
 * a name of the directory's listing hashed at its first lookup and a
 * negative entry change no answer. */
void dc_d_hash_locked(struct dentry *d)
{
	struct dentry *p = d->parent;
	unsigned long h = d_hash_value(d);
	bool appears = (p->flags & D_COMPLETE) && d->type != D_NEG &&
		       !dc_d_lookup_hash_rcu(dc_table, p, d->name, d->namelen, h) &&
		       !(p->dir->listing && listing_find(p->dir->listing, h, d->name, d->namelen));

	d_publish(d);
	if (appears)
		d_write_begin_attr(p);
	dir_bloom_add(p->dir, h); /* watched: p has its dir_state */
	cds_lfht_add(dc_table, h, &d->hnode);
	if (appears)
		d_write_end(p);
	cds_list_add_tail(&d->sibling, &d->parent->dir->children); /* watched: it has one */
	cds_list_add_tail(&d->lru, &dc_lru);
	dc_bytes += d_bytes(d);
	dc_count++;
	dc_note_growth_locked();
	if (dc_bytes > dc_max_bytes)
		dc_evict_locked();
}

/*
 * call_rcu() work goes to a thread of our own (dc_crdp), routed to from every
 * CPU with liburcu's set_cpu_call_rcu_data(), rather than to liburcu's
 * default call_rcu thread, which can never be stopped: dcache_quiesce() stops
 * ours, so that unshare(CLONE_NEWUSER) can find the process single-threaded.
 * A thread on a CPU beyond the routed range falls back to the default one.
 * In a fork() child liburcu has already made the default thread (its
 * after-fork hook does when any call_rcu data existed): the child uses it.
 * All under dc_init_mutex.
 */
static struct call_rcu_data *dc_crdp;
static bool dc_crdp_inherited;

/* CPUs to route: liburcu sizes its per-CPU array from the "possible" mask
 * (or sysconf): stay within both, so that it never complains on stderr. */
static int routed_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);
	char buf[256];
	int fd = (int)syscall(SYS_openat, AT_FDCWD, "/sys/devices/system/cpu/possible",
			      O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		long len = syscall(SYS_read, fd, buf, sizeof(buf) - 1);

		syscall(SYS_close, fd);
		if (len > 0) {
			long i = len;
			long max;

			buf[len] = '\0';
			while (i > 0 && buf[i - 1] != ',' && buf[i - 1] != '-')
				i--;
			max = strtol(buf + i, NULL, 10);
			if (max >= 0 && max + 1 < n)
				n = max + 1;
		}
	}
	return n > 0 && n < 65536 ? (int)n : 0;
}

static void start_call_rcu_locked(void)
{
	int n;

	if (dc_crdp_inherited) {
		(void)get_default_call_rcu_data();
		return;
	}
	if (dc_crdp)
		return;
	dc_crdp = create_call_rcu_data(0, -1);
	n = routed_cpus();
	for (int cpu = 0; cpu < n; cpu++)
		(void)set_cpu_call_rcu_data(cpu, dc_crdp); /* EEXIST: the host's own stays */
}

/* Not in a read-side section; no call_rcu() may be pending on dc_crdp. */
static void stop_call_rcu_locked(void)
{
	int n = routed_cpus();

	if (!dc_crdp)
		return;
	for (int cpu = 0; cpu < n; cpu++) {
		struct call_rcu_data *c;

		rcu_read_lock();
		c = get_cpu_call_rcu_data(cpu);
		rcu_read_unlock();
		if (c == dc_crdp)
			(void)set_cpu_call_rcu_data(cpu, NULL);
	}
	synchronize_rcu(); /* no call_rcu() still holds the pointer */
	call_rcu_data_free(dc_crdp); /* stops its thread */
	dc_crdp = NULL;
}

/* Run the callbacks of a dc_pending list, after a grace period. */
static void run_pending(struct rcu_head *list)
{
	while (list) {
		struct rcu_head *next = (struct rcu_head *)list->next.next;

		list->func(list);
		list = next;
	}
}

/* Deferred work (see "Threads we do not start" above).  No lock held. */
void dc_maintenance(void)
{
	struct rcu_head *list;
	unsigned long grow = 0;
	sigset_t all, old;
	bool here = false; /* the frees run in this thread */

	if (rcu_read_ongoing() || pthread_mutex_trylock(&dc_init_mutex) != 0)
		return; /* a later lookup does it */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_mutex_lock(&dcache_mutex);
	list = dc_pending;
	dc_pending = NULL;
	if (dc_table && dc_count > dc_table_size) {
		while (dc_table_size < dc_count)
			dc_table_size *= 4;
		grow = dc_table_size;
	}
	STORE_RELAXED(dc_maint, 0);
	pthread_mutex_unlock(&dcache_mutex);
	if (list && !LOAD_ACQUIRE(dc_callrcu_ready)) {
		here = dc_ops && dc_ops->sole_thread && dc_ops->sole_thread();
		if (!here) {
			start_call_rcu_locked();
			STORE_RELEASE(dc_callrcu_ready, true);
		}
	}
	while (list && !here) {
		struct rcu_head *next = (struct rcu_head *)list->next.next;

		urcu_bp_call_rcu(list, list->func); /* may run and free it at once */
		list = next;
	}
	if (grow)
		cds_lfht_resize(dc_table, grow);
	pthread_mutex_unlock(&dc_init_mutex);
	if (here) {
		/* No lock held (nobody may wait for dc_init_mutex inside a
		 * read-side section while we wait), outside a read-side
		 * section (checked above), every signal blocked. */
		synchronize_rcu();
		run_pending(list);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/*
 * Create the table and the root.  Returns false if the cache is unusable.
 * liburcu's allocations (table, call_rcu data) take liburcu's own mutexes,
 * which its fork hooks hold across fork(); they are therefore made under
 * dc_init_mutex, never under dcache_mutex (see the fork order in shim.c).
 */

bool dc_ensure_table_slow(void)
{
	struct stat st;
	sigset_t all, old;
	bool ok;

	if (!dc_ops)
		return false;
	pthread_mutex_lock(&dc_init_mutex);
	if (!dc_root) {
		/* Before any thread of ours exists: see dcache_ops.prepare. */
		if (dc_ops->prepare)
			dc_ops->prepare();
		/* No thread is started here any more (see dc_maintenance); the
		 * mask stays for whatever liburcu does at registration. */
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, &old);
		rcu_read_lock(); /* register this thread with urcu-bp now */
		rcu_read_unlock();
		if (!dc_table) {
			/* Small: every bucket costs ~110 instructions to set
			 * up (113k for 1024, a third of a one-stat process's
			 * instructions); dc_maintenance() grows it. */
#ifdef MADV_WIPEONFORK /* Linux 4.14 */
			dc_wiped_on = madvise(&dc_wiped, sizeof(dc_wiped), MADV_WIPEONFORK) == 0;
#endif
			dc_table = cds_lfht_new(64, 64, 0, 0, NULL);
			pthread_mutex_lock(&dcache_mutex);
			dc_table_size = 64;
			pthread_mutex_unlock(&dcache_mutex);
		}
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (dc_table) {
			struct dentry *r = dc_d_alloc(NULL, "/", 1, D_DIR, NULL, 0);

			if (r) {
				if (dc_ops->kernel_lstat("/", &st) != 0 || !S_ISDIR(st.st_mode) ||
				    st.st_dev > UINT32_MAX || dc_ops->fs_cacheable("/", st.st_dev) != 1)
					r->flags |= D_NOCACHE;
				r->dev = (uint32_t)st.st_dev;
				r->namelen = 0; /* canonical path building treats root as "" */
				pthread_mutex_lock(&dcache_mutex);
				cds_list_add_tail(&r->lru, &dc_lru);
				dc_bytes += d_bytes(r);
				STORE_RELEASE(dc_root, r);
				pthread_mutex_unlock(&dcache_mutex);
			}
		}
	}
	ok = dc_root != NULL;
	pthread_mutex_unlock(&dc_init_mutex);
	return ok;
}

/* ---------------------------------------------------------------------- */
/* Canonical paths */

/* Write d's absolute path into buf.  Under rcu_read_lock().  Returns length,
 * -ENAMETOOLONG, or -EAGAIN if a dentry on the chain died. */
long dc_d_path_rcu(const struct dentry *d, char *buf, size_t size)
{
	size_t pos = size - 1;
	const struct dentry *root = LOAD_ACQUIRE(dc_root);

	buf[pos] = '\0';
	if (d == root) {
		buf[0] = '/';
		buf[1] = '\0';
		return 1;
	}
	while (d != root) {
		unsigned int s = d_seq_begin(d);

		if (d_flags(d) & D_DEAD)
			return -EAGAIN;
		if (pos < (size_t)d->namelen + 1)
			return -ENAMETOOLONG;
		pos -= d->namelen;
		memcpy(buf + pos, d->name, d->namelen);
		buf[--pos] = '/';
		if (d_seq_retry(d, s))
			return -EAGAIN;
		d = d->parent;
	}
	memmove(buf, buf + pos, size - pos);
	return (long)(size - 1 - pos);
}

/* ---------------------------------------------------------------------- */
/* Public entry points */

DCACHE_START_TEXT int dcache_init(const struct dcache_ops *ops, size_t max_bytes)
{
	dc_ops = ops;
	if (max_bytes)
		dc_max_bytes = max_bytes;
	return 0;
}

void dcache_reset(void)
{
	struct stat st;

	rcu_read_lock(); /* before the mutex: see "Lock order" */
	pthread_mutex_lock(&dcache_mutex);
	if (dc_root) {
		struct dentry *r = dc_root;
		bool ok;

		dc_kill_all_locked();
		if (d_dir(r)) {
			r->dir->dir_gen++;
			r->dir->attr_gen++;
		}
		if (d_wd(r) >= 0) {
			int w = r->dir->wd;

			r->dir->wd = -1;
			dc_wd_map_del_locked(w, r);
		}
		/* The root may be another directory now: judge it again. */
		ok = dc_ops->kernel_lstat("/", &st) == 0 && S_ISDIR(st.st_mode) &&
		     st.st_dev <= UINT32_MAX && dc_ops->fs_cacheable("/", st.st_dev) == 1;
		d_write_begin(r);
		STORE_RELAXED(r->flags, ok ? (r->flags & ~(D_NOCACHE | D_NOWATCH)) : (r->flags | D_NOCACHE));
		if (ok)
			STORE_RELAXED(r->dev, (uint32_t)st.st_dev);
		d_write_end(r);
	}
	pthread_mutex_unlock(&dcache_mutex);
	rcu_read_unlock();
}

void dcache_quiesce(void)
{
	struct dentry *r;
	struct cds_lfht *t;
	struct rcu_head *pending;

	pthread_mutex_lock(&dc_init_mutex);
	rcu_read_lock();
	pthread_mutex_lock(&dcache_mutex);
	r = dc_root;
	if (r) {
		dc_kill_all_locked();
		if (d_wd(r) >= 0) {
			int w = r->dir->wd;

			r->dir->wd = -1;
			dc_wd_map_del_locked(w, r);
		}
		cds_list_del(&r->lru);
		dc_bytes -= d_bytes(r);
		STORE_RELEASE(dc_root, NULL);
	}
	t = dc_table;
	STORE_RELEASE(dc_table, NULL);
	dc_table_size = 0;
	pending = dc_pending; /* frees that never reached call_rcu() */
	dc_pending = NULL;
	STORE_RELAXED(dc_maint, 0);
	pthread_mutex_unlock(&dcache_mutex);
	rcu_read_unlock();
	synchronize_rcu(); /* nobody still looks at r or t, nor at the pending */
	if (r)
		free(d_dir(r));
	free(r);
	run_pending(pending);
	if (t || dc_crdp)
		rcu_barrier(); /* every pending free has run */
	if (t)
		(void)cds_lfht_destroy(t, NULL); /* empty */
	stop_call_rcu_locked();
	STORE_RELEASE(dc_callrcu_ready, false);
	pthread_mutex_unlock(&dc_init_mutex);
}

size_t dcache_table_buckets(void)
{
	size_t n;

	pthread_mutex_lock(&dcache_mutex);
	n = dc_table ? dc_table_size : 0;
	pthread_mutex_unlock(&dcache_mutex);
	return n;
}

int dcache_threads(void)
{
	int n;

	pthread_mutex_lock(&dc_init_mutex);
	n = dc_crdp ? 1 : 0; /* the table has no resize worker: dc_maintenance() */
	pthread_mutex_unlock(&dc_init_mutex);
	return n;
}

void dcache_cwd_changed(void)
{
	rcu_read_lock();
	pthread_mutex_lock(&dcache_mutex);
	dc_cwd_gen++;
	if (dc_cwd) {
		struct cwd_ref *old = dc_cwd;

		STORE_RELEASE(dc_cwd, NULL);
		call_rcu(&old->rcu, dc_free_cwd_rcu);
	}
	pthread_mutex_unlock(&dcache_mutex);
	rcu_read_unlock();
}

void dcache_thread_register(void)
{
	rcu_read_lock(); /* registers the thread (once: a TLS check after) */
	rcu_read_unlock();
}

/* Binds, in the parent, the libc functions that dcache_fork_child() and
 * inval_fork_child() call through the PLT (pthread_mutex_init, memset: what
 * LD_DEBUG=bindings showed a child binding): bound lazily in each child
 * instead, each cost ~750 instructions of ld.so and page faults on its code
 * and on our GOT's page.  Any thread, before a fork; once is enough. */
void dcache_fork_bind(void)
{
	pthread_mutex_t m;
	char b[16];
	volatile size_t n = sizeof(b);

	pthread_mutex_init(&m, NULL);
	memset(b, 0, n); /* n unknown to the compiler: a call, not inlined */
	__asm__ volatile("" : : "r"(b) : "memory");
	pthread_mutex_destroy(&m);
}

DCACHE_FORK_TEXT void dcache_fork_prepare(void)
{
	pthread_mutex_lock(&dcache_mutex);
}

DCACHE_FORK_TEXT void dcache_fork_parent(void)
{
	pthread_mutex_unlock(&dcache_mutex);
}

DCACHE_FORK_TEXT void dcache_fork_child(void)
{
	/* The child starts empty: the parent's dentries stay where they are
	 * (copy-on-write pages, never touched again) - freeing them would walk
	 * and write every page.  The table is abandoned likewise. */
	pthread_mutex_init(&dcache_mutex, NULL);
	pthread_mutex_init(&dc_init_mutex, NULL);
	/* liburcu's after-fork hook freed dc_crdp here and made a default
	 * call_rcu thread if any call_rcu data existed. */
	if (dc_crdp)
		dc_crdp_inherited = true;
	dc_crdp = NULL;
	dc_table = NULL;
	dc_table_size = 0;
	dcache_spath_use(NULL, 0, NULL); /* the child attaches on its own */
	dc_pending = NULL; /* the parent's: abandoned with its dentries */
	dc_callrcu_ready = false;
	STORE_RELAXED(dc_maint, 0);
	tree_changed_locked(); /* the index's entries name the parent's dentries */
	dc_root = NULL;
	dc_cwd = NULL;
	dc_cwd_gen++;
	dc_bytes = 0;
	dc_count = 0;
	CDS_INIT_LIST_HEAD(&dc_lru);
	/* Zero already where the pages are MADV_WIPEONFORK (struct dc_wiped).
	 * Otherwise only what the parent wrote is cleared: a memset of the
	 * whole map and pool wrote ten pages, each a copy-on-write or
	 * zero-fill fault in every fork child. */
	if (dc_wiped_on)
		return;
	for (unsigned int i = 0; i < WD_BUCKETS; i++)
		if (dc_wd_map[i])
			dc_wd_map[i] = NULL;
	/* Counters are per process: the parent reports its own at exit. */
	{
		bool shared;

		memset(stat_pool, 0, stat_blocks_used(&shared) * sizeof(stat_pool[0]));
		if (shared)
			memset(&stat_pool[STAT_BLOCKS], 0, sizeof(stat_pool[0]));
	}
}

size_t dcache_memory_bytes(void)
{
	size_t b;

	pthread_mutex_lock(&dcache_mutex);
	b = dc_bytes;
	pthread_mutex_unlock(&dcache_mutex);
	return b;
}

size_t dcache_count(void)
{
	size_t n;

	pthread_mutex_lock(&dcache_mutex);
	n = dc_count;
	pthread_mutex_unlock(&dcache_mutex);
	return n;
}
