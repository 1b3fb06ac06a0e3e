/* SPDX-License-Identifier: MIT */
/*
 * dcache_arena.c - the session's shared entries: directory listings, the
 * watches of directory entries, what names are and directories' attributes,
 * in one mapping that every process of the session reads and writes
 * (doc/session.md, "Phase 2: shared entries").
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
 *  entries  { next, kind, wd, gen, check, ... } written once by the
 *         process that learned them, then published by a CAS of its
 *         bucket's head (release), never written again in their epoch.
 *         `gen` is the generation of watch `wd` sampled before the kernel
 *         was asked; the entry answers only while gens[wd] still holds it.
 *         `check` is a 64-bit hash of everything else but `next`, of the
 *         epoch the entry was taken in and of its bytes (A7).  The kinds:
 *           ENT_LISTING  { count, len, names }: the listing of directory wd;
 *           ENT_WATCH    { child, dev, ino, len, name }: the entry `name` of
 *                        directory wd is the directory watched as `child`
 *                        (dev, ino): a process that knows the name need not
 *                        call inotify_add_watch (the binding of a name
 *                        changes only with an event on wd: a rename, a
 *                        removal; and every mount change bumps every
 *                        generation);
 *           ENT_NAME     { child = d_type, dev, ino, len, name, target }:
 *                        what entry `name` of directory wd is: absent
 *                        (DT_UNKNOWN), a directory, a regular file or a
 *                        symlink and its target (all change only with an
 *                        event on wd: a create, a removal, a rename);
 *           ENT_ATTR     { len, the lstat answer }: the attributes of the
 *                        directory watched as wd (they change only with an
 *                        event on its own watch: an entry made or removed
 *                        in it, its attributes; or a mount).
 *           ENT_SEARCH   { ino = a credentials key }: the kernel let a
 *                        process with those credentials search the
 *                        directory watched as wd (a lookup in it answered
 *                        or ENOENT).  What decides it, its mode, owner,
 *                        ACL and security label, changes only with an
 *                        IN_ATTRIB on its own watch; the key stands for
 *                        everything of the process that the check reads
 *                        (invalidate/session.c, session_cred_key).
 *           ENT_FILE     { child = the file's own watch, dev, ino, count =
 *                        the name's length, name, NUL, fgen, the lstat
 *                        answer }: entry `name` of directory wd is a
 *                        regular file with one link, watched as `child`,
 *                        whose attributes were read after that watch's
 *                        generation was fgen (A9).
 *
 * Invariants
 * ==========
 *  A1 An entry is immutable once reachable, within its epoch: it is filled,
 *     then its `next` set, then it is published by the release CAS; readers
 *     acquire the head.  After a reset its bytes may be reused (A2, A7).
 *  A2 Space is taken by an atomic bump of `bump`, and given back all at
 *     once by a reset: the arena is one epoch at a time.  A take refused
 *     for want of room (one a fresh epoch holds easily: a quarter of the
 *     entry space) sets `full` and wakes the watcher's growing thread;
 *     where the arena cannot grow (at its size, or its memory refused) and
 *     less than DCACHE_ARENA_MARGIN is left, that thread, which alone
 *     resets, resets it (dcache_arena_reset): it ends the shared path
 *     table (S6, dcache_spath.c), bumps `epoch`, empties every bucket
 *     head, then stores `bump` back to the start of the entry space.  So
 *     a take is refused (-ENOSPC, counted in `refused`) only between a
 *     full arena and its reset, and the kernel answers meanwhile.  Bytes
 *     of an old epoch are reused while a process may still read them, or
 *     (a writer stopped between its take and its stores) write them: A7
 *     is what keeps that exact.  Space is zero-filled only in the first
 *     epoch.
 *  A3 Nothing is locked.  A writer killed at any instruction leaves at most
 *     space that no head reaches: nothing half-done is ever visible.  A
 *     writer stopped across a reset and resumed scribbles at most over
 *     entries of the new epoch, which then fail their check (A7).
 *  A4 A reader trusts nothing it reads: it copies an entry into its own
 *     buffer, checks every offset, length and name against the arena's and
 *     the buffer's bounds, and checks the generation again after the copy.
 *     A corrupt arena (a process of the same user can write it, as it can
 *     ptrace the session's processes: README, "Security") gives wrong
 *     listings, never a fault or an overrun.
 *  A6 Memory: the watcher backs the arena with allocated memory in chunks
 *     (watcher.c, grow_main: fallocate, then a release store of `limit`);
 *     no entry is taken past `limit` (a CAS of `bump` below it, not a
 *     blind add), and readers look at nothing past it, so no access ever
 *     touches a page that was not allocated (that page could fault: SIGBUS
 *     where memory cannot be had).  A writer whose take leaves less than
 *     DCACHE_ARENA_MARGIN below `limit`, or is refused, bumps `wants` and
 *     wakes the watcher's thread, which allocates the next chunk.  `limit`
 *     only grows once processes map the arena, never past `size`.
 *  A5 Why a valid entry is exact (doc/session.md): any change to the
 *     listing after `gen` was sampled queues an event on the watch (the
 *     watch was in place before the sample), and the watcher bumps gens[wd]
 *     before it publishes that event's record.  So once a process has
 *     caught up with the ring at a sync point, every entry older than a
 *     change it must see is invalid.  Who may publish, and with which
 *     generation, is the caller's duty (invalidate/, inval_listing_*).
 *  A8 Filesystem classes by mount (dcache_arena_fs_class): one word per
 *     slot, id << 2 | class, 0 empty, written once by a CAS from 0 and
 *     never again, nor by a reset (a mount's class outlives epochs).  The
 *     id is a unique mount ID (statx STATX_MNT_ID_UNIQUE, Linux 6.8): the
 *     kernel never gives one to a second mount, and a mount's superblock,
 *     so its filesystem type, never changes; a word never goes stale.
 *     Linear probing over ARENA_FSV_PROBE slots from the id's hash; a full
 *     neighbourhood refuses the put (its processes ask the kernel, as
 *     without).  A word stands alone: relaxed loads and CAS suffice.  A
 *     wrong word (any process of the session can write the arena) gives a
 *     wrong class, as a wrong entry gives a wrong answer, never a fault.
 *  A9 A file's attributes (ENT_FILE) change through any of its names and
 *     any descriptor, reported on its directory's watch only under the
 *     name used (dcache_events.c, "Names that outlive their inode's other
 *     names"), but always on a watch of the inode itself: inotify reports
 *     a write, a truncation, a chmod, a new or removed link to every watch
 *     on the inode.  So an ENT_FILE answers only while two generations
 *     hold: the directory's (`gen`: the name still leads to that inode)
 *     and the file's own watch's (`fgen`, which the watcher bumps for each
 *     of its events, all nameless: watcher.c, changes_listing).  The
 *     writer adds that watch before it samples fgen and reads the
 *     attributes of the very inode watched (invalidate/inval_shared.c).
 *     File watches count against the user's max_user_watches and their
 *     numbers grow with every watch the instance makes: the watcher sets
 *     `file_wds` (0: none) and a writer that gets a number at or past it
 *     sets `file_off`, after which no file watch is made for the session.
 *  A7 Why a reset keeps every answer exact.  A writer samples `epoch`
 *     before its take, computes `check` from the values it writes (its
 *     own header and source bytes, never the arena's copy, which a stale
 *     writer may be scribbling) and that epoch, stores the entry, then
 *     loads `epoch` again just before each try of its publishing CAS and
 *     gives up (-ESTALE) if it moved.  A reader samples `epoch` before the
 *     generation and the head, copies an entry's header and the bytes it
 *     uses into its own memory, and accepts it only if the check computed
 *     from that copy and the sampled epoch is the copy's `check` (so: the
 *     bytes one writer wrote, whole, in that epoch; an entry of another
 *     epoch, a half-written one, one a stale writer wrote over in part,
 *     all fail it but with the chance of a 64-bit hash collision), then
 *     loads the generation and `epoch` again after its copy and accepts
 *     only if neither moved.  An entry that passes is one a writer wrote
 *     whole after sampling the generation it carries, which still holds:
 *     A5 applies to it wherever in the arena it lies.  The epoch is kept
 *     in an entry only through its check (under any other epoch it fails).
 *     Where an entry lies never matters: a take made between the epoch's
 *     bump and the bump's store lands in old space under the new epoch,
 *     and the new epoch's takes reach it later: each reader then sees one
 *     writer's whole entry, or a mix that fails its check.  `next` is outside
 *     the check: a wrong one only ends a chain early or leads to entries
 *     that are checked in turn (at most ARENA_CHAIN_MAX of them).  The
 *     shared path table reads its slots and chains in place, without a
 *     check: it ends with the first reset (S6), and a lookup in it loads
 *     `epoch` before the table and again after its last load (as a
 *     sequence count), so no byte reused after the reset is trusted.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>

#include "dcache.h"
#include "dcache_arena_int.h"

enum { ENT_LISTING = 1, ENT_WATCH = 2, ENT_ATTR = 3, ENT_NAME = 4, ENT_SEARCH = 5, ENT_FILE = 6 };

struct arena_ent {
	uint32_t next;   /* the next older entry of the bucket (8-byte units), 0: none */
	uint32_t kind;   /* ENT_* */
	int32_t wd;
	int32_t child;   /* ENT_WATCH: the entry's own watch number */
	uint64_t gen;
	uint64_t check;  /* A7: the hash of the rest (not `next`), the epoch, the bytes */
	uint64_t dev, ino; /* ENT_WATCH: the directory the name led to */
	uint32_t count;  /* ENT_LISTING: names */
	uint32_t len;    /* bytes of names[] */
	char names[];    /* ENT_LISTING: count times type byte, name, NUL;
			  * ENT_WATCH: the name, NUL */
};

