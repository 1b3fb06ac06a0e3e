/* SPDX-License-Identifier: MIT */
/*
 * inval.c - inotify watches, the events they bring applied to the cache, and
 * the drains and sync points that apply them.  The module's other files:
 * inval_reader.c (the reader thread, a session's sync points and liveness),
 * inval_fds.c (the instance's fds: where they sit, the fd guard I1-I4,
 * give-up and recovery), inval_shared.c (the session's shared entries); what
 * they share is in inval_int.h (hidden).
 *
 * Locks and invariants
 * ====================
 *  read_mutex: held while reading events from the inotify fd AND applying
 *    them to the cache.  Whoever holds it has applied every event it read
 *    before releasing it, so a thread that takes it and reads the queue until
 *    EAGAIN knows that every event queued before it started is applied
 *    (inval_drain).  Nesting: read_mutex -> dcache writer mutex, never the
 *    other way: watch_dir/unwatch_dir run under the dcache mutex and so do not
 *    take read_mutex (inotify_add_watch/rm_watch need no lock of ours).
 *  inotify_fd: created once (under the dcache mutex, from watch_dir) and
 *    published with a release store; readers of it load it once.
 *  The kernel queues an event inside the syscall that made the change, so
 *    once a mutating call has returned its event is in the queue.
 *  The fd guard (fd_mutex, lose_mutex, recover_mutex: I1-I4) and the lock
 *  order are at the top of inval_fds.c.
 *
 * Mounts
 * ======
 * A mount or unmount changes what a path resolves to without any inotify
 * event.  /proc/self/mountinfo reports a change of the mount namespace's
 * table through poll() (POLLPRI|POLLERR), once per open file description:
 * the poll that reports it also consumes it.  So each instance opens it
 * twice:
 *  mnt_rfd  the reader thread's doorbell, in its blocking poll(); opened
 *           when the reader starts (a lazy process's first lookups ask
 *           mnt_sfd in their timed drains instead), and the reader asks
 *           mnt_sfd once before its first poll;
 *  mnt_sfd  consumed only under read_mutex (mounts_check_locked), by the
 *           reader when its doorbell rings, by the synchronous drains
 *           (inval_sync, inval_drain: a mount made by a reaped child is seen
 *           at the sync point) and by strict mode.  Whoever sees the change
 *           empties the cache (dcache_reset) before releasing read_mutex, so
 *           a thread that takes read_mutex and finds nothing pending knows
 *           that every change made before it is applied.
 * The fds belong to the mount namespace of the process when the instance
 * was created: entering another one (unshare, setns) gives the instance up
 * (shim.c), and the next instance opens them in the new namespace.
 *
 * Sessions
 * ========
 * With RCUWALK_SESSION (session.c, doc/session.md) start_locked() attaches
 * instead of calling inotify_init1(): inotify_fd is then our copy of the
 * watcher's instance (session_active), moved high and guarded by I1-I4
 * exactly like our own; a give-up closes only the copy, and the next
 * instance attaches again (or, once the watcher was found dead, is our own).
 * What changes: nobody here read()s the fd (read_all_locked() applies the
 * ring's records; the sync points first run session_sync_locked()'s
 * FIONREAD-then-state protocol, the timed drains only apply what is
 * published); the reader sleeps on the ring's futex
 * (reader_session), so I2 holds with no syscall on the number outside
 * fd_mutex and a give-up wakes it with FUTEX_WAKE instead of the sentinel
 * (which a shared instance does not have); unwatch_dir() never removes a
 * watch (another process may use it); the watch budget is not applied (the
 * kernel's ENOSPC still is) and st_watches only counts the watches this
 * process created; defer_final_release() is skipped (the watcher holds the
 * last reference).  A dead or stuck watcher: session_abandon() gives the
 * instance up as a host close would (I3), then I4 as usual.  The shared
 * entries (phase 2: listings, watches, names, directories' attributes) go
 * through the listing ops of inval_shared.c ("Shared listings"): who may
 * use one, who may offer one, and when a process stops sharing.
 *
 * Watch budget
 * ============
 * The kernel's max_user_watches is shared by every process of the user
 * (editors, file watchers).  An instance holds at most `budget` directory
 * watches (inval_set_watch_budget); over it, or at the kernel's limit
 * (ENOSPC), watch_dir answers -ENOSPC and the directory passes through.
 * st_watches counts the watches held: it goes up when inotify_add_watch
 * creates a watch (IN_MASK_CREATE tells a new watch from an existing one)
 * and down with each IN_IGNORED, which the kernel queues exactly once per
 * watch, whether we removed it or the directory went away.  An overflow
 * loses events, IN_IGNORED included: the count is taken again from
 * /proc/self/fdinfo.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/io_uring.h>

#include "inval.h"
#include "inval_int.h"
#include "session.h"
#include "watch_limit.h"

#define WATCH_MASK (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | \
		    IN_MODIFY | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF | \
		    IN_ONLYDIR | IN_DONT_FOLLOW)
/* A scratch directory's (dcache.h, dcache_set_scratch): no event that its
 * entries raise, so that the kernel does not mark every child dentry.  Added
 * with IN_MASK_ADD, so that it never narrows a full watch of the inode. */
#define WATCH_MASK_NAMES (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | \
			  IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW)
