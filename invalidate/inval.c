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
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "inval.h"

#define WATCH_MASK (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | \
		    IN_MODIFY | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF | \
		    IN_ONLYDIR | IN_DONT_FOLLOW)
#define FD_FLOOR 512 /* keep our fd out of the range programs loop over */

static pthread_mutex_t read_mutex = PTHREAD_MUTEX_INITIALIZER;
static atomic_int inotify_fd = -1;
/* change_gen counts noted changes; drained_gen is the change_gen value that
 * the last completed drain covered (written under read_mutex). */
static atomic_ulong change_gen, drained_gen;
static pthread_t reader;
static int reader_started;
static atomic_ulong st_watches, st_events, st_watch_failures, st_overflows;

/* Apply one event to the cache.  Called with read_mutex held. */
static void apply_event(const struct inotify_event *ev)
{
	atomic_fetch_add_explicit(&st_events, 1, memory_order_relaxed);
	if (ev->mask & IN_Q_OVERFLOW) {
		atomic_fetch_add_explicit(&st_overflows, 1, memory_order_relaxed);
		dcache_invalidate_all(); /* events were lost: anything may be stale */
		return;
	}
	if (ev->len && ev->name[0]) {
		if (ev->mask & (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO))
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

/* Read until the queue is empty.  Called with read_mutex held. */
static void read_all_locked(int fd)
{
	char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));

	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return; /* EAGAIN: empty; EBADF: closed under us (fork child) */
		}
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			apply_event(ev);
			p += sizeof(*ev) + ev->len;
		}
	}
}

static void *reader_main(void *arg)
{
	int fd = (int)(long)arg;

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		if (poll(&pfd, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd.revents & POLLNVAL)
			break;
		pthread_mutex_lock(&read_mutex);
		read_all_locked(fd);
		pthread_mutex_unlock(&read_mutex);
	}
	return NULL;
}

/* Create the instance and start the reader.  Under the dcache mutex. */
static int start_locked(void)
{
	int fd = atomic_load(&inotify_fd);
	sigset_t all, old;
	pthread_attr_t attr;

	if (fd >= 0)
		return fd;
	fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fd < FD_FLOOR) {
		int hi = fcntl(fd, F_DUPFD_CLOEXEC, FD_FLOOR);

		if (hi >= 0) {
			close(fd);
			fd = hi;
		}
	}
	/* The reader blocks every signal: signals are the program's. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	if (pthread_create(&reader, &attr, reader_main, (void *)(long)fd) != 0) {
		pthread_attr_destroy(&attr);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		close(fd);
		return -EAGAIN;
	}
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	reader_started = 1;
	atomic_store(&inotify_fd, fd);
	return fd;
}

/* ops->watch_dir: under the dcache mutex. */
static int watch_dir(const char *path)
{
	int fd = start_locked(), wd;

	if (fd < 0) {
		atomic_fetch_add_explicit(&st_watch_failures, 1, memory_order_relaxed);
		return fd;
	}
	wd = inotify_add_watch(fd, path, WATCH_MASK);
	if (wd < 0) {
		atomic_fetch_add_explicit(&st_watch_failures, 1, memory_order_relaxed);
		return -errno;
	}
	atomic_fetch_add_explicit(&st_watches, 1, memory_order_relaxed);
	return wd;
}

/* ops->unwatch_dir: under the dcache mutex. */
static void unwatch_dir(int wd)
{
	int fd = atomic_load(&inotify_fd);

	if (fd >= 0 && inotify_rm_watch(fd, wd) == 0)
		atomic_fetch_sub_explicit(&st_watches, 1, memory_order_relaxed);
}

void inval_fill_ops(struct dcache_ops *ops)
{
	ops->watch_dir = watch_dir;
	ops->unwatch_dir = unwatch_dir;
}

void inval_drain(void)
{
	int fd = atomic_load(&inotify_fd);

	if (fd < 0)
		return;
	pthread_mutex_lock(&read_mutex);
	read_all_locked(fd);
	pthread_mutex_unlock(&read_mutex);
}

void inval_note_change(void)
{
	if (atomic_load_explicit(&inotify_fd, memory_order_relaxed) >= 0)
		atomic_fetch_add(&change_gen, 1);
}

void inval_sync(void)
{
	unsigned long want = atomic_load_explicit(&change_gen, memory_order_acquire);
	int fd;

	if (__builtin_expect(want == atomic_load_explicit(&drained_gen, memory_order_acquire), 1))
		return;
	fd = atomic_load(&inotify_fd);
	if (fd < 0)
		return;
	/* Another thread may be draining already: its drain covers our change
	 * only if it sampled change_gen after we noted it, hence the re-check
	 * under the mutex rather than a "pending" flag cleared by the drainer. */
	pthread_mutex_lock(&read_mutex);
	if ((long)(atomic_load(&drained_gen) - want) < 0) {
		unsigned long now = atomic_load(&change_gen);

		read_all_locked(fd);
		atomic_store(&drained_gen, now);
	}
	pthread_mutex_unlock(&read_mutex);
}

void inval_fork_prepare(void)
{
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
	 * the parent's events.  Close our copy; the parent's watches stay. */
	pthread_mutex_init(&read_mutex, NULL);
	if (fd >= 0)
		close(fd);
	atomic_store(&inotify_fd, -1);
	atomic_store(&drained_gen, atomic_load(&change_gen));
	reader_started = 0;
	atomic_store(&st_watches, 0);
}

int inval_active(void)
{
	return atomic_load(&inotify_fd) >= 0 && reader_started;
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
}
