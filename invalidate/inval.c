/* SPDX-License-Identifier: MIT */
/*
 * inval.c - inotify watches and the event reader thread.
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
 *
 * The program's fds
 * =================
 * Our numbers are hidden from the program (preload/shim_process.c, "The
 * shim's own fds"): a call naming one is answered as for a closed fd, so
 * close() of one is EBADF and closes nothing, and close_range/closefrom
 * close the program's numbers around ours.  They sit at the top of the
 * table, on the highest free numbers below min(RLIMIT_NOFILE, FD_TOP)
 * (move_high): the kernel hands the program its lowest free number, so the
 * program gets the numbers it would get without us until its table is
 * full; then its EMFILE, or a number above one of ours, makes the wrapper
 * give every number back (inval_give_fds_back: the instance goes for good,
 * lookups pass through) and retry.  FD_TOP bounds the table we grow: 1024
 * slots, the kernel's size for any number from 512 to 1023.
 *
 * The fd is ours only until the host takes its number
 * ===================================================
 * The host may dup2/dup3 another file onto our number at any moment (and
 * could close it with a raw syscall, which we never see); shim.c calls
 * inval_fd_closing() BEFORE such a call reaches the kernel.  Afterwards the
 * number may name a file of the host's, so:
 *  I1  every syscall on the number made by an application thread (read,
 *      inotify_add_watch, inotify_rm_watch) is made with fd_mutex held,
 *      after checking under it that inotify_fd still holds that number.
 *      fd_mutex is a leaf: nothing is taken and nothing is applied under it.
 *  I2  the reader thread's only syscall on the number outside fd_mutex is
 *      poll(), and it enters poll() only after seeing inst_gen unchanged
 *      since it was started; it reads under fd_mutex like everyone else (I1).
 *  I3  giving the number up (give_up_locked): under fd_mutex, set
 *      `recovering`, store -1 in inotify_fd and bump inst_gen - from then
 *      on nobody starts a syscall on the number (I1, I2) - and, while the
 *      number is still ours, queue an event on the instance (remove the
 *      sentinel watch: IN_IGNORED) so that a reader blocked in poll()
 *      returns.  Then, outside fd_mutex, wait until the reader has exited.
 *      Only then does the host's close proceed: no thread of ours makes a
 *      syscall naming the number after the kernel has closed it.
 *  I4  lookups pass through while `recovering` is set (shim.c asks
 *      inval_recovering() after inval_sync()), and no new instance is
 *      created (watch_dir answers -EAGAIN) until inval_recover() has run
 *      dcache_reset(): every dentry of the old instance is dead and the
 *      root's watch forgotten before a new instance hands out watch ids
 *      that could be confused with the old ones.
 *  The waits in I3 are skipped when the closing thread may hold one of our
 *  locks (a signal handler that interrupted this thread inside the shim:
 *  inval_fd_closing(fd, 1)); see that function for what this leaves open.
 *  Locks: lose_mutex (one give-up at a time) -> fd_mutex.  read_mutex ->
 *  fd_mutex, dcache writer mutex -> fd_mutex (watch_dir, unwatch_dir).
 *  A vfork() or raw clone() child shares our memory or a copy of it but not
 *  our fd table: its closes are its own (owner_pid check).
 *  The instance's other numbers (the two /proc/self/mountinfo fds, see
 *  "Mounts" below) are guarded the same way: closing any of them gives the
 *  whole instance up, and the numbers the host did not close are closed by
 *  us once the reader has left (leaked, not closed, when nothing may wait).
 *  The io_uring that holds the instance's last reference (ring_fd) is a
 *  number of ours too: the host closing it only makes us forget it; giving
 *  the instance up closes it (under fd_mutex, or from inval_recover() when
 *  lose_now() could not).
 *  Not covered: closes the shim never sees (raw syscall(SYS_close ...),
 *  static or Go code), and another thread of the program closing numbers it
 *  does not own while start_locked() creates the instance (before the number
 *  is published), which would hit glibc's own transient fds just the same.
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

#define WATCH_MASK (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | \
		    IN_MODIFY | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF | \
		    IN_ONLYDIR | IN_DONT_FOLLOW)
/* A scratch directory's (dcache.h, dcache_set_scratch): no event that its
 * entries raise, so that the kernel does not mark every child dentry.  Added
 * with IN_MASK_ADD, so that it never narrows a full watch of the inode. */
#define WATCH_MASK_NAMES (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | \
			  IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW)
/* Our numbers sit just below min(RLIMIT_NOFILE, FD_TOP), within FD_SLOTS of
 * it (move_high): see "The program's fds" above. */
#define FD_TOP 1024
#define FD_SLOTS 8
#define READER_BATCH_NS 2000000L /* see reader_main() */
/* The reader's stack: its read buffer (16 KiB) and the event path's PATH_MAX
 * buffers.  AddressSanitizer's redzones and an unoptimised build take about
 * four times as much (the event path overflowed 64 KiB in the ASan CI job
 * once its functions were no longer inlined into each other). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define READER_STACK (256 * 1024)
#else
#define READER_STACK (64 * 1024)
#endif
#define DRAIN_QUANTUM_NS 200000L  /* see timed_drain_due(): no reader yet */
#define BATCH_QUANTUM_NS 50000L   /* see timed_drain_due(): reader pausing */
#define SESSION_STEP_NS 1000000L     /* session_sync_locked(): one wait */
/* Liveness by progress (session_stalled_locked): events queued this long
 * with the watcher publishing nothing give the session up, whatever the
 * watcher's state (stopped, starved, faulting).  Asked every
 * SESSION_ASK_NS of a still ring, so a foreign change is seen within
 * SESSION_STUCK_NS + 2 * SESSION_ASK_NS = 60 ms plus scheduling: clause 4's
 * bound in a session, written as 100 ms in doc/coherence.md. */