/*
 * The check (A7): a 64-bit hash of an entry's header but `next` and
 * `check`, of the epoch it was taken in, and of its bytes in at most two
 * segments (the kinds' layouts: ent_check_at).  Four independent lanes of
 * multiply-xorshift over 8-byte words, then a full avalanche: against
 * accidents (a stale writer's bytes, a half-written entry, another epoch),
 * not an adversary (A4: a process of the same user may write anything).
 */
#define CK_K 0x9e3779b97f4a7c15ULL

static inline uint64_t ck_mix(uint64_t h, uint64_t w)
{
	h = (h ^ w) * CK_K;
	return h ^ (h >> 29);
}

/* n bytes at p into h; nothing for none (a kind's empty segment). */
static uint64_t ck_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t w[4];
	size_t i = 0;

	if (n == 0)
		return h;
	if (n >= 32) {
		uint64_t l0 = h, l1 = h ^ 0x243f6a8885a308d3ULL, l2 = h ^ 0x13198a2e03707344ULL,
			 l3 = h ^ 0xa4093822299f31d0ULL;

		for (; i + 32 <= n; i += 32) {
			memcpy(w, b + i, 32);
			l0 = ck_mix(l0, w[0]);
			l1 = ck_mix(l1, w[1]);
			l2 = ck_mix(l2, w[2]);
			l3 = ck_mix(l3, w[3]);
		}
		h = ck_mix(ck_mix(ck_mix(ck_mix(h, l0), l1), l2), l3);
	}
	for (; i + 8 <= n; i += 8) {
		memcpy(w, b + i, 8);
		h = ck_mix(h, w[0]);
	}
	if (i < n) {
		w[0] = 0;
		memcpy(w, b + i, n - i);
		h = ck_mix(h, w[0]);
	}
	return ck_mix(h, n);
}

