/* SPDX-License-Identifier: MIT */
/*
 * session.c - a process's side of a session (doc/session.md, phase 1):
 * attaching to the watcher, reading the event ring.
 *
 * State
 * =====
 *  session_dir   RCUWALK_SESSION, copied at start (a program may change
 *                its environment later); NULL = no session.  The copy lies
 *                on the start-up data page when it is short (every process
 *                of a session makes it: no page of its own), else in .lbss.
 *  env_pid, env_rfd, env_afd  RCUWALK_SESSION_FDS ("PID:RING:ARENA"): the
 *                watcher's pid and its memfds' numbers, for pidfd_getfd;
 *                env_pid 0 without it (then the socket).
 *  ring          the mapping, once per process image, never unmapped.
 *  read_pos      the next ring index to apply; written under inval.c's
 *                read_mutex (release: after the record's effects on the
 *                cache), read anywhere (session_listing_ticket).
 *  arena         the shared entries (cache/dcache_arena.c), mapped with the
 *                ring, read-write; NULL if the watcher made none or the
 *                checks failed (the session then works without them).
 *  dead          a watcher found gone or stuck: never attach again.
 * Everything here runs with raw syscalls: attach is called under the dcache
 * mutex (the shim's wrappers would re-enter the cache).
 *
 * Attach checks (a session is a rendezvous by name in a directory that
 * another user could try to imitate): the process's real and effective ids
 * agree (a setuid program or `sudo` does not attach); the directory is ours,
 * 0700, opened O_NOFOLLOW; the ring and the arena are memfds (never a file
 * of a directory: nothing can truncate them under us, and no page of them
 * can fault: watcher_spawn.c, make_memfd), sealed against shrinking and
 * growing, of the expected size (session_memfd_ok); the ring has our uid,
 * mount namespace, root, user namespace and the directory we opened in its
 * header.  The user namespace: the shared attributes hold owners as the
 * watcher's namespace shows them (another one shows 65534 for an unmapped
 * owner, or other ids), and the same euid may be another user there (a
 * namespace that maps the user to itself passes every other check); a
 * process of another namespace keeps its own cache (doc/coherence.md,
 * "Identity").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/futex.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>

#include "dcache.h"
#include "inval.h"
#include "ring.h"
#include "session.h"

static char dir_short[160] DCACHE_START_DATA;
static char dir_long[PATH_MAX] DCACHE_COLD_BSS; /* a page only for a long name */
static const char *session_dir DCACHE_START_DATA;
static unsigned int env_pid DCACHE_START_DATA;
static int env_rfd = -1, env_afd = -1; /* initialised: in .data already */
static int env_read DCACHE_START_DATA;
static struct ring_hdr *ring;
static uint64_t read_pos;
static void *arena;
static atomic_int dead;
_Atomic int session_active;

/* One number of RCUWALK_SESSION_FDS as sscanf's %u (sign 0) or %d (sign 1)
 * takes it: white space skipped, an optional sign, at least one decimal
 * digit; the value as strtoul() or strtol() gives it (saturated on
 * overflow), cast.  Advances *s past it; 0 if there is no number. */
DCACHE_START_TEXT static int scan_num(const char **s, int sign, long *out)
{
	const char *p = *s;
	unsigned long v = 0, lim;
	int neg = 0, over = 0;

	while (*p == ' ' || (*p >= '\t' && *p <= '\r'))
		p++;
	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	if (*p < '0' || *p > '9')
		return 0;
	/* strtol's range: LONG_MAX, or LONG_MIN's magnitude; strtoul's all. */
	lim = !sign ? ~0UL : neg ? (unsigned long)LONG_MAX + 1 : (unsigned long)LONG_MAX;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (lim - d) / 10)
			over = 1;
		else
			v = v * 10 + d;
	}
	*s = p;
	if (!sign)
		*out = (long)(over ? ~0UL : neg ? -v : v);
	else
		*out = over ? (neg ? LONG_MIN : LONG_MAX) : neg ? (long)-v : (long)v;
	return 1;
}

/* RCUWALK_SESSION_FDS "PID:RING:ARENA" as sscanf("%u:%d:%d") reads it
 * (session.h).  By hand: sscanf costs a process that looks nothing up
 * ~2,000 instructions and 5 page faults of libc's it would not touch
 * otherwise. */