#define SESSION_STUCK_NS 40000000L
#define SESSION_ASK_NS (SESSION_STUCK_NS / 4)
#define SESSION_READER_NS SESSION_ASK_NS /* reader_session(): liveness period */
#define SESSION_MOUNTS_NS 100000000L     /* ... and its mount doorbell's */

static pthread_mutex_t read_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t fd_mutex = PTHREAD_MUTEX_INITIALIZER;   /* I1: leaf */
static pthread_mutex_t lose_mutex = PTHREAD_MUTEX_INITIALIZER; /* one give-up at a time */
static pthread_mutex_t recover_mutex = PTHREAD_MUTEX_INITIALIZER;
static __thread int fd_mutex_mine __attribute__((tls_model("initial-exec")));
atomic_int inotify_fd = -1; /* inval_int.h */
static atomic_int closing_fd = -1; /* the number being given up, until its close may proceed */
atomic_uint inst_gen = 1; /* bumped whenever an instance is given up (inval_int.h) */
static atomic_int recovering;      /* I4 */
static atomic_int disabled;        /* inval_disable(): never create an instance again */
static atomic_int owner_pid;       /* the process whose fd table holds inotify_fd */
static int sentinel_wd = -1;       /* under fd_mutex: a watch to remove to wake the reader */
/* The reader of instance generation g stores g in reader_gen when started
 * and raises reader_exit_gen to g (a futex word) when it has left for good. */
static atomic_uint reader_gen, reader_exit_gen;
static atomic_int reader_tid;
/* change_gen counts noted changes; drained_gen is the change_gen value that
 * the last completed drain covered (written under read_mutex). */
static atomic_ulong change_gen, drained_gen;
static atomic_ulong st_watches, st_events, st_watch_failures, st_overflows;
/* st_*_shared: inval_int.h */
atomic_ulong st_listings_shared, st_watches_shared, st_names_shared, st_searches_shared;
/* Set when our own mountinfo poll saw a change (mounts_check_locked): the
 * watcher may not have counted it yet, so the shared generations may still
 * vouch for what it covered; and when the process changed its credentials
 * (inval_shared_off).  No shared entry is used or offered after that, for
 * the rest of this process image (both are rare in a build). */
atomic_int listing_off; /* inval_int.h */
/* The instance's mountinfo fds ("Mounts"); -1 when none. */
static atomic_int mnt_rfd = -1, mnt_sfd = -1;
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
static atomic_int reader_running;
static atomic_int reader_batching;
static long first_use_ns;
static atomic_long last_drain_tick;
/* The io_uring that holds the instance's last reference (defer_final_release):
 * ring_fd for the current instance, ring_stale for one given up where it could
 * not be closed (lose_now); -1 if none.  Both are numbers of ours under the
 * same rules as inotify_fd (the fd guard): set, claimed and closed under
 * fd_mutex; forgotten when the host closes them itself. */
static atomic_int ring_fd = -1, ring_stale = -1;

_Static_assert(sizeof(uintptr_t) >= 8, "reader_main packs (gen, fd) into its argument");

/* Take read_mutex.  Every holder may apply events, and so enter its
 * thread's first read-side section, which registers the thread with urcu-bp
 * under urcu-bp's registry mutex.  fork() takes that mutex (liburcu's hook)
 * before read_mutex (inval_fork_prepare): a first registration under
 * read_mutex deadlocked the two (seen in ncurses' configure: the reader
 * thread's first event, while the shell forked).  So the thread registers
 * first, holding nothing. */
static void read_lock(void)
{
	dcache_thread_register();
	pthread_mutex_lock(&read_mutex);
}

/* fd_mutex_mine is 1 from before this thread asks for fd_mutex until after
 * it has released it: a signal handler that finds it 0 knows that this
 * thread neither holds fd_mutex nor is inside pthread_mutex_lock/unlock. */
static void fd_lock(void)
{
	__atomic_store_n(&fd_mutex_mine, 1, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	pthread_mutex_lock(&fd_mutex);
}

static void fd_unlock(void)
{
	pthread_mutex_unlock(&fd_mutex);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&fd_mutex_mine, 0, __ATOMIC_RELAXED);
}

static void recount_watches(void);
static void session_abandon(int fd);

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
static void apply_event(const struct inotify_event *ev)
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

/* Read until the queue is empty, or until instance (fd, gen) is no longer
 * ours.  Called with read_mutex held.  Each read() is made under fd_mutex
 * (I1); events are applied outside it.  Returns 0 if the instance is gone. */
static int read_all_locked(int fd, unsigned int gen)
{
	char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));

	if (atomic_load(&session_active)) {
		/* The session's ring, not read(): only the watcher reads the
		 * instance.  No syscall on the number, hence no fd_mutex. */
		if (atomic_load(&inotify_fd) != fd || atomic_load(&inst_gen) != gen)
			return 0;
		session_apply_locked(apply_event);
		return 1;
	}
	for (;;) {
		ssize_t n;

		fd_lock();
		if (atomic_load(&inotify_fd) != fd || atomic_load(&inst_gen) != gen) {
			fd_unlock();
			return 0;
		}
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR) {
			fd_unlock();
			continue;
		}
		fd_unlock();
		if (n <= 0)
			return 1; /* EAGAIN: empty */
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			apply_event(ev);
			p += sizeof(*ev) + ev->len;
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
static void mounts_check_locked(int fd, unsigned int gen, int *pending)
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

static long mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
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

