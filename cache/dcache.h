/* SPDX-License-Identifier: MIT */
/*
 * dcache.h - rcuwalk's userspace dentry cache: the public contract of cache/.
 *
 * The cache maps (parent dentry, name) to what the kernel told this process
 * about that name: a positive dentry (type, lstat attributes, symlink target)
 * or a negative one (ENOENT).  Paths are resolved component by component
 * without writing anything shared ("RCU-walk"): readers run inside an urcu-bp
 * read-side section and validate every dentry they pass with its d_seq.
 *
 * cache/ knows nothing of libc symbol interposition or inotify.  What it needs
 * from the outside world (ask the kernel, make sure a directory is watched
 * before asking about its entries) goes through struct dcache_ops, filled in
 * by preload/ and invalidate/ at initialisation.
 *
 * Contexts used below:
 *   any thread   - may be called from any thread, registered with urcu-bp or
 *                  not; takes the RCU read lock itself.
 *   writer       - takes the dcache writer mutex; may allocate and make
 *                  syscalls through the ops.  Not async-signal-safe.
 *   ops context  - called by the cache with the writer mutex held: must not
 *                  call back into any dcache_* function.
 */
#ifndef RCUWALK_DCACHE_H
#define RCUWALK_DCACHE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct statx;

/*
 * For large zero-initialised arrays that a process touches late or never
 * (buffers, per-thread counter pools, tables of rare use), in every module:
 * the linker places them after .bss (in .lbss), so that the small variables
 * every process touches at start share a page or two instead of lying
 * scattered between the arrays.  Each page a process first touches is a page
 * fault: measured ~12 us each on a 2-vCPU VM, and the constructor and a first
 * lookup touched 7 pages of .bss before.
 */
#define DCACHE_COLD_BSS __attribute__((section(".lbss.rcuwalk")))

/*
 * What runs and what is written before a process's first lookup (the
 * constructors: the options read, the fault handler installed) is placed
 * together, so that loading the shim costs a process that looks nothing up
 * (`true`, most of a configure script's) about what an empty preloaded
 * library costs it:
 *  - DCACHE_START_TEXT: a function that runs only at start (constructors and
 *    what they call, nothing a lookup calls).  In .text.startup, which the
 *    linker puts at the head of .text beside _init: one page fault for all
 *    of them instead of one per 64 KiB window of .text they lay in.
 *  - DCACHE_START_DATA: a variable the constructors write that would
 *    otherwise be zero in .bss.  In .data, whose page ld.so has written
 *    already (it clears the partial page after it), not on a .bss page of its
 *    own: each page first written is a page fault.
 *  - DCACHE_START_RODATA: a constant only the start-up code reads (the
 *    names of the variables it looks for): on that same page of .data, not
 *    on a page of .rodata that a process would fault in for it alone.
 * The same page serves the warm-up: what the wrappers read or write while
 * lookups pass through (the real functions' slots, the pass-through counts,
 * the flags every lookup reads) is DCACHE_START_DATA too; a short-lived
 * process (gcc --version) otherwise faulted in a page of .bss and one of
 * .lbss for them.  That page is one page: .got.plt's tail, all of .data
 * and the head of .bss (readelf -S: .data ended 0x180 bytes before the page
 * boundary on 2026-12-05).  Past it, a DCACHE_START_DATA variable costs the
 * fault it is meant to avoid (test_start_faults_as_an_empty_library).
 */
#define DCACHE_START_TEXT __attribute__((section(".text.startup.rcuwalk")))
/*
 * What a fork() child runs before it returns to the program (the shim's
 * fork(), the modules' *_fork_child()): fork() copies no page table entry of
 * a file's mapping, so each 64 KiB window of .text that a child executes is
 * a page fault in every child, most of which exec at once (a shell's).  In
 * .text.hot, which the linker gathers from every object right after
 * .text.startup: one window for all of it.
 */
#define DCACHE_FORK_TEXT __attribute__((section(".text.hot.rcuwalk_fork")))
#define DCACHE_START_DATA __attribute__((section(".data.rcuwalk_start")))
#define DCACHE_START_RODATA __attribute__((section(".data.rcuwalk_start_ro")))

/* Returned by dcache_lookup() when the cache cannot answer exactly. */
#define DCACHE_PASS (-1)

/* dcache_lookup() flags. */
#define DCACHE_Q_FOLLOW   0x1u /* follow a final symlink (stat, not lstat) */
#define DCACHE_Q_STAT     0x2u /* fill *st with the final object's attributes */
#define DCACHE_Q_ACCESS   0x4u /* check `amode` like access(2): real ids */
#define DCACHE_Q_EACCESS  0x8u /* check `amode` with effective ids (AT_EACCESS) */
#define DCACHE_Q_NEGONLY  0x10u /* answer only errors; success -> DCACHE_PASS (open) */
#define DCACHE_Q_DIRECTORY 0x20u /* the final object must be a directory (O_DIRECTORY) */

/* What an inotify event means for the cache (dcache_event_*). */
enum dcache_event {
	DCACHE_EV_ENTRY, /* a name appeared, disappeared or moved (create/delete/move) */
	DCACHE_EV_ATTR,  /* attributes/permissions changed (IN_ATTRIB) */
	DCACHE_EV_DATA,  /* contents changed: size/mtime (IN_MODIFY, IN_CLOSE_WRITE) */
	DCACHE_EV_GONE,  /* the watched directory itself went away (delete/move/unmount/ignored) */
	/* DCACHE_EV_ENTRY for a non-directory, saying which way (see "Names
	 * that outlive their inode's other names" in dcache.c): */
	DCACHE_EV_CREATE,   /* a name appeared (IN_CREATE): perhaps a hard link */
	DCACHE_EV_REMOVE,   /* a name was removed (IN_DELETE) */
	DCACHE_EV_MOVED_IN, /* a name was moved in (IN_MOVED_TO), perhaps over another */
};