DCACHE_START_TEXT int session_parse_fds(const char *s, unsigned int *pid, int *rfd, int *afd)
{
	long p, r, a;

	if (!(scan_num(&s, 0, &p) && *s++ == ':' && scan_num(&s, 1, &r) && *s++ == ':' &&
	      scan_num(&s, 1, &a)))
		return 0;
	*pid = (unsigned int)p;
	*rfd = (int)r;
	*afd = (int)a;
	return 1;
}

/* What RCUWALK_SESSION and RCUWALK_SESSION_FDS say (NULL: unset), once per
 * process image: from the shim's constructor (preload_init() reads the
 * environment in one pass and calls this first), or at the first
 * session_wanted() if nothing called it before (RCUWALK_DISABLE, the tests
 * that link invalidate/ alone).  No libc call: the copy is made by hand. */
DCACHE_START_TEXT void inval_session_env(const char *dir, const char *fds)
{
	size_t n = 0;

	if (env_read)
		return;
	if (dir && dir[0] == '/') {
		while (dir[n] && n < sizeof(dir_long) - 16)
			n++;
		if (n < sizeof(dir_long) - 16) { /* strlen(dir) < PATH_MAX - 16 */
			char *to = n < sizeof(dir_short) ? dir_short : dir_long;

			for (size_t i = 0; i <= n; i++)
				to[i] = dir[i];
			session_dir = to;
		}
	}
	/* All three or none: env_pid 0 means the other two are never read. */
	if (fds && !session_parse_fds(fds, &env_pid, &env_rfd, &env_afd))
		env_pid = 0;
	env_read = 1;
}

int session_wanted(void)
{
	if (!env_read) /* under fd_mutex (start_locked): no race */
		inval_session_env(getenv("RCUWALK_SESSION"), getenv("RCUWALK_SESSION_FDS"));
	return session_dir && !atomic_load_explicit(&dead, memory_order_relaxed);
}

const char *session_dir_path(void)
{
	return session_dir;
}

void session_mark_dead(void)
{
	atomic_store(&dead, 1);
}

static int raw_close(int fd)
{
	return (int)syscall(SYS_close, fd);
}

/* The state letter of process `pid` in /proc/PID/stat (R, S, T, Z...; the
 * field after the last ')': a comm may hold one), or 0 if it cannot be read
 * (*open_err: the open's errno, else 0). */
static char proc_state(unsigned int pid, int *open_err)
{
	char path[32], buf[512], *p;
	long f, n;

	*open_err = 0;
	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	f = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (f < 0) {
		*open_err = errno;
		return 0;
	}
	n = syscall(SYS_read, f, buf, sizeof(buf) - 1);
	raw_close((int)f);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

/* Is the watcher (env_pid) stopped (SIGSTOP: state T)?  A stopped
 * watcher's answering thread answers nobody.  Not a traced stop (t: a
 * tracer lets it go on).  0 when it cannot be told. */
static int watcher_stopped(void)
{
	int e;

	return env_pid && proc_state(env_pid, &e) == 'T';
}

/*
 * How long an attach waits for the answering thread: slices of
 * RECV_SLICE_US, RECV_WAIT_SLICES of them at most (1 s: a live watcher on a
 * loaded machine answers well within it), and no more once the watcher is
 * seen stopped.  Where pidfd_getfd is refused (Yama's ptrace_scope 1, as
 * Ubuntu has it: the watcher is nobody's child; a seccomp profile), every
 * process attaches over the socket, and with a stopped watcher each one
 * waited the whole second before it fell back to an instance of its own.
 */
#define RECV_SLICE_US 10000
#define RECV_WAIT_SLICES 100

/* Receive the watcher's answer over the session's socket: the instance's
 * fd, the ring's memfd and the arena's (if it has one) into fds[3] (-1 for
 * any not sent).  0 or -errno (-EPROTO: no answer within the wait above). */
static int receive_fds(int dfd, int fds[3])
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct timeval tv = { 0, RECV_SLICE_US }, stv = { 1, 0 };
	char cbuf[CMSG_SPACE(3 * sizeof(int))], byte;
	struct iovec iov = { &byte, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	int s, r = -EPROTO;
	long n;

	fds[0] = fds[1] = fds[2] = -1;
	/* Through /proc/self/fd/<dfd>: the directory we checked, not a name
	 * that could have been swapped since. */
	snprintf(a.sun_path, sizeof(a.sun_path), "/proc/self/fd/%d/" RING_SOCKET, dfd);
	s = (int)syscall(SYS_socket, AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	syscall(SYS_setsockopt, s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	syscall(SYS_setsockopt, s, SOL_SOCKET, SO_SNDTIMEO, &stv, sizeof(stv));
	if (syscall(SYS_connect, s, &a, sizeof(a)) != 0) {
		r = -errno;
		raw_close(s);
		return r;
	}
	for (int slices = 0;;) {
		n = syscall(SYS_recvmsg, s, &m, MSG_CMSG_CLOEXEC);
		if (n >= 0)
			break;
		if (errno == EINTR)
			continue;
		if ((errno != EAGAIN && errno != EWOULDBLOCK) || ++slices >= RECV_WAIT_SLICES ||
		    watcher_stopped())
			break;
	}
	c = n > 0 ? CMSG_FIRSTHDR(&m) : NULL;
	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
	    c->cmsg_len >= CMSG_LEN(sizeof(int)) && c->cmsg_len <= CMSG_LEN(3 * sizeof(int))) {
		memcpy(fds, CMSG_DATA(c), c->cmsg_len - CMSG_LEN(0));
		r = 0;
	}
	raw_close(s);
	return r;
}

/* The attaching process's euid, read once by session_attach() before the
 * checks below that compare owners with it (one syscall, not five). */
static uid_t att_euid;

/* Whether fd is one of the session's memfds of `size` bytes: a memfd, ours,
 * sealed against shrinking and growing (no page of a mapping of it can ever
 * be cut off: SIGBUS), of exactly that size.  The seals say memfd: only a
 * file made by memfd_create(MFD_ALLOW_SEALING) can take them (shmem and
 * hugetlbfs files made any other way start sealed with F_SEAL_SEAL, and
 * F_ADD_SEALS then fails; other filesystems have no seals: EINVAL), so its
 * /proc/self/fd name ("/memfd:...") is not read as well. */
int session_memfd_ok(int fd, uint64_t size, uid_t euid)
{
	struct stat st;
	long seals;

	seals = syscall(SYS_fcntl, fd, F_GET_SEALS);
	if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW))
		return 0;
	return syscall(SYS_fstat, fd, &st) == 0 && S_ISREG(st.st_mode) &&
	       st.st_uid == euid && (uint64_t)st.st_size == size;
}

