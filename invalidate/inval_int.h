/* SPDX-License-Identifier: MIT */
/*
 * inval_int.h - PRIVATE to invalidate/: what inval.c (the instance, its
 * watches and drains), inval_reader.c (the reader thread, a session's sync
 * points), inval_fds.c (the instance's fds, give-up and recovery) and
 * inval_shared.c (the session's shared entries as the cache's ops) share.
 * Never included outside invalidate/; nothing here is part of the library's
 * interface (hidden, like everything not interposed).  The state's rules
 * (which mutex guards what) are at the top of inval.c and inval_fds.c;
 * grouped below by the file that defines each name.
 */
#ifndef RCUWALK_INVAL_INT_H
#define RCUWALK_INVAL_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "dcache.h"

struct inotify_event;

#pragma GCC visibility push(hidden)

/* ---- inval.c */
/* The current instance's fd (-1: none) and generation (bumped whenever an
 * instance is given up). */
extern atomic_int inotify_fd;
extern atomic_uint inst_gen;
/* Held while reading events and applying them (inval.c, top): take it with
 * read_lock() (below). */
extern pthread_mutex_t read_mutex;
/* Noted changes (inval_note_change); bumped by the reader to send the next
 * inval_sync() down its slow path. */
extern atomic_ulong change_gen;
/* Directory watches held ("Watch budget"); zeroed by a give-up. */
extern atomic_ulong st_watches;
/* The lazy reader's state (inval.c, "Lazy reader"). */
extern atomic_int reader_running;
extern atomic_int reader_batching;
/* Apply one event to the cache.  Under read_mutex. */
void apply_event(const struct inotify_event *ev);
/* Apply what was queued on instance (fd, gen) when the call began (a
 * session: the ring's records published then).  Under read_mutex; 0 if the
 * instance is gone. */
int read_all_locked(int fd, unsigned int gen);
/* Empty the cache if the mount table changed (mnt_sfd); `pending`: also
 * say whether events are queued.  Under read_mutex. */
void mounts_check_locked(int fd, unsigned int gen, int *pending);
/* No shared entry used or offered after this is set (a mount change our
 * own poll saw first, a credential change), for the rest of the image. */
extern atomic_int listing_off;
/* The ring's mount count whose change this process has applied. */
extern atomic_uint ring_mounts_applied;
/* Statistics: shared entries taken from the session's arena. */
extern atomic_ulong st_listings_shared, st_watches_shared, st_names_shared, st_searches_shared;
extern atomic_ulong st_files_shared;
extern atomic_ulong st_fs_shared;
extern atomic_ulong st_paths_shared;
/* inval.c, "Behind": when the events being applied were queued (0: none). */
extern atomic_long apply_since;
#define INVAL_BEHIND_NS 20000000L /* 20 ms */
void apply_ring_locked(void);

/* The session's watch numbers this process added ("A session's records
 * about watches this process never added"). */
#define SESSION_WD_BITS (1u << 20) /* 128 KiB, allocated at the first session watch */
void session_wd_add(int wd);
int session_wd_foreign(int wd);
int session_wd_ours(int wd);

/* ---- inval_fds.c */
/* I1's leaf mutex, and whether this thread is in fd_lock()..fd_unlock(). */
extern pthread_mutex_t fd_mutex;
extern __thread int fd_mutex_mine __attribute__((tls_model("initial-exec")));
/* One give-up at a time; one recovery at a time (fork children re-make them). */
extern pthread_mutex_t lose_mutex, recover_mutex;
/* The number being given up; I4's flag; inval_disable()'s; the process whose
 * fd table holds inotify_fd; the sentinel watch (under fd_mutex). */
extern atomic_int closing_fd, recovering, disabled, owner_pid;
extern int sentinel_wd;
/* The instance's mountinfo fds and io_uring numbers (-1: none). */
extern atomic_int mnt_rfd, mnt_sfd;
extern atomic_int ring_fd, ring_stale;
/* Move fd high ("The program's fds"); the number it now has. */
int move_high(int fd);
/* /proc/self/mountinfo opened and moved high, or -1. */
int open_mountinfo(void);
/* Close the instance's mountinfo fds but `keep`. */
void close_mount_fds(int keep);
/* Give instance fd's file to an io_uring, which keeps its last reference. */
void defer_final_release(int fd);
/* Close the current instance's ring.  Under fd_mutex. */
void close_ring_locked(void);
/* A dead or stuck watcher: give the session's instance up.  Any application
 * thread holding none of our locks. */
void session_abandon(int fd);

/* ---- inval_reader.c */
/* The reader of instance generation g: reader_gen = g when started,
 * reader_exit_gen raised to g when it has left (a futex word); its tid. */
extern atomic_uint reader_gen, reader_exit_gen;
extern atomic_int reader_tid;
/* A session's sync point for instance (fd, gen), waiting (wait = 1) or not:
 * 1 applied, 0 the instance is no longer ours, -1 the watcher is gone or
 * stuck (give the session up).  Under read_mutex. */
int session_sync_locked(int fd, unsigned int gen, int wait);
/* Start instance (fd, gen)'s reader.  Under fd_mutex, every signal blocked;
 * 0 or -EAGAIN. */
int start_reader_locked(int fd, unsigned int gen);
/* FIONREAD on instance (fd, gen) into *n (1 if unknown), under fd_mutex
 * (takes it).  0 if the instance is no longer ours. */
int queued_locked(int fd, unsigned int gen, int *n);

/* ---- inval_shared.c */
/* Fill the session's shared-entry ops. */
void inval_shared_fill_ops(struct dcache_ops *ops);

/* ---- the locks' helpers (inval.c and inval_fds.c, top) */
/* Take read_mutex.  Every holder may apply events, and so enter its
 * thread's first read-side section, which registers the thread with urcu-bp
 * under urcu-bp's registry mutex.  fork() takes that mutex (liburcu's hook)
 * before read_mutex (inval_fork_prepare): a first registration under
 * read_mutex deadlocked the two (seen in ncurses' configure: the reader
 * thread's first event, while the shell forked).  So the thread registers
 * first, holding nothing. */
static inline void read_lock(void)
{
	dcache_thread_register();
	pthread_mutex_lock(&read_mutex);
}

/* fd_mutex_mine is 1 from before this thread asks for fd_mutex until after
 * it has released it: a signal handler that finds it 0 knows that this
 * thread neither holds fd_mutex nor is inside pthread_mutex_lock/unlock. */
static inline void fd_lock(void)
{
	__atomic_store_n(&fd_mutex_mine, 1, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	pthread_mutex_lock(&fd_mutex);
}

static inline void fd_unlock(void)
{
	pthread_mutex_unlock(&fd_mutex);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&fd_mutex_mine, 0, __ATOMIC_RELAXED);
}

#pragma GCC visibility pop

#endif /* RCUWALK_INVAL_INT_H */