/* A ticket for the session's shared entries (dcache_ops.listing_ticket;
 * dcache_arena_*): filled by invalidate/, carried by the cache to
 * kernel_listdir_typed, read by whoever implements that op. */
struct dcache_listing {
	int wd;            /* the directory's watch id on the session's instance */
	int can_put;       /* a listing read from now on may be published */
	unsigned int inst; /* invalidate/'s instance generation at the ticket */
	uint64_t gen;      /* the watch's generation at the ticket */
	/* Set by the cache before kernel_listdir_typed: 1 = the session's
	 * listing or none (a negative return, the kernel not asked). */
	int only_shared;
};

/* A regular file's own watch on the session's instance and its generation
 * sampled before its attributes were read (ops->shared_file_ask). */
struct dcache_file_tok {
	int wd;       /* -1: none (the attributes may not be offered) */
	int name;     /* else 1: offer the name (the first process to ask) */
	uint64_t gen;
};

#define DCACHE_SPATH_DIRS 12  /* directories a shared walk may pass */
#define DCACHE_SPATH_NAME 200 /* bytes of a shared name (its last component: 40) */
struct dcache_spath_key {
	int start;          /* watch number of the walk's start (root or cwd) */
	unsigned int flags; /* DCACHE_Q_FOLLOW | DCACHE_Q_DIRECTORY, as asked */
	uint64_t cred;      /* the credentials key (session_cred_key) */
};

/* An offer for the shared path table (dcache_ops.spath_put): the name, the
 * answer, and the directories the walk looked names up in, in order. */
struct dcache_spath_fill {
	struct dcache_spath_key key;
	uint64_t h;         /* dcache_spath_hash(&key, path, len) */
	uint64_t pos;       /* spath_pos() before the walk */
	const char *path;
	size_t len;
	int err;            /* ENOENT or ENOTDIR */
	unsigned int n;     /* components looked up, in order: */
	int wd[DCACHE_SPATH_DIRS];        /* the directory's watch number */
	uint32_t nidx[DCACHE_SPATH_DIRS]; /* dcache_spath_name_slot(wd, component) */
};

/*
 * Calls out of the cache.  watch_dir, unwatch_dir and fs_cacheable run with
 * the writer mutex held; the kernel_* calls may run with or without it.  None
 * may call back into the cache (ops context); all may block.  Each returns 0 / a length / a
 * watch id on success and a negative errno on failure.
 */