/*
 * A session's sync point (doc/session.md, "Causality"): make sure every
 * event queued on the instance before this call is applied.  FIONREAD on our
 * copy first, then the ring's state word (ring.h): an empty queue at t1 and
 * no read cycle in progress at t2 > t1 mean that every event queued before
 * t1 was taken by a cycle that has published it.  Otherwise wait for a
 * cycle that starts after t1 (it reads until EAGAIN, after t1, and
 * publishes before it ends: state reaches the even value after the next odd
 * one), or for that test to pass later.
 * A watcher that makes no progress
 * (session_stalled_locked) or is gone: -1, the caller gives the session up.
 * Under read_mutex, for instance (fd, gen); FIONREAD under fd_mutex (I1).
 * 1 = applied, 0 = the instance is no longer ours.
 * With wait = 0 (the timed drains of clause 4, which owe no causality:
 * foreign changes are seen once the watcher has published them, within its
 * batching pause) nothing waits and, mostly, nothing is asked: apply what
 * is published; only once the ring (state word and tail) has stood still
 * for SESSION_ASK_NS is FIONREAD asked (then again SESSION_ASK_NS later),
 * and -1 returned if the watcher has left events queued for
 * SESSION_STUCK_NS, or is gone (idle_state, idle_tail, idle_since).  So a
 * timed drain makes no system call while the ring moves (it made two:
 * FIONREAD, and the mount poll that session_mounts_locked() replaces).
 */
static uint32_t idle_state; /* under read_mutex */
static uint64_t idle_tail;
static long idle_since;

/*
 * Liveness by progress (clause 4, doc/coherence.md).  A watcher's pid that
 * exists says nothing: a watcher stopped (SIGSTOP, a debugger), starved by
 * the scheduler or stuck in a page fault passes session_watcher_alive() and
 * publishes nothing while it lasts.  Progress is what counts: the ring's
 * state word and tail.  One observation = the state word and tail read
 * before asking the kernel whether events are queued on our copy
 * (FIONREAD or poll), and the same two read after.  If both stand still
 * across two observations at least SESSION_STUCK_NS apart, each of which
 * found events queued (or the state odd: a read cycle that long), then an
 * event queued at the first has been neither read nor published since: no
 * read cycle began (the state word would have moved) and no record was
 * published (the tail), and the watcher publishes an event only as a record.
 * So the process is stale by at least that much, and gives the session up.
 * Falling back early is always exact (the kernel answers); only the cost
 * changes, which is why the bound is not shorter.  Under read_mutex.
 */
static uint32_t stall_state;
static uint64_t stall_tail;
static long stall_since; /* 0: no observation found events queued */

/* One observation: `st`, `tail` read before asking, `queued` the answer.
 * Returns 1 if the watcher has left events queued for SESSION_STUCK_NS. */
static int session_stalled_locked(uint32_t st, uint64_t tail, int queued)
{
	long now = mono_ns();

	if (st != session_state() || tail != session_tail() || (!queued && !(st & 1))) {
		stall_since = 0; /* progress, or nothing waits for any */
		return 0;
	}
	if (!stall_since || st != stall_state || tail != stall_tail) {
		stall_state = st;
		stall_tail = tail;
		stall_since = now;
		return 0;
	}
	return now - stall_since >= SESSION_STUCK_NS;
}

/* FIONREAD on instance (fd, gen) into *n (1 if unknown: not known empty),
 * under fd_mutex (I1).  0 if the instance is no longer ours. */
int queued_locked(int fd, unsigned int gen, int *n)
{
	int ours;

	*n = 0;
	fd_lock();
	ours = atomic_load(&inotify_fd) == fd && atomic_load(&inst_gen) == gen;
	if (ours && syscall(SYS_ioctl, fd, FIONREAD, n) != 0)
		*n = 1;
	fd_unlock();
	return ours;
}

static int session_sync_locked(int fd, unsigned int gen, int wait)
{
	uint32_t target = 0, last = 0;
	long since = 0;
	int first = 1;

	if (!wait) {
		uint32_t st = session_state();
		uint64_t tail = session_tail();
		long now = mono_ns();

		if (atomic_load(&inotify_fd) != fd || atomic_load(&inst_gen) != gen)
			return 0;
		if (st != idle_state || tail != idle_tail || !idle_since) {
			idle_state = st;
			idle_tail = tail;
			idle_since = now;
		} else if (now - idle_since >= SESSION_ASK_NS) {
			int n;

			idle_since = now; /* the next question in as long */
			if (!queued_locked(fd, gen, &n))
				return 0;
			if (session_stalled_locked(st, tail, n > 0) ||
			    ((n > 0 || (st & 1)) && !session_watcher_alive()))
				return -1;
		}
		session_apply_locked(apply_event);
		return 1;
	}
	for (;;) {
		uint32_t st0 = session_state(), st;
		uint64_t tail = session_tail();
		int n;

		if (!queued_locked(fd, gen, &n))
			return 0;
		st = session_state(); /* after FIONREAD: see above */
		if (n == 0 && !(st & 1))
			break;
		if (session_stalled_locked(st0, tail, n > 0))
			return -1; /* at most SESSION_STUCK_NS, however stopped */
		if (first) {
			target = st + ((st & 1) ? 3 : 2);
			last = st;
			since = mono_ns();
			first = 0;
		} else if ((int32_t)(st - target) >= 0) {
			break;
		} else if (st != last) {
			last = st;
			since = mono_ns();
		} else {
			/* Standing still: a busy CPU, a stopped watcher
			 * (session_stalled_locked, above) or one that is gone
			 * (asked only then: ~10 us of /proc). */
			if (mono_ns() - since >= SESSION_STEP_NS && !session_watcher_alive())
				return -1;
		}
		session_poke(); /* out of its batching pause */
		session_wait(st, SESSION_STEP_NS);
	}
	session_apply_locked(apply_event);
	return 1;
}

