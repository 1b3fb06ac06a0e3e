/* SPDX-License-Identifier: MIT */
/*
 * inval_shared.c - the session's shared entries as the cache's ops: listings,
 * directory watches, what names are, directories' and regular files'
 * attributes and who may search them (cache/dcache_arena.c; doc/session.md,
 * "Phase 2: shared entries"), each taken or offered under a ticket of this
 * process's instance.  Split from inval.c, whose locks and invariants hold here (I1-I4
 * at the top of inval_fds.c): the ops run under the dcache mutex unless said
 * otherwise, and take fd_mutex only through queued_locked().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <dirent.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "inval.h"
#include "inval_int.h"
#include "session.h"

/*
 * Shared listings and the other shared entries (cache/dcache_arena.c,
 * doc/session.md "Phase 2: shared entries").  ops->listing_ticket runs under the dcache mutex for a live
 * directory: its watch id then belongs to the current instance (an instance
 * is replaced only after dcache_reset() has killed every dentry of the old
 * one: I4), so with session_active and our own bit for it (session_wd_add)
 * it is the session's number for that directory.  A listing read from the
 * kernel is published only under session_listing_ticket()'s conditions
 * (nothing of the ring left unapplied that could have made the dentry
 * stale), the instance unchanged since the ticket.  A listing taken from the
 * arena needs only its generation (checked by dcache_arena_get): it is as
 * fresh as the watcher's last read cycle, which a sync point waits for.
 * Neither before this instance has seen the watcher publish every event
 * queued when it first asked (listing_synced): a change our parent made
 * before it started us may still be queued, its generation not yet bumped;
 * our own cache, empty at the attach, never needed that wait.
 */
static atomic_uint listing_synced; /* the inst_gen whose catch-up was seen */
/* Under the dcache mutex: the instance whose target was taken, and the
 * watcher's consumed count (ring.h) that covers what was queued then. */
static unsigned int listing_target_gen;
static uint64_t listing_target;

/* Has the watcher published every event that was queued on instance (fd,
 * gen) when this process first asked?  Never waits.  The first call reads
 * state, consumed, FIONREAD, state: with both states even and equal no read
 * cycle ran meanwhile, so consumed counted every byte read() before the
 * FIONREAD, and the n bytes queued then are published once consumed reaches
 * the sum (ring.h).  A build's processes start while its others' events are
 * still queued (a compiler's output): asking for an empty queue, as before,
 * refused most of them every shared entry.  With n > 0 the watcher is poked
 * out of its batching pause.  Under the dcache mutex (-> fd_mutex). */
static int listing_caught_up(int fd, unsigned int gen)
{
	uint32_t s1, s2;
	uint64_t c;
	int n;

	if (atomic_load(&listing_synced) == gen)
		return 1;
	if (listing_target_gen != gen) {
		s1 = session_state();
		c = session_consumed();
		if ((s1 & 1) || !queued_locked(fd, gen, &n))
			return 0;
		s2 = session_state();
		if (s1 != s2)
			return 0; /* a cycle ran: ask again at the next ticket */
		listing_target = c + (uint64_t)n;
		listing_target_gen = gen;
		if (n > 0)
			session_poke();
	}
	if (session_consumed() < listing_target)
		return 0;
	atomic_store(&listing_synced, gen);
	return 1;
}

static int listing_ticket(int wd, struct dcache_listing *t)
{
	unsigned int gen = atomic_load(&inst_gen);
	int fd = atomic_load(&inotify_fd), r;

	if (!atomic_load(&session_active) || fd < 0 || atomic_load(&listing_off) ||
	    session_wd_foreign(wd) || !listing_caught_up(fd, gen))
		return 0;
	r = session_listing_ticket(wd, &t->gen, session_wd_ours);
	if (r < 0 || atomic_load(&inst_gen) != gen || !atomic_load(&session_active))
		return 0;
	/* A mount the watcher has announced but we have not applied: our
	 * dentry may name what is now covered.  Read after the generation:
	 * the watcher counts the change before it bumps every generation. */
	if (session_mounts() != atomic_load(&ring_mounts_applied))
		r = 0;
	t->wd = wd;
	t->inst = gen;
	t->can_put = r;
	t->only_shared = 0; /* the cache sets it for the listing op only */
	/* Caught up with the session: its shared path table may answer us
	 * (until the cache is emptied: dcache_spath_use). */
	{
		uint64_t cred = session_cred_key();
		const uint32_t *mw = session_mounts_word();

		if (cred && mw && session_arena() && dcache_spath_on(session_arena()))
			dcache_spath_use(session_arena(), cred, mw);
	}
	return 1;
}