#define DRAIN_QUANTUM_NS 200000L  /* see timed_drain_due(): no reader yet */
#define BATCH_QUANTUM_NS 50000L   /* see timed_drain_due(): reader pausing */

pthread_mutex_t read_mutex = PTHREAD_MUTEX_INITIALIZER;
atomic_int inotify_fd = -1; /* inval_int.h */
atomic_uint inst_gen = 1; /* bumped whenever an instance is given up (inval_int.h) */
/* change_gen counts noted changes; drained_gen is the change_gen value that
 * the last completed drain covered (written under read_mutex). */
atomic_ulong change_gen; /* inval_int.h */
static atomic_ulong drained_gen;
atomic_ulong st_watches; /* inval_int.h */
static atomic_ulong st_events, st_watch_failures, st_overflows;
/* st_*_shared: inval_int.h */
atomic_ulong st_listings_shared, st_watches_shared, st_names_shared, st_searches_shared;
atomic_ulong st_files_shared; /* regular files' attributes taken (inval_shared.c) */
atomic_ulong st_fs_shared;
atomic_ulong st_paths_shared; /* offers the shared path table took (inval_shared.c) */
/* Set when our own mountinfo poll saw a change (mounts_check_locked): the
 * watcher may not have counted it yet, so the shared generations may still
 * vouch for what it covered; and when the process changed its credentials
 * (inval_shared_off).  No shared entry is used or offered after that, for
 * the rest of this process image (both are rare in a build). */
atomic_int listing_off; /* inval_int.h */
static void (*mounts_hook)(void) DCACHE_START_DATA;
static atomic_ulong st_mount_changes;
/* Watch budget: configured value (-1 = default share), resolved under fd_mutex. */
static atomic_long budget_cfg = -1;
static unsigned long budget;
static int budget_known;
/* Lazy reader (inval_set_reader_delay).  reader_running: the current
 * instance has its reader thread (read without a lock by inval_sync).
 * first_use_ns: when the process created its first instance (under
 * fd_mutex; a later instance, after a give-up, is lazy only as long as the
 * process is younger than the delay);
 * last_drain_tick: the DRAIN_QUANTUM_NS slot of CLOCK_MONOTONIC in which the
 * last timed drain began (0: none yet; under read_mutex).
 * reader_batching: the reader is in its READER_BATCH_NS pause after a read
 * (set by the reader before the pause, cleared after it; read without a lock
 * by inval_sync): lookups meanwhile drain per quantum themselves. */
static long reader_delay_ns DCACHE_START_DATA;
/* forked: this process has called fork() while it had an instance
 * (inval_fork_note; a child starts at 0).  With a delay set, a process that
 * has forked never starts its reader: a second thread makes every later
 * fork() write-protect the parent's pages under a TLB shootdown sent to the
 * CPUs the thread ran on (an IPI each, a VM exit in a guest), and a shell
 * forks thousands of times.  Its lookups apply the queued events per tick
 * instead, as in its first reader_delay_ns (clause 4 of doc/coherence.md
 * holds either way).  A reader already running stays. */
static atomic_int forked;
atomic_int reader_running;
atomic_int reader_batching;
static long first_use_ns;
static atomic_long last_drain_tick;

static void recount_watches(void);

/* One watch fewer (its IN_IGNORED was read); never below zero (a give-up
 * may have set the count to 0 under a drain that still applies events). */
static void watch_gone(void)
{
	unsigned long cur = atomic_load(&st_watches);

	while (cur > 0 && !atomic_compare_exchange_weak(&st_watches, &cur, cur - 1))
		;
}

/*
 * A session's records about watches this process never added (another
 * process's directories) are skipped before they reach the cache: a
 * per-process instance never receives them, and the cache would take an
 * unknown watch number for a directory it forgot and escalate (drop every
 * file's attributes: dcache_events.c, rule 4) on every one of them.  The
 * bits are set by watch_dir() when inotify_add_watch() returns, before
 * anything below that directory can be cached; never cleared (a watch we
 * used and forgot keeps rule 4); watch numbers past the map are applied.
 */
static _Atomic(unsigned long *) session_wds;

void session_wd_add(int wd)
{
	unsigned long *m = atomic_load(&session_wds);

	if (wd < 0 || (unsigned)wd >= SESSION_WD_BITS)
		return;
	if (!m) {
		unsigned long *n = calloc(SESSION_WD_BITS / (8 * sizeof(long)), sizeof(long));

		if (!n)
			return; /* then every record is applied */
		if (!atomic_compare_exchange_strong(&session_wds, &m, n))
			free(n);
		m = atomic_load(&session_wds);
	}
	atomic_fetch_or_explicit((_Atomic unsigned long *)&m[wd / (8 * sizeof(long))],
				 1UL << (wd % (8 * sizeof(long))), memory_order_release);
}

/* Whether a session record about `wd` concerns nothing of ours (skip it). */
int session_wd_foreign(int wd)
{
	unsigned long *m = atomic_load(&session_wds);

	if (wd < 0 || (unsigned)wd >= SESSION_WD_BITS)
		return 0;
	if (!m)
		return 1; /* no watch added yet: nothing below any is ours */
	return !(atomic_load_explicit((_Atomic unsigned long *)&m[wd / (8 * sizeof(long))],
				      memory_order_acquire) &
		 (1UL << (wd % (8 * sizeof(long)))));
}