struct dcache_ops {
	/* Watch directory `path` (absolute, symlink-free) so that every later
	 * change in it reaches dcache_event_*(); must be in place before it
	 * returns.  Returns a watch id >= 0 (the same id for the same inode),
	 * -EAGAIN for a transient failure (the caller passes through and asks
	 * again later), or another negative errno (nothing below `path` is
	 * cached until the directory's dentry is recreated; -ENOSPC and -EMFILE
	 * mean a watch limit or budget, counted as DCACHE_STAT_PASS_WATCH).
	 * names_only: the directory's own events and its entries' names
	 * suffice (create, delete, move; no IN_ATTRIB/IN_MODIFY): a scratch
	 * directory (dcache_set_scratch).  A watch is never narrowed: a
	 * names-only request for an inode watched in full keeps it in full. */
	int (*watch_dir)(const char *path, int names_only);
	/* Drop one reference to watch `wd`; the last dentry using it is gone. */
	void (*unwatch_dir)(int wd);
	/* lstat(2) of `path` as the kernel answers it now. */
	int (*kernel_lstat)(const char *path, struct stat *st);
	/* readlink(2) of `path`: bytes written (not NUL-terminated) or -errno. */
	long (*kernel_readlink)(const char *path, char *buf, size_t size);
	/* statx(2) of `path` with AT_SYMLINK_NOFOLLOW and `mask`: 0 or -errno.
	 * Optional: NULL makes dcache_statx() pass every call through. */
	int (*kernel_statx)(const char *path, unsigned int mask, struct statx *out);
	/* faccessat(AT_FDCWD, path, mode, flags) as the kernel answers it now. */
	int (*kernel_access)(const char *path, int mode, int flags);
	/* getcwd(2) into buf: 0 or -errno (an unreachable cwd is an error). */
	int (*kernel_getcwd)(char *buf, size_t size);
	/* List directory `path` (absolute, symlink-free): add(arg, name, len) for
	 * every entry but "." and "..".  Returns the number of names, -E2BIG past
	 * `max` names, -EOPNOTSUPP if lookups in it fold case, or -errno.  May be
	 * NULL (no complete directories). */
	long (*kernel_listdir)(const char *path, size_t max,
			       int (*add)(void *arg, const char *name, size_t len), void *arg);
	/* How names on the filesystem of device `dev` (reached through `path`)
	 * may be cached: 1 = every change to it produces inotify events here;
	 * 2 = others may change it behind this kernel (NFS, FUSE...): cache with
	 * the TTLs of dcache_set_ttl(), events still applied; 0 = never. */
	int (*fs_cacheable)(const char *path, dev_t dev);
	/* Optional; used instead of kernel_listdir when set.  The same listing,
	 * with a type per name: DT_DIR or DT_REG where getdents64 said so AND the
	 * name was not a mount point when the listing was read (the op checks
	 * the mount table after getdents64: a mount point's d_type is the
	 * covered entry's), DT_UNKNOWN for everything else.  A typed name is
	 * hashed as a directory or regular file without an lstat of its own
	 * (attributes, search and access permission are still asked lazily).
	 * With `shared` and shared->only_shared: the session's listing only;
	 * none (or more than `max` names) is a negative return, no getdents64. */
	long (*kernel_listdir_typed)(const char *path, const struct dcache_listing *shared,
				     size_t max,
				     int (*add)(void *arg, const char *name, size_t len,
						unsigned char type),
				     void *arg);
	/* May be NULL.  Under the writer mutex, for directory `wd` (a live
	 * dentry's watch id) whose listing is about to be read: 1 with *t
	 * filled if the listing may come from, or go to, the session's shared
	 * listings (kernel_listdir_typed then gets t as `shared`), else 0.
	 * Not called for TTL filesystems (a shared answer has no age). */
	int (*listing_ticket)(int wd, struct dcache_listing *t);
	/* May be NULL.  Under the writer mutex, instead of watch_dir for the
	 * directory that is entry `name` (len bytes) of the directory whose
	 * ticket is t, on device `dev` (inode `ino`, 0: unknown): the watch id
	 * the session knows for it (dcache_arena_get_watch), made this
	 * process's as watch_dir would, or -1 (call watch_dir). */
	int (*shared_watch)(const struct dcache_listing *t, const char *name, size_t len,
			    uint64_t dev, uint64_t ino);
	/* May be NULL.  Under the writer mutex, after watch_dir() of that entry
	 * returned `wd`, with the ticket listing_ticket(pwd) gave before the
	 * call: offer the entry's watch to the session. */
	void (*shared_watch_put)(const struct dcache_listing *t, const char *name, size_t len,
				 int wd, uint64_t dev, uint64_t ino);
	/* May be NULL.  With a ticket listing_ticket() gave for a directory's
	 * own watch (before the kernel is asked): its attributes as the
	 * session knows them (0 with *st, else -1: ask the kernel), and the
	 * kernel's answer offered back.  No lock needed. */
	int (*shared_attr_get)(const struct dcache_listing *t, struct stat *st);
	/* May be NULL.  The same for what entry `name` of the ticket's
	 * directory is (dcache_arena_get_name: DT_UNKNOWN for absent, DT_DIR,
	 * DT_REG, DT_LNK with its target), and the kernel's answer offered. */
	int (*shared_name_get)(const struct dcache_listing *t, const char *name, size_t len,
			       unsigned int *type, uint64_t *dev, uint64_t *ino, char *target,
			       size_t tcap, size_t *tlen);
	void (*shared_name_put)(const struct dcache_listing *t, const char *name, size_t len,
				unsigned int type, uint64_t dev, uint64_t ino, const char *target,
				size_t tlen);
	void (*shared_attr_put)(const struct dcache_listing *t, const struct stat *st);
	/* May be NULL.  With a ticket for a directory's own watch: 0 if the
	 * session knows that the kernel lets this process's credentials
	 * search it (else -1: ask the kernel), and the kernel's yes offered
	 * (a lookup in it that answered, or said ENOENT).  No lock needed. */
	int (*shared_search_get)(const struct dcache_listing *t);
	void (*shared_search_put)(const struct dcache_listing *t);
	/* May be NULL.  With a ticket for a directory's watch (listing_ticket,
	 * taken before the kernel is asked): the attributes of its regular
	 * file `name` as the session knows them (dcache_arena_get_file), if
	 * they are of device dev and inode ino (0: any), as the cache's
	 * dentry knows it: 0 with *st, else -1.  No lock needed. */
	int (*shared_file_get)(const struct dcache_listing *t, const char *name, size_t len,
			       uint64_t dev, uint64_t ino, struct stat *st);
	/* May be NULL.  Instead of kernel_lstat(path) of that file where the
	 * answer may be offered (t->can_put): 0 with the kernel's answer in
	 * *st and what may be offered in *tok (the file's own watch, or
	 * else its name), 1 (the kernel's lstat failed), or -1 (not asked:
	 * ask kernel_lstat).  Then shared_file_put offers it, if the cache
	 * kept the attributes.  No lock held. */
	int (*shared_file_ask)(const struct dcache_listing *t, const char *path, const char *name,
			       size_t len, struct stat *st, struct dcache_file_tok *tok);
	void (*shared_file_put)(const struct dcache_listing *t, const char *name, size_t len,
				const struct dcache_file_tok *tok, const struct stat *st);
	/* May be NULL.  Called once per process (again in a fork child) on
	 * first use, before the cache starts any thread of its own (liburcu's
	 * call_rcu and hash-resize workers), under the init lock, never under
	 * the writer mutex.  The place to create long-lived fds: while the
	 * process is still single-threaded, moving an fd above a high floor
	 * grows the fd table without the RCU grace period that
	 * expand_fdtable() waits for once the table is shared by threads. */
	void (*prepare)(void);
	/* May be NULL.  1 if every thread of the process but the caller is one
	 * that invalidate/ started (blocks every signal, never waits inside a
	 * read-side section for the caller), else 0; may read /proc.  Called
	 * with no lock of the cache held, only while the cache has no thread
	 * of its own: then its deferred frees run after a grace period in the
	 * caller (dcache.c, "Threads we do not start"). */
	int (*sole_thread)(void);
	/* May be NULL (no session).  The shared path table (dcache_spath.c):
	 * spath_pos gives how far this process has applied the session's
	 * events (its ring position), sampled before a walk whose negative
	 * answer it may offer; spath_put offers that answer, if the
	 * generations it samples then can vouch for the walk (S5).  Both run
	 * inside the walk's read-side section: no lock, no syscall. */
	uint64_t (*spath_pos)(void);
	void (*spath_put)(const struct dcache_spath_fill *f);
};