/*
 * Take the instance's fd from the watcher with pidfd_getfd (ring.h, ifd),
 * without a round trip to its answering thread (12-65 us here, more when
 * every CPU is busy).  The pid is the watcher's: its death notice (alive,
 * set by the kernel before the pid can be reaped and reused) is checked
 * after the pidfd is made.  The fd must be an inotify instance.  Refused
 * (Yama's ptrace_scope, a seccomp filter, an old kernel): -1, and the
 * caller asks over the socket.  `pfd`: a pidfd of ring->pid that
 * map_direct() made and checked the same way (its own is not made again),
 * or -1.  It stays the caller's to close.
 */
static int take_fd(int pfd)
{
	int32_t ifd = __atomic_load_n(&ring->ifd, __ATOMIC_ACQUIRE);
	uint32_t pid = ring->pid;
	char p[64], t[32];
	int own = -1, fd;
	long n;

	if (ifd < 0 || !pid)
		return -1;
	if (pfd < 0 && (pfd = own = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0)) < 0)
		return -1;
	/* After the pidfd: a death before it is marked by now too. */
	if (session_watcher_died()) {
		if (own >= 0)
			raw_close(own);
		return -1;
	}
	fd = (int)syscall(SYS_pidfd_getfd, pfd, ifd, 0); /* close-on-exec */
	if (own >= 0)
		raw_close(own);
	if (fd < 0)
		return -1;
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	n = syscall(SYS_readlinkat, AT_FDCWD, p, t, sizeof(t));
	if (n != (long)sizeof("anon_inode:inotify") - 1 || memcmp(t, "anon_inode:inotify", (size_t)n)) {
		raw_close(fd);
		return -1;
	}
	return fd;
}

/*
 * The watcher starts beside the command (watcher_spawn.c,
 * inval_watcher_spawn: the launcher made the memfds and the directory and
 * did not wait for the rest), so a process may attach before the watcher
 * has published the ring: its magic, stored last, is still 0 (the memfd was
 * zero-filled), and the socket may not exist yet.  Such a process waits for
 * it, ATTACH_WAIT_NS at most, counted from two starts, whichever ends first:
 *  - the session's: the mtime of its directory, which the launcher made just
 *    before it started the watcher (until the socket is made in it), so
 *    that a watcher that never publishes (stopped, starved) delays the
 *    build's processes by ATTACH_WAIT_NS in all, not each of them: those
 *    that come later do not wait;
 *  - the process's own (att_deadline), should the clocks disagree (the
 *    mtime is the realtime clock's, which may be set back).
 * The watcher publishes ~5 ms after the launcher started it here.  A process
 * that gives up keeps its own instance (exact, as without a session).
 */
