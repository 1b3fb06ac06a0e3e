/* SPDX-License-Identifier: MIT */
/*
 * inval_fds.c - the instance's numbers in the program's fd table: where they
 * sit, how they are guarded while the host may take them at any moment, and
 * the give-up and recovery that follow when it does.  Split from inval.c (the
 * instance, its watches and drains; read_mutex and the module's other rules
 * at its top); what the files share is declared in inval_int.h.
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
 *  inval.c, "Mounts") are guarded the same way: closing any of them gives the
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
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/io_uring.h>

#include "inval.h"
#include "inval_int.h"
#include "session.h"

/* Our numbers sit just below min(RLIMIT_NOFILE, FD_TOP), within FD_SLOTS of
 * it (move_high): see "The program's fds" above. */
#define FD_TOP 1024
#define FD_SLOTS 8

pthread_mutex_t fd_mutex = PTHREAD_MUTEX_INITIALIZER;   /* I1: leaf */
pthread_mutex_t lose_mutex = PTHREAD_MUTEX_INITIALIZER; /* one give-up at a time */
pthread_mutex_t recover_mutex = PTHREAD_MUTEX_INITIALIZER;
__thread int fd_mutex_mine __attribute__((tls_model("initial-exec")));
atomic_int closing_fd = -1; /* the number being given up, until its close may proceed */
atomic_int recovering;      /* I4 */
atomic_int disabled;        /* inval_disable(): never create an instance again */
atomic_int owner_pid;       /* the process whose fd table holds inotify_fd */
int sentinel_wd = -1;       /* under fd_mutex: a watch to remove to wake the reader */
/* The instance's mountinfo fds (inval.c, "Mounts"); -1 when none. */
atomic_int mnt_rfd = -1, mnt_sfd = -1;
/* The io_uring that holds the instance's last reference (defer_final_release):
 * ring_fd for the current instance, ring_stale for one given up where it could
 * not be closed (lose_now); -1 if none.  Both are numbers of ours under the
 * same rules as inotify_fd (the fd guard): set, claimed and closed under
 * fd_mutex; forgotten when the host closes them itself. */
atomic_int ring_fd = -1, ring_stale = -1;

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
int move_high(int fd)
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

/* /proc/self/mountinfo for poll() (inval.c, "Mounts"), moved high like the
 * inotify fd; -1 if there is no /proc. */
int open_mountinfo(void)
{
	int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);

	return fd < 0 ? -1 : move_high(fd);
}

/* Close the instance's mountinfo fds but `keep` (the host closes that one). */
DCACHE_FORK_TEXT void close_mount_fds(int keep)
{
	int r = atomic_exchange(&mnt_rfd, -1), s = atomic_exchange(&mnt_sfd, -1);

	if (r >= 0 && r != keep)
		syscall(SYS_close, r);
	if (s >= 0 && s != keep)
		syscall(SYS_close, s);
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
void defer_final_release(int fd)
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
void close_ring_locked(void)
{
	int r = atomic_exchange(&ring_fd, -1);

	if (r >= 0)
		drop_ring(r);
}

/* ---------------------------------------------------------------------- */
/* Giving the fd up (see "The fd is ours only until the host closes it"). */

/* DCACHE_FORK_TEXT: dup2() and dup3() ask it in a shell's child. */
DCACHE_FORK_TEXT int inval_owns_fd(int fd)
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
void session_abandon(int fd)
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