/* Per-thread counters, summed by dcache_stats_sum(). */
struct dcache_stats {
	uint64_t hits;          /* answered from the cache with success */
	uint64_t neg_hits;      /* answered from the cache with an error */
	uint64_t misses;        /* kernel asked to populate the cache */
	uint64_t passthrough;   /* the caller had to ask the kernel itself */
	uint64_t invalidations; /* dentries killed or attributes dropped */
	uint64_t pass_watch;    /* of passthrough: below a directory that got no watch
				 * because of a watch limit (ops->watch_dir -ENOSPC/-EMFILE) */
	uint64_t pass_fs;       /* of passthrough: a filesystem not cached (pseudo, unknown),
				 * an excluded directory, or one that cannot be watched */
	uint64_t pass_attr;     /* of passthrough: attributes never kept (st_nlink > 1, FIFOs...) */
	uint64_t pass_racy;     /* of passthrough: mtime/ctime too recent (RCUWALK_RACY_MS) */
	uint64_t pass_rent;     /* of passthrough: below a directory not watched yet, within
				 * its first lookups (dcache_set_dir_rent) */
	uint64_t index_hits;    /* walks the path index resolved in one step (whole name
				 * to final dentry); their answers count as hits/neg_hits */
	uint64_t prefix_hits;   /* walks begun at the index entry of their name's directory
				 * prefix: one component walked (dcache_walk.c, "Prefix") */
	uint64_t shared_path_hits; /* lookups the session's shared path table answered
				 * (dcache_spath.c); counted in neg_hits too */
	uint64_t fill_ns;       /* ns spent filling the cache on misses: CLOCK_MONOTONIC
				 * around each dc_populate_rcu() that the lookup made for
				 * the cache (not one whose kernel answer went to the caller
				 * as a pass-through: the caller would have made that call) */
};

enum dcache_stat_id {
	DCACHE_STAT_HIT,
	DCACHE_STAT_NEG_HIT,
	DCACHE_STAT_MISS,
	DCACHE_STAT_PASS,
	DCACHE_STAT_INVAL,
	DCACHE_STAT_PASS_WATCH, /* counted by the cache itself, with DCACHE_STAT_PASS */
	DCACHE_STAT_PASS_FS,    /* likewise: uncached filesystem, excluded or unwatchable dir */
	DCACHE_STAT_PASS_ATTR,  /* likewise: attributes never kept (hard links, FIFOs, devices) */
	DCACHE_STAT_PASS_RACY,  /* likewise: racy timestamps, the kernel's answer not kept */
	DCACHE_STAT_PASS_RENT,  /* likewise: a directory's first lookups (dcache_set_dir_rent) */
	DCACHE_STAT_INDEX,      /* a walk resolved by the path index */
	DCACHE_STAT_PREFIX,     /* a walk begun at its directory prefix's index entry */
	DCACHE_STAT_SPATH,      /* a lookup answered by the shared path table */
	DCACHE_STAT_FILL_NS,    /* ns, added by the lookups themselves (dcache_stat_add) */
	DCACHE_STAT_N_
};

/* Install the ops and the memory cap (bytes; 0 = default 64 MiB).  Call once,
 * before any other dcache_* function; cheap (allocates lazily).  Any thread. */
int dcache_init(const struct dcache_ops *ops, size_t max_bytes);

/* Caching policy; call before lookups, with dcache_init.  racy_ns: a
 * non-directory whose mtime/ctime is that recent keeps no cached attributes
 * (0 = off; default 2 s).  no_negative: absent names are never cached.
 * exclude: canonical absolute directories whose contents pass through.
 * Returns 0, or -EINVAL/-E2BIG (more than DCACHE_MAX_EXCLUDES prefixes). */
#define DCACHE_MAX_EXCLUDES 16
int dcache_set_policy(long long racy_ns, int no_negative, const char *const *exclude,
		      unsigned int nexclude);

/* Scratch directories: a directory that is sticky and writable by all
 * (/tmp, /var/tmp, /dev/shm) is watched for names only (on: default), so
 * that the kernel does not walk its children's dentries, stale ones
 * included, to mark them (inotify_add_watch of /tmp: 42 ms with 522,000
 * negative dentries, 6 us without the attribute events).  Its files keep
 * no attributes or access facts; its subdirectories keep theirs through a
 * watch of their own.  Call before lookups, with dcache_init. */
void dcache_set_scratch(int on);

/* TTLs for filesystems fs_cacheable() calls 2: names and attributes live
 * ttl_ns, absent names neg_ttl_ns (0 = never cached there).  Default 1 s,
 * 1 s.  Call before lookups, with dcache_init. */
void dcache_set_ttl(uint64_t ttl_ns, uint64_t neg_ttl_ns);

/* Directory rent: a directory not watched yet (not a TTL filesystem's) is
 * watched, by this process or from the session, only at the (lookups + 1)-th
 * lookup of a name in it; the first `lookups` pass through
 * (DCACHE_STAT_PASS_RENT).  0: at the first, as before.  Call before
 * lookups, with dcache_init, or (preload/warm_learn.c) before this process's
 * cache starts: a thread that starts it meanwhile may rent under either
 * value, and renting or not changes no answer. */
void dcache_set_dir_rent(unsigned int lookups);

/* Complete-directory policy: after `probes` names were found absent in a
 * directory (0 = never; doubled each time it was complete before), read its
 * listing if it has at most `max_entries` names; then every other name in it
 * is answered ENOENT from the cache.  Call before lookups, with dcache_init. */
void dcache_set_completion(unsigned int probes, unsigned int max_entries);

/* Path-index policy: a thread fills index slots only once it has had
 * `min_answers` cached answers (default 64: a process that makes fewer never
 * touches the index's pages); then directory prefix entries at their first
 * walk and a name's own entry at its second (0: every name at its first
 * walk, as the tests want).  Call before lookups. */
void dcache_set_index(unsigned long min_answers);
/* Whether whole names get index entries of their own (default on here; the
 * shim turns them off unless RCUWALK_NAME_INDEX=1): off, only directory
 * prefixes are indexed, and a name's walk starts from its prefix's entry.
 * Call before lookups. */
