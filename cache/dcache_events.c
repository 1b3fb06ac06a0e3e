/* SPDX-License-Identifier: MIT */
/*
 * dcache_events.c - what inotify's news does to the cache: the events of a
 * watch (dcache_event_child, dcache_event_self), changes to an inode that
 * reach no watch (dcache_forget_inode), lost events (dcache_events_lost) and
 * forgetting everything (dcache_invalidate_all).
 *
 * Design
 * ======
 * An event about directory P or an entry of it bumps P's generations first
 * (dir_gen; attr_gen when P's own attributes may have moved), so that a
 * kernel answer fetched before the event is not inserted after it (dcache.c,
 * "Coherence"); then it kills the dentries that may now be wrong (with their
 * subtrees) or drops their attributes, each change in a d_seq write section.
 * An event that names no cached dentry may still concern a cached inode
 * under another name: the records of "Names that outlive their inode's other
 * names" (below) decide when its attributes must go by inode number or by
 * device.
 *
 * Locks and invariants (the cache's: dcache.c)
 * ====================
 *  Every entry point takes dcache_mutex inside rcu_read_lock() (dcache.c,
 *    "Lock order"); the event reader calls them, and the kernel questions
 *    made here (lstat of an event's name) run under the mutex.
 *  dc_names, dc_names_cap, dc_names_used, dc_names_lost, dc_ev_count,
 *    dc_last_data: under dcache_mutex; dc_ev_batch: atomic.
 *  dc_attr_gen (dcache.c) is bumped wherever attributes are dropped by inode
 *    rather than by name, dc_file_attr_gen wherever every non-directory's of
 *    a device are, before they are dropped.
 */
#define _GNU_SOURCE
#define URCU_INLINE_SMALL_FUNCTIONS
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcache_int.h"

/* Events and forgettings applied ("A write event again", below). */
static unsigned long dc_ev_count;

/* Drop the attributes and access facts of every dentry of inode (dev, ino).
 * Under dcache_mutex and rcu_read_lock().  O(dentries): used only when a new
 * hard link appears (rare), where the other names may sit in any directory. */
static void forget_inode_locked(dev_t dev, ino_t ino)
{
	struct dentry *d;

	dc_attr_gen++; /* a kernel answer in flight may predate the change */
	cds_list_for_each_entry(d, &dc_lru, lru) {
		/* Directories too: an inode-flag ioctl on one (chattr) changes its
		 * attributes with no event (link() never names a directory). */
		if ((d->flags & D_DEAD) || d->type == D_NEG)
			continue;
		if (d->dev == dev && (d->ino == ino || ((d->flags & D_ATTR) && d->a_ino == ino)))
			dc_drop_attr_locked(d, false);
	}
}

void dcache_forget_inode(dev_t dev, ino_t ino)
{
	if (!LOAD_ACQUIRE(dc_root))
		return;
	rcu_read_lock(); /* before the mutex: see "Lock order", dcache.c */
	pthread_mutex_lock(&dcache_mutex);
	dc_ev_count++;
	forget_inode_locked(dev, ino);
	pthread_mutex_unlock(&dcache_mutex);
	rcu_read_unlock();
}

