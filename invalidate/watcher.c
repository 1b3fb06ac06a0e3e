/*
 * watcher.c - a session's watcher (doc/session.md, phase 1): the one process
 * that owns the shared inotify instance and reads it.
 *
 * The launcher (rcuwalk --session) calls inval_watcher_spawn() before it
 * execs the command.  A double fork makes the watcher nobody's child (the
 * command never reaps it, a shell's `wait` never waits for it).  The watcher
 * creates a private directory (0700), the instance, the ring file (ring.h)
 * and a listening unix socket, says the directory's name through a pipe,
 * and then runs two threads:
 *  - the main thread loops on poll():
 *    - the inotify fd: one read cycle (state odd, read() until EAGAIN,
 *      append records, publish tail, state even, FUTEX_WAKE), then a pause
 *      of up to RING_BATCH_NS that a process at a sync point cuts short
 *      (ring.h, poke);
 *    - a pidfd of the launcher's pid (the command, which the launcher
 *      becomes or waits for): once it has exited and a last cycle found
 *      nothing, the watcher removes the ring, the socket and the directory
 *      and exits.  Processes still attached then find the watcher gone and
 *      fall back (session.c).  No --keep yet: the session ends with the
 *      command.
 *  - the answering thread blocks in accept() on the socket and sends each
 *    caller the instance's fd (SCM_RIGHTS).  It is a thread of its own so
 *    that an attach never waits for the main thread's batching pause: in a
 *    build events arrive all the time, the main thread sat in that pause
 *    most of the time, and each process's attach (recvmsg) waited 1.5 ms
 *    on average (strace of `gcc -c` in a session of zlib's configure).
 *    It touches nothing but the listening socket and the instance's fd
 *    number, both fixed before it starts and never closed while the
 *    process lives (exit_group ends it).
 * It never writes to the command's stdout/stderr (0-2 are /dev/null, every
 * other inherited fd is closed: a pipeline reading the command's output is
 * not kept open by it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "inval.h"
#include "ring.h"

struct watcher {
	char dir[PATH_MAX];
	int ifd, lfd, pidfd;
	struct ring_hdr *ring;
};

/* A private directory under $XDG_RUNTIME_DIR if that is an absolute
 * directory of ours, else under /tmp.  0 or -errno. */
static int make_dir(char *dir, size_t size)
{
	const char *x = getenv("XDG_RUNTIME_DIR");
	struct stat st;

	if (x && x[0] == '/' && strlen(x) + 32 < size && stat(x, &st) == 0 &&
	    S_ISDIR(st.st_mode) && st.st_uid == geteuid()) {
		snprintf(dir, size, "%s/rcuwalk-session.XXXXXX", x);
		if (mkdtemp(dir) && chmod(dir, 0700) == 0)
			return 0;
	}
	snprintf(dir, size, "/tmp/rcuwalk-session.XXXXXX");
	if (!mkdtemp(dir))
		return -errno;
	return chmod(dir, 0700) == 0 ? 0 : -errno;
}

static int make_ring(struct watcher *w)
{
	char path[PATH_MAX + 8];
	struct stat ns, root;
	int fd;

	snprintf(path, sizeof(path), "%s/" RING_FILE, w->dir);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)RING_SIZE) != 0 || stat("/proc/self/ns/mnt", &ns) != 0 ||
	    stat("/", &root) != 0) {
		close(fd);
		return -errno;
	}
	w->ring = mmap(NULL, RING_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (w->ring == MAP_FAILED)
		return -errno;
	w->ring->version = RING_VERSION;
	w->ring->nrec = RING_RECORDS;
	w->ring->uid = (uint32_t)geteuid();
	w->ring->pid = (uint32_t)getpid();
	w->ring->mntns_dev = ns.st_dev;
	w->ring->mntns_ino = ns.st_ino;
	w->ring->root_dev = root.st_dev;
	w->ring->root_ino = root.st_ino;
	__atomic_store_n(&w->ring->magic, RING_MAGIC, __ATOMIC_RELEASE); /* last */
	return 0;
}

