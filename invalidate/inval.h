/* SPDX-License-Identifier: MIT */
/*
 * inval.h - rcuwalk's coherence engine: inotify watches and the event reader.
 *
 * invalidate/ owns one inotify instance per process (created lazily, on the
 * first watch the cache asks for) and one reader thread that turns events into
 * calls of cache/'s invalidation API (dcache_event_*).  Events are read and
 * applied under one mutex, so that a thread that drains the queue itself
 * (inval_drain) knows that, when it returns, every event queued before the
 * call has been applied to the cache.
 *
 * inotify(7) is used directly, not libinotifytools: that library keeps its
 * state in process globals, which a host program that uses it too (e.g.
 * inotifywait run under the shim) would share with us.
 */
#ifndef RCUWALK_INVAL_H
#define RCUWALK_INVAL_H

#include <limits.h>

#include "dcache.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fill ops->watch_dir, ops->unwatch_dir and ops->prepare with the inotify
 * implementation.  Call before dcache_init().  Creates nothing yet: the
 * instance and its reader thread start from ops->prepare, on first use. */
void inval_fill_ops(struct dcache_ops *ops);

/* Read every queued event (and a mount-table change) and apply it before
 * returning, in the calling thread: one poll() of the inotify and mountinfo
 * fds, a read() only if something is pending.  Strict mode calls it before
 * every lookup.  No-op (no syscall) before the first watch exists.  Any
 * thread, not from ops context; takes the reader mutex (the reader may hold
 * events it has read but not applied), then the dcache writer mutex. */
void inval_drain(void);

/* RCUWALK_SESSION and RCUWALK_SESSION_FDS (NULL: unset), given once per
 * process image before its first lookup: preload/'s constructor reads the
 * environment in one pass and hands them over.  Without that call the
 * first attach reads them with getenv() (invalidate/session.c). */
void inval_session_env(const char *dir, const char *fds);

/* The learned warm-up's store (invalidate/learn.c): the running average of
 * lookups that the processes of program `key` recorded, how many did, and
 * *rich (0-256: 256 when every recent one's cache paid richly); 0, or -1 if
 * the session knows nothing of it (or there is no session).  Raw system
 * calls, no lock, errno kept: any context, a signal handler's too. */
int inval_learn_get(uint64_t key, uint64_t *looked, uint32_t *n, uint32_t *rich);
/* Fold one process's lookups into key's record, and rich: 1 if its cache
 * paid richly, 0 if it did not, -1 if it started none.  Same context rules;
 * a record racing another may be lost (learn.c, L2). */
void inval_learn_put(uint64_t key, uint64_t looked, int rich);

/* The watch budget: at most n directory watches (0 = no limit of our own,
 * only the kernel's; n < 0 = the default, a quarter of the user's watch
 * limit here, read when the first watch is made: watch_limit.h).
 * Over it, watch_dir answers -ENOSPC.  Call before the first watch. */
void inval_set_watch_budget(long n);

/* Called (under the reader mutex, before the cache is emptied) when the
 * mount table changed: the caller forgets what it knows per device. */
void inval_set_mounts_hook(void (*fn)(void));

/* Mark that this process just changed the filesystem (or reaped a child that
 * may have): the next inval_sync() drains the queue first.  Any thread; one
 * atomic store, async-signal-safe. */
void inval_note_change(void);

/* If inval_note_change() was called since the last drain, drain now.  Called
 * before every cache lookup; costs one atomic load when nothing is pending
 * (and, while a lazy process has no reader thread yet, a coarse clock read:
 * see inval_set_reader_delay). */
void inval_sync(void);

/* fork(): take / release the reader mutex around fork() so that the child
 * does not inherit it locked.  Taken before the dcache mutex (lock order). */
void inval_fork_prepare(void);
void inval_fork_parent(void);

/* fork() of a process that takes no lock around it (one thread): note the
 * fork (a process that forks while it has an instance starts no reader
 * thread), as inval_fork_prepare() does.  Call right before fork(); no lock. */
void inval_fork_note(void);

/* fork(): the child must not read the parent's inotify instance.  Closes this
 * process's copy of the inotify fd and forgets the reader thread (which does
 * not exist in the child); a later watch creates a new instance.  Call in the
 * child right after fork(), before dcache_fork_child(). */
void inval_fork_child(void);

/*
 * Lazy reader: with ms > 0, the reader thread is not started with the
 * instance but only once the process has used it for `ms` milliseconds
 * (checked at inval_sync()); until then inval_sync() itself applies queued
 * events, at most once per tick of CLOCK_MONOTONIC_COARSE, so that other
 * processes' changes are still seen within one tick.  A short-lived process
 * (a compiler) then never creates the thread, nor pays for its exit; nor
 * does a process that has forked while it had an instance (a shell: see
 * `forked` in inval.c).  With 0 (the default) the thread starts with the
 * instance.  Call before the first lookup; preload/ sets it, the unit tests
 * keep the default.
 */