/* Whether a session record about `wd` may concern something of ours (the
 * complement of session_wd_foreign; wd -1: everything). */
int session_wd_ours(int wd)
{
	return wd < 0 || !session_wd_foreign(wd);
}

/* Apply one event to the cache.  Called with read_mutex held. */
void apply_event(const struct inotify_event *ev)
{
	if (atomic_load_explicit(&session_active, memory_order_relaxed) &&
	    !(ev->mask & IN_Q_OVERFLOW) && session_wd_foreign(ev->wd))
		return; /* another process's directory (above) */
	atomic_fetch_add_explicit(&st_events, 1, memory_order_relaxed);
	if (ev->mask & IN_Q_OVERFLOW) {
		atomic_fetch_add_explicit(&st_overflows, 1, memory_order_relaxed);
		dcache_events_lost();
		dcache_invalidate_all(); /* events were lost: anything may be stale */
		recount_watches();       /* IN_IGNORED events too */
		return;
	}
	if ((ev->mask & IN_IGNORED) && !atomic_load_explicit(&session_active, memory_order_relaxed))
		watch_gone(); /* exactly one per watch: the budget is given back */
	if (ev->len && ev->name[0]) {
		if ((ev->mask & (IN_CREATE | IN_DELETE | IN_MOVED_TO)) && !(ev->mask & IN_ISDIR))
			dcache_event_child(ev->wd, ev->name,
					   (ev->mask & IN_CREATE) ? DCACHE_EV_CREATE :
					   (ev->mask & IN_DELETE) ? DCACHE_EV_REMOVE : DCACHE_EV_MOVED_IN);
		else if (ev->mask & (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO))
			dcache_event_child(ev->wd, ev->name, DCACHE_EV_ENTRY);
		else if (ev->mask & IN_ATTRIB)
			dcache_event_child(ev->wd, ev->name, DCACHE_EV_ATTR);
		else if (ev->mask & (IN_MODIFY | IN_CLOSE_WRITE))
			dcache_event_child(ev->wd, ev->name, DCACHE_EV_DATA);
		return;
	}
	if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT | IN_IGNORED))
		dcache_event_self(ev->wd, DCACHE_EV_GONE);
	else if (ev->mask & IN_ATTRIB)
		dcache_event_self(ev->wd, DCACHE_EV_ATTR);
}

/*
 * Behind: while events are being applied, apply_since holds the time
 * (CLOCK_MONOTONIC_COARSE) before which every event being applied was
 * queued (a read() of the instance, or the ring's tail sampled); 0 while
 * nothing is being applied.  Applying is usually microseconds, but an
 * event can cost O(dentries) (dcache_events.c: escalation) and a flood of
 * them seconds: meanwhile the cache answers from before every event still
 * queued.  A lookup that finds the applier more than INVAL_BEHIND_NS into
 * its batch passes through to the kernel (inval_behind(), preload's
 * try_cache), so that no answer is staler than that (coherence clause 4).
 * Found at scale: a writer beside 1,000,000 cached names got ENOENT for
 * names created 0.8-8.4 s before (examples/scale.sh).
 */
atomic_long apply_since;

static long coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

int inval_behind(void)
{
	long s = atomic_load_explicit(&apply_since, memory_order_relaxed);

	return __builtin_expect(s != 0, 0) && coarse_ns() - s > INVAL_BEHIND_NS;
}

/* session_apply_locked(apply_event), marked as applying (above).  Under
 * read_mutex. */
void apply_ring_locked(void)
{
	atomic_store_explicit(&apply_since, coarse_ns(), memory_order_relaxed);
	/* One batch (dcache_events_batch_begin): every record it applies was
	 * published before it applies the first (it samples the tail first),
	 * and no other batch is applied meanwhile (read_mutex). */
	dcache_events_batch_begin();
	session_apply_locked(apply_event);
	atomic_store_explicit(&apply_since, 0, memory_order_relaxed);
}

/*
 * Apply the events queued on instance (fd, gen) when this call began: FIONREAD
 * first (under fd_mutex, with the first read), then read() until that many
 * bytes are read (at least one read(), which takes more if more came) or the
 * queue is empty.  Not until EAGAIN: an event source that keeps pace with the
 * reads held read_mutex, and every sync point, for as long as it lasted
 * (`strace -f -o LOG`, LOG in a watched directory, writes a line for each
 * read() and for the lstat() an event's name may need: one more event each).
 * The instance is a FIFO, so the bytes queued at the start hold every event
 * queued before the call, all that a sync point waits for.  Under read_mutex;
 * each read() under fd_mutex (I1), events applied outside it.  Returns 0 if
 * instance (fd, gen) is no longer ours.
 */
