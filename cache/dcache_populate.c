/* SPDX-License-Identifier: MIT */
/*
 * dcache_populate.c - the slow path: ask the kernel about the one gap a walk
 * found (struct miss), and insert the answer.
 *
 * Design
 * ======
 * A walk that finds a gap - an unknown name, a directory's search
 * permission, an object's attributes, an access bit, a statx answer, the
 * cwd, an expired TTL - returns WALK_MISS.  dc_populate_rcu() asks the kernel
 * exactly that (one lstat, readlink, faccessat or statx of the canonical path
 * that dc_d_path_rcu() rebuilds, or getcwd) without the writer mutex, then
 * takes it to insert what it learned; the caller walks again.  A directory
 * that keeps being probed is listed once and made complete
 * (complete_dir_rcu(), dcache_set_completion()): every other name in it is
 * then absent.
 *
 * Invariants kept here (the cache's own: dcache.c, "Locks and invariants")
 * ====================
 *  Generations ("Coherence" in dcache.c): before the kernel is asked, the
 *    generations that an event able to change its answer would bump (the
 *    parent's dir_gen; a directory's own attr_gen; dc_attr_gen_for() the
 *    object's type) and the dentry's d_seq are sampled under dcache_mutex;
 *    the answer is inserted only if none of them moved and the dentry is
 *    alive (unchanged_locked()).
 *  A directory is watched (ensure_watch_locked(), which also makes its
 *    dir_state) before anything below it is hashed or its own attributes are
 *    kept; one that cannot be watched is D_NOCACHE.
 *  Attributes are written by attr_store() only: before the dentry is hashed,
 *    or in a d_seq write section that sets D_ATTR.
 *  What the cache may not keep (racy timestamps, hard links, a failed access
 *    check) is answered to the caller that asked, and not kept.
 *  The policy below is set before the first lookup (dcache_set_policy,
 *    _ttl, _completion) and only read afterwards.
 */
#define _GNU_SOURCE
#define URCU_INLINE_SMALL_FUNCTIONS
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dcache_int.h"

/* Completion policy (dcache_set_completion): list a directory after this many
 * negative probes (0 = never), if it holds at most this many names. */
static unsigned int dc_complete_probes = 2;
static unsigned int dc_complete_max = 10000;
/* ... or after this many times `probes` names were found present (the walk
 * asked about each one). */
#define COMPLETE_POS_PER_NEG 4
/* Policy (dcache_set_policy), set before the first lookup. */
static long long dc_racy_ns = 2000000000LL; /* attributes this fresh are not kept */
/* TTL filesystems (fs_cacheable() == 2): how long positive and negative
 * answers live (dcache_set_ttl); a negative TTL of 0 caches no absent name. */
static uint64_t dc_ttl_ns = 1000000000ULL;
static uint64_t dc_neg_ttl_ns = 1000000000ULL;
static bool dc_no_negative DCACHE_START_DATA;
static bool dc_scratch = true; /* dcache_set_scratch() */

/*
 * Directory rent (dcache_set_dir_rent).  Caching the names of a directory
 * costs this process a watch (inotify_add_watch, or the session's taken from
 * the arena), then an lstat or a shared entry per name it meets and, after
 * dc_complete_probes absent names, its listing (an open, two getdents and a
 * close, or the session's copied) and a dentry per listed name: several raw
 * lookups' worth, which only later lookups in that directory pay back.  A
 * tree whose directories are each asked a few names (a monorepo's leaves,
 * every name a process's first) never pays it back: 3.3x the wall of the
 * same lookups without a cache at 100,000 leaves (doc/benchmarks-by-stop.md,
 * "Stop 43").  So, as a ski rental, a directory not yet watched is rented
 * first: the first dc_dir_rent lookups of a name in it pass through (the
 * kernel's answer, as with no cache), counted in its dir_state under
 * dcache_mutex, and the next one buys it.  Nothing below a rented directory
 * is cached (it has no watch: the invariant above), so renting changes no
 * answer.  In a session too, though another process's watch would cost no
 * system call: the names still cost their fills, and later processes that
 * bought every directory the session knew at once were the slowest (2.3x
 * against 1.6x).  Not rented: TTL filesystems' directories (no inotify
 * coherence to buy; their lookups are the slow ones a cache is for).
 */
static unsigned int dc_dir_rent;
static unsigned int dc_rent_shift; /* under dcache_mutex: "The rent adapts" */
static __thread unsigned int tls_rent_n __attribute__((tls_model("initial-exec")));
static __thread uint64_t tls_rent_a0 __attribute__((tls_model("initial-exec")));
static __thread uint64_t tls_rent_m0 __attribute__((tls_model("initial-exec")));
static void rent_counts(const struct stat_block *b, uint64_t *a, uint64_t *m);
static __thread unsigned int tls_idle_exp __attribute__((tls_model("initial-exec"))); /* "Idle spells" */
static __thread bool tls_idle_ended __attribute__((tls_model("initial-exec")));

DCACHE_START_TEXT void dcache_set_dir_rent(unsigned int lookups)
{
	dc_dir_rent = lookups;
	dc_rent_shift = 0; /* "The rent adapts", from the rent given */
	/* The caller's window and "Idle spells" start afresh too. */
	tls_idle_left = tls_idle_exp = tls_rent_n = 0;
	if (tls_stats)
		rent_counts(tls_stats, &tls_rent_a0, &tls_rent_m0);
}

/*
 * The rent adapts to what buying earns.  A thread counts its rent decisions
 * (lookups of a name in a directory not watched yet: those rented and the
 * one that buys); every RENT_WINDOW of them it compares its answers from the
 * cache since the last such look (hits and negative hits, a miss's answer
 * included) with its misses and rented lookups since: fewer than twice as
 * many, and the process's rent doubles (at most RENT_SHIFT_MAX times: 1,024
 * lookups for the default 4); more than eight times as many, and it halves
 * back.  A process that asks each name of many directories once (the scale
 * tree) soon passes nearly everything through, as with no cache; one whose
 * directories answer again and again (a compiler's) keeps the rent given: a
 * cc1 of the generated project makes ~600 rent decisions (478 rented, the
 * buys), so one window, with 30,000-35,000 answers against ~770 misses and
 * rented lookups.  The shift is changed
 * under dcache_mutex (the caller's) and read there; the window is the
 * thread's own (its stat block's counters, which a fork child may find
 * reset: a window whose counters went back is only restarted).
 */
#define RENT_WINDOW 512
#define RENT_SHIFT_MAX 8

/*
 * Idle spells.  A rented lookup still walks to the directory it rents, then
 * rebuilds its name and takes dcache_mutex to count the rent: ~1 us a lookup
 * where the kernel's own answer over a cold monorepo-sized tree takes 5-7
 * (scale.sh: 1.13x the no-cache wall with the rent adapted).  So a thread
 * whose rent has doubled to its most (dc_rent_shift == RENT_SHIFT_MAX: 8
 * windows in a row that bought too little) and whose window still found
 * under one cached answer in IDLE_RATIO misses and rented lookups stops
 * walking: its next tls_idle_left lookups pass through at the door
 * (dcache_idle_pass(), the shim's, before anything else of the cache's;
 * dcache_lookup_len() and drive_lookup() for other callers), counted as
 * rented.  The spell's last lookup sets the rent back to the one given
 * (tls_idle_ended, applied by the next rent decision under the mutex): a
 * spell counts no rent, so without that fresh look a directory could never
 * be bought again and every window after a spell would call for another
 * (the difftest, whose cache then answered 6 lookups of 316,000, against
 * 37,804 with it).  A spell after another 8 bad windows is twice the last
 * (IDLE_MIN lookups, at most IDLE_MIN << IDLE_EXP_MAX); a window with more
 * than 2 answers a miss starts the next at IDLE_MIN again.  A pass-through
 * is the kernel's answer, so a spell changes no answer; it forgoes the
 * thread's cached answers, which its windows found next to none of (a
 * cc1's has 40 per miss).  Thread-local, as the window is: no lock, nothing
 * shared written; a fork child keeps its parent's spell, an exec ends it.
 */