static void reader_left(unsigned int gen)
{
	unsigned int cur = atomic_load(&reader_exit_gen);

	while ((int)(cur - gen) < 0 && !atomic_compare_exchange_weak(&reader_exit_gen, &cur, gen))
		;
	syscall(SYS_futex, &reader_exit_gen, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/*
 * The reader asks for a short scheduler slice (Linux >= 6.12: EEVDF's custom
 * slice, sched_attr.sched_runtime of a SCHED_OTHER/SCHED_BATCH thread, no
 * privilege needed; older kernels ignore the field).  Woken by an event
 * while every CPU runs other work, a thread with the default slice waits
 * until the running task's slice ends (measured with rcuwalk_staleness on 2
 * busy CPUs: most changes were still stale at the poller's first look, up
 * to ms later); with a short one it preempts that task and applies the
 * event at once.  It runs a few microseconds per wakeup.  The thread's
 * policy and nice value are the program's and stay as they are.
 */
#define READER_SLICE_NS 100000 /* the kernel's minimum */
struct reader_sched_attr {
	uint32_t size, policy;
	uint64_t flags;
	int32_t nice;
	uint32_t priority;
	uint64_t runtime, deadline, period;
};

static void reader_short_slice(void)
{
	struct reader_sched_attr a;

	memset(&a, 0, sizeof(a));
	if (syscall(SYS_sched_getattr, 0, &a, sizeof(a), 0) != 0 ||
	    (a.policy != SCHED_OTHER && a.policy != SCHED_BATCH))
		return;
	a.size = sizeof(a);
	a.flags &= 0x01; /* SCHED_FLAG_RESET_ON_FORK, as it was */
	a.runtime = READER_SLICE_NS;
	syscall(SYS_sched_setattr, 0, &a, 0);
}

static void reader_pause(void);

/*
 * The reader of a session's instance: it sleeps on the ring's state word
 * instead of poll() (the instance is the watcher's to read), applies what
 * was published, and every SESSION_MOUNTS_NS of quiet asks the mount
 * doorbell (no futex and poll() in one wait: a mount is seen within that
 * period, or at the next sync point), every SESSION_READER_NS whether
 * events are queued (FIONREAD) and, if events are queued while nothing moves,
 * whether the watcher is alive and makes progress (session_stalled_locked:
 * a stopped watcher is alive).  A dead or stalled watcher: change_gen is
 * bumped so that the next inval_sync() takes its slow path, finds it dead
 * or stalled too and gives the session up.  Its only syscalls on the number are under
 * fd_mutex (mounts_check_locked), so I2 holds trivially.
 */
static void reader_session(int fd, unsigned int gen)
{
	unsigned int quiet = 0;

	for (;;) {
		uint32_t st = session_state();
		uint64_t tail;
		int alive = 1, pending = 0, stalled;

		if (atomic_load(&inst_gen) != gen) /* I2 */
			return;
		if (session_behind()) {
			read_lock();
			alive = read_all_locked(fd, gen);
			pthread_mutex_unlock(&read_mutex);
			if (!alive)
				return;
			reader_pause();
			continue;
		}
		if (session_wait_or_death(st, SESSION_READER_NS)) {
			/* The watcher died (its death notice, ring.h): the
			 * next inval_sync() of any thread takes its slow
			 * path and gives the session up before it answers.
			 * This thread leaves with the instance (I2). */
			atomic_fetch_add(&change_gen, 1);
			return;
		}
		tail = session_tail();
		if (st != session_state() || session_behind())
			continue;
		read_lock();
		/* The mount doorbell as before, every SESSION_MOUNTS_NS; the
		 * queue (FIONREAD) every SESSION_READER_NS in between. */
		if (++quiet % (SESSION_MOUNTS_NS / SESSION_READER_NS) == 0)
			mounts_check_locked(fd, gen, &pending);
		else
			(void)queued_locked(fd, gen, &pending);
		stalled = session_stalled_locked(st, tail, pending > 0);
		pthread_mutex_unlock(&read_mutex);
		if (stalled || (pending && st == session_state() && !session_watcher_alive()))
			atomic_fetch_add(&change_gen, 1);
	}
}

static void *reader_main(void *arg)
{
	int fd = (int)(uint32_t)(uintptr_t)arg;
	unsigned int gen = (unsigned int)((uintptr_t)arg >> 32);
	/* Set before this thread was created; if the instance is given up
	 * meanwhile, inst_gen says so before the first poll (I2). */
	int rfd = atomic_load(&mnt_rfd);

	reader_short_slice();
	atomic_store(&reader_tid, (int)syscall(SYS_gettid));
	/* The doorbell was opened just now: a change made before it rings no
	 * bell, so ask mnt_sfd once. */
	if (rfd >= 0) {
		read_lock();
		mounts_check_locked(fd, gen, NULL);
		pthread_mutex_unlock(&read_mutex);
	}
	if (atomic_load(&session_active)) {
		reader_session(fd, gen);
		reader_left(gen);
		return NULL;
	}
	for (;;) {
		struct pollfd pfd[2] = { { .fd = fd, .events = POLLIN },
					 { .fd = rfd, .events = POLLPRI } };
		int alive, mounts;

		if (atomic_load(&inst_gen) != gen) /* I2 */
			break;
		if (poll(pfd, rfd >= 0 ? 2 : 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[0].revents & POLLNVAL)
			break;
		mounts = rfd >= 0 && (pfd[1].revents & (POLLPRI | POLLERR | POLLNVAL));
		if (rfd >= 0 && (pfd[1].revents & POLLNVAL))
			rfd = -1; /* closed behind our back (a raw close): no doorbell */
		read_lock();
		if (mounts)
			mounts_check_locked(fd, gen, NULL);
		alive = read_all_locked(fd, gen);
		pthread_mutex_unlock(&read_mutex);
		if (!alive)
			break;
		reader_pause();
	}
	reader_left(gen);
	return NULL;
}

/* Let a burst gather before the next read: the first event after
 * a quiet spell is applied at once, those that follow within
 * READER_BATCH_NS together (and the kernel merges a repeated
 * identical event, such as IN_MODIFY from one writer, while it
 * is unread).  Without this, another process appending to a file
 * in a watched directory (/tmp) woke the thread once per write:
 * 2053 wakeups during one compile here.  A give-up finds the
 * reader here at worst: it leaves READER_BATCH_NS later (I2). */
static void reader_pause(void)
{
	struct timespec ts = { 0, READER_BATCH_NS };

	/* Meanwhile a lookup applies queued events itself, at most
	 * once per DRAIN_QUANTUM_NS (timed_drain_due()): the pause
	 * saves the wakeups of a process that is not looking
	 * anything up, never the freshness of one that is. */
	atomic_store_explicit(&reader_batching, 1, memory_order_relaxed);
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
	atomic_store_explicit(&reader_batching, 0, memory_order_relaxed);
}

int inval_fd_floor = INT_MAX; /* inval.h */

/* Lower inval_fd_floor to fd: before fd is published (inval_hides_fd). */
static void note_floor(int fd)
{
	int cur = __atomic_load_n(&inval_fd_floor, __ATOMIC_RELAXED);

	while (fd < cur && !__atomic_compare_exchange_n(&inval_fd_floor, &cur, fd, 0, __ATOMIC_SEQ_CST,
							__ATOMIC_RELAXED))
		;
}

/* Move fd to the highest free number below min(RLIMIT_NOFILE, FD_TOP), at
 * most FD_SLOTS down ("The program's fds"); where none is free it stays
 * where the kernel put it.  Raw syscalls: the shim's fcntl() and close()
 * hide our numbers. */
static int move_high(int fd)
{
	struct rlimit rl;
	int top = FD_TOP, saved = errno;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < (rlim_t)FD_TOP)
		top = (int)rl.rlim_cur;
	/* F_DUPFD gives the lowest free number >= slot: EMFILE while the
	 * numbers from slot up to the limit are all taken. */
	for (int k = 0; k <= FD_SLOTS; k++) {
		/* Those FD_SLOTS taken (leaked numbers of given-up instances,
		 * lose_now, or the program's): the lowest free one above the
		 * table's middle, as far from the program's as it gets. */
		int slot = k < FD_SLOTS ? top - 1 - k : top / 2, hi;

		if (slot <= fd)
			break;
		hi = (int)syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, slot);
		if (hi >= 0) {
			syscall(SYS_close, fd);
			fd = hi;
			break;
		}
		if (errno != EMFILE)
			break;
	}
	note_floor(fd);
	errno = saved;
	return fd;
}

/* /proc/self/mountinfo for poll() ("Mounts"), moved high like the inotify
 * fd; -1 if there is no /proc. */
static int open_mountinfo(void)
{
	int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);

	return fd < 0 ? -1 : move_high(fd);
}