int read_all_locked(int fd, unsigned int gen)
{
	char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
	int due = -1;
	uint64_t bytes = 0;

	if (atomic_load(&session_active)) {
		/* The session's ring, not read(): only the watcher reads the
		 * instance.  No syscall on the number, hence no fd_mutex. */
		if (atomic_load(&inotify_fd) != fd || atomic_load(&inst_gen) != gen)
			return 0;
		apply_ring_locked();
		return 1;
	}
	for (;;) {
		ssize_t n;

		fd_lock();
		if (atomic_load(&inotify_fd) != fd || atomic_load(&inst_gen) != gen) {
			fd_unlock();
			atomic_store_explicit(&apply_since, 0, memory_order_relaxed);
			return 0;
		}
		if (due < 0 && (syscall(SYS_ioctl, fd, FIONREAD, &due) != 0 || due < 0))
			due = INT_MAX; /* unknown: until EAGAIN */
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR) {
			fd_unlock();
			continue;
		}
		fd_unlock();
		if (n <= 0) {
			atomic_store_explicit(&apply_since, 0, memory_order_relaxed);
			return 1; /* EAGAIN: empty */
		}
		bytes += (uint64_t)n;
		/* Everything read was queued before now; what comes after is
		 * read next: a batch that applies fast moves this on. */
		atomic_store_explicit(&apply_since, coarse_ns(), memory_order_relaxed);
		dcache_events_batch_begin(); /* what this read() returned */
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			apply_event(ev);
			p += sizeof(*ev) + ev->len;
		}
		if (bytes >= (uint64_t)due) {
			atomic_store_explicit(&apply_since, 0, memory_order_relaxed);
			return 1; /* what was queued at the start is applied */
		}
	}
}

/* The mount table changed: forget the filesystem verdicts (the hook) and
 * everything cached, the root's watch included.  Under read_mutex. */
static void mounts_changed_locked(void)
{
	atomic_fetch_add_explicit(&st_mount_changes, 1, memory_order_relaxed);
	if (mounts_hook)
		mounts_hook();
	dcache_reset();
}

/* Did the mount table change since mnt_sfd last said so?  Then empty the
 * cache.  Under read_mutex, for instance (fd, gen); the poll is made under
 * fd_mutex (I1).  `pending`, if not NULL: also poll the inotify fd in the
 * same call and say whether events are queued (strict mode). */
void mounts_check_locked(int fd, unsigned int gen, int *pending)
{
	struct pollfd p[2];
	int n = 0, changed = 0;

	fd_lock();
	if (atomic_load(&inotify_fd) == fd && atomic_load(&inst_gen) == gen) {
		int s = atomic_load(&mnt_sfd);

		if (s >= 0) {
			p[n].fd = s;
			p[n].events = POLLPRI;
			p[n++].revents = 0;
		}
		if (pending) {
			p[n].fd = fd;
			p[n].events = POLLIN;
			p[n++].revents = 0;
		}
		int r = n ? poll(p, (nfds_t)n, 0) : 0;

		if (r > 0) {
			changed = s >= 0 && (p[0].revents & (POLLPRI | POLLERR)) &&
				  !(p[0].revents & POLLNVAL);
			if (pending)
				*pending = (p[n - 1].revents & POLLIN) != 0;
		} else if (r < 0 && pending) {
			*pending = 1; /* poll failed (EINTR, ENOMEM): read to be sure */
		}
	}
	fd_unlock();
	if (changed && atomic_load(&session_active))
		atomic_store(&listing_off, 1); /* before the cache empties */
	if (changed)
		mounts_changed_locked();
}

/* A session's timed drain: the mount table changed if the watcher's count
 * moved (ring.h, mounts) - memory, no poll().  Sync points still poll our
 * own mountinfo fd (mounts_check_locked): the watcher may not have seen a
 * reaped child's mount yet.  A change seen both ways empties the cache
 * twice, which is only slower.  Under read_mutex. */
/* Written at attach, before session_active is published (seq_cst), then
 * under read_mutex; read under read_mutex after session_active. */
static uint32_t ring_mounts_seen;
/* The ring's mount count whose change this process has applied (its cache
 * emptied): stored after dcache_reset(), read by listing_ticket(). */
atomic_uint ring_mounts_applied; /* inval_int.h */

static void session_mounts_locked(void)
{
	uint32_t m = session_mounts();

	if (m != ring_mounts_seen) {
		ring_mounts_seen = m;
		mounts_changed_locked();
		atomic_store(&ring_mounts_applied, m);
	}
}

/* The budget: RCUWALK_WATCH_BUDGET, or by default a quarter of the user's
 * watch limit as it applies here (watch_limit.h: the user namespace's own
 * where lower; doc/coherence.md).  Under fd_mutex. */
static unsigned long watch_budget_locked(void)
{
	long cfg;

	if (budget_known)
		return budget;
	cfg = atomic_load(&budget_cfg);
	if (cfg >= 0) {
		budget = (unsigned long)cfg;
	} else {
		unsigned long l = inval_watch_limit();

		/* 0 (no /proc): the kernel's limit only; a limit below 4, 1 */
		budget = l && l < 4 ? 1 : l / 4;
	}
	budget_known = 1;
	return budget;
}

static long coarse_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* Create the instance and (unless lazy) start the reader.  Under the dcache
 * mutex and fd_mutex, or from prepare() under fd_mutex. */