#define IDLE_RATIO 16
#define IDLE_MIN 4096
#define IDLE_EXP_MAX 4
__thread unsigned int tls_idle_left __attribute__((tls_model("initial-exec")));

/* The window's counters now, from the thread's stat block. */
static void rent_counts(const struct stat_block *b, uint64_t *a, uint64_t *m)
{
	*a = b->c[DCACHE_STAT_HIT] + b->c[DCACHE_STAT_NEG_HIT];
	*m = b->c[DCACHE_STAT_MISS] + b->c[DCACHE_STAT_PASS_RENT];
}

int dcache_idle_pass(void)
{
	struct stat_block *b;

	if (caa_likely(!tls_idle_left))
		return 0;
	tls_pass_why = PASS_WHY_RENT;
	dcache_stat_inc(DCACHE_STAT_PASS); /* and DCACHE_STAT_PASS_RENT */
	b = tls_stats;
	if (--tls_idle_left || !b)
		return 1;
	/* The spell's last lookup: a fresh window follows, without its
	 * pass-throughs. */
	rent_counts(b, &tls_rent_a0, &tls_rent_m0);
	tls_rent_n = 0;
	tls_idle_ended = true; /* rent_now_locked(): the rent given, again */
	return 1;
}

static unsigned int rent_now_locked(void)
{
	struct stat_block *b = tls_stats;
	unsigned long r;

	if (!dc_dir_rent)
		return 0;
	if (tls_idle_ended) {
		tls_idle_ended = false;
		dc_rent_shift = 0; /* "Idle spells": a fresh look */
	}
	if (++tls_rent_n >= RENT_WINDOW && b) {
		uint64_t a, m, da, dm;

		rent_counts(b, &a, &m);
		da = a - tls_rent_a0;
		dm = m - tls_rent_m0;
		if (a < tls_rent_a0 || m < tls_rent_m0)
			; /* counters reset (a fork child's): a new window only */
		else {
			if (da < 2 * dm && dc_rent_shift < RENT_SHIFT_MAX)
				dc_rent_shift++;
			else if (da > 8 * dm && dc_rent_shift > 0)
				dc_rent_shift--;
			/* "Idle spells" */
			if (dc_rent_shift == RENT_SHIFT_MAX && da * IDLE_RATIO < dm) {
				tls_idle_left = IDLE_MIN << tls_idle_exp;
				if (tls_idle_exp < IDLE_EXP_MAX)
					tls_idle_exp++;
			} else if (da > 2 * dm) {
				tls_idle_exp = 0;
			}
		}
		tls_rent_a0 = a;
		tls_rent_m0 = m;
		tls_rent_n = 0;
	}
	r = (unsigned long)dc_dir_rent << dc_rent_shift;
	return r > 65535 ? 65535 : (unsigned int)r;
}
#define MAX_EXCLUDES DCACHE_MAX_EXCLUDES
static char *dc_exclude[MAX_EXCLUDES];
static size_t dc_exclude_len[MAX_EXCLUDES];
static unsigned int dc_nexclude DCACHE_START_DATA;

/*
 * Can d keep st as its attributes?  Every field the kernel fills is kept at
 * full width where it can be large and narrower where the kernel's values
 * fit; a stat that does not fit is not kept (the kernel answers then), so
 * attr_unpack() always rebuilds the exact struct stat.  st_rdev: attributes
 * are kept for directories, regular files and symlinks only (devices are
 * D_NOATTR), whose st_rdev is 0.  st_dev is d's own (a mount point is a
 * dentry of its own).
 */
static bool attr_fits(const struct dentry *d, const struct stat *st)
{
	return st->st_dev == LOAD_RELAXED(d->dev) && st->st_rdev == 0 &&
	       st->st_mode <= USHRT_MAX && st->st_nlink <= UINT32_MAX && st->st_blocks >= 0 &&
	       st->st_blocks <= UINT32_MAX && st->st_blksize >= 0 &&
	       st->st_blksize <= INT32_MAX && time_fits(&st->st_atim) &&
	       time_fits(&st->st_mtim) && time_fits(&st->st_ctim);
}

/* Write st (attr_fits()) into d's attributes: before d is hashed, or in a
 * d_seq write section, under dcache_mutex (see struct dentry). */
static void attr_store(struct dentry *d, const struct stat *st)
{
	STORE_RELAXED(d->a_mode, (unsigned short)st->st_mode);
	STORE_RELAXED(d->a_nlink, (uint32_t)st->st_nlink);
	STORE_RELAXED(d->a_uid, (uint32_t)st->st_uid);
	STORE_RELAXED(d->a_gid, (uint32_t)st->st_gid);
	STORE_RELAXED(d->a_blksize, (int32_t)st->st_blksize);
	STORE_RELAXED(d->a_ino, (uint64_t)st->st_ino);
	STORE_RELAXED(d->a_size, (int64_t)st->st_size);
	STORE_RELAXED(d->a_blocks, (uint32_t)st->st_blocks);
	STORE_RELAXED(d->a_atime, time_pack(&st->st_atim));
	STORE_RELAXED(d->a_mtime, time_pack(&st->st_mtim));
	STORE_RELAXED(d->a_ctime, time_pack(&st->st_ctim));
}

static unsigned char type_of(mode_t mode)
{
	if (S_ISDIR(mode))
		return D_DIR;
	if (S_ISREG(mode))
		return D_REG;
	if (S_ISLNK(mode))
		return D_LNK;
	return D_OTHER;
}

/*
 * Scratch directories
 * ===================
 * Any inotify watch of a directory that asks for an event its entries can
 * raise (IN_ATTRIB, IN_MODIFY, IN_CLOSE_WRITE...) makes the kernel walk every
 * child dentry of it, negative ones included, to mark them
 * (fsnotify_set_children_dentry_flags), and again to unmark them when the
 * watch goes.  /tmp collects a negative dentry per temporary file a compiler
 * ever made: with 522,000 of them, adding its watch took 42 ms and closing
 * the instance 6-20 ms, once per session or per process; names only (create,
 * delete, move, and the directory's own deletion or move) took 6 us.
 * A directory that is sticky and writable by all is such a scratch place; it
 * is watched for names only (dir_state.names_only), and then:
 *  - its entries that are not directories keep no attributes and no access
 *    facts (D_NOATTR at hashing): no event would say they changed;
 *  - its subdirectories keep their attributes, search and access facts only
 *    through a watch of their own (IN_ATTRIB on itself), made before the
 *    kernel is asked, as the root always did (dir_attr_watched_locked());
 *  - its own attributes still change with IN_ATTRIB on its parent's watch;
 *    the session's facts keyed by its own watch (attributes, search) are
 *    neither taken nor offered, and its watch is not offered to the session
 *    (another process could not tell it is names-only).
 * Masks only grow: watch_dir() adds a names-only mask with IN_MASK_ADD, a
 * full one without, so a process that asked for a full watch has one even
 * if another process asked for names only; one that asked for names only
 * may have more than it relies on.  Both answers are safe, so the mode that
 * decides (D_SCRATCH, from the lstat that hashed the directory; asked again
 * for D_MODEQ) need not be fresh.  Not seen in a scratch directory (doc/
 * coherence.md): a write through a descriptor opened under a name there that
 * was removed since, to an inode with another name elsewhere.
 */
DCACHE_START_TEXT void dcache_set_scratch(int on)
{
	dc_scratch = on != 0;
}

static bool scratch_mode(mode_t mode)
{
	return S_ISDIR(mode) && (mode & S_ISVTX) && (mode & S_IWOTH);
}

