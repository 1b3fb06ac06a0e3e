/* SPDX-License-Identifier: MIT */
/*
 * inval_reader.c - the reader thread, and a session's sync points and
 * liveness: who applies the events queued on the instance while no lookup
 * asks (reader_main: poll() on our own instance; reader_session: the ring's
 * futex on a session's copy), and how a sync point knows that the watcher
 * has published what it must (session_sync_locked).  Split from inval.c,
 * whose rules hold here (read_mutex at its top; the fd guard I1-I4 at the
 * top of inval_fds.c); what the files share is declared in inval_int.h.
 *
 * What this file adds:
 *  - A reader thread belongs to one instance generation: started under
 *    fd_mutex with every signal blocked (start_reader_locked), it leaves
 *    once inst_gen moves (I2) and says so in reader_exit_gen, which a
 *    give-up of its generation waits for (I3).
 *  - It applies events only under read_mutex, taken with read_lock(), as
 *    every drain does; the liveness state (idle_*, stall_*) is under
 *    read_mutex too.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "inval.h"
#include "inval_int.h"
#include "session.h"

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

/* The reader of instance generation g stores g in reader_gen when started
 * and raises reader_exit_gen to g (a futex word) when it has left for good. */
atomic_uint reader_gen, reader_exit_gen;
atomic_int reader_tid;

_Static_assert(sizeof(uintptr_t) >= 8, "reader_main packs (gen, fd) into its argument");

static long mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/*
 * A session's sync point (doc/session.md, "Causality"): make sure every
 * event queued on the instance before this call is applied.  FIONREAD on our
 * copy first, then the ring's state word (ring.h): an empty queue at t1 and
 * no read cycle in progress at t2 > t1 mean that every event queued before
 * t1 was taken by a cycle that has published it.  Otherwise wait for a
 * cycle that starts after t1 (it reads every byte queued when it starts,
 * so every event queued before t1, and publishes before it ends: state
 * reaches the even value after the next odd one), or for that test to pass
 * later.
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

int session_sync_locked(int fd, unsigned int gen, int wait)
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
		apply_ring_locked();
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
	apply_ring_locked();
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

/* Start the reader of instance (fd, gen).  Under fd_mutex, with every signal
 * blocked (the reader inherits the mask: signals are the program's).  0 or
 * -EAGAIN. */
int start_reader_locked(int fd, unsigned int gen)
{
	pthread_attr_t attr;
	pthread_t th;
	int r;

	/* The reader's doorbell (inval.c, "Mounts"): opened with the thread, not with
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