#define ATTACH_WAIT_NS 100000000LL
static long long att_deadline, att_session_by;

static long long clock_ns(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* How long a process may still wait for a starting watcher (<= 0: not). */
static long long attach_wait_left(void)
{
	long long a = att_deadline - clock_ns(CLOCK_MONOTONIC);
	long long b = att_session_by - clock_ns(CLOCK_REALTIME);

	return a < b ? a : b;
}

/* Wait until the ring's magic is stored (the watcher then FUTEX_WAKEs it:
 * publish_ring), attach_wait_left() runs out, or the watcher is found gone
 * through the pidfd `pfd` (-1: not known).  The word waited on is the
 * magic's low half, 0 until published. */
static void wait_published(struct ring_hdr *r, int pfd)
{
	uint32_t *word = (uint32_t *)(void *)&r->magic;
	long long left;

	while (__atomic_load_n(&r->magic, __ATOMIC_ACQUIRE) == 0 && (left = attach_wait_left()) > 0) {
		struct timespec slice = { 0, left < 2000000 ? (long)left : 2000000 };

		if (pfd >= 0) {
			struct pollfd pp = { .fd = pfd, .events = POLLIN };

			if (syscall(SYS_poll, &pp, 1, 0) != 0)
				return; /* exited (or cannot tell): not waited for */
		}
		syscall(SYS_futex, word, FUTEX_WAIT, 0, &slice, NULL, 0);
	}
}

/* Whether the session's directory `dfd` is locked by its watcher
 * (watcher_spawn.c, make_dir: from the launcher's set-up for the watcher's
 * life), so worth waiting for: a shared lock is refused.  Taken (the watcher
 * is gone): given back at once. */
static int watcher_holds_dir(int dfd)
{
	if (syscall(SYS_flock, dfd, LOCK_SH | LOCK_NB) != 0)
		return errno == EWOULDBLOCK;
	syscall(SYS_flock, dfd, LOCK_UN);
	return 0;
}

/* Map the ring's memfd `f` and check it (session_memfd_ok, then its header,
 * once published: ours, our mount namespace and root, the directory
 * dir_st).  pfd: the watcher's pidfd for wait_published, or -1.  0 or
 * -errno. */
static int map_ring(int f, const struct stat *dir_st, int pfd)
{
	struct stat ns, root, userns;
	struct ring_hdr *r;

	if (!session_memfd_ok(f, RING_SIZE, att_euid))
		return -EPERM;
	r = mmap(NULL, RING_SIZE, PROT_READ, MAP_SHARED, f, 0);
	if (r == MAP_FAILED)
		return -ENOMEM;
	wait_published(r, pfd);
	if (__atomic_load_n(&r->magic, __ATOMIC_ACQUIRE) == 0) {
		munmap(r, RING_SIZE);
		return -EAGAIN; /* a watcher still starting, or stopped there */
	}
	if (syscall(SYS_newfstatat, AT_FDCWD, "/proc/self/ns/mnt", &ns, 0) != 0 ||
	    syscall(SYS_newfstatat, AT_FDCWD, "/", &root, 0) != 0 ||
	    syscall(SYS_newfstatat, AT_FDCWD, "/proc/self/ns/user", &userns, 0) != 0 ||
	    __atomic_load_n(&r->magic, __ATOMIC_ACQUIRE) != RING_MAGIC ||
	    r->version != RING_VERSION || r->nrec != RING_RECORDS || r->uid != att_euid ||
	    r->mntns_dev != ns.st_dev || r->mntns_ino != ns.st_ino ||
	    r->root_dev != root.st_dev || r->root_ino != root.st_ino ||
	    r->userns_dev != userns.st_dev || r->userns_ino != userns.st_ino ||
	    r->dir_dev != dir_st->st_dev || r->dir_ino != dir_st->st_ino) {
		munmap(r, RING_SIZE);
		return -EPERM;
	}
	ring = r;
	return 0;
}

/* Map the arena's memfd `f`, checked as the ring's is, formatted.  NULL
 * if not. */
static void *map_arena(int f)
{
	void *m;

	if (f < 0 || !session_memfd_ok(f, DCACHE_ARENA_SIZE, att_euid))
		return NULL;
	m = mmap(NULL, DCACHE_ARENA_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
	if (m == MAP_FAILED)
		return NULL;
	if (dcache_arena_check(m, DCACHE_ARENA_SIZE) != 0) {
		munmap(m, DCACHE_ARENA_SIZE);
		return NULL;
	}
	return m;
}

/*
 * Map the ring and the arena taken from the watcher with pidfd_getfd
 * (RCUWALK_SESSION_FDS): no round trip to its answering thread.  The ring
 * must name env_pid as its watcher and the directory we opened, and its
 * death notice (set by the kernel before a pid can be reused) must be clear
 * after the pidfd was made: then the pidfd is the watcher's, and so is the
 * arena taken through it.  0, or -1 (refused: Yama, seccomp, an old kernel,
 * a stale variable): the caller asks over the socket.  On 0, *pfdp is that
 * pidfd, for take_fd(); the caller closes it.
 */
static int map_direct(const struct stat *dir_st, int *pfdp)
{
	int pfd, f, r = -1;

	if (!env_pid || env_rfd < 0)
		return -1;
	pfd = (int)syscall(SYS_pidfd_open, (pid_t)env_pid, 0);
	if (pfd < 0)
		return -1;
	f = (int)syscall(SYS_pidfd_getfd, pfd, env_rfd, 0);
	if (f < 0 || (r = map_ring(f, dir_st, pfd)) != 0) {
		if (f >= 0)
			raw_close(f);
		raw_close(pfd);
		return r == -EAGAIN ? -EAGAIN : -1;
	}
	raw_close(f);
	if (ring->pid != env_pid || session_watcher_died()) {
		munmap(ring, RING_SIZE);
		ring = NULL;
		raw_close(pfd);
		return -1;
	}
	if (env_afd >= 0 && (f = (int)syscall(SYS_pidfd_getfd, pfd, env_afd, 0)) >= 0) {
		arena = map_arena(f);
		raw_close(f);
	}
	*pfdp = pfd;
	return 0;
}

int session_attach(void)
{
	struct stat st;
	int dfd, fd, r, pfd = -1, got[3] = { -1, -1, -1 };

	if (!session_wanted())
		return -ENOENT;
	att_euid = geteuid();
	if (getuid() != att_euid || getgid() != getegid())
		return -EPERM;
	dfd = (int)syscall(SYS_openat, AT_FDCWD, session_dir,
			   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	if (syscall(SYS_fstat, dfd, &st) != 0 || st.st_uid != att_euid ||
	    (st.st_mode & 07777) != 0700) {
		raw_close(dfd);
		return -EPERM;
	}
	/* The ring and the arena: once per image, never unmapped.  Over the
	 * socket, which a watcher still starting has not made yet (ENOENT) or
	 * not listened on (ECONNREFUSED): asked again while it lives. */
	att_deadline = clock_ns(CLOCK_MONOTONIC) + ATTACH_WAIT_NS;
	att_session_by = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec + ATTACH_WAIT_NS;
	if (!ring && (r = map_direct(&st, &pfd)) == -EAGAIN) {
		/* The watcher's own ring, never published: its socket (made
		 * just before) cannot help. */
		raw_close(dfd);
		return r;
	}
	if (!ring && r != 0) {
		while ((r = receive_fds(dfd, got)) == -ENOENT || r == -ECONNREFUSED) {
			struct timespec ms = { 0, 1000000 };

			if (attach_wait_left() <= 0 || !watcher_holds_dir(dfd))
				break;
			syscall(SYS_nanosleep, &ms, NULL);
		}
		if (r != 0 || got[1] < 0 || map_ring(got[1], &st, -1) != 0) {
			for (int i = 0; i < 3; i++)
				if (got[i] >= 0)
					raw_close(got[i]);
			raw_close(dfd);
			return r ? r : -EPERM;
		}
		arena = map_arena(got[2]);
		raw_close(got[1]);
		if (got[2] >= 0)
			raw_close(got[2]);
		got[1] = got[2] = -1;
	}
	if (__atomic_load_n(&ring->exited, __ATOMIC_ACQUIRE)) {
		if (got[0] >= 0)
			raw_close(got[0]);
		if (pfd >= 0)
			raw_close(pfd);
		raw_close(dfd);
		return -ESRCH;
	}
	/* The instance: from the answer just received, else directly, else
	 * over the socket. */
	fd = got[0] >= 0 ? got[0] : take_fd(pfd);
	if (pfd >= 0)
		raw_close(pfd);
	if (fd < 0 && (r = receive_fds(dfd, got)) == 0) {
		fd = got[0];
		for (int i = 1; i < 3; i++)
			if (got[i] >= 0)
				raw_close(got[i]);
	} else if (fd < 0) {
		fd = r;
	}
	raw_close(dfd);
	if (fd < 0)
		return fd;
	__atomic_store_n(&read_pos, __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE),
			 __ATOMIC_RELEASE);
	return fd;
}

/* Whether no record in [from, tail) is a loss or about a watch that
 * `about(wd, arg)` names (at most 256 of them; a record overwritten
 * meanwhile: we cannot tell, no). */
static int records_none_about(uint64_t from, uint64_t tail, int (*about)(int wd, const void *arg),
			      const void *arg)
{
	if (tail - from > 256)
		return 0;
	for (uint64_t i = from; i < tail; i++) {
		int32_t wd = __atomic_load_n(&ring->recs[i % RING_RECORDS].wd, __ATOMIC_RELAXED);
		uint32_t mask = __atomic_load_n(&ring->recs[i % RING_RECORDS].mask, __ATOMIC_RELAXED);

		RING_FENCE(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE) - i >= RING_RECORDS)
			return 0; /* overwritten: we cannot tell */
		if ((mask & IN_Q_OVERFLOW) || about(wd, arg))
			return 0;
	}
	return 1;
}

/* records_none_about's predicate for the listing ticket: ours(wd). */
static int about_ours(int wd, const void *arg)
{
	int (*const *ours)(int) = arg;

	return (*ours)(wd);
}

int session_listing_ticket(int wd, uint64_t *gen, int (*ours)(int wd))
{
	uint32_t s1, s2;
	uint64_t tail, pos;

	if (!arena)
		return -1;
	/* No read cycle between s1 and s2 (both even and equal): every bump in
	 * *gen was made by a cycle that ended before s1, so its record is
	 * below tail (the watcher bumps, publishes the records, then moves
	 * state).  If we have applied up to tail (but records about watches we
	 * never added: they concern no directory on the way to one we cache),
	 * the records that could have changed what the caller's directory is
	 * (a rename, a removal of it or of an ancestor) have reached our cache,
	 * where the caller found the directory alive. */
	s1 = __atomic_load_n(&ring->state, __ATOMIC_SEQ_CST);
	tail = __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE);
	*gen = dcache_arena_gen(arena, wd);
	s2 = __atomic_load_n(&ring->state, __ATOMIC_SEQ_CST);
	/* A mount change counted (ring.h, mounts) whose bump of every
	 * generation is not done yet: nothing may be used (the generations
	 * still vouch for what the mount covered). */
	if (dcache_arena_mounts_done(arena) != __atomic_load_n(&ring->mounts, __ATOMIC_ACQUIRE))
		return -1;
	if ((s1 & 1) || s1 != s2)
		return 0;
	/* Records we have not applied yet: only about other processes'
	 * directories (not an ancestor of anything we cache), or none. */
	pos = __atomic_load_n(&read_pos, __ATOMIC_ACQUIRE);
	return pos == tail || records_none_about(pos, tail, about_ours, &ours);
}