/* Is directory d a scratch directory (above)?  Under dcache_mutex, before
 * its first watch (so before any attributes of its own: MISS_ATTR watches
 * first); may ask the kernel (ops context) when d was hashed without its
 * mode. */
static bool scratch_locked(const struct dentry *d, const char *dpath)
{
	struct stat st;

	if (!dc_scratch)
		return false;
	if (d->flags & D_SCRATCH)
		return true;
	if (!(d->flags & D_MODEQ))
		return false;
	return dc_ops->kernel_lstat(dpath, &st) == 0 && scratch_mode(st.st_mode);
}

/* Is d's parent watched in full, so that IN_ATTRIB about d reaches us through
 * it?  Under dcache_mutex.  Not for the root (its own parent). */
static bool parent_watched_in_full_locked(const struct dentry *d)
{
	const struct dentry *p = d->parent;

	return p && p != d && d_wd(p) >= 0 && !p->dir->names_only;
}

/* Do changes to directory d's own attributes (chmod, chown) reach us as
 * events: through its parent's watch, or else through a full watch of its
 * own?  Under dcache_mutex. */
static bool dir_attr_watched_locked(const struct dentry *d)
{
	return parent_watched_in_full_locked(d) || (d_wd(d) >= 0 && !d->dir->names_only);
}

/* Make sure directory d is watched.  Under dcache_mutex and rcu_read_lock().
 * Returns false (and marks d D_NOCACHE) if it cannot be; false also, marking
 * nothing, while `rent` (a lookup of a name in d) and d is rented ("Directory
 * rent").  In a session, the watch of a name another process watched comes
 * from the shared arena (dcache_arena.c, ENT_WATCH; ops->shared_watch); a
 * watch this process adds is offered there, with the parent's ticket taken
 * before watch_dir() binds the name (doc/session.md). */
static bool ensure_watch_locked(struct dentry *d, const char *dpath, bool rent)
{
	struct dentry *p = d->parent;
	struct dcache_listing ticket;
	bool offer = false, names_only;
	int wd, pwd;

	if (d_wd(d) >= 0)
		return true;
	if ((d->flags & D_NOCACHE) || d->type != D_DIR)
		return false;
	if (!d->dir) {
		struct dir_state *ds = calloc(1, sizeof(*ds));

		if (!ds)
			return false;
		ds->wd = -1;
		CDS_INIT_LIST_HEAD(&ds->children);
		dc_bytes += sizeof(*ds); /* d_bytes(d) counts it from now on */
		STORE_RELEASE(d->dir, ds);
	}
	/* "Directory rent": pass through, buy later (before the session's
	 * watch is looked for: a shared watch is a purchase too). */
	if (rent && d->dir->rent < rent_now_locked() && !(d->flags & D_TTL)) {
		d->dir->rent++;
		tls_pass_why = PASS_WHY_RENT;
		return false;
	}
	if (p && p != d && d->namelen && !(d->flags & D_TTL) && !(p->flags & D_DEAD) &&
	    (pwd = d_wd(p)) >= 0 && dc_ops->shared_watch && dc_ops->listing_ticket &&
	    dc_ops->listing_ticket(pwd, &ticket) == 1) {
		wd = dc_ops->shared_watch(&ticket, d->name, d->namelen, d->dev, d->ino);
		if (wd >= 0) {
			names_only = false; /* only full watches are offered */
			goto watched;
		}
		offer = ticket.can_put;
	}
	names_only = scratch_locked(d, dpath);
	wd = dc_ops->watch_dir(dpath, names_only);
	if (wd == -EAGAIN)
		return false; /* transient (no thread, instance being replaced): retry later */
	if (wd < 0) {
		/* No watch, no coherence: nothing below d is cached.  A later
		 * event on d's parent recreates d and tries again.  A watch
		 * limit (the kernel's, or the budget of invalidate/) is told
		 * apart for the statistics. */
		bool limit = wd == -ENOSPC || wd == -EMFILE;

		d_write_begin(d);
		STORE_RELAXED(d->flags, d->flags | D_NOCACHE | (limit ? D_NOWATCH : 0));
		d_write_end(d);
		tls_pass_why = limit ? PASS_WHY_WATCH : PASS_WHY_FS;
		return false;
	}
	if (offer && !names_only && dc_ops->shared_watch_put)
		dc_ops->shared_watch_put(&ticket, d->name, d->namelen, wd, d->dev, d->ino);
watched:
	d->dir->names_only = names_only;
	d->dir->wd = wd;
	dc_wd_map_add_locked(wd, d);
	return true;
}

/* Is d (hashed, alive) still what we sampled? */
static bool unchanged_locked(struct dentry *d, unsigned int seq)
{
	return !(d->flags & D_DEAD) && d->seq == seq;
}

/*
 * Git's racy-timestamp rule: a non-directory whose mtime or ctime is within
 * dc_racy_ns of now (or in the future) may still be being written, possibly
 * through a shared mapping that produces no inotify event: its attributes
 * are answered from the kernel, not kept.  Its name is still cached.
 */
static bool attrs_racy(const struct stat *st)
{
	struct timespec now;
	long long t;

	if (dc_racy_ns <= 0 || S_ISDIR(st->st_mode))
		return false;
	clock_gettime(CLOCK_REALTIME, &now);
	t = (long long)now.tv_sec * 1000000000LL + now.tv_nsec - dc_racy_ns;
	return (long long)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec >= t ||
	       (long long)st->st_ctim.tv_sec * 1000000000LL + st->st_ctim.tv_nsec >= t;
}

/* Is canonical directory path `dir` at or below an excluded prefix? */
static bool excluded(const char *dir, size_t len)
{
	for (unsigned int i = 0; i < dc_nexclude; i++) {
		size_t l = dc_exclude_len[i];

		if (len >= l && memcmp(dir, dc_exclude[i], l) == 0 &&
		    (len == l || dir[l] == '/' || l == 1))
			return true;
	}
	return false;
}

/* The names of one listing of directory p, one record each (NB_REC). */
struct name_buf {
	const struct dentry *p;
	char *buf;
	size_t len, cap, count;
};

/* A record: the name's hash in p (name_hash(), unaligned: read it with
 * nb_hash()), the getdents64 type byte (DT_UNKNOWN if not given), then the
 * name and its NUL; NB_REC(len) bytes.  The hash is computed once, as the
 * listing arrives, for the checks and the insertions of complete_dir_rcu(). */
#define NB_HASH 0
#define NB_TYPE sizeof(unsigned long)
#define NB_NAME (NB_TYPE + 1)
#define NB_REC(len) (NB_NAME + (len) + 1)

static unsigned long nb_hash(const char *rec)
{
	unsigned long h;

	memcpy(&h, rec + NB_HASH, sizeof(h));
	return h;
}

static int name_buf_add_typed(void *arg, const char *name, size_t len, unsigned char type)
{
	struct name_buf *nb = arg;
	unsigned long h = name_hash(nb->p, name, len);

	if (nb->len + NB_REC(len) > nb->cap) {
		size_t cap = nb->cap ? nb->cap * 2 : 4096;
		char *b;

		while (cap < nb->len + NB_REC(len))
			cap *= 2;
		b = realloc(nb->buf, cap);
		if (!b)
			return -ENOMEM;
		nb->buf = b;
		nb->cap = cap;
	}
	memcpy(nb->buf + nb->len + NB_HASH, &h, sizeof(h));
	nb->buf[nb->len + NB_TYPE] = (char)type;
	memcpy(nb->buf + nb->len + NB_NAME, name, len);
	nb->buf[nb->len + NB_NAME + len] = '\0';
	nb->len += NB_REC(len);
	nb->count++;
	return 0;
}

static int name_buf_add(void *arg, const char *name, size_t len)
{
	return name_buf_add_typed(arg, name, len, DT_UNKNOWN);
}