static int start_locked(void)
{
	int fd = atomic_load(&inotify_fd);
	unsigned int gen;
	sigset_t all, old;

	if (fd >= 0)
		return fd;
	if (atomic_load(&disabled))
		return -ENOTSUP;
	if (atomic_load(&recovering))
		return -EAGAIN; /* I4: inval_recover() first */
	/* Signals stay blocked until the number is published: a handler of
	 * this thread that closes fds must not see an instance that
	 * inval_owns_fd() does not know yet.  The reader inherits the mask:
	 * signals are the program's. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	/* A session's copy of the watcher's instance, else our own. */
	fd = session_wanted() ? session_attach() : -1;
	if (fd >= 0) {
		ring_mounts_seen = session_mounts(); /* our own mountinfo fds start now too */
		atomic_store(&ring_mounts_applied, ring_mounts_seen);
	}
	atomic_store(&session_active, fd >= 0);
	if (fd < 0)
		fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (fd < 0) {
		fd = -errno;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		return fd;
	}
	fd = move_high(fd);
	atomic_store(&mnt_sfd, open_mountinfo()); /* the doorbell comes with the reader */
	if (!atomic_load(&session_active)) {
		/* A copy needs neither: the watcher holds the last reference,
		 * and its reader is woken through the ring (wake_reader_locked). */
		defer_final_release(fd);
		/* A watch that exists only to be removed: the IN_IGNORED that
		 * its removal queues wakes the reader (I3).  /dev/null never
		 * changes. */
		sentinel_wd = inotify_add_watch(fd, "/dev/null", IN_DELETE_SELF);
	}
	gen = atomic_load(&inst_gen);
	atomic_store(&reader_running, 0);
	if (!first_use_ns)
		first_use_ns = coarse_now_ns(); /* the process's first instance */
	if (reader_delay_ns && (atomic_load_explicit(&forked, memory_order_relaxed) ||
				coarse_now_ns() - first_use_ns < reader_delay_ns)) {
		/* Lazy: no reader for gen yet; nothing to wait for at a give-up. */
		atomic_store(&reader_tid, 0);
		atomic_store(&reader_exit_gen, gen);
	} else if (start_reader_locked(fd, gen) != 0) {
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		close_ring_locked();
		syscall(SYS_close, fd);
		close_mount_fds(-1);
		sentinel_wd = -1;
		return -EAGAIN;
	}
	atomic_store(&owner_pid, (int)getpid());
	atomic_store(&inotify_fd, fd);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return fd;
}

/* ops->watch_dir: under the dcache mutex. */
static int watch_dir(const char *path, int names_only)
{
	/* Again: full replaces (a names-only mask becomes full), names only
	 * adds (a full mask stays full). */
	uint32_t again = names_only ? WATCH_MASK_NAMES | IN_MASK_ADD : WATCH_MASK;
	int fd, wd;

	fd_lock();
	fd = start_locked();
	if (fd < 0) {
		fd_unlock();
		atomic_fetch_add_explicit(&st_watch_failures, 1, memory_order_relaxed);
		return fd;
	}
	if (!atomic_load(&session_active)) { /* a session's watches are the session's */
		unsigned long b = watch_budget_locked();

		if (b && atomic_load(&st_watches) >= b) {
			fd_unlock(); /* over budget: pass through (stats: pass_watch_limit) */
			atomic_fetch_add_explicit(&st_watch_failures, 1, memory_order_relaxed);
			return -ENOSPC;
		}
	}
	/* IN_MASK_CREATE: EEXIST if the inode is watched already (another name
	 * of it: a bind mount, a hard-linked directory path), which then uses
	 * no more of the budget: ask for its id without the flag.  A session
	 * has no budget of ours, and its directories are mostly watched by
	 * another process already: one call, counted. */
	if (atomic_load(&session_active)) {
		wd = inotify_add_watch(fd, path, again);
		session_wd_add(wd); /* before anything below it is cached */
	} else {
		wd = inotify_add_watch(fd, path,
				       (names_only ? WATCH_MASK_NAMES : WATCH_MASK) | IN_MASK_CREATE);
	}
	if (wd >= 0) {
		atomic_fetch_add_explicit(&st_watches, 1, memory_order_relaxed);
	} else if (errno == EEXIST) {
		wd = inotify_add_watch(fd, path, again);
		if (wd < 0)
			wd = -errno;
	} else {
		wd = -errno;
	}
	fd_unlock();
	if (wd < 0) {
		atomic_fetch_add_explicit(&st_watch_failures, 1, memory_order_relaxed);
		return wd == -EAGAIN ? -ENOSPC : wd; /* not the transient code */
	}
	return wd;
}

/* ops->unwatch_dir: under the dcache mutex.  After a give-up the watch died
 * with its instance: nothing to do (I4 orders this before a new instance).
 * The count goes down when the IN_IGNORED that the removal queues is read
 * ("Watch budget"). */
static void unwatch_dir(int wd)
{
	int fd;

	fd_lock();
	fd = atomic_load(&inotify_fd);
	if (fd >= 0 && !atomic_load(&session_active)) /* another process may use it */
		inotify_rm_watch(fd, wd);
	fd_unlock();
}

/* After an overflow: the watches the kernel holds for this instance, from
 * /proc/self/fdinfo/<fd> ("inotify wd:" lines), less the sentinel.  Under
 * read_mutex; the fdinfo is read under fd_mutex (the number must be ours). */