/*
 * Names that outlive their inode's other names
 * ============================================
 * inotify reports a change made through a file descriptor (write, ftruncate,
 * fchmod, close after writing) under the name, in the directory, through
 * which that descriptor was opened - even after that name was unlinked or
 * replaced (rename over it) while the inode lives on under another name:
 * `open b; ln b c; rm b; write` is IN_MODIFY "b", nothing about "c".  An
 * O_TMPFILE file given a name with linkat is reported as "#<inode number>".
 * And a hard link made and removed again before the event reader looked at
 * it changes the other names' st_nlink/st_ctime with no event about them.
 * Such an event names no cached dentry of the inode, and the inode is unknown.
 *
 * Invariant kept here: a cached attribute set (or access fact) of a
 * non-directory is dropped by the dcache_event_child() call of any later
 * event that may concern its inode, so before the next sync point - by name,
 * by inode number, or by device ("escalation": every non-directory on the
 * device of the event's directory forgets its attributes and access facts).
 * An event about name N in directory D escalates when:
 *   1. it is a write or attribute event, N is not a live cached non-directory
 *      in D, and the kernel has no N in D any more: it came through a dead
 *      name (else it concerns the inode now called N, and nothing else if
 *      that has one link; more than one link: forgotten by inode number);
 *   2. it is a write or attribute event, and N was removed (IN_DELETE) or
 *      moved over (IN_MOVED_TO) in D while watched (`removed` below): a dead
 *      N may live beside a new one (`ln b c; mv x b; write through old b`);
 *   3. it is a creation (IN_CREATE, IN_MOVED_TO) and N is gone, or the inode
 *      the kernel shows under N is the one shown at N's previous creation in
 *      D (`seen` below).  Looking happens after the event: if N was replaced
 *      meanwhile, the look saw the replacement, the created inode (perhaps a
 *      new link to a cached file) went unseen, and the replacement's own
 *      creation event comes later and sees that same inode again.  Otherwise
 *      the look saw the created inode, and more than one link forgets it by
 *      inode number (forget_same_inode_locked);
 *   4. it is a write or attribute event and events were lost before (queue
 *      overflow: removals are unknown); or any event but a removal arrives
 *      for a watch that no dentry uses any more (its directory is unknown):
 *      then every device.
 * The records are keyed by a hash of the directory's (st_dev, st_ino) and N,
 * so they survive the watch being dropped and made again; they are never
 * removed (a collision or a reused inode only escalates more often).
 * Not seen: a name replaced (renamed over, or removed and created again)
 * while its directory was not watched by this process image, then written
 * through a descriptor opened under the old name; links into directories it
 * does not watch.  doc/coherence.md.
 * Cost: one lstat per write or attribute event about a name the cache does
 * not hold (a write event right after the same one, in the same batch: none,
 * "A write event again" below); escalation is O(dentries), on writes under
 * removed names and on names created and gone before the reader saw them
 * (short-lived files).
 */
/*
 * A write event again
 * ===================
 * Appending to a file raises IN_MODIFY then IN_CLOSE_WRITE about its name:
 * two DCACHE_EV_DATA events, one after the other, and rule 1 above asked the
 * kernel about the name for each (a configure script's log: 122 lstats of
 * configure.log in zlib's ./configure, each a round trip on sshfs).  The
 * second may skip everything when
 *   - it is the same event (DATA, the same watch and name) as the one applied
 *     last, with no event or forgetting applied in between (dc_ev_count), and
 *   - both are in the same batch (dc_ev_batch, bumped by the applier before
 *     each batch: dcache_events_batch_begin(); batches are applied one at a
 *     time, under invalidate/'s read_mutex).
 * Why that is exact: every event of a batch was queued before the first of
 * them is applied, so the second event happened before the first one's
 * lstat; that lstat, and every kernel answer a lookup got after it (whose
 * generations the first event's bumps did not move), already show the
 * state after the second event.  What the second event would drop (the
 * name's attributes, by inode or device; the directory's generation for
 * the lookups in flight) the first dropped, and nothing cached since
 * predates the second event.  The batch is sampled before the first event
 * takes the mutex: a batch begun meanwhile is not credited to it.
 */
static unsigned long dc_ev_batch;
static struct {
	unsigned long batch, count; /* count 0: none */
	int wd;
	char name[NAME_MAX + 1];
} dc_last_data;

void dcache_events_batch_begin(void)
{
	__atomic_add_fetch(&dc_ev_batch, 1, __ATOMIC_RELAXED);
}

/* Is this DATA event the one applied last, in the same batch?  Under
 * dcache_mutex. */
static bool data_again_locked(int wd, const char *name)
{
	return dc_last_data.count && dc_last_data.count == dc_ev_count &&
	       dc_last_data.batch == __atomic_load_n(&dc_ev_batch, __ATOMIC_RELAXED) &&
	       dc_last_data.wd == wd && strcmp(dc_last_data.name, name) == 0;
}

/* Note the DATA event just applied (the count already moved for it).
 * Under dcache_mutex. */
static void data_note_locked(int wd, const char *name, unsigned long batch)
{
	size_t len = strlen(name);

	if (len > NAME_MAX) {
		dc_last_data.count = 0;
		return;
	}
	memcpy(dc_last_data.name, name, len + 1);
	dc_last_data.wd = wd;
	dc_last_data.batch = batch;
	dc_last_data.count = dc_ev_count;
}