/* What a listed name is hashed as: a directory or regular file when the
 * listing op vouched for its type (not a mount point), else a placeholder. */
static unsigned char listed_type(unsigned char dt)
{
	return dt == DT_DIR ? D_DIR : dt == DT_REG ? D_REG : D_UNK;
}

/* p's listing as a struct dir_listing (dcache_int.h), or NULL (no memory,
 * a name too long).  No lock needed: nothing shared is read or written. */
static struct dir_listing *listing_build(const struct name_buf *nb, uint64_t t0)
{
	size_t slots = 8, bytes, len = 0, recs = 0;
	struct dir_listing *l;
	unsigned char *r;

	while (slots < 2 * nb->count)
		slots *= 2;
	for (size_t off = 0; off < nb->len; off += NB_REC(len)) {
		len = strlen(nb->buf + off + NB_NAME);
		if (len > NAME_MAX)
			return NULL; /* not a name this kernel lists */
		recs += LISTING_REC_NAME + len;
	}
	if (slots > UINT32_MAX / 2 || recs >= UINT32_MAX)
		return NULL;
	bytes = sizeof(*l) + slots * sizeof(l->slot[0]) + recs;
	l = calloc(1, bytes);
	if (!l)
		return NULL;
	l->bytes = bytes;
	l->t0 = t0;
	l->mask = (uint32_t)(slots - 1);
	l->count = (uint32_t)nb->count;
	r = (unsigned char *)&l->slot[slots];
	recs = 0;
	for (size_t off = 0; off < nb->len; off += NB_REC(len)) {
		const char *nm = nb->buf + off + NB_NAME;
		unsigned long h = nb_hash(nb->buf + off);
		uint32_t i = (uint32_t)h & l->mask;

		len = strlen(nm);
		if (listing_find(l, h, nm, len))
			continue; /* listed twice (a directory changed mid-read): once */
		r[recs + LISTING_REC_TYPE] = listed_type((unsigned char)nb->buf[off + NB_TYPE]);
		r[recs + LISTING_REC_LEN] = (unsigned char)len;
		memcpy(r + recs + LISTING_REC_NAME, nm, len);
		while (l->slot[i])
			i = (i + 1) & l->mask;
		l->slot[i] = (uint64_t)(uint32_t)((uint64_t)h >> 32) << 32 | (recs + 1);
		recs += LISTING_REC_NAME + len;
	}
	return l;
}

/*
 * Hash the listed name `name` of complete directory p as the listing says
 * it is (MISS_LISTED): a D_DIR or D_REG whose type the listing op vouched
 * for, else a D_UNK placeholder.  Under dcache_mutex and rcu_read_lock().
 * Returns false if p is no longer complete, or the name no longer listed
 * (the walk starts over and sees why).  A name already hashed: true.  No
 * d_seq bump: a listed name was never absent (dc_d_hash_locked()).
 */
static bool listed_hash_locked(struct dentry *p, const char *name, size_t len)
{
	unsigned long h = name_hash(p, name, len);
	const struct dir_listing *l;
	const unsigned char *rec;
	unsigned char type;
	struct dentry *d;

	if ((p->flags & (D_DEAD | D_COMPLETE)) != D_COMPLETE || !(l = p->dir->listing) ||
	    !(rec = listing_find(l, h, name, len)))
		return false;
	if (dir_bloom_maybe(p->dir, h) && dc_d_lookup_hash_rcu(dc_table, p, name, len, h))
		return true;
	type = rec[LISTING_REC_TYPE];
	d = dc_d_alloc(p, name, len, type, NULL, 0);
	if (!d)
		return false;
	d->flags = p->flags & D_TTL;
	d->expires = l->t0 + dc_ttl_ns;
	/* Not a mount point (the op checked): p's filesystem. */
	if (type != D_UNK)
		d->dev = p->dev;
	if (type == D_DIR)
		d->flags |= D_MODEQ; /* scratch or not: asked if watched */
	if (type == D_REG) /* its attributes are asked later, or never */
		d->flags |= p->dir->names_only ? D_NOATTR : D_LISTED;
	dc_d_hash_locked(d);
	return true;
}

/*
 * From the session's listing.  A directory is listed after dc_complete_probes
 * absent names (or COMPLETE_POS_PER_NEG times as many present ones), each
 * asked of the kernel first: a later process of a session, whose
 * directories the session has listed already, paid those lstats (and their
 * offers) in every directory it searched, two for each -I directory of a
 * compiler (`foo.h.gch`, `foo.h`), 100-235 a cc1 of the generated project at
 * ~6 us each here, besides a completion it would make anyway.  So at a
 * directory's first name that neither this process nor the session knows
 * (shared_name_get found nothing), where the session holds a valid listing
 * of at most EARLY_MAX names, the directory is completed from it at once
 * (complete_dir_rcu(), early): one copy of the listing instead of the
 * probes.  Tried once per directory (dir_state.early_tried): a listing the
 * session does not have costs one arena look-up, never a getdents64
 * (dcache_listing.only_shared).  Larger listings keep the probes: a process
 * that asks one name of /usr/lib would copy thousands.  Only searchable
 * directories (use_shared: the walk still checks search permission on the
 * completed directory, MISS_SEARCH) and not scratch ones (names_only: their
 * listings change all the time).  Completing earlier changes no answer: the
 * listing is checked as at any completion (its generation, the names still
 * queued as absent).
 */
#define EARLY_MAX 128u

/*
 * Make directory p complete: read its listing and keep it (struct
 * dir_listing), then set D_COMPLETE, so that any name neither hashed nor
 * listed is answered ENOENT without the kernel; a listed name is hashed at
 * its first lookup (listed_hash_locked()).  Under rcu_read_lock(),
 * not under the mutex.  As for every insertion, p is watched and p->dir_gen
 * sampled before the kernel is asked; an event on p meanwhile (create, delete,
 * move) changes dir_gen and the listing is thrown away.  early: only from
 * the session's listing, of at most EARLY_MAX names, once per directory
 * ("From the session's listing"); a listing it cannot have leaves p as it
 * was.  Returns whether p was made complete.
 */