uint64_t session_read_pos(void)
{
	return __atomic_load_n(&read_pos, __ATOMIC_ACQUIRE);
}

const uint32_t *session_mounts_word(void)
{
	return ring ? &ring->mounts : NULL;
}

/*
 * The shared path table's ticket (inval_shared.c, spath_put).  As the
 * listing ticket above: with no read cycle between s1 and s2, every bump in
 * sgen[] and ngen[] has its record below tail.  A walk that began when we had applied
 * the records below pos0 saw every change those records tell; it may have
 * missed one that a record in [pos0, tail) tells - applied during or after
 * the walk, or not yet - so none of them may be about a directory of the
 * walk (by generation slot, as the bumps are: wd % the arena's count), nor
 * be a loss (IN_Q_OVERFLOW bumps every generation).  At most 256 records
 * are looked at; one overwritten meanwhile: no.
 */
/* records_none_about's predicate for the path ticket: a record about one of
 * the walk's directories, by generation slot (as the bumps are), or about
 * no watch. */
struct walk_dirs {
	const int *wd;
	unsigned int n;
};

static int about_walk(int rwd, const void *arg)
{
	const struct walk_dirs *d = arg;

	if (rwd < 0)
		return 1;
	for (unsigned int k = 0; k < d->n; k++)
		if (dcache_arena_gen_slot(rwd) == dcache_arena_gen_slot(d->wd[k]))
			return 1;
	return 0;
}