struct name_rec {
	uint64_t key;  /* 0: empty slot */
	ino_t seen;    /* 0: none yet */
	bool removed;
};
#define NAMES_MAX (1u << 18) /* 6 MiB of records; past that, dc_names_lost */
static struct name_rec *dc_names;
static size_t dc_names_cap, dc_names_used;
static bool dc_names_lost;

static uint64_t name_key(const struct dentry *dir, const char *name)
{
	uint64_t h = 1469598103934665603ULL;

	h = (h ^ (uint64_t)dir->dev) * 1099511628211ULL;
	h = (h ^ (uint64_t)dir->ino) * 1099511628211ULL;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 1099511628211ULL;
	h ^= h >> 31;
	h *= 0x9E3779B97F4A7C15ULL;
	h ^= h >> 29;
	return h ? h : 1;
}

static struct name_rec *names_slot(uint64_t key, struct name_rec *t, size_t cap)
{
	size_t i = (size_t)key & (cap - 1);

	while (t[i].key && t[i].key != key)
		i = (i + 1) & (cap - 1);
	return &t[i];
}

/* The record of `key`, created if `add`; NULL if absent, or if the table
 * cannot hold it (then dc_names_lost is set: every event escalates). */
static struct name_rec *names_get_locked(uint64_t key, bool add)
{
	struct name_rec *r;

	if (dc_names_cap) {
		r = names_slot(key, dc_names, dc_names_cap);
		if (r->key || !add)
			return r->key ? r : NULL;
	} else if (!add) {
		return NULL;
	}
	if ((dc_names_used + 1) * 2 > dc_names_cap) {
		size_t cap = dc_names_cap ? dc_names_cap * 2 : 256;
		struct name_rec *t = cap <= NAMES_MAX ? calloc(cap, sizeof(*t)) : NULL;

		if (!t) {
			dc_names_lost = true;
			return NULL;
		}
		for (size_t i = 0; i < dc_names_cap; i++)
			if (dc_names[i].key)
				*names_slot(dc_names[i].key, t, cap) = dc_names[i];
		free(dc_names);
		dc_names = t;
		dc_names_cap = cap;
	}
	r = names_slot(key, dc_names, dc_names_cap);
	r->key = key;
	dc_names_used++;
	return r;
}

/* Escalation: drop the attributes and access facts of every non-directory
 * on device `dev` (every device if `all`).  Under dcache_mutex and RCU. */
static void forget_dev_files_locked(dev_t dev, bool all)
{
	struct dentry *d;

	dc_file_attr_gen++; /* directories keep theirs: dc_attr_gen_for() */
	cds_list_for_each_entry(d, &dc_lru, lru)
		if (!(d->flags & D_DEAD) && d->type != D_DIR && d->type != D_NEG &&
		    (all || d->dev == dev))
			dc_drop_attr_locked(d, false);
}

/* "#<digits>": the name the kernel gives an O_TMPFILE file's dentry; 0 if
 * `name` is not one. */
static ino_t tmpfile_ino(const char *name)
{
	unsigned long long v = 0;

	if (name[0] != '#' || !name[1])
		return 0;
	for (const char *p = name + 1; *p; p++) {
		if (*p < '0' || *p > '9' || v > (~0ULL - 9) / 10)
			return 0;
		v = v * 10 + (unsigned long long)(*p - '0');
	}
	return (ino_t)v;
}

#define MAX_ALIASES 64

/* lstat of dir/name as the kernel answers it now: 0 or -errno. */
static int lstat_child_locked(struct dentry *dir, const char *name, struct stat *st)
{
	char path[PATH_MAX];
	long n = dc_d_path_rcu(dir, path, sizeof(path));

	if (n < 0 || (size_t)n + 2 + strlen(name) >= sizeof(path))
		return -ENAMETOOLONG;
	snprintf(path + n, sizeof(path) - (size_t)n, "%s%s", n > 1 ? "/" : "", name);
	return dc_ops->kernel_lstat(path, st);
}