void inval_set_reader_delay(unsigned int ms);

/* Whether the inotify instance and its reader thread are running. */
int inval_active(void);

/*
 * The host may close our fd number or dup2 over it (see inval.c, "The fd is
 * ours only until the host closes it").  Wrappers of close, dup2, dup3,
 * close_range and closefrom ask inval_owns_fd() / inval_fd_in_range() (one
 * or two relaxed atomic loads) and, for our number, call inval_fd_closing()
 * BEFORE the real call: when it returns, no thread of ours will make a
 * syscall naming that number again, the instance is given up, and lookups
 * must pass through until inval_recover() has run.  `nowait` = the caller
 * may hold one of our locks (a signal handler that interrupted the shim):
 * then nothing waits, at the cost described in inval.c.  Any thread.
 * Our numbers also include the io_uring that holds the instance's last
 * reference (inval.c, defer_final_release): for that one inval_fd_closing()
 * only forgets the number; the instance stays.
 */
int inval_owns_fd(int fd);
/* Our number if it lies in [lo, hi], else -1. */
int inval_fd_in_range(unsigned int lo, unsigned int hi);
void inval_fd_closing(int fd, int nowait);

/*
 * The program must not see our numbers (doc/design.md, "The shim's own
 * fds"): preload/ answers a call naming one as the kernel answers for a
 * closed fd, and gives them all up when they would cost the program an fd.
 *
 * inval_fd_floor: every number we ever held is >= it (INT_MAX before the
 * first; it only goes down).  A number below it is never ours, so that the
 * wrappers' test costs one relaxed load and a compare for the program's fds.
 */
extern int inval_fd_floor;
/* Whether fd is one of our numbers (then to be treated as closed).  Any
 * thread, async-signal-safe. */
static inline int inval_hides_fd(int fd)
{
	return __builtin_expect(fd >= __atomic_load_n(&inval_fd_floor, __ATOMIC_RELAXED), 0) &&
	       inval_owns_fd(fd);
}
/* Our numbers now, at most `max` of them, sorted ascending; how many.  A
 * snapshot: a number published meanwhile is missing (inval.c's header, "Not
 * covered").  Any thread, async-signal-safe. */
int inval_own_fds(int *out, int max);
/* Whether one of our numbers lies in [lo, r): the kernel gave the program
 * r where, without us, it would have given a lower number.  Any thread,
 * async-signal-safe. */
int inval_fd_below(int lo, int r);
/*
 * The program needs our fds (an EMFILE it would not have had, or a number
 * above one of ours): give the instance up, close every number we hold and
 * never create an instance again in this process image (inval_disable()):
 * lookups pass through from then on.  1 if a number was freed (the caller
 * retries its call), 0 if there was none or nothing may be freed here: a
 * vfork()/clone() child (its fd table is a copy, our state is the
 * parent's) or `nowait` (a signal handler interrupted the shim).  Any
 * thread holding none of our locks unless nowait.
 */
int inval_give_fds_back(int nowait);

/* Non-zero from a give-up until inval_recover() has emptied the cache: the
 * caller of inval_sync() must then pass through or call inval_recover().
 * One atomic load. */
int inval_recovering(void);
/* 1 if the events being applied now were queued more than 20 ms ago
 * (inval.c, "Behind"): the caller passes through to the kernel.  Any
 * thread; reads the coarse clock only while events are being applied. */
int inval_behind(void);
/* Empty the cache (dcache_reset) after a give-up, so that a new instance
 * may be created.  Any thread outside ops context, not from a signal
 * handler (takes the dcache writer mutex). */
void inval_recover(void);

/* Give the instance up and close it, wait until the reader thread has left
 * and the kernel no longer counts it (bounded): the process may then be
 * single-threaded (unshare(CLONE_NEWUSER)).  Lookups must call
 * inval_recover() before the next instance is created.  Any thread, not ops
 * context nor a signal handler. */
void inval_stop(void);
/* inval_stop(), and never create an instance again in this process image
 * (its threads no longer share one fd table or one root). */
void inval_disable(void);

/* Stop the reader thread and close the instance (tests; not needed at exit). */
void inval_shutdown(void);

/*
 * Sessions (doc/session.md, phase 1).  With RCUWALK_SESSION=<dir> in the
 * environment at load time, the process's instance is a copy of the
 * session watcher's fd and events come from its ring; any failure to attach
 * leaves today's per-process instance (invalidate/session.c).
 */