int session_spath_ticket(const int *wd, const uint32_t *nidx, unsigned int n, uint64_t *sgen,
			 uint64_t *ngen, uint64_t pos0)
{
	uint32_t s1, s2;
	uint64_t tail, pos;

	if (!arena)
		return -1;
	s1 = __atomic_load_n(&ring->state, __ATOMIC_SEQ_CST);
	tail = __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE);
	if (dcache_spath_gens(arena, wd, nidx, n, sgen, ngen) != 0)
		return -1;
	s2 = __atomic_load_n(&ring->state, __ATOMIC_SEQ_CST);
	if (dcache_arena_mounts_done(arena) != __atomic_load_n(&ring->mounts, __ATOMIC_ACQUIRE))
		return -1;
	if ((s1 & 1) || s1 != s2)
		return 0;
	pos = __atomic_load_n(&read_pos, __ATOMIC_ACQUIRE);
	if (pos0 > pos || pos > tail)
		return 0;
	{
		const struct walk_dirs d = { wd, n };

		return records_none_about(pos0, tail, about_walk, &d);
	}
}

void *session_arena(void)
{
	return arena;
}

/*
 * session_cred_key: may_lookup() is inode_permission(dir, MAY_EXEC), which
 * reads the directory's mode, owner, ACL and label (an IN_ATTRIB on its own
 * watch when they change: dcache_arena.c, ENT_SEARCH) and, of the process:
 * its fsuid, fsgid and supplementary groups; CAP_DAC_OVERRIDE and
 * CAP_DAC_READ_SEARCH in the effective set, relative to its user namespace;
 * its LSM label (SELinux, AppArmor, Smack check searches).  All are hashed
 * (FNV-1a, 64 bit).  Read once: a change made through the shim's wrappers
 * stops all sharing (inval_shared_off); one made with raw syscalls is not
 * seen, as the per-process cache does not see it (README, limits).
 */