static void recount_watches(void)
{
	static char buf[1 << 16] DCACHE_COLD_BSS;
	char path[64];
	unsigned long n = 0;
	long len = 0, r;
	int fd, f = -1, sentinel;

	fd_lock();
	fd = atomic_load(&inotify_fd);
	sentinel = sentinel_wd >= 0;
	if (fd >= 0) {
		snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
		f = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	}
	fd_unlock();
	if (f < 0)
		return;
	/* One pass; a line cut at the buffer's end is counted in the next. */
	for (;;) {
		char *p = buf, *nl;

		r = syscall(SYS_read, f, buf + len, sizeof(buf) - 1 - (size_t)len);
		if (r <= 0)
			break;
		len += r;
		buf[len] = '\0';
		while ((nl = strchr(p, '\n'))) {
			if (!strncmp(p, "inotify wd:", 11))
				n++;
			p = nl + 1;
		}
		len -= p - buf;
		memmove(buf, p, (size_t)len);
		if (len >= (long)sizeof(buf) - 1)
			len = 0; /* a line longer than the buffer: not a watch */
	}
	syscall(SYS_close, f);
	if (sentinel && n > 0)
		n--;
	atomic_store(&st_watches, n);
}

/*
 * ops->prepare: create the instance, its io_uring and the reader thread now,
 * before liburcu's threads exist.  move_high() grows the fd table from its
 * initial 64 slots; once the process has a second thread, expand_fdtable()
 * waits for an RCU grace period to do that (measured: fcntl(F_DUPFD_CLOEXEC,
 * 512) took 5-13 ms in `gcc --version` under the shim, most of its run
 * time).  Doing it first makes it free in every program that is
 * single-threaded at its first lookup; a program that already runs threads
 * pays it once, as before.  Called under the dcache init lock while the root
 * is unpublished; start_locked() is under fd_mutex as everywhere.  A failure
 * here is retried by the first watch_dir().
 */
static void prepare(void)
{
	fd_lock();
	(void)start_locked();
	fd_unlock();
}

DCACHE_START_TEXT void inval_fill_ops(struct dcache_ops *ops)
{
	ops->watch_dir = watch_dir;
	ops->unwatch_dir = unwatch_dir;
	ops->prepare = prepare;
	inval_shared_fill_ops(ops); /* inval_shared.c */
}

void inval_drain(void)
{
	unsigned int gen = atomic_load(&inst_gen);
	int fd = atomic_load(&inotify_fd), pending = 0;

	if (fd < 0)
		return;
	read_lock();
	if (atomic_load(&session_active)) {
		mounts_check_locked(fd, gen, NULL);
		pending = session_watcher_died() ? -1 : session_sync_locked(fd, gen, 1);
		pthread_mutex_unlock(&read_mutex);
		if (pending < 0)
			session_abandon(fd);
		return;
	}
	mounts_check_locked(fd, gen, &pending);
	if (pending)
		read_all_locked(fd, gen);
	pthread_mutex_unlock(&read_mutex);
}

DCACHE_START_TEXT void inval_set_watch_budget(long n)
{
	atomic_store(&budget_cfg, n < 0 ? -1 : n);
}

DCACHE_START_TEXT void inval_set_mounts_hook(void (*fn)(void))
{
	mounts_hook = fn;
}

/* DCACHE_FORK_TEXT: a fork child's redirection open calls it (note_change). */
DCACHE_FORK_TEXT void inval_note_change(void)
{
	if (atomic_load_explicit(&inotify_fd, memory_order_relaxed) >= 0)
		atomic_fetch_add(&change_gen, 1);
}

/*
 * Without a reader thread (a lazy process's first reader_delay_ns), or while
 * the reader pauses after a read (reader_batching), events from other
 * processes are applied here: by the first lookup of every DRAIN_QUANTUM_NS
 * slot of CLOCK_MONOTONIC (200 us without a reader, BATCH_QUANTUM_NS = 50 us
 * while it pauses; ~20 ns per call, vDSO; one non-blocking read per slot in
 * which the process looks something up).  An answer given
 * at time t therefore reflects every event queued before the last timed
 * drain began, which was less than one slot before t: foreign changes are
 * seen within one slot plus the drain itself.  This process's own changes
 * and its reaped children's are drained before the next lookup, as always.
 * (A reader that sets reader_batching just after a lookup loaded it as 0 had
 * just applied everything queued: that lookup is no staler than a drain.)
 *
 * The clock without its cost: a cc1 lives less than the reader's delay, so
 * each of its ~28,000 lookups read the clock (19 ns of a ~40 ns hit; 1.1% of
 * a generated build's CPU samples).  Where the CPU has a time-stamp counter,
 * a clock read that found its slot drained also notes the counter value
 * before which the current BATCH_QUANTUM_NS sub-slot cannot have ended,
 * counting one tick per ns; lookups before that value skip the clock.  One
 * tick per ns is a lower bound of the counter's rate only if the counter
 * runs at 1 GHz or more: the clock reads check that (tsc_rate_ok: from two
 * reads at least 1 ms apart; until then, and if it fails or the counter goes
 * backwards, nothing is skipped).  A skipped lookup is thus in a slot that
 * was drained, exactly as if it had read the clock.
 */
#if defined(__x86_64__)
#include <x86intrin.h>
static atomic_ullong tsc_skip_until;        /* 0: read the clock */
static atomic_int tsc_rate_ok;              /* 1 yes, -1 no, 0 not known yet */
static atomic_ullong tsc_ref, tsc_ref_ns;   /* the first clock read's pair */