/* Close the instance's mountinfo fds but `keep` (the host closes that one). */
static void close_mount_fds(int keep)
{
	int r = atomic_exchange(&mnt_rfd, -1), s = atomic_exchange(&mnt_sfd, -1);

	if (r >= 0 && r != keep)
		syscall(SYS_close, r);
	if (s >= 0 && s != keep)
		syscall(SYS_close, s);
}

/* The budget: RCUWALK_WATCH_BUDGET, or by default a quarter of the user's
 * max_user_watches (doc/coherence.md).  Under fd_mutex. */
static unsigned long watch_budget_locked(void)
{
	long cfg;

	if (budget_known)
		return budget;
	cfg = atomic_load(&budget_cfg);
	if (cfg >= 0) {
		budget = (unsigned long)cfg;
	} else {
		char buf[32];
		long n = 0;
		int f = (int)syscall(SYS_openat, AT_FDCWD, "/proc/sys/fs/inotify/max_user_watches",
				     O_RDONLY | O_CLOEXEC);

		if (f >= 0) {
			n = syscall(SYS_read, f, buf, sizeof(buf) - 1);
			syscall(SYS_close, f);
		}
		buf[n > 0 ? n : 0] = '\0';
		budget = strtoul(buf, NULL, 10) / 4; /* 0 (no /proc): the kernel's limit only */
	}
	budget_known = 1;
	return budget;
}

/*
 * Make sure this process never drops the last reference to the inotify file
 * itself, so that neither exit() nor execve() waits for the kernel to tear
 * our marks down.
 *
 * Why: releasing an inotify instance that has (or had) marks runs
 * fsnotify_destroy_group(), which waits for the global mark reaper, i.e. for
 * an SRCU grace period.  In a multi-threaded process (ours: reader, call_rcu)
 * that wait measured 12 ms median, 24 ms max per exit here (1.2 ms without
 * watches), and the parent's wait() waits for it: `gcc --version` took 25 ms
 * instead of 2 ms, a cc1 compile 110 ms instead of 72 ms, and make -j2 of
 * examples/demo.sh paid it for each of its ~127 processes.
 *
 * How: a minimal io_uring instance (no rings mapped, no requests ever
 * submitted) gets the inotify file in its fixed-file table, which takes one
 * reference.  When the process exits or execs, its own fds close first
 * (cheap: not the last reference), then the ring's fd; the ring is torn down
 * by io_uring's exit work in a kernel worker, and the inotify file's final
 * release (the SRCU wait) runs there, after our process has been reaped.
 * The same holds for inval_stop()'s close.  Coherence is unaffected: the
 * marks only ever feed this instance's queue, which nobody reads once we
 * have let go of it (bounded by max_queued_events meanwhile).
 *
 * The ring fd is close-on-exec (io_uring_setup sets it), sits above FD_FLOOR
 * like the inotify fd, and is guarded like it (inval_owns_fd): if the host
 * closes or dup2()s over it we forget the number and the ring goes early
 * (the process then pays the wait at exit); when we give the instance up we
 * close the ring ourselves, so that given-up instances do not pile up; a
 * fork() child closes its copy.  If io_uring is unavailable
 * (kernel.io_uring_disabled, seccomp, old kernel) this does nothing and the
 * process pays the wait at exit, as before.  Costs ~20 us per instance.
 */