void dcache_set_index_names(int on);
/* Use the shared path table of arena `mem` (NULL: stop) with credentials
 * key `cred`, while the arena's mount count equals *mounts (the ring's).
 * invalidate/, under the dcache mutex, once this instance has caught up
 * with the session; emptying the cache (dcache_reset, events lost, a
 * credential change) and a fork child stop it.  Readers see it at their
 * next walk. */
void dcache_spath_use(void *mem, uint64_t cred, const uint32_t *mounts);

/*
 * Resolve `path` (absolute, or relative to the cwd) as the kernel would for
 * the call described by `flags`; `amode` is access(2)'s mode for
 * DCACHE_Q_ACCESS/EACCESS.  Returns 0 (success; *st filled for DCACHE_Q_STAT),
 * a positive errno that the kernel would return (ENOENT, ENOTDIR, ELOOP, ...),
 * or DCACHE_PASS when the caller must make the real syscall.  Populates the
 * cache on misses through the ops.  Any thread except ops context; the
 * caller guarantees `path` is a readable NUL-terminated string.
 */
int dcache_lookup(const char *path, unsigned flags, int amode, struct stat *st);
/* The same for a caller that knows strnlen(path, PATH_MAX) already (len). */
int dcache_lookup_len(const char *path, size_t len, unsigned flags, int amode, struct stat *st);

/* readlink(2) of `path` from the cached target: 0 with min(length, size) bytes
 * (no NUL) in buf and that count in *len, a positive errno (EINVAL: not a
 * symlink) or DCACHE_PASS.  size > 0.  Any thread except ops context. */
int dcache_readlink(const char *path, char *buf, size_t size, size_t *len);
/* realpath(3) of `path` as glibc 2.36 computes it: 0 with the result in buf, a
 * positive errno with glibc's partial result (up to the failing component) in
 * buf, or DCACHE_PASS; *einval = 1 if glibc's readlinks leave errno EINVAL on
 * success.  size >= PATH_MAX.  Any thread except ops context. */
int dcache_realpath(const char *path, char *buf, size_t size, int *einval);
/* statx(2) (AT_FDCWD, AT_SYMLINK_NOFOLLOW unless follow) for request `mask`: 0
 * with *out as the kernel filled it for that object and that exact mask, a
 * positive errno or DCACHE_PASS.  Any thread except ops context. */
int dcache_statx(const char *path, int follow, unsigned int mask, struct statx *out);

/*
 * Invalidation, called by the event reader (invalidate/) for watch `wd`.
 * `name` is the entry inside the watched directory that changed.  Bumps the
 * affected dentries' d_seq, unhashes them (with their subtree for
 * DCACHE_EV_ENTRY/ATTR on a directory) and frees them after a grace period.
 * Writer context.
 */
void dcache_event_child(int wd, const char *name, enum dcache_event ev);
/* A batch of events begins: each of them was queued before the first is
 * applied (one read() of the instance, the ring's records up to a tail
 * sampled first), and no other batch is applied until it ends.  Called by
 * the event applier before each batch; lets a write event repeated within a
 * batch skip its second kernel question (dcache_events.c, "A write event
 * again").  Any thread; lock-free. */
void dcache_events_batch_begin(void);
/* The watched directory `wd` itself changed (attributes, or it is gone). */
void dcache_event_self(int wd, enum dcache_event ev);
/* Drop the cached attributes (and statx answers) of every dentry of inode
 * (dev, ino), directory or not, under any name (a new hard link changed its
 * st_nlink/st_ctime, an inode-flag ioctl its stx_attributes, without an event
 * about those names).  Any thread except ops context; O(cached dentries). */
void dcache_forget_inode(dev_t dev, ino_t ino);
/* Forget everything (queue overflow, credential change).  Writer context. */
void dcache_invalidate_all(void);
/* Events were lost (queue overflow): names removed meanwhile are unknown, so
 * from now on every write or attribute event may concern any file (see
 * dcache_events.c, "Names that outlive their inode's other names").  Writer context. */
void dcache_events_lost(void);

/* Forget everything, the root directory's own watch and verdict included:
 * after chroot() or a namespace change "/" may be another directory, and
 * after invalidate/ lost its inotify instance every watch id is meaningless.
 * The root's watch is released through ops->unwatch_dir.  Writer context. */
void dcache_reset(void);

/* Tear the cache down completely, its hash table and the liburcu threads it
 * started (hash resize worker, call_rcu thread) included, so that the
 * process can become single-threaded; the next lookup starts afresh.  Only
 * when no other thread can be using the cache (the caller has checked that
 * the process has no threads but its own and the cache's).  Not in ops
 * context nor a read-side section. */
void dcache_quiesce(void);
/* How many threads the cache's current state has liburcu run for it: our
 * call_rcu thread, started at the first free (0 or 1; the table has no
 * resize worker).  Any thread. */
int dcache_threads(void);

/* The process changed its working directory: forget the cached cwd.
 * Writer context (takes the writer mutex). */
void dcache_cwd_changed(void);

/* Register the calling thread with urcu-bp now.  Any thread, holding no lock
 * of ours, outside a read-side section.  urcu-bp registers a thread at its
 * first rcu_read_lock() under its registry mutex, which its before-fork hook
 * holds until the fork is done (shim.c fork()); a thread that takes a lock
 * the fork path waits for (invalidate/'s read_mutex) and may then enter its
 * first read-side section calls this before taking it. */
void dcache_thread_register(void);

/* Fork support: dcache_fork_prepare() takes the writer mutex (call before
 * fork(), before the urcu-bp/call_rcu "before fork" hooks), dcache_fork_parent()
 * releases it, dcache_fork_child() resets the child to an empty cache without
 * touching the parent's memory. */
void dcache_fork_prepare(void);
void dcache_fork_parent(void);
void dcache_fork_child(void);
/* Binds in the calling (parent) process the libc functions the *_fork_child()
 * hooks call, so that children do not (dcache.c).  Any thread; once. */
void dcache_fork_bind(void);