static void fnv(uint64_t *h, const void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		*h = (*h ^ ((const unsigned char *)p)[i]) * 1099511628211ULL;
}

uint64_t session_cred_key(void)
{
	static uint64_t key; /* 0: not yet; written once, any thread may race to the same value */
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct caps[2];
	uint32_t groups[256];
	char label[256];
	struct stat st;
	uint64_t h = 14695981039346656037ULL, k = __atomic_load_n(&key, __ATOMIC_RELAXED);
	long ids[2], ng, n;
	int f;

	if (k)
		return k;
	ids[0] = syscall(SYS_setfsuid, -1); /* an invalid id sets nothing: the current one */
	ids[1] = syscall(SYS_setfsgid, -1);
	ng = syscall(SYS_getgroups, 256, groups);
	if (ids[0] < 0 || ids[1] < 0 || ng < 0 || syscall(SYS_capget, &hdr, caps) != 0 ||
	    syscall(SYS_newfstatat, AT_FDCWD, "/proc/self/ns/user", &st, 0) != 0)
		return 0;
	fnv(&h, ids, sizeof(ids));
	fnv(&h, &ng, sizeof(ng));
	fnv(&h, groups, (size_t)ng * sizeof(groups[0]));
	fnv(&h, &caps[0].effective, sizeof(caps[0].effective));
	fnv(&h, &caps[1].effective, sizeof(caps[1].effective));
	fnv(&h, &st.st_dev, sizeof(st.st_dev));
	fnv(&h, &st.st_ino, sizeof(st.st_ino));
	/* No LSM: the file is missing or refuses reads (EINVAL); that error
	 * is the label. */
	f = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/attr/current", O_RDONLY | O_CLOEXEC);
	n = f < 0 ? -errno : syscall(SYS_read, f, label, sizeof(label));
	if (n < 0 && f >= 0)
		n = -errno;
	if (f >= 0)
		raw_close(f);
	if (n >= (long)sizeof(label))
		return 0; /* too long to tell apart: no key */
	fnv(&h, &n, sizeof(n));
	if (n > 0)
		fnv(&h, label, (size_t)n);
	h |= 1; /* never 0 */
	__atomic_store_n(&key, h, __ATOMIC_RELAXED);
	return h;
}

uint32_t session_state(void)
{
	return __atomic_load_n(&ring->state, __ATOMIC_SEQ_CST);
}

uint64_t session_consumed(void)
{
	return __atomic_load_n(&ring->consumed, __ATOMIC_ACQUIRE);
}

uint64_t session_tail(void)
{
	return __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE);
}

uint32_t session_mounts(void)
{
	return __atomic_load_n(&ring->mounts, __ATOMIC_ACQUIRE);
}

int session_behind(void)
{
	return ring && __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE) !=
			__atomic_load_n(&read_pos, __ATOMIC_RELAXED);
}