/* The arena, if ticket t still holds (the instance it was taken on is
 * ours) and, for an offer (put), allows publishing; else NULL. */
static void *ticket_arena(const struct dcache_listing *t, int put)
{
	if (!t || !atomic_load(&session_active) || atomic_load(&inst_gen) != t->inst ||
	    (put && !t->can_put))
		return NULL;
	return session_arena();
}

long inval_listing_get(const struct dcache_listing *t, char *buf, size_t cap, size_t max,
		       size_t *count)
{
	void *a = ticket_arena(t, 0);
	long r = a ? dcache_arena_get_max(a, t->wd, buf, cap, max, count) : -ENOENT;

	if (r >= 0 && !ticket_arena(t, 0))
		return -ENOENT;
	if (r >= 0)
		atomic_fetch_add_explicit(&st_listings_shared, 1, memory_order_relaxed);
	return r;
}

void inval_listing_put(const struct dcache_listing *t, const char *ents, size_t len, size_t count)
{
	void *a = ticket_arena(t, 1);

	if (a)
		(void)dcache_arena_put(a, t->wd, t->gen, ents, len, count);
}

/* ops->shared_watch: under the dcache mutex, with the ticket of live
 * directory t->wd, for its live entry `name`.  The watch becomes ours as
 * watch_dir() would make it: its bit is set before anything below it is
 * cached.  Device and inode must be those the cache knows for the entry
 * (inode 0: not known, from a listing). */
static int shared_watch(const struct dcache_listing *t, const char *name, size_t len, uint64_t dev,
			uint64_t ino)
{
	void *a = ticket_arena(t, 0);
	uint64_t edev, eino;
	int child;

	if (!a || dcache_arena_get_watch(a, t->wd, name, len, &child, &edev, &eino) != 0 ||
	    edev != dev || (ino && eino && ino != eino) || (unsigned)child >= SESSION_WD_BITS)
		return -1;
	session_wd_add(child);
	if (session_wd_foreign(child))
		return -1; /* no bitmap (out of memory): then it was never ours */
	atomic_fetch_add_explicit(&st_watches_shared, 1, memory_order_relaxed);
	return child;
}

static void shared_watch_put(const struct dcache_listing *t, const char *name, size_t len, int wd,
			     uint64_t dev, uint64_t ino)
{
	void *a = ticket_arena(t, 1);

	if (a)
		(void)dcache_arena_put_watch(a, t->wd, t->gen, name, len, wd, dev, ino);
}

static int shared_attr_get(const struct dcache_listing *t, struct stat *st)
{
	void *a = ticket_arena(t, 0);

	return a && dcache_arena_get_attr(a, t->wd, st) == 0 && ticket_arena(t, 0) ? 0 : -1;
}

static void shared_attr_put(const struct dcache_listing *t, const struct stat *st)
{
	void *a = ticket_arena(t, 1);

	if (a)
		(void)dcache_arena_put_attr(a, t->wd, t->gen, st);
}

static int shared_name_get(const struct dcache_listing *t, const char *name, size_t len,
			   unsigned int *type, uint64_t *dev, uint64_t *ino, char *target, size_t tcap,
			   size_t *tlen)
{
	void *a = ticket_arena(t, 0);

	if (!a || dcache_arena_get_name(a, t->wd, name, len, type, dev, ino, target, tcap, tlen) != 0 ||
	    !ticket_arena(t, 0))
		return -1;
	atomic_fetch_add_explicit(&st_names_shared, 1, memory_order_relaxed);
	return 0;
}

static void shared_name_put(const struct dcache_listing *t, const char *name, size_t len,
			    unsigned int type, uint64_t dev, uint64_t ino, const char *target,
			    size_t tlen)
{
	void *a = ticket_arena(t, 1);

	if (a)
		(void)dcache_arena_put_name(a, t->wd, t->gen, name, len, type, dev, ino, target, tlen);
}

/* Search permission (ENT_SEARCH), keyed by this process's credentials
 * (session_cred_key: 0 when they cannot be told, then nothing is shared). */