/*
 * liburcu loaded at the first lookup (dcache_urcu.c; in the shims only, not
 * in rcuwalk_cache: what links cache/ elsewhere links liburcu itself).  With
 * liburcu linked into the shim these are trivial (loaded from the start).
 */
/* Load liburcu-bp and liburcu-cds now (dlopen) and resolve the names cache/
 * and invalidate/ call; 1 if usable (at once when already loaded), 0 if not
 * (for good).  Any thread, with the shim's own calls passing through
 * (preload/shim.c's preload_load_urcu() wraps it).  Thread-safe; not
 * async-signal-safe (the first lookup). */
int dcache_urcu_load(void);
/* Whether liburcu is loaded (always, when linked in): fork() during the
 * warm-up takes liburcu's fork hooks only then.  Any thread; atomic. */
int dcache_urcu_loaded(void);
/* fork(): prepare takes the load's mutex and says whether liburcu is loaded
 * (then liburcu's fork hooks are due); parent releases it; child makes it
 * anew.  Called by the shim's fork() only, in that order. */
int dcache_urcu_fork_prepare(void);
void dcache_urcu_fork_parent(void);
void dcache_urcu_fork_child(void);
/* How a forward reached before the load loads: `load` is called instead of
 * dcache_urcu_load() (preload/: it raises in_shim and keeps errno).  Call
 * once, from preload_init(), before the cache can run. */
void dcache_urcu_set_loader(int (*load)(void));

/* Add one to this thread's counter `id`.  Any thread; writes thread-local
 * memory only. */
void dcache_stat_inc(enum dcache_stat_id id);
/* Add n to this thread's counter `id` (DCACHE_STAT_FILL_NS); not for
 * DCACHE_STAT_PASS.  Any thread; writes thread-local memory only. */
void dcache_stat_add(enum dcache_stat_id id, uint64_t n);
/* Whether this thread's last lookup that passed through was counted under a
 * reason of the cache's own (DCACHE_STAT_PASS_WATCH/_FS/_ATTR/_RACY/_RENT).  Any
 * thread; reads thread-local memory only. */
int dcache_last_pass_classified(void);
/* 1 if this thread is in an idle spell (its recent lookups found next to
 * nothing cached: dcache_populate.c, "Idle spells"): this lookup is counted
 * as passed through (DCACHE_STAT_PASS_RENT) and the caller asks the kernel;
 * else 0.  Any thread, before dcache_lookup*; thread-local memory only. */
int dcache_idle_pass(void);
/* Whether this thread's last lookup asked the kernel to fill the cache (a
 * miss) before it answered.  Any thread; reads thread-local memory only. */
int dcache_last_lookup_filled(void);
/* Sum every thread's counters into *out (racy snapshot).  Any thread. */
void dcache_stats_sum(struct dcache_stats *out);

/* Bytes the cache currently holds for dentries, attributes and complete
 * directories' listings. */
size_t dcache_memory_bytes(void);
/* Number of hashed dentries (positive and negative). */
size_t dcache_count(void);
/* Buckets the hash table was last sized for (0: no table).  Any thread. */
size_t dcache_table_buckets(void);

/*
 * Shared entries (dcache_arena.c; doc/session.md, "Phase 2: shared
 * entries"): listings, watches of directory entries, what names are,
 * directories' attributes and who may search them, kept once for every process of a session, in a
 * mapping of DCACHE_ARENA_SIZE bytes that the watcher creates and every
 * attached process maps read-write.  Keyed by the session's watch number;
 * an entry answers while the watch's generation is the one sampled before
 * the kernel was asked.  Lock-free and async-signal-safe: a writer
 * killed anywhere leaves nothing visible half-done.  No liburcu: the watcher
 * links it too.  A listing is `count` times: a d_type byte, the name, NUL.
 */
#define DCACHE_ARENA_SIZE ((size_t)64 << 20)
/* Format a zero-filled mapping of `size` bytes: 0 or -EINVAL.  The watcher,
 * before any process can map it. */
int dcache_arena_format(void *mem, size_t size);
/* 0 if `mem` (`size` bytes) is an arena this code formats, else -EPROTO.
 * Attach, before any other dcache_arena_* call on it. */
int dcache_arena_check(const void *mem, size_t size);
/* What entries of watch `wd` say may have changed (wd < 0: events were
 * lost, every entry): bump its generation.  The watcher, inside its read
 * cycle, before it publishes the event's record; any process, with wd < 0,
 * for a change no event reports (an inode-flag ioctl). */
void dcache_arena_invalidate(void *mem, int wd);
/* The mount table changed, the watcher's count of changes is now `count`:
 * bump every generation, then say that count's change is done.  The
 * watcher only, after counting the change where processes read it. */
void dcache_arena_mounts_changed(void *mem, uint32_t count);
/* The last count passed to dcache_arena_mounts_changed (acquire).  Any thread. */
uint32_t dcache_arena_mounts_done(const void *mem);
/* Watch `wd`'s generation now (acquire).  Any thread of an attached process. */
uint64_t dcache_arena_gen(const void *mem, int wd);
/* The generation slot watch `wd` shares with others (wd modulo the count):
 * one bump serves every watch of a slot. */
unsigned int dcache_arena_gen_slot(int wd);
/* Publish the listing of watch `wd` read after its generation was `gen`
 * (its watch in place before that sample): 0, -ESTALE (the generation has
 * moved), -ENOSPC (arena full) or -EINVAL.  Any thread. */
int dcache_arena_put(void *mem, int wd, uint64_t gen, const char *ents, size_t len, size_t count);
/* Copy the newest listing of watch `wd` still valid into buf (`cap` bytes):
 * its length in bytes with *count names, -E2BIG (larger than cap) or
 * -ENOENT (none, or a corrupt arena: never a fault).  Any thread. */