static bool complete_dir_rcu(struct dentry *p, const char *dpath, bool early)
{
	struct name_buf nb = { .p = p };
	struct dir_listing *l;
	struct dcache_listing ticket;
	unsigned int gen;
	uint64_t t0;
	bool shared, done = false;
	long r;

	pthread_mutex_lock(&dcache_mutex);
	if ((p->flags & (D_DEAD | D_COMPLETE | D_NOCACHE)) || d_wd(p) < 0 || p->dir->no_complete ||
	    (early && p->dir->early_tried)) {
		pthread_mutex_unlock(&dcache_mutex);
		return false;
	}
	if ((p->flags & D_TTL) && !dc_neg_ttl_ns) {
		pthread_mutex_unlock(&dcache_mutex);
		return false; /* no absent name is cached there */
	}
	if (early)
		p->dir->early_tried = true;
	gen = p->dir->dir_gen;
	/* A session's shared listing (dcache_arena.c): p is alive and watched
	 * under the mutex, so its watch id is the current instance's.  Not
	 * for TTL filesystems: a shared listing's age is unknown. */
	shared = !(p->flags & D_TTL) && dc_ops->listing_ticket &&
		 dc_ops->listing_ticket(d_wd(p), &ticket) == 1;
	pthread_mutex_unlock(&dcache_mutex);
	if (early && (!shared || !dc_ops->kernel_listdir_typed))
		return false;
	if (shared)
		ticket.only_shared = early;

	t0 = now_coarse();
	if (dc_ops->kernel_listdir_typed)
		r = dc_ops->kernel_listdir_typed(dpath, shared ? &ticket : NULL,
						 early && EARLY_MAX < dc_complete_max ? EARLY_MAX
										       : dc_complete_max,
						 name_buf_add_typed, &nb);
	else
		r = dc_ops->kernel_listdir(dpath, dc_complete_max, name_buf_add, &nb);
	l = r >= 0 ? listing_build(&nb, t0) : NULL;
	pthread_mutex_lock(&dcache_mutex);
	if (early && r < 0) {
		/* none shared, or too big to take early: the probes decide */
	} else if (r == -E2BIG || r == -EOPNOTSUPP) {
		p->dir->no_complete = true; /* too big to list, or names fold case */
	} else if (l && !(p->flags & (D_DEAD | D_COMPLETE)) && p->dir->dir_gen == gen &&
		   dc_bytes + l->bytes <= dc_max_bytes / 2) {
		bool conflict = false;
		size_t len = 0;

		/* A name listed but cached as absent: its create event is still
		 * queued.  Leave completion to a later probe.  A name whose two
		 * bloom bits are not both set has no hashed child (struct
		 * dir_state.bloom, exact under the mutex): in a directory listed
		 * soon after its first probes, most names need no table lookup. */
		for (size_t off = 0; off < nb.len; off += NB_REC(len)) {
			const char *nm = nb.buf + off + NB_NAME;
			unsigned long h = nb_hash(nb.buf + off);
			struct dentry *c;

			len = strlen(nm);
			c = dir_bloom_maybe(p->dir, h) ? dc_d_lookup_hash_rcu(dc_table, p, nm, len, h)
						       : NULL;
			if (c && c->type == D_NEG) {
				conflict = true;
				break;
			}
		}
		if (!conflict) {
			/* The names are hashed at their first lookups
			 * (MISS_LISTED, listed_hash_locked()), not here; their
			 * bloom bits are set now, so that a name whose bits are
			 * not both set is neither hashed nor listed: the walk
			 * answers it ENOENT without looking at the listing. */
			for (size_t off = 0; off < nb.len; off += NB_REC(len)) {
				len = strlen(nb.buf + off + NB_NAME);
				dir_bloom_add(p->dir, nb_hash(nb.buf + off));
			}
			STORE_RELAXED(p->dir->complete_until,
				      t0 + (dc_neg_ttl_ns < dc_ttl_ns ? dc_neg_ttl_ns : dc_ttl_ns));
			STORE_RELEASE(p->dir->listing, l);
			dc_bytes += l->bytes;
			l = NULL;
			/* Release: the listing is visible to whoever sees it. */
			STORE_RELEASE(p->flags, p->flags | D_COMPLETE);
			if (p->dir->completions < USHRT_MAX)
				p->dir->completions++;
			done = true;
		}
		p->dir->neg_probes = 0;
		p->dir->pos_probes = 0;
		dc_note_growth_locked();
		if (dc_bytes > dc_max_bytes)
			dc_evict_locked();
	}
	pthread_mutex_unlock(&dcache_mutex);
	free(l); /* not attached */
	free(nb.buf);
	return done;
}

/*
 * Fill the gap described by m.  Under rcu_read_lock(), not under the mutex.
 * Returns 0 if something was learned (walk again), DCACHE_PASS, or a positive
 * errno that the kernel just answered for the very question asked (a failed
 * access check: replayed once, never cached).
 */
