/* SPDX-License-Identifier: MIT */
/*
 * watcher.c - a session's watcher (doc/session.md, phase 1): the one process
 * that owns the shared inotify instance and reads it.
 *
 * The launcher (rcuwalk --session) calls inval_watcher_spawn() before it
 * execs the command (watcher_spawn.c).  It makes what can refuse a session
 * (the ring's and the arena's memfds, the private directory, locked) and
 * starts the watcher as a new image of /proc/self/exe through a middle
 * process that exits, so that the watcher is nobody's child (the command
 * never reaps it, a shell's `wait` never waits for it); it does not wait
 * for the watcher's set-up.
 * The watcher makes the instance, fills the ring's and the arena's headers,
 * makes a listening unix socket, publishes the ring (its magic, stored last:
 * session.c waits for it in a process that came first), and then runs two
 * threads:
 *  - the main thread loops on poll():
 *    - the inotify fd: one read cycle (state odd, read() what was queued
 *      at its start, append records, publish tail, state even,
 *      FUTEX_WAKE), then a pause of up to RING_BATCH_NS that a process at
 *      a sync point cuts short (ring.h, poke);
 *    - its /proc/self/mountinfo: a mount table change bumps the ring's
 *      `mounts` count (ring.h);
 *    - a pidfd of the launcher's pid (the command, which the launcher
 *      becomes or waits for), and with --keep the hold socket and the
 *      holders' pidfds ("Keeping a session", below): once the command and
 *      every holder have exited, keep seconds have passed (0 without
 *      --keep) and a last cycle found nothing, the watcher removes its link,
 *      the ring, the sockets and the directory and exits.  Processes still
 *      attached then find the watcher gone and fall back (session.c).
 *  - the death notice (ring.h, alive): the kernel marks it and wakes the
 *    readers when the watcher dies, however it dies;
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
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dcache.h"
#include "inval.h"
#include "ring.h"
#include "watch_limit.h"
#include "watcher_int.h"

/*
 * A watcher killed (SIGKILL, the OOM killer) cannot remove its directory
 * (two sockets; its memory went with it: memfds).  So each new watcher, in
 * a thread of its own once its command runs, removes those of dead ones in
 * the user's base directory: session.*, ours, 0700, no symlink, that nobody
 * holds locked (a watcher flock()s its directory for its life; the kernel
 * drops the lock however it dies).  Only the user's own directory is read:
 * another user's names (200,000 rcuwalk-session.* in /dev/shm delayed each
 * session's first event by 0.4 s when the reaper read /dev/shm before its
 * loop) are never looked at.
 */