long dcache_arena_get(const void *mem, int wd, char *buf, size_t cap, size_t *count);
/* dcache_arena_get, and -E2BIG for a listing of more than `max` names,
 * found so before any name is copied.  Any thread. */
long dcache_arena_get_max(const void *mem, int wd, char *buf, size_t cap, size_t max,
			  size_t *count);
/* Publish that entry `name` (len bytes) of directory `wd` is the directory
 * watched as `child`, (dev, ino), learned by a watch added through that
 * name after wd's generation was `gen`: as dcache_arena_put.  Any thread. */
int dcache_arena_put_watch(void *mem, int wd, uint64_t gen, const char *name, size_t len,
			   int child, uint64_t dev, uint64_t ino);
/* The watch of entry `name` of directory `wd`, if a valid one is known: 0
 * with *child, *dev, *ino; -ENOENT if not (or a corrupt arena).  Any thread. */
int dcache_arena_get_watch(const void *mem, int wd, const char *name, size_t len, int *child,
			   uint64_t *dev, uint64_t *ino);
/* Publish what entry `name` (len bytes) of directory `wd` is: `type`
 * DT_UNKNOWN (absent), DT_DIR, DT_REG or DT_LNK (then its target, tlen
 * bytes), on (dev, ino), asked after wd's generation was `gen`: as
 * dcache_arena_put.  Any thread. */
int dcache_arena_put_name(void *mem, int wd, uint64_t gen, const char *name, size_t len,
			  unsigned int type, uint64_t dev, uint64_t ino, const char *target, size_t tlen);
/* What entry `name` of directory `wd` is, if a valid answer is known: 0 with
 * *type, *dev, *ino and a symlink's target in target[0..*tlen) (tcap bytes
 * of room); -ENOENT if not (none, or a corrupt arena).  Any thread. */
int dcache_arena_get_name(const void *mem, int wd, const char *name, size_t len, unsigned int *type,
			  uint64_t *dev, uint64_t *ino, char *target, size_t tcap, size_t *tlen);
/* Publish the lstat answer `st` of the directory watched as `wd`, asked
 * after wd's generation was `gen`: as dcache_arena_put.  Any thread. */
int dcache_arena_put_attr(void *mem, int wd, uint64_t gen, const struct stat *st);
/* The attributes of the directory watched as `wd`, if a valid answer is
 * known: 0 with *st, or -ENOENT (none, or a corrupt arena).  Any thread. */
int dcache_arena_get_attr(const void *mem, int wd, struct stat *st);
/* Publish that the kernel let a process whose credentials key is `cred`
 * (non-zero) search the directory watched as `wd`, asked after wd's
 * generation was `gen`: as dcache_arena_put.  Any thread. */
int dcache_arena_put_search(void *mem, int wd, uint64_t gen, uint64_t cred);
/* 0 if a valid answer says credentials `cred` may search directory `wd`,
 * else -ENOENT (none, or a corrupt arena).  Any thread. */
int dcache_arena_get_search(const void *mem, int wd, uint64_t cred);
/* Regular files' attributes (ENT_FILE, dcache_arena.c A9).  File watch
 * numbers at or past DCACHE_ARENA_FILE_WDS are never used. */
#define DCACHE_ARENA_FILE_WDS 32768u
/* Let file watches numbered below n (0: none) vouch for shared attributes.
 * The watcher, after dcache_arena_format. */
void dcache_arena_set_file_wds(void *mem, uint32_t n);
/* Whether a file watch may be made now (numbers given, none past them
 * yet).  Any thread of an attached process. */
int dcache_arena_file_watches_on(const void *mem);
/* Whether file watch `fwd` may vouch for attributes; a number at or past
 * the limit ends file watches for the session.  Any thread of an attached
 * process. */
int dcache_arena_file_watch_ok(void *mem, int fwd);
/* Publish that entry `name` of directory `wd` (asked after wd's generation
 * was `gen`) is the regular file of one link `st` (its fstat), watched as
 * `fwd` whose generation was `fgen` before `st` was read: as
 * dcache_arena_put, or -ERANGE (fwd past the limit).  Any thread. */
int dcache_arena_put_file(void *mem, int wd, uint64_t gen, const char *name, size_t len, int fwd,
			  uint64_t fgen, const struct stat *st);
/* The attributes of regular file `name` of directory `wd` if a valid
 * answer is known (both generations hold): 0 with *st, else -ENOENT (none,
 * or a corrupt arena).  Any thread. */
int dcache_arena_get_file(const void *mem, int wd, const char *name, size_t len, struct stat *st);
/* A filesystem's class, as fs_cacheable's callers learn it (preload/):
 * exact through inotify, changed behind this kernel (TTLs), or neither. */
enum { DCACHE_FS_LOCAL = 1, DCACHE_FS_TTL = 2, DCACHE_FS_NONE = 3 };
/* The class of the mount whose unique ID (statx STATX_MNT_ID_UNIQUE) is
 * `id`, as a process of the session found it; 0 if none is known (A8).
 * Any thread. */
int dcache_arena_fs_class(const void *mem, uint64_t id);
/* Publish mount `id`'s class (a DCACHE_FS_*): 0, or -ENOSPC (no free slot
 * near its hash) or -EINVAL.  The first class put for an id stays.  Any
 * thread. */
int dcache_arena_fs_class_put(void *mem, uint64_t id, int cls);
/*
 * Memory behind the arena (dcache_arena.c, A6): entries are taken only
 * below a limit that the watcher raises as it allocates memory in chunks
 * (from dcache_arena_format: the whole size).  A take that leaves less
 * than DCACHE_ARENA_MARGIN below the limit, or is refused, bumps `wants`.
 */
#define DCACHE_ARENA_MARGIN ((uint64_t)1 << 20)
/* Entries may now end at `bytes` (at least the header, at most the size);
 * memory up to it must be allocated first.  The watcher only: lowered only
 * before any process maps the arena, raised after. */