/* A clock read at now_ns, counter c: learn the rate; if the slot is
 * drained, skip until the sub-slot's end.  Relaxed: a stale value read by
 * another thread only skips less (skip_until only names a past or current
 * sub-slot's end, counted at the lower bound). */
static void tsc_note(unsigned long long c, long now_ns, int drained)
{
	unsigned long long r = atomic_load_explicit(&tsc_ref, memory_order_relaxed);
	int ok = atomic_load_explicit(&tsc_rate_ok, memory_order_relaxed);

	if (ok < 0)
		return;
	if (!r) {
		atomic_store_explicit(&tsc_ref_ns, (unsigned long long)now_ns, memory_order_relaxed);
		atomic_store_explicit(&tsc_ref, c, memory_order_relaxed);
		return;
	}
	if (!ok) {
		long long dns = now_ns - (long long)atomic_load_explicit(&tsc_ref_ns, memory_order_relaxed);

		if (dns < 1000000)
			return;
		ok = c > r && c - r >= (unsigned long long)dns ? 1 : -1;
		atomic_store_explicit(&tsc_rate_ok, ok, memory_order_relaxed);
		if (ok < 0)
			return;
	}
	if (c < r) { /* backwards (another CPU's counter?): never again */
		atomic_store_explicit(&tsc_rate_ok, -1, memory_order_relaxed);
		atomic_store_explicit(&tsc_skip_until, 0, memory_order_relaxed);
		return;
	}
	if (drained)
		atomic_store_explicit(&tsc_skip_until,
				      c + (unsigned long long)(BATCH_QUANTUM_NS - now_ns % BATCH_QUANTUM_NS),
				      memory_order_relaxed);
}
#endif

static inline int timed_drain_due(long *tick)
{
	struct timespec ts;
	long now;
	int due;
#if defined(__x86_64__)
	unsigned long long c;
#endif

	if (__builtin_expect(atomic_load_explicit(&reader_running, memory_order_relaxed), 1) &&
	    __builtin_expect(!atomic_load_explicit(&reader_batching, memory_order_relaxed), 1))
		return 0;
	if (atomic_load_explicit(&inotify_fd, memory_order_relaxed) < 0)
		return 0; /* no instance: nothing cached can be stale */
#if defined(__x86_64__)
	c = __rdtsc();
	if (c < atomic_load_explicit(&tsc_skip_until, memory_order_relaxed) &&
	    atomic_load_explicit(&tsc_rate_ok, memory_order_relaxed) > 0)
		return 0; /* within a drained sub-slot (above) */
#endif
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = ts.tv_sec * 1000000000L + ts.tv_nsec;
	*tick = now - now % (atomic_load_explicit(&reader_running, memory_order_relaxed) ?
			     BATCH_QUANTUM_NS : DRAIN_QUANTUM_NS);
	due = *tick != atomic_load_explicit(&last_drain_tick, memory_order_acquire);
#if defined(__x86_64__)
	tsc_note(c, now, !due);
#endif
	return due;
}

/* A lazy process that outlives the delay gets its reader after all (if that
 * fails it keeps draining per tick).  Under read_mutex. */