int dc_populate_rcu(struct miss *m)
{
	char path[PATH_MAX];
	struct stat st;
	long n;
	int r;

	if (m->kind == MISS_CWD) {
		unsigned long gen;
		struct dentry *d;

		pthread_mutex_lock(&dcache_mutex);
		gen = dc_cwd_gen;
		pthread_mutex_unlock(&dcache_mutex);
		if (dc_ops->kernel_getcwd(path, sizeof(path)) != 0 || path[0] != '/')
			return DCACHE_PASS;
		/* Resolve the (canonical) cwd; recursion is one level deep
		 * because the path is absolute. */
		for (int i = 0; i < MAX_WALK_ATTEMPTS; i++) {
			struct miss m2;
			struct stat dummy;
			struct dentry *res = NULL;

			MISS_INIT(m2);
			r = dc_walk_rcu(path, SIZE_MAX, DCACHE_Q_FOLLOW | DCACHE_Q_DIRECTORY, 0, &dummy,
				     &m2);
			if (r == WALK_RETRY)
				continue;
			if (r == WALK_MISS) {
				if (dc_populate_rcu(&m2) != 0)
					return DCACHE_PASS;
				continue;
			}
			if (r != 0)
				return DCACHE_PASS;
			/* Find the dentry: the canonical path has no symlinks,
			 * so a plain descent from the root reaches it. */
			d = LOAD_ACQUIRE(dc_root);
			for (const char *p = skip_slashes(path); *p && d; p = skip_slashes(p)) {
				const char *e = strchrnul(p, '/');

				d = dc_d_lookup_rcu(LOAD_ACQUIRE(dc_table), d, p, (size_t)(e - p));
				p = e;
			}
			res = d;
			if (!res || res->type != D_DIR)
				return DCACHE_PASS;
			pthread_mutex_lock(&dcache_mutex);
			if (gen == dc_cwd_gen && !(res->flags & D_DEAD)) {
				struct cwd_ref *c = malloc(sizeof(*c)), *old = dc_cwd;

				if (c) {
					c->d = res;
					STORE_RELEASE(dc_cwd, c);
					if (old)
						call_rcu(&old->rcu, dc_free_cwd_rcu);
				}
			}
			pthread_mutex_unlock(&dcache_mutex);
			return 0;
		}
		return DCACHE_PASS;
	}

	if (m->kind == MISS_LISTED) {
		pthread_mutex_lock(&dcache_mutex);
		(void)listed_hash_locked(m->d, m->name, m->len);
		pthread_mutex_unlock(&dcache_mutex);
		return 0; /* walk again: it finds the name, or that p changed */
	}
	n = dc_d_path_rcu(m->d, path, sizeof(path));
	if (n == -EAGAIN)
		return 0; /* walk again; it will see the change */
	if (n < 0)
		return DCACHE_PASS;

	switch (m->kind) {
	case MISS_CHILD: {
		struct dentry *p = m->d, *d;
		unsigned int gen;
		char target[PATH_MAX];
		long tlen = 0;
		unsigned char type;
		unsigned int flags = 0;
		struct dentry *old;
		size_t dirlen;
		uint64_t t0;
		unsigned long agen;
		bool complete = false, kept_attr = false, shared = false, from_shared = false;
		bool use_shared, searched, search_shared = false, p_names;
		struct dcache_listing ticket;

		if ((size_t)n + 1 + m->len >= sizeof(path))
			return DCACHE_PASS;
		pthread_mutex_lock(&dcache_mutex);
		if (dc_nexclude && !(p->flags & D_DEAD) && excluded(path, (size_t)n)) {
			d_write_begin(p);
			STORE_RELAXED(p->flags, p->flags | D_NOCACHE); /* the user said so */
			d_write_end(p);
		}
		if ((p->flags & D_DEAD) || !ensure_watch_locked(p, path, true)) {
			pthread_mutex_unlock(&dcache_mutex);
			return DCACHE_PASS;
		}
		gen = p->dir->dir_gen; /* watched: it has one */
		agen = dc_attr_gen_for(D_REG); /* attributes are kept for files only */
		p_names = p->dir->names_only; /* fixed with its watch */
		/* What the name is may come from the session (dcache_arena.c,
		 * ENT_NAME): its type, device and inode, a symlink's target; no
		 * attributes.  Not on TTL filesystems. */
		if (!(p->flags & D_TTL) && dc_ops->listing_ticket && dc_ops->shared_name_get)
			shared = dc_ops->listing_ticket(d_wd(p), &ticket) == 1;
		searched = (p->flags & D_SEARCHED) != 0;
		pthread_mutex_unlock(&dcache_mutex);
		/* ... but only once we may search p: this lstat is also what
		 * proves that (dcache_walk.c, may_lookup), and a shared answer
		 * would answer ENOENT where the kernel says EACCES (difftest,
		 * seed 2, after seteuid(nobody)); or the session knows that the
		 * kernel let a process with our credentials search p under its
		 * generation now (ENT_SEARCH). */
		if (shared && !searched && !m->relist && !p_names && dc_ops->shared_search_get &&
		    dc_ops->shared_search_get(&ticket) == 0)
			searched = search_shared = true;
		use_shared = shared && searched && !m->relist;

		dirlen = (size_t)n;
		t0 = now_coarse();
		if (n > 1)
			path[n++] = '/';
		memcpy(path + n, m->name, m->len);
		path[n + (long)m->len] = '\0';
		if (use_shared) {
			unsigned int stype;
			uint64_t sdev, sino;
			size_t stl;

			/* Only names on p's own filesystem are shared (no mount
			 * point: its verdict is fs_cacheable()'s). */
			if (dc_ops->shared_name_get(&ticket, m->name, m->len, &stype, &sdev, &sino, target,
						    sizeof(target) - 1, &stl) == 0 &&
			    (stype == DT_UNKNOWN || sdev == LOAD_RELAXED(p->dev))) {
				from_shared = true;
				memset(&st, 0, sizeof(st));
				r = stype == DT_UNKNOWN ? -ENOENT : 0;
				st.st_mode = stype == DT_DIR ? S_IFDIR : stype == DT_REG ? S_IFREG : S_IFLNK;
				st.st_dev = (dev_t)sdev;
				st.st_ino = (ino_t)sino;
				st.st_nlink = 1; /* not known: D_LISTED below */
				tlen = (long)stl;
			}
		}
		/* "From the session's listing": instead of the kernel's lstat,
		 * the whole directory, then walk again. */
		if (use_shared && !from_shared && !p_names && dc_complete_probes) {
			char c = path[dirlen];
			bool done;

			path[dirlen] = '\0';
			done = complete_dir_rcu(p, path, true);
			path[dirlen] = c;
			if (done) {
				/* As below: the session's search answer holds for p
				 * (else the walk would ask it again, MISS_SEARCH). */
				pthread_mutex_lock(&dcache_mutex);
				if (search_shared && !(p->flags & (D_DEAD | D_SEARCHED)) &&
				    p->dir->dir_gen == gen && dir_attr_watched_locked(p))
					STORE_RELAXED(p->flags, p->flags | D_SEARCHED);
				pthread_mutex_unlock(&dcache_mutex);
				return 0;
			}
		}
		if (!from_shared)
			r = dc_ops->kernel_lstat(path, &st);
		if (r == 0 && st.st_dev > UINT32_MAX)
			return DCACHE_PASS; /* no 32-bit encoding: not cached (struct dentry) */
		if (r == 0) {
			type = type_of(st.st_mode);
			if (type == D_LNK && !from_shared) {
				tlen = dc_ops->kernel_readlink(path, target, sizeof(target));
				if (tlen <= 0 || (size_t)tlen >= sizeof(target))
					return DCACHE_PASS;
			}
			if (type != D_DIR && st.st_nlink > 1)
				flags |= D_NOATTR; /* other names change it without an event here */
			if (type == D_OTHER)
				flags |= D_NOATTR; /* a FIFO's times move with I/O that raises no event */
			if (from_shared && type == D_REG)
				flags |= D_LISTED; /* its st_nlink is not known yet */
			if (type == D_DIR)
				flags |= from_shared ? D_MODEQ : scratch_mode(st.st_mode) ? D_SCRATCH : 0;
			if (type != D_DIR && p_names)
				flags = (flags | D_NOATTR) & ~D_LISTED; /* "Scratch directories" */
			if (st.st_dev != LOAD_RELAXED(p->dev)) {
				int v = dc_ops->fs_cacheable(path, st.st_dev);

				if (v == 0)
					flags |= D_NOCACHE; /* a mount point of a filesystem we cannot watch */
				else if (v == 2)
					flags |= D_TTL; /* a mount point of a TTL filesystem */
			} else {
				flags |= d_flags(p) & D_TTL; /* outside the mutex: atomic load */
			}
		} else if (r == -ENOENT) {
			if (dc_no_negative || ((d_flags(p) & D_TTL) && !dc_neg_ttl_ns))
				return ENOENT; /* the kernel's answer, not kept */
			type = D_NEG;
			flags |= d_flags(p) & D_TTL;
		} else {
			return DCACHE_PASS; /* EACCES, ENOTDIR (p changed), EIO...: the kernel answers */
		}
		/* The kernel's answer offered to the session: absent, or a
		 * directory, file or symlink on p's filesystem. */
		/* The kernel answered (or said ENOENT): we may search p. */
		if (shared && !from_shared && !searched && !p_names && ticket.can_put &&
		    dc_ops->shared_search_put)
			dc_ops->shared_search_put(&ticket);
		if (shared && !from_shared && !m->relist && ticket.can_put && dc_ops->shared_name_put) {
			if (type == D_NEG)
				dc_ops->shared_name_put(&ticket, m->name, m->len, DT_UNKNOWN, 0, 0, NULL, 0);
			else if ((type == D_DIR || type == D_REG || type == D_LNK) &&
				 st.st_dev == (dev_t)LOAD_RELAXED(p->dev))
				dc_ops->shared_name_put(&ticket, m->name, m->len,
							type == D_DIR ? DT_DIR : type == D_REG ? DT_REG : DT_LNK,
							st.st_dev, st.st_ino, type == D_LNK ? target : NULL,
							type == D_LNK ? (size_t)tlen : 0);
		}

		pthread_mutex_lock(&dcache_mutex);
		if ((p->flags & D_DEAD) || p->dir->dir_gen != gen) {
			pthread_mutex_unlock(&dcache_mutex);
			return DCACHE_PASS; /* an event raced with the kernel's answer */
		}
		if (!(p->flags & D_SEARCHED) && (!from_shared || search_shared) &&
		    dir_attr_watched_locked(p))
			STORE_RELAXED(p->flags, p->flags | D_SEARCHED);
		old = dc_d_lookup_rcu(dc_table, p, m->name, m->len);
		if (old && old->type != D_UNK && !(old->flags & D_LISTED))
			old = (struct dentry *)-1; /* already known: nothing to add */
		if (old != (struct dentry *)-1) {
			d = dc_d_alloc(p, m->name, m->len, type, type == D_LNK ? target : NULL, (size_t)tlen);
			if (d) {
				d->flags = flags;
				d->dev = type == D_NEG ? p->dev : (uint32_t)st.st_dev;
				if (type != D_NEG)
					d->ino = st.st_ino;
				/* TTLs count from before the kernel was asked (t0). */
				d->expires = t0 + (type == D_NEG ? dc_neg_ttl_ns : dc_ttl_ns);
				if (from_shared) {
					/* no attributes: asked when wanted (MISS_ATTR) */
				} else if (type != D_DIR && type != D_NEG && !(flags & (D_NOATTR | D_NOCACHE)) &&
				    !attr_fits(d, &st)) {
					/* Asking again would get the same answer. */
					flags |= D_NOATTR;
					d->flags = flags;
				} else if (type != D_DIR && type != D_NEG &&
					   !(flags & (D_NOATTR | D_NOCACHE)) && !attrs_racy(&st) &&
					   agen == dc_attr_gen_for(D_REG)) {
					attr_store(d, &st); /* not hashed yet */
					d->flags |= D_ATTR;
					kept_attr = true;
				}
				/* The replacement is hashed before the placeholder
				 * goes, so the name never looks absent. */
				dc_d_hash_locked(d);
				if (old && !(old->flags & D_DEAD))
					dc_kill_one_locked(old);
			}
			struct dir_state *ps = p->dir;

			if (type == D_NEG && dc_complete_probes && !(p->flags & D_COMPLETE) &&
			    !ps->no_complete && ps->neg_probes < USHRT_MAX &&
			    ++ps->neg_probes >= dc_complete_probes << (ps->completions < 4 ? ps->completions : 4))
				complete = true;
			/* Many names looked up one by one (a header directory):
			 * listing it answers the rest, present ones with their
			 * type, at the cost of about COMPLETE_POS_PER_NEG lstats. */
			if (type != D_NEG && !old && dc_complete_probes && !(p->flags & D_COMPLETE) &&
			    !ps->no_complete && ps->pos_probes < USHRT_MAX &&
			    ++ps->pos_probes >= (COMPLETE_POS_PER_NEG * dc_complete_probes)
						       << (ps->completions < 4 ? ps->completions : 4))
				complete = true;
		}
		pthread_mutex_unlock(&dcache_mutex);
		if (complete && (dc_ops->kernel_listdir || dc_ops->kernel_listdir_typed)) {
			path[dirlen] = '\0';
			complete_dir_rcu(p, path, false);
		}
		/* The final object of a plain stat, found unchanged (dir_gen)
		 * when the reply was kept: the reply answers, as a second walk
		 * would (a symlink to follow, or an uncached mount point, walks). */
		if (m->answer && !(flags & D_NOCACHE) && (type != D_LNK || !m->follow)) {
			m->err = type == D_NEG ? ENOENT : m->want_dir && type != D_DIR ? ENOTDIR : 0;
			if (from_shared && !m->err)
				return 0; /* no attributes to answer with: walk again */
			m->st = st;
			m->pass_why = PASS_WHY_NONE;
			if (!m->err && type != D_DIR && !kept_attr) {
				/* As a second walk would count it: the kernel's answer. */
				if (flags & D_NOATTR)
					m->pass_why = PASS_WHY_ATTR;
				else if (attrs_racy(&st))
					m->pass_why = PASS_WHY_RACY;
				else
					return 0; /* (raced with another filler): walk again */
			}
			return POP_MISS_ANSWERED;
		}
		return 0;
	}
	case MISS_SEARCH: {
		struct dentry *d = m->d;
		unsigned int seq, pgen, dgen;
		struct dcache_listing ticket;
		bool shared = false, full;

		if ((size_t)n + 2 >= sizeof(path))
			return DCACHE_PASS;
		/* chmod of d reaches us as IN_ATTRIB on its parent's watch, which
		 * kills d; the root, which has no parent, and a directory in a
		 * scratch directory need a full watch of their own ("Scratch
		 * directories"), whose IN_ATTRIB on itself drops D_SEARCHED. */
		pthread_mutex_lock(&dcache_mutex);
		full = parent_watched_in_full_locked(d);
		if ((d->flags & D_DEAD) ||
		    (!full && (!ensure_watch_locked(d, path, false) || d->dir->names_only))) {
			pthread_mutex_unlock(&dcache_mutex);
			return DCACHE_PASS;
		}
		seq = d->seq;
		pgen = d_dir_gen(d->parent);
		dgen = d_dir_gen(d); /* bumped by every event of its own watch */
		/* The session may know that our credentials may search d
		 * (ENT_SEARCH, on d's own watch, unless that sees names only);
		 * not on TTL filesystems. */
		if (d_wd(d) >= 0 && !d->dir->names_only && !(d->flags & D_TTL) &&
		    dc_ops->listing_ticket && dc_ops->shared_search_get)
			shared = dc_ops->listing_ticket(d_wd(d), &ticket) == 1;
		pthread_mutex_unlock(&dcache_mutex);
		if (!shared || dc_ops->shared_search_get(&ticket) != 0) {
			strcpy(path + n, n > 1 ? "/." : ".");
			if (dc_ops->kernel_lstat(path, &st) != 0)
				return DCACHE_PASS; /* EACCES: not searchable; the kernel says so */
			if (shared && ticket.can_put && dc_ops->shared_search_put)
				dc_ops->shared_search_put(&ticket);
		}
		pthread_mutex_lock(&dcache_mutex);
		if (unchanged_locked(d, seq) && d_dir_gen(d->parent) == pgen &&
		    (full || d_dir_gen(d) == dgen))
			STORE_RELAXED(d->flags, d->flags | D_SEARCHED);
		pthread_mutex_unlock(&dcache_mutex);
		return 0;
	}
	case MISS_EXPIRED: {
		/* A D_TTL fact outlived its TTL: forget the name (and what lies
		 * below it) if the name expired, else only its attributes. */
		struct dentry *d = m->d;

		pthread_mutex_lock(&dcache_mutex);
		if (!(d->flags & D_DEAD) && d != dc_root) {
			if (now_coarse() >= d->expires)
				dc_kill_locked(d);
			else
				dc_drop_attr_locked(d, false);
		}
		pthread_mutex_unlock(&dcache_mutex);
		return 0;
	}
	case MISS_ATTR: {
		struct dentry *d = m->d;
		struct dcache_listing ticket;
		struct dcache_file_tok tok = { -1, 0, 0 };
		unsigned int seq, pgen, dgen;
		unsigned long agen;
		bool shared = false, shared_file = false, keep;

		/* A file's attributes change with events on its parent's watch; a
		 * directory's also with events on its own (an entry created in it
		 * moves its mtime/nlink, and dc_drop_attr_locked() has nothing to drop
		 * yet, so d_seq does not move): sample both generations. */
		pthread_mutex_lock(&dcache_mutex);
		if ((d->flags & D_DEAD) || (d->type == D_DIR && !ensure_watch_locked(d, path, false))) {
			pthread_mutex_unlock(&dcache_mutex);
			return DCACHE_PASS;
		}
		seq = d->seq;
		pgen = d_dir_gen(d->parent);
		dgen = d_attr_gen(d);
		agen = dc_attr_gen_for(d->type);
		/* In a scratch directory, no event may say they changed. */
		keep = d->type == D_DIR ? dir_attr_watched_locked(d) : parent_watched_in_full_locked(d);
		/* A directory's attributes may come from the session's shared
		 * ones (dcache_arena.c, ENT_ATTR), valid while its own watch saw
		 * no event (and sees more than names); not on TTL filesystems. */
		if (d->type == D_DIR && !d->dir->names_only && !(d->flags & D_TTL) &&
		    dc_ops->listing_ticket && dc_ops->shared_attr_get)
			shared = dc_ops->listing_ticket(d_wd(d), &ticket) == 1;
		/* A regular file's, from the session's (ENT_FILE, valid while
		 * its directory's watch and its own saw no event: dcache_arena.c
		 * A9), with its parent's ticket; only where we would keep them,
		 * and on its directory's filesystem (no mount point), as names. */
		else if (d->type == D_REG && keep && !(d->flags & D_TTL) &&
			 LOAD_RELAXED(d->dev) == LOAD_RELAXED(d->parent->dev) && dc_ops->listing_ticket &&
			 dc_ops->shared_file_get)
			shared_file = dc_ops->listing_ticket(d_wd(d->parent), &ticket) == 1;
		pthread_mutex_unlock(&dcache_mutex);
		if (shared && dc_ops->shared_attr_get(&ticket, &st) == 0 &&
		    st.st_dev == (dev_t)LOAD_RELAXED(d->dev) && (!d->ino || st.st_ino == d->ino)) {
			/* the session's answer, as fresh as the watcher's last cycle */
		} else if (shared_file &&
			   dc_ops->shared_file_get(&ticket, d->name, d->namelen, LOAD_RELAXED(d->dev),
						   d->ino, &st) == 0) {
			/* likewise */
		} else if (shared_file && ticket.can_put && dc_ops->shared_file_ask &&
			   (r = dc_ops->shared_file_ask(&ticket, path, d->name, d->namelen, &st, &tok)) >= 0) {
			if (r != 0 || type_of(st.st_mode) != d->type)
				return DCACHE_PASS; /* changed under us: an event is on its way */
		} else if (dc_ops->kernel_lstat(path, &st) != 0 || type_of(st.st_mode) != d->type) {
			return DCACHE_PASS; /* changed under us: an event is on its way */
		} else if (shared && dc_ops->shared_attr_put) {
			dc_ops->shared_attr_put(&ticket, &st);
		}
		if (attrs_racy(&st) && !(d->type != D_DIR && st.st_nlink > 1)) {
			/* The kernel's answer for the object the walk resolved: give
			 * it to this caller, keep nothing. */
			m->st = st;
			tls_pass_why = PASS_WHY_RACY;
			return POP_ANSWERED;
		}
		pthread_mutex_lock(&dcache_mutex);
		if (unchanged_locked(d, seq) && d_dir_gen(d->parent) == pgen && d_attr_gen(d) == dgen &&
		    agen == dc_attr_gen_for(d->type) && !(d->flags & D_ATTR)) {
			if (!keep || d->type == D_OTHER || (d->type != D_DIR && st.st_nlink > 1) ||
			    !attr_fits(d, &st)) {
				/* Unfit: asking again would get the same answer. */
				STORE_RELAXED(d->flags, (d->flags | D_NOATTR) & ~D_LISTED);
				m->pass_why = PASS_WHY_ATTR; /* not kept: counted as MISS_CHILD does */
			} else {
				if (d->flags & D_LISTED) /* st_nlink is 1: known now */
					STORE_RELAXED(d->flags, d->flags & ~D_LISTED);
				/* In place: readers copying the fields of an
				 * earlier set (dropped since) must see d change.
				 * Names resolve as before: the path index stays. */
				d_write_begin_attr(d);
				attr_store(d, &st);
				STORE_RELAXED(d->flags, d->flags | D_ATTR);
				d_write_end(d);
				/* Kept, so fit to share: one link, not racy,
				 * on d's device. */
				if ((tok.wd >= 0 || tok.name) && dc_ops->shared_file_put)
					dc_ops->shared_file_put(&ticket, d->name, d->namelen, &tok, &st);
			}
			if (m->answer) {
				/* Nothing moved between the walk and the kernel's
				 * reply: it is this stat's answer. */
				pthread_mutex_unlock(&dcache_mutex);
				m->st = st;
				m->err = 0;
				return POP_MISS_ANSWERED;
			}
		}
		pthread_mutex_unlock(&dcache_mutex);
		return 0;
	}
	case MISS_ACCESS: {
		struct dentry *d = m->d;
		unsigned int seq, pgen, dgen;
		unsigned long agen;
		int bit = m->amode;
		bool full;

		/* Permissions change with IN_ATTRIB, reported on the parent's watch
		 * too: only the root, and a directory in a scratch directory,
		 * need a full watch of their own for this; a file in a scratch
		 * directory keeps no access fact (D_NOATTR, not asked here). */
		pthread_mutex_lock(&dcache_mutex);
		full = parent_watched_in_full_locked(d);
		if ((d->flags & D_DEAD) ||
		    (!full && (d->type != D_DIR || !ensure_watch_locked(d, path, false) ||
			       d->dir->names_only))) {
			pthread_mutex_unlock(&dcache_mutex);
			return DCACHE_PASS;
		}
		seq = d->seq;
		pgen = d_dir_gen(d->parent);
		dgen = d_dir_gen(d);
		agen = dc_attr_gen_for(d->type);
		pthread_mutex_unlock(&dcache_mutex);
		r = dc_ops->kernel_access(path, bit & 7,
					  AT_SYMLINK_NOFOLLOW | ((bit & 8) ? AT_EACCESS : 0));
		if (r == -EACCES || r == -EROFS || r == -ETXTBSY)
			return -r; /* the kernel's answer about this object; not cached */
		if (r != 0)
			return DCACHE_PASS;
		pthread_mutex_lock(&dcache_mutex);
		if (unchanged_locked(d, seq) && d_dir_gen(d->parent) == pgen &&
		    agen == dc_attr_gen_for(d->type) && (full || d_dir_gen(d) == dgen))
			STORE_RELAXED(d->access_ok, d->access_ok | (1u << bit));
		pthread_mutex_unlock(&dcache_mutex);
		return 0;
	}
	case MISS_STATX: {
		/* As MISS_ATTR, for one request mask; published only beside the
		 * lstat attributes, so that whatever drops those drops this. */
		struct dentry *d = m->d;
		unsigned int seq, pgen, dgen;
		unsigned long agen;
		struct statx stx;
		struct dcache_sx *x;

		if (!dc_ops->kernel_statx)
			return DCACHE_PASS;
		pthread_mutex_lock(&dcache_mutex);
		if ((d->flags & D_DEAD) || !(d->flags & D_ATTR) || (d->type == D_DIR && d_wd(d) < 0)) {
			pthread_mutex_unlock(&dcache_mutex);
			return DCACHE_PASS;
		}
		seq = d->seq;
		pgen = d_dir_gen(d->parent);
		dgen = d_attr_gen(d);
		agen = dc_attr_gen_for(d->type);
		pthread_mutex_unlock(&dcache_mutex);
		if (dc_ops->kernel_statx(path, m->mask, &stx) != 0 ||
		    !(stx.stx_mask & STATX_TYPE) || type_of(stx.stx_mode) != d->type ||
		    (d->type != D_DIR && stx.stx_nlink > 1))
			return DCACHE_PASS; /* changed under us, or not cacheable */
		x = malloc(sizeof(*x));
		if (!x)
			return DCACHE_PASS;
		x->mask = m->mask;
		x->stx = stx;
		pthread_mutex_lock(&dcache_mutex);
		if (unchanged_locked(d, seq) && d_dir_gen(d->parent) == pgen && d_attr_gen(d) == dgen &&
		    agen == dc_attr_gen_for(d->type) && (d->flags & D_ATTR)) {
			dc_drop_sx_locked(d); /* another mask's answer */
			dc_bytes += sizeof(*x);
			STORE_RELEASE(*d_sx_slot(d), x); /* a directory's: watched, it has one */
			x = NULL;
		}
		pthread_mutex_unlock(&dcache_mutex);
		free(x);
		return 0;
	}
	default:
		return DCACHE_PASS;
	}
}