/* A session as the launcher names it to the command. */
struct inval_session_id {
	char dir[PATH_MAX]; /* RCUWALK_SESSION: the directory of its sockets */
	char fds[64];       /* RCUWALK_SESSION_FDS: "PID:RING:ARENA", the watcher's pid
			     * and its memfds' numbers (ARENA -1: none); "": ask the socket */
	char note[192];     /* one line for --log: why it did not start, or what it
			     * left out (no arena); "" if nothing */
};

/* The launcher's side (invalidate/watcher_spawn.c, library
 * rcuwalk_watcher): make the session's memory and directory, start a
 * watcher for the calling process (which then execs or waits for the
 * command) as a new image of /proc/self/exe that is nobody's child, and
 * fill *id without waiting for its set-up; with keep_s > 0 the session
 * outlives the command by keep_s seconds and later launchers can find it
 * (inval_session_hold).  Returns 0 or -errno (no watcher then; id->note
 * says why).  Not for preloaded code. */
int inval_watcher_spawn(struct inval_session_id *id, unsigned int keep_s);
/* argv[1] of the watcher's image: the launcher's main hands such an argv to
 * inval_watcher_image() before anything else. */
#define INVAL_WATCHER_ARG "--rcuwalk-watcher-image"
/* The watcher's process image (started by inval_watcher_spawn() as
 * /proc/self/exe INVAL_WATCHER_ARG ...): run the session until it ends.
 * Returns the exit status (2: not such an argv). */
int inval_watcher_image(int argc, char **argv);
/* The launcher's side: find a kept session of this user, mount namespace
 * and root, and hold it for the calling process's life and keep_s seconds
 * after (the watcher's --keep: the longer of the two); fill *id.  0, or
 * -errno: no such session (start one). */
int inval_session_hold(struct inval_session_id *id, unsigned int keep_s);

/* Counters: watches currently held, events read, watch failures. */
struct inval_stats {
	unsigned long watches;
	unsigned long events;
	unsigned long watch_failures;
	unsigned long overflows;
	unsigned long mount_changes; /* mount table changes seen (each emptied the cache) */
	unsigned long listings_shared;  /* listings read from the session's shared listings */
	unsigned long watches_shared;   /* directory watches taken from them (no inotify_add_watch) */
	unsigned long names_shared;     /* what a name is, taken from them (no lstat) */
	unsigned long searches_shared;  /* search permission, taken from them (no lstat) */
	unsigned long paths_shared;     /* negative answers offered to the shared path table */
	unsigned long files_shared;     /* regular files' attributes, taken from them (no lstat) */
	unsigned long fs_shared;        /* filesystem classes taken from the session by mount */
};
void inval_stats_get(struct inval_stats *out);

/* Shared listings (doc/session.md, "Phase 2: shared entries"), for the
 * kernel_listdir_typed op: `t` is the ticket the cache passed it (NULL:
 * none).  inval_listing_get copies the session's listing of t's directory,
 * as dcache_arena_get_max (-ENOENT: read it from the kernel; -E2BIG: more
 * than `max` names, or than cap bytes); inval_listing_put
 * offers the listing just read from the kernel (raw d_types, before any
 * mount check), published only if the ticket allows it.  Any thread, ops
 * context included; no lock, no syscall. */
long inval_listing_get(const struct dcache_listing *t, char *buf, size_t cap, size_t max,
		       size_t *count);
void inval_listing_put(const struct dcache_listing *t, const char *ents, size_t len, size_t count);
/* The process changed its credentials: it uses and offers no shared entry
 * any more (what it learned must not outlive them: shim.c empties its own
 * cache too; and it no longer has the session's identity, doc/session.md).
 * Any thread; no lock, no syscall. */
void inval_shared_off(void);
/* A change no inotify event reports (an inode-flag ioctl through the shim):
 * the session's shared entries are void from now on, for every process.
 * Any thread; no lock, no syscall. */
void inval_shared_forget(void);
/* Filesystem classes by unique mount ID (cache/dcache_arena.c, A8;
 * doc/session.md, "Filesystem classes by mount"): the class (a DCACHE_FS_*)
 * a process of the session found for mount `id`, or 0 (none, or no
 * session); and the offer of one this process found.  The class of a mount
 * never changes and its ID is never reused, so neither needs a ticket.
 * inval_fs_classes_on: whether there is a session to ask (its arena).
 * Any thread; no lock, no syscall. */
int inval_fs_classes_on(void);
int inval_fs_class_get(uint64_t id);
void inval_fs_class_put(uint64_t id, int cls);

#ifdef __cplusplus
}
#endif
#endif /* RCUWALK_INVAL_H */