static uint64_t ent_check(const struct arena_ent *h, uint64_t epoch, const void *p1, size_t n1,
			  const void *p2, size_t n2)
{
	uint64_t x = ck_mix(0x52574348454b31ULL, epoch);

	x = ck_mix(x, (uint64_t)h->kind << 32 | (uint32_t)h->wd);
	x = ck_mix(x, (uint64_t)(uint32_t)h->child << 32 | h->count);
	x = ck_mix(x, h->gen);
	x = ck_mix(x, h->dev);
	x = ck_mix(x, h->ino);
	x = ck_mix(x, h->len);
	x = ck_bytes(x, p1, n1);
	x = ck_bytes(x, p2, n2);
	x ^= x >> 32; /* every input bit into every output bit */
	x *= CK_K;
	x ^= x >> 29;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 32);
}

/* The check of header h whose bytes, h->len of them, are at `names` (a
 * private copy, or the arena's for a report): its kind's segments (a
 * listing's and attributes' bytes whole; a watch entry's name; a name
 * entry's name and target, around the NUL).  The writer's segments are its
 * sources, the same bytes. */
static uint64_t ent_check_at(const struct arena_ent *h, uint64_t epoch, const char *names)
{
	switch (h->kind) {
	case ENT_WATCH:
		return ent_check(h, epoch, names, h->len ? h->len - 1 : 0, NULL, 0);
	case ENT_NAME:
	case ENT_FILE:
		if (h->count >= h->len)
			return ~h->check; /* malformed: never matches (A4) */
		return ent_check(h, epoch, names, h->count, names + h->count + 1,
				 h->len - h->count - 1);
	default:
		return ent_check(h, epoch, names, h->len, NULL, 0);
	}
}

/* The layout the fuzzer writes over (tests/fuzz/arena_fuzz.c, HEADS_AT). */
_Static_assert(offsetof(struct arena_hdr, gens) == 128, "the generations follow 128 bytes");

static uint32_t bucket_of(int wd)
{
	uint32_t h = (uint32_t)wd * 2654435761u;

	return (h >> 16) % ARENA_BUCKETS;
}

/* ENT_WATCH entries of directory wd spread by name (FNV-1a). */
static uint32_t bucket_of_name(int wd, const char *name, size_t len)
{
	uint32_t h = 2166136261u ^ (uint32_t)wd;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)name[i]) * 16777619u;
	return (h ^ (h >> 15)) % ARENA_BUCKETS;
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
	a->limit = size;
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
	spath_bump_all(a);
}

void dcache_arena_mounts_changed(void *mem, uint32_t count)
{
	struct arena_hdr *a = mem;

	dcache_arena_invalidate(mem, -1);
	__atomic_store_n(&a->mounts_done, count, __ATOMIC_RELEASE);
}

uint32_t dcache_arena_mounts_done(const void *mem)
{
	return __atomic_load_n(&((const struct arena_hdr *)mem)->mounts_done, __ATOMIC_ACQUIRE);
}

