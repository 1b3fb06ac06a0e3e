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
 *  entries  { next, kind, wd, gen, ... } written once by the process
 *         that learned them, then published by a CAS of its bucket's head
 *         (release), never written again.  `gen` is the generation of watch
 *         `wd` sampled before the kernel was asked; the entry answers only
 *         while gens[wd] still holds it.  The kinds:
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
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>

#include "dcache.h"
#include "dcache_arena_int.h"

enum { ENT_LISTING = 1, ENT_WATCH = 2, ENT_ATTR = 3, ENT_NAME = 4, ENT_SEARCH = 5 };

struct arena_ent {
	uint32_t next;   /* the next older entry of the bucket (8-byte units), 0: none */
	uint32_t kind;   /* ENT_* */
	int32_t wd;
	int32_t child;   /* ENT_WATCH: the entry's own watch number */
	uint64_t gen;
	uint64_t dev, ino; /* ENT_WATCH: the directory the name led to */
	uint32_t count;  /* ENT_LISTING: names */
	uint32_t len;    /* bytes of names[] */
	char names[];    /* ENT_LISTING: count times type byte, name, NUL;
			  * ENT_WATCH: the name, NUL */
};

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

/* `need` bytes (a multiple of 8) of fresh, zero-filled space, or NULL (A2,
 * A6).  A take larger than DCACHE_ARENA_MARGIN that is refused leaves its
 * size in want_big, so that the watcher grows the arena until it fits. */