/* ---------------------------------------------------------------------- */
/* Policy */

DCACHE_START_TEXT int dcache_set_policy(long long racy_ns, int no_negative, const char *const *exclude,
		      unsigned int nexclude)
{
	if (nexclude > MAX_EXCLUDES)
		return -E2BIG;
	dc_racy_ns = racy_ns;
	dc_no_negative = no_negative;
	for (unsigned int i = 0; i < dc_nexclude; i++)
		free(dc_exclude[i]);
	dc_nexclude = 0;
	if (no_negative)
		dc_complete_probes = 0;
	for (unsigned int i = 0; i < nexclude; i++) {
		size_t l = strlen(exclude[i]);

		while (l > 1 && exclude[i][l - 1] == '/')
			l--;
		if (exclude[i][0] != '/' || !(dc_exclude[i] = strndup(exclude[i], l)))
			return -EINVAL;
		dc_exclude_len[i] = l;
		dc_nexclude = i + 1;
	}
	return 0;
}

DCACHE_START_TEXT void dcache_set_ttl(uint64_t ttl_ns, uint64_t neg_ttl_ns)
{
	dc_ttl_ns = ttl_ns;
	dc_neg_ttl_ns = neg_ttl_ns;
}

DCACHE_START_TEXT void dcache_set_completion(unsigned int probes, unsigned int max_entries)
{
	dc_complete_probes = dc_no_negative ? 0 : probes;
	dc_complete_max = max_entries;
}