unsigned int dcache_arena_gen_slot(int wd)
{
	return (uint32_t)wd % ARENA_GENS;
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

/* The bytes entries may occupy (A6): below `limit` and `size`. */
uint64_t arena_extent(const struct arena_hdr *a)
{
	uint64_t l = __atomic_load_n(&a->limit, __ATOMIC_ACQUIRE);

	return l < a->size ? l : a->size;
}

/* Ask the watcher for room (A6). */
void arena_want_room(struct arena_hdr *a)
{
	__atomic_fetch_add(&a->wants, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &a->wants, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/* `need` bytes (a multiple of 8) of space, or NULL (A2, A6): zero-filled
 * in the first epoch, else whatever an older epoch left there.  A take
 * larger than DCACHE_ARENA_MARGIN that is refused leaves its size in
 * want_big, so that the watcher grows the arena until it fits; one that a
 * fresh epoch would hold easily (a quarter of the entry space) sets `full`,
 * so that the watcher resets the arena if it cannot grow (A2). */
void *arena_take(struct arena_hdr *a, uint64_t need)
{
	uint64_t lim = arena_extent(a), off = __atomic_load_n(&a->bump, __ATOMIC_RELAXED);

	do {
		if (off < ARENA_DATA || off % 8 || off > lim || lim - off < need) {
			bool wake = false;

			__atomic_fetch_add(&a->refused, 1, __ATOMIC_RELAXED);
			if (lim < a->size) {
				if (need > DCACHE_ARENA_MARGIN &&
				    __atomic_load_n(&a->want_big, __ATOMIC_RELAXED) < need)
					__atomic_store_n(&a->want_big, need, __ATOMIC_RELAXED);
				wake = true;
			}
			if (need <= (a->size - ARENA_DATA) / 4) {
				if (!__atomic_load_n(&a->full, __ATOMIC_RELAXED))
					__atomic_store_n(&a->full, 1, __ATOMIC_RELAXED);
				wake = true;
			}
			if (wake)
				arena_want_room(a);
			return NULL;
		}
	} while (!__atomic_compare_exchange_n(&a->bump, &off, off + need, true, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	/* This take crossed into the margin: the next chunk, now. */
	if (lim < a->size && lim - off >= DCACHE_ARENA_MARGIN && lim - off - need < DCACHE_ARENA_MARGIN)
		arena_want_room(a);
	return (char *)a + off;
}

/* Space for an entry with `len` bytes of names, or NULL (A2, A6). */
static struct arena_ent *arena_alloc(struct arena_hdr *a, size_t len)
{
	return arena_take(a, (sizeof(struct arena_ent) + len + 7) & ~(uint64_t)7);
}

void dcache_arena_set_limit(void *mem, uint64_t bytes)
{
	struct arena_hdr *a = mem;

	if (bytes > a->size)
		bytes = a->size;
	if (bytes < ARENA_DATA)
		bytes = ARENA_DATA;
	__atomic_store_n(&a->limit, bytes, __ATOMIC_RELEASE);
	/* Room made: a refusal before it asks for no reset (A2). */
	__atomic_store_n(&a->full, 0, __ATOMIC_RELAXED);
}

uint64_t dcache_arena_limit(const void *mem)
{
	return arena_extent(mem);
}

uint64_t dcache_arena_room(const void *mem)
{
	const struct arena_hdr *a = mem;
	uint64_t lim = arena_extent(a), used = __atomic_load_n(&a->bump, __ATOMIC_RELAXED);

	return used < lim ? lim - used : 0;
}

uint64_t dcache_arena_want_room(const void *mem)
{
	uint64_t big = __atomic_load_n(&((const struct arena_hdr *)mem)->want_big, __ATOMIC_RELAXED);

	return big > DCACHE_ARENA_MARGIN ? big : DCACHE_ARENA_MARGIN;
}

uint32_t dcache_arena_wants(const void *mem)
{
	return __atomic_load_n(&((const struct arena_hdr *)mem)->wants, __ATOMIC_ACQUIRE);
}

void dcache_arena_wait_wants(void *mem, uint32_t seen, long ns)
{
	struct timespec ts = { ns / 1000000000L, ns % 1000000000L };

	syscall(SYS_futex, &((struct arena_hdr *)mem)->wants, FUTEX_WAIT, seen, &ts, NULL, 0);
}

/* A new entry's header, of `kind` about watch `wd` learned under
 * generation `gen`, with `len` bytes of names[] (child -1, dev, ino and
 * count 0: the caller sets what its kind adds). */
static void ent_init(struct arena_ent *h, uint32_t kind, int wd, uint64_t gen, size_t len)
{
	memset(h, 0, sizeof(*h));
	h->kind = kind;
	h->wd = wd;
	h->child = -1;
	h->gen = gen;
	h->len = (uint32_t)len;
}

/*
 * Write entry h (its header) with names[] = p1[0..n1), then, if h->len is
 * longer, a NUL and p2[0..n2) (h->len == n1, or n1 + 1 + n2), and publish
 * it at the head of chain `bucket` (A1, A7): 0, or -ESTALE (the generation
 * moved while the kernel was asked, or the epoch while this wrote: nobody
 * may use it) or -ENOSPC (A2).  The check is computed from h and the
 * sources, never from the arena's copy.
 */
static int arena_write(struct arena_hdr *a, struct arena_ent *h, uint32_t bucket, const void *p1,
		       size_t n1, const void *p2, size_t n2)
{
	uint64_t ep = arena_epoch(a); /* before the take (A7) */
	uint32_t *head = &a->heads[bucket], self, old;
	struct arena_ent *e;

	if (dcache_arena_gen(a, h->wd) != h->gen)
		return -ESTALE;
	e = arena_alloc(a, h->len);
	if (!e)
		return -ENOSPC;
	h->check = ent_check(h, ep, p1, n1, p2, h->len > n1 ? n2 : 0);
	h->next = 0;
	memcpy(e, h, sizeof(*h));
	if (n1)
		memcpy(e->names, p1, n1);
	if (h->len > n1) {
		e->names[n1] = '\0';
		if (n2)
			memcpy(e->names + n1 + 1, p2, n2);
	}
	self = (uint32_t)(((char *)e - (char *)a) / 8);
	old = __atomic_load_n(head, __ATOMIC_RELAXED);
	do {
		if (arena_epoch(a) != ep)
			return -ESTALE; /* reset meanwhile: its space may be another's */
		e->next = old; /* written before the CAS that publishes e */
	} while (!__atomic_compare_exchange_n(head, &old, self, true, __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
	return 0;
}

/* A directory entry's name: 1 to NAME_MAX bytes, no '/', no NUL. */
static bool name_ok(const char *name, size_t len)
{
	return len && len <= NAME_MAX && !memchr(name, '/', len) && !memchr(name, '\0', len);
}

int dcache_arena_put(void *mem, int wd, uint64_t gen, const char *ents, size_t len, size_t count)
{
	struct arena_ent h;

	if (wd < 0 || len > UINT32_MAX / 2 || count > len)
		return -EINVAL;
	ent_init(&h, ENT_LISTING, wd, gen, len);
	h.count = (uint32_t)count;
	return arena_write(mem, &h, bucket_of(wd), ents, len, NULL, 0);
}

int dcache_arena_put_watch(void *mem, int wd, uint64_t gen, const char *name, size_t len,
			   int child, uint64_t dev, uint64_t ino)
{
	struct arena_ent h;

	if (wd < 0 || child < 0 || !name_ok(name, len))
		return -EINVAL;
	ent_init(&h, ENT_WATCH, wd, gen, len + 1);
	h.child = child;
	h.dev = dev;
	h.ino = ino;
	return arena_write(mem, &h, bucket_of_name(wd, name, len), name, len, NULL, 0);
}

/*
 * Find the newest entry of `kind` about watch `wd` under its current
 * generation in the chain at *head for which take(e, h, ep, arg) says yes:
 * e is the entry in the arena, h its header copied (A4: h->len is checked to
 * lie within the arena), ep the epoch sampled first, and take copies what it
 * needs from e and checks it, its check sum included (A7), returning 1 (this
 * one), 0 (go on: not the name sought, or a check that fails) or a negative
 * errno.  0 if the generation and the epoch, checked again after the copy,
 * are still the ones sampled before (A5, A7); else -ENOENT, or take's error.
 */
static int arena_find(const struct arena_hdr *a, const uint32_t *head, uint32_t kind, int wd,
		      int (*take)(const struct arena_ent *e, const struct arena_ent *h, uint64_t ep,
				  void *arg),
		      void *arg)
{
	uint64_t size = arena_extent(a), gen, ep;
	uint32_t cur;

	if (wd < 0)
		return -ENOENT;
	ep = arena_epoch(a);
	gen = dcache_arena_gen(a, wd);
	cur = __atomic_load_n(head, __ATOMIC_ACQUIRE);
	for (int steps = 0; cur && steps < ARENA_CHAIN_MAX; steps++) {
		uint64_t off = (uint64_t)cur * 8;
		const struct arena_ent *e;
		struct arena_ent h;
		int r;

		if (off < ARENA_DATA || off > size || size - off < sizeof(h))
			return -ENOENT; /* A4 */
		e = (const struct arena_ent *)((const char *)a + off);
		memcpy(&h, e, sizeof(h));
		if (h.kind == kind && h.wd == wd && h.gen == gen) {
			if (h.len > size - off - sizeof(h))
				return -ENOENT; /* A4 */
			r = take(e, &h, ep, arg);
			if (r < 0)
				return r;
			if (r > 0)
				return dcache_arena_gen(a, wd) == gen && arena_epoch(a) == ep ?
					       0 :
					       -ENOENT;
		}
		cur = h.next;
	}
	return -ENOENT;
}

struct take_listing {
	char *buf;
	size_t cap, max, count, len;
};

static int take_listing(const struct arena_ent *e, const struct arena_ent *h, uint64_t ep,
			void *arg)
{
	struct take_listing *t = arg;

	/* h is a copy: its count is checked with the names below (A7); a
	 * count over max refuses before any name is copied. */
	if (h->len > t->cap || h->count > t->max)
		return -E2BIG;
	memcpy(t->buf, e->names, h->len);
	if (ent_check(h, ep, t->buf, h->len, NULL, 0) != h->check)
		return 0; /* another epoch's, or written over (A7) */
	if (!names_valid(t->buf, h->len, h->count))
		return -ENOENT;
	t->count = h->count;
	t->len = h->len;
	return 1;
}

long dcache_arena_get(const void *mem, int wd, char *buf, size_t cap, size_t *count)
{
	return dcache_arena_get_max(mem, wd, buf, cap, SIZE_MAX, count);
}

long dcache_arena_get_max(const void *mem, int wd, char *buf, size_t cap, size_t max,
			  size_t *count)
{
	const struct arena_hdr *a = mem;
	struct take_listing t = { buf, cap, max, 0, 0 };
	int r;

	if (wd < 0)
		return -ENOENT;
	r = arena_find(a, &a->heads[bucket_of(wd)], ENT_LISTING, wd, take_listing, &t);
	if (r < 0)
		return r;
	*count = t.count;
	return (long)t.len;
}

/* ENT_WATCH and ENT_NAME: the entry of the name sought, whose name is the
 * first `len` bytes of names[], then a NUL. */
struct take_named {
	const char *name;
	size_t len;
	char *target; /* ENT_NAME */
	size_t tcap, tlen;
	int child;
	uint64_t dev, ino;
};

static bool named_is(const struct arena_ent *e, const struct arena_ent *h,
		     const struct take_named *t)
{
	char nm[NAME_MAX + 1];

	if (h->len < t->len + 1)
		return false;
	memcpy(nm, e->names, t->len + 1);
	return !memcmp(nm, t->name, t->len) && nm[t->len] == '\0';
}

static int take_watch(const struct arena_ent *e, const struct arena_ent *h, uint64_t ep,
		      void *arg)
{
	struct take_named *t = arg;

	/* The copy's name is the one sought: its check is over that. */
	if (h->len != t->len + 1 || !named_is(e, h, t) ||
	    ent_check(h, ep, t->name, t->len, NULL, 0) != h->check)
		return 0;
	if (h->child < 0)
		return -ENOENT; /* A4 */
	t->child = h->child;
	t->dev = h->dev;
	t->ino = h->ino;
	return 1;
}

int dcache_arena_get_watch(const void *mem, int wd, const char *name, size_t len, int *child,
			   uint64_t *dev, uint64_t *ino)
{
	const struct arena_hdr *a = mem;
	struct take_named t = { .name = name, .len = len };
	int r;

	if (wd < 0 || len == 0 || len > NAME_MAX)
		return -ENOENT;
	r = arena_find(a, &a->heads[bucket_of_name(wd, name, len)], ENT_WATCH, wd, take_watch, &t);
	if (r < 0)
		return r;
	*child = t.child;
	*dev = t.dev;
	*ino = t.ino;
	return 0;
}

int dcache_arena_put_name(void *mem, int wd, uint64_t gen, const char *name, size_t len,
			  unsigned int type, uint64_t dev, uint64_t ino, const char *target, size_t tlen)
{
	struct arena_ent h;

	if (wd < 0 || !name_ok(name, len) ||
	    (type != DT_UNKNOWN && type != DT_DIR && type != DT_REG && type != DT_LNK) ||
	    (type == DT_LNK) != (tlen > 0) || tlen >= PATH_MAX || (tlen && memchr(target, '\0', tlen)))
		return -EINVAL;
	ent_init(&h, ENT_NAME, wd, gen, len + 1 + tlen);
	h.child = (int32_t)type;
	h.dev = dev;
	h.ino = ino;
	h.count = (uint32_t)len; /* the name's length; the target follows its NUL */
	return arena_write(mem, &h, bucket_of_name(wd, name, len), name, len, target, tlen);
}

static int take_name(const struct arena_ent *e, const struct arena_ent *h, uint64_t ep,
		     void *arg)
{
	struct take_named *t = arg;
	size_t tl;

	if (h->count != t->len || !named_is(e, h, t))
		return 0;
	tl = h->len - t->len - 1;
	if ((h->child != DT_UNKNOWN && h->child != DT_DIR && h->child != DT_REG &&
	     h->child != DT_LNK) ||
	    (h->child == DT_LNK) != (tl > 0) || tl >= PATH_MAX || tl > t->tcap)
		return -ENOENT; /* A4 */
	if (tl)
		memcpy(t->target, e->names + t->len + 1, tl);
	if (ent_check(h, ep, t->name, t->len, t->target, tl) != h->check)
		return 0; /* A7 */
	if (tl && memchr(t->target, '\0', tl))
		return -ENOENT;
	t->tlen = tl;
	t->child = h->child;
	t->dev = h->dev;
	t->ino = h->ino;
	return 1;
}

int dcache_arena_get_name(const void *mem, int wd, const char *name, size_t len, unsigned int *type,
			  uint64_t *dev, uint64_t *ino, char *target, size_t tcap, size_t *tlen)
{
	const struct arena_hdr *a = mem;
	struct take_named t = { .name = name, .len = len, .target = target, .tcap = tcap };
	int r;

	if (wd < 0 || len == 0 || len > NAME_MAX)
		return -ENOENT;
	r = arena_find(a, &a->heads[bucket_of_name(wd, name, len)], ENT_NAME, wd, take_name, &t);
	if (r < 0)
		return r;
	*type = (unsigned int)t.child;
	*dev = t.dev;
	*ino = t.ino;
	*tlen = t.tlen;
	return 0;
}

/* ENT_ATTR entries: their own chains (a listing's and a directory's
 * attributes have the same key). */
static uint32_t bucket_of_attr(int wd)
{
	return bucket_of(wd ^ 0x5bd1e995);
}

int dcache_arena_put_attr(void *mem, int wd, uint64_t gen, const struct stat *st)
{
	struct arena_ent h;

	if (wd < 0 || !S_ISDIR(st->st_mode))
		return -EINVAL;
	ent_init(&h, ENT_ATTR, wd, gen, sizeof(*st));
	h.dev = (uint64_t)st->st_dev;
	h.ino = (uint64_t)st->st_ino;
	return arena_write(mem, &h, bucket_of_attr(wd), st, sizeof(*st), NULL, 0);
}

static int take_attr(const struct arena_ent *e, const struct arena_ent *h, uint64_t ep, void *arg)
{
	struct stat *st = arg;

	if (h->len != sizeof(*st))
		return -ENOENT; /* A4 */
	memcpy(st, e->names, sizeof(*st));
	if (ent_check(h, ep, st, sizeof(*st), NULL, 0) != h->check)
		return 0; /* A7 */
	if (!S_ISDIR(st->st_mode) || (uint64_t)st->st_dev != h->dev || (uint64_t)st->st_ino != h->ino)
		return -ENOENT; /* A4 */
	return 1;
}

int dcache_arena_get_attr(const void *mem, int wd, struct stat *st)
{
	const struct arena_hdr *a = mem;

	if (wd < 0)
		return -ENOENT;
	return arena_find(a, &a->heads[bucket_of_attr(wd)], ENT_ATTR, wd, take_attr, st);
}

/* ENT_SEARCH entries: chains of their own, as ENT_ATTR's. */
static uint32_t bucket_of_search(int wd)
{
	return bucket_of(wd ^ 0x2c1b3c6d);
}

int dcache_arena_put_search(void *mem, int wd, uint64_t gen, uint64_t cred)
{
	struct arena_ent h;

	if (wd < 0 || cred == 0)
		return -EINVAL;
	ent_init(&h, ENT_SEARCH, wd, gen, 0);
	h.ino = cred;
	return arena_write(mem, &h, bucket_of_search(wd), NULL, 0, NULL, 0);
}

static int take_search(const struct arena_ent *e, const struct arena_ent *h, uint64_t ep,
		       void *arg)
{
	(void)e;
	return h->ino == *(const uint64_t *)arg && h->len == 0 &&
	       ent_check(h, ep, NULL, 0, NULL, 0) == h->check;
}

int dcache_arena_get_search(const void *mem, int wd, uint64_t cred)
{
	const struct arena_hdr *a = mem;

	if (wd < 0 || cred == 0)
		return -ENOENT;
	return arena_find(a, &a->heads[bucket_of_search(wd)], ENT_SEARCH, wd, take_search, &cred);
}

/* ENT_FILE entries (A9): chains of their own, spread by name. */
static uint32_t bucket_of_file(int wd, const char *name, size_t len)
{
	return bucket_of_name(wd ^ 0x3c6ef372, name, len);
}

/* What follows an ENT_FILE's name and its NUL. */
struct file_tail {
	uint64_t fgen;
	struct stat st;
};

void dcache_arena_set_file_wds(void *mem, uint32_t n)
{
	__atomic_store_n(&((struct arena_hdr *)mem)->file_wds, n, __ATOMIC_RELAXED);
}

int dcache_arena_file_watches_on(const void *mem)
{
	const struct arena_hdr *a = mem;

	return __atomic_load_n(&a->file_wds, __ATOMIC_RELAXED) > 0 &&
	       !__atomic_load_n(&a->file_off, __ATOMIC_RELAXED);
}

int dcache_arena_file_watch_ok(void *mem, int fwd)
{
	struct arena_hdr *a = mem;
	uint32_t n = __atomic_load_n(&a->file_wds, __ATOMIC_RELAXED);

	if (fwd < 0 || !dcache_arena_file_watches_on(a))
		return 0;
	if ((uint32_t)fwd < n && (uint32_t)fwd < DCACHE_ARENA_FILE_WDS)
		return 1;
	__atomic_store_n(&a->file_off, 1, __ATOMIC_RELAXED);
	return 0;
}

int dcache_arena_put_file(void *mem, int wd, uint64_t gen, const char *name, size_t len, int fwd,
			  uint64_t fgen, const struct stat *st)
{
	struct arena_ent h;
	struct file_tail t;

	if (wd < 0 || fwd < 0 || !name_ok(name, len) || !S_ISREG(st->st_mode) || st->st_nlink != 1)
		return -EINVAL;
	if (!dcache_arena_file_watch_ok(mem, fwd))
		return -ERANGE;
	if (dcache_arena_gen(mem, fwd) != fgen)
		return -ESTALE;
	memset(&t, 0, sizeof(t));
	t.fgen = fgen;
	memcpy(&t.st, st, sizeof(*st));
	ent_init(&h, ENT_FILE, wd, gen, len + 1 + sizeof(t));
	h.child = fwd;
	h.dev = (uint64_t)st->st_dev;
	h.ino = (uint64_t)st->st_ino;
	h.count = (uint32_t)len;
	return arena_write(mem, &h, bucket_of_file(wd, name, len), name, len, &t, sizeof(t));
}

struct take_file {
	struct take_named n;
	const struct arena_hdr *a;
	struct file_tail t;
};

static int take_file(const struct arena_ent *e, const struct arena_ent *h, uint64_t ep, void *arg)
{
	struct take_file *f = arg;

	if (h->count != f->n.len || h->len != f->n.len + 1 + sizeof(f->t) || !named_is(e, h, &f->n))
		return 0;
	memcpy(&f->t, e->names + f->n.len + 1, sizeof(f->t));
	if (ent_check(h, ep, f->n.name, f->n.len, &f->t, sizeof(f->t)) != h->check)
		return 0; /* A7 */
	if (h->child < 0 || !S_ISREG(f->t.st.st_mode) || f->t.st.st_nlink != 1 ||
	    (uint64_t)f->t.st.st_dev != h->dev || (uint64_t)f->t.st.st_ino != h->ino)
		return -ENOENT; /* A4 */
	/* After the copy: the attributes copied held when fgen still did. */
	return dcache_arena_gen(f->a, h->child) == f->t.fgen;
}

int dcache_arena_get_file(const void *mem, int wd, const char *name, size_t len, struct stat *st)
{
	const struct arena_hdr *a = mem;
	struct take_file f = { .n = { .name = name, .len = len }, .a = a };
	int r;

	if (wd < 0 || len == 0 || len > NAME_MAX)
		return -ENOENT;
	r = arena_find(a, &a->heads[bucket_of_file(wd, name, len)], ENT_FILE, wd, take_file, &f);
	if (r < 0)
		return r;
	memcpy(st, &f.t.st, sizeof(*st));
	return 0;
}

/* The first slot of mount `id` (A8): a 64-bit mix, then the table. */
static uint32_t fsv_slot(uint64_t id)
{
	id ^= id >> 31;
	id *= 0x9e3779b97f4a7c15ULL;
	return (uint32_t)(id >> 40) % ARENA_FSV;
}

int dcache_arena_fs_class(const void *mem, uint64_t id)
{
	const struct arena_hdr *a = mem;
	uint32_t s = fsv_slot(id);

	if (!id || id >> 62)
		return 0;
	for (uint32_t i = 0; i < ARENA_FSV_PROBE; i++, s = (s + 1) % ARENA_FSV) {
		uint64_t w = __atomic_load_n(&a->fsv[s], __ATOMIC_RELAXED);

		if (!w)
			return 0;
		if (w >> 2 == id)
			return (int)(w & 3);
	}
	return 0;
}

int dcache_arena_fs_class_put(void *mem, uint64_t id, int cls)
{
	struct arena_hdr *a = mem;
	uint32_t s = fsv_slot(id);

	if (!id || id >> 62 || cls < DCACHE_FS_LOCAL || cls > DCACHE_FS_NONE)
		return -EINVAL;
	for (uint32_t i = 0; i < ARENA_FSV_PROBE; i++, s = (s + 1) % ARENA_FSV) {
		uint64_t w = 0;

		if (__atomic_compare_exchange_n(&a->fsv[s], &w, id << 2 | (uint64_t)cls, false,
						__ATOMIC_RELAXED, __ATOMIC_RELAXED) ||
		    w >> 2 == id)
			return 0; /* ours now, or already there */
	}
	return -ENOSPC;
}

uint64_t dcache_arena_refused(const void *mem)
{
	return __atomic_load_n(&((const struct arena_hdr *)mem)->refused, __ATOMIC_RELAXED);
}

uint64_t dcache_arena_resets(const void *mem)
{
	return __atomic_load_n(&((const struct arena_hdr *)mem)->resets, __ATOMIC_RELAXED);
}

int dcache_arena_wants_reset(const void *mem)
{
	const struct arena_hdr *a = mem;

	return __atomic_load_n(&a->full, __ATOMIC_RELAXED) && arena_room(a) < DCACHE_ARENA_MARGIN;
}

/* A2, A7: the order matters.  The path table ends before the epoch moves
 * (its lookups check the epoch last, S6); the epoch moves before any byte
 * is handed out again (the bump's release store, which takers' CAS reads);
 * the heads are emptied in between, so that no chain of the new epoch
 * leads into the old one but through a stale writer's publish, whose entry
 * then fails its check. */
void dcache_arena_reset(void *mem)
{
	struct arena_hdr *a = mem;

	spath_end(a);
	__atomic_fetch_add(&a->epoch, 1, __ATOMIC_SEQ_CST);
	for (uint32_t b = 0; b < ARENA_BUCKETS; b++)
		__atomic_store_n(&a->heads[b], 0, __ATOMIC_RELAXED);
	__atomic_store_n(&a->full, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&a->bump, ARENA_DATA, __ATOMIC_RELEASE);
	__atomic_fetch_add(&a->resets, 1, __ATOMIC_RELAXED);
}

/* dcache_arena_census's entry of `kind`, or NULL. */
static struct dcache_arena_kind *census_kind(struct dcache_arena_census *c, uint32_t kind)
{
	switch (kind) {
	case ENT_LISTING: return &c->listing;
	case ENT_WATCH: return &c->watch;
	case ENT_NAME: return &c->name;
	case ENT_ATTR: return &c->attr;
	case ENT_SEARCH: return &c->search;
	case ENT_FILE: return &c->file;
	default: return NULL;
	}
}

/* Every bucket's chain walked to its end (not only the ARENA_CHAIN_MAX a
 * reader looks at), at most as many steps in all as entries fit in the
 * arena: a scribbled `next` that loops ends the walk, never a hang (A4). */
void dcache_arena_census(const void *mem, struct dcache_arena_census *c)
{
	const struct arena_hdr *a = mem;
	uint64_t ext = arena_extent(a), budget, ep;

	memset(c, 0, sizeof(*c));
	c->size = a->size;
	c->limit = ext;
	c->bump = __atomic_load_n(&a->bump, __ATOMIC_RELAXED);
	c->refused = __atomic_load_n(&a->refused, __ATOMIC_RELAXED);
	c->resets = __atomic_load_n(&a->resets, __ATOMIC_RELAXED);
	ep = arena_epoch(a);
	budget = ext > ARENA_DATA ? (ext - ARENA_DATA) / sizeof(struct arena_ent) + 1 : 0;
	for (uint32_t b = 0; b < ARENA_BUCKETS && budget; b++) {
		uint32_t cur = __atomic_load_n(&a->heads[b], __ATOMIC_ACQUIRE);
		uint64_t pos = 0;

		for (; cur && budget; pos++, budget--) {
			uint64_t off = (uint64_t)cur * 8;
			struct dcache_arena_kind *k;
			struct arena_ent h;

			if (off < ARENA_DATA || off > ext || ext - off < sizeof(h))
				break;
			memcpy(&h, (const char *)a + off, sizeof(h));
			if (h.len > ext - off - sizeof(h))
				break;
			k = census_kind(c, h.kind);
			if (k) {
				k->n++;
				k->bytes += (sizeof(h) + h.len + 7) & ~(uint64_t)7;
				/* in place: a report may be off, never a lookup */
				k->live += h.wd >= 0 && dcache_arena_gen(a, h.wd) == h.gen &&
					   ent_check_at(&h, ep, (const char *)a + off + sizeof(h)) ==
						   h.check;
				k->deep += pos >= ARENA_CHAIN_MAX;
			}
			cur = h.next;
		}
		if (pos > c->longest)
			c->longest = pos;
	}
	spath_census(a, c);
}