static int shared_search_get(const struct dcache_listing *t)
{
	void *a = ticket_arena(t, 0);
	uint64_t cred = a ? session_cred_key() : 0;

	if (!cred || dcache_arena_get_search(a, t->wd, cred) != 0 || !ticket_arena(t, 0))
		return -1;
	atomic_fetch_add_explicit(&st_searches_shared, 1, memory_order_relaxed);
	return 0;
}

static void shared_search_put(const struct dcache_listing *t)
{
	void *a = ticket_arena(t, 1);
	uint64_t cred = a ? session_cred_key() : 0;

	if (cred)
		(void)dcache_arena_put_search(a, t->wd, t->gen, cred);
}

/*
 * Regular files' attributes (ENT_FILE; cache/dcache_arena.c, A9).  A
 * file's attributes change through any of its names and descriptors, and
 * its directory's watch hears of it only under the name used (or not at
 * all: a link made in a directory nobody watches).  A watch on the inode
 * itself hears of every such change, so that watch vouches for them: added
 * on the session's instance, it is never made any process's own (its
 * records, all nameless, are skipped by every process as another's:
 * session_wd_foreign), and the watcher bumps its generation for each.
 *
 * Rent or buy: a file's watch is made by the second process that asks for
 * its attributes (the first offers its name, ENT_NAME, once it keeps the
 * attributes), and its answer serves the third and later ones.
 *
 * The ask: add the watch through the name (not following a last symlink),
 * sample the watch's generation, lstat the name.  A change of the watched
 * inode before the sample is in the lstat (the kernel queues the event
 * after making the change); one after it queues an event on the watch,
 * which bumps the generation.  The name's binding is the directory's
 * ticket's, sampled before the watch was added: if the name led elsewhere
 * at the lstat than at the watch, it changed after that sample, and its
 * event (queued before the lstat) bumps the directory's generation, which
 * voids the entry as any later change would.  The answer is the kernel's
 * lstat either way; it, or the name, is offered only if the cache keeps it
 * (one link, not racy, on the directory's device: dcache_populate.c,
 * MISS_ATTR).  Past the session's file watch numbers
 * (dcache_arena_file_watches_on), or with the watch refused (ENOSPC: the
 * user's max_user_watches), no attributes are offered.
 */
#define FILE_WATCH_MASK (IN_ATTRIB | IN_MODIFY | IN_MOVE_SELF | IN_DELETE_SELF)

static atomic_int file_watches_off; /* this process makes no more (ENOSPC) */

static int shared_file_get(const struct dcache_listing *t, const char *name, size_t len,
			   uint64_t dev, uint64_t ino, struct stat *st)
{
	void *a = ticket_arena(t, 0);

	if (!a || dcache_arena_get_file(a, t->wd, name, len, st) != 0 || !ticket_arena(t, 0) ||
	    (uint64_t)st->st_dev != dev || (ino && (uint64_t)st->st_ino != ino))
		return -1; /* counted only where taken */
	atomic_fetch_add_explicit(&st_files_shared, 1, memory_order_relaxed);
	return 0;
}

static int shared_file_ask(const struct dcache_listing *t, const char *path, const char *name,
			   size_t len, struct stat *st, struct dcache_file_tok *tok)
{
	void *a = ticket_arena(t, 1);
	int ifd = atomic_load(&inotify_fd), fwd = -1;
	unsigned int type;
	uint64_t dev, ino;
	size_t tl;
	char tg[1];
	bool known;

	tok->wd = -1;
	tok->name = 0;
	if (!a || ifd < 0)
		return -1;
	/* Rent or buy: a file no other process has named yet gets no watch
	 * (most files a build stats are one process's: its source, its
	 * outputs); its name is offered, so that the next process that asks
	 * for its attributes watches it, and every later one takes them. */
	known = dcache_arena_get_name(a, t->wd, name, len, &type, &dev, &ino, tg, 0, &tl) == 0 &&
		type == DT_REG;
	if (known && !atomic_load(&file_watches_off) && dcache_arena_file_watches_on(a)) {
		fwd = (int)syscall(SYS_inotify_add_watch, ifd, path, FILE_WATCH_MASK | IN_DONT_FOLLOW);
		if (fwd < 0 && errno == ENOSPC)
			atomic_store(&file_watches_off, 1);
		if (fwd >= 0 && dcache_arena_file_watch_ok(a, fwd) && atomic_load(&inst_gen) == t->inst) {
			tok->wd = fwd;
			tok->gen = dcache_arena_gen(a, fwd); /* after the watch, before the lstat */
		}
	}
	if (syscall(SYS_newfstatat, AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW) != 0) {
		tok->wd = -1;
		return 1;
	}
	if (!S_ISREG(st->st_mode) || st->st_nlink != 1)
		tok->wd = -1;
	else
		tok->name = !known;
	return 0;
}