void dcache_arena_set_limit(void *mem, uint64_t bytes);
/* The current limit, and the bytes left below it.  Any thread. */
uint64_t dcache_arena_limit(const void *mem);
uint64_t dcache_arena_room(const void *mem);
/* The room the watcher keeps ahead: DCACHE_ARENA_MARGIN, or the largest
 * take refused for want of room, if larger.  The growing thread. */
uint64_t dcache_arena_want_room(const void *mem);
/* The count of requests for room (acquire), and a wait (up to ns) for it
 * to move past `seen`.  The watcher's growing thread. */
uint32_t dcache_arena_wants(const void *mem);
void dcache_arena_wait_wants(void *mem, uint32_t seen, long ns);
/* How many puts the arena refused for want of space.  Any thread. */
uint64_t dcache_arena_refused(const void *mem);
/* Whether a take was refused for want of room with less than
 * DCACHE_ARENA_MARGIN left (dcache_arena.c, A2): where the arena cannot
 * grow, time to reset it.  The watcher's growing thread. */
int dcache_arena_wants_reset(const void *mem);
/* Give the whole entry space back: a new epoch, every bucket empty, the
 * shared path table ended for the session (A2, A7, S6).  Every entry of
 * the old epoch stops answering; nothing a process reads or writes
 * meanwhile becomes wrong.  The watcher's growing thread only (tests: any
 * one thread). */
void dcache_arena_reset(void *mem);
/* How many resets so far.  Any thread. */
uint64_t dcache_arena_resets(const void *mem);

/*
 * The shared path table (dcache_spath.c), in the arena: a whole name to the
 * negative answer a walk found for it, valid while the generations of the
 * directories it passed are unchanged.  Lock-free, async-signal-safe, no
 * liburcu; a corrupt table gives wrong answers, never a fault.
 */
/* The key's hash (never 0).  Any thread. */
uint64_t dcache_spath_hash(const struct dcache_spath_key *k, const char *path, size_t len);
/* ENOENT or ENOTDIR if a valid entry answers (k, path[0..len)), else 0.
 * Any thread of an attached process, after its sync point. */
int dcache_spath_find(const void *mem, const struct dcache_spath_key *k, const char *path,
		      size_t len, uint64_t h);
/* The name generation slot of `name` (len bytes) in directory `wd`.  Any
 * thread. */
uint32_t dcache_spath_name_slot(int wd, const char *name, size_t len);
/* Bump what event (wd, mask, name) may change: a name's binding, or the
 * directory's own state (no name); wd < 0 or IN_Q_OVERFLOW: everything.
 * The watcher, for every event, before it publishes the event's record. */
void dcache_spath_event(void *mem, int wd, uint32_t mask, const char *name, size_t len);
/* Sample the generations of components (wd[i], nidx[i]), i < n: 0, or
 * -ENOENT while the table has none yet.  Any thread (under a ticket). */
int dcache_spath_gens(const void *mem, const int *wd, const uint32_t *nidx, unsigned int n,
		      uint64_t *sgen, uint64_t *ngen);
/* Publish that (f->key, f->path) is f->err, found by a walk through
 * f->n components whose generations were sgen[], ngen[] (dcache_spath_gens):
 * 0, -EINVAL, -ENOSPC (no table yet, or no room), -EBUSY (slot being
 * written), -EPERM (no table in this arena).  The caller vouches for the
 * generations (invalidate/inval_shared.c). */
int dcache_spath_put(void *mem, const struct dcache_spath_fill *f, const uint64_t *sgen,
		     const uint64_t *ngen);
/* No path table in this arena: every put is refused (-EPERM), every find
 * answers 0.  The watcher, before any process maps the arena. */
void dcache_spath_off(void *mem);
/* 0 if dcache_spath_off() was called on this arena.  Any thread. */
int dcache_spath_on(const void *mem);
/* Live entries evicted from the current table, and its slots (0: none
 * yet).  Any thread. */
void dcache_spath_counts(const void *mem, uint64_t *evicted, unsigned int *slots);

/*
 * A census of the arena, for reports only (examples/bench/scale_check.c):
 * read-only, it walks every bucket and the path table, so it is not for a
 * lookup.  It trusts nothing it reads (A4, S3): a corrupt arena gives wrong
 * figures, never a fault.  Any thread.
 */
struct dcache_arena_kind {
	uint64_t n;     /* entries reachable from a bucket head */
	uint64_t live;  /* of those, under their watch's current generation */
	uint64_t bytes; /* the arena space they take */
	uint64_t deep;  /* of those, past the first ARENA_CHAIN_MAX of their
			 * bucket's chain: no reader looks that far */
};
struct dcache_arena_census {
	uint64_t size, limit, bump; /* bytes: mapped, backed by memory, taken */
	uint64_t refused;           /* takes refused for want of room */
	uint64_t resets;            /* the entry space given back whole (A2) */
	struct dcache_arena_kind listing, watch, name, attr, search, file;
	uint64_t longest;           /* the longest bucket chain, entries */
	/* The shared path table (dcache_spath.c); 0 where there is none. */
	uint64_t sp_slots;          /* the current table's slots */
	uint64_t sp_used;           /* slots holding an answer */
	uint64_t sp_valid;          /* of those, whose generations still hold */
	uint64_t sp_evicted;        /* live answers replaced in the current table */
	uint64_t sp_chains;         /* distinct chains the used slots refer to */
	uint64_t sp_chain_bytes;    /* their bytes */
	uint64_t sp_table_bytes;    /* the current table's bytes (64 per slot) */
	uint64_t sp_gens_bytes;     /* the path generations' bytes */
};
void dcache_arena_census(const void *mem, struct dcache_arena_census *c);

#ifdef __cplusplus
}
#endif
#endif /* RCUWALK_DCACHE_H */