/*
 * A name that appeared in dir may be a new hard link to a file whose
 * attributes we cache under another name: the link changed that file's
 * st_nlink/st_ctime without an event about the other names.  Ask the kernel
 * what the new name is (event thread, under dcache_mutex and RCU) and drop the
 * attributes of every cached name of that inode.  Links made by other
 * processes into directories this process does not watch are not seen: see
 * doc/coherence.md.  Returns lstat's result; *st is filled on 0.
 */
static int forget_same_inode_locked(struct dentry *dir, const char *name, struct stat *st)
{
	int r = lstat_child_locked(dir, name, st);

	if (r == 0 && !S_ISDIR(st->st_mode) && st->st_nlink >= 2)
		forget_inode_locked(st->st_dev, st->st_ino);
	return r;
}

/* Rules 1-3 of "Names that outlive their inode's other names" for an event
 * about non-directory `name` in `dir` (a live dentry of the watch); `known`:
 * a live non-directory dentry of that name is cached; lr/st: the kernel's
 * lstat of it, made by the ENTRY part (creations).  True: escalate. */
static bool names_event_locked(struct dentry *dir, const char *name, enum dcache_event ev,
			       bool known, int lr, const struct stat *st)
{
	struct name_rec *rec;
	struct stat now;
	ino_t tino;

	switch (ev) {
	case DCACHE_EV_CREATE:
	case DCACHE_EV_MOVED_IN:
		rec = names_get_locked(name_key(dir, name), true);
		if (!rec)
			return true;
		if (ev == DCACHE_EV_MOVED_IN)
			rec->removed = true; /* it may have replaced a name */
		if (lr != 0 || S_ISDIR(st->st_mode)) {
			rec->seen = 0;
			return true; /* gone before we looked: it is unknown */
		}
		if (rec->seen == st->st_ino)
			return true; /* an earlier look may have seen this one */
		rec->seen = st->st_ino;
		return false;
	case DCACHE_EV_REMOVE:
		rec = names_get_locked(name_key(dir, name), true);
		if (!rec)
			return true;
		rec->removed = true;
		return false;
	case DCACHE_EV_ATTR:
	case DCACHE_EV_DATA:
		rec = names_get_locked(name_key(dir, name), false);
		if (dc_names_lost || (rec && rec->removed))
			return true;
		tino = tmpfile_ino(name);
		if (tino) { /* an O_TMPFILE's dentry: the inode is in its name */
			forget_inode_locked(LOAD_RELAXED(dir->dev), tino);
			return false;
		}
		if (known)
			return false;
		if (lstat_child_locked(dir, name, &now) != 0)
			return true; /* through a dead name */
		if (!S_ISDIR(now.st_mode) && now.st_nlink >= 2)
			forget_inode_locked(now.st_dev, now.st_ino);
		return false;
	default:
		return false;
	}
}

void dcache_events_lost(void)
{
	rcu_read_lock(); /* before the mutex: see "Lock order", dcache.c */
	pthread_mutex_lock(&dcache_mutex);
	dc_ev_count++;
	dc_names_lost = true;
	pthread_mutex_unlock(&dcache_mutex);
	rcu_read_unlock();
}