static void defer_final_release(int fd)
{
	struct io_uring_params p;
	int r;

	memset(&p, 0, sizeof(p));
	r = (int)syscall(SYS_io_uring_setup, 1, &p);
	if (r < 0)
		return;
	r = move_high(r);
	if (syscall(SYS_io_uring_register, r, IORING_REGISTER_FILES, &fd, 1) != 0) {
		syscall(SYS_close, r); /* raw: the shim's close() would look at it */
		return;
	}
	atomic_store(&ring_fd, r);
}

/* Let go of ring r: take the inotify file out of its table first, so that
 * the instance goes with the last close of its fd, synchronously, as without
 * the ring.  A given-up instance must not linger in a kernel worker's queue:
 * each counts against fs.inotify.max_user_instances (128 by default), and a
 * program that loses our fd again and again (test_safety's signal handler,
 * hundreds of times a second) ran out of them under load. */
static void drop_ring(int r)
{
	syscall(SYS_io_uring_register, r, IORING_UNREGISTER_FILES, NULL, 0);
	syscall(SYS_close, r);
}

/* Close the current instance's ring.  Under fd_mutex. */
static void close_ring_locked(void)
{
	int r = atomic_exchange(&ring_fd, -1);

	if (r >= 0)
		drop_ring(r);
}

static long coarse_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* Start the reader of instance (fd, gen).  Under fd_mutex, with every signal
 * blocked (the reader inherits the mask: signals are the program's).  0 or
 * -EAGAIN. */
static int start_reader_locked(int fd, unsigned int gen)
{
	pthread_attr_t attr;
	pthread_t th;
	int r;

	/* The reader's doorbell ("Mounts"): opened with the thread, not with
	 * the instance, so that the many processes that never start one pay
	 * for one mountinfo fd only (~2.3 us each to open and close). */
	if (atomic_load(&mnt_rfd) < 0)
		atomic_store(&mnt_rfd, open_mountinfo());
	/* A give-up of gen waits for this reader from now on (I3). */
	atomic_store(&reader_exit_gen, gen - 1);
	atomic_store(&reader_gen, gen);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, READER_STACK);
	r = pthread_create(&th, &attr, reader_main, (void *)(((uintptr_t)gen << 32) | (uint32_t)fd));
	pthread_attr_destroy(&attr);
	if (r != 0) {
		atomic_store(&reader_exit_gen, gen); /* nobody to wait for */
		return -EAGAIN;
	}
	atomic_store(&reader_running, 1);
	return 0;
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
	if (reader_delay_ns && coarse_now_ns() - first_use_ns < reader_delay_ns) {
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

void inval_note_change(void)
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

	if (tick - first_use_ns < reader_delay_ns)
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

void inval_sync(void)
{
	unsigned long want = atomic_load_explicit(&change_gen, memory_order_acquire);
	unsigned int gen;
	long tick = 0;
	int fd, broken = 0;

	if (__builtin_expect(want == atomic_load_explicit(&drained_gen, memory_order_acquire), 1) &&
	    !timed_drain_due(&tick))
		return;
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

void inval_fork_prepare(void)
{
	/* Not read_lock(): this thread may hold urcu-bp's registry mutex
	 * already (the fork hooks run first); it registers nothing here. */
	pthread_mutex_lock(&read_mutex);
}

void inval_fork_parent(void)
{
	pthread_mutex_unlock(&read_mutex);
}

void inval_fork_child(void)
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
	sentinel_wd = -1;
	atomic_store(&recovering, 0); /* the child's cache starts empty */
	atomic_fetch_add(&inst_gen, 1);
	atomic_store(&reader_exit_gen, atomic_load(&inst_gen));
	atomic_store(&reader_running, 0);
	atomic_store(&reader_batching, 0);
	atomic_store(&last_drain_tick, 0);
	first_use_ns = 0; /* a fork child's lifetime is its own */
	atomic_store(&drained_gen, atomic_load(&change_gen));
	atomic_store(&st_watches, 0);
}

int inval_active(void)
{
	unsigned int g = atomic_load(&reader_gen);

	return atomic_load(&inotify_fd) >= 0 && (int)(atomic_load(&reader_exit_gen) - g) < 0;
}

/* ---------------------------------------------------------------------- */
/* Giving the fd up (see "The fd is ours only until the host closes it"). */

int inval_owns_fd(int fd)
{
	return fd >= 0 && (fd == atomic_load_explicit(&inotify_fd, memory_order_relaxed) ||
			   fd == atomic_load_explicit(&closing_fd, memory_order_relaxed) ||
			   fd == atomic_load_explicit(&mnt_rfd, memory_order_relaxed) ||
			   fd == atomic_load_explicit(&mnt_sfd, memory_order_relaxed) ||
			   fd == atomic_load_explicit(&ring_fd, memory_order_relaxed) ||
			   fd == atomic_load_explicit(&ring_stale, memory_order_relaxed));
}

int inval_own_fds(int *out, int max)
{
	atomic_int *const nums[] = { &inotify_fd, &closing_fd, &mnt_rfd, &mnt_sfd, &ring_fd, &ring_stale };
	int n = 0;

	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		int fd = atomic_load_explicit(nums[i], memory_order_relaxed), j;

		if (fd < 0 || n == max)
			continue;
		for (j = 0; j < n && out[j] != fd; j++)
			;
		if (j < n)
			continue; /* closing_fd is also inotify_fd for a while */
		for (j = n++; j > 0 && out[j - 1] > fd; j--)
			out[j] = out[j - 1];
		out[j] = fd;
	}
	return n;
}

int inval_fd_below(int lo, int r)
{
	int fds[8], n = inval_own_fds(fds, 8);

	for (int i = 0; i < n; i++)
		if (fds[i] >= lo && fds[i] < r)
			return 1;
	return 0;
}

int inval_give_fds_back(int nowait)
{
	int fds[8], n = inval_own_fds(fds, 8), r;

	if (n == 0 || nowait || (int)getpid() != atomic_load(&owner_pid))
		return 0;
	inval_disable(); /* the instance: given up (I3), its numbers closed */
	fd_lock();
	r = atomic_exchange(&ring_stale, -1); /* a lost instance's ring (lose_now) */
	if (r >= 0)
		drop_ring(r);
	r = atomic_exchange(&ring_fd, -1);
	if (r >= 0)
		drop_ring(r);
	fd_unlock();
	return 1;
}

/* The instance's numbers first: giving it up also closes its other numbers
 * and the ring (then free in the range); a ring number alone is just
 * forgotten (inval_fd_closing). */
int inval_fd_in_range(unsigned int lo, unsigned int hi)
{
	atomic_int *const nums[] = { &inotify_fd, &closing_fd, &mnt_rfd, &mnt_sfd, &ring_fd, &ring_stale };

	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		int fd = atomic_load_explicit(nums[i], memory_order_relaxed);

		if (fd >= 0 && (unsigned int)fd >= lo && (unsigned int)fd <= hi)
			return fd;
	}
	return -1;
}

