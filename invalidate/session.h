/* SPDX-License-Identifier: MIT */
/*
 * session.h - attaching to a session's watcher (doc/session.md, phase 1).
 * Private to invalidate/: inval*.c are the only callers.
 *
 * RCUWALK_SESSION is read once, at start (inval_session_env(), inval.h).  The ring is mapped once
 * per process image and never unmapped (a reader thread may still look at
 * it after a give-up); every later attach of the image (after a fork, after
 * the host closed our fd) uses the same mapping.  A watcher found dead or
 * stuck marks the session dead: the image never attaches again.
 */
#ifndef RCUWALK_SESSION_H
#define RCUWALK_SESSION_H

#include <stdint.h>
#include <sys/inotify.h>
#include <sys/types.h>

/* RCUWALK_SESSION_FDS as sscanf(s, "%u:%d:%d", pid, rfd, afd) == 3 reads
 * it: 1 and all three set, or 0 and none.  Each number as %u or %d takes
 * it (white space before it, a sign, decimal digits; strtoul's or strtol's
 * value, saturated, cast); what follows the third is ignored. */
int session_parse_fds(const char *s, unsigned int *pid, int *rfd, int *afd);

/* 1 if fd is a sealed memfd (F_SEAL_SHRINK and F_SEAL_GROW set: only
 * memfd_create can make such a file) owned by `euid`, of exactly `size`
 * bytes; else 0.  Raw syscalls.  session_attach's check of the ring's and
 * the arena's fds; any caller (tests). */
int session_memfd_ok(int fd, uint64_t size, uid_t euid);

/* Non-zero if RCUWALK_SESSION named a session that is not known dead.
 * Under fd_mutex (the first call may read the environment). */
int session_wanted(void);
/* The session's directory (RCUWALK_SESSION as copied at start), or NULL. */
const char *session_dir_path(void);

/* Attach: check the directory, map and check the ring, take the instance's
 * fd (close-on-exec, not moved high) with pidfd_getfd, or receive it over
 * the socket where that is refused.  Returns the fd or -errno: the
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
/* Bytes the watcher has read from the instance and published (ring.h,
 * consumed), acquire.  Any thread. */
uint64_t session_consumed(void);
/* Records the watcher has published so far (ring.h, tail), acquire: with
 * the state word, the watcher's progress (inval_reader.c, "liveness by
 * progress").  Any thread. */
uint64_t session_tail(void);
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
/* Apply the records from this process's read position to the tail as read
 * when the call began, with `apply` (an IN_Q_OVERFLOW record in place of
 * lost ones).  Under inval.c's read_mutex (which guards the read position). */
void session_apply_locked(void (*apply)(const struct inotify_event *ev));

/* Shared entries (cache/dcache_arena.c), for inval.c's ticket: watch
 * `wd`'s generation into *gen; returns 1 if an answer the kernel gives from
 * now on may be published with it (no read cycle in progress, and this
 * process has applied every published record but those about watches
 * `ours` says it never added), 0 if not, -1 without shared entries (or
 * while a counted mount change's bump is not done).  Under the dcache
 * writer mutex, the caller having found the directory alive under it. */
int session_listing_ticket(int wd, uint64_t *gen, int (*ours)(int wd));
/* The count of ring records this process has applied (acquire).  Any thread. */
uint64_t session_read_pos(void);
/* The ring's mount count (ring.h, mounts), for the cache to compare with
 * the arena's (dcache_spath_use); NULL when not attached. */
const uint32_t *session_mounts_word(void);
/* The shared path table's ticket: sample the generations of the walk's
 * components (wd[i], nidx[i]), i < n, into sgen[] and ngen[]
 * (dcache_spath_gens), and say whether a walk that began when this process
 * had applied the records below pos0 may be offered with them: 1 if so, 0
 * if not (a read cycle ran, or a record since pos0 is about one of those
 * directories), -1 without a table yet.  Any thread; no lock, no syscall. */
int session_spath_ticket(const int *wd, const uint32_t *nidx, unsigned int n, uint64_t *sgen,
			 uint64_t *ngen, uint64_t pos0);
/* The shared entries' mapping (cache/dcache_arena.c), NULL without one.
 * Mapped with the ring, never unmapped; any thread. */
void *session_arena(void);
/* A key for everything of this process that the kernel's search check on
 * a directory reads (fs ids, groups, effective capabilities, user
 * namespace, LSM label): equal keys, equal answers.  Computed once per
 * image (raw syscalls), 0 if something could not be read.  Any thread. */
uint64_t session_cred_key(void);

#endif /* RCUWALK_SESSION_H */