void dcache_event_child(int wd, const char *name, enum dcache_event ev)
{
	struct dentry *dirs[MAX_ALIASES];
	struct stat st;
	size_t n;
	int lr = -ENOENT;
	bool looked = false, known = false;
	/* The batch as it was before the event: sampled before the checks
	 * below, so that a batch begun meanwhile is not credited to it. */
	unsigned long batch = __atomic_load_n(&dc_ev_batch, __ATOMIC_RELAXED);

	rcu_read_lock(); /* before the mutex: see "Lock order", dcache.c */
	pthread_mutex_lock(&dcache_mutex);
	if (!dc_table) {
		pthread_mutex_unlock(&dcache_mutex);
		rcu_read_unlock();
		return;
	}
	if (ev == DCACHE_EV_DATA && data_again_locked(wd, name)) {
		pthread_mutex_unlock(&dcache_mutex); /* "A write event again" */
		rcu_read_unlock();
		return;
	}
	dc_ev_count++;
	n = dc_wd_map_get_locked(wd, dirs, MAX_ALIASES);
	for (size_t i = 0; i < n; i++) {
		struct dentry *dir = dirs[i], *c;

		dir->dir->dir_gen++; /* watched: it has one */
		/* A name came, went or moved: dir's mtime, size, nlink moved.
		 * Writes to its files and their chmods do not move them. */
		if (ev != DCACHE_EV_DATA && ev != DCACHE_EV_ATTR)
			dir->dir->attr_gen++;
		c = dc_d_lookup_rcu(dc_table, dir, name, strlen(name));
		if (c && (c->flags & D_DEAD))
			c = NULL;
		if (c && c->type != D_NEG && c->type != D_DIR && c->type != D_UNK)
			known = true;
		switch (ev) {
		case DCACHE_EV_ENTRY:
		case DCACHE_EV_CREATE:
		case DCACHE_EV_REMOVE:
		case DCACHE_EV_MOVED_IN:
			dc_uncomplete_locked(dir); /* a name came or went */
			if (c)
				dc_kill_locked(c);
			dc_drop_attr_locked(dir, false); /* its mtime, size, nlink moved */
			/* A directory (ENTRY: IN_ISDIR, or a name moved away) is never
			 * a new link to a file: nothing to look at.  Aliases of one
			 * directory: one look. */
			if (!looked && ev != DCACHE_EV_ENTRY) {
				lr = forget_same_inode_locked(dir, name, &st);
				looked = true;
			}
			break;
		case DCACHE_EV_ATTR:
		case DCACHE_EV_GONE:
			/* Permissions of a directory decide what lies below it. */
			if (c && (c->type == D_DIR || c->type == D_NEG))
				dc_kill_locked(c);
			else if (c)
				dc_drop_attr_locked(c, false);
			break;
		case DCACHE_EV_DATA:
			if (c)
				dc_drop_attr_locked(c, false);
			break;
		}
	}
	if (ev != DCACHE_EV_ENTRY && ev != DCACHE_EV_GONE) {
		if (n == 0) {
			/* A watch no dentry uses any more (its events raced with
			 * its removal): the directory is unknown (rule 4). */
			if (ev != DCACHE_EV_REMOVE)
				forget_dev_files_locked(0, true);
		} else if (names_event_locked(dirs[0], name, ev, known, lr, &st)) {
			forget_dev_files_locked(LOAD_RELAXED(dirs[0]->dev), false);
		}
	}
	if (ev == DCACHE_EV_DATA)
		data_note_locked(wd, name, batch);
	pthread_mutex_unlock(&dcache_mutex);
	rcu_read_unlock();
}

void dcache_event_self(int wd, enum dcache_event ev)
{
	struct dentry *dirs[MAX_ALIASES];
	size_t n;

	rcu_read_lock(); /* before the mutex: see "Lock order", dcache.c */
	pthread_mutex_lock(&dcache_mutex);
	if (!dc_table) {
		pthread_mutex_unlock(&dcache_mutex);
		rcu_read_unlock();
		return;
	}
	dc_ev_count++;
	n = dc_wd_map_get_locked(wd, dirs, MAX_ALIASES);
	for (size_t i = 0; i < n; i++) {
		struct dentry *d = dirs[i];

		d->dir->dir_gen++; /* watched: it has one */
		d->dir->attr_gen++;
		if (ev == DCACHE_EV_GONE && d != dc_root) {
			dc_kill_locked(d);
		} else if (ev == DCACHE_EV_DATA) {
			dc_drop_attr_locked(d, false);
		} else {
			/* chmod of the directory (or the root went away): what we
			 * learned through it may no longer hold. */
			dc_uncomplete_locked(d);
			dc_kill_children_locked(d);
			dc_drop_attr_locked(d, true);
			if (ev == DCACHE_EV_GONE && d->dir->wd >= 0) {
				int w = d->dir->wd;

				d->dir->wd = -1;
				dc_wd_map_del_locked(w, d);
			}
		}
	}
	pthread_mutex_unlock(&dcache_mutex);
	rcu_read_unlock();
}

void dcache_invalidate_all(void)
{
	rcu_read_lock();
	pthread_mutex_lock(&dcache_mutex);
	dc_ev_count++;
	dc_kill_all_locked();
	pthread_mutex_unlock(&dcache_mutex);
	rcu_read_unlock();
}