static void shared_file_put(const struct dcache_listing *t, const char *name, size_t len,
			    const struct dcache_file_tok *tok, const struct stat *st)
{
	void *a = ticket_arena(t, 1);

	if (a && tok->wd >= 0)
		(void)dcache_arena_put_file(a, t->wd, t->gen, name, len, tok->wd, tok->gen, st);
	else if (a && tok->name)
		(void)dcache_arena_put_name(a, t->wd, t->gen, name, len, DT_REG, (uint64_t)st->st_dev,
					    (uint64_t)st->st_ino, NULL, 0);
}

/*
 * The shared path table (cache/dcache_spath.c; the walk's side: the top of
 * cache/dcache_walk.c).  An offer is made under the conditions of a listing
 * ticket that allows publishing (the session ours, sharing not off, caught
 * up, our mounts applied, every directory one we watch), with generations
 * that session_spath_ticket() vouches for: sampled with no read cycle
 * running, and no record since the walk began about any of its
 * directories.  Inside the walk's read-side section: no lock, no syscall.
 */
static uint64_t spath_pos(void)
{
	return session_read_pos();
}

static void spath_put(const struct dcache_spath_fill *f)
{
	unsigned int gen = atomic_load(&inst_gen);
	uint64_t sgen[DCACHE_SPATH_DIRS], ngen[DCACHE_SPATH_DIRS];
	void *a = session_arena();
	int r;

	if (!a || !atomic_load(&session_active) || atomic_load(&listing_off) ||
	    atomic_load(&listing_synced) != gen || f->n > DCACHE_SPATH_DIRS ||
	    session_mounts() != atomic_load(&ring_mounts_applied))
		return;
	for (unsigned int i = 0; i < f->n; i++)
		if (session_wd_foreign(f->wd[i]))
			return;
	r = session_spath_ticket(f->wd, f->nidx, f->n, sgen, ngen, f->pos);
	if (r < 0) {
		/* No table yet: this offer makes one (and is dropped). */
		(void)dcache_spath_put(a, f, sgen, ngen);
		return;
	}
	if (r != 1 || atomic_load(&inst_gen) != gen || !atomic_load(&session_active))
		return;
	if (dcache_spath_put(a, f, sgen, ngen) == 0)
		atomic_fetch_add_explicit(&st_paths_shared, 1, memory_order_relaxed);
}

int inval_fs_classes_on(void)
{
	return session_arena() != NULL;
}

int inval_fs_class_get(uint64_t id)
{
	void *a = session_arena();
	int c = a ? dcache_arena_fs_class(a, id) : 0;

	if (c)
		atomic_fetch_add_explicit(&st_fs_shared, 1, memory_order_relaxed);
	return c;
}

void inval_fs_class_put(uint64_t id, int cls)
{
	void *a = session_arena();

	if (a)
		dcache_arena_fs_class_put(a, id, cls);
}

void inval_shared_off(void)
{
	atomic_store(&listing_off, 1);
	dcache_spath_use(NULL, 0, NULL);
}

void inval_shared_forget(void)
{
	void *a = atomic_load(&session_active) ? session_arena() : NULL;

	if (a)
		dcache_arena_invalidate(a, -1);
}

DCACHE_START_TEXT void inval_shared_fill_ops(struct dcache_ops *ops)
{
	ops->listing_ticket = listing_ticket;
	ops->shared_watch = shared_watch;
	ops->shared_watch_put = shared_watch_put;
	ops->shared_attr_get = shared_attr_get;
	ops->shared_attr_put = shared_attr_put;
	ops->shared_name_get = shared_name_get;
	ops->shared_name_put = shared_name_put;
	ops->shared_search_get = shared_search_get;
	ops->shared_search_put = shared_search_put;
	ops->shared_file_get = shared_file_get;
	ops->shared_file_ask = shared_file_ask;
	ops->shared_file_put = shared_file_put;
	ops->spath_pos = spath_pos;
	ops->spath_put = spath_put;
}