void session_wait(uint32_t seen, long ns)
{
	struct timespec ts = { ns / 1000000000L, ns % 1000000000L };

	syscall(SYS_futex, &ring->state, FUTEX_WAIT, seen, &ts, NULL, 0);
}

int session_watcher_died(void)
{
	return ring && (__atomic_load_n(&ring->alive, __ATOMIC_ACQUIRE) & FUTEX_OWNER_DIED);
}

int session_wait_or_death(uint32_t seen, long ns)
{
	uint32_t a = __atomic_load_n(&ring->alive, __ATOMIC_ACQUIRE);
	struct futex_waitv w[2];
	struct timespec ts;

	if (a & FUTEX_OWNER_DIED)
		goto dead;
	if (!a) { /* a watcher that armed no notice */
		session_wait(seen, ns);
		return 0;
	}
	memset(w, 0, sizeof(w));
	w[0].val = seen;
	w[0].uaddr = (uint64_t)(uintptr_t)&ring->state;
	w[0].flags = FUTEX_32;
	w[1].val = a;
	w[1].uaddr = (uint64_t)(uintptr_t)&ring->alive;
	w[1].flags = FUTEX_32;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ns / 1000000000L;
	ts.tv_nsec += ns % 1000000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	if (syscall(SYS_futex_waitv, w, 2, 0, &ts, CLOCK_MONOTONIC) < 0 && errno != EAGAIN &&
	    errno != ETIMEDOUT && errno != EINTR) {
		/* ENOSYS before Linux 5.16, or refused: wait as without the
		 * notice (never return at once, which would make the reader
		 * spin). */
		session_wait(seen, ns);
		return 0;
	}
	if (!(__atomic_load_n(&ring->alive, __ATOMIC_ACQUIRE) & FUTEX_OWNER_DIED))
		return 0;
dead:
	/* The kernel woke one sleeper: wake the others (of every process). */
	syscall(SYS_futex, &ring->alive, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0);
	return 1;
}

void session_poke(void)
{
	syscall(SYS_futex, &ring->poke, FUTEX_WAKE, 1, NULL, NULL, 0);
}

void session_wake(void)
{
	if (ring)
		syscall(SYS_futex, &ring->state, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0);
}

int session_watcher_alive(void)
{
	char st;
	int e;

	if (!ring || __atomic_load_n(&ring->exited, __ATOMIC_ACQUIRE))
		return 0;
	/* kill(pid, 0) would call a zombie alive (a killed watcher that its
	 * new parent does not reap): the state field says Z. */
	st = proc_state(ring->pid, &e);
	if (e)
		return e == ENOENT ? 0 : syscall(SYS_kill, ring->pid, 0) == 0;
	return st && st != 'Z' && st != 'X';
}

void session_apply_locked(void (*apply)(const struct inotify_event *ev))
{
	union {
		struct inotify_event ev;
		char b[sizeof(struct inotify_event) + NAME_MAX + 1];
	} u;
	uint64_t tail = __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE);
	/* The records published when this call began, and no more: applying
	 * one may make a record (a traced process whose lstat() of an event's
	 * name writes a line into a watched directory), and a loop up to the
	 * moving tail could then go on for as long as that lasted.  A sync
	 * point calls this after the watcher has published what it waits for. */
	const uint64_t end = tail;

	while ((int64_t)(end - read_pos) > 0) {
		const struct ring_rec *rec = &ring->recs[read_pos % RING_RECORDS];
		uint32_t len;

		if (tail - read_pos < RING_RECORDS) {
			u.ev.wd = rec->wd;
			u.ev.mask = rec->mask;
			u.ev.cookie = rec->cookie;
			len = rec->len > NAME_MAX ? NAME_MAX : rec->len;
			memcpy(u.ev.name, rec->name, len);
			u.ev.name[len] = '\0';
			u.ev.len = len ? len + 1 : 0;
			RING_FENCE(__ATOMIC_ACQUIRE);
			tail = __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE);
		}
		if (tail - read_pos >= RING_RECORDS) {
			/* A whole ring behind: lost (or torn) records. */
			memset(&u.ev, 0, sizeof(u.ev));
			u.ev.wd = -1;
			u.ev.mask = IN_Q_OVERFLOW;
			apply(&u.ev);
			__atomic_store_n(&read_pos, tail, __ATOMIC_RELEASE);
			continue;
		}
		apply(&u.ev);
		__atomic_store_n(&read_pos, read_pos + 1, __ATOMIC_RELEASE);
	}
}