/* Queue an event on the instance so that a reader in poll() returns.  Under
 * fd_mutex, while `fd` is still ours. */
static void wake_reader_locked(int fd)
{
	int wd = sentinel_wd;

	if (atomic_load(&session_active)) {
		session_wake(); /* the reader sleeps on the ring (reader_session) */
		return;
	}
	sentinel_wd = -1;
	if (wd >= 0 && inotify_rm_watch(fd, wd) == 0)
		return;
	/* No sentinel (no /dev/null here): any watch will do; IN_MASK_ADD
	 * leaves an existing watch of "/" as it is until it is removed. */
	wd = inotify_add_watch(fd, "/", IN_DELETE_SELF | IN_MASK_ADD);
	if (wd >= 0)
		inotify_rm_watch(fd, wd);
	/* else the wait below times out: see inval_fd_closing() */
}

/* Wait (bounded) until the reader of generation `gen` has left. */
static void wait_reader_left(unsigned int gen)
{
	struct timespec now, end, step = { 0, 50 * 1000 * 1000 };

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += 2;
	for (;;) {
		unsigned int cur = atomic_load(&reader_exit_gen);

		if ((int)(cur - gen) >= 0)
			return;
		syscall(SYS_futex, &reader_exit_gen, FUTEX_WAIT_PRIVATE, cur, &step, NULL, 0);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec))
			return;
	}
}

/* The part of I3 that needs no lock: from here on nobody starts a syscall
 * on `fd` (I1, I2), and lookups pass through (I4).  `recovering` first: a
 * drain that finds inotify_fd changed then sees it set. */
static void lose_now(int fd)
{
	int expected = atomic_load(&inotify_fd);

	atomic_store(&recovering, 1);
	if (expected < 0 || (fd != expected && fd != atomic_load(&mnt_rfd) && fd != atomic_load(&mnt_sfd)))
		return;
	if (atomic_compare_exchange_strong(&inotify_fd, &expected, -1)) {
		int r = atomic_exchange(&ring_fd, -1);

		/* No fd_mutex here: the ring is closed by inval_recover().  A
		 * second such loss before that leaves one ring open until exit. */
		expected = -1;
		if (r >= 0)
			(void)atomic_compare_exchange_strong(&ring_stale, &expected, r);
		atomic_fetch_add(&inst_gen, 1);
		atomic_store(&st_watches, 0);
		/* Nothing may wait here: the instance's other numbers are
		 * leaked, not closed (the reader may still poll them). */
		atomic_store(&mnt_rfd, -1);
		atomic_store(&mnt_sfd, -1);
	}
}

/* I3.  Under lose_mutex.  `fd` is the instance's inotify fd, `host_fd` the
 * number the host is closing (fd, a mountinfo fd, or -1: inval_stop).
 * `nowait`: this thread may hold read_mutex, fd_mutex or the dcache mutex (a
 * signal handler interrupted it inside the shim). */
static void give_up_locked(int fd, int host_fd, int nowait)
{
	unsigned int gen;
	int r, s;

	if (nowait && __atomic_load_n(&fd_mutex_mine, __ATOMIC_RELAXED)) {
		/* Interrupted between fd_lock() and fd_unlock(): the one syscall
		 * in progress there is all that can still name the number (and
		 * acts on a closed number, unless the handler also opens a file
		 * that gets it).  The reader is not woken: it leaves at its next
		 * event, having seen inst_gen change. */
		lose_now(host_fd);
		return;
	}
	if (nowait) {
		/* fd_mutex_mine was 0: the holder, if any, is another thread,
		 * inside one syscall. */
		__atomic_store_n(&fd_mutex_mine, 1, __ATOMIC_RELAXED);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		while (pthread_mutex_trylock(&fd_mutex) != 0)
			sched_yield();
	} else {
		fd_lock();
	}
	if (atomic_load(&inotify_fd) != fd) {
		fd_unlock();
		return;
	}
	gen = atomic_load(&inst_gen);
	atomic_store(&closing_fd, host_fd >= 0 ? host_fd : fd);
	atomic_store(&recovering, 1);
	r = atomic_load(&mnt_rfd);
	s = atomic_load(&mnt_sfd);
	atomic_store(&inotify_fd, -1);
	atomic_fetch_add(&inst_gen, 1);
	wake_reader_locked(fd);
	close_ring_locked();
	fd_unlock();
	if (!nowait && atomic_load(&reader_gen) == gen)
		wait_reader_left(gen);
	atomic_store(&st_watches, 0);
	/* The instance's numbers that the host is not closing: ours to close
	 * once nobody names them (I1-I3); leaked when nothing may wait. */
	atomic_store(&mnt_rfd, -1);
	atomic_store(&mnt_sfd, -1);
	if (!nowait) {
		if (r >= 0 && r != host_fd)
			syscall(SYS_close, r);
		if (s >= 0 && s != host_fd)
			syscall(SYS_close, s);
		if (host_fd >= 0 && host_fd != fd)
			syscall(SYS_close, fd);
	}
}