static void reap_dead_sessions(const char *own)
{
	char base[PATH_MAX];
	const char *slash = strrchr(own, '/');
	struct dirent *e;
	DIR *d;
	int bfd;

	if (!slash || (size_t)(slash - own) >= sizeof(base))
		return;
	memcpy(base, own, (size_t)(slash - own));
	base[slash - own] = '\0';
	bfd = open(base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (bfd < 0 || !(d = fdopendir(bfd))) {
		if (bfd >= 0)
			close(bfd);
		return;
	}
	while ((e = readdir(d))) {
		static const char *const files[] = { RING_SOCKET, RING_HOLD, RING_LEARN };
		struct stat st;
		int dfd;

		if (strncmp(e->d_name, "session.", 8) != 0 || !strcmp(e->d_name, slash + 1))
			continue;
		dfd = openat(bfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (dfd < 0)
			continue;
		if (fstat(dfd, &st) == 0 && st.st_uid == geteuid() &&
		    (st.st_mode & 07777) == 0700 && flock(dfd, LOCK_EX | LOCK_NB) == 0) {
			for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
				unlinkat(dfd, files[i], 0);
			unlinkat(bfd, e->d_name, AT_REMOVEDIR);
		}
		close(dfd);
	}
	closedir(d);
}

/* Set once the reaper thread has scanned: a watcher that leaves waits
 * for it (up to REAP_WAIT_MS), so that a session shorter than the scan
 * (`rcuwalk -- true`) still removes what dead ones left; it was cut off
 * by the watcher's exit_group, and ctest -j2 once found a killed watcher's
 * directory still there 2 s after the next session. */
#define REAP_WAIT_MS 1000
static atomic_int reap_done;

static void *reap_main(void *arg)
{
	reap_dead_sessions(arg);
	atomic_store(&reap_done, 1);
	return NULL;
}

/* Allocate the ring up to `end` bytes (a chunk at least).  0 or -1. */
static int ring_room(struct watcher *w, uint64_t end)
{
	uint64_t to = end > w->ring_alloc + RING_CHUNK ? end : w->ring_alloc + RING_CHUNK;
	int r;

	if (to > RING_SIZE)
		to = RING_SIZE;
	do
		r = fallocate(w->rfd, 0, (off_t)w->ring_alloc, (off_t)(to - w->ring_alloc));
	while (r != 0 && errno == EINTR);
	if (r != 0)
		return -1;
	w->ring_alloc = to;
	return 0;
}

/* In the watcher: map the ring and fill its header but the magic (which
 * publish_ring() stores last).  0 or -errno. */
static int make_ring(struct watcher *w)
{
	struct stat ns, root, userns;

	if (stat("/proc/self/ns/mnt", &ns) != 0 || stat("/", &root) != 0 ||
	    stat("/proc/self/ns/user", &userns) != 0)
		return -errno;
	w->ring = mmap(NULL, RING_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, w->rfd, 0);
	if (w->ring == MAP_FAILED) {
		w->ring = NULL;
		return -errno;
	}
	w->ring->version = RING_VERSION;
	w->ring->nrec = RING_RECORDS;
	w->ring->uid = (uint32_t)geteuid();
	w->ring->pid = (uint32_t)getpid();
	w->ring->ifd = -1; /* until the death notice is armed: ring.h */
	w->ring->mntns_dev = ns.st_dev;
	w->ring->mntns_ino = ns.st_ino;
	w->ring->root_dev = root.st_dev;
	w->ring->root_ino = root.st_ino;
	w->ring->userns_dev = userns.st_dev;
	w->ring->userns_ino = userns.st_ino;
	return 0;
}

/* The directory's identity in the ring, then the magic (last): the ring
 * is complete, and a process that found it without (session.c, map_ring:
 * it attached while the watcher was starting) is woken. */
static void publish_ring(struct watcher *w)
{
	struct stat st;

	if (fstat(w->dfd, &st) == 0) {
		w->ring->dir_dev = st.st_dev;
		w->ring->dir_ino = st.st_ino;
	}
	__atomic_store_n(&w->ring->magic, RING_MAGIC, __ATOMIC_RELEASE);
	syscall(SYS_futex, &w->ring->magic, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* In the watcher: map and format the shared entries, before the ring's
 * magic (no process maps them before: session.c takes the arena only from a
 * published ring's watcher).  If that fails the memfd stays unformatted, and
 * processes refuse it (dcache_arena_check): a session without shared
 * entries. */
static void make_arena(struct watcher *w)
{
	void *m;

	if (w->afd < 0)
		return;
	m = mmap(NULL, DCACHE_ARENA_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, w->afd, 0);
	if (m == MAP_FAILED)
		return;
	if (dcache_arena_format(m, DCACHE_ARENA_SIZE) != 0) {
		munmap(m, DCACHE_ARENA_SIZE);
		return;
	}
	dcache_arena_set_limit(m, ARENA_FIRST);
	w->arena = m;
}

/* How many watch numbers may vouch for files' shared attributes
 * (dcache_arena.c, A9): a quarter of the user's watch limit here
 * (watch_limit.h: the user namespace's own where lower), which
 * directory watches and the user's other programs share, at most
 * DCACHE_ARENA_FILE_WDS; 0 (none) where it cannot be read, or with
 * RCUWALK_SHARED_FILES=0 in the environment (for comparisons). */
static uint32_t file_watch_numbers(void)
{
	const char *e = getenv("RCUWALK_SHARED_FILES");
	unsigned long n;

	if (e && !strcmp(e, "0"))
		return 0;
	n = inval_watch_limit(); /* 0: unknown, so none */
	return n / 4 < DCACHE_ARENA_FILE_WDS ? (uint32_t)(n / 4) : DCACHE_ARENA_FILE_WDS;
}

/* The arena's memory, a chunk ahead of the processes' takes (dcache_arena.c,
 * A6): woken by a take that leaves less than DCACHE_ARENA_MARGIN, or is
 * refused.  Once it cannot grow (its whole size allocated, or a chunk that
 * cannot be had: memory short), a take refused with less than the margin
 * left makes it reset the arena (A2: a new epoch, the entry space given
 * back whole); takes are refused, and the kernel answers, only until then.
 * Nothing faults.  A thread of its own, every signal blocked: the main
 * thread's loop never waits for an allocation. */
static void *grow_main(void *arg)
{
	struct watcher *w = arg;
	int stuck = 0; /* a chunk could not be had: grow no more */

	for (;;) {
		uint32_t seen = dcache_arena_wants(w->arena);
		uint64_t lim = dcache_arena_limit(w->arena), to = lim + ARENA_CHUNK;
		int r;

		if (lim >= DCACHE_ARENA_SIZE || stuck) {
			if (dcache_arena_wants_reset(w->arena))
				dcache_arena_reset(w->arena);
			else
				dcache_arena_wait_wants(w->arena, seen, 1000000000L);
			continue;
		}
		/* The margin, or a larger take that was refused (the shared
		 * path table's, dcache_spath.c) whole. */
		if (dcache_arena_room(w->arena) >= dcache_arena_want_room(w->arena)) {
			dcache_arena_wait_wants(w->arena, seen, 1000000000L);
			continue;
		}
		if (to > DCACHE_ARENA_SIZE)
			to = DCACHE_ARENA_SIZE;
		do
			r = fallocate(w->afd, 0, (off_t)lim, (off_t)(to - lim));
		while (r != 0 && errno == EINTR);
		if (r != 0)
			stuck = 1;
		else
			dcache_arena_set_limit(w->arena, to);
	}
	return NULL; /* not reached */
}

/* Whether event `ev` may change its watch's listing (dcache_arena.c, gens):
 * a name created, removed, moved in or out; anything about the directory
 * itself (no name: attributes, deleted, moved, unmounted, watch gone). */
static int changes_listing(const struct inotify_event *ev)
{
	if (!ev->len)
		return 1;
	return (ev->mask & (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)) != 0;
}

/* The death notice (ring.h, alive): our tid in the word, the word's entry
 * as the only one of this thread's robust list.  The main thread uses no
 * robust mutex of glibc's, whose list this replaces.  0 or -errno. */
static struct robust_list_head robust_head;

static int arm_death_notice(struct watcher *w)
{
	struct ring_hdr *r = w->ring;

	__atomic_store_n(&r->alive, (uint32_t)syscall(SYS_gettid) | FUTEX_WAITERS, __ATOMIC_RELEASE);
	r->robust_next = (uint64_t)(uintptr_t)&robust_head.list; /* the list's end */
	robust_head.list.next = (struct robust_list *)(void *)&r->robust_next;
	robust_head.futex_offset = (long)((char *)&r->alive - (char *)&r->robust_next);
	robust_head.list_op_pending = NULL;
	return syscall(SYS_set_robust_list, &robust_head, sizeof(robust_head)) == 0 ? 0 : -errno;
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

/*
 * Keeping a session (--keep=SECONDS, doc/session.md)
 * =================================================
 * A watcher started with keep > 0 also listens on RING_HOLD in its
 * directory and publishes a link to that directory, named after the mount
 * namespace, root and user namespace it serves, in a private directory of
 * the user's (inval_keep_link_path()).  A later launcher of the same user,
 * namespaces and root follows the link, checks the directory as an attach
 * does, connects to RING_HOLD and sends how long it wants the session kept;
 * the watcher takes the caller's pid (SO_PEERCRED) as a holder (a pidfd)
 * and answers 'K'.
 * The launcher exports RCUWALK_SESSION only after that 'K': a session that
 * answered it lives until that launcher's process (the command it becomes or
 * waits for) has exited, and then for `keep` more seconds unless another
 * launcher holds it.  Leaving: the watcher first removes the link (if it is
 * still its own), then closes RING_HOLD (a launcher that connected just
 * then gets no 'K' and starts a session of its own), and only then ends.
 * Nothing outlives the last holder by more than `keep` (plus one read
 * cycle).
 */

/* The private directory of the links: <XDG_RUNTIME_DIR or /tmp>/rcuwalk-keep.<euid>,
 * 0700, ours, not a symlink (made if absent); the link's name in it for
 * this mount namespace and root.  0 or -errno. */
int inval_keep_link_path(char *out, size_t size)
{
	const char *x = getenv("XDG_RUNTIME_DIR");
	struct stat st, ns, root, userns;
	char base[PATH_MAX];
	int n;

	if (!(x && x[0] == '/' && strlen(x) + 64 < sizeof(base) && stat(x, &st) == 0 &&
	      S_ISDIR(st.st_mode) && st.st_uid == geteuid()))
		x = "/tmp";
	snprintf(base, sizeof(base), "%s/rcuwalk-keep.%u", x, (unsigned)geteuid());
	if (mkdir(base, 0700) != 0 && errno != EEXIST)
		return -errno;
	if (lstat(base, &st) != 0)
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 07777) != 0700)
		return -EPERM;
	if (stat("/proc/self/ns/mnt", &ns) != 0 || stat("/", &root) != 0 ||
	    stat("/proc/self/ns/user", &userns) != 0)
		return -errno;
	/* The user namespace too: its processes could not attach (session.c). */
	n = snprintf(out, size, "%s/%llx-%llx-%llx-%llx", base, (unsigned long long)ns.st_ino,
		     (unsigned long long)root.st_dev, (unsigned long long)root.st_ino,
		     (unsigned long long)userns.st_ino);
	return n > 0 && (size_t)n < size ? 0 : -ENAMETOOLONG;
}

static int make_hold(struct watcher *w)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char tmp[PATH_MAX + 16];
	int n = snprintf(a.sun_path, sizeof(a.sun_path), "%s/" RING_HOLD, w->dir), r;

	if (n < 0 || (size_t)n >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	w->hfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (w->hfd < 0)
		return -errno;
	if (bind(w->hfd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(w->hfd, 16) != 0)
		return -errno;
	/* Published last, atomically (a link made aside, renamed over). */
	if ((r = inval_keep_link_path(w->link, sizeof(w->link))) != 0) {
		w->link[0] = '\0';
		return r;
	}
	snprintf(tmp, sizeof(tmp), "%s.%d", w->link, (int)getpid());
	unlink(tmp);
	if (symlink(w->dir, tmp) != 0 || rename(tmp, w->link) != 0) {
		r = -errno;
		unlink(tmp);
		w->link[0] = '\0';
		return r;
	}
	return 0;
}

/* Remove our link (not one another watcher published since) and stop
 * taking holds. */
static void unpublish(struct watcher *w)
{
	char t[PATH_MAX];
	ssize_t n;

	if (w->link[0]) {
		n = readlink(w->link, t, sizeof(t) - 1);
		if (n > 0 && (size_t)n == strlen(w->dir) && !memcmp(t, w->dir, (size_t)n))
			unlink(w->link);
		w->link[0] = '\0';
	}
	if (w->hfd >= 0) {
		close(w->hfd);
		w->hfd = -1;
	}
}

/* A launcher asks to hold the session: its pid becomes a holder, and the
 * session is kept at least as long as it asks.  Main thread: the request
 * is read with a 100 ms timeout (a launcher sends it right after connect;
 * one of the user's that sends nothing delays event reading that long). */
static void take_hold(struct watcher *w)
{
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	uint32_t want = 0;
	struct timeval tv = { 0, 100000 };
	int s = accept4(w->hfd, NULL, NULL, SOCK_CLOEXEC), pfd;

	if (s < 0)
		return;
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0 && cr.uid == geteuid() &&
	    recv(s, &want, sizeof(want), 0) == (ssize_t)sizeof(want) &&
	    w->nholders < MAX_HOLDERS &&
	    (pfd = (int)syscall(SYS_pidfd_open, cr.pid, 0)) >= 0) {
		w->holders[w->nholders++] = pfd;
		if ((long long)want * 1000000000LL > w->keep_ns)
			w->keep_ns = (long long)want * 1000000000LL;
		char k[64];
		int n = snprintf(k, sizeof(k), "K%u:%d:%d", (unsigned)getpid(), w->rfd, w->afd);

		(void)send(s, k, (size_t)n, MSG_NOSIGNAL);
	}
	close(s);
}

static void cleanup(struct watcher *w);

/* The ring cannot grow (no memory): events would be lost unrecorded.  The
 * watcher removes its names and exits: the kernel sets its death notice
 * (ring.h, alive) and every process gives the session up before its next
 * answer, as after a SIGKILL mid-cycle (doc/session.md, the kill loop). */
static void ring_lost(struct watcher *w)
{
	cleanup(w);
	_exit(1);
}

/*
 * One read cycle (ring.h): read what was queued when it began, publish, wake
 * the waiters.  `due`, FIONREAD asked after state went odd, bounds it: the
 * cycle reads until it has read that many bytes (at least one read(), which
 * takes more if more came) or finds the queue empty.  The instance is a FIFO,
 * so every event queued before the cycle began is among those bytes, which
 * is all a sync point needs (ring.h, state).  Reading until EAGAIN instead
 * let an event source that keeps pace with the reads hold the cycle open,
 * and every sync point of the session with it, for as long as it lasted:
 * `strace -f -o LOG` with LOG in a watched directory writes a line for each
 * read(), which queues the next event (seen: a configure's compiler waiting
 * 10 minutes).  Events that come meanwhile are the next cycle's.
 */
static void read_cycle(struct watcher *w)
{
	char buf[65536] __attribute__((aligned(__alignof__(struct inotify_event))));
	struct ring_hdr *r = w->ring;
	uint64_t tail = r->tail, bytes = 0;
	int due = 0;

	__atomic_fetch_add(&r->state, 1, __ATOMIC_SEQ_CST); /* busy */
	if (ioctl(w->ifd, FIONREAD, &due) != 0 || due < 0)
		due = INT_MAX; /* unknown: until EAGAIN, as before */
	for (;;) {
		ssize_t n = read(w->ifd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		bytes += (uint64_t)n;
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;
			struct ring_rec *rec = &r->recs[tail % RING_RECORDS];
			uint32_t len = ev->len ? (uint32_t)strnlen(ev->name, ev->len) : 0;
			uint64_t end = (uint64_t)((char *)(rec + 1) - (char *)r);

			/* The record's page allocated before it is written;
			 * if memory cannot be had, the watcher dies (ring_lost). */
			if (end > w->ring_alloc && ring_room(w, end) != 0)
				ring_lost(w);

			if (len > NAME_MAX)
				len = NAME_MAX;
			/* The listing's generation before the record that tells
			 * of its change (dcache_arena.c, A5). */
			if (w->arena && (ev->mask & IN_Q_OVERFLOW))
				dcache_arena_invalidate(w->arena, -1);
			else if (w->arena && changes_listing(ev))
				dcache_arena_invalidate(w->arena, ev->wd);
			/* The path table's generations likewise (S5). */
			if (w->arena)
				dcache_spath_event(w->arena, ev->wd, ev->mask, ev->name, len);
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
		if (bytes >= (uint64_t)due)
			break; /* what was queued at the start is read */
	}
	/* After the bumps and records of those bytes, before state is even. */
	__atomic_store_n(&r->consumed, r->consumed + bytes, __ATOMIC_RELEASE);
	__atomic_fetch_add(&r->state, 1, __ATOMIC_SEQ_CST); /* published, not busy */
	syscall(SYS_futex, &r->state, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Answer one connection: the instance's fd, the ring's memfd and the
 * arena's (if any), in one SCM_RIGHTS message, then close.  The caller
 * takes what it lacks and closes the rest.  Answering thread. */
static void answer(const struct watcher *w)
{
	int fds[3] = { w->ifd, w->rfd, w->afd }, nfd = w->afd >= 0 ? 3 : 2;
	char cbuf[CMSG_SPACE(sizeof(fds))];
	char byte = 'R';
	struct iovec iov = { &byte, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfd) };
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
	c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfd);
	memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfd);
	if (sendmsg(s, &m, MSG_NOSIGNAL | MSG_DONTWAIT) == 1)
		__atomic_fetch_add(&w->ring->answers, 1, __ATOMIC_RELAXED);
	close(s);
}

/* Remove the session's names (its memory goes with the last mapping). */
static void cleanup(struct watcher *w)
{
	char path[PATH_MAX + 16];

	unpublish(w);
	if (!w->dir[0])
		return;
	snprintf(path, sizeof(path), "%s/" RING_SOCKET, w->dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/" RING_HOLD, w->dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/" RING_LEARN, w->dir);
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

/* Start fn(w) in a detached thread, every signal blocked in it (they are
 * the main thread's).  0 or an errno. */
static int start_thread(void *(*fn)(void *), void *w)
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
	r = pthread_create(&th, &a, fn, w);
	pthread_attr_destroy(&a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

static long long mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* SIGTERM (a user's `kill`, a shutdown) ends the watcher as the command's
 * end does: processes told (exited, then the futex), files removed.  Only
 * the main thread takes it: the answering thread blocks every signal. */
static volatile sig_atomic_t terminated;
/* The main thread's mask inside ppoll: its own, SIGTERM taken. */
static sigset_t poll_mask;

static void on_sigterm(int sig)
{
	(void)sig;
	terminated = 1;
}

/*
 * Until the command (the launcher's pid) and every holder have exited, and
 * then for keep_ns more if no holder came meanwhile: read cycles on events,
 * holds on RING_HOLD.  Then cycles until one finds nothing (at most
 * LEAVE_CYCLES), and out.
 */
#define LEAVE_CYCLES 64

static int watcher_loop(struct watcher *w)
{
	int cmd_done = 0, leaving = 0;
	long long idle_since = 0;

	for (;;) {
		struct pollfd p[4 + MAX_HOLDERS]; /* inotify, mountinfo, command, hold, holders */
		int n = 0, ip, mp = -1, cp = -1, hp = -1, hold0, timeout = -1;

		ip = n;
		p[n++] = (struct pollfd){ .fd = w->ifd, .events = POLLIN };
		if (w->mfd >= 0) {
			mp = n;
			p[n++] = (struct pollfd){ .fd = w->mfd, .events = POLLPRI };
		}
		if (!cmd_done) {
			cp = n;
			p[n++] = (struct pollfd){ .fd = w->pidfd, .events = POLLIN };
		}
		if (w->hfd >= 0) {
			hp = n;
			p[n++] = (struct pollfd){ .fd = w->hfd, .events = POLLIN };
		}
		hold0 = n;
		for (int i = 0; i < w->nholders; i++)
			p[n++] = (struct pollfd){ .fd = w->holders[i], .events = POLLIN };
		if (leaving) {
			timeout = 0;
		} else if (cmd_done && !w->nholders) {
			long long left = w->keep_ns - (mono_ns() - idle_since);

			timeout = left > 0 ? (int)((left + 999999) / 1000000) : 0;
		}
		if (terminated)
			return 0;
		/* SIGTERM is blocked but inside ppoll (watcher_main): one
		 * that comes after the check above interrupts the wait. */
		{
			struct timespec ts = { timeout / 1000, (long)(timeout % 1000) * 1000000L };

			if (ppoll(p, (nfds_t)n, timeout < 0 ? NULL : &ts, &poll_mask) < 0) {
				if (errno == EINTR)
					continue;
				return 1;
			}
		}
		if (mp >= 0 && (p[mp].revents & (POLLPRI | POLLERR))) {
			/* The mount table changed (the kernel's poll event is
			 * one-shot per change): say so, and wake the sleepers. */
			uint32_t m = __atomic_add_fetch(&w->ring->mounts, 1, __ATOMIC_SEQ_CST);

			/* Then every shared entry (dcache_arena.c): a mount
			 * changes what a path lists or leads to with no inotify
			 * event.  After the count: a process that may publish has
			 * seen it; and a process that saw the count uses no entry
			 * until the bump is done (inval_shared.c, listing_ticket). */
			if (w->arena)
				dcache_arena_mounts_changed(w->arena, m);
			syscall(SYS_futex, &w->ring->state, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
		}
		if (mp >= 0 && (p[mp].revents & POLLNVAL))
			w->mfd = -1;
		if (p[ip].revents & POLLIN) {
			read_cycle(w);
			if (!leaving) { /* a burst gathers, unless poked (ring.h) */
				struct timespec ts = { 0, RING_BATCH_NS };

				syscall(SYS_futex, &w->ring->poke, FUTEX_WAIT, 0, &ts, NULL, 0);
			}
		}
		/* Nobody holds it, and nothing is pending: out.  Or events
		 * still come after LEAVE_CYCLES cycles (a tracer writing into a
		 * watched directory for each of our system calls, read_cycle):
		 * out all the same, or we would never leave; a process still
		 * attached finds us gone and falls back (session.c). */
		if (leaving && (!(p[ip].revents & POLLIN) || ++leaving > LEAVE_CYCLES))
			return 0;
		if (leaving)
			continue;
		if (cp >= 0 && (p[cp].revents & (POLLIN | POLLHUP | POLLERR))) {
			cmd_done = 1;
			idle_since = mono_ns();
		}
		for (int i = w->nholders - 1; i >= 0; i--)
			if (p[hold0 + i].revents & (POLLIN | POLLHUP | POLLERR)) {
				close(w->holders[i]);
				w->holders[i] = w->holders[--w->nholders];
				idle_since = mono_ns();
			}
		if (hp >= 0 && (p[hp].revents & POLLIN))
			take_hold(w);
		if (cmd_done && !w->nholders && mono_ns() - idle_since >= w->keep_ns) {
			unpublish(w); /* no new holder from here on */
			leaving = 1;
		}
	}
}

/*
 * A short scheduler slice (Linux >= 6.12's EEVDF custom slice; older
 * kernels ignore it), as inval_reader.c's reader_short_slice() explains: a process
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

/*
 * Name the watcher in ps(1) "rcuwalk-watcher <session dir>": its comm
 * (PR_SET_NAME, 15 bytes: exactly "rcuwalk-watcher") and its command line,
 * which would otherwise be the launcher's whole argv (`rcuwalk --keep=20
 * -- make -j2`), as if make still ran after it ended.  /proc/PID/cmdline
 * reads the memory between arg_start and arg_end (/proc/self/stat): the
 * name is written there in place, running on into the environment strings
 * when longer (env_start == arg_end; the kernel then reads up to the first
 * NUL because the byte at arg_end - 1 is not one), after each environment
 * string is copied to the heap so that getenv() still finds them.
 * PR_SET_MM_ARG_START would need CAP_SYS_RESOURCE.  Called once in the
 * watcher, before its answering thread starts; any failure leaves the old
 * name (cosmetic only).
 */
static void name_self(const char *dir)
{
	unsigned long long f[4];
	char stat[4096], title[PATH_MAX + 32], *p;
	size_t len, room;
	int fd, n;

	prctl(PR_SET_NAME, "rcuwalk-watcher", 0, 0, 0);
	fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = (int)read(fd, stat, sizeof(stat) - 1);
	close(fd);
	if (n <= 0)
		return;
	stat[n] = '\0';
	p = strrchr(stat, ')'); /* comm may hold spaces; field 3 follows */
	/* fields 48-51: arg_start, arg_end, env_start, env_end */
	for (int field = 2; p && field < 48; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, " %llu %llu %llu %llu", &f[0], &f[1], &f[2], &f[3]) != 4 ||
	    !f[0] || f[1] <= f[0])
		return;
	len = (size_t)snprintf(title, sizeof(title), "rcuwalk-watcher %s", dir);
	room = (size_t)(f[1] - f[0]);
	if (len + 1 > room && f[2] == f[1] && f[3] > f[2]) {
		for (char **e = environ; e && *e; e++) {
			char *c = strdup(*e);

			if (!c)
				return;
			*e = c;
		}
		room = (size_t)(f[3] - f[0]);
	}
	if (len + 1 > room)
		len = room - 1;
	p = (char *)(uintptr_t)f[0];
	memcpy(p, title, len);
	memset(p + len, 0, room - len);
	if (len + 1 < (size_t)(f[1] - f[0]))
		p[f[1] - f[0] - 1] = ' '; /* the kernel then stops at our NUL */
}

/* The watcher could not start after all: its names go, it exits.  Every
 * process that attached meanwhile finds it gone (session.c, map_ring's wait:
 * the pidfd; the socket path: the directory's lock) and keeps its own
 * instance. */
static int refuse(struct watcher *w)
{
	cleanup(w);
	return 1;
}

/* Close every fd from 3 up but the `n` of keep[] (each >= 3, or -1). */
static void close_others(const int *keep, int n)
{
	unsigned int from = 3;

	for (;;) {
		unsigned int next = ~0u;

		for (int i = 0; i < n; i++)
			if (keep[i] >= (int)from && (unsigned int)keep[i] < next)
				next = (unsigned int)keep[i];
		if (next > from)
			syscall(SYS_close_range, from, next == ~0u ? ~0u : next - 1, 0u);
		if (next == ~0u)
			return;
		from = next + 1;
	}
}

/* In the watcher's image, with what the launcher made (w: the directory,
 * locked; the ring's and the arena's memfds, at the numbers the command's
 * RCUWALK_SESSION_FDS names; a pidfd of the launcher, which is or waits for
 * the command): set the rest up, publish the ring, loop.  The command
 * already runs: a process that attaches before the ring's magic waits for
 * it (session.c, wait_published). */
static int watcher_main(struct watcher *w, unsigned int keep_s)
{
	int devnull, r;

	w->keep_ns = (long long)keep_s * 1000000000LL;
	setsid(); /* the terminal's Ctrl-C is for the command */
	short_slice();
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN); /* RLIMIT_FSIZE: fallocate fails with EFBIG */
	{
		struct sigaction sa = { .sa_handler = on_sigterm }; /* no SA_RESTART */
		sigset_t term;

		sigemptyset(&sa.sa_mask);
		sigaction(SIGTERM, &sa, NULL);
		sigemptyset(&term);
		sigaddset(&term, SIGTERM);
		pthread_sigmask(SIG_BLOCK, &term, &poll_mask); /* taken inside ppoll only */
		sigdelset(&poll_mask, SIGTERM);
	}
	devnull = open("/dev/null", O_RDWR);
	if (devnull < 0)
		return refuse(w);
	dup2(devnull, 0);
	dup2(devnull, 1);
	dup2(devnull, 2);
	{ /* nothing else of the command's */
		int keep[4] = { w->dfd, w->rfd, w->afd, w->pidfd };

		close_others(keep, 4);
	}
	w->mfd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC); /* -1: not said */
	w->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (w->ifd < 0)
		return refuse(w);
	if (make_ring(w) != 0)
		return refuse(w);
	make_arena(w); /* without it: phase 1 */
	/* The shared path table only when asked for: measured, it costs a
	 * first process more page faults than it saves the others
	 * (doc/session.md, "The shared path table", Measured). */
	if (w->arena && !(getenv("RCUWALK_SHARED_PATHS") && !strcmp(getenv("RCUWALK_SHARED_PATHS"), "1")))
		dcache_spath_off(w->arena); /* before any process maps it */
	if (w->arena)
		dcache_arena_set_file_wds(w->arena, file_watch_numbers());
	/* Without the death notice: the readers' slower checks, and no fd
	 * taken with pidfd_getfd (its pid could be another's by then). */
	if (arm_death_notice(w) == 0)
		__atomic_store_n(&w->ring->ifd, w->ifd, __ATOMIC_RELEASE);
	name_self(w->dir);
	if ((r = make_socket(w)) != 0)
		return refuse(w);
	/* The answering thread before the magic: a ring that is published
	 * always has its socket answered. */
	if (start_thread(answer_main, w) != 0)
		return refuse(w);
	publish_ring(w);
	/* --keep: findable by later launchers (not fatal: then it is not). */
	if (keep_s && make_hold(w) != 0)
		unpublish(w);
	/* Until it runs, takes past ARENA_FIRST are refused.  Without it the
	 * arena is full at ARENA_FIRST. */
	if (w->arena)
		(void)start_thread(grow_main, w);
	/* Beside the loop (a user's own leftovers never delay the first
	 * event either); the command runs meanwhile. */
	if (start_thread(reap_main, w->dir) != 0)
		reap_dead_sessions(w->dir), atomic_store(&reap_done, 1);
	r = watcher_loop(w);
	for (int ms = 0; ms < REAP_WAIT_MS && !atomic_load(&reap_done); ms++)
		usleep(1000);
	__atomic_store_n(&w->ring->exited, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &w->ring->state, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	cleanup(w);
	return r;
}

/* One decimal int of the watcher's argv, or -2 (not one). */
static long argv_num(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	return errno || end == s || *end || v < -1 || v > INT32_MAX ? -2 : v;
}

int inval_watcher_image(int argc, char **argv)
{
	static struct watcher w;
	long cfd, keep, dfd, rfd, afd;

	if (argc != 8 || strcmp(argv[1], INVAL_WATCHER_ARG) != 0)
		return 2;
	cfd = argv_num(argv[2]);
	keep = argv_num(argv[3]);
	dfd = argv_num(argv[4]);
	rfd = argv_num(argv[5]);
	afd = argv_num(argv[6]);
	if (cfd < 3 || keep < 0 || dfd < 3 || rfd < 3 || afd < -1 || (afd >= 0 && afd < 3) ||
	    strlen(argv[7]) >= sizeof(w.dir) || argv[7][0] != '/')
		return 2;
	w = (struct watcher){ .ifd = -1, .lfd = -1, .pidfd = (int)cfd, .hfd = -1, .mfd = -1,
			      .dfd = (int)dfd, .rfd = (int)rfd, .afd = (int)afd,
			      .ring_alloc = RING_FIRST };
	snprintf(w.dir, sizeof(w.dir), "%s", argv[7]);
	/* Close-on-exec again: nothing the watcher runs may inherit them. */
	fcntl(w.pidfd, F_SETFD, FD_CLOEXEC);
	fcntl(w.dfd, F_SETFD, FD_CLOEXEC);
	fcntl(w.rfd, F_SETFD, FD_CLOEXEC);
	if (w.afd >= 0)
		fcntl(w.afd, F_SETFD, FD_CLOEXEC);
	return watcher_main(&w, (unsigned int)keep);
}