static void maybe_start_reader(int fd, unsigned int gen, long tick)
{
	sigset_t all, old;

	if (tick - first_use_ns < reader_delay_ns ||
	    atomic_load_explicit(&forked, memory_order_relaxed))
		return;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	fd_lock();
	if (atomic_load(&inotify_fd) == fd && atomic_load(&inst_gen) == gen &&
	    !atomic_load(&reader_running))
		(void)start_reader_locked(fd, gen);
	fd_unlock();
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static __attribute__((noinline)) void sync_slow(unsigned long want, long tick);

/* The check every lookup makes, small enough for the shim's link to inline
 * (RCUWALK_LTO); a drain due is sync_slow()'s. */
void inval_sync(void)
{
	unsigned long want = atomic_load_explicit(&change_gen, memory_order_acquire);
	long tick = 0;

	if (__builtin_expect(want == atomic_load_explicit(&drained_gen, memory_order_acquire), 1) &&
	    !timed_drain_due(&tick))
		return;
	sync_slow(want, tick);
}

static void sync_slow(unsigned long want, long tick)
{
	unsigned int gen;
	int fd, broken = 0;

	gen = atomic_load(&inst_gen);
	fd = atomic_load(&inotify_fd);
	if (fd < 0)
		return;
	/* Another thread may be draining already: its drain covers our change
	 * only if it sampled change_gen after we noted it, hence the re-check
	 * under the mutex rather than a "pending" flag cleared by the drainer. */
	read_lock();
	if ((long)(atomic_load(&drained_gen) - want) < 0 ||
	    (tick && tick != atomic_load(&last_drain_tick))) {
		unsigned long now = atomic_load(&change_gen);
		int pending = 0;

		/* Cut short if the instance is given up meanwhile: then
		 * `recovering` is set and the caller passes through (I4).
		 * A mount made by a reaped child is seen here too.  One poll()
		 * asks about both; read() only if events are queued (the
		 * timed drains mostly find none).  A session asks FIONREAD
		 * and the ring instead (session_sync_locked). */
		if (atomic_load(&session_active)) {
			int sync = (long)(atomic_load(&drained_gen) - want) < 0;

			if (sync)
				mounts_check_locked(fd, gen, NULL);
			else
				session_mounts_locked();
			/* A dead watcher (its death notice): nothing more will
			 * be published, whatever is queued. */
			broken = session_watcher_died() || session_sync_locked(fd, gen, sync) < 0;
		} else {
			mounts_check_locked(fd, gen, &pending);
			if (pending)
				read_all_locked(fd, gen);
		}
		atomic_store(&drained_gen, now);
		if (tick)
			atomic_store_explicit(&last_drain_tick, tick, memory_order_release);
	}
	if (tick && !atomic_load(&reader_running))
		maybe_start_reader(fd, gen, tick);
	pthread_mutex_unlock(&read_mutex);
	if (broken)
		session_abandon(fd); /* then `recovering`: the caller recovers */
}

DCACHE_START_TEXT void inval_set_reader_delay(unsigned int ms)
{
	reader_delay_ns = (long)ms * 1000000L;
}

DCACHE_FORK_TEXT void inval_fork_prepare(void)
{
	/* Not read_lock(): this thread may hold urcu-bp's registry mutex
	 * already (the fork hooks run first); it registers nothing here. */
	pthread_mutex_lock(&read_mutex);
	inval_fork_note();
}

/* Before the fork, so that the parent writes no page fork() has just
 * write-protected; the child clears it (inval_fork_child).  A fork before
 * the process has an instance (a daemon's, a helper's) does not count. */
DCACHE_FORK_TEXT void inval_fork_note(void)
{
	if (!atomic_load_explicit(&forked, memory_order_relaxed) &&
	    atomic_load_explicit(&inotify_fd, memory_order_relaxed) >= 0)
		atomic_store_explicit(&forked, 1, memory_order_relaxed);
}

DCACHE_FORK_TEXT void inval_fork_parent(void)
{
	pthread_mutex_unlock(&read_mutex);
}

DCACHE_FORK_TEXT void inval_fork_child(void)
{
	int fd = atomic_load(&inotify_fd);

	/* The instance is shared with the parent: reading it here would steal
	 * the parent's events.  Close our copy; the parent's watches stay.
	 * The parent's reader (and a give-up in progress there) does not
	 * exist here: start afresh. */
	pthread_mutex_init(&read_mutex, NULL);
	pthread_mutex_init(&fd_mutex, NULL);
	pthread_mutex_init(&lose_mutex, NULL);
	pthread_mutex_init(&recover_mutex, NULL);
	fd_mutex_mine = 0;
	if (fd >= 0)
		syscall(SYS_close, fd);
	close_mount_fds(-1); /* shared descriptions: polling them would consume the parent's news */
	/* The parent's rings: our copies would keep its instances alive.  Only
	 * closed: the ring is the parent's too (no unregistering here). */
	fd = atomic_exchange(&ring_fd, -1);
	if (fd >= 0)
		syscall(SYS_close, fd);
	fd = atomic_exchange(&ring_stale, -1);
	if (fd >= 0)
		syscall(SYS_close, fd);
	atomic_store(&inotify_fd, -1);
	atomic_store(&closing_fd, -1);
	atomic_store(&session_active, 0); /* the child attaches on its own */
	atomic_store(&apply_since, 0); /* nothing is being applied in the child */
	sentinel_wd = -1;
	atomic_store(&recovering, 0); /* the child's cache starts empty */
	atomic_fetch_add(&inst_gen, 1);
	atomic_store(&reader_exit_gen, atomic_load(&inst_gen));
	atomic_store(&reader_running, 0);
	atomic_store(&reader_batching, 0);
	atomic_store(&last_drain_tick, 0);
	first_use_ns = 0; /* a fork child's lifetime is its own */
	atomic_store_explicit(&forked, 0, memory_order_relaxed); /* and its forks */
	atomic_store(&drained_gen, atomic_load(&change_gen));
	atomic_store(&st_watches, 0);
}

int inval_active(void)
{
	unsigned int g = atomic_load(&reader_gen);

	return atomic_load(&inotify_fd) >= 0 && (int)(atomic_load(&reader_exit_gen) - g) < 0;
}

void inval_shutdown(void)
{
	/* The fd stays open: closing it under the reader thread would let a
	 * reused fd number be read by it.  Emptying the cache is what tests need. */
	inval_drain();
	dcache_invalidate_all();
}

void inval_stats_get(struct inval_stats *out)
{
	out->watches = atomic_load(&st_watches);
	out->events = atomic_load(&st_events);
	out->watch_failures = atomic_load(&st_watch_failures);
	out->overflows = atomic_load(&st_overflows);
	out->mount_changes = atomic_load(&st_mount_changes);
	out->listings_shared = atomic_load(&st_listings_shared);
	out->watches_shared = atomic_load(&st_watches_shared);
	out->names_shared = atomic_load(&st_names_shared);
	out->searches_shared = atomic_load(&st_searches_shared);
	out->paths_shared = atomic_load(&st_paths_shared);
	out->files_shared = atomic_load(&st_files_shared);
	out->fs_shared = atomic_load(&st_fs_shared);
}