void *arena_take(struct arena_hdr *a, uint64_t need)
{
	uint64_t lim = arena_extent(a), off = __atomic_load_n(&a->bump, __ATOMIC_RELAXED);

	do {
		if (off < ARENA_DATA || off % 8 || off > lim || lim - off < need) {
			__atomic_fetch_add(&a->refused, 1, __ATOMIC_RELAXED);
			if (lim < a->size) {
				if (need > DCACHE_ARENA_MARGIN &&
				    __atomic_load_n(&a->want_big, __ATOMIC_RELAXED) < need)
					__atomic_store_n(&a->want_big, need, __ATOMIC_RELAXED);
				arena_want_room(a);
			}
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

/* Publish filled entry e at the head of `head` (A1). */
static void arena_publish(struct arena_hdr *a, uint32_t *head, struct arena_ent *e)
{
	uint32_t self = (uint32_t)(((char *)e - (char *)a) / 8);
	uint32_t old = __atomic_load_n(head, __ATOMIC_RELAXED);

	do
		e->next = old; /* written before the CAS that publishes e */
	while (!__atomic_compare_exchange_n(head, &old, self, true, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED));
}

/*
 * A new entry of `kind` about watch `wd` learned under generation `gen`,
 * with `len` bytes of names[]: its header filled (child -1, dev, ino and
 * count 0: the caller sets what its kind adds), or NULL with *err: -ESTALE
 * (the generation moved while the kernel was asked: nobody may use it) or
 * -ENOSPC (A2).
 */
static struct arena_ent *arena_new(struct arena_hdr *a, uint32_t kind, int wd, uint64_t gen,
				   size_t len, int *err)
{
	struct arena_ent *e;

	if (dcache_arena_gen(a, wd) != gen) {
		*err = -ESTALE;
		return NULL;
	}
	e = arena_alloc(a, len);
	if (!e) {
		*err = -ENOSPC;
		return NULL;
	}
	e->kind = kind;
	e->wd = wd;
	e->child = -1;
	e->gen = gen;
	e->dev = e->ino = 0;
	e->count = 0;
	e->len = (uint32_t)len;
	return e;
}

/* A directory entry's name: 1 to NAME_MAX bytes, no '/', no NUL. */
static bool name_ok(const char *name, size_t len)
{
	return len && len <= NAME_MAX && !memchr(name, '/', len) && !memchr(name, '\0', len);
}

int dcache_arena_put(void *mem, int wd, uint64_t gen, const char *ents, size_t len, size_t count)
{
	struct arena_hdr *a = mem;
	struct arena_ent *e;
	int err;

	if (wd < 0 || len > UINT32_MAX / 2 || count > len)
		return -EINVAL;
	e = arena_new(a, ENT_LISTING, wd, gen, len, &err);
	if (!e)
		return err;
	e->count = (uint32_t)count;
	if (len)
		memcpy(e->names, ents, len);
	arena_publish(a, &a->heads[bucket_of(wd)], e);
	return 0;
}

int dcache_arena_put_watch(void *mem, int wd, uint64_t gen, const char *name, size_t len,
			   int child, uint64_t dev, uint64_t ino)
{
	struct arena_hdr *a = mem;
	struct arena_ent *e;
	int err;

	if (wd < 0 || child < 0 || !name_ok(name, len))
		return -EINVAL;
	e = arena_new(a, ENT_WATCH, wd, gen, len + 1, &err);
	if (!e)
		return err;
	e->child = child;
	e->dev = dev;
	e->ino = ino;
	memcpy(e->names, name, len);
	e->names[len] = '\0';
	arena_publish(a, &a->heads[bucket_of_name(wd, name, len)], e);
	return 0;
}

/*
 * Find the newest entry of `kind` about watch `wd` under its current
 * generation in the chain at *head for which take(e, h, arg) says yes: e is
 * the entry in the arena, h its header copied (A4: h->len is checked to lie
 * within the arena), and take copies what it needs from e and checks it,
 * returning 1 (this one), 0 (go on: not the name sought) or a negative
 * errno.  0 if the generation, checked again after the copy, is still the
 * one sampled before (A5); else -ENOENT, or take's error.
 */
static int arena_find(const struct arena_hdr *a, const uint32_t *head, uint32_t kind, int wd,
		      int (*take)(const struct arena_ent *e, const struct arena_ent *h, void *arg),
		      void *arg)
{
	uint64_t size = arena_extent(a), gen;
	uint32_t cur;

	if (wd < 0)
		return -ENOENT;
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
			r = take(e, &h, arg);
			if (r < 0)
				return r;
			if (r > 0)
				return dcache_arena_gen(a, wd) == gen ? 0 : -ENOENT;
		}
		cur = h.next;
	}
	return -ENOENT;
}

struct take_listing {
	char *buf;
	size_t cap, count, len;
};

static int take_listing(const struct arena_ent *e, const struct arena_ent *h, void *arg)
{
	struct take_listing *t = arg;

	if (h->len > t->cap)
		return -E2BIG;
	memcpy(t->buf, e->names, h->len);
	if (!names_valid(t->buf, h->len, h->count))
		return -ENOENT;
	t->count = h->count;
	t->len = h->len;
	return 1;
}

long dcache_arena_get(const void *mem, int wd, char *buf, size_t cap, size_t *count)
{
	const struct arena_hdr *a = mem;
	struct take_listing t = { buf, cap, 0, 0 };
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

static int take_watch(const struct arena_ent *e, const struct arena_ent *h, void *arg)
{
	struct take_named *t = arg;

	if (h->len != t->len + 1 || !named_is(e, h, t))
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
	struct arena_hdr *a = mem;
	struct arena_ent *e;
	int err;

	if (wd < 0 || !name_ok(name, len) ||
	    (type != DT_UNKNOWN && type != DT_DIR && type != DT_REG && type != DT_LNK) ||
	    (type == DT_LNK) != (tlen > 0) || tlen >= PATH_MAX || (tlen && memchr(target, '\0', tlen)))
		return -EINVAL;
	e = arena_new(a, ENT_NAME, wd, gen, len + 1 + tlen, &err);
	if (!e)
		return err;
	e->child = (int32_t)type;
	e->dev = dev;
	e->ino = ino;
	e->count = (uint32_t)len; /* the name's length; the target follows its NUL */
	memcpy(e->names, name, len);
	e->names[len] = '\0';
	if (tlen)
		memcpy(e->names + len + 1, target, tlen);
	arena_publish(a, &a->heads[bucket_of_name(wd, name, len)], e);
	return 0;
}

static int take_name(const struct arena_ent *e, const struct arena_ent *h, void *arg)
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
	if (tl) {
		memcpy(t->target, e->names + t->len + 1, tl);
		if (memchr(t->target, '\0', tl))
			return -ENOENT;
	}
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
	struct arena_hdr *a = mem;
	struct arena_ent *e;
	int err;

	if (wd < 0 || !S_ISDIR(st->st_mode))
		return -EINVAL;
	e = arena_new(a, ENT_ATTR, wd, gen, sizeof(*st), &err);
	if (!e)
		return err;
	e->dev = (uint64_t)st->st_dev;
	e->ino = (uint64_t)st->st_ino;
	memcpy(e->names, st, sizeof(*st));
	arena_publish(a, &a->heads[bucket_of_attr(wd)], e);
	return 0;
}

static int take_attr(const struct arena_ent *e, const struct arena_ent *h, void *arg)
{
	struct stat *st = arg;

	if (h->len != sizeof(*st))
		return -ENOENT; /* A4 */
	memcpy(st, e->names, sizeof(*st));
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
	struct arena_hdr *a = mem;
	struct arena_ent *e;
	int err;

	if (wd < 0 || cred == 0)
		return -EINVAL;
	e = arena_new(a, ENT_SEARCH, wd, gen, 0, &err);
	if (!e)
		return err;
	e->ino = cred;
	arena_publish(a, &a->heads[bucket_of_search(wd)], e);
	return 0;
}

static int take_search(const struct arena_ent *e, const struct arena_ent *h, void *arg)
{
	(void)e;
	return h->ino == *(const uint64_t *)arg && h->len == 0;
}

int dcache_arena_get_search(const void *mem, int wd, uint64_t cred)
{
	const struct arena_hdr *a = mem;

	if (wd < 0 || cred == 0)
		return -ENOENT;
	return arena_find(a, &a->heads[bucket_of_search(wd)], ENT_SEARCH, wd, take_search, &cred);
}

uint64_t dcache_arena_refused(const void *mem)
{
	return __atomic_load_n(&((const struct arena_hdr *)mem)->refused, __ATOMIC_RELAXED);
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
	default: return NULL;
	}
}

/* Every bucket's chain walked to its end (not only the ARENA_CHAIN_MAX a
 * reader looks at), at most as many steps in all as entries fit in the
 * arena: a scribbled `next` that loops ends the walk, never a hang (A4). */
void dcache_arena_census(const void *mem, struct dcache_arena_census *c)
{
	const struct arena_hdr *a = mem;
	uint64_t ext = arena_extent(a), budget;

	memset(c, 0, sizeof(*c));
	c->size = a->size;
	c->limit = ext;
	c->bump = __atomic_load_n(&a->bump, __ATOMIC_RELAXED);
	c->refused = __atomic_load_n(&a->refused, __ATOMIC_RELAXED);
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
				k->live += h.wd >= 0 && dcache_arena_gen(a, h.wd) == h.gen;
				k->deep += pos >= ARENA_CHAIN_MAX;
			}
			cur = h.next;
		}
		if (pos > c->longest)
			c->longest = pos;
	}
	spath_census(a, c);
}