static int make_socket(struct watcher *w)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };

	int n = snprintf(a.sun_path, sizeof(a.sun_path), "%s/" RING_SOCKET, w->dir);

	if (n < 0 || (size_t)n >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	w->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0); /* blocking: answer_main */
	if (w->lfd < 0)
		return -errno;
	if (bind(w->lfd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(w->lfd, 128) != 0)
		return -errno;
	return 0;
}

/* One read cycle (ring.h): read until EAGAIN, publish, wake the waiters. */
static void read_cycle(struct watcher *w)
{
	char buf[65536] __attribute__((aligned(__alignof__(struct inotify_event))));
	struct ring_hdr *r = w->ring;
	uint64_t tail = r->tail;

	__atomic_fetch_add(&r->state, 1, __ATOMIC_SEQ_CST); /* busy */
	for (;;) {
		ssize_t n = read(w->ifd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;
			struct ring_rec *rec = &r->recs[tail % RING_RECORDS];
			uint32_t len = ev->len ? (uint32_t)strnlen(ev->name, ev->len) : 0;

			if (len > NAME_MAX)
				len = NAME_MAX;
			rec->wd = ev->wd;
			rec->mask = ev->mask;
			rec->cookie = ev->cookie;
			rec->len = len;
			memcpy(rec->name, ev->name, len);
			rec->name[len] = '\0';
			tail++;
			/* Publish each record: readers that lag a whole ring
			 * behind see the overwrite (tail) before its bytes. */
			__atomic_store_n(&r->tail, tail, __ATOMIC_RELEASE);
			/* The tail before the next record's bytes, which may
			 * overwrite the oldest record. */
			RING_FENCE(__ATOMIC_RELEASE);
			p += sizeof(*ev) + ev->len;
		}
	}
	__atomic_fetch_add(&r->state, 1, __ATOMIC_SEQ_CST); /* published, not busy */
	syscall(SYS_futex, &r->state, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Answer one connection: the instance's fd, then close.  Answering thread. */
static void answer(const struct watcher *w)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	char byte = 'R';
	struct iovec iov = { &byte, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	int s = accept4(w->lfd, NULL, NULL, SOCK_CLOEXEC);

	if (s < 0) {
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
			struct timespec ts = { 0, 1000000 }; /* the caller times out */

			nanosleep(&ts, NULL);
		}
		return;
	}
	memset(cbuf, 0, sizeof(cbuf));
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &w->ifd, sizeof(int));
	(void)sendmsg(s, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
	close(s);
}

static void cleanup(struct watcher *w)
{
	char path[PATH_MAX + 8];

	snprintf(path, sizeof(path), "%s/" RING_SOCKET, w->dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/" RING_FILE, w->dir);
	unlink(path);
	rmdir(w->dir);
}

static void *answer_main(void *arg)
{
	const struct watcher *w = arg;

	for (;;)
		answer(w);
	return NULL;
}

/* Start answer_main(), every signal blocked in it (they are the main
 * thread's).  0 or an errno. */
static int start_answering(struct watcher *w)
{
	pthread_attr_t a;
	pthread_t th;
	sigset_t all, old;
	int r;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&a, 64 * 1024);
	r = pthread_create(&th, &a, answer_main, w);
	pthread_attr_destroy(&a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

static int watcher_loop(struct watcher *w)
{
	int cmd_done = 0;

	for (;;) {
		struct pollfd p[2] = { { .fd = w->ifd, .events = POLLIN },
				       { .fd = w->pidfd, .events = POLLIN } };

		if (poll(p, cmd_done ? 1 : 2, cmd_done ? 0 : -1) < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		if (p[0].revents & POLLIN) {
			read_cycle(w);
			if (!cmd_done) { /* a burst gathers, unless poked (ring.h) */
				struct timespec ts = { 0, RING_BATCH_NS };

				syscall(SYS_futex, &w->ring->poke, FUTEX_WAIT, 0, &ts, NULL, 0);
			}
		}
		if (cmd_done && !(p[0].revents & POLLIN))
			return 0; /* the command is gone and nothing is pending */
		if (!cmd_done && (p[1].revents & (POLLIN | POLLHUP | POLLERR)))
			cmd_done = 1;
	}
}

/*
 * A short scheduler slice (Linux >= 6.12's EEVDF custom slice; older
 * kernels ignore it), as inval.c's reader_short_slice() explains: a process
 * at a sync point waits for the watcher's next read cycle, and on busy CPUs
 * a watcher with the default slice is scheduled only when the running task's
 * slice ends.
 */
static void short_slice(void)
{
	struct {
		uint32_t size, policy;
		uint64_t flags;
		int32_t nice;
		uint32_t priority;
		uint64_t runtime, deadline, period;
	} a;

	memset(&a, 0, sizeof(a));
	if (syscall(SYS_sched_getattr, 0, &a, sizeof(a), 0) != 0 || a.policy != 0 /* SCHED_OTHER */)
		return;
	a.size = sizeof(a);
	a.flags &= 0x01; /* SCHED_FLAG_RESET_ON_FORK, as it was */
	a.runtime = 100000; /* the kernel's minimum */
	syscall(SYS_sched_setattr, 0, &a, 0);
}

/* In the watcher: set everything up, say the directory's name on `out`, loop. */
static int watcher_main(pid_t cmd, int out)
{
	struct watcher w = { .ifd = -1, .lfd = -1, .pidfd = -1 };
	int devnull, r;

	setsid(); /* the terminal's Ctrl-C is for the command */
	short_slice();
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	out = fcntl(out, F_DUPFD_CLOEXEC, 3); /* not 0-2, which become /dev/null */
	devnull = open("/dev/null", O_RDWR);
	if (out < 0 || devnull < 0)
		return 1;
	dup2(devnull, 0);
	dup2(devnull, 1);
	dup2(devnull, 2);
	if (devnull > 2)
		close(devnull);
	if (out != 3) {
		if (dup2(out, 3) < 0)
			return 1;
		out = 3;
	}
	syscall(SYS_close_range, 4u, ~0u, 0u); /* nothing else of the command's */
	w.pidfd = (int)syscall(SYS_pidfd_open, cmd, 0);
	if (w.pidfd < 0 || make_dir(w.dir, sizeof(w.dir)) != 0)
		return 1;
	w.ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	r = w.ifd < 0 ? -errno : make_ring(&w);
	if (r == 0)
		r = make_socket(&w);
	if (r != 0) {
		cleanup(&w);
		return 1;
	}
	/* The answering thread before the name goes out: a session that
	 * cannot answer is never announced. */
	if (start_answering(&w) != 0) {
		cleanup(&w);
		return 1;
	}
	if (write(out, w.dir, strlen(w.dir)) != (ssize_t)strlen(w.dir)) {
		cleanup(&w);
		return 1;
	}
	close(out);
	r = watcher_loop(&w);
	__atomic_store_n(&w.ring->exited, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &w.ring->state, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	cleanup(&w);
	return r;
}

int inval_watcher_spawn(char *dir, size_t size)
{
	pid_t cmd = getpid(), mid;
	int p[2], status;
	ssize_t n, got = 0;

	if (size < 2 || pipe2(p, O_CLOEXEC) != 0)
		return -errno;
	mid = fork();
	if (mid == 0) {
		pid_t w = fork();

		if (w == 0) {
			close(p[0]);
			_exit(watcher_main(cmd, p[1]));
		}
		_exit(w < 0);
	}
	close(p[1]);
	if (mid < 0) {
		close(p[0]);
		return -EAGAIN;
	}
	while (waitpid(mid, &status, 0) < 0 && errno == EINTR)
		;
	while ((n = read(p[0], dir + got, size - 1 - (size_t)got)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		got += n;
		if ((size_t)got >= size - 1)
			break;
	}
	close(p[0]);
	dir[got] = '\0';
	return got > 0 && dir[0] == '/' ? 0 : -EAGAIN;
}