/* The host closes (or dup2()s over) a ring number of ours: forget it, so
 * that we never close that number ourselves.  Locking as in give_up_locked. */
static void forget_ring(int fd, int nowait)
{
	int expected = fd;
	int locked = 0;

	if (!nowait) {
		fd_lock();
		locked = 1;
	} else if (!__atomic_load_n(&fd_mutex_mine, __ATOMIC_RELAXED)) {
		__atomic_store_n(&fd_mutex_mine, 1, __ATOMIC_RELAXED);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		while (pthread_mutex_trylock(&fd_mutex) != 0)
			sched_yield();
		locked = 1;
	} /* else interrupted inside fd_lock(): a close of ours in progress
	   * there is not stopped (it would close the number first). */
	(void)atomic_compare_exchange_strong(&ring_fd, &expected, -1);
	expected = fd;
	(void)atomic_compare_exchange_strong(&ring_stale, &expected, -1);
	if (locked)
		fd_unlock();
}

void inval_fd_closing(int fd, int nowait)
{
	if ((int)getpid() != atomic_load(&owner_pid))
		return; /* a vfork()/clone() child: its fd table is its own */
	if (fd >= 0 && (fd == atomic_load(&ring_fd) || fd == atomic_load(&ring_stale))) {
		forget_ring(fd, nowait);
		return;
	}
	if (nowait) {
		/* Another thread giving the number up may be waiting for a
		 * reader that waits for a lock this thread holds (or this thread
		 * was interrupted in here): mark it lost without waiting. */
		if (pthread_mutex_trylock(&lose_mutex) != 0) {
			lose_now(fd);
			return;
		}
	} else {
		pthread_mutex_lock(&lose_mutex);
	}
	{
		int inst = atomic_load(&inotify_fd);

		if (inst >= 0 && (fd == inst || fd == atomic_load(&mnt_rfd) ||
				  fd == atomic_load(&mnt_sfd)))
			give_up_locked(inst, fd, nowait);
	}
	atomic_store(&closing_fd, -1);
	pthread_mutex_unlock(&lose_mutex);
}

int inval_recovering(void)
{
	return atomic_load_explicit(&recovering, memory_order_acquire);
}

void inval_recover(void)
{
	pthread_mutex_lock(&recover_mutex);
	if (atomic_load(&recovering)) {
		int r;

		dcache_reset(); /* unwatch_dir is a no-op: inotify_fd is -1 */
		fd_lock();
		r = atomic_exchange(&ring_stale, -1);
		if (r >= 0)
			drop_ring(r); /* a lost instance's ring (lose_now) */
		fd_unlock();
		atomic_store(&recovering, 0);
	}
	pthread_mutex_unlock(&recover_mutex);
}

/* Wait (bounded) until the kernel no longer counts thread `tid` among ours. */
static void wait_task_gone(int tid)
{
	char path[64];
	struct stat st;
	struct timespec step = { 0, 100 * 1000 };

	snprintf(path, sizeof(path), "/proc/self/task/%d", tid);
	for (int i = 0; i < 20000; i++) {
		if (syscall(SYS_newfstatat, AT_FDCWD, path, &st, 0) != 0)
			return; /* gone (or no /proc: nothing to wait with) */
		nanosleep(&step, NULL);
	}
}

void inval_stop(void)
{
	int fd, tid = 0;

	pthread_mutex_lock(&lose_mutex);
	fd = atomic_load(&inotify_fd);
	if (fd >= 0 && (int)getpid() == atomic_load(&owner_pid)) {
		unsigned int gen = atomic_load(&inst_gen);

		give_up_locked(fd, -1, 0);
		if ((int)(atomic_load(&reader_exit_gen) - gen) >= 0)
			tid = atomic_load(&reader_tid);
		/* Ours, and nobody names it any more (I1-I3). */
		syscall(SYS_close, fd);
	}
	atomic_store(&closing_fd, -1);
	pthread_mutex_unlock(&lose_mutex);
	if (tid > 0)
		wait_task_gone(tid);
}

/*
 * The session's watcher is dead or stuck: give its instance up as the host's
 * close would (I3: the reader has left when this returns), close our copy,
 * and never attach again: `recovering` is set, so the caller empties the
 * cache (inval_recover) before its next answer, and the next watch creates
 * a per-process instance.  Any application thread holding none of our locks.
 */
static void session_abandon(int fd)
{
	session_mark_dead();
	pthread_mutex_lock(&lose_mutex);
	if (atomic_load(&inotify_fd) == fd && (int)getpid() == atomic_load(&owner_pid)) {
		give_up_locked(fd, -1, 0);
		syscall(SYS_close, fd); /* ours, and nobody names it any more */
	}
	atomic_store(&closing_fd, -1);
	pthread_mutex_unlock(&lose_mutex);
}

void inval_disable(void)
{
	atomic_store(&disabled, 1);
	inval_stop();
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
}
