/*
 * session.h - attaching to a session's watcher (doc/session.md, phase 1).
 * Private to invalidate/: inval.c is the only caller.
 *
 * RCUWALK_SESSION is read once, by a constructor.  The ring is mapped once
 * per process image and never unmapped (a reader thread may still look at
 * it after a give-up); every later attach of the image (after a fork, after
 * the host closed our fd) uses the same mapping.  A watcher found dead or
 * stuck marks the session dead: the image never attaches again.
 */
#ifndef RCUWALK_SESSION_H
#define RCUWALK_SESSION_H

#include <stdint.h>
#include <sys/inotify.h>

/* Non-zero if RCUWALK_SESSION named a session that is not known dead.
 * Under fd_mutex (the first call may read the environment). */
int session_wanted(void);

/* Attach: check the directory, receive the instance's fd (close-on-exec,
 * not moved high), map and check the ring.  Returns the fd or -errno: the
 * caller then creates a per-process instance.  Raw syscalls only (called
 * under the dcache mutex and fd_mutex, with signals blocked); may block up
 * to 1 s on a watcher that does not answer.  Sets the read position to the
 * ring's current tail: events before the attach concern no watch of ours. */
int session_attach(void);

/* Whether the current instance (if any) is a session's copy.  Set by
 * session_attach's caller under fd_mutex; read anywhere. */
extern _Atomic int session_active;

/* The ring's causality word (ring.h), seq_cst. */
uint32_t session_state(void);
/* The watcher's count of mount table changes (ring.h, mounts), acquire. */
uint32_t session_mounts(void);
/* Records published but not yet applied by this process?  Any thread. */
int session_behind(void);
/* Sleep until the state word differs from `seen` or `ns` passed.  */
void session_wait(uint32_t seen, long ns);
/* The same, waking also when the watcher dies (ring.h, alive; futex_waitv,
 * else as session_wait).  Returns 1 if the watcher is known dead (and has
 * passed the news on to the other sleepers), else 0.  The reader thread. */
int session_wait_or_death(uint32_t seen, long ns);
/* 1 if the kernel has marked the watcher dead (ring.h, alive).  Any
 * thread; one load. */
int session_watcher_died(void);
/* Ask the watcher for a read cycle now (ring.h, poke).  Any thread. */
void session_poke(void);
/* Wake every thread (of any process) sleeping in session_wait(). */
void session_wake(void);
/* 0 once the watcher has exited or died (raw /proc look-up, ~10 us). */
int session_watcher_alive(void);
/* Never attach again in this process image. */
void session_mark_dead(void);
/* Apply the records from this process's read position to the tail with
 * `apply` (an IN_Q_OVERFLOW record in place of lost ones).  Under
 * inval.c's read_mutex (which guards the read position). */
void session_apply_locked(void (*apply)(const struct inotify_event *ev));

/* Shared listings (cache/dcache_arena.c), for inval.c's listing ops.
 * session_listing_ticket: watch `wd`'s generation into *gen; returns 1 if
 * a listing read from now on may be published with it (no read cycle in
 * progress, and this process has applied every published record but those
 * about watches `ours` says it never added), 0 if not, -1 without shared
 * listings.  Under the dcache writer mutex, the
 * caller having found the directory alive under it.  The others: any
 * thread; as dcache_arena_get/_put. */
int session_listing_ticket(int wd, uint64_t *gen, int (*ours)(int wd));
long session_listing_get(int wd, char *buf, size_t cap, size_t *count);
int session_listing_put(int wd, uint64_t gen, const char *ents, size_t len, size_t count);
uint64_t session_listing_refused(void);
/* The same for the watches of directory entries (dcache_arena_get_watch,
 * dcache_arena_put_watch). */
int session_watch_get(int wd, const char *name, size_t len, int *child, uint64_t *dev,
		      uint64_t *ino);
int session_watch_put(int wd, uint64_t gen, const char *name, size_t len, int child,
		      uint64_t dev, uint64_t ino);
/* And for what directory entries are (dcache_arena_get_name, _put_name). */
int session_name_get(int wd, const char *name, size_t len, unsigned int *type, uint64_t *dev,
		     uint64_t *ino, char *target, size_t tcap, size_t *tlen);
int session_name_put(int wd, uint64_t gen, const char *name, size_t len, unsigned int type,
		     uint64_t dev, uint64_t ino, const char *target, size_t tlen);
/* And for directories' attributes (dcache_arena_get_attr, _put_attr). */
struct stat;
int session_attr_get(int wd, struct stat *st);
int session_attr_put(int wd, uint64_t gen, const struct stat *st);
/* Every shared entry is void from now on (dcache_arena_invalidate(-1)): a
 * change no event reports (an inode-flag ioctl).  Any thread. */
void session_shared_forget(void);

#endif /* RCUWALK_SESSION_H */
